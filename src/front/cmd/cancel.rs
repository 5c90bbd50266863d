//! `cancel`: ask a target to stop a job, running or still queued, with a
//! signed marker ([`crate::front::send::cancel`] sends it, [`crate::requests::cancel`]
//! decides). Never replaces a marker; writes nothing for a finished job,
//! nor for an id neither the target nor this machine knows (`NOT_FOUND`
//! with the nearest ids, unless `--force`). Over a target list (`A,B` or
//! `all`), a marker for each target's copy, one line per target.

use serde_json::json;

use crate::base::error::Result;
use crate::front::cli::CancelArgs;
use crate::front::config::Context;
use crate::front::send::cancel::{self, Cancelled, Requested};
use crate::requests::cancel::CancelStatus;

use super::Answer;
use crate::base::exit;
use crate::requests::wait;

/// Runs `cancel`.
pub fn run(ctx: &Context, args: CancelArgs) -> Result<u8> {
    if let Some(root) = ctx.s3_root() {
        return crate::front::bucket::cancel::run(ctx, &root, &args);
    }
    let limit = super::duration_flag(&args.wait_timeout, "--wait-timeout")?;
    let one = match cancel::send(ctx, &args)? {
        Cancelled::One(one) => one,
        Cancelled::Each(each) => {
            let answers: Vec<Answer> = each
                .iter()
                .map(|(d, e)| e.answer(d.target().as_str()))
                .collect();
            return Ok(super::emit_each(ctx, &answers));
        }
    };
    let Requested {
        dirs,
        id,
        status,
        sender,
    } = one.as_ref();
    let key = &sender.key;
    let mut out = status.to_json(id);
    out["target"] = json!(dirs.target().as_str());
    let human = status.sentence(id);
    let blocked = matches!(status, CancelStatus::Blocked(_));
    if !args.wait || !matches!(status, CancelStatus::Requested { .. }) {
        super::emit(ctx, &out, &human);
        return Ok(exit::no_if(blocked));
    }
    if !ctx.json() {
        crate::base::out::line(&human.to_string());
    }
    let waited = wait::for_result(dirs, id, key, limit, ctx.json(), None)?;
    let limit = Some(limit.unwrap_or_default());
    let o = match super::with_result(ctx, dirs, id, key, &out, waited, limit) {
        Ok(o) => o,
        Err(status) => return Ok(status),
    };
    let (stopped, word, human) = crate::requests::cancel::after_wait(id, &o);
    out["outcome"] = json!(word);
    out["result"] = crate::view::result::json(&o);
    super::emit(ctx, &out, &human);
    Ok(exit::no_if(!stopped))
}
