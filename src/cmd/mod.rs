//! One small module per subcommand; each only wires the library's pieces
//! together and prints. [`dispatch`] routes a parsed command line.

mod cancel;
mod demo;
mod enqueue;
mod keygen;
mod listen;
mod result;
mod status;
mod sweep;
mod verify_marker;

use crate::cli::{Cli, Cmd};
use crate::config::Context;
use crate::error::Result;

/// Runs the command; returns the process exit status.
pub fn dispatch(cli: Cli) -> Result<u8> {
    let ctx = Context::load(cli.global)?;
    match cli.command {
        Cmd::Keygen(a) => keygen::run(&ctx, a),
        Cmd::Enqueue(a) => enqueue::run(&ctx, a),
        Cmd::Listen(a) => listen::run(&ctx, a),
        Cmd::Result(a) => result::run(&ctx, a),
        Cmd::Cancel(a) => cancel::run(&ctx, a),
        Cmd::Status(a) => status::run(&ctx, a),
        Cmd::Sweep(a) => sweep::run(&ctx, a),
        Cmd::VerifyMarker(a) => verify_marker::run(&ctx, a),
        Cmd::Demo(a) => demo::run(&ctx, a),
    }
}

/// Prints `json` (with `--json`) or the human lines.
pub fn emit(ctx: &Context, json: &serde_json::Value, human: &str) {
    if ctx.json() {
        crate::out::line(&json.to_string());
    } else if !human.is_empty() {
        crate::out::line(human);
    }
}

/// Parses an optional duration flag.
pub fn duration_flag(v: &Option<String>, flag: &str) -> Result<Option<std::time::Duration>> {
    v.as_deref()
        .map(|s| {
            crate::clock::parse_duration(s)
                .map_err(|e| crate::error::Error::validation(format!("{flag}: {}", e.message)))
        })
        .transpose()
}
