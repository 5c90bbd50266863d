//! `enqueue` on an object-store root: the job signed as on a folder (the
//! same bytes), checked against what the target already holds, and
//! published create-only at `PREFIX/TARGET/inbox/<id>.json`; a target list
//! (`A,B`, `all`) gets one copy per target, every target checked before
//! any copy goes out. With `--wait`, the result is waited for
//! ([`super::wait`]); with `--interrupt`, the job named is checked first,
//! the new job queued, then the old one asked to stop ([`super::cancel::ask`]),
//! as on a folder. `--batch` is [`super::batch`]'s.

use serde_json::{Value, json};

use super::Lane;
use crate::base::clock;
use crate::base::error::{Error, Result};
use crate::base::exit;
use crate::front::cli::EnqueueArgs;
use crate::front::config::Context;
use crate::front::send::request::{self, Origin, checked, roster_refusal};
use crate::front::send::seal::sign_job;
use crate::requests::lane;
use crate::store::layout::Place;
use crate::store::port::Shelves;
use crate::store::port::bucket::BucketTarget;

/// Runs `enqueue` on the root `root`.
pub fn run(ctx: &Context, root: &str, args: &EnqueueArgs) -> Result<u8> {
    let req = request::from_flags(ctx, args)?;
    // One job to stop, one listener to reach: each names a single target.
    for (given, flag) in [
        (args.interrupt.is_some(), "--interrupt"),
        (args.via.is_some(), "--via"),
    ] {
        if given && crate::store::layout::is_target_list(&req.targets) {
            return Err(Error::validation(format!(
                "{flag} takes one target; --target {} names several",
                req.targets
            )));
        }
    }
    let via = args
        .via
        .as_deref()
        .map(crate::front::send::http::Url::parse)
        .transpose()?;
    // A bad id is refused before the store is asked.
    if let Some(text) = args
        .interrupt
        .as_deref()
        .filter(|t| *t != crate::places::jobref::RUNNING)
    {
        super::jobref::checked(text).map_err(|e| interrupt_error(text, e))?;
    }
    let wait_limit = super::wait::limit(args.waiting.wait_timeout.as_deref())?;
    if args.waiting.follow && crate::store::layout::is_target_list(&req.targets) {
        return Err(Error::validation(format!(
            "--follow streams one job's output; --target {} names several",
            req.targets
        ))
        .hint("wait for every copy with --wait alone, then read one copy's output with logs"));
    }
    let lane = Lane::load(ctx, root)?;
    if args.seal {
        // Refused before the store is asked.
        crate::front::send::seal::may_seal(&lane.key, &req.id)?;
    }
    let origin = ctx.machine()?;
    let targets = if crate::store::layout::is_target_list(&req.targets) {
        lane.targets(ctx, &req.targets)?
    } else {
        vec![lane.target(ctx, &req.targets)?]
    };
    let key = &lane.key;
    let interrupt = args
        .interrupt
        .as_deref()
        .map(|text| {
            let named = (text != crate::places::jobref::RUNNING)
                .then(|| super::jobref::resolve(ctx, &lane, &targets[0], text))
                .transpose()
                .map_err(|e| interrupt_error(text, e))?;
            interrupted(&targets[0], text, named, &req.id, key, args.force)
        })
        .transpose()?;
    // Every target and the id on each checked, every copy signed and
    // checked, before anything is published.
    for t in &targets {
        lane::check_free(t, &req.id, key)?;
    }
    let created = clock::now();
    let jobs = targets
        .iter()
        .map(|t| {
            let job = sign_job(
                key,
                args.seal,
                (req.id.clone(), t.target().as_str(), origin.as_str()),
                created,
                req.spec_by(t.target(), &mut |on, id| after_on(ctx, &lane, on, id))?,
            )?;
            let (job, bytes) = checked(job, Origin::Flags)?;
            roster_refusal(&job, &bytes, key)?;
            Ok((job, bytes))
        })
        .collect::<Result<Vec<_>>>()?;
    for (n, (t, (job, bytes))) in targets.iter().zip(&jobs).enumerate() {
        let mut into_bucket = || lane::publish(t, job, bytes, key);
        // Over HTTP to the target's intake, into the bucket when it
        // cannot be reached.
        let sent = match &via {
            Some(url) => crate::front::send::http::job(url, job, bytes, &mut into_bucket),
            None => into_bucket(),
        };
        if let Err(e) = sent {
            return Err(partly(&req.id, &targets[..n], e));
        }
    }
    // `last` names it on each target, as on a folder.
    let each: Vec<_> = targets.iter().map(|t| t.target()).collect();
    let state = ctx.state_dir(std::path::Path::new(root));
    crate::places::jobref::remember_on(state, &each, &req.id);
    let copy = |t: &BucketTarget| {
        json!({
            "target": t.target().as_str(),
            "path": t.shelf(Place::Inbox).shown(&req.id.file_name()),
            "resultPath": t.shelf(Place::Results).shown(&req.id.file_name()),
        })
    };
    let priority = if req.spec.header.priority == crate::protocol::doc::Priority::High {
        "high"
    } else {
        "normal"
    };
    let mut out: Value = match targets.as_slice() {
        [one] if !crate::store::layout::is_target_list(&req.targets) => {
            let mut o = copy(one);
            o["jobId"] = json!(req.id.as_str());
            o
        }
        all => json!({
            "jobId": req.id.as_str(),
            "targets": all.iter().map(|t| t.target().as_str()).collect::<Vec<_>>(),
            "copies": all.iter().map(copy).collect::<Vec<_>>(),
        }),
    };
    out["priority"] = json!(priority);
    if let Some(p) = &req.parent {
        out["parentJobId"] = json!(p.as_str());
    }
    // The new job is queued; now the cancel, which may not land (the job
    // finished meanwhile): then the new job simply waits its turn.
    if let Some(old) = interrupt {
        let status = super::cancel::ask(&targets[0], &old, key, &origin, req.parent.as_ref());
        let (json, note) = crate::front::send::job::steer_report(
            &req.id,
            &old,
            &status,
            args.interrupt.as_deref(),
        );
        out["interrupt"] = json;
        if !ctx.json() {
            crate::note!("fleet-dispatch: {note}");
        }
    }
    if !args.waiting.wait {
        super::emit(ctx, &out, req.id.as_str());
        return Ok(exit::SUCCESS);
    }
    if crate::store::layout::is_target_list(&req.targets) {
        // Each copy's result in turn, within the one limit.
        let answers = super::each::results(&lane, &targets, &req.id, Some(wait_limit));
        if ctx.json() {
            out["results"] = answers.iter().map(|a| a.json.clone()).collect();
            crate::base::out::line(&out.to_string());
        } else {
            crate::base::out::line(req.id.as_str());
            crate::base::out::line(&crate::view::result::each(&answers).1);
        }
        return Ok(exit::worst(answers.iter().map(|a| a.status)));
    }
    // As on a folder: the id first, then the result when it comes.
    if !ctx.json() {
        crate::base::out::line(req.id.as_str());
    }
    let t = &targets[0];
    let follow = args.waiting.follow;
    let mut follower = follow.then(|| super::logs::Follower::new(t, &req.id, ctx.json()));
    let seen = super::wait::for_result(t, &req.id, key, wait_limit, follower.as_mut())?;
    super::wait::answer(ctx, t, &req.id, out, seen, wait_limit, follow)
}

