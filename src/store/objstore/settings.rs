//! Where the store is and who we are to it: the endpoint, region and URL
//! style from `FLEET_DISPATCH_S3_*` variables, the credentials from the
//! standard `AWS_*` variables or a profile of the shared credentials file.
//! Read through a lookup function and a file reader passed in, so the rules
//! are tested without touching the environment.
//!
//! HTTPS unless the endpoint is on this machine (loopback) or
//! [`ALLOW_HTTP_VAR`] is `1`: the credentials sign each request, but the
//! job documents travel in the body, and a plain-text network would let
//! anyone on the path read them.

use std::path::{Path, PathBuf};

use crate::base::error::{Error, Result};

/// The endpoint URL, e.g. `https://s3.eu-west-1.amazonaws.com` or
/// `http://127.0.0.1:8333`. Unset: AWS S3 in the region.
pub const ENDPOINT_VAR: &str = "FLEET_DISPATCH_S3_ENDPOINT";
/// The region requests are signed for. Unset: `AWS_REGION`, then
/// `AWS_DEFAULT_REGION`, then `us-east-1`.
pub const REGION_VAR: &str = "FLEET_DISPATCH_S3_REGION";
/// `1` for path-style URLs (`endpoint/bucket/key`), `0` for virtual-host
/// style (`bucket.endpoint/key`). Unset: path style for a given endpoint
/// (what S3-compatible stores expect), virtual-host style for AWS.
pub const PATH_STYLE_VAR: &str = "FLEET_DISPATCH_S3_PATH_STYLE";
/// `1` allows a plain-HTTP endpoint off this machine.
pub const ALLOW_HTTP_VAR: &str = "FLEET_DISPATCH_S3_ALLOW_HTTP";

/// The region when nothing names one.
pub const DEFAULT_REGION: &str = "us-east-1";

/// Signing credentials. `Debug` shows the key id, never the secret.
#[derive(Clone)]
pub struct Creds {
    /// The access key id.
    pub key: String,
    /// The secret access key.
    pub secret: String,
    /// The session token of temporary credentials.
    pub token: Option<String>,
    /// Where they came from, for `doctor`: `AWS_ACCESS_KEY_ID` or `profile
    /// NAME in FILE`.
    pub from: String,
}

impl std::fmt::Debug for Creds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Creds {{ key: {:?}, from: {:?} }}", self.key, self.from)
    }
}

/// Everything the client needs besides the bucket.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The endpoint URL, checked: http or https, a host, nothing after the
    /// path.
    pub endpoint: url::Url,
    /// The region requests are signed for.
    pub region: String,
    /// Path-style URLs rather than virtual-host ones.
    pub path_style: bool,
    /// The credentials, when any were found; without them requests go
    /// unsigned and a store that wants them answers 403.
    pub creds: Option<Creds>,
}

impl Settings {
    /// The settings from the environment (`get`) and, for a profile, the
    /// shared credentials file (`read`). `CONFIG` naming the variable and
    /// its value (never a secret) when one is wrong.
    pub fn resolve(
        get: &dyn Fn(&str) -> Option<String>,
        read: &dyn Fn(&Path) -> Option<String>,
    ) -> Result<Settings> {
        let get = |k: &str| get(k).filter(|v| !v.is_empty());
        let region = get(REGION_VAR)
            .or_else(|| get("AWS_REGION"))
            .or_else(|| get("AWS_DEFAULT_REGION"))
            .unwrap_or_else(|| DEFAULT_REGION.to_string());
        let given = get(ENDPOINT_VAR);
        let text = given
            .clone()
            .unwrap_or_else(|| format!("https://s3.{region}.amazonaws.com"));
        let allow_http = flag(ALLOW_HTTP_VAR, get(ALLOW_HTTP_VAR))?.unwrap_or(false);
        let endpoint = endpoint(&text, allow_http)?;
        let path_style = flag(PATH_STYLE_VAR, get(PATH_STYLE_VAR))?.unwrap_or(given.is_some());
        Ok(Settings {
            endpoint,
            region,
            path_style,
            creds: creds(&get, read)?,
        })
    }
}

