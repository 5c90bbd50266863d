//! The listener heartbeat, `<root>/<TARGET>/listener.json` (docs/protocol.md
//! §7.11): written by the listener while it lives (idle or running a job),
//! signed with the fleet key, read by `status` to say whether a target's
//! listener is alive ([`seen_alive`], one look), by a wait that watches it
//! over time ([`Tracker`]: new beats on the watcher's own clock), and by
//! other listeners for the one-listener rule (§7.1). Only a beat that verifies counts for that rule: a folder writer
//! without the key cannot stop a lane by writing one. A failed write never
//! stops a listener.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock;
use crate::fsops;
use crate::layout::{LISTENER_JSON, StateDirs, TargetDirs};
use crate::names::Machine;
use crate::read::FileRead;
use crate::trust::{Key, Signer};

/// How often the heartbeat is refreshed.
pub const EVERY: Duration = Duration::from_secs(30);

/// A heartbeat older than this means the listener is gone (or its machine
/// is offline, or sync lags).
pub const STALE_AFTER: Duration = Duration::from_secs(90);

/// The heartbeat document. Its texts are read
/// [`tame`](crate::screen::tame)d: a genuine beat has no control character
/// in them (so it still verifies), and a forged one cannot drive the
/// terminal of whoever reads it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Beat {
    /// The target served.
    #[serde(deserialize_with = "crate::screen::tamed")]
    pub target: String,
    /// The listener's process id on its machine.
    pub pid: u32,
    /// `listening`, `running` or `stopped`.
    #[serde(deserialize_with = "crate::screen::tamed")]
    pub state: String,
    /// The job running now, if any (the first started, with several).
    #[serde(default, deserialize_with = "crate::screen::tamed_opt")]
    pub running: Option<String>,
    /// Every job running now, in the order they started (`listen
    /// --slots`; absent from versions before it was written).
    #[serde(default, deserialize_with = "crate::screen::tamed_list")]
    pub running_jobs: Vec<String>,
    /// When the listener started.
    #[serde(deserialize_with = "crate::screen::tamed")]
    pub started_at: String,
    /// When this heartbeat was written.
    #[serde(deserialize_with = "crate::screen::tamed")]
    pub heartbeat_at: String,
    /// The listener's poll interval.
    pub poll_interval_ms: u64,
    /// The listener's version.
    #[serde(deserialize_with = "crate::screen::tamed")]
    pub version: String,
    /// The host it runs on (empty from versions before it was written).
    #[serde(default, deserialize_with = "crate::screen::tamed")]
    pub host: String,
    /// Its instance id ([`crate::state::instance_id`]; empty from versions
    /// before it was written).
    #[serde(default, deserialize_with = "crate::screen::tamed")]
    pub instance: String,
    /// Its key's fingerprint ([`crate::trust::Key::key_id`]; empty from
    /// versions before it was written).
    #[serde(default, deserialize_with = "crate::screen::tamed")]
    pub key_fingerprint: String,
    /// A random id made at each start ([`run_id`]): a copy of the state
    /// directory (a cloned disk) shares the instance id, never this (empty
    /// from versions before it was written).
    #[serde(default, deserialize_with = "crate::screen::tamed")]
    pub run: String,
    /// The target's signature over [`Beat::canonical`] (empty from versions before beats
    /// were signed: such a beat is unverified).
    #[serde(default)]
    pub sig: String,
}

impl Beat {
    /// `heartbeat|{target}|{instance}|{run}|{pid}|{state}|{running}|{runningJobs}|{startedAt}|{heartbeatAt}|{pollIntervalMs}|{version}|{keyFingerprint}|{host}`,
    /// `running` empty when none, `runningJobs` the ids joined by `,`
    /// (job ids hold neither `,` nor `|`). The host, the one field a
    /// listener does not make itself, comes last, so no `|` in it can shift
    /// another.
    pub fn canonical(&self) -> String {
        format!(
            "heartbeat|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}",
            self.target,
            self.instance,
            self.run,
            self.pid,
            self.state,
            self.running.as_deref().unwrap_or(""),
            self.running_jobs.join(","),
            self.started_at,
            self.heartbeat_at,
            self.poll_interval_ms,
            self.version,
            self.key_fingerprint,
            self.host
        )
    }

