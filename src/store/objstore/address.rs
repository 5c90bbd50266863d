//! The object-store root's address, `s3://BUCKET[/PREFIX]`, read strictly:
//! a root that names a bucket S3 would refuse, or that carries a query, a
//! fragment or an empty path segment, is refused here, naming the text,
//! rather than turned into keys the store would read another way.

use crate::base::error::{Error, Result};

/// The scheme that marks a root as an object store.
pub const SCHEME: &str = "s3://";

/// The longest prefix accepted: S3 keys end at 1,024 bytes, and the
/// protocol's own names must fit after it.
const MAX_PREFIX: usize = 512;

/// True when `text` names an object-store root (`s3://…`, the scheme in
/// any case), whether or not it is a valid one.
pub fn is_s3(text: &str) -> bool {
    text.get(..SCHEME.len())
        .is_some_and(|s| s.eq_ignore_ascii_case(SCHEME))
}

/// A parsed `s3://BUCKET[/PREFIX]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct S3Root {
    /// The bucket.
    pub bucket: String,
    /// The key prefix every key of the root starts with: empty, or ending
    /// in `/`.
    pub prefix: String,
}

impl S3Root {
    /// Parses `text`; `CONFIG` naming the text and what is wrong with it.
    pub fn parse(text: &str) -> Result<S3Root> {
        let bad = |why: &str| {
            Error::config(format!(
                "dispatch root {text:?} is not a valid s3://BUCKET[/PREFIX]: {why}"
            ))
            .hint("see docs/object-store.md")
        };
        if !is_s3(text) {
            return Err(bad("it does not start with s3://"));
        }
        let rest = &text[SCHEME.len()..];
        if let Some(c) = rest
            .chars()
            .find(|c| matches!(c, '?' | '#' | '\\') || c.is_control())
        {
            return Err(bad(&format!(
                "{c:?} has no place in a bucket or a key prefix"
            )));
        }
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(bad("the bucket name is empty"));
        }
        check_bucket(bucket).map_err(|why| bad(&format!("bucket {bucket:?} {why}")))?;
        let trimmed = prefix.strip_suffix('/').unwrap_or(prefix);
        if !trimmed.is_empty() {
            if let Some(seg) = trimmed
                .split('/')
                .find(|s| s.is_empty() || *s == "." || *s == "..")
            {
                return Err(bad(&format!(
                    "the prefix {prefix:?} has an empty, \".\" or \"..\" segment ({seg:?})"
                )));
            }
            if trimmed.len() > MAX_PREFIX {
                return Err(bad(&format!(
                    "the prefix is longer than {MAX_PREFIX} bytes"
                )));
            }
        }
        Ok(S3Root {
            bucket: bucket.to_string(),
            prefix: if trimmed.is_empty() {
                String::new()
            } else {
                format!("{trimmed}/")
            },
        })
    }

    /// The full key of `name` under the prefix.
    pub fn key(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }
}

impl std::fmt::Display for S3Root {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{SCHEME}{}/{}", self.bucket, self.prefix)
    }
}

/// S3's rules for a general-purpose bucket name, the ones a typo breaks:
/// 3 to 63 lowercase letters, digits, dots and hyphens, starting and
/// ending with a letter or digit, no two dots together, not an IP address.
fn check_bucket(name: &str) -> std::result::Result<(), &'static str> {
    let b = name.as_bytes();
    if !(3..=63).contains(&b.len()) {
        return Err("must be 3 to 63 characters long");
    }
    if !b
        .iter()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'.' || *c == b'-')
    {
        return Err("may hold only lowercase letters, digits, dots and hyphens");
    }
    let edge = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    if !edge(b[0]) || !edge(b[b.len() - 1]) {
        return Err("must start and end with a letter or a digit");
    }
    if name.contains("..") {
        return Err("may not hold two dots together");
    }
    if name.parse::<std::net::Ipv4Addr>().is_ok() {
        return Err("may not be an IP address");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_alone_or_with_a_prefix() {
        let r = S3Root::parse("s3://jobs").unwrap();
        assert_eq!((r.bucket.as_str(), r.prefix.as_str()), ("jobs", ""));
        let r = S3Root::parse("S3://jobs/fleet/a/").unwrap();
        assert_eq!((r.bucket.as_str(), r.prefix.as_str()), ("jobs", "fleet/a/"));
        assert_eq!(r.key("PC/inbox/x.json"), "fleet/a/PC/inbox/x.json");
        assert_eq!(S3Root::parse("s3://jobs/").unwrap().prefix, "");
    }

    #[test]
    fn bad_addresses_are_refused_naming_the_text() {
        for bad in [
            "s3://",
            "s3:///p",
            "s3://Jobs",
            "s3://jo",
            "s3://-jobs",
            "s3://jo..bs",
            "s3://jo_bs",
            "s3://192.168.1.1",
            "s3://jobs?x=1",
            "s3://jobs/p#f",
            "s3://jobs//p",
            "s3://jobs/a/../b",
            "/tmp/jobs",
        ] {
            let e = S3Root::parse(bad).unwrap_err();
            assert_eq!(e.code, crate::base::error::Code::Config, "{bad}");
            assert!(
                e.message.contains(&format!("{bad:?}")),
                "{bad}: {}",
                e.message
            );
        }
    }
}
