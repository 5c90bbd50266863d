//! The governor gate (docs/protocol.md §7): a file whose first word is the tier. GREEN
//! runs everything, YELLOW only `high` jobs, RED nothing (jobs stay queued).
//! A missing file is GREEN; an unreadable or unrecognised one is YELLOW, the
//! cautious middle.

use std::path::Path;

use crate::protocol::doc::Priority;

/// A governor tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    /// Run every job.
    Green,
    /// Run only high-priority jobs.
    Yellow,
    /// Run nothing.
    Red,
}

impl Tier {
    /// The tier named by a governor file's text.
    pub fn parse(text: &str) -> Tier {
        match text
            .split_whitespace()
            .next()
            .map(str::to_ascii_uppercase)
            .as_deref()
        {
            Some("GREEN") => Tier::Green,
            Some("RED") => Tier::Red,
            _ => Tier::Yellow,
        }
    }

    /// Reads the tier from `file` (none configured: GREEN).
    pub fn read(file: Option<&Path>) -> Tier {
        let Some(file) = file else { return Tier::Green };
        match std::fs::read(file) {
            Ok(bytes) => Tier::parse(&String::from_utf8_lossy(&bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Tier::Green,
            Err(_) => Tier::Yellow,
        }
    }

    /// Whether a job of `priority` may start under this tier.
    pub fn admits(self, priority: Priority) -> bool {
        match self {
            Tier::Green => true,
            Tier::Yellow => priority == Priority::High,
            Tier::Red => false,
        }
    }

    /// The tier's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Green => "GREEN",
            Tier::Yellow => "YELLOW",
            Tier::Red => "RED",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers() {
        assert_eq!(Tier::parse("GREEN\n"), Tier::Green);
        assert_eq!(Tier::parse("  red because the GPU is busy"), Tier::Red);
        assert_eq!(Tier::parse("Yellow"), Tier::Yellow);
        assert_eq!(Tier::parse("purple"), Tier::Yellow);
        assert_eq!(Tier::parse(""), Tier::Yellow);
        assert!(Tier::Green.admits(Priority::Normal));
        assert!(Tier::Yellow.admits(Priority::High));
        assert!(!Tier::Yellow.admits(Priority::Normal));
        assert!(!Tier::Red.admits(Priority::High));
    }

    #[test]
    fn missing_file_is_green() {
        assert_eq!(
            Tier::read(Some(Path::new("/nonexistent/governor"))),
            Tier::Green
        );
        assert_eq!(Tier::read(None), Tier::Green);
    }
}
