//! What a listener on a bucket looks at before a job starts: the replay
//! guard, a queued job's marker, the jobs it waits for, and its claim.

use super::BucketListener;
use super::claim::Claim;
use super::objects::{self, Replaced};
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
use crate::store::objstore::Answer;
use crate::store::port::Shelves;
use crate::store::port::bucket::{BucketTarget, failed};

impl BucketListener {
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

    /// Claims `j` create-only, then looks at the replay guard: a job
    /// processed since the listing (another listener ended it and removed
    /// its claim in between), or come back after its archive, is not
    /// started.
    pub(super) fn claim(&mut self, j: &Job) -> Result<Replay> {
        let started_at = clock::format(clock::now());
        let c = Claim::of(
            j,
            &started_at,
            &self.beats.host,
            std::process::id(),
            &self.beats.run,
        );
        let name = j.id.file_name();
        let key = self.t.key(Place::Running, &name);
        let etag = match self
            .t
            .bucket()
            .client()
            .create_only(&key, &doc::to_file_bytes(&c))
        {
            Answer::Done(r) => r.etag,
            Answer::Precondition => return Ok(Replay::Claimed),
            a => return Err(failed("create", self.t.bucket().root(), &key, &a)),
        };
        self.claimed = Some(Replaced::new(key, etag));
        if self.t.shelf(Place::Done).exists(&name)? {
            return Ok(Replay::Archived);
        }
        if self.verified_result(&j.id).is_some() {
            return Ok(Replay::Finished);
        }
        Ok(Replay::Fresh)
    }
}

/// What a claim found.
pub(super) enum Replay {
    /// Claimed, and nothing else of it: it may start.
    Fresh,
    /// Claimed, and it has a verified result: only its moves are left.
    Finished,
    /// Claimed by a listener before (another one, or a stopped one
    /// recovered at the next start).
    Claimed,
    /// Claimed, and already in `archive/done/`: a copy come back.
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
