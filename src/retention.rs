//! What `sweep` keeps and removes, as a pure rule over ages and job states.
//!
//! Markers go by their file's modification time, never the signer's
//! `createdAt`, and a marker whose job still waits or runs is always kept: a
//! machine offline for days must still find its cancel when it returns.

use std::time::Duration;

/// How long our own temp files may linger before `sweep` removes them.
pub const TEMP_MAX_AGE: Duration = Duration::from_secs(3600);

/// The decision for one entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Leave it.
    Keep(&'static str),
    /// Remove it.
    Remove,
}

/// A cancel marker whose file is `age` old (None: mtime in the future or
/// unknown), for a job that is still `waiting` (queued or running).
pub fn marker(age: Option<Duration>, max_age: Duration, waiting: bool) -> Decision {
    if waiting {
        return Decision::Keep("its job is still queued or running");
    }
    match age {
        Some(a) if a > max_age => Decision::Remove,
        Some(_) => Decision::Keep("younger than the max age"),
        None => Decision::Keep("its modification time is in the future"),
    }
}

/// One of our own temp files, `age` old.
pub fn temp_file(age: Option<Duration>) -> Decision {
    match age {
        Some(a) if a > TEMP_MAX_AGE => Decision::Remove,
        _ => Decision::Keep("possibly still being written"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: Duration = Duration::from_secs(86400);

    #[test]
    fn a_waiting_jobs_marker_is_kept_at_any_age() {
        assert_eq!(marker(Some(DAY * 3), DAY, false), Decision::Remove);
        assert!(matches!(
            marker(Some(DAY * 3), DAY, true),
            Decision::Keep(_)
        ));
        assert!(matches!(
            marker(Some(DAY / 2), DAY, false),
            Decision::Keep(_)
        ));
        assert!(matches!(marker(None, DAY, false), Decision::Keep(_)));
    }

    #[test]
    fn temp_files_after_an_hour() {
        assert_eq!(temp_file(Some(Duration::from_secs(3601))), Decision::Remove);
        assert!(matches!(
            temp_file(Some(Duration::from_secs(60))),
            Decision::Keep(_)
        ));
        assert!(matches!(temp_file(None), Decision::Keep(_)));
    }
}
