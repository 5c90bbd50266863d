//! Handing a signed job to a target (docs/protocol.md §5.2, §6): the rule
//! for which ids may still be used, and publishing into `inbox/` without
//! ever replacing a file — one place for `enqueue` and the HTTP intake, so
//! a job meets the same rules whichever door it comes through.

use std::time::Duration;

use crate::base::clock;
use crate::base::error::{Error, Result};
use crate::base::names::JobId;
use crate::base::read::FileRead;
use crate::places::replay;
use crate::protocol::accept::{self, Rejection};
use crate::protocol::doc::{Job, job};
use crate::store::fsops::{Dir, Flush};
use crate::store::layout::{Place, TargetDirs};
use crate::trust::Key;

/// Refuses an id the target already used, as far as this machine can see
/// (the target's ledger is local to it: its listener refuses the rest).
pub fn check_unused(dirs: &TargetDirs, id: &JobId, key: &Key) -> Result<()> {
    unused(dirs, replay::used_where(dirs, id, key, || false), id)
}

fn unused(dirs: &TargetDirs, used: Option<&str>, id: &JobId) -> Result<()> {
    match used {
        None => Ok(()),
        Some(place) => Err(Error::validation(format!(
            "job id {id} was already used on {} (found in {place})",
            dirs.target()
        ))
        .hint("job ids are single-use; omit --job-id to get a fresh one")),
    }
}

/// The folders of one target that [`check_free`] looks in, opened once for
/// all the ids a fan-out or a batch sends there. `None`: missing (or not a
/// folder, for `results/` and `archive/done/`, which then hold nothing).
pub struct Checked {
    inbox: Option<Dir>,
    results: Option<Dir>,
    done: Option<Dir>,
}

/// Refuses a target whose inbox cannot take a job (a link or a file in
/// its place), without creating anything, and opens what [`check_free`]
/// looks in. A fan-out or a batch checks every target so before it
/// publishes to any.
pub fn check_target(dirs: &TargetDirs) -> Result<Checked> {
    let inbox = dirs.open(Place::Inbox)?;
    let open = |p: Place| dirs.open(p).ok().flatten();
    Ok(Checked {
        inbox,
        results: open(Place::Results),
        done: open(Place::Done),
    })
}

/// [`check_unused`], and refuses an id already queued in the inbox (all in
/// `held`, from [`check_target`]): a job signed now can never be the one
/// queued there, so [`publish`] would refuse it after the other copies had
/// gone out.
pub fn check_free(dirs: &TargetDirs, held: &Checked, id: &JobId, key: &Key) -> Result<()> {
    let target = dirs.target().as_str();
    let used = replay::used_in(
        held.results.as_ref(),
        held.done.as_ref(),
        (id, target, key),
        || false,
    );
    unused(dirs, used, id)?;
    match &held.inbox {
        Some(d) if d.exists(&id.file_name()) => Err(Error::validation(format!(
            "job id {id} is already queued for {} ({})",
            dirs.target(),
            d.shown(&id.file_name()).display()
        ))
        .hint("job ids are single-use; omit --job-id to get a fresh one")),
        _ => Ok(()),
    }
}

/// A job body refused by [`admit`]: what was refused (`job`, or `job ID`
/// once the body named a valid id) and why.
#[derive(Debug)]
pub struct Refused {
    /// `job`, or `job ID`.
    pub what: String,
    /// The verdict and its reason.
    pub rejection: Rejection,
}

/// A posted job body judged as the listener would judge it in `inbox/`:
/// acceptance, then the replay guard (`used` says where the id was used),
/// then its age.
pub fn admit(
    target: &str,
    key: &Key,
    body: &[u8],
    max_age: Duration,
    used: impl FnOnce(&JobId) -> Option<&'static str>,
) -> Result<Job, Refused> {
    // The file-name rule holds by construction: the name is the body's id.
    let name = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("jobId")?.as_str().map(|id| format!("{id}.json")))
        .unwrap_or_default();
    let job = crate::protocol::judge::job_read(&name, FileRead::Bytes(body.to_vec()), target, key)
        .map_err(|rejection| Refused {
            what: "job".to_string(),
            rejection,
        })?;
    accept::replay(&job.id, used(&job.id))
        .and_then(|()| accept::freshness(job.created, clock::now(), max_age))
        .map_err(|rejection| Refused {
            what: format!("job {}", job.id),
            rejection,
        })?;
    Ok(job)
}

/// Publishes `job` at `inbox/<id>.json`, never replacing a file. The same
/// signed job sent twice (a retry, or both doors) is the same job, queued
/// once; another file holding the id is left untouched and refused.
pub fn publish(dirs: &TargetDirs, job: &Job, key: &Key, flush: Flush) -> Result<()> {
    publish_bytes(dirs, job, &job.to_file_bytes(), key, flush)
}

/// [`publish`] with the job file's `bytes`, serialised once by a sender
/// that checked their size before.
pub fn publish_bytes(
    dirs: &TargetDirs,
    job: &Job,
    bytes: &[u8],
    key: &Key,
    flush: Flush,
) -> Result<()> {
    let folder = crate::store::port::folder::Folder::new(dirs.clone(), flush);
    super::lane::publish(&folder, job, bytes, key)
}

/// Publishes every job of `jobs` (all for `dirs`' target, each with its
/// file's bytes) as [`publish`] does each, with one flush of the inbox for
/// them all (the data of every file, then the folder once): a batch costs
/// one flush per target, not one per job. `Err` when none was placed;
/// otherwise what became of each job, in order.
pub fn publish_all(
    dirs: &TargetDirs,
    jobs: &[(Job, Vec<u8>)],
    key: &Key,
    flush: Flush,
) -> Result<Vec<Result<()>>> {
    let inbox = dirs.open_made(Place::Inbox)?;
    let files: Vec<(String, Vec<u8>)> = jobs
        .iter()
        .map(|(j, bytes)| (j.id.file_name(), bytes.clone()))
        .collect();
    let placed = inbox.publish_all(&files, flush)?;
    Ok(placed
        .into_iter()
        .zip(jobs)
        .map(|(p, (job, _))| match p? {
            true => Ok(()),
            false => taken(dirs, &inbox, job, key),
        })
        .collect())
}

/// Judges the file already at `job`'s name in `inbox`
/// ([`super::lane::same_or_refused`]).
fn taken(dirs: &TargetDirs, inbox: &Dir, job: &Job, key: &Key) -> Result<()> {
    let name = job.id.file_name();
    let there = inbox.read_limited(&name, crate::protocol::doc::job::MAX_BYTES);
    let shown = inbox.shown(&name).display().to_string();
    super::lane::same_or_refused(job, there, dirs.target().as_str(), &shown, key)
}

/// What a job's signature covers: equal texts are the same job.
pub(crate) fn signed_text(j: &Job) -> String {
    job::canonical(
        j.id.as_str(),
        &j.target,
        &j.created_at,
        &j.origin,
        &j.spec_text,
    )
}
