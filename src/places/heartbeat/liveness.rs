//! Whether a target's listener is alive, from its heartbeat: the one-look
//! rule of `status` ([`seen_alive`]) and a wait's rule over time
//! ([`Tracker`], on the watcher's own clock).

use std::time::Duration;

use super::{BeatVerdict, STALE_AFTER, changed, judged};
use crate::store::layout::TargetDirs;
use crate::trust::Key;

/// Whether a listener whose last heartbeat is `age` old, in `state`, is alive.
pub fn alive(state: &str, age: Option<Duration>) -> bool {
    state != "stopped" && age.is_some_and(|a| a <= STALE_AFTER)
}

/// A reader's liveness rule (`status`, `doctor`): [`alive`] by the beat's
/// own time (`age`) or by the file's last change (`changed`, how long ago
/// its modification time is by this clock). A listener whose clock was
/// stepped dates its beats hours off, but the file still changes every
/// [`EVERY`](super::EVERY): its liveness is that change, not the wall time it writes.
/// The one-listener rule (§7.1) keeps to the signed time alone: a file's
/// time is anyone's to set.
pub fn seen_alive(state: &str, age: Option<Duration>, changed: Option<Duration>) -> bool {
    alive(state, younger(age, changed))
}

/// The younger of a beat's age by its own time and by its file's change:
/// the age [`seen_alive`] judges.
fn younger(age: Option<Duration>, changed: Option<Duration>) -> Option<Duration> {
    match (age, changed) {
        (Some(a), Some(c)) => Some(a.min(c)),
        (a, c) => a.or(c),
    }
}

/// What a reader knows of a target's listener: [`Tracker::see`]'s answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Liveness {
    /// No heartbeat file, or none that parses: no listener has run there.
    Never,
    /// A heartbeat that does not verify under the reader's key.
    Unverified,
    /// Its beats come: it runs.
    Alive,
    /// Its last beat says it stopped, this long ago (when known).
    Stopped(Option<Duration>),
    /// No new beat for this long (when known): its machine may be off, or
    /// sync lags.
    Quiet(Option<Duration>),
}

/// One look at a target's heartbeat file, for a [`Tracker`].
#[derive(Clone, Debug, PartialEq)]
pub enum Sight {
    /// No heartbeat file, or none that parses.
    Missing,
    /// A beat that does not verify.
    Unverified,
    /// A verified beat.
    Beat {
        /// Its `run` and `heartbeatAt`: a new pair is a new beat.
        mark: (String, String),
        /// It says `stopped`.
        stopped: bool,
        /// How old it is by [`seen_alive`]'s rule (its own time or the
        /// file's change, whichever is younger), when either is known.
        age: Option<Duration>,
    },
}

impl Sight {
    /// Reads the heartbeat in `dirs`' target folder, judged under `key`.
    pub fn read(dirs: &TargetDirs, key: &Key) -> Sight {
        let beat = match judged(dirs, key) {
            Ok(beat) => beat,
            Err(BeatVerdict::Unverified(_)) => return Sight::Unverified,
            Err(_) => return Sight::Missing,
        };
        Sight::Beat {
            stopped: beat.state == "stopped",
            age: younger(beat.age(), changed(dirs)),
            mark: (beat.run, beat.heartbeat_at),
        }
    }
}

/// How many beats a [`Tracker`] remembers: a replay of one of them is no
/// sign of life.
pub(super) const REMEMBERED: usize = 64;

/// A watcher's liveness rule (the wait): a listener lives while its
/// verified beats keep changing, timed on the watcher's own monotonic
/// clock, so neither clock's wall time decides. A listener whose clock is
/// hours off still writes a new beat every [`EVERY`](super::EVERY) and is alive; one that
/// stopped writing is quiet after `stale_after` without a new beat,
/// whatever time its last one bears. A beat counts as new when this
/// tracker has not seen its `run` and `heartbeatAt` before: a clock
/// stepped back dates a new beat earlier, and a copy of an old beat put
/// back is not new. Only the first beat seen is judged by its age (the
/// one-shot rule, [`seen_alive`]): nothing else is known of it yet.
#[derive(Clone, Debug)]
pub struct Tracker {
    stale_after: Duration,
    /// Beats seen, oldest first.
    seen: std::collections::VecDeque<(String, String)>,
    /// When the newest beat was first seen, and how old it was then.
    since: Option<(std::time::Instant, Option<Duration>)>,
}

impl Tracker {
    /// A tracker that calls a listener quiet after `stale_after` without a
    /// new beat ([`STALE_AFTER`] unless a wait is told otherwise).
    pub fn new(stale_after: Duration) -> Tracker {
        Tracker {
            stale_after,
            seen: std::collections::VecDeque::new(),
            since: None,
        }
    }

    /// Takes in `sight`, made at `now`, and says what is known of the
    /// listener.
    pub fn see(&mut self, sight: Sight, now: std::time::Instant) -> Liveness {
        let (mark, stopped, age) = match sight {
            Sight::Missing => return Liveness::Never,
            Sight::Unverified => return Liveness::Unverified,
            Sight::Beat { mark, stopped, age } => (mark, stopped, age),
        };
        if !self.seen.contains(&mark) {
            let age = if self.since.is_none() {
                age
            } else {
                Some(Duration::ZERO)
            };
            self.since = Some((now, age));
            if self.seen.len() == REMEMBERED {
                self.seen.pop_front();
            }
            self.seen.push_back(mark);
        }
        let quiet = self
            .since
            .and_then(|(t, age)| age.map(|a| a + now.saturating_duration_since(t)));
        if stopped {
            Liveness::Stopped(quiet)
        } else if quiet.is_some_and(|q| q <= self.stale_after) {
            Liveness::Alive
        } else {
            Liveness::Quiet(quiet)
        }
    }
}
