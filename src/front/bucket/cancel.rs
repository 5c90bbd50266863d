//! `cancel` on an object-store root: a signed marker published create-only
//! at `PREFIX/TARGET/cancel/<id>.json`, unless the job has a verified
//! result; a valid marker already there is kept, never replaced. From
//! inside a job, the parent rule first ([`lane::check_parent`]); with
//! `--wait`, the job's result waited for ([`super::wait`]); over a target
//! list (`A,B`, `all`), a marker for each target's copy, one line per
//! target, as on a folder.

use serde_json::json;

use super::Lane;
use crate::base::clock;
use crate::base::error::{Error, Result};
use crate::base::exit;
use crate::base::names::{JobId, Machine};
use crate::front::cli::CancelArgs;
use crate::front::config::Context;
use crate::front::send::cancel::{Each, list_takes};
use crate::protocol::doc::Marker;
use crate::requests::cancel::{CancelStatus, after_wait};
use crate::requests::lane::{self, Seen};
use crate::store::port::Shelves;
use crate::store::port::bucket::BucketTarget;
use crate::trust::Key;

/// Runs `cancel` on the root `root`.
pub fn run(ctx: &Context, root: &str, args: &CancelArgs) -> Result<u8> {
    let via = args
        .via
        .as_deref()
        .map(crate::front::send::http::Url::parse)
        .transpose()?;
    let list = crate::store::layout::is_target_list(&args.target);
    if list {
        list_takes(args)?;
    }
    let limit = super::wait::limit(args.wait_timeout.as_deref())?;
    if list {
        super::job_id(root, &args.job_id)?;
    } else {
        super::jobref::checked(&args.job_id)?;
    }
    let caller = ctx.enclosing_job()?;
    let lane = Lane::load(ctx, root)?;
    let origin = ctx.machine()?;
    let key = &lane.key;
    if list {
        let id = super::job_id(root, &args.job_id)?;
        return each(ctx, &lane, args, &id, &origin, caller.as_ref());
    }
    let t = lane.target(ctx, &args.target)?;
    let id = super::jobref::resolve(ctx, &lane, &t, &args.job_id)?;
    if !args.force && matches!(lane::look(&t, &id, key)?, Seen::Nothing) {
        return Err(unknown(&t, &id));
    }
    let status = match &via {
        // Over HTTP to the target's intake, into the bucket when it cannot
        // be reached; the parent rule first either way.
        Some(url) => {
            if let Some(caller) = caller.as_ref() {
                lane::check_parent(&t, &id, key, caller)?;
            }
            let m = Marker::sign(key, &id, t.target(), &origin, &clock::format(clock::now()));
            let target = t.target().as_str();
            crate::front::send::http::marker(url, (target, &id), key, &m, &mut || {
                lane::place_marker(&t, &id, key, &m)
            })?
        }
        None => ask(&t, &id, key, &origin, caller.as_ref())?,
    };
    let mut out = status.to_json(&id);
    out["target"] = json!(t.target().as_str());
    let human = status.sentence(&id);
    if !args.wait || !matches!(status, CancelStatus::Requested { .. }) {
        super::emit(ctx, &out, &human);
        return Ok(exit::no_if(matches!(status, CancelStatus::Blocked(_))));
    }
    if !ctx.json() {
        crate::base::out::line(&human);
    }
    match super::wait::for_result(&t, &id, key, limit, None)? {
        Seen::Done(o) => {
            let (stopped, word, human) = after_wait(&id, &o);
            out["outcome"] = json!(word);
            out["result"] = crate::view::result::json(&o);
            super::emit(ctx, &out, &human);
            Ok(exit::no_if(!stopped))
        }
        seen => super::wait::answer(ctx, &t, &id, out, seen, limit, false),
    }
}

/// The refusal of a cancel of `id`, which `t` has nothing of.
fn unknown(t: &BucketTarget, id: &JobId) -> Error {
    Error::not_found(format!(
        "no job {id} on {} (inbox, archive or results of {})",
        t.target(),
        t.shown()
    ))
    .hint("--force writes the marker anyway")
}

/// Asks `t` to stop `id` with a marker signed by `origin` (from inside
/// the job `caller`, if any: the parent rule first).
pub fn ask(
    t: &dyn Shelves,
    id: &JobId,
    key: &Key,
    origin: &Machine,
    caller: Option<&JobId>,
) -> Result<CancelStatus> {
    if let Some(caller) = caller {
        lane::check_parent(t, id, key, caller)?;
    }
    let m = Marker::sign(key, id, t.target(), origin, &clock::format(clock::now()));
    lane::place_marker(t, id, key, &m)
}

/// A cancel of `id` over the target list `args.target`: each target that
/// knows the job gets a marker, one failing does not keep the others from
/// theirs; an id no target knows is refused as a whole (unless
/// `--force`) before anything is written.
fn each(
    ctx: &Context,
    lane: &Lane,
    args: &CancelArgs,
    id: &JobId,
    origin: &Machine,
    caller: Option<&JobId>,
) -> Result<u8> {
    let key = &lane.key;
    let targets = lane.targets(ctx, &args.target)?;
    let known: Vec<Result<bool>> = targets
        .iter()
        .map(|t| Ok(args.force || !matches!(lane::look(t, id, key)?, Seen::Nothing)))
        .collect();
    if !known.iter().any(|k| matches!(k, Ok(true)))
        && let Some((t, _)) = targets.iter().zip(&known).find(|(_, k)| k.is_ok())
    {
        return Err(unknown(t, id));
    }
    let answers: Vec<_> = targets
        .iter()
        .zip(known)
        .map(|(t, known)| {
            let each = match known {
                Err(e) => Each::Failed(e),
                Ok(false) => Each::Unknown(id.clone()),
                Ok(true) => match ask(t, id, key, origin, caller) {
                    Ok(status) => Each::Asked(id.clone(), status),
                    Err(e) => Each::Failed(e),
                },
            };
            each.answer(t.target().as_str())
        })
        .collect();
    let (json, human) = crate::view::result::each(&answers);
    super::emit(ctx, &json, &human);
    Ok(exit::worst(answers.iter().map(|a| a.status)))
}
