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
mod service;
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
        Cmd::Service(a) => service::run(&ctx, a),
    }
}

/// Prints `json` (with `--json`) or the human lines.
pub fn emit(ctx: &Context, json: &serde_json::Value, human: &str) {
    if ctx.json() {
        crate::out::json(json);
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
    result_text(o, false)
}

/// [`result_human`] after its job's output was followed (`--wait
/// --follow`): without the tails of the streams the follow showed whole,
/// so no line is printed twice. A tail whose log lost part of the stream
/// is kept: it holds what the follow could not show.
pub fn result_followed(o: &Outcome) -> String {
    result_text(o, true)
}

fn result_text(o: &Outcome, followed: bool) -> String {
    let d = o.detail();
    let word = o.termination().describe(o.ok);
    let mut s = format!(
        "{} on {}: {} ({})",
        o.job_id,
        o.target,
        crate::out::paint(word, crate::out::outcome_tone(word)),
        o.exit_phrase()
    );
    if let Some(ms) = d.duration_ms.filter(|_| !o.started_at.is_empty()) {
        s.push_str(&format!(
            " after {}",
            clock::human(std::time::Duration::from_millis(ms))
        ));
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
    for (name, tail, total, logged) in [
        ("stdout", &d.stdout_tail, d.stdout_bytes, d.stdout_log_bytes),
        ("stderr", &d.stderr_tail, d.stderr_bytes, d.stderr_log_bytes),
    ] {
        let Some(t) = tail.as_deref().filter(|t| !t.is_empty()) else {
            continue;
        };
        if followed && logged.is_none() {
            continue;
        }
        // The result carries only the end of each stream; say so, and
        // where the rest is, when there was more, and when the log lost
        // some of it.
        let header = match (total, logged) {
            (Some(n), Some(k)) => format!(
                "{name}: the last {} of {n} bytes; its log holds only the first {k}: writing it failed (a full disk, or something else in the log's place)",
                t.len()
            ),
            (Some(n), None) if n > t.len() as u64 => format!(
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

/// The follower of `--wait --follow`: the job's output as it is, or with
/// `--json` as JSON lines (`{"stream", "text"}`) before the command's own
/// document, so stdout stays JSON.
pub fn follower(ctx: &Context, dirs: &TargetDirs, id: &JobId) -> crate::output::Follower {
    let f = crate::output::Follower::new(dirs, id, crate::output::Streams::Both);
    if ctx.json() { f.json_lines() } else { f }
}

/// Why a job has no result to show.
pub enum NoResult {
    /// The target's listener rejected the job file.
    Rejected(Box<Reason>),
    /// Still queued, running or not seen, and why; with the limit when a
    /// wait ran out.
    Unfinished(Box<crate::wait::Why>, Option<std::time::Duration>),
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
        Waited::TimedOut(why) => NoResult::Unfinished(why, limit),
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
        NoResult::Unfinished(why, limit) => {
            why.add_json(&mut out);
            let msg = match limit {
                Some(l) => {
                    out["timedOut"] = json!(true);
                    why.timed_out(id, l)
                }
                None => why.no_result(id),
            };
            (exit::UNFINISHED, msg)
        }
    };
    if ctx.json() {
        crate::out::json(&out);
    } else {
        eprintln!("fleet-dispatch: {human}");
    }
    status
}

/// The job `text` names on `dirs`' target: a full id, `last`, or a unique
/// prefix of a job that verifies with `key` ([`crate::jobref`]).
pub fn job_ref(
    ctx: &Context,
    root: &std::path::Path,
    dirs: &TargetDirs,
    key: &Key,
    text: &str,
) -> Result<JobId> {
    crate::jobref::resolve(dirs, ctx.state_dir(root).ok().as_deref(), key, text)
}

/// One target's part of a command over several targets: its exit status,
/// its JSON, and its one human line.
pub struct Answer {
    /// This target's exit status, combined by [`exit::worst`].
    pub status: u8,
    /// This target's JSON object (with `target`).
    pub json: Value,
    /// This target's line.
    pub line: String,
}

impl Answer {
    /// The answer for a target where the command failed with `e`.
    pub fn failed(dirs: &TargetDirs, e: &crate::error::Error) -> Answer {
        Answer {
            status: exit::of(e.code),
            json: json!({"target": dirs.target().as_str(), "error": e.to_json()["error"]}),
            line: format!("{}: {}", dirs.target(), e.message),
        }
    }
}

/// Prints the answers of a command over several targets, one line each
/// (or one JSON array), and returns the worst status ([`exit::worst`]).
pub fn emit_each(ctx: &Context, answers: &[Answer]) -> u8 {
    let json = Value::Array(answers.iter().map(|a| a.json.clone()).collect());
    let human: Vec<&str> = answers.iter().map(|a| a.line.as_str()).collect();
    emit(ctx, &json, &human.join("\n"));
    exit::worst(answers.iter().map(|a| a.status))
}

/// The result of `id` on each target of `targets` (with the id each names,
/// or why none), one [`Answer`] each. `wait` waits for each in turn, all
/// within one `--wait-timeout` (`Some(None)`: no limit); a target that
/// never answered says so, with what is wrong with its listener.
pub fn results_each(
    targets: &[(TargetDirs, Result<JobId>)],
    key: &Key,
    wait: Option<Option<std::time::Duration>>,
) -> Vec<Answer> {
    use crate::wait::Waited;
    let start = std::time::Instant::now();
    let mut answers = Vec::with_capacity(targets.len());
    for (dirs, id) in targets {
        let id = match id {
            Ok(id) => id,
            Err(e) => {
                answers.push(Answer::failed(dirs, e));
                continue;
            }
        };
        let mut why = None;
        let seen = match wait {
            Some(limit) => {
                let left = limit.map(|l| l.saturating_sub(start.elapsed()));
                match crate::wait::for_result(dirs, id, key, left, true, None) {
                    Ok(Waited::Done(o)) => Observed::Done(o),
                    Ok(Waited::Rejected(r)) => Observed::Rejected(r),
                    Ok(Waited::TimedOut(w)) => {
                        let seen = w.seen.clone();
                        why = Some(w);
                        seen
                    }
                    Err(e) => {
                        answers.push(Answer::failed(dirs, &e));
                        continue;
                    }
                }
            }
            None => match crate::observe::look(dirs, id, key) {
                Ok(look) => {
                    if let Some(forged) = &look.ignored {
                        let note = forged.note(id, &look.state);
                        eprintln!("fleet-dispatch: {}: {note}", dirs.target());
                    }
                    look.state
                }
                Err(e) => {
                    answers.push(Answer::failed(dirs, &e));
                    continue;
                }
            },
        };
        answers.push(answer_of(dirs, id, key, seen, why, wait));
    }
    answers
}

/// One target's [`Answer`] from what was seen of `id` there, and why it
/// has no result when a wait ran out.
fn answer_of(
    dirs: &TargetDirs,
    id: &JobId,
    key: &Key,
    seen: Observed,
    why: Option<Box<crate::wait::Why>>,
    wait: Option<Option<std::time::Duration>>,
) -> Answer {
    let target = dirs.target().as_str();
    let mut json = json!({"jobId": id.as_str(), "target": target, "state": seen.word()});
    let (status, line) = match seen {
        Observed::Done(o) => {
            let line = result_human(&o)
                .lines()
                .next()
                .unwrap_or_default()
                .to_string();
            json = result_json(&o);
            (o.wait_exit_status(), line)
        }
        Observed::ForgedResult(forged) => {
            return Answer::failed(dirs, &forged.refusal(id));
        }
        Observed::Rejected(r) => {
            let line = crate::observe::rejection_sentence(dirs, id, &r, key);
            json["rejected"] = json!(r);
            (exit::REJECTED, line)
        }
        Observed::NotSeen if wait.is_none() => (
            exit::NOT_FOUND,
            format!("no job {id} on {target} yet (not in its inbox, running or results)"),
        ),
        seen => {
            // Which target never answered, and why it may not.
            let why = why.unwrap_or_else(|| Box::new(crate::wait::Why::now(dirs, id, key, seen)));
            why.add_json(&mut json);
            let line = match wait {
                Some(limit) => {
                    json["timedOut"] = json!(true);
                    why.timed_out(id, limit.unwrap_or_default())
                }
                None => format!("{id} has no result on {target} yet: it is {}", why.state()),
            };
            (exit::UNFINISHED, format!("{target}: {line}"))
        }
    };
    Answer { status, json, line }
}
