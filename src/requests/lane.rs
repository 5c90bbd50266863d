//! A sender's requests over the storage seam ([`Shelves`]), so they work
//! on any root: whether an id is still free on a target, publishing a job
//! or a cancel marker create-only, what became of a job, the parent rule
//! and which job a target runs now. The rules are
//! those of [`super::submit`] and [`super::cancel`] on the folder
//! (docs/protocol.md §6.3, §8.2); the listener's side of the lane is not
//! here.

use crate::base::error::{Error, Result};
use crate::base::names::{JobId, is_job_id};
use crate::base::read::FileRead;
use crate::places::observe::Observed;
use crate::protocol::accept;
use crate::protocol::doc::{self, Job, Marker, Outcome, job, marker, outcome};
use crate::protocol::judge;
use crate::requests::cancel::{self, CancelStatus};
use crate::store::layout::Place;
use crate::store::port::Shelves;
use crate::trust::Key;

/// What a sender can see of a job on a target.
#[derive(Debug)]
pub enum Seen {
    /// A result that verifies.
    Done(Box<Outcome>),
    /// A result that does not verify, and nothing else of the job: why.
    Forged(String),
    /// Waiting in the inbox.
    Queued,
    /// Taken by the target's listener (its copy in `archive/done/`, or
    /// shown in `running/`), no result yet.
    Taken,
    /// Nothing of it.
    Nothing,
}

/// Where `id` was already used on `sh`'s target: a result that verifies,
/// or the job itself signed with `key` in `archive/done/` (anything else
/// there is a writer's, and counting it would let one block an id).
pub fn used(sh: &dyn Shelves, id: &JobId, key: &Key) -> Option<&'static str> {
    let (name, target) = (id.file_name(), sh.target().as_str());
    let read = sh.shelf(Place::Results).read(&name, outcome::MAX_BYTES);
    if accept::outcome(id.as_str(), read, target, key).is_ok() {
        return Some("results/");
    }
    let read = sh.shelf(Place::Done).read(&name, job::MAX_BYTES);
    judge::job_read(&name, read, target, key)
        .is_ok()
        .then_some("archive/done/")
}

/// Refuses (`VALIDATION_ERROR`) an id already used on the target or
/// already queued there: a job signed now can never be the one queued.
pub fn check_free(sh: &dyn Shelves, id: &JobId, key: &Key) -> Result<()> {
    let again = "job ids are single-use; omit --job-id to get a fresh one";
    if let Some(place) = used(sh, id, key) {
        return Err(Error::validation(format!(
            "job id {id} was already used on {} (found in {place})",
            sh.target()
        ))
        .hint(again));
    }
    let inbox = sh.shelf(Place::Inbox);
    if inbox.exists(&id.file_name())? {
        return Err(Error::validation(format!(
            "job id {id} is already queued for {} ({})",
            sh.target(),
            inbox.shown(&id.file_name())
        ))
        .hint(again));
    }
    Ok(())
}

/// Publishes `job` (its file's `bytes`) at `inbox/<id>.json`, never
/// replacing anything. The same signed job found there is the same job,
/// queued once; anything else there is left untouched and refused
/// (`VALIDATION_ERROR`).
pub fn publish(sh: &dyn Shelves, job: &Job, bytes: &[u8], key: &Key) -> Result<()> {
    let (inbox, name) = (sh.shelf(Place::Inbox), job.id.file_name());
    if inbox.publish(&name, bytes)? {
        return Ok(());
    }
    let there = inbox.read(&name, job::MAX_BYTES);
    same_or_refused(job, there, sh.target().as_str(), &inbox.shown(&name), key)
}

