//! One job ([`send`]): to one target, over its [`Route`], with
//! `--interrupt`'s cancel after it; or, with a target list (`A,B`, `all`),
//! the same id to each target through the folder, each copy signed for its
//! target.

use serde_json::{Value, json};

use super::request::{Origin, Request, Resolver, checked, roster_refusal};
use super::seal::sign_job;
use super::{Route, Sender};
use crate::base::clock;
use crate::base::error::{Error, Result};
use crate::base::names::JobId;
use crate::front::cli::EnqueueArgs;
use crate::front::config::Context;
use crate::places::observe::Observed;
use crate::requests::cancel::{self, CancelStatus};
use crate::requests::doctor::Check;
use crate::requests::submit;
use crate::store::layout::TargetDirs;
use crate::trust::Key;

/// What sending one request came to.
pub enum Enqueued {
    /// To one target.
    One(Box<One>),
    /// To a target list.
    Copies(Box<Copies>),
}

/// A job sent to one target.
pub struct One {
    /// What was sent: the request, its id and spec but for `after`.
    pub req: Request,
    /// The target's folders.
    pub dirs: TargetDirs,
    /// The key it was signed with, to judge its result by.
    pub key: Key,
    /// What `doctor` warns of the target's listener (through the folder).
    pub warnings: Vec<Check>,
    /// `--interrupt`: the job asked to stop, and what came of asking.
    pub steer: Option<(JobId, Result<CancelStatus>)>,
}

/// A job sent, the same id, to each target of a list.
pub struct Copies {
    /// What was sent.
    pub req: Request,
    /// The targets that have a copy, in the list's order.
    pub targets: Vec<TargetDirs>,
    /// Where each of `targets` stands in the list.
    pub at: Vec<usize>,
    /// The targets of `all` passed over (an inbox that cannot take a job),
    /// with where each stands in the list and why.
    pub passed_over: Vec<(usize, TargetDirs, Error)>,
    /// The key they were signed with.
    pub key: Key,
    /// What `doctor` warns of the targets' listeners.
    pub warnings: Vec<Check>,
}

/// Sends `req`, made from `args`: to its one target, or to each of its
/// target list. Nothing is published unless every check passed.
pub fn send(ctx: &Context, args: &EnqueueArgs, req: Request) -> Result<Enqueued> {
    if crate::store::layout::is_target_list(&req.targets) {
        return fan_out(ctx, args, req).map(|c| Enqueued::Copies(Box::new(c)));
    }
    one(ctx, args, req).map(|o| Enqueued::One(Box::new(o)))
}

/// Sends `req` to its one target; with `--interrupt`, the new job is
/// queued first, then the cancel requested, so a cancel that cannot land
/// leaves it simply waiting its turn.
fn one(ctx: &Context, args: &EnqueueArgs, req: Request) -> Result<One> {
    let route = Route::via(args.via.as_deref())?;
    let s = Sender::load(ctx)?;
    let dirs = s.target(ctx, &req.targets, &route)?;
    let key = &s.key;
    let interrupt = args
        .interrupt
        .as_deref()
        .map(|text| interrupted(ctx, &s, &dirs, text, &req.id, args.force))
        .transpose()?;
    if let Some(old) = &interrupt {
        not_itself(old, &req.id)?;
    }
    let spec = req.spec_for(&mut Resolver::new(ctx, &s.root, key), dirs.target())?;
    submit::check_unused(&dirs, &req.id, key)?;
    let job = sign_job(
        key,
        args.seal,
        (req.id.clone(), dirs.target().as_str(), s.origin.as_str()),
        clock::now(),
        spec,
    )?;
    let (job, bytes) = checked(job, Origin::Flags)?;
    roster_refusal(&job, &bytes, key)?;
    route.job(&dirs, &job, &bytes, key, ctx.durability().enqueue_flush())?;
    crate::places::jobref::remember_on(ctx.state_dir(&s.root), &[dirs.target()], &req.id);
    let warnings = match route {
        Route::Folder => crate::requests::doctor::listener_warnings(&dirs, key),
        Route::Http(_) => Vec::new(),
    };
    let steer = interrupt.map(|old| {
        let status = cancel::sign(&dirs, &old, key, &s.origin, req.parent.as_ref())
            .and_then(|m| route.marker(&dirs, &old, key, &m));
        (old, status)
    });
    Ok(One {
        req,
        dirs,
        key: s.key,
        warnings,
        steer,
    })
}