    /// True when it is `target`'s beat and its signature holds under
    /// `key`: a listener holding the fleet key wrote it for that target.
    /// An unsigned beat (an older version, or a folder writer's) is not,
    /// nor another target's genuine beat copied into this folder.
    pub fn verified(&self, key: &Key, target: &Machine) -> bool {
        target.same(&self.target)
            && !self.sig.is_empty()
            && key.verify(Signer::Machine(&self.target), &self.canonical(), &self.sig)
    }

    /// Its age now, when its time parses.
    pub fn age(&self) -> Option<Duration> {
        let t = clock::parse(&self.heartbeat_at)?;
        (clock::now() - t).try_into().ok()
    }

    /// True while the listener that wrote it counts as alive.
    pub fn alive(&self) -> bool {
        alive(&self.state, self.age())
    }

    /// Who wrote it, for messages.
    pub fn who(&self) -> String {
        format!("instance {} {}", self.instance, self.whereabouts())
    }

    /// Who wrote it, to a listener whose instance id is `own`: a beat
    /// with our own instance id and another run is a copy of our state
    /// directory (a cloned disk), and is named as such, by its run.
    pub fn who_beside(&self, own: &str) -> String {
        if self.instance != own {
            return self.who();
        }
        format!(
            "a copy of this listener's state directory (a cloned disk or a copied state folder: the same instance {}, run {}) {}",
            self.instance,
            self.run,
            self.whereabouts()
        )
    }

    /// `on HOST (pid N), last heartbeat AGE ago`.
    fn whereabouts(&self) -> String {
        let host = if self.host.is_empty() {
            "an unnamed host"
        } else {
            &self.host
        };
        let age = self.age().map_or("at an unreadable time".to_string(), |a| {
            format!("{} ago", clock::human(a))
        });
        format!("on {host} (pid {}), last heartbeat {age}", self.pid)
    }
}

/// Why a target's heartbeat file is not a verified beat: [`judged`]'s
/// verdict.
#[derive(Clone, Debug, PartialEq)]
pub enum BeatVerdict {
    /// No heartbeat file (or no target folder): no listener has run there.
    Missing,
    /// Something is there but was not read: not a regular file (never
    /// followed), over [`MAX_BYTES`], or unreadable now.
    NotRead,
    /// Read, but not a heartbeat.
    Malformed,
    /// A beat that does not verify: unsigned (an older version, or a
    /// folder writer's), edited, another target's, or signed with another
    /// key. It may be shown, never trusted.
    Unverified(Box<Beat>),
}

/// The heartbeat in the target folder of `dirs` (read without following a
/// link, with its size limit), judged under `key`: the verified beat, or
/// the verdict. The one door every reader of a heartbeat goes through.
///
/// # Errors
///
/// The [`BeatVerdict`] of a file that is no verified beat.
pub fn judged(dirs: &TargetDirs, key: &Key) -> Result<Beat, BeatVerdict> {
    let beat = peek(dirs)?;
    if beat.verified(key, dirs.target()) {
        Ok(beat)
    } else {
        Err(BeatVerdict::Unverified(Box::new(beat)))
    }
}

/// The heartbeat in the target folder of `dirs`, unjudged: only to show
/// what it says where there is no key to judge it with (`doctor` on a
/// machine without one). Everything else asks [`judged`].
///
/// # Errors
///
/// [`BeatVerdict::Missing`], [`BeatVerdict::NotRead`] or
/// [`BeatVerdict::Malformed`].
pub fn peek(dirs: &TargetDirs) -> Result<Beat, BeatVerdict> {
    let Ok(Some(base)) = dirs.open_base() else {
        return Err(BeatVerdict::Missing);
    };
    match base.read_limited(LISTENER_JSON, MAX_BYTES) {
        FileRead::Bytes(b) => serde_json::from_slice(&b).map_err(|_| BeatVerdict::Malformed),
        FileRead::Missing => Err(BeatVerdict::Missing),
        FileRead::NotAFile(_) | FileRead::TooLarge(_) | FileRead::Unreadable(_) => {
            Err(BeatVerdict::NotRead)
        }
    }
}

