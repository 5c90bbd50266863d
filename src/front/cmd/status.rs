//! `status`: per target, whether its listener is alive, what runs, what
//! waits (in drain order), which cancels are pending, and the last results —
//! so nobody has to open the shared folder to know what is happening. The
//! document is [`observe::target`]'s and its rendering
//! [`crate::view::status`]'s; this file picks the targets and prints.

use crate::base::error::Result;
use crate::base::exit;
use crate::base::names::Machine;
use crate::front::cli::StatusArgs;
use crate::front::config::Context;
use crate::places::observe::{self, GovernorHold, TargetStatus};
use crate::requests::doctor;
use crate::store::layout::StateDirs;
use crate::store::layout::{self, TargetDirs};
use crate::view;

/// Runs `status`.
pub fn run(ctx: &Context, args: StatusArgs) -> Result<u8> {
    if let Some(root) = ctx.s3_root() {
        return crate::front::bucket::look::status(ctx, &root, &args);
    }
    let history = observe::History {
        count: args.results,
        outcome: args.outcome,
        label: args.label.clone(),
    };
    let root = ctx.root()?;
    let key = ctx.key(Some(&root))?;
    let state = ctx.state_dir(&root).ok();
    let look = |m: &Machine| {
        let mut t = observe::target(&TargetDirs::new(&root, m), &key, &history);
        t.governor = state
            .as_deref()
            .and_then(|s| doctor::running_governor(&StateDirs::new(s, m)))
            .map(|(file, tier)| GovernorHold {
                file,
                tier: tier.as_str().to_string(),
            });
        t
    };
    let each = |names: Vec<String>| -> Vec<TargetStatus> {
        names
            .iter()
            .filter_map(|n| Machine::parse(n, "target").ok())
            .map(|m| look(&m))
            .collect()
    };
    let targets = if args.all {
        each(layout::existing_targets(&root)?)
    } else if let Some(t) = &args.target {
        each(vec![ctx.target(&root, t)?.target().to_string()])
    } else {
        // A machine whose listener runs asks about itself; one that only
        // sends (no listener here now, or no folder of its own) about
        // every target it may send to.
        let me = ctx.machine()?;
        let mine = layout::find_target(&root, &me)?
            .and_then(|n| Machine::parse(&n, "target").ok())
            .map(|m| look(&m));
        match mine {
            Some(t) if t.listener.alive() => vec![t],
            _ => each(layout::existing_targets(&root)?),
        }
    };
    let mine = key.key_id();
    super::emit(
        ctx,
        &view::status::json(&root, &mine, &targets),
        &view::status::text_all(&root, &targets, &mine),
    );
    Ok(exit::SUCCESS)
}
