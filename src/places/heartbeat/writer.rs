//! The heartbeat writer: one listener's beats, signed and written to
//! `listener.json` while it lives, each recorded in the state directory
//! first (docs/protocol.md §7.11). A failed write never stops a listener.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{Beat, BeatVerdict, Identity, Own, Written, is_rival, judged, run_id};
use crate::base::clock;
use crate::store::fsops;
use crate::store::layout::{LISTENER_JSON, StateDirs, TargetDirs};
use crate::trust::Key;

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
            alg: None,
            key_id: None,
            sig: String::new(),
        };
        let signed = self.0.key.sign_document(&beat.canonical());
        let beat = Beat {
            alg: signed.alg,
            key_id: signed.key_id,
            sig: signed.sig,
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
                &crate::protocol::doc::to_file_bytes(&beat),
                fsops::Flush::Nothing,
            );
        }
    }
}