/// The job `id` names on the target `on` names, for `--after`: the target
/// as the bucket spells it, the id taken whole (a prefix or `last` needs
/// this machine's record of a folder root).
pub fn after_on(
    ctx: &Context,
    lane: &Lane,
    on: &crate::base::names::Machine,
    id: &crate::base::names::JobId,
) -> Result<(crate::base::names::Machine, crate::base::names::JobId)> {
    let t = lane.target(ctx, on.as_str())?;
    let id = super::job_id(&lane.bucket.root().to_string(), id.as_str())?;
    Ok((t.target().clone(), id))
}

/// The error of a fan-out stopped by `e` after the copies to `done`.
fn partly(id: &crate::base::names::JobId, done: &[BucketTarget], e: Error) -> Error {
    if done.is_empty() {
        return e;
    }
    let names: Vec<&str> = done.iter().map(|t| t.target().as_str()).collect();
    Error::new(
        e.code,
        format!(
            "{id} was published to {} only: {}",
            names.join(","),
            e.message
        ),
    )
    .hint(format!(
        "cancel the copies with cancel --target {} --job-id {id}",
        names.join(",")
    ))
}

/// `e`, the refusal of `--interrupt TEXT`, naming the flag.
fn interrupt_error(text: &str, mut e: Error) -> Error {
    e.message = format!("--interrupt {text}: {}", e.message);
    e
}

/// The job `--interrupt TEXT` names on `t`: `running`, the one job the
/// target runs now ([`lane::running`]), or the id `named` ([`super::jobref`]),
/// refused (`NOT_FOUND`) when `t` has nothing of it unless `force`.
/// Checked before the new job (`own`) is published, so a mistake queues
/// nothing.
fn interrupted(
    t: &BucketTarget,
    text: &str,
    named: Option<crate::base::names::JobId>,
    own: &crate::base::names::JobId,
    key: &crate::trust::Key,
    force: bool,
) -> Result<crate::base::names::JobId> {
    let refused = |mut e: Error| {
        e.message = format!("--interrupt {text}: {}", e.message);
        e
    };
    let old = match named {
        Some(id) => id,
        None => lane::running(t).map_err(refused)?,
    };
    crate::front::send::job::not_itself(&old, own)?;
    if !force && matches!(lane::look(t, &old, key)?, lane::Seen::Nothing) {
        return Err(refused(
            Error::not_found(format!(
                "no job {old} on {} (inbox, archive or results of {})",
                t.target(),
                t.shown()
            ))
            .hint("--force asks it to stop anyway"),
        ));
    }
    Ok(old)
}
