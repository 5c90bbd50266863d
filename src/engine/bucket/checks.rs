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

    /// Claims `j` create-only, then looks at the replay guard and its
    /// marker at once: a job come back after its archive (written into the
    /// inbox again, or listed before another listener ended it) is not
    /// started; a marker there cancels it.
    pub(super) fn claim(&mut self, j: &Job) -> Result<(Replay, FileRead)> {
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
            Answer::Precondition => return Ok((Replay::Claimed, FileRead::Missing)),
            a => return Err(failed("create", self.t.bucket().root(), &key, &a)),
        };
        self.claimed = Some(Replaced::new(key, etag));
        // A claim won means no listener holds the job, and none ended it
        // but with its archive done first (a claim is removed last): the
        // archive is the one thing left to look at, with the marker as it
        // is now (a marker placed while the job waited cancels it before
        // anything is spawned); the two round trips to the store sent
        // together.
        let t = &self.t;
        let (done, mark) = std::thread::scope(|s| {
            let done = s.spawn(|| t.shelf(Place::Done).exists(&name));
            let mark = t.shelf(Place::Cancel).read(&name, marker::MAX_BYTES);
            (done.join(), mark)
        });
        let Ok(done) = done else {
            return Err(crate::base::error::Error::new(
                crate::base::error::Code::Internal,
                format!("the look for {name} in archive/done/ stopped"),
            ));
        };
        if done? {
            return Ok((Replay::Archived, mark));
        }
        Ok((Replay::Fresh, mark))
    }
}

/// What a claim found.
pub(super) enum Replay {
    /// Claimed, and nothing else of it: it may start.
    Fresh,
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
