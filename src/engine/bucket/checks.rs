//! What a listener on a bucket looks at before a job starts: the replay
//! guard, a queued job's marker, the jobs it waits for, and its claim.

use super::BucketListener;
use super::claim::Claim;
use super::objects;
use crate::base::clock;
use crate::base::error::Result;
use crate::base::names::JobId;
use crate::base::read::FileRead;
use crate::places::rejected::{Kind, Reason};
use crate::protocol::accept::{self, Verdict};
use crate::protocol::dependency::{self, Found};
use crate::protocol::doc::{self, Job, Marker, Outcome, marker, outcome};
use crate::requests::lane::{self, Seen};
use crate::store::layout::Place;
use crate::store::port::Shelves;
use crate::store::port::bucket::BucketTarget;

impl BucketListener {
    /// What the bucket says of `id` before it starts.
    pub(super) fn replayed(&self, id: &JobId) -> Result<Replay> {
        let name = id.file_name();
        if self.t.shelf(Place::Done).exists(&name)? {
            return Ok(Replay::Archived);
        }
        if self.verified_result(id).is_some() {
            return Ok(Replay::Finished);
        }
        if self.t.shelf(Place::Running).exists(&name)? {
            return Ok(Replay::Claimed);
        }
        Ok(Replay::Fresh)
    }

    pub(super) fn verified_result(&self, id: &JobId) -> Option<Outcome> {
        let read = self
            .t
            .shelf(Place::Results)
            .read(&id.file_name(), outcome::MAX_BYTES);
        accept::outcome(id.as_str(), read, self.t.target().as_str(), &self.key).ok()
    }

    /// A valid marker for `id`, if one is there; anything else there is
    /// refused into `archive/rejected/`.
    pub(super) fn valid_marker(&mut self, id: &JobId) -> Option<Marker> {
        let name = id.file_name();
        let read = self.t.shelf(Place::Cancel).read(&name, marker::MAX_BYTES);
        if matches!(read, FileRead::Missing | FileRead::Unreadable(_)) {
            return None;
        }
        match accept::marker(&name, read, self.t.target().as_str(), &self.key) {
            Ok(m) => Some(m),
            Err(r) => {
                self.counters.rejected += 1;
                let _ = objects::refuse(&self.t, Place::Cancel, &name, &r, Kind::Marker, &self.key);
                self.say(format!(
                    "ignored marker for {id}: {} ({})",
                    r.verdict.as_str(),
                    r.message
                ));
                None
            }
        }
    }

    /// The dependency verdict for `j`: each job it waits for looked up on
    /// the bucket (its target's result, or its refusal there).
    pub(super) fn dependencies(&self, j: &Job) -> dependency::Verdict {
        let after = &j.header().after;
        if after.is_empty() {
            return dependency::Verdict::Run;
        }
        let found: Vec<_> = after
            .iter()
            .map(|a| {
                let t = self.t.bucket().target(&a.target);
                let f = match lane::look(&t, &a.job_id, &self.key) {
                    Ok(Seen::Done(o)) => Found::ended(&o),
                    Ok(Seen::Nothing) => {
                        refused_on(&t, &a.job_id).map_or(Found::Unseen, Found::Rejected)
                    }
                    _ => Found::Unseen,
                };
                (a.clone(), f)
            })
            .collect();
        dependency::decide(j.header().after_any, &found)
    }

    /// Claims `j` create-only; false when the claim is taken (another
    /// listener has it), or the replay guard, looked at again, finds it
    /// processed since the listing.
    pub(super) fn claim(&mut self, j: &Job) -> Result<bool> {
        let started_at = clock::format(clock::now());
        let c = Claim::of(
            j,
            &started_at,
            &self.beats.host,
            std::process::id(),
            &self.beats.run,
        );
        let name = j.id.file_name();
        if !self
            .t
            .shelf(Place::Running)
            .publish(&name, &doc::to_file_bytes(&c))?
        {
            return Ok(false);
        }
        if self.t.shelf(Place::Done).exists(&name)? || self.verified_result(&j.id).is_some() {
            // Another listener ended it between our listing and our claim.
            self.t.shelf(Place::Running).remove(&name)?;
            return Ok(false);
        }
        Ok(true)
    }
}

/// What the bucket says of a queued job before it starts.
pub(super) enum Replay {
    /// Nothing: it may run.
    Fresh,
    /// A verified result: only its moves are left.
    Finished,
    /// Claimed by a listener (another one, or a stopped one recovered at
    /// the next start).
    Claimed,
    /// Already in `archive/done/`: a copy come back.
    Archived,
}

/// The verdict `id`'s target gave its job file, when it refused it (other
/// than as a replay, whose first run's result decides).
fn refused_on(t: &BucketTarget, id: &JobId) -> Option<String> {
    let name = format!("{}.reason.json", id.file_name());
    let FileRead::Bytes(b) = t.shelf(Place::Rejected).read(&name, 64 * 1024) else {
        return None;
    };
    let r: Reason = serde_json::from_slice(&b).ok()?;
    (r.verdict != Verdict::AlreadyProcessed.as_str()).then_some(r.verdict)
}