/// Refuses (`VALIDATION_ERROR`) an `--interrupt` of `old` that names the
/// job being enqueued, `own`.
pub fn not_itself(old: &JobId, own: &JobId) -> Result<()> {
    if old != own {
        return Ok(());
    }
    Err(Error::validation(format!(
        "--interrupt {old}: a job cannot interrupt itself (it is the job being enqueued)"
    ))
    .hint("name the running job to stop, or give the new job another --job-id"))
}

/// The job `--interrupt TEXT` names on `dirs`' target: `running`, the one
/// job the target runs now ([`crate::places::jobref::running`]), or a job named as
/// any command names one, refused (`NOT_FOUND`) when neither the target nor
/// this machine knows it, unless `force` (`--force`). Checked before the
/// new job (`own`) is published, so a mistake queues nothing; `own` counts
/// as known, for the caller to refuse as a job interrupting itself.
fn interrupted(
    ctx: &Context,
    s: &Sender,
    dirs: &TargetDirs,
    text: &str,
    own: &JobId,
    force: bool,
) -> Result<JobId> {
    let refused = |mut e: Error| {
        e.message = format!("--interrupt {text}: {}", e.message);
        e
    };
    if text == crate::places::jobref::RUNNING {
        return crate::places::jobref::running(dirs, &s.key).map_err(refused);
    }
    let mut names = crate::places::jobref::Names::new(&s.key, ctx.state_dir(&s.root).ok());
    names.add_own(dirs.target(), own);
    let id = names.resolve(dirs, text).map_err(refused)?;
    if !force {
        names.check_known(dirs, &id, "--force").map_err(refused)?;
    }
    Ok(id)
}

/// What became of `--interrupt`'s cancel of `old`, for the answer of
/// enqueuing `id` (`named`: the text `--interrupt` was given): its JSON,
/// and a note for people — stdout carries only the new job's id.
pub fn steer_report(
    id: &JobId,
    old: &JobId,
    status: &Result<CancelStatus>,
    named: Option<&str>,
) -> (Value, String) {
    let status = match status {
        Ok(status) => status,
        Err(e) => {
            let json = json!({"jobId": old.as_str(), "status": "not_requested", "error": e.to_json()["error"]});
            return (
                json,
                format!("cancel of {old} not requested ({e}); {id} waits its turn"),
            );
        }
    };
    let mut json = status.to_json(old);
    let mut note = status.sentence(old);
    if !matches!(status, CancelStatus::Requested { .. }) {
        note.push_str(&format!("; {id} waits its turn"));
    }
    let running = matches!(
        status,
        CancelStatus::Requested {
            observed: Observed::Running,
            ..
        }
    );
    if named == Some(crate::places::jobref::LAST) && !running {
        // `last` is this machine's last job, not the one running: say so,
        // or the steer reads as done.
        note = format!(
            "--interrupt {} named {old}, the last job sent from here, which is not running: nothing running was interrupted ({note})",
            crate::places::jobref::LAST
        );
        json["lastNotRunning"] = json!(true);
    }
    (json, note)
}