/// Judges `there`, what holds `job`'s name in a target's inbox (shown as
/// `shown`): the same signed job is the same job, queued once; anything
/// else is refused (`VALIDATION_ERROR`) and left untouched.
pub fn same_or_refused(
    job: &Job,
    there: FileRead,
    target: &str,
    shown: &str,
    key: &Key,
) -> Result<()> {
    let same = judge::job_read(&job.id.file_name(), there, target, key)
        .is_ok_and(|t| super::submit::signed_text(&t) == super::submit::signed_text(job));
    if same {
        return Ok(());
    }
    Err(Error::validation(format!(
        "job id {} is already queued for {target} with other content ({shown}); nothing was overwritten",
        job.id,
    ))
    .hint("omit --job-id to get a fresh one"))
}

/// What became of `id` on `sh`'s target, verified with `key`.
///
/// # Errors
///
/// The store failed looking in the inbox.
pub fn look(sh: &dyn Shelves, id: &JobId, key: &Key) -> Result<Seen> {
    let (name, target) = (id.file_name(), sh.target().as_str());
    let read = sh.shelf(Place::Results).read(&name, outcome::MAX_BYTES);
    let forged = match accept::outcome(id.as_str(), read, target, key) {
        Ok(o) => return Ok(Seen::Done(Box::new(o))),
        Err(r) if r.verdict == accept::Verdict::Missing => None,
        Err(r) => Some(format!("{}: {}", r.verdict.as_str(), r.message)),
    };
    if sh.shelf(Place::Inbox).exists(&name)? {
        // A bucket's listener claims a job by placing its copy in
        // `archive/done/` before it starts it, and shows one that has run
        // a second in `running/`.
        if sh.shelf(Place::Done).exists(&name)? || sh.shelf(Place::Running).exists(&name)? {
            return Ok(Seen::Taken);
        }
        return Ok(Seen::Queued);
    }
    if sh.shelf(Place::Done).exists(&name)? {
        return Ok(Seen::Taken);
    }
    Ok(forged.map_or(Seen::Nothing, Seen::Forged))
}

/// The ids queued in `sh`'s inbox, sorted: only names that are a job id
/// and `.json` (docs/protocol.md §3.2).
pub fn ids_in(sh: &dyn Shelves, place: Place) -> Result<Vec<JobId>> {
    let mut ids: Vec<JobId> = sh
        .shelf(place)
        .list()?
        .iter()
        .filter_map(|n| n.strip_suffix(".json"))
        .filter(|s| is_job_id(s))
        .filter_map(|s| JobId::parse(s).ok())
        .collect();
    ids.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    Ok(ids)
}

/// Places the signed `m` for `id` in `cancel/`, create-only, unless the
/// job has a verified result (then nothing is written). A valid marker
/// already there is kept; anything else there blocks the request (it is
/// named; on a bucket nothing moves it aside yet).
pub fn place_marker(sh: &dyn Shelves, id: &JobId, key: &Key, m: &Marker) -> Result<CancelStatus> {
    let observed = match look(sh, id, key)? {
        Seen::Done(o) => return Ok(CancelStatus::NotRunning(o)),
        Seen::Queued => Observed::Queued,
        Seen::Taken => Observed::Running,
        Seen::Forged(_) | Seen::Nothing => Observed::NotSeen,
    };
    let (cancel, name) = (sh.shelf(Place::Cancel), id.file_name());
    if cancel.publish(&name, &doc::to_file_bytes(m))? {
        return Ok(CancelStatus::Requested {
            observed,
            existing: None,
        });
    }
    let read = cancel.read(&name, marker::MAX_BYTES);
    match accept::marker(&name, read, sh.target().as_str(), key) {
        Ok(existing) => Ok(CancelStatus::Requested {
            observed,
            existing: Some(existing),
        }),
        Err(r) => Ok(CancelStatus::Blocked(format!(
            "{} holds something else ({}: {})",
            cancel.shown(&name),
            r.verdict.as_str(),
            r.message
        ))),
    }
}

