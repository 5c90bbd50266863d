//! What `sweep` keeps and removes, as a pure rule over ages and job states
//! (docs/protocol.md §8.3).
//!
//! Everything goes by the file's modification time, never a signer's
//! `createdAt`, and nothing of a job that still waits or runs, or that a
//! queued job waits for (its `after`), is ever removed: a machine offline
//! for days must still find its cancel when it returns, a queued job must
//! still find its history, and a job held by a dependency must still find
//! how that dependency ended.
//!
//! Retention prunes a processed job's files — its archived job file, result,
//! logs and consumed marker — together, once the newest of them is older than
//! the retention, and a rejected file together with its reason. The retention
//! may not be shorter than the job max age plus [`RETENTION_MARGIN`]: a
//! pruned job file that comes back is then older than the job max age, so
//! the listener's age rule (§6.3) refuses it even after its ledger has
//! forgotten the id.

use std::time::Duration;

/// How long our own temp files may linger before `sweep` removes them.
pub const TEMP_MAX_AGE: Duration = Duration::from_secs(3600);

const DAY: Duration = Duration::from_secs(86400);

/// How long `sweep` keeps a processed job's files when nothing says
/// otherwise (unless the floor is longer, see [`retention`]).
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(30 * 86400);

/// What the retention must exceed the job max age by: a day covers a job
/// created up to an hour ahead of the listener's clock (§6.3) and the
/// clocks of the machine that sweeps and the one that listens disagreeing.
/// The ledger keeps its ids for the same day longer (§7.8).
pub const RETENTION_MARGIN: Duration = DAY;

/// The shortest retention allowed with a job max age of `job_max_age`.
pub fn retention_floor(job_max_age: Duration) -> Duration {
    job_max_age.saturating_add(RETENTION_MARGIN)
}

/// The retention to use: `given`, or [`DEFAULT_RETENTION`] raised to the
/// floor when nothing was given. `Err(floor)` when `given` is below the
/// floor of [`retention_floor`].
pub fn retention(given: Option<Duration>, job_max_age: Duration) -> Result<Duration, Duration> {
    let floor = retention_floor(job_max_age);
    match given {
        Some(d) if d < floor => Err(floor),
        Some(d) => Ok(d),
        None => Ok(DEFAULT_RETENTION.max(floor)),
    }
}

/// Why [`marker`] keeps a marker younger than the max age (`sweep
/// --dry-run` says when it goes).
pub const MARKER_YOUNG: &str = "younger than the max age";

/// Why [`marker`] keeps a marker whose file is dated in the future.
pub const MARKER_FUTURE: &str = "its modification time is in the future";

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
        // `--max-age 0`: every marker whose job no longer waits, now.
        _ if max_age.is_zero() => Decision::Remove,
        Some(a) if a > max_age => Decision::Remove,
        Some(_) => Decision::Keep(MARKER_YOUNG),
        None => Decision::Keep(MARKER_FUTURE),
    }
}

/// A processed job's files, kept or pruned together: its archived job file,
/// result, logs and consumed marker, whichever exist, each `ages` old (None:
/// mtime in the future or unknown), for a job that is `waiting` (queued in
/// `inbox/`, running, or named in a queued job's `after`) or not. Pruned only when every one of them is older
/// than the retention: a job's history never goes half.
pub fn job_files(ages: &[Option<Duration>], retention: Duration, waiting: bool) -> Decision {
    if waiting {
        return Decision::Keep("its job is still queued or running, or a queued job waits for it");
    }
    all_older(ages, retention)
}

/// A rejected file and its `.reason.json`, whichever exist, each `ages` old,
/// kept or pruned together. `waiting`: a job with the rejected file's id is
/// queued or running now (kept, so a sender asking why still finds it);
/// `folder`: the rejected entry is a folder moved aside (§3.5), which sweep
/// never removes, so its reason stays with it.
pub fn rejected_files(
    ages: &[Option<Duration>],
    retention: Duration,
    waiting: bool,
    folder: bool,
) -> Decision {
    if folder {
        return Decision::Keep("a folder moved aside is never removed");
    }
    if waiting {
        return Decision::Keep(
            "a job with its id is queued or running, or a queued job waits for it",
        );
    }
    all_older(ages, retention)
}

fn all_older(ages: &[Option<Duration>], retention: Duration) -> Decision {
    if ages.iter().any(Option::is_none) {
        return Decision::Keep("a modification time is in the future");
    }
    if ages.iter().flatten().all(|a| *a > retention) {
        Decision::Remove
    } else {
        Decision::Keep("a file of it is younger than the retention")
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
        // A max age of 0 takes every marker whose job no longer waits.
        assert_eq!(
            marker(Some(Duration::ZERO), Duration::ZERO, false),
            Decision::Remove
        );
        assert_eq!(marker(None, Duration::ZERO, false), Decision::Remove);
        assert!(matches!(
            marker(None, Duration::ZERO, true),
            Decision::Keep(_)
        ));
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

    #[test]
    fn retention_defaults_to_30_days_and_never_goes_under_the_floor() {
        let week = DAY * 7;
        assert_eq!(retention(None, week), Ok(DAY * 30));
        assert_eq!(retention_floor(week), DAY * 8);
        assert_eq!(retention(Some(DAY * 8), week), Ok(DAY * 8));
        assert_eq!(
            retention(Some(DAY * 8 - Duration::from_secs(1)), week),
            Err(DAY * 8)
        );
        assert_eq!(retention(Some(Duration::ZERO), week), Err(DAY * 8));
        assert_eq!(retention(Some(DAY * 365), week), Ok(DAY * 365));
        // A longer job max age raises the default with the floor.
        assert_eq!(retention(None, DAY * 60), Ok(DAY * 61));
        assert_eq!(retention(Some(DAY * 30), DAY * 60), Err(DAY * 61));
    }

    #[test]
    fn a_jobs_files_go_together_once_all_are_older_than_the_retention() {
        let r = DAY * 30;
        let old = Some(DAY * 31);
        assert_eq!(job_files(&[old, old, old], r, false), Decision::Remove);
        assert_eq!(job_files(&[old], r, false), Decision::Remove);
        // One young file (the result written long after the job file
        // arrived) keeps them all.
        assert!(matches!(
            job_files(&[old, Some(DAY), old], r, false),
            Decision::Keep(_)
        ));
        // Exactly the retention old is not older than it.
        assert!(matches!(job_files(&[Some(r)], r, false), Decision::Keep(_)));
        assert!(matches!(
            job_files(&[old, None], r, false),
            Decision::Keep(_)
        ));
    }

    #[test]
    fn a_queued_or_running_jobs_files_are_kept_at_any_age() {
        let ancient = Some(DAY * 3650);
        assert!(matches!(
            job_files(&[ancient, ancient], DAY * 30, true),
            Decision::Keep(_)
        ));
        assert!(matches!(
            rejected_files(&[ancient], DAY * 30, true, false),
            Decision::Keep(_)
        ));
    }

    #[test]
    fn a_rejected_file_goes_with_its_reason_and_a_folder_never() {
        let r = DAY * 30;
        let old = Some(DAY * 40);
        assert_eq!(
            rejected_files(&[old, old], r, false, false),
            Decision::Remove
        );
        assert!(matches!(
            rejected_files(&[old, Some(DAY)], r, false, false),
            Decision::Keep(_)
        ));
        assert!(matches!(
            rejected_files(&[old], r, false, true),
            Decision::Keep(_)
        ));
    }
}
