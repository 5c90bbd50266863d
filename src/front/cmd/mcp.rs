//! `mcp`: serve the fleet to an AI agent as MCP tools on stdin and stdout
//! ([`crate::front::mcp`]). The settings are checked first, as every command
//! checks them: without a root, a key or a machine name the server does
//! not start (`CONFIG`), so a client sees the error on stderr and a failed
//! start rather than a server whose every tool fails.

use crate::base::error::Result;
use crate::base::exit;
use crate::front::cli::McpArgs;
use crate::front::config::Context;

/// Runs `mcp` until stdin closes; exits 0 then.
pub fn run(ctx: &Context, _args: McpArgs) -> Result<u8> {
    crate::front::send::Sender::load(ctx)?;
    crate::front::mcp::serve(ctx, std::io::stdin().lock(), std::io::stdout())?;
    Ok(exit::SUCCESS)
}
