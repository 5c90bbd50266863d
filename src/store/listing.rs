//! A folder's names as last listed, answering "is this name there?" with
//! one `fstat` of the folder held open instead of a lookup of the name
//! (docs/protocol.md §7.4). The listener asks it of `cancel/` before each
//! job starts and after each ends; the name asked for is almost never
//! there, and a lookup of a name not there costs several times an
//! `fstat` once a job's exec has left the caches cold.
//!
//! The listing answers only while the folder's modification time is the
//! one it had when listed, and that time was old enough then that no later
//! change can share it (a file system stamps a folder from a clock that
//! moves in ticks: a few milliseconds, two seconds on FAT). A listing is
//! also made again each poll interval, as the inbox's is, for file systems
//! whose folder times lag. Anything else, and a folder of more than
//! [`MAX_NAMES`] names, is answered by looking the name up, and so is
//! every question on Windows.

use std::collections::HashSet;
use std::time::{Duration, Instant, SystemTime};

use crate::store::fsops::Dir;

/// A folder with more names than this is not listed: each change to it
/// would cost a listing of them all.
pub const MAX_NAMES: usize = 256;

/// The longest a clock tick of a file system with sub-millisecond times
/// may be (ext4, XFS, btrfs, APFS, NTFS: a kernel tick at most).
const FINE_GRAIN: Duration = Duration::from_millis(50);

/// The longest for one whose times are whole milliseconds or coarser
/// (FAT's two seconds, HFS+'s one).
const COARSE_GRAIN: Duration = Duration::from_secs(3);

/// True when a folder whose modification time was `mtime` when looked at,
/// at wall-clock time `at`, would show any change made after `at` in a
/// new modification time: `mtime` is older than a tick of the clock that
/// stamped it. A pure rule.
pub fn shows_later_changes(mtime: SystemTime, at: SystemTime) -> bool {
    let fine = mtime
        .duration_since(SystemTime::UNIX_EPOCH)
        .is_ok_and(|d| d.subsec_nanos() % 1_000_000 != 0);
    let grain = if fine { FINE_GRAIN } else { COARSE_GRAIN };
    at.duration_since(mtime).is_ok_and(|age| age > grain)
}

/// The names of one folder, held open, as last listed.
#[derive(Debug, Default)]
pub struct Listing {
    /// The folder listed, its modification time then, and when.
    of: Option<(Dir, SystemTime, Instant)>,
    names: HashSet<String>,
}

impl Listing {
    /// False only when `name` is surely not in `dir`: the listing made of
    /// it (made now when due) holds no such name and the folder has not
    /// changed since. True means "look it up".
    pub fn may_hold(&mut self, dir: &Dir, name: &str, every: Duration) -> bool {
        // Windows opens the folders afresh for nearly every pass
        // (TargetDirs::still_holds is never true there): a listing would
        // be made for every job.
        if cfg!(windows) {
            return true;
        }
        let at = SystemTime::now();
        let Some(mtime) = dir.modified() else {
            self.of = None;
            return true;
        };
        let current = self.of.as_ref().is_some_and(|(d, m, listed)| {
            d.same_folder(dir) && *m == mtime && listed.elapsed() < every
        });
        if current {
            return self.names.contains(name);
        }
        self.of = None;
        if !shows_later_changes(mtime, at) {
            return true;
        }
        match dir.list() {
            Ok(names) if names.len() <= MAX_NAMES => {
                // The time read before the listing: a change during it
                // shows as a new time at the next question.
                self.names = names.into_iter().collect();
                self.of = Some((dir.clone(), mtime, Instant::now()));
                self.names.contains(name)
            }
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64, nanos: u32) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::new(secs, nanos)
    }

    #[test]
    fn a_fine_time_older_than_a_tick_shows_later_changes() {
        let m = at(1_000, 123_456_789);
        assert!(shows_later_changes(m, m + Duration::from_millis(51)));
        assert!(!shows_later_changes(m, m + Duration::from_millis(50)));
        assert!(!shows_later_changes(m, m + Duration::from_millis(3)));
    }

    #[test]
    fn a_coarse_time_needs_seconds() {
        // Whole seconds (FAT, HFS+) or whole milliseconds.
        for m in [at(1_000, 0), at(1_000, 250_000_000)] {
            assert!(!shows_later_changes(m, m + Duration::from_secs(2)));
            assert!(shows_later_changes(m, m + Duration::from_millis(3_001)));
        }
    }

    #[test]
    fn a_time_ahead_of_the_clock_shows_nothing() {
        let m = at(1_000, 123_456_789);
        assert!(!shows_later_changes(m, m - Duration::from_secs(60)));
    }
}
