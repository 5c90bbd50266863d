//! The cancel watch: while a job runs, the runner looks at
//! `cancel/<jobId>.json` once per poll interval, and at once when a
//! file-system event hints at a change ([`crate::store::events`]), and stops the
//! job when a marker there is accepted by the docs/protocol.md §6 rules.
//!
//! Its steady cost is one `lstat` per poll; the file is read only when it
//! appears or changes. A file there that is not a valid marker is moved to
//! `archive/rejected/` — at once, or once settled if it does not parse
//! ([`crate::protocol::settle`]) — so it cannot hold the slot a genuine marker needs
//! for the rest of the run. It also keeps the listener's heartbeat fresh while
//! the job runs, since the listener itself is busy waiting for the job.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::base::names::JobId;
use crate::places::heartbeat::{self, Heartbeat};
use crate::protocol::accept::{self, BadMarker};
use crate::protocol::doc::Marker;
use crate::protocol::settle::Settling;
use crate::requests::cancel;
use crate::store::events::Hint;
use crate::store::fsops::Dir;
use crate::store::layout::Folders;
use crate::trust::Key;

/// What to look at, and what was seen.
pub struct Watch {
    job: JobId,
    cancel: Dir,
    rejected: Dir,
    target: String,
    key: Arc<Key>,
    poll: Duration,
    settle: Duration,
    settling: Option<Settling>,
    beat: Heartbeat,
    next_look: Instant,
    next_beat: Instant,
    hint: Hint,
    /// The hint's change count when the marker was last looked for, and when.
    seen: u64,
    looked: Instant,
    last_seen: Option<(u64, Option<SystemTime>)>,
    last_beat: Option<Instant>,
    /// The last refusal, when a marker was present but not accepted.
    pub refusal: Option<accept::Rejection>,
    /// What happened to refused files, for the listener's log.
    pub notes: Vec<String>,
}

/// A job runs this long before the heartbeat says so: a fast drain of
/// short jobs then costs no heartbeat writes in the synced folder.
const FIRST_BEAT: Duration = Duration::from_secs(1);

impl Watch {
    /// Watches `cancel/<job>.json` in `f` (held open) for `job` of
    /// `target`, every `poll` and whenever `hint` counts a change past
    /// `seen` (its count when the listener last looked), starting now; a
    /// file there that does not parse settles after `settle`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        job: JobId,
        f: &Folders,
        target: String,
        key: Arc<Key>,
        poll: Duration,
        settle: Duration,
        beat: Heartbeat,
        (hint, seen): (Hint, u64),
    ) -> Watch {
        let now = Instant::now();
        Watch {
            job,
            cancel: f.cancel().clone(),
            rejected: f.rejected().clone(),
            target,
            key,
            poll,
            settle,
            settling: None,
            beat,
            // The listener looked for a marker just before the spawn.
            next_look: now + poll,
            next_beat: now + FIRST_BEAT,
            hint,
            seen,
            looked: now,
            last_seen: None,
            last_beat: None,
            refusal: None,
            notes: Vec::new(),
        }
    }

    /// When [`Watch::look`] is due next: since the last look, when an
    /// event hinted at a change after it.
    pub fn due(&self) -> Instant {
        if self.hinted() {
            return self.looked;
        }
        self.next_look.min(self.next_beat)
    }

    /// Says the runner received a wake: the next change wakes it again.
    pub fn woken(&self) {
        self.hint.woken();
    }

    fn hinted(&self) -> bool {
        self.hint.changes() != self.seen
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
        if now < self.next_look && !self.hinted() {
            return None;
        }
        self.seen = self.hint.changes();
        self.looked = now;
        self.next_look = now + self.poll;
        let name = self.job.file_name();
        let Ok(meta) = self.cancel.entry(&name) else {
            self.settling = None;
            return None;
        };
        let stamp = (meta.len, meta.modified);
        let unsettled = self.settling.is_some();
        if self.last_seen == Some(stamp) && !unsettled {
            return None;
        }
        self.last_seen = Some(stamp);
        let r = match crate::protocol::judge::marker(
            &self.cancel,
            &self.job,
            &self.target,
            &self.key,
        ) {
            Ok(m) => return Some(m),
            Err(r) => r,
        };
        // One that may still be arriving is judged again each poll, and
        // moved aside once settled (a rename needs no read permission), so
        // it never holds the slot for good.
        let settled = || {
            self.settling
                .get_or_insert_with(|| Settling::new(stamp, now))
                .observe(stamp, now, SystemTime::now(), self.settle)
        };
        match accept::bad_marker(r.verdict, settled) {
            // Retried next poll.
            BadMarker::Gone => self.last_seen = None,
            BadMarker::Wait => {}
            BadMarker::SetAside => {
                self.settling = None;
                let moved = cancel::set_marker_aside(
                    &self.rejected,
                    &self.cancel,
                    &name,
                    &r,
                    &self.target,
                    &self.key,
                );
                self.notes.push(match moved {
                    Ok(()) => format!(
                        "moved cancel/{name} aside: {} ({})",
                        r.verdict.as_str(),
                        r.message
                    ),
                    Err(e) => format!("could not move cancel/{name} aside: {e}"),
                });
            }
        }
        self.refusal = Some(r);
        None
    }
}

/// What the runner looks at between waits for a cancel marker of its job:
/// the folder's [`Watch`], or a bucket's ([`crate::engine::bucket`]).
pub trait Looks {
    /// When [`Looks::look`] is due next.
    fn due(&self) -> Instant;
    /// Looks, when due: an accepted marker for the job is returned.
    fn look(&mut self) -> Option<Marker>;
    /// The runner received a wake.
    fn woken(&self);
}

impl Looks for Watch {
    fn due(&self) -> Instant {
        Watch::due(self)
    }
    fn look(&mut self) -> Option<Marker> {
        Watch::look(self)
    }
    fn woken(&self) {
        Watch::woken(self);
    }
}
