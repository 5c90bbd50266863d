//! The object-store settings of a context (docs/object-store.md): each
//! from its `FLEET_DISPATCH_S3_…` variable, else the config file's `s3_…`
//! key, else the default [`crate::store::objstore::Settings`] gives it; a
//! bad value from the file is named as the file's key.

use super::{Context, Source, file};
use crate::base::error::Result;

/// Each object-store variable and the config file's key for it
/// (docs/object-store.md).
pub const S3_KEYS: [(&str, &str); 4] = [
    (crate::store::objstore::ENDPOINT_VAR, "s3_endpoint"),
    (crate::store::objstore::REGION_VAR, "s3_region"),
    (crate::store::objstore::PATH_STYLE_VAR, "s3_path_style"),
    (crate::store::objstore::ALLOW_HTTP_VAR, "s3_allow_http"),
];

/// The commands that work on an object-store root, as the refusal of the
/// others names them (the rest of the lane is `crate::front::bucket`).
pub const S3_WORKS: &str = "`doctor`, `enqueue`, `status`, `result`, `cancel`, `logs`, `verify-marker`, `sweep`, `listen` and `roster`";

impl Context {
    /// The object-store settings (docs/object-store.md): each from its
    /// variable, else the config file's `s3_…` key, else its default; the
    /// credentials the standard AWS way.
    pub fn s3_settings(&self) -> Result<crate::store::objstore::Settings> {
        crate::store::objstore::Settings::resolve(&|k| self.s3_setting(k).map(|(v, _)| v), &|p| {
            std::fs::read_to_string(p).ok()
        })
        .map_err(|mut e| {
            // A value from the file is named as the file's key.
            for (var, key) in S3_KEYS {
                let from_file = self.s3_setting(var).is_some_and(|(_, s)| s == Source::File);
                if let Some(rest) = e.message.strip_prefix(var).filter(|_| from_file) {
                    let path = self.config_file.as_ref().map(|f| f.path.as_path());
                    e.message = file::refusal(path, key, rest.trim_start_matches('=')).message;
                }
            }
            e
        })
    }

    /// The object-store setting of the variable `var` and where it comes
    /// from: the variable, else the config file's key for it.
    pub fn s3_setting(&self, var: &str) -> Option<(String, Source)> {
        use crate::store::objstore::{ALLOW_HTTP_VAR, ENDPOINT_VAR, PATH_STYLE_VAR, REGION_VAR};
        if let Some(v) = std::env::var(var).ok().filter(|v| !v.is_empty()) {
            return Some((v, Source::Variable));
        }
        let f = &self.file;
        let flag = |b: Option<bool>| b.map(|b| if b { "1" } else { "0" }.to_string());
        let v = match var {
            ENDPOINT_VAR => f.s3_endpoint.clone(),
            REGION_VAR => f.s3_region.clone(),
            PATH_STYLE_VAR => flag(f.s3_path_style),
            ALLOW_HTTP_VAR => flag(f.s3_allow_http),
            _ => return None,
        };
        v.map(|v| (v, Source::File))
    }
    /// The bucket of the object-store root `text`, reached with the
    /// settings ([`Context::s3_settings`]).
    pub fn bucket(&self, text: &str) -> Result<crate::store::port::bucket::Bucket> {
        let root = crate::store::objstore::S3Root::parse(text)?;
        let client = crate::store::objstore::Client::new(&self.s3_settings()?, &root.bucket)?;
        Ok(crate::store::port::bucket::Bucket::new(client, root))
    }

    /// This machine's state for the bucket root `text`: apart from any
    /// folder root's, one directory per bucket and prefix, under the
    /// state directory, named so that no two roots share one
    /// ([`state_name`]).
    pub fn bucket_state(&self, text: &str) -> Result<std::path::PathBuf> {
        let parsed = crate::store::objstore::S3Root::parse(text)?;
        let base = self.state_dir(std::path::Path::new(text))?;
        let dir = base.join(state_name(&parsed.bucket, &parsed.prefix));
        // A directory under the earlier name (which two roots could
        // share) is taken over once, so its pin and its ledger are kept.
        let legacy = base.join(legacy_name(&parsed.bucket, &parsed.prefix));
        if !dir.exists() && legacy.is_dir() {
            let _ = std::fs::rename(&legacy, &dir);
        }
        Ok(dir)
    }
}

/// The name before [`state_name`]: `s3-<bucket>-<prefix>`, anything but a
/// letter, a digit, `.`, `_` or `-` written `_`.
fn legacy_name(bucket: &str, prefix: &str) -> String {
    let place: String = format!("{bucket}-{prefix}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("s3-{place}")
}

/// `s3-<bucket>__<prefix>`, each part kept where it is a letter, a digit,
/// `.` or `-`, and anything else written `_` and two hex digits per byte:
/// a name that is a folder's on every system, and one per root (`a/b` and
/// `a_b`, or bucket `a-b` and bucket `a` with prefix `b`, never meet),
/// since `__` stands only between the two parts.
fn state_name(bucket: &str, prefix: &str) -> String {
    let mut name = String::from("s3-");
    for (i, part) in [bucket, prefix].into_iter().enumerate() {
        if i > 0 {
            name.push_str("__");
        }
        for b in part.bytes() {
            if b.is_ascii_alphanumeric() || b == b'.' || b == b'-' {
                name.push(char::from(b));
            } else {
                name.push_str(&format!("_{b:02x}"));
            }
        }
    }
    name
}

#[cfg(test)]
mod tests {
    use super::state_name;

    #[test]
    fn no_two_roots_share_a_state_directory() {
        let names = [
            state_name("a", "x/y"),
            state_name("a", "x_y"),
            state_name("a-x", "y"),
            state_name("a", "x-y"),
            state_name("a", "x__y"),
            state_name("a", ""),
            state_name("a", "/"),
        ];
        for (i, n) in names.iter().enumerate() {
            assert!(!names[i + 1..].contains(n), "{n} twice in {names:?}");
        }
        assert_eq!(state_name("fleet", "team/"), "s3-fleet__team_2f");
        assert_eq!(super::legacy_name("fleet", "team/"), "s3-fleet-team_");
    }
}