/// `enqueue` to a target list: the same id to each target, each copy
/// signed for its target. Every target and id is checked before any copy
/// is published; a copy that cannot be published stops the rest, and the
/// error says which targets have the job. With `all`, a target folder
/// whose inbox cannot take a job (a file or a link in its place) is passed
/// over and named in the answer, so one unsound folder does not keep the
/// job from the sound ones.
fn fan_out(ctx: &Context, args: &EnqueueArgs, req: Request) -> Result<Copies> {
    // One job to stop, one listener to reach, one stream to follow: each
    // of these names a single target.
    for (given, flag) in [
        (args.interrupt.is_some(), "--interrupt"),
        (args.via.is_some(), "--via"),
        (args.waiting.follow, "--follow"),
    ] {
        if given {
            return Err(Error::validation(format!(
                "{flag} takes one target; --target {} names several",
                req.targets
            )));
        }
    }
    let s = Sender::load(ctx)?;
    let key = &s.key;
    let listed = s.targets(ctx, &req.targets)?;
    let mut targets = Vec::with_capacity(listed.len());
    let mut passed_over: Vec<(usize, TargetDirs, Error)> = Vec::new();
    let mut specs = Vec::with_capacity(listed.len());
    let mut names = Resolver::new(ctx, &s.root, key);
    // Where each target stands in the list, so answers keep its order.
    let mut at = Vec::with_capacity(listed.len());
    for (n, dirs) in listed.into_iter().enumerate() {
        let held = match submit::check_target(&dirs) {
            Ok(held) => held,
            Err(e) if crate::store::layout::is_all(&req.targets) => {
                passed_over.push((n, dirs, e));
                continue;
            }
            Err(e) => return Err(e),
        };
        submit::check_free(&dirs, &held, &req.id, key)?;
        specs.push(req.spec_for(&mut names, dirs.target())?);
        targets.push(dirs);
        at.push(n);
    }
    if targets.is_empty()
        && let Some((_, _, first)) = passed_over.first()
    {
        let each: Vec<String> = passed_over
            .iter()
            .map(|(_, d, e)| format!("{}: {}", d.target(), e.message))
            .collect();
        return Err(Error::new(
            first.code,
            format!(
                "--target all: no target folder can take the job ({})",
                each.join("; ")
            ),
        ));
    }
    let id = &req.id;
    let created = clock::now();
    let jobs = targets
        .iter()
        .zip(specs)
        .map(|(dirs, spec)| {
            sign_job(
                key,
                args.seal,
                (id.clone(), dirs.target().as_str(), s.origin.as_str()),
                created,
                spec,
            )
            .and_then(|job| checked(job, Origin::Flags))
            .and_then(|(job, bytes)| roster_refusal(&job, &bytes, key).map(|()| (job, bytes)))
        })
        .collect::<Result<Vec<_>>>()?;
    let flush = ctx.durability().enqueue_flush();
    for (n, (dirs, (job, bytes))) in targets.iter().zip(&jobs).enumerate() {
        if let Err(e) = submit::publish_bytes(dirs, job, bytes, key, flush) {
            return Err(partly(id, &targets[..n], &targets[n..], e));
        }
    }
    // Remembered on each target, so `last` names every copy.
    let each: Vec<_> = targets.iter().map(TargetDirs::target).collect();
    crate::places::jobref::remember_on(ctx.state_dir(&s.root), &each, id);
    let warnings = targets
        .iter()
        .flat_map(|d| crate::requests::doctor::listener_warnings(d, key))
        .collect();
    Ok(Copies {
        req,
        targets,
        at,
        passed_over,
        key: s.key,
        warnings,
    })
}

/// The error of a fan-out stopped by `e` part way: which targets have the
/// job and which do not, so nothing is left half done unsaid.
fn partly(id: &JobId, done: &[TargetDirs], not: &[TargetDirs], e: Error) -> Error {
    let names = |d: &[TargetDirs]| {
        d.iter()
            .map(|d| d.target().as_str())
            .collect::<Vec<_>>()
            .join(",")
    };
    if done.is_empty() {
        return Error::new(
            e.code,
            format!("{id} was published to no target: {}", e.message),
        );
    }
    Error::new(
        e.code,
        format!(
            "{id} was published to {} but not to {}: {}",
            names(done),
            names(not),
            e.message
        ),
    )
    .hint(format!(
        "publish the rest with --job-id {id} --target {}, or cancel the copies with cancel --target {} --job-id {id}",
        names(not),
        names(done)
    ))
}
