//! `cancel`: write a signed marker asking a target to stop a job, running or
//! still queued. Never replaces a marker; writes nothing for a finished job.

use serde_json::{Value, json};

use crate::accept;
use crate::cli::CancelArgs;
use crate::clock;
use crate::config::Context;
use crate::doc::{Marker, Outcome, Termination, job};
use crate::error::{Error, Result};
use crate::fsops;
use crate::http::client::{self, Sent, Url};
use crate::key::Key;
use crate::layout::TargetDirs;
use crate::names::{JobId, Machine};
use crate::observe::{self, Observed};
use crate::wait::{self, Waited};

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
    /// A marker file that does not verify occupies the slot.
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
                "cancel of {id} not requested: cancel/{id}.json exists but is not a valid marker ({why}); the listener moves it to archive/rejected/, then retry"
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
    for path in [dirs.job_file(id), dirs.done_file(id)] {
        let read = fsops::read_limited(&path, job::MAX_BYTES);
        if matches!(read, crate::read::FileRead::Missing) {
            continue;
        }
        let name = id.file_name();
        return match accept::job(&name, read, dirs.target().as_str(), key) {
            Ok(j) if j.spec.parent_job_id.as_deref() == Some(caller.as_str()) => Ok(()),
            Ok(j) => Err(Error::forbidden(format!(
                "job {caller} may not cancel {id}: only its direct parent ({}) may",
                j.spec
                    .parent_job_id
                    .as_deref()
                    .unwrap_or("none, it was enqueued from outside a job")
            ))),
            Err(r) => Err(Error::forbidden(format!(
                "cannot check who may cancel {id}: its job file {} is {} ({})",
                path.display(),
                r.verdict.as_str(),
                r.message
            ))),
        };
    }
    Err(Error::not_found(format!(
        "no job {id} on {} (inbox or archive)",
        dirs.target()
    )))
}

/// Requests a cancel of `id` on `dirs`' target; applies the parent rule when
/// called from inside job `caller` ([`Context::enclosing_job`]). With `via`, the signed marker goes over HTTP,
/// and into the folder only when the target cannot be reached.
pub fn request_cancel(
    dirs: &TargetDirs,
    id: &JobId,
    key: &Key,
    origin: &Machine,
    caller: Option<&JobId>,
    via: Option<&Url>,
) -> Result<CancelStatus> {
    if let Some(caller) = caller {
        check_parent(dirs, id, key, caller)?;
    }
    let marker = Marker::sign(key, id, dirs.target(), origin, &clock::format(clock::now()));
    let Some(url) = via else {
        return place_marker(dirs, id, key, &marker);
    };
    let bytes = crate::doc::to_file_bytes(&marker);
    match client::post_cancel(url, id, &bytes)? {
        Sent::Answer { status, body } => status_from_answer(dirs, id, key, url, status, &body),
        Sent::Unreachable(why) => {
            let status = place_marker(dirs, id, key, &marker)?;
            let wrote = matches!(status, CancelStatus::Requested { existing: None, .. });
            client::say_fallback(url, &why, wrote);
            Ok(status)
        }
    }
}

/// The target's answer to a cancel over HTTP, as a status. Documents in it
/// (a result, an earlier marker) count only when they verify here.
fn status_from_answer(
    dirs: &TargetDirs,
    id: &JobId,
    key: &Key,
    url: &Url,
    status: u16,
    body: &Value,
) -> Result<CancelStatus> {
    let target = dirs.target().as_str();
    let doc = |v: &Value| crate::read::FileRead::Bytes(v.to_string().into_bytes());
    match (status, body["status"].as_str()) {
        (202, Some("requested")) => Ok(CancelStatus::Requested {
            observed: match body["job"].as_str() {
                Some("running") => Observed::Running,
                Some("queued") => Observed::Queued,
                _ => Observed::NotSeen,
            },
            existing: body
                .get("marker")
                .and_then(|m| accept::marker(&id.file_name(), doc(m), target, key).ok()),
        }),
        (202, Some("not_running")) => accept::outcome(
            id.as_str(),
            doc(&body["result"]),
            target,
            key,
        )
        .map(|o| CancelStatus::NotRunning(Box::new(o)))
        .map_err(|r| {
            Error::forbidden(format!(
                "{url} says {id} already finished, but the result it sent does not verify ({}: {})",
                r.verdict.as_str(),
                r.message
            ))
        }),
        (409, Some("blocked")) => Ok(CancelStatus::Blocked(
            body["reason"].as_str().unwrap_or_default().to_string(),
        )),
        _ => Err(client::refusal(url, status, body)),
    }
}

