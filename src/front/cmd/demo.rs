//! `demo`: the whole lane on a temporary folder, narrated ([`crate::front::demo`]).

use crate::base::error::Result;
use crate::front::cli::DemoArgs;
use crate::front::config::Context;

/// Runs `demo`.
pub fn run(ctx: &Context, args: DemoArgs) -> Result<u8> {
    crate::front::demo::run(ctx.json(), args.keep)
}
