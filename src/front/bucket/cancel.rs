//! `cancel` on an object-store root: a signed marker published create-only
//! at `PREFIX/TARGET/cancel/<id>.json`, unless the job has a verified
//! result; a valid marker already there is kept, never replaced.

use serde_json::json;

use super::Lane;
use crate::base::clock;
use crate::base::error::{Error, Result};
use crate::base::exit;
use crate::front::cli::CancelArgs;
use crate::front::config::Context;
use crate::protocol::doc::Marker;
use crate::requests::cancel::CancelStatus;
use crate::requests::lane::{self, Seen};
use crate::store::port::Shelves;

/// Runs `cancel` on the root `root`.
pub fn run(ctx: &Context, root: &str, args: &CancelArgs) -> Result<u8> {
    for (given, what) in [
        (args.wait, "cancel --wait"),
        (args.via.is_some(), "cancel --via"),
        (
            crate::store::layout::is_target_list(&args.target),
            "cancel over a target list",
        ),
        (
            ctx.enclosing_job()?.is_some(),
            "cancel from inside a job (the parent rule)",
        ),
    ] {
        if given {
            return Err(super::not_yet(root, what));
        }
    }
    let id = super::job_id(root, &args.job_id)?;
    let lane = Lane::load(ctx, root)?;
    let origin = ctx.machine()?;
    let t = lane.target(ctx, &args.target)?;
    let key = &lane.key;
    if !args.force && matches!(lane::look(&t, &id, key)?, Seen::Nothing) {
        return Err(Error::not_found(format!(
            "no job {id} on {} (inbox, archive or results of {})",
            t.target(),
            t.shown()
        ))
        .hint("--force writes the marker anyway"));
    }
    let m = Marker::sign(key, &id, t.target(), &origin, &clock::format(clock::now()));
    let status = lane::place_marker(&t, &id, key, &m)?;
    let mut out = status.to_json(&id);
    out["target"] = json!(t.target().as_str());
    super::emit(ctx, &out, &status.sentence(&id));
    Ok(exit::no_if(matches!(status, CancelStatus::Blocked(_))))
}