/// Places a signed `marker` for `id` in `cancel/`, unless the job has a
/// verified result (then nothing is written); never replaces a marker. The
/// folder path and the HTTP intake both decide here.
pub fn place_marker(
    dirs: &TargetDirs,
    id: &JobId,
    key: &Key,
    marker: &Marker,
) -> Result<CancelStatus> {
    let observed = observe::job(dirs, id, key);
    if let Observed::Done(o) = observed {
        return Ok(CancelStatus::NotRunning(o));
    }
    let path = dirs.marker_file(id);
    fsops::create_dirs(&[dirs.cancel()])?;
    if fsops::publish(
        &path,
        &crate::doc::to_file_bytes(marker),
        fsops::Flush::DataAndName,
    )? {
        return Ok(CancelStatus::Requested {
            observed,
            existing: None,
        });
    }
    let read = fsops::read_limited(&path, crate::doc::marker::MAX_BYTES);
    match accept::marker(&id.file_name(), read, dirs.target().as_str(), key) {
        Ok(m) => Ok(CancelStatus::Requested {
            observed,
            existing: Some(m),
        }),
        Err(r) => Ok(CancelStatus::Blocked(format!(
            "{}: {}",
            r.verdict.as_str(),
            r.message
        ))),
    }
}

/// Runs `cancel`.
pub fn run(ctx: &Context, args: CancelArgs) -> Result<u8> {
    let id = JobId::parse(&args.job_id)?;
    let limit = super::duration_flag(&args.wait_timeout, "--wait-timeout")?;
    let via = args.via.as_deref().map(Url::parse).transpose()?;
    let caller = ctx.enclosing_job()?;
    let root = ctx.root()?;
    // Key and identity first: a refusal must not leave a fleet member's
    // folder behind.
    let key = ctx.key(Some(&root))?;
    let origin = ctx.machine()?;
    let dirs = ctx.target(&root, &args.target)?;
    let status = request_cancel(&dirs, &id, &key, &origin, caller.as_ref(), via.as_ref())?;
    let mut out = status.to_json(&id);
    out["target"] = json!(dirs.target().as_str());
    let human = status.sentence(&id);
    let blocked = matches!(status, CancelStatus::Blocked(_));
    if !args.wait || !matches!(status, CancelStatus::Requested { .. }) {
        super::emit(ctx, &out, &human);
        return Ok(if blocked { 1 } else { 0 });
    }
    if !ctx.json() {
        crate::out::line(&human.to_string());
    }
    match wait::for_result(&dirs, &id, &key, limit, ctx.json())? {
        Waited::Done(o) => {
            let how = o.termination();
            let stopped = matches!(
                how,
                Termination::Cancelled | Termination::CancelledBeforeStart
            );
            out["outcome"] = json!(if stopped {
                "stopped"
            } else {
                how.describe(o.ok)
            });
            out["result"] = super::result::result_json(&o);
            let human = if stopped {
                format!("{id} stopped ({})", how.as_str())
            } else {
                format!(
                    "{id} was not stopped: it finished first ({}, exit {})",
                    how.describe(o.ok),
                    o.exit_code
                )
            };
            super::emit(ctx, &out, &human);
            Ok(if stopped { 0 } else { 1 })
        }
        Waited::TimedOut(seen) => {
            let msg = wait::timed_out_message(&id, &seen, limit.unwrap_or_default());
            out["timedOut"] = json!(true);
            out["job"] = json!(seen.word());
            if ctx.json() {
                crate::out::line(&out.to_string());
            } else {
                eprintln!("fleet-dispatch: {msg}");
            }
            Ok(wait::TIMED_OUT)
        }
    }
}