/// How long ago the heartbeat file in the target folder of `dirs` last
/// changed, by this clock (the reader's half of [`seen_alive`]).
pub fn changed(dirs: &TargetDirs) -> Option<Duration> {
    let m = dirs
        .open_base()
        .ok()??
        .entry(LISTENER_JSON)
        .ok()?
        .modified?;
    std::time::SystemTime::now().duration_since(m).ok()
}

/// The largest heartbeat file read.
pub const MAX_BYTES: u64 = 64 * 1024;

/// Who a listener is, as its heartbeat says.
#[derive(Clone, Debug, Default)]
pub struct Identity {
    /// The host name.
    pub host: String,
    /// The instance id kept in its state directory.
    pub instance: String,
    /// Its key's fingerprint.
    pub key_fingerprint: String,
}

/// The last beat a listener with this state directory wrote: its run and
/// time, kept in the state directory ([`StateDirs::last_beat`]) and
/// recorded before the beat is written, so a restarted listener knows its
/// own leftover beat from a clone's.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Written {
    /// The run that wrote it.
    pub run: String,
    /// Its `heartbeatAt`.
    pub at: String,
}

impl Written {
    /// The record in `state`, if one is there and reads.
    pub fn load(state: &StateDirs) -> Option<Written> {
        let text = std::fs::read_to_string(state.last_beat()).ok()?;
        let (run, at) = text.trim().split_once(' ')?;
        Some(Written {
            run: run.to_string(),
            at: at.to_string(),
        })
    }
}

/// Who this listener is, for the rival rule.
#[derive(Clone, Debug, Default)]
pub struct Own {
    /// Its instance id.
    pub instance: String,
    /// This run's id.
    pub run: String,
    /// The last beat an earlier run with this state directory wrote.
    pub previous: Option<Written>,
}

/// Whether `b` is another listener serving the target, to a listener that
/// is `own` holding `key` (docs/protocol.md §7.1): a beat that verifies,
/// counts as alive and names an instance, and that this listener did not
/// write — another instance, or ours from another run than this one and
/// than the last one this state directory wrote (whose leftover beat is
/// not dated after that run's record). That last case is a copy of our
/// state directory: a cloned disk.
pub fn is_rival(b: &Beat, key: &Key, target: &Machine, own: &Own) -> bool {
    if b.instance.is_empty() || !b.alive() || !b.verified(key, target) {
        return false;
    }
    if b.instance != own.instance {
        return true;
    }
    if b.run == own.run {
        return false;
    }
    !own.previous.as_ref().is_some_and(|w| {
        w.run == b.run
            && match (clock::parse(&b.heartbeat_at), clock::parse(&w.at)) {
                (Some(theirs), Some(recorded)) => theirs <= recorded,
                _ => false,
            }
    })
}

/// A new random run id: 16 hex digits.
pub fn run_id() -> String {
    let mut raw = [0u8; 8];
    crate::random::fill(&mut raw);
    hex::encode(raw)
}

/// Writes heartbeats for one listener; cheap to clone into a thread (each
/// job's watch takes one): the clones share one `Writer`, and with it the
/// list of jobs running in slots.
#[derive(Clone, Debug)]
pub struct Heartbeat(Arc<Writer>);

/// What every beat of one listener is made from.
#[derive(Debug)]
struct Writer {
    /// The jobs running in slots, in the order they started; empty with
    /// one slot, where the job is the one [`Heartbeat::write`] is given.
    slots: Mutex<Vec<String>>,
    dirs: TargetDirs,
    target: String,
    host: String,
    own: Own,
    key: Arc<Key>,
    record: PathBuf,
    key_fingerprint: String,
    started_at: String,
    poll: Duration,
}

