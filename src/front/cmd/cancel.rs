//! `cancel`: ask a target to stop a job, running or still queued, with a
//! signed marker ([`crate::front::send::cancel`] sends it, [`crate::requests::cancel`]
//! decides). Never replaces a marker; writes nothing for a finished job,
//! nor for an id neither the target nor this machine knows (`NOT_FOUND`
//! with the nearest ids, unless `--force`). Over a target list (`A,B` or
//! `all`), a marker for each target's copy, one line per target.

use serde_json::json;

use crate::base::error::Result;
use crate::front::cli::CancelArgs;
use crate::front::config::Context;
use crate::front::send::cancel::{self, Cancelled, Each, Requested};
use crate::protocol::doc::Termination;
use crate::requests::cancel::CancelStatus;

use super::Answer;
use crate::base::exit;
use crate::requests::wait;

/// Runs `cancel`.
pub fn run(ctx: &Context, args: CancelArgs) -> Result<u8> {
    if let Some(root) = ctx.s3_root() {
        return crate::front::bucket::cancel::run(ctx, &root, &args);
    }
    let limit = super::duration_flag(&args.wait_timeout, "--wait-timeout")?;
    let one = match cancel::send(ctx, &args)? {
        Cancelled::One(one) => one,
        Cancelled::Each(each) => {
            let answers: Vec<Answer> = each.iter().map(|(d, e)| answer(d, e)).collect();
            return Ok(super::emit_each(ctx, &answers));
        }
    };
    let Requested {
        dirs,
        id,
        status,
        sender,
    } = one.as_ref();
    let key = &sender.key;
    let mut out = status.to_json(id);
    out["target"] = json!(dirs.target().as_str());
    let human = status.sentence(id);
    let blocked = matches!(status, CancelStatus::Blocked(_));
    if !args.wait || !matches!(status, CancelStatus::Requested { .. }) {
        super::emit(ctx, &out, &human);
        return Ok(exit::no_if(blocked));
    }
    if !ctx.json() {
        crate::base::out::line(&human.to_string());
    }
    let waited = wait::for_result(dirs, id, key, limit, ctx.json(), None)?;
    let limit = Some(limit.unwrap_or_default());
    let o = match super::with_result(ctx, dirs, id, key, &out, waited, limit) {
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

/// One target's line (or JSON object) of a cancel over a target list; the
/// worst status of them all is the command's ([`crate::base::exit::worst`]).
fn answer(dirs: &crate::store::layout::TargetDirs, each: &Each) -> Answer {
    match each {
        Each::Unknown(id) => Answer {
            status: exit::SUCCESS,
            json: json!({"jobId": id.as_str(), "target": dirs.target().as_str(), "status": "unknown"}),
            line: format!(
                "{}: no job {id} there (never seen, not sent from here); nothing was written",
                dirs.target()
            ),
        },
        Each::Asked(id, status) => {
            let mut json = status.to_json(id);
            json["target"] = json!(dirs.target().as_str());
            Answer {
                status: exit::no_if(matches!(status, CancelStatus::Blocked(_))),
                json,
                line: format!("{}: {}", dirs.target(), status.sentence(id)),
            }
        }
        Each::Failed(e) => Answer::failed(dirs, e),
    }
}