/// A `0`/`1` variable (also `true`/`false`).
fn flag(var: &str, value: Option<String>) -> Result<Option<bool>> {
    match value.as_deref() {
        None => Ok(None),
        Some("1" | "true") => Ok(Some(true)),
        Some("0" | "false") => Ok(Some(false)),
        Some(v) => Err(Error::config(format!("{var}={v:?}: expected 1 or 0"))),
    }
}

/// The endpoint, held to the HTTPS rule.
fn endpoint(text: &str, allow_http: bool) -> Result<url::Url> {
    endpoint_rule(text, allow_http).map_err(|why| {
        Error::config(format!("{ENDPOINT_VAR}={text:?}: {why}")).hint("see docs/object-store.md")
    })
}

/// The endpoint `text` as a URL, or why it is refused: a URL, `https`, or
/// `http` to a loopback address or when `allow_http`, with a host and no
/// query, fragment or user name. The config file's `s3_endpoint` is judged
/// by it too.
pub fn endpoint_rule(text: &str, allow_http: bool) -> std::result::Result<url::Url, String> {
    let bad = |why: &str| why.to_string();
    let url = url::Url::parse(text).map_err(|e| bad(&format!("not a URL ({e})")))?;
    if url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() {
        return Err(bad("an endpoint carries no query, fragment or user name"));
    }
    match url.scheme() {
        "https" => {}
        "http" if allow_http || is_loopback(&url) => {}
        "http" => {
            return Err(bad(&format!(
                "plain HTTP is allowed only on this machine (a loopback address) or with {ALLOW_HTTP_VAR}=1"
            )));
        }
        other => return Err(bad(&format!("the scheme {other:?} is not http or https"))),
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("no host"));
    }
    Ok(url)
}

/// True for `localhost` and loopback addresses.
pub fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(a)) => a.is_loopback(),
        Some(url::Host::Ipv6(a)) => a.is_loopback(),
        None => false,
    }
}

/// The credentials: the `AWS_*` variables, else `AWS_PROFILE` (or
/// `default`) in `AWS_SHARED_CREDENTIALS_FILE` (or
/// `~/.aws/credentials`), else none. A named profile that is not there is
/// refused; a missing default is not.
fn creds(
    get: &dyn Fn(&str) -> Option<String>,
    read: &dyn Fn(&Path) -> Option<String>,
) -> Result<Option<Creds>> {
    match (get("AWS_ACCESS_KEY_ID"), get("AWS_SECRET_ACCESS_KEY")) {
        (Some(key), Some(secret)) => {
            return Ok(Some(Creds {
                key,
                secret,
                token: get("AWS_SESSION_TOKEN"),
                from: "AWS_ACCESS_KEY_ID".into(),
            }));
        }
        (Some(_), None) => {
            return Err(Error::config(
                "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not: set both",
            ));
        }
        (None, Some(_)) => {
            return Err(Error::config(
                "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not: set both",
            ));
        }
        (None, None) => {}
    }
    let named = get("AWS_PROFILE");
    let profile = named.clone().unwrap_or_else(|| "default".into());
    let file = match get("AWS_SHARED_CREDENTIALS_FILE") {
        Some(f) => PathBuf::from(f),
        None => match get("HOME").or_else(|| get("USERPROFILE")) {
            Some(home) => Path::new(&home).join(".aws").join("credentials"),
            None if named.is_some() => {
                return Err(Error::config(format!(
                    "AWS_PROFILE={profile:?} but no credentials file to read it from (HOME is not set)"
                )));
            }
            None => return Ok(None),
        },
    };
    let missing = |why: String| {
        if named.is_some() {
            Err(Error::config(format!("AWS_PROFILE={profile:?}: {why}")))
        } else {
            Ok(None)
        }
    };
    let Some(text) = read(&file) else {
        return missing(format!("{} cannot be read", file.display()));
    };
    let Some(fields) = profile_fields(&text, &profile) else {
        return missing(format!("{} has no [{profile}] section", file.display()));
    };
    let field = |k: &str| {
        fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(k))
            .map(|(_, v)| v.clone())
            .filter(|v| !v.is_empty())
    };
    match (field("aws_access_key_id"), field("aws_secret_access_key")) {
        (Some(key), Some(secret)) => Ok(Some(Creds {
            key,
            secret,
            token: field("aws_session_token"),
            from: format!("profile {profile} in {}", file.display()),
        })),
        _ => Err(Error::config(format!(
            "profile [{profile}] in {} lacks aws_access_key_id or aws_secret_access_key",
            file.display()
        ))),
    }
}

