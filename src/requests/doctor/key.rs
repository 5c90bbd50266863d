//! Doctor's checks of the key file: present, private, long enough, and
//! its key id.

use std::path::PathBuf;

use super::Check;

/// What the key file is.
#[derive(Clone, Debug, PartialEq)]
pub enum KeyFile {
    /// No setting names one (no home directory).
    Unset,
    /// Nothing at the path.
    Missing(PathBuf),
    /// There but not readable.
    Unreadable(PathBuf, String),
    /// No key file (too short, or unlike a key where others may read it):
    /// why, as [`crate::trust::judge_file_text`] says.
    NotAKey(PathBuf, String),
    /// A key, with its length and fingerprint.
    Loaded(PathBuf, usize, String),
}

/// The key file and its permissions.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyFacts {
    /// What is there.
    pub file: KeyFile,
    /// Whether only its owner may read it: the refusal and its hint.
    pub private: Result<(), (String, Option<String>)>,
    /// True when it lies inside the root (it would sync).
    pub inside_root: bool,
}

/// The key checks.
pub fn judge_key(k: &KeyFacts) -> Vec<Check> {
    let keygen = "run `fleet-dispatch keygen` on one machine and copy the file to the others out of band (never into the shared folder)";
    let path = match &k.file {
        KeyFile::Unset => {
            return vec![Check::warn(
                "key",
                "no key file is configured (no home directory)",
                "pass --key-file FILE or set FLEET_DISPATCH_KEY_FILE",
            )];
        }
        KeyFile::Missing(p) => {
            return vec![Check::warn(
                "key",
                format!("no key file at {}", p.display()),
                keygen,
            )];
        }
        KeyFile::Unreadable(p, e) => Check::warn(
            "key",
            format!("cannot read key file {}: {e}", p.display()),
            "check the file's owner and permissions",
        ),
        // Not a key: its permissions protect nothing (no advice to make
        // `/etc/hostname` private), and `keygen --force` would write over it.
        KeyFile::NotAKey(p, why) => {
            return vec![Check::warn(
                "key",
                format!("{} is not a fleet key file ({why})", p.display()),
                crate::trust::POINT_AT_KEY,
            )];
        }
        KeyFile::Loaded(p, n, fp) => Check::ok(
            "key",
            format!("{}: {n} bytes, fingerprint {fp}", p.display()),
        ),
    };
    let mut checks = vec![path];
    checks.push(match &k.private {
        Ok(()) => Check::ok("key permissions", "readable only by its owner"),
        Err((m, hint)) => Check::warn(
            "key permissions",
            m.clone(),
            hint.clone()
                .unwrap_or_else(|| "let only your own account read the key file".into()),
        ),
    });
    if k.inside_root {
        checks.push(Check::warn(
            "key",
            "the key file lies inside the dispatch root: it would sync to every machine, and is refused",
            "move it out, e.g. to ~/.claude/fleet-dispatch.key",
        ));
    }
    checks
}