impl Heartbeat {
    /// A heartbeat writer for `target` in the target folder of `dirs`, as
    /// `who` with a new run id, signing with `key`; the last beat an
    /// earlier run wrote is read from `state`, and each beat is recorded
    /// there before it is written.
    pub fn new(
        dirs: TargetDirs,
        state: &StateDirs,
        target: &str,
        who: &Identity,
        key: Arc<Key>,
        poll: Duration,
    ) -> Heartbeat {
        Heartbeat(Arc::new(Writer {
            slots: Mutex::default(),
            dirs,
            target: target.to_string(),
            host: who.host.clone(),
            own: Own {
                instance: who.instance.clone(),
                run: run_id(),
                previous: Written::load(state),
            },
            key,
            record: state.last_beat(),
            key_fingerprint: who.key_fingerprint.clone(),
            started_at: clock::format(clock::now()),
            poll,
        }))
    }

    /// Another listener's heartbeat in our file, while it counts as alive
    /// ([`is_rival`]): a beat that does not verify is a folder writer's
    /// (or an older version's) and never counts.
    pub fn rival(&self) -> Option<Beat> {
        self.judged().ok().filter(|b| self.is_rival(b))
    }

    /// The beat in our file now, judged under the fleet key this listener
    /// signs with ([`judged`]).
    ///
    /// # Errors
    ///
    /// The [`BeatVerdict`] of a file that is no verified beat.
    pub fn judged(&self) -> Result<Beat, BeatVerdict> {
        judged(&self.0.dirs, &self.0.key)
    }

    /// Whether `b`, a beat read from the target folder, is another
    /// listener's ([`is_rival`]).
    pub fn is_rival(&self, b: &Beat) -> bool {
        is_rival(b, &self.0.key, self.0.dirs.target(), &self.0.own)
    }

    /// This listener's instance id.
    pub fn instance(&self) -> &str {
        &self.0.own.instance
    }

    /// Notes that job `id` runs in a slot, or (`false`) no longer does.
    pub fn slot(&self, id: &str, runs: bool) {
        let mut slots = self.0.slots.lock().unwrap_or_else(|p| p.into_inner());
        slots.retain(|j| j != id);
        if runs {
            slots.push(id.to_string());
        }
    }

    /// Writes the heartbeat now. While jobs run in slots they are the
    /// running ones (whichever `running` is given), and `listening` reads
    /// `running`.
    pub fn write(&self, running: Option<&str>, state: &str) {
        let slots = self
            .0
            .slots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let (running_jobs, state) = if slots.is_empty() {
            (running.map(str::to_string).into_iter().collect(), state)
        } else if state == "listening" {
            (slots, "running")
        } else {
            (slots, state)
        };
        self.write_beat(running_jobs, state);
    }

    /// The last beat of a listener a second signal stops at once: `stopped`,
    /// naming the jobs it killed, which no result records until the next
    /// start (so views say so instead of calling them queued).
    pub fn write_killed(&self, killed: &[String]) {
        self.write_beat(killed.to_vec(), "stopped");
    }

    fn write_beat(&self, running_jobs: Vec<String>, state: &str) {
        let beat = Beat {
            target: self.0.target.clone(),
            pid: std::process::id(),
            state: state.to_string(),
            running: running_jobs.first().cloned(),
            running_jobs,
            started_at: self.0.started_at.clone(),
            heartbeat_at: clock::format(clock::now()),
            poll_interval_ms: self.0.poll.as_millis() as u64,
            version: env!("CARGO_PKG_VERSION").to_string(),
            host: self.0.host.clone(),
            instance: self.0.own.instance.clone(),
            key_fingerprint: self.0.key_fingerprint.clone(),
            run: self.0.own.run.clone(),
            sig: String::new(),
        };
        let beat = Beat {
            sig: self.0.key.sign(&beat.canonical()),
            ..beat
        };
        // Recorded first: a crash between the two leaves a beat dated no
        // later than the record, which the next run takes for its own.
        let _ = fsops::replace(
            &self.0.record,
            format!("{} {}\n", beat.run, beat.heartbeat_at).as_bytes(),
            fsops::Flush::Nothing,
        );
        // The target folder is opened for each write: never through a link.
        if let Ok(Some(base)) = self.0.dirs.open_base() {
            let _ = base.replace(
                LISTENER_JSON,
                &crate::doc::to_file_bytes(&beat),
                fsops::Flush::Nothing,
            );
        }
    }
}

