//! `mcp`: serve the fleet to an AI agent as MCP tools on stdin and stdout
//! ([`crate::mcp`]). The settings are checked first, as every command
//! checks them: without a root, a key or a machine name the server does
//! not start (`CONFIG`), so a client sees the error on stderr and a failed
//! start rather than a server whose every tool fails.

use crate::cli::McpArgs;
use crate::config::Context;
use crate::error::Result;
use crate::exit;

/// Runs `mcp` until stdin closes; exits 0 then.
pub fn run(ctx: &Context, _args: McpArgs) -> Result<u8> {
    crate::send::Sender::load(ctx)?;
    crate::mcp::serve(ctx, std::io::stdin().lock(), std::io::stdout())?;
    Ok(exit::SUCCESS)
}
