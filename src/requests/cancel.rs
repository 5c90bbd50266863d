//! Asking a target to stop a job (docs/protocol.md §5.1, §7.4): the parent
//! rule, signing the marker, and placing it in `cancel/` — the one place
//! where a cancel request is decided, for `cancel`, `enqueue --interrupt`
//! and the HTTP intake alike. The listener's side (honouring a marker) is
//! in [`crate::engine::watcher`] and [`crate::engine::listener`].

use serde_json::{Value, json};

use crate::base::clock;
use crate::base::error::{Error, Result};
use crate::base::names::{JobId, Machine};
use crate::places::observe::{self, Observed};
use crate::places::rejected;
use crate::protocol::accept::{self, BadMarker};
use crate::protocol::doc::{self, Marker, Outcome};
use crate::store::fsops;
use crate::store::layout::{Place, TargetDirs};
use crate::trust::Key;

/// What a cancel request did.
#[derive(Debug)]
pub enum CancelStatus {
    /// A marker is in place (`existing`: it was there already); the job's
    /// state as seen when asking.
    Requested {
        /// What the folder said about the job.
        observed: Observed,
        /// The marker was already there and was left as it was.
        existing: Option<Marker>,
    },
    /// A verified result exists: nothing was written.
    NotRunning(Box<Outcome>),
    /// A file that is not a valid marker holds the place and could not be
    /// moved aside (held open, or rewritten as fast as it was moved).
    Blocked(String),
}

impl CancelStatus {
    /// The status word.
    pub fn word(&self) -> &'static str {
        match self {
            CancelStatus::Requested { .. } => "requested",
            CancelStatus::NotRunning(_) => "not_running",
            CancelStatus::Blocked(_) => "blocked",
        }
    }

    /// One sentence for people.
    pub fn sentence(&self, id: &JobId) -> String {
        match self {
            CancelStatus::Requested {
                observed,
                existing: None,
            } => {
                format!("cancel of {id} requested (job {})", observed.word())
            }
            CancelStatus::Requested {
                observed,
                existing: Some(m),
            } => format!(
                "cancel of {id} was already requested by {} at {} (job {}); the marker was left as it is",
                m.origin,
                m.created_at,
                observed.word()
            ),
            CancelStatus::NotRunning(o) => format!(
                "{id} is not running: it already finished ({}); nothing was written",
                o.termination().describe(o.ok)
            ),
            CancelStatus::Blocked(why) => format!(
                "cancel of {id} not requested: cancel/{id}.json holds a file that is not a valid marker and could not be moved aside ({why}); retry"
            ),
        }
    }

    /// The JSON form.
    pub fn to_json(&self, id: &JobId) -> Value {
        let mut v = json!({"jobId": id.as_str(), "status": self.word()});
        match self {
            CancelStatus::Requested { observed, existing } => {
                v["job"] = json!(observed.word());
                v["alreadyRequested"] = json!(existing.is_some());
            }
            CancelStatus::NotRunning(o) => {
                v["outcome"] = json!(o.termination().describe(o.ok));
                v["exitCode"] = json!(o.exit_code);
            }
            CancelStatus::Blocked(why) => v["reason"] = json!(why),
        }
        v
    }
}

/// Inside a job, only the target job's direct parent may cancel it: the
/// signed job file names its `parentJobId`.
fn check_parent(dirs: &TargetDirs, id: &JobId, key: &Key, caller: &JobId) -> Result<()> {
    let name = id.file_name();
    for place in [Place::Inbox, Place::Done] {
        let path = dirs.place(place).join(&name);
        let Some(dir) = dirs.open(place)? else {
            continue;
        };
        let judged = match crate::protocol::judge::job(&dir, id, dirs.target().as_str(), key) {
            Err(r) if r.verdict == accept::Verdict::Missing => continue,
            judged => judged,
        };
        return parent_verdict(id, caller, judged, &path.display().to_string());
    }
    Err(no_job_to_check(id, dirs.target()))
}

/// The parent rule on the job file of `id` as judged (`shown`: where it
/// is): the job `caller` may cancel it only when the verified file names
/// `caller` as its `parentJobId` (`FORBIDDEN` otherwise, and when the file
/// does not verify). One rule for every root.
pub fn parent_verdict(
    id: &JobId,
    caller: &JobId,
    judged: std::result::Result<doc::Job, accept::Rejection>,
    shown: &str,
) -> Result<()> {
    match judged {
        Ok(j) if j.header().parent_job_id.as_deref() == Some(caller.as_str()) => Ok(()),
        Ok(j) => Err(Error::forbidden(format!(
            "job {caller} may not cancel {id}: only its direct parent ({}) may",
            j.header()
                .parent_job_id
                .as_deref()
                .unwrap_or("none, it was enqueued from outside a job")
        ))),
        Err(r) => Err(Error::forbidden(format!(
            "cannot check who may cancel {id}: its job file {shown} is {} ({})",
            r.verdict.as_str(),
            r.message
        ))),
    }
}