/// The parent rule over the seam: from inside the job `caller`, only
/// `id`'s direct parent may cancel it, as its signed job file (in
/// `inbox/`, else `archive/done/`) names it ([`cancel::parent_verdict`]).
pub fn check_parent(sh: &dyn Shelves, id: &JobId, key: &Key, caller: &JobId) -> Result<()> {
    let (name, target) = (id.file_name(), sh.target().as_str());
    for place in [Place::Inbox, Place::Done] {
        let shelf = sh.shelf(place);
        let judged = match judge::job_read(&name, shelf.read(&name, job::MAX_BYTES), target, key) {
            Err(r) if r.verdict == accept::Verdict::Missing => continue,
            judged => judged,
        };
        return cancel::parent_verdict(id, caller, judged, &shelf.shown(&name));
    }
    Err(cancel::no_job_to_check(id, sh.target()))
}

/// The one job `sh`'s target runs now: the one claimed (a queued job
/// with its copy in `archive/done/`, or one shown in `running/`) whose
/// result is not there yet ([`crate::places::jobref::the_one`]'s answers
/// when there is none or several).
pub fn running(sh: &dyn Shelves) -> Result<JobId> {
    let (results, done) = (sh.shelf(Place::Results), sh.shelf(Place::Done));
    let mut claimed = ids_in(sh, Place::Running)?;
    for id in ids_in(sh, Place::Inbox)? {
        if !claimed.contains(&id) && done.exists(&id.file_name())? {
            claimed.push(id);
        }
    }
    let mut ids = Vec::new();
    for id in claimed {
        if !results.exists(&id.file_name())? {
            ids.push(id.to_string());
        }
    }
    crate::places::jobref::the_one(sh.target(), ids, None)
}

/// What a target of a bucket holds now, as `status` shows it: its
/// listener's state (its signed heartbeat: `listening`, `running`,
/// `stopped`, or `none`), the jobs claimed (running) and queued, the
/// markers waiting, and every result's id, sorted.
pub struct TargetSeen {
    /// The target.
    pub target: String,
    /// The listener's state.
    pub listener: String,
    /// Jobs claimed and not yet ended.
    pub running: Vec<JobId>,
    /// Jobs queued (in the inbox, not claimed).
    pub queued: Vec<JobId>,
    /// Markers in `cancel/`.
    pub cancels: Vec<JobId>,
    /// Results.
    pub results: Vec<JobId>,
}

impl TargetSeen {
    /// The JSON of `status`, naming the newest `shown` results.
    pub fn to_json(&self, shown: usize) -> serde_json::Value {
        let list = |v: &[JobId]| v.iter().map(|i| i.as_str().to_string()).collect::<Vec<_>>();
        let newest: Vec<String> = self
            .results
            .iter()
            .rev()
            .take(shown)
            .map(|i| i.as_str().to_string())
            .collect();
        serde_json::json!({
            "target": self.target,
            "listener": self.listener,
            "running": list(&self.running),
            "queued": list(&self.queued),
            "cancels": list(&self.cancels),
            "results": newest,
        })
    }
}

/// What `t` holds now, its heartbeat judged with `key`.
///
/// # Errors
///
/// The store did not answer a listing.
pub fn target_seen(t: &crate::store::port::bucket::BucketTarget, key: &Key) -> Result<TargetSeen> {
    // A job shows in `running/` once it has run a second; one ended whose
    // inbox copy is still on its way out is neither.
    let results = ids_in(t, Place::Results)?;
    let ended = |id: &JobId| results.binary_search(id).is_ok();
    let mut running = ids_in(t, Place::Running)?;
    running.retain(|id| !ended(id));
    let mut queued = ids_in(t, Place::Inbox)?;
    queued.retain(|id| !running.contains(id) && !ended(id));
    let listener = match crate::places::heartbeat::on_bucket(t, key) {
        Some(b) if b.alive() => b.state.clone(),
        Some(_) => "stopped".to_string(),
        None => "none".to_string(),
    };
    Ok(TargetSeen {
        target: t.target().to_string(),
        listener,
        running,
        queued,
        cancels: ids_in(t, Place::Cancel)?,
        results,
    })
}
