//! A cancel request: a signed marker for one target's job, over its
//! [`Route`], or for each target's copy of a job through the folder
//! ([`send`]). The rules of a cancel (the parent rule, never
//! replacing a marker, nothing for a finished job) are
//! [`crate::requests::cancel`]'s; here the job is named, and a mistyped id is
//! refused (`NOT_FOUND` with the nearest ids, unless `--force`) so that
//! it never leaves a marker while the real job runs on.

use crate::base::error::{Error, Result};
use crate::base::exit;
use crate::base::names::JobId;
use crate::front::cli::CancelArgs;
use crate::front::config::Context;
use crate::places::jobref::Names;
use crate::requests::cancel::{self, CancelStatus};
use crate::store::layout::TargetDirs;
use crate::view::result::Answer;
use serde_json::json;

use super::{Route, Sender};

/// A cancel requested of one target.
pub struct Requested {
    /// The target's folders.
    pub dirs: TargetDirs,
    /// The job asked to stop.
    pub id: JobId,
    /// What came of asking.
    pub status: CancelStatus,
    /// The key, to judge the job's result by.
    pub sender: Sender,
}

/// What a cancel over a target list came to on one target.
pub enum Each {
    /// Neither that target nor this machine knows the job: nothing was
    /// written there.
    Unknown(JobId),
    /// A marker was asked for.
    Asked(JobId, CancelStatus),
    /// The request failed there.
    Failed(Error),
}

/// One target's line (or JSON object) of a cancel over a target list; the
/// worst status of them all is the command's ([`crate::base::exit::worst`]).
/// On any root.
impl Each {
    pub fn answer(&self, target: &str) -> Answer {
        match self {
            Each::Unknown(id) => Answer {
                status: exit::SUCCESS,
                json: json!({"jobId": id.as_str(), "target": target, "status": "unknown"}),
                line: format!(
                    "{}: no job {id} there (never seen, not sent from here); nothing was written",
                    target
                ),
            },
            Each::Asked(id, status) => {
                let mut json = status.to_json(id);
                json["target"] = json!(target);
                Answer {
                    status: exit::no_if(matches!(status, CancelStatus::Blocked(_))),
                    json,
                    line: format!("{target}: {}", status.sentence(id)),
                }
            }
            Each::Failed(e) => Answer::failed_on(target, e),
        }
    }
}

/// What a cancel came to.
pub enum Cancelled {
    /// Of one target.
    One(Box<Requested>),
    /// Of each target of a list, in its order.
    Each(Vec<(TargetDirs, Each)>),
}

/// Asks `args.target` (one target, or each of a list) to stop the job
/// `args.job_id` names, from inside the job `FLEET_DISPATCH_JOB_ID` names,
/// if any (only its direct parent may).
pub fn send(ctx: &Context, args: &CancelArgs) -> Result<Cancelled> {
    let route = Route::via(args.via.as_deref())?;
    let caller = ctx.enclosing_job()?;
    let s = Sender::load(ctx)?;
    if crate::store::layout::is_target_list(&args.target) {
        return each(ctx, args, caller.as_ref(), &s).map(Cancelled::Each);
    }
    one(ctx, args, caller.as_ref(), route, s).map(|r| Cancelled::One(Box::new(r)))
}

/// Asks `args.target`, one target, to stop its job `args.job_id`.
fn one(
    ctx: &Context,
    args: &CancelArgs,
    caller: Option<&JobId>,
    route: Route,
    s: Sender,
) -> Result<Requested> {
    let dirs = s.target(ctx, &args.target, &route)?;
    let mut names = Names::new(&s.key, ctx.state_dir(&s.root).ok());
    let id = names.resolve(&dirs, &args.job_id)?;
    if !args.force {
        names.check_known(&dirs, &id, "--force")?;
    }
    let marker = cancel::sign(&dirs, &id, &s.key, &s.origin, caller)?;
    let status = route.marker(&dirs, &id, &s.key, &marker)?;
    Ok(Requested {
        dirs,
        id,
        status,
        sender: s,
    })
}

/// Asks each target of the list `args.target` to stop its copy of the job,
/// through the folder: a target where the marker could not be written does
/// not keep the others from getting theirs. An id no target knows is a
/// mistake, refused as a whole before anything is written.
fn each(
    ctx: &Context,
    args: &CancelArgs,
    caller: Option<&JobId>,
    s: &Sender,
) -> Result<Vec<(TargetDirs, Each)>> {
    let list = &args.target;
    list_takes(args)?;
    let targets = s.targets(ctx, list)?;
    let mut names = Names::new(&s.key, ctx.state_dir(&s.root).ok());
    let ids: Vec<Result<JobId>> = targets
        .iter()
        .map(|dirs| names.resolve(dirs, &args.job_id))
        .collect();
    // Each copy is known where it was sent.
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
    Ok(targets
        .into_iter()
        .zip(ids)
        .zip(known)
        .map(|((dirs, id), known)| {
            let each = match (id, known) {
                (Ok(id), false) => Each::Unknown(id),
                (Err(e), _) => Each::Failed(e),
                (Ok(id), true) => {
                    let asked = cancel::sign(&dirs, &id, &s.key, &s.origin, caller)
                        .and_then(|m| Route::Folder.marker(&dirs, &id, &s.key, &m));
                    match asked {
                        Ok(status) => Each::Asked(id, status),
                        Err(e) => Each::Failed(e),
                    }
                }
            };
            (dirs, each)
        })
        .collect())
}

/// Refuses (`VALIDATION_ERROR`) the flags of `cancel` that name a single
/// target (`--wait`, `--via`) with the target list `args.target`.
pub fn list_takes(args: &CancelArgs) -> Result<()> {
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
    Ok(())
}
