//! What a listener on a bucket looks at before a job starts: the replay
//! guard, a queued job's marker, the jobs it waits for, and its claim.

use super::BucketListener;
use super::objects::{self, Replaced};
use crate::base::error::Result;
use crate::base::names::JobId;
use crate::base::read::FileRead;
use crate::places::rejected::{Kind, Reason};
use crate::protocol::accept::{self, Verdict};
use crate::protocol::dependency::{self, Found};
use crate::protocol::doc::{Job, Marker, Outcome, marker, outcome};
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

    /// A valid marker for `id`, if one is there (`read` of it); anything
    /// else there is refused into `archive/rejected/`.
    pub(super) fn valid_marker(&mut self, id: &JobId, read: FileRead) -> Option<Marker> {
        let name = id.file_name();
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

    /// The marker of `id` as it is now.
    pub(super) fn read_marker(&self, id: &JobId) -> FileRead {
        self.t
            .shelf(Place::Cancel)
            .read(&id.file_name(), marker::MAX_BYTES)
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

    /// Claims `j` by placing its archived copy, `bytes` (its inbox
    /// object as judged), create-only in `archive/done/`, marked with this
    /// run; its marker is read at the same time, the two round trips to
    /// the store sent together (a marker placed while the job waited
    /// cancels it before anything is spawned). A copy already there is a
    /// job claimed before: by one that ended it (its result is there), by
    /// a listener that stopped (it was in the inbox when this one started,
    /// which no live listener of the target allowed), or by a rival that
    /// runs it now.
    pub(super) fn claim(&mut self, j: &Job, bytes: &[u8]) -> Result<(Replay, FileRead)> {
        let name = j.id.file_name();
        let key = self.t.key(Place::Done, &name);
        let (t, run) = (&self.t, self.beats.run.as_str());
        let (put, mark) = std::thread::scope(|s| {
            let put = s.spawn(|| t.bucket().client().create_only_marked(&key, bytes, run));
            let mark = t.shelf(Place::Cancel).read(&name, marker::MAX_BYTES);
            (put.join(), mark)
        });
        let Ok(put) = put else {
            return Err(crate::base::error::Error::new(
                crate::base::error::Code::Internal,
                format!("the claim of {name} stopped"),
            ));
        };
        // A claim that carries this run's mark is this run's own, placed
        // by a try whose answer was lost before the store went away.
        let ours = || match t.bucket().client().head(&key) {
            Answer::Done(r) => r.mark.as_deref() == Some(run),
            _ => false,
        };
        match put {
            Answer::Done(_) => {}
            Answer::Precondition if ours() => {}
            Answer::Precondition => {
                let finished = self.verified_result(&j.id).is_some();
                let left = self.at_start.as_ref().is_some_and(|s| s.contains(&name));
                let replay = match (finished, left) {
                    (true, _) => Replay::Archived,
                    (false, true) => Replay::Left,
                    (false, false) => Replay::Claimed,
                };
                return Ok((replay, mark));
            }
            a => return Err(failed("create", self.t.bucket().root(), &key, &a)),
        }
        // What `running/` shows of it, written once it has run a second.
        self.claimed = Some(Replaced::new(self.t.key(Place::Running, &name), None));
        Ok((Replay::Fresh, mark))
    }
}

/// What a claim found.
pub(super) enum Replay {
    /// Claimed: it may start.
    Fresh,
    /// Claimed by a listener that runs it now.
    Claimed,
    /// Claimed and ended before (its result is there): a copy come back,
    /// or the inbox copy a listener stopped before removing; refused as a
    /// replay either way, since the two look alike.
    Archived,
    /// Claimed by a listener that stopped before its result: it gets one
    /// `interrupted` result, and never runs.
    Left,
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
