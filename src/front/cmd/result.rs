//! `result`: show a job's verified result and exit with the job's own exit
//! code (1 when it did not run to its end); `--wait` waits for it. A job
//! still queued or running exits 124, one its target rejected 76 with the
//! reason; a result that does not verify is `FORBIDDEN` when nothing else
//! of the job is there, and a warning beside a job still queued or
//! running (whose state is then what `result` says). Over a target
//! list (`A,B` or `all`), one line per target and the worst status.

use serde_json::json;

use crate::base::error::{Error, Result};
use crate::front::cli::ResultArgs;
use crate::front::config::Context;
use crate::requests::wait;
use crate::trust::Key;
use crate::view::{self, result::Unfinished};

/// Runs `result`.
pub fn run(ctx: &Context, args: ResultArgs) -> Result<u8> {
    let limit = super::duration_flag(&args.waiting.wait_timeout, "--wait-timeout")?;
    if let Some(root) = ctx.s3_root() {
        return crate::front::bucket::look::result(ctx, &root, &args, limit);
    }
    let root = ctx.root()?;
    // Key and identity first: a refusal must not leave a fleet member's
    // folder behind.
    let key = ctx.key(Some(&root))?;
    if crate::store::layout::is_target_list(&args.target) {
        return each(ctx, &root, &key, &args, limit);
    }
    let dirs = ctx.target(&root, &args.target)?;
    let id = super::job_ref(ctx, &root, &dirs, &key, &args.job_id)?;
    let out = json!({"jobId": id.as_str(), "target": dirs.target().as_str()});
    let outcome = if args.waiting.wait {
        let mut follower = args
            .waiting
            .follow
            .then(|| super::follower(ctx, &dirs, &id));
        let waited = wait::for_result(&dirs, &id, &key, limit, ctx.json(), follower.as_mut())?;
        if let Some(f) = follower.as_mut() {
            // A character cut short at the very end of the output.
            let _ = f.end_json(&mut std::io::stdout());
        }
        let limit = Some(limit.unwrap_or_default());
        match super::with_result(ctx, &dirs, &id, &key, &out, waited, limit) {
            Ok(o) => o,
            Err(status) => return Ok(status),
        }
    } else {
        let (answered, note) = wait::at_once(&dirs, &id, &key)?;
        if let Some(note) = note {
            crate::note!("fleet-dispatch: {note}");
        }
        match answered? {
            Ok(o) => o,
            Err(no) => {
                let no = no.map(|why| Unfinished { why, limit: None });
                return Ok(super::no_result(ctx, &dirs, &id, &key, out, no));
            }
        }
    };
    let human = if args.waiting.follow {
        view::result::followed(&outcome)
    } else {
        view::result::text(&outcome)
    };
    super::emit(ctx, &view::result::json(&outcome), &human);
    // With or without --wait: the job's own exit code when it ran to its
    // end, 1 when it did not.
    Ok(outcome.wait_exit_status())
}

/// `result` over a target list: one line (or JSON object) per target, in
/// the order given, and the worst status of them ([`crate::base::exit::worst`]).
fn each(
    ctx: &Context,
    root: &std::path::Path,
    key: &Key,
    args: &ResultArgs,
    limit: Option<std::time::Duration>,
) -> Result<u8> {
    if args.waiting.follow {
        return Err(Error::validation(format!(
            "--follow streams one job's output; --target {} names several",
            args.target
        ))
        .hint("follow one target: fleet-dispatch logs --target T --job-id ID --follow"));
    }
    let targets: Vec<_> = ctx
        .targets(root, &args.target)?
        .into_iter()
        .map(|dirs| {
            let id = super::job_ref(ctx, root, &dirs, key, &args.job_id);
            (dirs, id)
        })
        .collect();
    let answers = super::results_each(&targets, key, args.waiting.wait.then_some(limit));
    Ok(super::emit_each(ctx, &answers))
}
