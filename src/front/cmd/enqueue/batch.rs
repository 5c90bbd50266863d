//! `enqueue --batch`: many jobs from one file, sent by
//! [`crate::front::send::batch`] (each line checked as the flags are, all before
//! any is published); here the ids are printed in the order of the lines.

use serde_json::{Value, json};

use super::{priority_word, warn};
use crate::base::error::{Error, Result};
use crate::base::exit;
use crate::front::cli::EnqueueArgs;
use crate::front::cmd::emit;
use crate::front::config::Context;

/// Runs `enqueue --batch`: one job per line of `file` (`-`: stdin).
pub(super) fn run(ctx: &Context, args: &EnqueueArgs, file: &std::path::Path) -> Result<u8> {
    // The flags that name one job, or act on one, have no meaning for many.
    for (given, flag) in [
        (!args.argv.is_empty(), "a program after `--`"),
        (args.job_id.is_some(), "--job-id"),
        (args.interrupt.is_some(), "--interrupt"),
        (args.waiting.wait, "--wait"),
        (args.via.is_some(), "--via"),
    ] {
        if given {
            return Err(Error::validation(format!(
                "--batch takes its jobs from {}: {flag} cannot be given with it",
                file.display()
            ))
            .hint("put per-job values in each line; --target, --priority, --label, --cwd, --env, --timeout, --grace, --after and --after-any are defaults for the lines"));
        }
    }
    let sent = crate::front::send::batch::send(ctx, args, file)?;
    let jobs: Vec<Value> = sent
        .lines
        .iter()
        .map(|(n, r, targets)| {
            json!({
                "line": n,
                "jobId": r.id.as_str(),
                "targets": targets.iter().map(|d| d.target().as_str()).collect::<Vec<_>>(),
                "priority": priority_word(r.spec.header.priority),
            })
        })
        .collect();
    let ids: Vec<&str> = sent.lines.iter().map(|(_, r, _)| r.id.as_str()).collect();
    let mut out = json!({"jobs": jobs});
    warn(ctx, &mut out, &sent.warnings);
    emit(ctx, &out, &ids.join("\n"));
    Ok(exit::SUCCESS)
}
