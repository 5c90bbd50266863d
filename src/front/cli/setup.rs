//! The flags of the commands that set a machine up and explain it:
//! `keygen`, `config`, `doctor`, `service`, `verify-marker` and `demo`.

use std::path::PathBuf;

use clap::{Args, ValueEnum, ValueHint};

/// What `service` does.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ServiceAction {
    /// Write this machine's service entry
    Install,
    /// Remove it
    Uninstall,
}

/// `service`.
#[derive(Debug, Args)]
pub struct ServiceArgs {
    /// install or uninstall
    #[arg(value_enum, value_name = "ACTION")]
    pub action: ServiceAction,
    /// With install: print the entry and write nothing
    #[arg(long)]
    pub print: bool,
    /// With install: replace an entry that differs from the one it would write; with uninstall: remove an entry at its path that install did not write
    #[arg(long, conflicts_with = "print")]
    pub force: bool,
    /// The service manager to write for [default: this machine's: linux (systemd), macos (launchd), windows (Task Scheduler)]
    #[arg(long, value_enum, value_name = "OS")]
    pub platform: Option<crate::front::service::Platform>,
}

/// `doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Check this target [default: this machine, or every target if it has no folder]
    #[arg(long, short = 't', value_name = "T", conflicts_with = "all")]
    pub target: Option<String>,
    /// Check every target under the root
    #[arg(long)]
    pub all: bool,
}

/// `config`.
#[derive(Debug, Args)]
pub struct ConfigArgs {}

/// `keygen`.
#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// Replace an existing key file
    #[arg(long)]
    pub force: bool,
}

/// `verify-marker`.
#[derive(Debug, Args)]
pub struct VerifyMarkerArgs {
    /// The marker file
    #[arg(value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub file: PathBuf,
    /// Check against this target [default: the folder the file sits in]
    #[arg(long, short = 't', value_name = "T")]
    pub target: Option<String>,
}

/// `mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {}

/// `demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Keep the temporary folder and print where it is
    #[arg(long)]
    pub keep: bool,
}
