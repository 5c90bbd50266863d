//! `enqueue`: sign a job and publish it into the target's inbox; with
//! `--interrupt`, stop-and-steer; with `--wait`, wait for its result. A
//! target list (`A,B`, `all`) fans the job out, one copy per target;
//! `--batch` takes one job per line. The request is built, checked and
//! sent by [`crate::front::send`]; here the answer is printed, and waited for.

mod batch;

use serde_json::{Value, json};

use crate::base::error::Result;
use crate::base::exit;
use crate::front::cli::EnqueueArgs;
use crate::front::config::Context;
use crate::front::send::job::{self, Copies, Enqueued, One};
use crate::front::send::request;
use crate::protocol::doc::Priority;
use crate::requests::wait;

/// Runs `enqueue`.
pub fn run(ctx: &Context, args: EnqueueArgs) -> Result<u8> {
    if let Some(file) = &args.batch {
        return batch::run(ctx, &args, file);
    }
    if let Some(root) = ctx.s3_root() {
        return crate::front::bucket::enqueue::run(ctx, &root, &args);
    }
    let req = request::from_flags(ctx, &args)?;
    let wait_limit = super::duration_flag(&args.waiting.wait_timeout, "--wait-timeout")?;
    match job::send(ctx, &args, req)? {
        Enqueued::One(one) => answer_one(ctx, &args, *one, wait_limit),
        Enqueued::Copies(copies) => answer_copies(ctx, &args, *copies, wait_limit),
    }
}

/// Prints what became of a job sent to one target, and its result with
/// `--wait`.
fn answer_one(
    ctx: &Context,
    args: &EnqueueArgs,
    one: One,
    wait_limit: Option<std::time::Duration>,
) -> Result<u8> {
    let One { req, dirs, key, .. } = &one;
    let id = &req.id;
    let mut out = json!({
        "jobId": id.as_str(),
        "target": dirs.target().as_str(),
        "path": dirs.job_file(id).display().to_string(),
        "resultPath": dirs.result_file(id).display().to_string(),
        "priority": priority_word(req.spec.header.priority),
    });
    if let Some(p) = &req.parent {
        out["parentJobId"] = json!(p.as_str());
    }
    warn(ctx, &mut out, &one.warnings);
    // Stdout carries only the answer, the id (`id=$(fleet-dispatch enqueue
    // …)`); what became of the interrupt is a note on stderr.
    if let Some((old, status)) = &one.steer {
        let (json, note) = job::steer_report(id, old, status, args.interrupt.as_deref());
        out["interrupt"] = json;
        if !ctx.json() {
            crate::note!("fleet-dispatch: {note}");
        }
    }
    if !args.waiting.wait {
        super::emit(ctx, &out, id.as_str());
        return Ok(exit::SUCCESS);
    }
    if !ctx.json() {
        crate::base::out::line(id.as_str());
    }
    let mut follower = args.waiting.follow.then(|| super::follower(ctx, dirs, id));
    let waited = wait::for_result(dirs, id, key, wait_limit, ctx.json(), follower.as_mut())?;
    if let Some(f) = follower.as_mut() {
        // A character cut short at the very end of the output.
        let _ = f.end_json(&mut std::io::stdout());
    }
    let limit = Some(wait_limit.unwrap_or_default());
    let o = match super::with_result(ctx, dirs, id, key, &out, waited, limit) {
        Ok(o) => o,
        Err(status) => return Ok(status),
    };
    if ctx.json() {
        out["result"] = crate::view::result::json(&o);
        crate::base::out::line(&out.to_string());
    } else if args.waiting.follow {
        crate::base::out::line(&crate::view::result::followed(&o));
    } else {
        crate::base::out::line(&crate::view::result::text(&o));
    }
    Ok(o.wait_exit_status())
}

/// Prints what became of a job sent to each target of a list (one passed
/// over by `all` named, with its status), and each copy's result with
/// `--wait`.
fn answer_copies(
    ctx: &Context,
    args: &EnqueueArgs,
    c: Copies,
    wait_limit: Option<std::time::Duration>,
) -> Result<u8> {
    let id = &c.req.id;
    let copies: Vec<Value> = c
        .targets
        .iter()
        .map(|dirs| {
            json!({
                "target": dirs.target().as_str(),
                "path": dirs.job_file(id).display().to_string(),
                "resultPath": dirs.result_file(id).display().to_string(),
            })
        })
        .collect();
    let passed_over: Vec<(usize, super::Answer)> = c
        .passed_over
        .iter()
        .map(|(n, d, e)| (*n, super::Answer::failed(d, e)))
        .collect();
    let mut out = json!({
        "jobId": id.as_str(),
        "targets": c.targets.iter().map(|d| d.target().as_str()).collect::<Vec<_>>(),
        "copies": copies,
        "priority": priority_word(c.req.spec.header.priority),
    });
    if let Some(p) = &c.req.parent {
        out["parentJobId"] = json!(p.as_str());
    }
    if !passed_over.is_empty() {
        out["passedOver"] = passed_over.iter().map(|(_, a)| a.json.clone()).collect();
    }
    warn(ctx, &mut out, &c.warnings);
    if !args.waiting.wait {
        super::emit(ctx, &out, id.as_str());
        if !ctx.json() {
            for (_, a) in &passed_over {
                crate::note!("fleet-dispatch: {}; no copy was sent there", a.line);
            }
        }
        return Ok(exit::worst(passed_over.iter().map(|(_, a)| a.status)));
    }
    let each: Vec<_> = c.targets.into_iter().map(|d| (d, Ok(id.clone()))).collect();
    let mut answers: Vec<(usize, super::Answer)> =
        c.at.into_iter()
            .zip(super::results_each(&each, &c.key, Some(wait_limit)))
            .chain(passed_over)
            .collect();
    answers.sort_by_key(|(n, _)| *n);
    let answers: Vec<super::Answer> = answers.into_iter().map(|(_, a)| a).collect();
    if ctx.json() {
        out["results"] = answers.iter().map(|a| a.json.clone()).collect();
        crate::base::out::line(&out.to_string());
        return Ok(exit::worst(answers.iter().map(|a| a.status)));
    }
    crate::base::out::line(id.as_str());
    Ok(super::emit_each(ctx, &answers))
}

/// Adds what `doctor` warns of a target's listener ([`crate::requests::doctor::listener_warnings`])
/// to the answer `out` as `warnings`, and says it on stderr: the job is
/// queued, but it will wait, or be refused, and the sender should know
/// now rather than at the timeout.
fn warn(ctx: &Context, out: &mut Value, warnings: &[crate::requests::doctor::Check]) {
    if warnings.is_empty() {
        return;
    }
    out["warnings"] = json!(warnings);
    if ctx.json() {
        return;
    }
    for w in warnings {
        let target = w.target.as_deref().unwrap_or_default();
        let hint = w
            .hint
            .as_deref()
            .map(|h| format!("\nhint: {h}"))
            .unwrap_or_default();
        crate::note!(
            "fleet-dispatch: warning: {target}: {}; the job is queued{hint}",
            w.message
        );
    }
}

/// The word for a priority in JSON.
fn priority_word(p: Priority) -> &'static str {
    if p == Priority::High {
        "high"
    } else {
        "normal"
    }
}