/// The `key = value` lines of section `[name]` of an INI text (the AWS
/// shared credentials file), or `None` when there is no such section.
/// Comments start with `#` or `;`; a repeated section adds to the first.
pub fn profile_fields(text: &str, name: &str) -> Option<Vec<(String, String)>> {
    let mut found = false;
    let mut inside = false;
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = section.trim() == name;
            found |= inside;
            continue;
        }
        if inside && let Some((k, v)) = line.split_once('=') {
            out.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    found.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(vars: &[(&str, &str)], file: Option<&str>) -> Result<Settings> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let file = file.map(str::to_string);
        Settings::resolve(
            &|k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()),
            &|_| file.clone(),
        )
    }

    #[test]
    fn aws_by_default_in_the_region() {
        let s = resolve(&[("AWS_REGION", "eu-west-1")], None).unwrap();
        assert_eq!(s.endpoint.as_str(), "https://s3.eu-west-1.amazonaws.com/");
        assert!(!s.path_style);
        assert!(s.creds.is_none());
    }

    #[test]
    fn plain_http_only_on_loopback_or_when_allowed() {
        for ok in [
            "http://127.0.0.1:8333",
            "http://localhost:9000",
            "http://[::1]:1",
        ] {
            let s = resolve(&[(ENDPOINT_VAR, ok)], None).unwrap();
            assert!(s.path_style, "{ok}");
        }
        let e = resolve(&[(ENDPOINT_VAR, "http://store.lan:9000")], None).unwrap_err();
        assert!(e.message.contains("http://store.lan:9000"), "{}", e.message);
        assert!(e.message.contains(ALLOW_HTTP_VAR), "{}", e.message);
        resolve(
            &[
                (ENDPOINT_VAR, "http://store.lan:9000"),
                (ALLOW_HTTP_VAR, "1"),
            ],
            None,
        )
        .unwrap();
        assert!(resolve(&[(ENDPOINT_VAR, "ftp://x")], None).is_err());
        assert!(resolve(&[(ENDPOINT_VAR, "https://x/?a=1")], None).is_err());
        assert!(resolve(&[(PATH_STYLE_VAR, "yes")], None).is_err());
    }

    #[test]
    fn credentials_from_the_variables_or_a_profile() {
        let s = resolve(
            &[
                ("AWS_ACCESS_KEY_ID", "AK"),
                ("AWS_SECRET_ACCESS_KEY", "SECRET"),
            ],
            None,
        )
        .unwrap();
        let c = s.creds.unwrap();
        assert_eq!((c.key.as_str(), c.secret.as_str()), ("AK", "SECRET"));
        assert!(!format!("{c:?}").contains("SECRET"));
        assert!(resolve(&[("AWS_ACCESS_KEY_ID", "AK")], None).is_err());

        let file = "[default]\naws_access_key_id=D\naws_secret_access_key=DS\n\n# x\n[ci]\naws_access_key_id = C\naws_secret_access_key = CS\naws_session_token = T\n";
        let home = [("HOME", "/h")];
        let c = resolve(&home, Some(file)).unwrap().creds.unwrap();
        assert_eq!(c.key, "D");
        let c = resolve(&[("HOME", "/h"), ("AWS_PROFILE", "ci")], Some(file))
            .unwrap()
            .creds
            .unwrap();
        assert_eq!((c.key.as_str(), c.token.as_deref()), ("C", Some("T")));
        let path = std::path::Path::new("/h").join(".aws").join("credentials");
        assert!(c.from.contains(&path.display().to_string()), "{}", c.from);
        let e = resolve(&[("HOME", "/h"), ("AWS_PROFILE", "prod")], Some(file)).unwrap_err();
        assert!(e.message.contains("prod") && e.message.contains("credentials"));
        assert!(resolve(&home, None).unwrap().creds.is_none());
    }
}
