//! `result` and `status` on an object-store root: what a sender can see of
//! a job, or of each target, from the objects alone: the inbox, the jobs
//! a listener shows running (`running/`), markers, results, and the
//! listener's heartbeat.

use std::time::{Duration, Instant};

use serde_json::json;

use super::Lane;
use super::emit;
use crate::base::error::{Error, Result};
use crate::base::exit;
use crate::front::cli::{ResultArgs, StatusArgs};
use crate::front::config::Context;
use crate::requests::lane::{self, Seen};
use crate::store::port::Shelves;
use crate::store::port::bucket::BucketTarget;
use crate::trust::Key;
use crate::view;

/// How many queued ids a line of `status` names (`--json` has them all).
const SHOWN: usize = 5;

/// Runs `result` on the root `root`.
/// `limit`: the `--wait-timeout`, parsed.
pub fn result(ctx: &Context, root: &str, args: &ResultArgs, limit: Option<Duration>) -> Result<u8> {
    if crate::store::layout::is_target_list(&args.target) {
        return each(ctx, root, args, limit);
    }
    super::jobref::checked(&args.job_id)?;
    let lane = Lane::load(ctx, root)?;
    let t = lane.target(ctx, &args.target)?;
    let id = super::jobref::resolve(ctx, &lane, &t, &args.job_id)?;
    let start = Instant::now();
    let mut follower =
        (args.waiting.follow).then(|| super::logs::Follower::new(&t, &id, ctx.json()));
    let mut pace = super::wait::Pace::start();
    let seen = loop {
        let seen = lane::look(&t, &id, &lane.key)?;
        if let Some(f) = follower.as_mut() {
            f.saw(&seen)?;
        }
        let waiting = matches!(seen, Seen::Queued | Seen::Taken);
        if !args.waiting.wait || !waiting || limit.is_some_and(|l| start.elapsed() >= l) {
            break seen;
        }
        let left = limit.map(|l| l.saturating_sub(start.elapsed()));
        std::thread::sleep(pace.next(left));
    };
    let state = match seen {
        Seen::Done(o) => {
            let human = if args.waiting.follow {
                view::result::followed(&o)
            } else {
                view::result::text(&o)
            };
            emit(ctx, &view::result::json(&o), &human);
            return Ok(o.wait_exit_status());
        }
        Seen::Forged(why) => {
            return Err(super::unverified(&t, &id, &why));
        }
        Seen::Nothing => {
            return Err(Error::not_found(format!(
                "no job {id} on {} (inbox, archive or results of {})",
                t.target(),
                t.shown()
            )));
        }
        Seen::Queued => "queued",
        Seen::Taken => "running",
    };
    let mut out = json!({"jobId": id.as_str(), "target": t.target().as_str(), "state": state});
    let mut human = format!("{id} has no result on {} yet: it is {state}", t.target());
    if args.waiting.wait {
        out["timedOut"] = json!(true);
        human.push_str(" (timed out waiting)");
    } else {
        human.push_str("; add --wait to wait for it");
    }
    if ctx.json() {
        crate::base::out::json(&out);
    } else {
        crate::note!("fleet-dispatch: {human}");
    }
    Ok(exit::UNFINISHED)
}

/// `result` over a target list: one line (or JSON object) per target, in
/// the order given, and the worst status of them ([`super::each`]).
fn each(ctx: &Context, root: &str, args: &ResultArgs, limit: Option<Duration>) -> Result<u8> {
    if args.waiting.follow {
        return Err(Error::validation(format!(
            "--follow streams one job's output; --target {} names several",
            args.target
        ))
        .hint("follow one target: fleet-dispatch logs --target T --job-id ID --follow"));
    }
    let id = super::job_id(root, &args.job_id)?;
    let lane = Lane::load(ctx, root)?;
    let targets = lane.targets(ctx, &args.target)?;
    let wait = args.waiting.wait.then_some(limit);
    let answers = super::each::results(&lane, &targets, &id, wait);
    let (json, human) = view::result::each(&answers);
    emit(ctx, &json, &human);
    Ok(exit::worst(answers.iter().map(|a| a.status)))
}

/// Runs `status` on the root `root`: per target, the jobs queued, the
/// cancels pending and the newest results (by id).
pub fn status(ctx: &Context, root: &str, args: &StatusArgs) -> Result<u8> {
    let lane = Lane::load(ctx, root)?;
    let targets = match &args.target {
        Some(t) if !args.all => lane.targets(ctx, t)?,
        _ => lane.targets(ctx, "all").or_else(|e| {
            // No target yet is an empty status, not an error.
            if e.code == crate::base::error::Code::NotFound {
                Ok(Vec::new())
            } else {
                Err(e)
            }
        })?,
    };
    let mut each = Vec::new();
    let mut lines = vec![format!("root {root} (object store)")];
    for t in &targets {
        let (one, line) = target_status(t, &lane.key, args.results)?;
        each.push(one);
        lines.push(line);
    }
    let out = json!({"root": root, "store": "s3", "targets": each});
    emit(ctx, &out, &lines.join("\n"));
    Ok(exit::SUCCESS)
}

/// What `status` says of the target `t` of a bucket, judged with `key`,
/// naming the newest `results_shown` results: its JSON entry and its line.
fn target_status(
    t: &BucketTarget,
    key: &Key,
    results_shown: usize,
) -> Result<(serde_json::Value, String)> {
    let seen = lane::target_seen(t, key)?;
    fn list(v: &[crate::base::names::JobId]) -> Vec<&str> {
        v.iter().map(|i| i.as_str()).collect()
    }
    let (running, queued) = (&seen.running, &seen.queued);
    let line = format!(
        "{}: listener {}{}; {} queued{}; {} cancel(s) pending; {} result(s)",
        seen.target,
        seen.listener,
        match running.len() {
            0 => String::new(),
            _ => format!("; running {}", list(running).join(", ")),
        },
        queued.len(),
        match queued.len() {
            0 => String::new(),
            n if n <= SHOWN => format!(" ({})", list(queued).join(", ")),
            n => format!(
                " ({}, and {} more)",
                list(&queued[..SHOWN]).join(", "),
                n - SHOWN
            ),
        },
        seen.cancels.len(),
        seen.results.len()
    );
    Ok((seen.to_json(results_shown), line))
}
