//! One small module per subcommand; each only wires the library's pieces
//! together and prints what [`crate::view`] renders. [`dispatch`] routes a
//! parsed command line; what two or more commands share (printing a
//! result or why there is none, a flag's duration, the answers over a
//! target list) is here, so no command imports another.

mod cancel;
mod config;
mod demo;
mod doctor;
mod enqueue;
mod identity;
mod keygen;
mod listen;
mod logs;
mod mcp;
mod report;
mod result;
mod roster;
mod service;
mod status;
mod sweep;
mod verify_marker;

use std::time::Duration;

use serde_json::Value;

use crate::base::error::Result;
use crate::base::exit;
use crate::base::names::JobId;
use crate::front::cli::{Cli, Cmd};
use crate::front::config::Context;
use crate::protocol::doc::Outcome;
use crate::requests::wait::Waited;
use crate::store::layout::TargetDirs;
use crate::trust::Key;
use crate::view;

pub use crate::view::result::{Answer, NoResult, Unfinished};

/// Runs the command; returns the process exit status.
pub fn dispatch(cli: Cli) -> Result<u8> {
    let ctx = Context::load(cli.global)?;
    match cli.command {
        Cmd::Keygen(a) => keygen::run(&ctx, a),
        Cmd::Identity(a) => identity::run(&ctx, a),
        Cmd::Roster(a) => roster::run(&ctx, a),
        Cmd::Enqueue(a) => enqueue::run(&ctx, a),
        Cmd::Listen(a) => listen::run(&ctx, a),
        Cmd::Result(a) => result::run(&ctx, a),
        Cmd::Logs(a) => logs::run(&ctx, a),
        Cmd::Cancel(a) => cancel::run(&ctx, a),
        Cmd::Status(a) => status::run(&ctx, a),
        Cmd::Report(a) => report::run(&ctx, a),
        Cmd::Sweep(a) => sweep::run(&ctx, a),
        Cmd::VerifyMarker(a) => verify_marker::run(&ctx, a),
        Cmd::Demo(a) => demo::run(&ctx, a),
        Cmd::Config(a) => config::run(&ctx, a),
        Cmd::Doctor(a) => doctor::run(&ctx, a),
        Cmd::Service(a) => service::run(&ctx, a),
        Cmd::Mcp(a) => mcp::run(&ctx, a),
    }
}

/// Prints `json` (with `--json`) or the human lines.
pub fn emit(ctx: &Context, json: &serde_json::Value, human: &str) {
    if ctx.json() {
        crate::base::out::json(json);
    } else if !human.is_empty() {
        crate::base::out::line(human);
    }
}

/// Parses an optional duration flag.
pub fn duration_flag(v: &Option<String>, flag: &str) -> Result<Option<Duration>> {
    v.as_deref()
        .map(|s| {
            crate::base::clock::parse_duration(s).map_err(|e| {
                crate::base::error::Error::validation(format!("{flag}: {}", e.message))
            })
        })
        .transpose()
}

/// The follower of `--wait --follow`: the job's output as it is, or with
/// `--json` as JSON lines (`{"stream", "text"}`) before the command's own
/// document, so stdout stays JSON.
pub fn follower(ctx: &Context, dirs: &TargetDirs, id: &JobId) -> crate::places::output::Follower {
    let f = crate::places::output::Follower::new(dirs, id, crate::places::output::Streams::Both);
    if ctx.json() { f.json_lines() } else { f }
}

/// The result a wait came to; or, for a wait that ended without one (the
/// job was rejected, or `limit` ran out), the exit status after reporting
/// it through [`no_result`] with `out`.
pub fn with_result(
    ctx: &Context,
    dirs: &TargetDirs,
    id: &JobId,
    key: &Key,
    out: &Value,
    waited: Waited,
    limit: Option<Duration>,
) -> std::result::Result<Box<Outcome>, u8> {
    waited.map_err(|no| {
        let no = no.map(|why| Unfinished { why, limit });
        no_result(ctx, dirs, id, key, out.clone(), no)
    })
}

/// Reports a job without a result — rejected by its target, or not
/// finished — adding to `out` for `--json`; returns the exit status.
pub fn no_result(
    ctx: &Context,
    dirs: &TargetDirs,
    id: &JobId,
    key: &Key,
    mut out: Value,
    no: NoResult,
) -> u8 {
    let human = view::result::no_result(dirs, id, key, &mut out, &no);
    if ctx.json() {
        crate::base::out::json(&out);
    } else {
        crate::note!("fleet-dispatch: {human}");
    }
    no.exit_status()
}

/// The job `text` names on `dirs`' target: a full id, `last`, or a unique
/// prefix of a job that verifies with `key` ([`crate::places::jobref`]).
pub fn job_ref(
    ctx: &Context,
    root: &std::path::Path,
    dirs: &TargetDirs,
    key: &Key,
    text: &str,
) -> Result<JobId> {
    crate::places::jobref::resolve(dirs, ctx.state_dir(root).ok().as_deref(), key, text)
}

/// Prints the answers of a command over several targets, one line each
/// (or one JSON array), and returns the worst status ([`exit::worst`]).
pub fn emit_each(ctx: &Context, answers: &[Answer]) -> u8 {
    let (json, human) = view::result::each(answers);
    emit(ctx, &json, &human);
    exit::worst(answers.iter().map(|a| a.status))
}

/// The result of `id` on each target of `targets` (with the id each names,
/// or why none), one [`Answer`] each. `wait` waits for each in turn, all
/// within one `--wait-timeout` (`Some(None)`: no limit); a target that
/// never answered says so, with what is wrong with its listener.
pub fn results_each(
    targets: &[(TargetDirs, Result<JobId>)],
    key: &Key,
    wait: Option<Option<Duration>>,
) -> Vec<Answer> {
    let start = std::time::Instant::now();
    let waited = wait.map(Option::unwrap_or_default);
    let mut answers = Vec::with_capacity(targets.len());
    for (dirs, id) in targets {
        let left = wait.map(|limit| limit.map(|l| l.saturating_sub(start.elapsed())));
        let answer = match id {
            Ok(id) => result_of(dirs, id, key, left)
                .map(|answered| Answer::of(dirs, id, key, answered, waited)),
            Err(e) => Err(e.clone()),
        };
        answers.push(answer.unwrap_or_else(|e| Answer::failed(dirs, &e)));
    }
    answers
}

/// What became of `id` on `dirs`' target: waited for (`wait`, with its
/// limit), or looked at once ([`crate::requests::wait::at_once`]).
fn result_of(
    dirs: &TargetDirs,
    id: &JobId,
    key: &Key,
    wait: Option<Option<Duration>>,
) -> Result<Result<Waited>> {
    let Some(left) = wait else {
        let (answered, note) = crate::requests::wait::at_once(dirs, id, key)?;
        if let Some(note) = note {
            crate::note!("fleet-dispatch: {}: {note}", dirs.target());
        }
        return Ok(answered);
    };
    crate::requests::wait::for_result(dirs, id, key, left, true, None).map(Ok)
}
