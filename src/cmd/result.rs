//! `result`: show a job's verified result; `--wait` waits for it and exits
//! with the job's exit code. A result that does not verify is `FORBIDDEN`.

use serde_json::json;

use crate::cli::ResultArgs;
use crate::config::Context;
use crate::error::{Error, Result};
use crate::exit;
use crate::names::JobId;
use crate::observe::{self, Observed};
use crate::wait::{self, Waited};

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
                return Ok(exit::TIMED_OUT);
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
            Observed::Rejected(r) => {
                return Err(Error::not_found(format!(
                    "no result for {id} on {}: its listener rejected the job file ({}: {}) at {}; it will not run",
                    dirs.target(),
                    r.verdict,
                    r.message,
                    r.rejected_at
                ))
                .hint("a bad-signature verdict means the sender's key differs from the target's"));
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
    super::emit(
        ctx,
        &super::result_json(&outcome),
        &super::result_human(&outcome),
    );
    Ok(if args.wait {
        outcome.wait_exit_status()
    } else {
        exit::SUCCESS
    })
}
