//! The cancel watch: while a job runs, the runner looks at
//! `cancel/<jobId>.json` once per poll interval and stops the job when a
//! marker there is accepted by the docs/protocol.md §6 rules.
//!
//! Its steady cost is one `lstat` per poll; the file is read only when it
//! appears or changes. It also keeps the listener's heartbeat fresh while
//! the job runs, since the listener itself is busy waiting for the job.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::accept;
use crate::doc::Marker;
use crate::fsops::Dir;
use crate::heartbeat::{self, Heartbeat};
use crate::key::Key;
use crate::names::JobId;

/// What to look at, and what was seen.
pub struct Watch {
    job: JobId,
    cancel: Dir,
    target: String,
    key: Arc<Key>,
    poll: Duration,
    beat: Heartbeat,
    next_look: Instant,
    next_beat: Instant,
    last_seen: Option<(u64, Option<SystemTime>)>,
    last_beat: Option<Instant>,
    /// The last refusal, when a marker was present but not accepted.
    pub refusal: Option<accept::Rejection>,
}

/// A job runs this long before the heartbeat says so: a fast drain of
/// short jobs then costs no heartbeat writes in the synced folder.
const FIRST_BEAT: Duration = Duration::from_secs(1);

impl Watch {
    /// Watches `cancel/<job>.json` in `cancel` (held open) for `job` of
    /// `target`, every `poll`, starting now.
    pub fn new(
        job: JobId,
        cancel: Dir,
        target: String,
        key: Arc<Key>,
        poll: Duration,
        beat: Heartbeat,
    ) -> Watch {
        let now = Instant::now();
        Watch {
            job,
            cancel,
            target,
            key,
            poll,
            beat,
            // The listener looked for a marker just before the spawn.
            next_look: now + poll,
            next_beat: now + FIRST_BEAT,
            last_seen: None,
            last_beat: None,
            refusal: None,
        }
    }

    /// When [`Watch::look`] is due next.
    pub fn due(&self) -> Instant {
        self.next_look.min(self.next_beat)
    }

    /// True when it wrote a "running" heartbeat (the job ran long enough).
    pub fn beat_written(&self) -> bool {
        self.last_beat.is_some()
    }

    /// Writes the heartbeat and looks at the marker, each when due; an
    /// accepted marker is returned.
    pub fn look(&mut self) -> Option<Marker> {
        let now = Instant::now();
        if now >= self.next_beat {
            self.last_beat = Some(now);
            self.next_beat = now + heartbeat::EVERY;
            self.beat.write(Some(self.job.as_str()), "running");
        }
        if now < self.next_look {
            return None;
        }
        self.next_look = now + self.poll;
        let name = self.job.file_name();
        if let Ok(meta) = self.cancel.entry(&name) {
            let stamp = (meta.len, meta.modified);
            if self.last_seen != Some(stamp) {
                self.last_seen = Some(stamp);
                let read = self
                    .cancel
                    .read_limited(&name, crate::doc::marker::MAX_BYTES);
                match accept::marker(&self.job.file_name(), read, &self.target, &self.key) {
                    Ok(m) => return Some(m),
                    Err(r) => {
                        // A marker that cannot be read yet is retried next poll.
                        if matches!(
                            r.verdict,
                            accept::Verdict::Unreadable | accept::Verdict::Missing
                        ) {
                            self.last_seen = None;
                        }
                        self.refusal = Some(r);
                    }
                }
            }
        }
        None
    }
}
