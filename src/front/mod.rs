//! Front ends: each parses, calls the layers below and prints. The command
//! line ([`cli`] definitions, [`cmd`] one file per subcommand), the config
//! file, completions, service entries, the sender ([`send`]: builds and
//! delivers what `enqueue` and `cancel` ask, through the folder or HTTP),
//! the HTTP intake, the MCP server and the demo; [`bucket`]: the commands
//! that work on an object-store root.

pub(crate) mod bucket;
pub mod cli;
pub mod cmd;
pub mod complete;
pub mod config;
pub(crate) mod demo;
pub mod http;
pub(crate) mod mcp;
pub(crate) mod send;
pub(crate) mod service;
