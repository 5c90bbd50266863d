//! Names and ids (docs/protocol.md §2): job ids, machine names, and the file names built
//! from them.
//!
//! Every id and name is checked here before it touches a path, so a value of
//! type [`JobId`] or [`Machine`] is always safe to join onto a directory.

use std::fmt;

use crate::base::error::{Error, Result};

/// A job id: `^[A-Za-z0-9-]{1,64}$`, single-use forever.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobId(String);

/// A machine, target or origin name: `^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$` and not
/// a reserved Windows device name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Machine(String);

/// Windows device names that no file or folder may be called, in any case.
const RESERVED: &[&str] = &[
    "CON", "PRN", "AUX", "NUL", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7", "COM8",
    "COM9", "LPT1", "LPT2", "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9",
];

/// True when `s` matches the job id rule.
pub fn is_job_id(s: &str) -> bool {
    (1..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// True when `s` matches the machine name rule, reserved names excluded.
pub fn is_machine(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
        && !RESERVED.iter().any(|r| r.eq_ignore_ascii_case(s))
}

impl JobId {
    /// Validates `s` as a job id; `VALIDATION_ERROR` names the bad value.
    pub fn parse(s: &str) -> Result<JobId> {
        if is_job_id(s) {
            Ok(JobId(s.to_string()))
        } else {
            Err(Error::validation(format!(
                "invalid job id {s:?}: use 1 to 64 letters, digits or '-'"
            )))
        }
    }

    /// A fresh id: `YYYYMMDD-HHMMSS-` (UTC) and 16 random lowercase hex digits.
    pub fn generate(now: time::OffsetDateTime) -> JobId {
        let now = now.to_offset(time::UtcOffset::UTC);
        let mut bytes = [0u8; 8];
        crate::base::random::fill(&mut bytes);
        JobId(format!(
            "{:04}{:02}{:02}-{:02}{:02}{:02}-{}",
            now.year(),
            u8::from(now.month()),
            now.day(),
            now.hour(),
            now.minute(),
            now.second(),
            hex::encode(bytes)
        ))
    }

    /// True when the id has the form [`JobId::generate`] gives: a whole
    /// generated id, never the start of another one.
    pub fn is_generated(&self) -> bool {
        let b = self.0.as_bytes();
        let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
        b.len() == 32
            && digits(0..8)
            && b[8] == b'-'
            && digits(9..15)
            && b[15] == b'-'
            && b[16..]
                .iter()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `<id>.json`, the name of its job, marker and result files.
    pub fn file_name(&self) -> String {
        format!("{}.json", self.0)
    }

    /// The id named by a directory entry, when the entry is exactly
    /// `<valid job id>.json`; every other name is ignored by readers (docs/protocol.md §3).
    pub fn from_file_name(name: &str) -> Option<JobId> {
        let stem = name.strip_suffix(".json")?;
        is_job_id(stem).then(|| JobId(stem.to_string()))
    }
}

impl Machine {
    /// Validates `s` as a machine name; `what` says which role it plays
    /// ("target", "machine", "origin") in the error message.
    pub fn parse(s: &str, what: &str) -> Result<Machine> {
        if is_machine(s) {
            Ok(Machine(s.to_string()))
        } else {
            let why = if RESERVED.iter().any(|r| r.eq_ignore_ascii_case(s)) {
                "it is a reserved Windows device name"
            } else {
                "use a letter or digit, then up to 62 letters, digits, '_' or '-'"
            };
            Err(Error::validation(format!("invalid {what} {s:?}: {why}")))
        }
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Case-insensitive equality: target folders are case-insensitive on
    /// Windows and macOS, so `pc` and `PC` are the same machine.
    pub fn same(&self, other: &str) -> bool {
        self.0.eq_ignore_ascii_case(other)
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for Machine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An environment variable name a job spec may set: `^[A-Za-z_][A-Za-z0-9_]*$`
/// and not in our own `FLEET_DISPATCH_` namespace.
pub fn is_env_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_')
        && !s.starts_with("FLEET_DISPATCH_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_id_rule() {
        assert!(is_job_id("20261129-193000-9f2c4e1ab37d5c08"));
        assert!(is_job_id("a"));
        assert!(is_job_id(&"a".repeat(64)));
        assert!(!is_job_id(&"a".repeat(65)));
        assert!(!is_job_id(""));
        assert!(!is_job_id("../../etc/passwd"));
        assert!(!is_job_id("a_b"));
        assert!(!is_job_id("a.b"));
        assert!(!is_job_id("é"));
    }

    #[test]
    fn machine_rule_and_reserved_names() {
        assert!(is_machine("PC"));
        assert!(is_machine("build_box-2"));
        assert!(is_machine(&"a".repeat(63)));
        assert!(!is_machine(&"a".repeat(64)));
        assert!(!is_machine("-PC"));
        assert!(!is_machine("_PC"));
        assert!(!is_machine("PC/.."));
        assert!(!is_machine("LAP|TOP"));
        assert!(!is_machine(".stfolder"));
        for r in ["CON", "con", "Nul", "COM1", "lpt9", "AUX", "PRN"] {
            assert!(!is_machine(r), "{r} is reserved");
        }
        assert!(is_machine("COM10"));
        assert!(is_machine("CONSOLE"));
    }

    #[test]
    fn generated_ids_follow_the_pattern() {
        let now = time::macros::datetime!(2026-11-29 19:30:00 UTC);
        let id = JobId::generate(now);
        let s = id.as_str();
        assert!(s.starts_with("20261129-193000-"), "{s}");
        let rand = &s[16..];
        assert_eq!(rand.len(), 16);
        assert!(
            rand.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
        assert!(id.is_generated(), "{s}");
        for other in [
            "20261129-193000-9f2c4e1ab37d5c0",
            "20261129-193000-9f2c4e1ab37d5c08f",
            "20261129-193000-9F2C4E1AB37D5C08",
            "2026112a-193000-9f2c4e1ab37d5c08",
            "build-7",
        ] {
            assert!(!JobId::parse(other).unwrap().is_generated(), "{other}");
        }
        assert!(is_job_id(s));
        assert_ne!(JobId::generate(now), id);
    }

    #[test]
    fn entry_names() {
        assert_eq!(
            JobId::from_file_name("abc-1.json").map(|i| i.0),
            Some("abc-1".into())
        );
        // A OneDrive conflict copy matches the id pattern: it is parsed and refused later.
        assert!(JobId::from_file_name("abc-PC.json").is_some());
        for ignored in [
            ".syncthing.abc.json.tmp",
            "~$abc.json",
            "abc.sync-conflict-20261129-193000-ABCDEFG.json",
            ".abc.json.1234.tmp",
            "abc.json.partial",
            "abc (PC's conflicted copy 2026-11-29).json",
            ".json",
            "abc.JSON",
        ] {
            assert!(JobId::from_file_name(ignored).is_none(), "{ignored}");
        }
    }

    #[test]
    fn env_names() {
        assert!(is_env_name("PATH"));
        assert!(is_env_name("_x1"));
        assert!(!is_env_name("1X"));
        assert!(!is_env_name("A-B"));
        assert!(!is_env_name(""));
        assert!(!is_env_name("FLEET_DISPATCH_JOB_ID"));
    }
}
