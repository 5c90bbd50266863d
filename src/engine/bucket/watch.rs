//! The cancel watch on a bucket: while a job runs, the runner asks it once
//! per poll interval (a bucket sends no events). Each look places the
//! output gained since the last one as log chunks, and reads
//! `cancel/<jobId>.json`: an accepted marker stops the job; anything else
//! there is refused into `archive/rejected/` at once (an object is never
//! half-written, so nothing needs to settle), so it cannot hold the name a
//! genuine marker needs. The listener's heartbeat is kept fresh meanwhile.

use std::sync::Arc;
use std::time::Instant;

use super::Beats;
use super::objects::{self, Chunks, Replaced};
use crate::base::names::JobId;
use crate::base::read::FileRead;
use crate::engine::runner::Looks;
use crate::places::heartbeat;
use crate::places::rejected::Kind;
use crate::protocol::accept::{self, Rejection};
use crate::protocol::doc::{Marker, marker};
use crate::store::layout::Place;
use crate::store::port::Shelves;
use crate::store::port::bucket::BucketTarget;
use crate::trust::Key;

/// What the runner looks at while `job` runs. It owns what it needs, so
/// a job running beside others (`--slots`) is watched in its own thread.
pub struct BucketWatch<'a> {
    t: BucketTarget,
    key: Arc<Key>,
    job: JobId,
    poll: std::time::Duration,
    next_look: Instant,
    /// The heartbeat, written by the watch of the one job a serial
    /// listener runs (with slots the listener's thread writes it).
    beats: Option<&'a mut Beats>,
    next_beat: Instant,
    /// The job's two logs on their way to the bucket.
    pub chunks: Vec<Chunks>,
    /// The last refusal of a marker.
    pub refusal: Option<Rejection>,
    /// Lines for the listener's log.
    pub notes: Vec<String>,
    /// What `running/` shows of the job (with its pid), written at the
    /// first look a second into the job.
    pub claim: Option<Replaced>,
    show: Option<Vec<u8>>,
}

impl<'a> BucketWatch<'a> {
    /// Watches `job` on `t` every `poll`, placing `chunks`, beating with
    /// `beats`; `claim` shown as `show` once the job has run a second.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        t: BucketTarget,
        key: Arc<Key>,
        job: JobId,
        poll: std::time::Duration,
        beats: Option<&'a mut Beats>,
        chunks: Vec<Chunks>,
        claim: Option<Replaced>,
        show: Vec<u8>,
    ) -> BucketWatch<'a> {
        let now = Instant::now();
        BucketWatch {
            t,
            key,
            job,
            poll,
            next_look: now + poll,
            beats,
            // A quick job costs no heartbeat write; a longer one shows at
            // its first look after a second.
            next_beat: now + std::time::Duration::from_secs(1),
            chunks,
            refusal: None,
            notes: Vec::new(),
            claim,
            show: Some(show),
        }
    }

    /// Places the output gained since the last look.
    pub fn place_output(&mut self) {
        for c in &mut self.chunks {
            if let Err(e) = c.place(&self.t) {
                // Once per outage, not once per look.
                let note = format!("could not place output: {}", e.message);
                if !self.notes.contains(&note) {
                    self.notes.push(note);
                }
            }
        }
    }
}

impl Looks for BucketWatch<'_> {
    fn due(&self) -> Instant {
        self.next_look
    }

    fn woken(&self) {}

    fn look(&mut self) -> Option<Marker> {
        let now = Instant::now();
        if now < self.next_look {
            return None;
        }
        let found = self.look_now(now);
        // The next look a poll after this one ended: a store that does
        // not answer makes a look last longer than a poll, and the runner
        // must still see its job end between two.
        self.next_look = Instant::now() + self.poll;
        found
    }
}

impl BucketWatch<'_> {
    /// The look itself: output placed, the heartbeat, the marker.
    fn look_now(&mut self, now: Instant) -> Option<Marker> {
        self.place_output();
        if now >= self.next_beat {
            self.next_beat = now + heartbeat::EVERY;
            if let Some(b) = self.beats.as_mut() {
                b.write(&self.t, &[self.job.to_string()], "running");
            }
            if let (Some(claim), Some(bytes)) = (self.claim.as_mut(), self.show.take()) {
                let _ = claim.write(&self.t, &bytes);
            }
        }
        let name = self.job.file_name();
        let cancel = self.t.shelf(Place::Cancel);
        let read = cancel.read(&name, marker::MAX_BYTES);
        if matches!(read, FileRead::Missing) {
            return None;
        }
        let unreadable = matches!(read, FileRead::Unreadable(_));
        match accept::marker(&name, read, self.t.target().as_str(), &self.key) {
            Ok(m) => Some(m),
            // The store did not answer: looked at again next poll.
            Err(_) if unreadable => None,
            Err(r) => {
                let moved =
                    objects::refuse(&self.t, Place::Cancel, &name, &r, Kind::Marker, &self.key);
                self.notes.push(match moved {
                    Ok(()) => format!(
                        "moved cancel/{name} aside: {} ({})",
                        r.verdict.as_str(),
                        r.message
                    ),
                    Err(e) => format!("could not move cancel/{name} aside: {e}"),
                });
                self.refusal = Some(r);
                None
            }
        }
    }
}
