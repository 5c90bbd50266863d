//! One small module per subcommand; each only wires the library's pieces
//! together and prints. [`dispatch`] routes a parsed command line; the
//! printing two or more commands share (a result, a flag's duration) is
//! here, so no command imports another.

mod cancel;
mod config;
mod demo;
mod doctor;
mod enqueue;
mod keygen;
mod listen;
mod logs;
mod result;
mod status;
mod sweep;
mod verify_marker;

use crate::cli::{Cli, Cmd};
use crate::clock;
use crate::config::Context;
use crate::doc::Outcome;
use crate::error::Result;
use crate::exit;
use crate::key::Key;
use crate::layout::TargetDirs;
use crate::names::JobId;
use crate::observe::Observed;
use crate::rejected::Reason;
use serde_json::{Value, json};

/// Runs the command; returns the process exit status.
pub fn dispatch(cli: Cli) -> Result<u8> {
    let ctx = Context::load(cli.global)?;
    match cli.command {
        Cmd::Keygen(a) => keygen::run(&ctx, a),
        Cmd::Enqueue(a) => enqueue::run(&ctx, a),
        Cmd::Listen(a) => listen::run(&ctx, a),
        Cmd::Result(a) => result::run(&ctx, a),
        Cmd::Logs(a) => logs::run(&ctx, a),
        Cmd::Cancel(a) => cancel::run(&ctx, a),
        Cmd::Status(a) => status::run(&ctx, a),
        Cmd::Sweep(a) => sweep::run(&ctx, a),
        Cmd::VerifyMarker(a) => verify_marker::run(&ctx, a),
        Cmd::Demo(a) => demo::run(&ctx, a),
        Cmd::Config(a) => config::run(&ctx, a),
        Cmd::Doctor(a) => doctor::run(&ctx, a),
    }
}

/// Prints `json` (with `--json`) or the human lines.
pub fn emit(ctx: &Context, json: &serde_json::Value, human: &str) {
    if ctx.json() {
        crate::out::line(&json.to_string());
    } else if !human.is_empty() {
        crate::out::line(human);
    }
}

/// Parses an optional duration flag.
pub fn duration_flag(v: &Option<String>, flag: &str) -> Result<Option<std::time::Duration>> {
    v.as_deref()
        .map(|s| {
            crate::clock::parse_duration(s)
                .map_err(|e| crate::error::Error::validation(format!("{flag}: {}", e.message)))
        })
        .transpose()
}

/// The JSON form of a verified result, `detail` parsed.
pub fn result_json(o: &Outcome) -> Value {
    json!({
        "jobId": o.job_id,
        "target": o.target,
        "ok": o.ok,
        "exitCode": o.exit_code,
        "error": o.error,
        "outcome": o.termination().describe(o.ok),
        "startedAt": o.started_at,
        "finishedAt": o.finished_at,
        "detail": o.detail_value(),
        "verified": true,
    })
}

/// The human form of a verified result.
pub fn result_human(o: &Outcome) -> String {
    let d = o.detail();
    let word = o.termination().describe(o.ok);
    let mut s = format!(
        "{} on {}: {} (exit {})",
        o.job_id,
        o.target,
        crate::out::paint(word, crate::out::outcome_tone(word)),
        o.exit_code
    );
    if let Some(ms) = d.duration_ms {
        s.push_str(&format!(
            " after {}",
            clock::human(std::time::Duration::from_millis(ms))
        ));
    }
    if let Some(sig) = &d.signal {
        s.push_str(&format!(", ended by {sig}"));
    }
    if let Some(m) = &d.marker {
        s.push_str(&format!(", cancel from {}", m.origin));
    }
    if let Some(dep) = &d.dependency {
        s.push_str(&format!(
            "\n  never started: it waited for {} on {}, which ended {}",
            dep.job_id, dep.target, dep.ended
        ));
    }
    if let Some(e) = &d.spawn_error {
        s.push_str(&format!("\n  {e}"));
    }
    for (name, tail, total) in [
        ("stdout", &d.stdout_tail, d.stdout_bytes),
        ("stderr", &d.stderr_tail, d.stderr_bytes),
    ] {
        let Some(t) = tail.as_deref().filter(|t| !t.is_empty()) else {
            continue;
        };
        // The result carries only the end of each stream; say so, and
        // where the rest is, when there was more.
        let header = match total {
            Some(n) if n > t.len() as u64 => format!(
                "{name}: the last {} of {n} bytes; all of it: fleet-dispatch logs --target {} --job-id {}",
                t.len(),
                o.target,
                o.job_id
            ),
            _ => name.to_string(),
        };
        s.push_str(&format!("\n--- {header} ---\n{}", t.trim_end()));
    }
    s
}

/// Why a job has no result to show.
pub enum NoResult {
    /// The target's listener rejected the job file.
    Rejected(Box<Reason>),
    /// Still queued, running or not seen; with the limit when a wait ran out.
    Unfinished(Observed, Option<std::time::Duration>),
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
    waited: crate::wait::Waited,
    limit: Option<std::time::Duration>,
) -> std::result::Result<Box<Outcome>, u8> {
    use crate::wait::Waited;
    let why = match waited {
        Waited::Done(o) => return Ok(o),
        Waited::Rejected(r) => NoResult::Rejected(r),
        Waited::TimedOut(seen) => NoResult::Unfinished(seen, limit),
    };
    Err(no_result(ctx, dirs, id, key, out.clone(), why))
}

/// Reports a job without a result — rejected by its target, or not
/// finished — adding to `out` for `--json`; returns the exit status.
pub fn no_result(
    ctx: &Context,
    dirs: &TargetDirs,
    id: &JobId,
    key: &Key,
    mut out: Value,
    why: NoResult,
) -> u8 {
    let (status, human) = match why {
        NoResult::Rejected(r) => {
            out["state"] = json!("rejected");
            out["rejected"] = json!(r);
            (
                exit::REJECTED,
                crate::observe::rejection_sentence(dirs, id, &r, key),
            )
        }
        NoResult::Unfinished(seen, limit) => {
            out["state"] = json!(seen.word());
            let msg = match limit {
                Some(l) => {
                    out["timedOut"] = json!(true);
                    crate::wait::timed_out_message(id, &seen, l)
                }
                None => format!(
                    "{id} has no result on {} yet: it is {}; add --wait to wait for it",
                    dirs.target(),
                    seen.word()
                ),
            };
            (exit::UNFINISHED, msg)
        }
    };
    if ctx.json() {
        crate::out::line(&out.to_string());
    } else {
        eprintln!("fleet-dispatch: {human}");
    }
    status
}

/// The job `text` names on `dirs`' target: a full id, `last`, or a unique
/// prefix ([`crate::jobref`]).
pub fn job_ref(
    ctx: &Context,
    root: &std::path::Path,
    dirs: &TargetDirs,
    text: &str,
) -> Result<JobId> {
    crate::jobref::resolve(dirs, ctx.state_dir(root).ok().as_deref(), text)
}
