//! `enqueue --batch`: many jobs from one file, sent by
//! [`crate::front::send::batch`] (each line checked as the flags are, all before
//! any is published); here the ids are printed in the order of the lines.

use serde_json::json;

use super::warn;
use crate::base::error::Result;
use crate::base::exit;
use crate::front::cli::EnqueueArgs;
use crate::front::cmd::emit;
use crate::front::config::Context;

/// Runs `enqueue --batch`: one job per line of `file` (`-`: stdin).
pub(super) fn run(ctx: &Context, args: &EnqueueArgs, file: &std::path::Path) -> Result<u8> {
    crate::front::send::batch::refuse_flags(args, file)?;
    if let Some(root) = ctx.s3_root() {
        return crate::front::bucket::batch::run(ctx, &root, args, file);
    }
    let sent = crate::front::send::batch::send(ctx, args, file)?;
    let lines: Vec<_> = sent
        .lines
        .iter()
        .map(|(n, r, targets)| (*n, r, targets.iter().map(|d| d.target().as_str()).collect()))
        .collect();
    let (jobs, ids) = crate::front::send::batch::listing(&lines);
    let mut out = json!({"jobs": jobs});
    warn(ctx, &mut out, &sent.warnings);
    emit(ctx, &out, &ids.join("\n"));
    Ok(exit::SUCCESS)
}
