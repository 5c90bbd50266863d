//! `cancel`: write a signed marker asking a target to stop a job, running or
//! still queued ([`crate::cancel`] decides). Never replaces a marker; writes
//! nothing for a finished job, nor for an id neither the target nor this
//! machine knows (`NOT_FOUND` with the nearest ids, unless `--force`: a
//! mistyped id must not leave a marker while the real job runs on). Over a
//! target list (`A,B` or `all`), a marker for each target's copy, one line
//! per target.

use serde_json::json;

use crate::cancel::{self, CancelStatus};
use crate::cli::CancelArgs;
use crate::config::Context;
use crate::doc::Termination;
use crate::error::{Error, Result};
use crate::jobref::Names;
use crate::names::{JobId, Machine};
use crate::trust::Key;

use super::Answer;
use crate::exit;
use crate::http::client::{self, Url};
use crate::wait;

/// Runs `cancel`.
pub fn run(ctx: &Context, args: CancelArgs) -> Result<u8> {
    let limit = super::duration_flag(&args.wait_timeout, "--wait-timeout")?;
    let via = args.via.as_deref().map(Url::parse).transpose()?;
    let caller = ctx.enclosing_job()?;
    let root = ctx.root()?;
    // Key and identity first: a refusal must not leave a fleet member's
    // folder behind.
    let key = ctx.key(Some(&root))?;
    let origin = ctx.machine()?;
    if crate::layout::is_target_list(&args.target) {
        return each(ctx, &root, &key, &origin, caller.as_ref(), &args);
    }
    // Through the folder only: a root that went away is not built again.
    let guard = via
        .is_none()
        .then(|| super::known_root(ctx, &root, &key))
        .transpose()?;
    let dirs = ctx.target(&root, &args.target)?;
    let dirs = match &guard {
        Some(g) => dirs.guarded(g),
        None => dirs,
    };
    let mut names = Names::new(&key, ctx.state_dir(&root).ok());
    let id = names.resolve(&dirs, &args.job_id)?;
    if !args.force {
        names.check_known(&dirs, &id, "--force")?;
    }
    let marker = cancel::sign(&dirs, &id, &key, &origin, caller.as_ref())?;
    let status = client::deliver_marker(via.as_ref(), &dirs, &id, &key, &marker)?;
    let mut out = status.to_json(&id);
    out["target"] = json!(dirs.target().as_str());
    let human = status.sentence(&id);
    let blocked = matches!(status, CancelStatus::Blocked(_));
    if !args.wait || !matches!(status, CancelStatus::Requested { .. }) {
        super::emit(ctx, &out, &human);
        return Ok(exit::no_if(blocked));
    }
    if !ctx.json() {
        crate::out::line(&human.to_string());
    }
    let waited = wait::for_result(&dirs, &id, &key, limit, ctx.json(), None)?;
    let limit = Some(limit.unwrap_or_default());
    let o = match super::with_result(ctx, &dirs, &id, &key, &out, waited, limit) {
        Ok(o) => o,
        Err(status) => return Ok(status),
    };
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
    out["result"] = crate::view::result::json(&o);
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
    Ok(exit::no_if(!stopped))
}

/// `cancel` over a target list: a marker for each target's copy of the
/// job, one line (or JSON object) per target, and the worst status
/// ([`crate::exit::worst`]): a target where the marker could not be
/// written does not keep the others from getting theirs.
fn each(
    ctx: &Context,
    root: &std::path::Path,
    key: &Key,
    origin: &Machine,
    caller: Option<&JobId>,
    args: &CancelArgs,
) -> Result<u8> {
    let list = &args.target;
    if args.via.is_some() || args.wait {
        let flag = if args.wait { "--wait" } else { "--via" };
        return Err(Error::validation(format!(
            "{flag} takes one target; --target {list} names several"
        ))
        .hint(format!(
            "cancel them, then wait with: fleet-dispatch result --target {list} --job-id {} --wait",
            args.job_id
        )));
    }
    let guard = super::known_root(ctx, root, key)?;
    let targets: Vec<_> = ctx
        .targets(root, list)?
        .into_iter()
        .map(|d| d.guarded(&guard))
        .collect();
    let mut names = Names::new(key, ctx.state_dir(root).ok());
    let ids: Vec<Result<JobId>> = targets
        .iter()
        .map(|dirs| names.resolve(dirs, &args.job_id))
        .collect();
    // Each copy is known where it was sent; an id no target knows is a
    // mistake, refused as a whole before anything is written.
    let known: Vec<bool> = targets
        .iter()
        .zip(&ids)
        .map(|(dirs, id)| args.force || id.as_ref().is_ok_and(|id| names.is_known(dirs, id)))
        .collect();
    if !known.contains(&true)
        && let Some((dirs, Ok(id))) = targets.iter().zip(&ids).find(|(_, id)| id.is_ok())
    {
        names.check_known(dirs, id, "--force")?;
    }
    let answers: Vec<Answer> = targets
        .iter()
        .zip(ids)
        .zip(known)
        .map(|((dirs, id), known)| {
            if let (Ok(id), false) = (id.as_ref(), known) {
                return Answer {
                    status: exit::SUCCESS,
                    json: json!({"jobId": id.as_str(), "target": dirs.target().as_str(), "status": "unknown"}),
                    line: format!(
                        "{}: no job {id} there (never seen, not sent from here); nothing was written",
                        dirs.target()
                    ),
                };
            }
            let one = id.and_then(|id| {
                let marker = cancel::sign(dirs, &id, key, origin, caller)?;
                Ok((client::deliver_marker(None, dirs, &id, key, &marker)?, id))
            });
            match one {
                Ok((status, id)) => {
                    let mut json = status.to_json(&id);
                    json["target"] = json!(dirs.target().as_str());
                    Answer {
                        status: exit::no_if(matches!(status, CancelStatus::Blocked(_))),
                        json,
                        line: format!("{}: {}", dirs.target(), status.sentence(&id)),
                    }
                }
                Err(e) => Answer::failed(dirs, &e),
            }
        })
        .collect();
    Ok(super::emit_each(ctx, &answers))
}
