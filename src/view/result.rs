//! A job's result, and why a job has none, rendered: `result`, `enqueue
//! --wait`, `cancel --wait` and `logs` print a verified result
//! ([`text`], [`json()`]); a job rejected or unfinished is said so
//! ([`no_result`]); over a target list each target is one [`Answer`].
//! The state and the exit status are decided by
//! [`crate::places::observe::Observed::answer`]; here they are only worded.

use std::time::Duration;

use serde_json::{Value, json};

use crate::base::clock;
use crate::base::error::{Code, Error};
use crate::base::exit;
use crate::base::names::JobId;
use crate::places::observe::{self, Observed};
use crate::protocol::doc::Outcome;
use crate::requests::wait::Why;
use crate::store::layout::TargetDirs;
use crate::trust::Key;

use super::{Tone, paint};

/// The JSON form of a verified result, `detail` parsed.
pub fn json(o: &Outcome) -> Value {
    let mut v = json!({
        "jobId": o.job_id,
        "target": o.target,
        "ok": o.ok,
        "exitCode": o.exit_code,
        "error": o.error,
        "outcome": o.termination().ending(o.ok),
        "startedAt": o.started_at,
        "finishedAt": o.finished_at,
        "detail": o.detail_value(),
        "verified": true,
    });
    // A sealed job's detail, not opened here, is shown as a word.
    if o.sealed_here() {
        v["detail"] = json!("sealed");
    }
    // In the roster lane: which machine's key signed it.
    if let Some(id) = &o.key_id {
        v["signedBy"] = json!({"machine": o.target, "keyId": id, "alg": o.alg});
    }
    v
}

/// The human form of a verified result.
pub fn text(o: &Outcome) -> String {
    result_text(o, false)
}

/// [`text`] after its job's output was followed (`--wait --follow`):
/// without the tails of the streams the follow showed whole, so no line is
/// printed twice. A tail whose log lost part of the stream is kept: it
/// holds what the follow could not show.
pub fn followed(o: &Outcome) -> String {
    result_text(o, true)
}

fn result_text(o: &Outcome, followed: bool) -> String {
    let d = o.detail();
    let ending = o.termination().ending(o.ok);
    let mut s = format!(
        "{} on {}: {} ({})",
        o.job_id,
        o.target,
        paint(ending.as_str(), Tone::of_ending(ending)),
        o.exit_phrase()
    );
    if let Some(ms) = d.duration_ms.filter(|_| !o.started_at.is_empty()) {
        s.push_str(&format!(
            " after {}",
            clock::human(Duration::from_millis(ms))
        ));
    }
    if let Some(id) = &o.key_id {
        s.push_str(&format!(", signed by {} key {id}", o.target));
    }
    if let Some(m) = &d.marker {
        s.push_str(&format!(", cancel from {}", m.origin));
    }
    if o.sealed_here() {
        s.push_str("\n  detail: sealed (only the job's origin opens its detail and output)");
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

/// What is known of a job still unfinished when a command ends: why it
/// has no result, and the limit when a wait for it ran out.
#[derive(Debug)]
pub struct Unfinished {
    /// Its state, what holds it, and what is wrong with its listener.
    pub why: Box<Why>,
    /// How long a wait for it lasted; `None` when nothing waited.
    pub limit: Option<Duration>,
}

/// Why a job has no result to show, as a command ends.
pub type NoResult = observe::NoResult<Unfinished>;

/// Words a job without a result (`no`) of `id` on `dirs`' target — the
/// sentence for stderr, returned — adding to `out`, the command's JSON
/// answer; `key` is the sender's ([`crate::places::observe::rejection_sentence`]).
pub fn no_result(
    dirs: &TargetDirs,
    id: &JobId,
    key: &Key,
    out: &mut Value,
    no: &NoResult,
) -> String {
    match no {
        NoResult::Rejected(r) => {
            out["state"] = json!("rejected");
            out["rejected"] = json!(r);
            crate::places::observe::rejection_sentence(dirs, id, r, key)
        }
        NoResult::Unfinished(Unfinished { why, limit }) => {
            why.add_json(out);
            match limit {
                Some(l) => {
                    out["timedOut"] = json!(true);
                    why.timed_out(id, *l)
                }
                None => why.no_result(id),
            }
        }
    }
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
    pub fn failed(dirs: &TargetDirs, e: &Error) -> Answer {
        Answer::failed_on(dirs.target().as_str(), e)
    }

    /// The answer for the target named `target` where the command failed
    /// with `e`.
    pub fn failed_on(target: &str, e: &Error) -> Answer {
        Answer {
            status: exit::of(e.code),
            json: json!({"target": target, "error": e.to_json()["error"]}),
            line: format!("{target}: {}", e.message),
        }
    }

    /// The answer for `id` on `dirs`' target from what
    /// [`crate::places::observe::Observed::answer`] made of it: its result, why
    /// it has none, or the refusal. `waited` is the limit of the wait
    /// that ran out, when one did.
    pub fn of(
        dirs: &TargetDirs,
        id: &JobId,
        key: &Key,
        answered: crate::base::error::Result<crate::requests::wait::Waited>,
        waited: Option<Duration>,
    ) -> Answer {
        let target = dirs.target().as_str();
        let state = |word: &str| json!({"jobId": id.as_str(), "target": target, "state": word});
        let no = match answered {
            Ok(Ok(o)) => {
                let line = text(&o).lines().next().unwrap_or_default().to_string();
                return Answer {
                    status: o.wait_exit_status(),
                    json: json(&o),
                    line,
                };
            }
            // A job not there is this target's state, not its failure.
            Err(e) if e.code == Code::NotFound => {
                return Answer {
                    status: exit::of(e.code),
                    json: state(Observed::NotSeen.word()),
                    line: e.message,
                };
            }
            Err(e) => return Answer::failed(dirs, &e),
            Ok(Err(no)) => no,
        };
        let status = no.exit_status();
        let (json, line) = match no {
            observe::NoResult::Rejected(r) => {
                let mut json = state("rejected");
                json["rejected"] = json!(r);
                (
                    json,
                    crate::places::observe::rejection_sentence(dirs, id, &r, key),
                )
            }
            observe::NoResult::Unfinished(why) => {
                // Which target never answered, and why it may not.
                let mut json = state(why.seen.word());
                why.add_json(&mut json);
                let line = match waited {
                    Some(limit) => {
                        json["timedOut"] = json!(true);
                        why.timed_out(id, limit)
                    }
                    None => format!("{id} has no result on {target} yet: it is {}", why.state()),
                };
                (json, format!("{target}: {line}"))
            }
        };
        Answer { status, json, line }
    }
}

/// The answers over a target list: one JSON array, and one line each.
pub fn each(answers: &[Answer]) -> (Value, String) {
    let json = Value::Array(answers.iter().map(|a| a.json.clone()).collect());
    let lines: Vec<&str> = answers.iter().map(|a| a.line.as_str()).collect();
    (json, lines.join("\n"))
}
