//! When a file that does not parse counts as finished arriving
//! (docs/protocol.md §6.5): sync engines write files in place, so a job or
//! marker may be read half-written. Such a file is judged as it stands once
//! it has stayed unchanged for the settle time — by our own watch, or by a
//! modification time that old, so `listen --once` from cron settles too —
//! or once it has been seen for [`LIMIT`] settle times however often it
//! changed, so a file rewritten forever cannot hold its place (a cancel
//! marker's slot, say) forever. A pure rule over stamps and clocks.

use std::time::{Duration, Instant, SystemTime};

/// A file's size and modification time: a change in either is a change.
pub type Stamp = (u64, Option<SystemTime>);

/// How many settle times a file that keeps changing may take before it is
/// judged as it stands.
pub const LIMIT: u32 = 4;

/// What was seen of one file that does not parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settling {
    stamp: Stamp,
    /// When the current stamp was first seen.
    since: Instant,
    /// When the file was first seen at all.
    first: Instant,
}

impl Settling {
    /// A file first seen at `now` with `stamp`.
    pub fn new(stamp: Stamp, now: Instant) -> Settling {
        Settling {
            stamp,
            since: now,
            first: now,
        }
    }

    /// Notes the file's `stamp` at `now` (`wall` is the wall clock, for the
    /// modification time); true once it counts as settled.
    pub fn observe(
        &mut self,
        stamp: Stamp,
        now: Instant,
        wall: SystemTime,
        settle: Duration,
    ) -> bool {
        if stamp != self.stamp {
            self.stamp = stamp;
            self.since = now;
        }
        let unchanged = now.duration_since(self.since) >= settle;
        let by_mtime = stamp
            .1
            .and_then(|m| wall.duration_since(m).ok())
            .is_some_and(|age| age >= settle);
        let too_long = now.duration_since(self.first) >= settle * LIMIT;
        unchanged || by_mtime || too_long
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SETTLE: Duration = Duration::from_secs(30);

    #[test]
    fn a_file_settles_once_unchanged_for_the_settle_time() {
        let t0 = Instant::now();
        let wall = SystemTime::now();
        let stamp = (10, Some(wall));
        let mut s = Settling::new(stamp, t0);
        assert!(!s.observe(stamp, t0 + SETTLE / 2, wall, SETTLE));
        assert!(s.observe(stamp, t0 + SETTLE, wall, SETTLE));
    }

    #[test]
    fn a_change_starts_the_wait_again() {
        let t0 = Instant::now();
        let wall = SystemTime::now();
        let mut s = Settling::new((10, Some(wall)), t0);
        let later = (20, Some(wall + Duration::from_secs(20)));
        assert!(!s.observe(later, t0 + Duration::from_secs(20), wall, SETTLE));
        assert!(!s.observe(later, t0 + Duration::from_secs(49), wall, SETTLE));
        assert!(s.observe(later, t0 + Duration::from_secs(50), wall, SETTLE));
    }

    #[test]
    fn an_old_modification_time_settles_at_once() {
        let t0 = Instant::now();
        let wall = SystemTime::now();
        let old = (10, Some(wall - SETTLE));
        assert!(Settling::new(old, t0).observe(old, t0, wall, SETTLE));
    }

    #[test]
    fn a_file_rewritten_forever_is_judged_after_the_limit() {
        let t0 = Instant::now();
        let wall = SystemTime::now();
        let mut s = Settling::new((0, Some(wall)), t0);
        let mut settled_at = None;
        for i in 1..=200u64 {
            // A new size and mtime every second: never unchanged for long.
            let now = t0 + Duration::from_secs(i);
            let stamp = (i, Some(wall + Duration::from_secs(i)));
            if s.observe(stamp, now, wall + Duration::from_secs(i), SETTLE) {
                settled_at = Some(i);
                break;
            }
        }
        assert_eq!(settled_at, Some(u64::from(LIMIT) * 30));
    }
}
