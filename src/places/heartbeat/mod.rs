//! The listener heartbeat, `<root>/<TARGET>/listener.json` (docs/protocol.md
//! §7.11): written by the listener while it lives (idle or running a job),
//! signed with the fleet key, read by `status` to say whether a target's
//! listener is alive ([`seen_alive`], one look), by a wait that watches it
//! over time ([`Tracker`]: new beats on the watcher's own clock), and by
//! other listeners for the one-listener rule (§7.1). Only a beat that verifies counts for that rule: a folder writer
//! without the key cannot stop a lane by writing one. A failed write never
//! stops a listener.
//!
//! This file is the beat document: what it says, how it is judged, and
//! the rule that tells a rival listener from this one. The writer is
//! `writer.rs`, the liveness rules `liveness.rs`.

mod liveness;
#[cfg(test)]
mod tests;
mod writer;

pub use liveness::{Liveness, Sight, Tracker, alive, seen_alive};
pub use writer::Heartbeat;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::base::clock;
use crate::base::names::Machine;
use crate::base::read::FileRead;
use crate::store::layout::{LISTENER_JSON, StateDirs, TargetDirs};
use crate::trust::{Claim, Key};

/// How often the heartbeat is refreshed.
pub const EVERY: Duration = Duration::from_secs(30);

/// A heartbeat older than this means the listener is gone (or its machine
/// is offline, or sync lags).
pub const STALE_AFTER: Duration = Duration::from_secs(90);

/// The heartbeat document. Its texts are read
/// [`tame`](crate::base::screen::tame)d: a genuine beat has no control character
/// in them (so it still verifies), and a forged one cannot drive the
/// terminal of whoever reads it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Beat {
    /// The target served.
    #[serde(deserialize_with = "crate::base::screen::tamed")]
    pub target: String,
    /// The listener's process id on its machine.
    pub pid: u32,
    /// `listening`, `running` or `stopped`.
    #[serde(deserialize_with = "crate::base::screen::tamed")]
    pub state: String,
    /// The job running now, if any (the first started, with several).
    #[serde(default, deserialize_with = "crate::base::screen::tamed_opt")]
    pub running: Option<String>,
    /// Every job running now, in the order they started (`listen
    /// --slots`; absent from versions before it was written).
    #[serde(default, deserialize_with = "crate::base::screen::tamed_list")]
    pub running_jobs: Vec<String>,
    /// When the listener started.
    #[serde(deserialize_with = "crate::base::screen::tamed")]
    pub started_at: String,
    /// When this heartbeat was written.
    #[serde(deserialize_with = "crate::base::screen::tamed")]
    pub heartbeat_at: String,
    /// The listener's poll interval.
    pub poll_interval_ms: u64,
    /// The listener's version.
    #[serde(deserialize_with = "crate::base::screen::tamed")]
    pub version: String,
    /// The host it runs on (empty from versions before it was written).
    #[serde(default, deserialize_with = "crate::base::screen::tamed")]
    pub host: String,
    /// Its instance id ([`crate::local::state::instance_id`]; empty from versions
    /// before it was written).
    #[serde(default, deserialize_with = "crate::base::screen::tamed")]
    pub instance: String,
    /// Its key's fingerprint ([`crate::trust::Key::key_id`]; empty from
    /// versions before it was written).
    #[serde(default, deserialize_with = "crate::base::screen::tamed")]
    pub key_fingerprint: String,
    /// A random id made at each start ([`run_id`]): a copy of the state
    /// directory (a cloned disk) shares the instance id, never this (empty
    /// from versions before it was written).
    #[serde(default, deserialize_with = "crate::base::screen::tamed")]
    pub run: String,
    /// `ed25519` in the roster lane; absent for the fleet key's HMAC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alg: Option<String>,
    /// The signing key's id on the roster; absent for the fleet key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
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
            && key
                .judge(&Claim {
                    signer: &self.target,
                    alg: self.alg.as_deref(),
                    key_id: self.key_id.as_deref(),
                    made: clock::parse(&self.heartbeat_at),
                    sends_to: None,
                    canonical: &self.canonical(),
                    sig: &self.sig,
                })
                .is_ok()
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
    crate::base::random::fill(&mut raw);
    hex::encode(raw)
}

/// The name of a listener's heartbeat object under its target on a bucket
/// (`PREFIX/TARGET/listener.json`, the folder's file name).
pub const ON_BUCKET: &str = "listener.json";

/// The verified heartbeat of `t`'s listener on a bucket, if any.
pub fn on_bucket(t: &crate::store::port::bucket::BucketTarget, key: &Key) -> Option<Beat> {
    use crate::store::port::Shelves;
    let key_name = t.key_of(ON_BUCKET);
    let crate::store::objstore::Answer::Done(r) = t.bucket().client().get(&key_name) else {
        return None;
    };
    let b: Beat = serde_json::from_slice(&r.body).ok()?;
    b.verified(key, t.target()).then_some(b)
}
