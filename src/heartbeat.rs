//! The listener heartbeat, `<root>/<TARGET>/listener.json`: written by the
//! listener while it lives (idle or running a job), read by `status` to say
//! whether a target's listener is alive. Informational only: nothing trusts
//! it for a decision that matters, and a failed write never stops a listener.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock;
use crate::fsops;
use crate::layout::{LISTENER_JSON, TargetDirs};
use crate::read::FileRead;

/// How often the heartbeat is refreshed.
pub const EVERY: Duration = Duration::from_secs(30);

/// A heartbeat older than this means the listener is gone (or its machine
/// is offline, or sync lags).
pub const STALE_AFTER: Duration = Duration::from_secs(90);

/// The heartbeat document.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Beat {
    /// The target served.
    pub target: String,
    /// The listener's process id on its machine.
    pub pid: u32,
    /// `listening`, `running` or `stopped`.
    pub state: String,
    /// The job running now, if any (the first started, with several).
    pub running: Option<String>,
    /// Every job running now, in the order they started (`listen
    /// --slots`; absent from versions before it was written).
    #[serde(default)]
    pub running_jobs: Vec<String>,
    /// When the listener started.
    pub started_at: String,
    /// When this heartbeat was written.
    pub heartbeat_at: String,
    /// The listener's poll interval.
    pub poll_interval_ms: u64,
    /// The listener's version.
    pub version: String,
    /// The host it runs on (empty from versions before it was written).
    #[serde(default)]
    pub host: String,
    /// Its instance id ([`crate::state::instance_id`]; empty from versions
    /// before it was written).
    #[serde(default)]
    pub instance: String,
    /// Its key's fingerprint ([`crate::key::Key::fingerprint`]; empty from
    /// versions before it was written).
    #[serde(default)]
    pub key_fingerprint: String,
}

impl Beat {
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
        let host = if self.host.is_empty() {
            "an unnamed host"
        } else {
            &self.host
        };
        let age = self.age().map_or("at an unreadable time".to_string(), |a| {
            format!("{} ago", clock::human(a))
        });
        format!(
            "instance {} on {host} (pid {}), last heartbeat {age}",
            self.instance, self.pid
        )
    }
}

/// The heartbeat in the target folder of `dirs`, if one is there and
/// parses (read without following a link).
pub fn read(dirs: &TargetDirs) -> Option<Beat> {
    let base = dirs.open_base().ok()??;
    match base.read_limited(LISTENER_JSON, MAX_BYTES) {
        FileRead::Bytes(b) => serde_json::from_slice(&b).ok(),
        _ => None,
    }
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

/// Writes heartbeats for one listener; cheap to clone into a thread (the
/// clones share the list of jobs running in slots).
#[derive(Clone, Debug)]
pub struct Heartbeat {
    /// The jobs running in slots, in the order they started; empty with
    /// one slot, where the job is the one [`Heartbeat::write`] is given.
    slots: Arc<Mutex<Vec<String>>>,
    dirs: TargetDirs,
    target: String,
    host: String,
    instance: String,
    key_fingerprint: String,
    started_at: String,
    poll: Duration,
}

impl Heartbeat {
    /// A heartbeat writer for `target` in the target folder of `dirs`, as
    /// `who`.
    pub fn new(dirs: TargetDirs, target: &str, who: &Identity, poll: Duration) -> Heartbeat {
        Heartbeat {
            slots: Arc::default(),
            dirs,
            target: target.to_string(),
            host: who.host.clone(),
            instance: who.instance.clone(),
            key_fingerprint: who.key_fingerprint.clone(),
            started_at: clock::format(clock::now()),
            poll,
        }
    }

    /// Another listener's heartbeat in our file, while it counts as alive:
    /// a second instance serving this target (a heartbeat from a version
    /// that wrote no instance id cannot be told apart, and is not counted).
    pub fn rival(&self) -> Option<Beat> {
        read(&self.dirs)
            .filter(|b| !b.instance.is_empty() && b.instance != self.instance && b.alive())
    }

    /// Notes that job `id` runs in a slot, or (`false`) no longer does.
    pub fn slot(&self, id: &str, runs: bool) {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        slots.retain(|j| j != id);
        if runs {
            slots.push(id.to_string());
        }
    }

    /// Writes the heartbeat now. While jobs run in slots they are the
    /// running ones (whichever `running` is given), and `listening` reads
    /// `running`.
    pub fn write(&self, running: Option<&str>, state: &str) {
        let slots = self.slots.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let (running_jobs, state) = if slots.is_empty() {
            (running.map(str::to_string).into_iter().collect(), state)
        } else if state == "listening" {
            (slots, "running")
        } else {
            (slots, state)
        };
        let beat = Beat {
            target: self.target.clone(),
            pid: std::process::id(),
            state: state.to_string(),
            running: running_jobs.first().cloned(),
            running_jobs,
            started_at: self.started_at.clone(),
            heartbeat_at: clock::format(clock::now()),
            poll_interval_ms: self.poll.as_millis() as u64,
            version: env!("CARGO_PKG_VERSION").to_string(),
            host: self.host.clone(),
            instance: self.instance.clone(),
            key_fingerprint: self.key_fingerprint.clone(),
        };
        // The target folder is opened for each write: never through a link.
        if let Ok(Some(base)) = self.dirs.open_base() {
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
    }
}
