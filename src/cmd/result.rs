//! `result`: show a job's verified result; `--wait` waits for it and exits
//! with the job's exit code. A result that does not verify is `FORBIDDEN`.

use serde_json::{Value, json};

use crate::cli::ResultArgs;
use crate::clock;
use crate::config::Context;
use crate::doc::Outcome;
use crate::error::{Error, Result};
use crate::names::JobId;
use crate::observe::{self, Observed};
use crate::wait::{self, Waited};

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
    if let Some(e) = &d.spawn_error {
        s.push_str(&format!("\n  {e}"));
    }
    for (name, tail) in [("stdout", &d.stdout_tail), ("stderr", &d.stderr_tail)] {
        if let Some(t) = tail.as_deref().filter(|t| !t.is_empty()) {
            s.push_str(&format!("\n--- {name} (end) ---\n{}", t.trim_end()));
        }
    }
    s
}

/// Runs `result`.
pub fn run(ctx: &Context, args: ResultArgs) -> Result<u8> {
    let id = JobId::parse(&args.job_id)?;
    let limit = super::duration_flag(&args.wait_timeout, "--wait-timeout")?;
    let root = ctx.root()?;
    // Key and identity first: a refusal must not leave a fleet member's
    // folder behind.
    let key = ctx.key(Some(&root))?;
    let dirs = ctx.target(&root, &args.target)?;
    let outcome = if args.wait {
        match wait::for_result(&dirs, &id, &key, limit, ctx.json())? {
            Waited::Done(o) => o,
            Waited::TimedOut(seen) => {
                let msg = wait::timed_out_message(&id, &seen, limit.unwrap_or_default());
                if ctx.json() {
                    crate::out::line(
                        &json!({"jobId": id.as_str(), "timedOut": true, "state": seen.word()})
                            .to_string(),
                    );
                } else {
                    eprintln!("fleet-dispatch: {msg}");
                }
                return Ok(wait::TIMED_OUT);
            }
        }
    } else {
        match observe::job(&dirs, &id, &key) {
            Observed::Done(o) => o,
            Observed::ForgedResult(why) => {
                return Err(Error::forbidden(format!(
                    "result for {id} does not verify ({why}); it is not shown"
                )));
            }
            other => {
                return Err(Error::not_found(format!(
                    "no result for {id} on {} yet (job {})",
                    dirs.target(),
                    other.word()
                ))
                .hint("add --wait to wait for it"));
            }
        }
    };
    super::emit(ctx, &result_json(&outcome), &result_human(&outcome));
    Ok(if args.wait {
        outcome.wait_exit_status()
    } else {
        0
    })
}