/// Whether a listener whose last heartbeat is `age` old, in `state`, is alive.
pub fn alive(state: &str, age: Option<Duration>) -> bool {
    state != "stopped" && age.is_some_and(|a| a <= STALE_AFTER)
}

/// A reader's liveness rule (`status`, `doctor`): [`alive`] by the beat's
/// own time (`age`) or by the file's last change (`changed`, how long ago
/// its modification time is by this clock). A listener whose clock was
/// stepped dates its beats hours off, but the file still changes every
/// [`EVERY`]: its liveness is that change, not the wall time it writes.
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
const REMEMBERED: usize = 64;

/// A watcher's liveness rule (the wait): a listener lives while its
/// verified beats keep changing, timed on the watcher's own monotonic
/// clock, so neither clock's wall time decides. A listener whose clock is
/// hours off still writes a new beat every [`EVERY`] and is alive; one that
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alive_rule() {
        assert!(alive("listening", Some(Duration::from_secs(5))));
        assert!(alive("running", Some(STALE_AFTER)));
        assert!(!alive(
            "running",
            Some(STALE_AFTER + Duration::from_secs(1))
        ));
        assert!(!alive("stopped", Some(Duration::ZERO)));
        assert!(!alive("listening", None));
        // Dated hours off by a stepped clock, its file just written: alive.
        let hours = Some(Duration::from_secs(3 * 3600));
        let now = Some(Duration::from_secs(2));
        assert!(seen_alive("listening", hours, now));
        assert!(seen_alive("listening", None, now));
        assert!(!seen_alive("listening", hours, hours));
        assert!(!seen_alive("stopped", now, now));
    }

    fn sight(run: &str, at: &str, age: Option<u64>) -> Sight {
        Sight::Beat {
            mark: (run.into(), at.into()),
            stopped: false,
            age: age.map(Duration::from_secs),
        }
    }

    #[test]
    fn a_tracker_judges_by_new_beats_on_its_own_clock() {
        let t0 = std::time::Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut t = Tracker::new(STALE_AFTER);
        // First seen: judged by its age, as a one-shot reader would.
        assert_eq!(t.see(sight("r1", "a", Some(5)), at(0)), Liveness::Alive);
        // The same beat, STALE_AFTER later by this clock: quiet since.
        assert_eq!(
            t.see(sight("r1", "a", Some(5)), at(90)),
            Liveness::Quiet(Some(Duration::from_secs(95)))
        );
        // A new beat, whatever time it bears (hours behind): alive again.
        assert_eq!(t.see(sight("r1", "b", None), at(91)), Liveness::Alive);
        assert_eq!(
            t.see(sight("r1", "b", None), at(91 + 91)),
            Liveness::Quiet(Some(Duration::from_secs(91)))
        );
        // An old beat put back is not new.
        assert_eq!(
            t.see(sight("r1", "a", Some(0)), at(91 + 92)),
            Liveness::Quiet(Some(Duration::from_secs(92)))
        );
        // A new run is.
        assert_eq!(t.see(sight("r2", "a", None), at(200)), Liveness::Alive);
        // A first beat already old, or of no known age: not alive.
        let mut t = Tracker::new(STALE_AFTER);
        assert_eq!(
            t.see(sight("r1", "a", Some(600)), at(0)),
            Liveness::Quiet(Some(Duration::from_secs(600)))
        );
        let mut t = Tracker::new(STALE_AFTER);
        assert_eq!(t.see(sight("r1", "a", None), at(0)), Liveness::Quiet(None));
        assert_eq!(t.see(sight("r1", "x", None), at(1)), Liveness::Alive);
        // Stopped, with how long ago by this clock; missing; unverified.
        let stopped = Sight::Beat {
            mark: ("r1".into(), "z".into()),
            stopped: true,
            age: Some(Duration::from_secs(3)),
        };
        assert_eq!(
            t.see(stopped, at(11)),
            Liveness::Stopped(Some(Duration::ZERO))
        );
        assert_eq!(t.see(Sight::Missing, at(12)), Liveness::Never);
        assert_eq!(t.see(Sight::Unverified, at(12)), Liveness::Unverified);
        // A shorter staleness, as a wait may be told.
        let mut t = Tracker::new(Duration::from_secs(2));
        assert_eq!(t.see(sight("r1", "a", Some(0)), at(0)), Liveness::Alive);
        assert!(matches!(
            t.see(sight("r1", "a", Some(0)), at(3)),
            Liveness::Quiet(_)
        ));
    }

    #[test]
    fn a_tracker_forgets_only_its_oldest_beats() {
        let t0 = std::time::Instant::now();
        let mut t = Tracker::new(STALE_AFTER);
        for i in 0..REMEMBERED + 1 {
            t.see(sight("r", &i.to_string(), Some(0)), t0);
        }
        let late = t0 + STALE_AFTER + Duration::from_secs(1);
        // The last one is remembered: not new, so quiet by now.
        assert!(matches!(
            t.see(sight("r", &REMEMBERED.to_string(), Some(0)), late),
            Liveness::Quiet(_)
        ));
    }

    fn key(b: u8) -> Key {
        Key::from_bytes(&[b; 32]).unwrap()
    }

    /// A fresh beat of `instance`/`run`, signed with `k` when given.
    fn beat(instance: &str, run: &str, at: &str, k: Option<&Key>) -> Beat {
        let b = Beat {
            target: "PC".into(),
            pid: 42,
            state: "listening".into(),
            running: None,
            running_jobs: Vec::new(),
            started_at: at.into(),
            heartbeat_at: at.into(),
            poll_interval_ms: 2000,
            version: "0.1.0".into(),
            host: "pc|x".into(),
            instance: instance.into(),
            key_fingerprint: "aaaa0000".into(),
            run: run.into(),
            sig: String::new(),
        };
        let sig = k.map(|k| k.sign(&b.canonical())).unwrap_or_default();
        Beat { sig, ..b }
    }

    #[test]
    fn canonical_string_puts_the_host_last() {
        let b = beat("i1", "r1", "2026-11-29T19:30:00.000Z", None);
        assert_eq!(
            b.canonical(),
            "heartbeat|PC|i1|r1|42|listening|||2026-11-29T19:30:00.000Z|2026-11-29T19:30:00.000Z|2000|0.1.0|aaaa0000|pc|x"
        );
    }

    fn pc() -> Machine {
        Machine::parse("PC", "target").unwrap()
    }

    #[test]
    fn the_door_gives_a_verified_beat_or_says_why_not() {
        let tmp = tempfile::tempdir().unwrap();
        let dirs = TargetDirs::new(tmp.path(), &pc());
        let k = key(1);
        assert_eq!(judged(&dirs, &k), Err(BeatVerdict::Missing));
        std::fs::create_dir_all(dirs.base()).unwrap();
        assert_eq!(judged(&dirs, &k), Err(BeatVerdict::Missing));
        let file = dirs.base().join(LISTENER_JSON);
        std::fs::write(&file, b"{").unwrap();
        assert_eq!(judged(&dirs, &k), Err(BeatVerdict::Malformed));
        std::fs::write(&file, vec![b' '; MAX_BYTES as usize + 1]).unwrap();
        assert_eq!(judged(&dirs, &k), Err(BeatVerdict::NotRead));
        let genuine = beat("i1", "r1", "2026-11-29T19:30:00.000Z", Some(&k));
        std::fs::write(&file, crate::doc::to_file_bytes(&genuine)).unwrap();
        assert_eq!(judged(&dirs, &k), Ok(genuine.clone()));
        assert_eq!(peek(&dirs), Ok(genuine.clone()));
        assert_eq!(
            judged(&dirs, &key(2)),
            Err(BeatVerdict::Unverified(Box::new(genuine)))
        );
        let unsigned = beat("i1", "r1", "2026-11-29T19:30:00.000Z", None);
        std::fs::write(&file, crate::doc::to_file_bytes(&unsigned)).unwrap();
        assert_eq!(
            judged(&dirs, &k),
            Err(BeatVerdict::Unverified(Box::new(unsigned)))
        );
    }

    #[test]
    fn every_field_a_reader_trusts_is_signed() {
        let k = key(1);
        let b = beat("i1", "r1", "2026-11-29T19:30:00.000Z", Some(&k));
        assert!(b.verified(&k, &pc()));
        // The same genuine beat read as another target's: not that one's.
        assert!(!b.verified(&k, &Machine::parse("LAPTOP", "target").unwrap()));
        assert!(b.verified(&k, &Machine::parse("pc", "target").unwrap()));
        let edits: [fn(&mut Beat); 4] = [
            |b| b.running_jobs = vec!["job-2".into()],
            |b| b.running = Some("job-2".into()),
            |b| b.state = "stopped".into(),
            |b| b.heartbeat_at = "2026-11-29T19:31:00.000Z".into(),
        ];
        for edit in edits {
            let mut forged = b.clone();
            edit(&mut forged);
            assert!(!forged.verified(&k, &pc()), "{forged:?}");
        }
        assert!(!b.verified(&key(2), &pc()));
    }

    #[test]
    fn only_a_verified_beat_we_did_not_write_is_a_rival() {
        let k = key(1);
        let now = clock::format(clock::now());
        let own = Own {
            instance: "i1".into(),
            run: "r1".into(),
            previous: Some(Written {
                run: "r0".into(),
                at: now.clone(),
            }),
        };
        // Unsigned, or signed with another key: never.
        assert!(!is_rival(&beat("i2", "r9", &now, None), &k, &pc(), &own));
        assert!(!is_rival(
            &beat("i2", "r9", &now, Some(&key(2))),
            &k,
            &pc(),
            &own
        ));
        let mut tampered = beat("i2", "r9", &now, Some(&k));
        tampered.pid = 43;
        assert!(!is_rival(&tampered, &k, &pc(), &own));
        // Another instance: yes; ours from this run: no.
        assert!(is_rival(&beat("i2", "r9", &now, Some(&k)), &k, &pc(), &own));
        assert!(!is_rival(
            &beat("i1", "r1", &now, Some(&k)),
            &k,
            &pc(),
            &own
        ));
        // Our previous run's leftover, no later than its record: no; the
        // same run carrying on after the record (a clone): yes.
        assert!(!is_rival(
            &beat("i1", "r0", &now, Some(&k)),
            &k,
            &pc(),
            &own
        ));
        let earlier = Own {
            previous: Some(Written {
                run: "r0".into(),
                at: clock::format(clock::now() - Duration::from_secs(1)),
            }),
            ..own.clone()
        };
        assert!(is_rival(
            &beat("i1", "r0", &now, Some(&k)),
            &k,
            &pc(),
            &earlier
        ));
        // Our instance from an unknown run (a copied state directory).
        assert!(is_rival(&beat("i1", "r7", &now, Some(&k)), &k, &pc(), &own));
        // Stale or stopped: no.
        let old = clock::format(clock::now() - Duration::from_secs(120));
        assert!(!is_rival(
            &beat("i2", "r9", &old, Some(&k)),
            &k,
            &pc(),
            &own
        ));
    }
}
