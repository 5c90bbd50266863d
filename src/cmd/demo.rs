//! `demo`: the whole lane on a temporary folder, narrated ([`crate::demo`]).

use crate::cli::DemoArgs;
use crate::config::Context;
use crate::error::Result;

/// Runs `demo`.
pub fn run(ctx: &Context, args: DemoArgs) -> Result<u8> {
    crate::demo::run(ctx.json(), args.keep)
}