/// The parent rule's answer when neither the inbox nor the archive of
/// `target` holds `id`'s job file (`NOT_FOUND`).
pub fn no_job_to_check(id: &JobId, target: &Machine) -> Error {
    Error::not_found(format!("no job {id} on {target} (inbox or archive)"))
}

/// What a wait after a cancel came to, once `id` has its result `o`:
/// whether the cancel stopped it, the outcome's word for JSON and the
/// sentence for people (`cancel --wait`).
pub fn after_wait(id: &JobId, o: &Outcome) -> (bool, String, String) {
    let how = o.termination();
    let stopped = matches!(
        how,
        doc::Termination::Cancelled | doc::Termination::CancelledBeforeStart
    );
    if stopped {
        return (
            true,
            "stopped".to_string(),
            format!("{id} stopped ({})", how.as_str()),
        );
    }
    (
        false,
        how.describe(o.ok).to_string(),
        format!(
            "{id} was not stopped: it finished first ({}, exit {})",
            how.describe(o.ok),
            o.exit_code
        ),
    )
}

/// The signed marker asking `dirs`' target to stop `id`, after the parent
/// rule when asked from inside job `caller`. Nothing is written.
pub fn sign(
    dirs: &TargetDirs,
    id: &JobId,
    key: &Key,
    origin: &Machine,
    caller: Option<&JobId>,
) -> Result<Marker> {
    if let Some(caller) = caller {
        check_parent(dirs, id, key, caller)?;
    }
    Ok(Marker::sign(
        key,
        id,
        dirs.target(),
        origin,
        &clock::format(clock::now()),
    ))
}

/// How many times an invalid file in the marker's place is moved aside
/// before the request gives up as `blocked` (a writer racing us).
const ATTEMPTS: usize = 3;

/// Places a signed `marker` for `id` in `cancel/`, unless the job has a
/// verified result (then nothing is written); never replaces a valid
/// marker. A file in the marker's place that is not a valid marker (garbage,
/// a forgery, an old key's, one still being written, one that cannot be
/// read) is moved to
/// `archive/rejected/` with its reason first: the caller holds the key and
/// can tell, so such a file never blocks a genuine cancel.
pub fn place_marker(
    dirs: &TargetDirs,
    id: &JobId,
    key: &Key,
    marker: &Marker,
) -> Result<CancelStatus> {
    let observed = observe::job(dirs, id, key)?;
    if let Observed::Done(o) = observed {
        return Ok(CancelStatus::NotRunning(o));
    }
    let (cancel, name) = (dirs.open_made(Place::Cancel)?, id.file_name());
    let target = dirs.target().as_str();
    let mut last = String::new();
    for _ in 0..ATTEMPTS {
        if cancel.publish(
            &name,
            &doc::to_file_bytes(marker),
            fsops::Flush::DataAndName,
        )? {
            return Ok(CancelStatus::Requested {
                observed,
                existing: None,
            });
        }
        let r = match crate::protocol::judge::marker(&cancel, id, target, key) {
            Ok(m) => {
                return Ok(CancelStatus::Requested {
                    observed,
                    existing: Some(m),
                });
            }
            Err(r) => r,
        };
        last = format!("{}: {}", r.verdict.as_str(), r.message);
        // Anything but a missing file, an unreadable one too (mode 000
        // syncs; a rename needs no read permission), is moved aside at
        // once: the marker placed next is this caller's, which holds the key.
        match accept::bad_marker(r.verdict, || true) {
            // Gone meanwhile: the next attempt takes the place.
            BadMarker::Gone | BadMarker::Wait => {}
            BadMarker::SetAside => {
                let moved = dirs
                    .open_made(Place::Rejected)
                    .and_then(|into| set_marker_aside(&into, &cancel, &name, &r, target, key));
                if let Err(e) = moved {
                    last = format!("{last}; it could not be moved aside: {}", e.message);
                    break;
                }
            }
        }
    }
    Ok(CancelStatus::Blocked(last))
}

/// Moves the file `name` of `cancel`, in a marker's place but refused as
/// `r`, to `rejected` (`archive/rejected/`) with its reason, judged with
/// `key` for `target`: what the watcher, the drain and `cancel` each do
/// once [`accept::bad_marker`] says [`BadMarker::SetAside`] (each reports
/// it in its own words). A rename, which needs no read permission.
///
/// # Errors
///
/// The error of [`rejected::file`]: the file could not be moved.
pub fn set_marker_aside(
    rejected: &fsops::Dir,
    cancel: &fsops::Dir,
    name: &str,
    r: &accept::Rejection,
    target: &str,
    key: &Key,
) -> Result<()> {
    let reason = rejected::Reason::new(r, rejected::Kind::Marker, target).judged_with(key);
    rejected::file(rejected, cancel, name, &reason)
}
