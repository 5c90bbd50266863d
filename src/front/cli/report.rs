//! `report`'s flags: the span, the targets and where the page goes.

use std::path::PathBuf;

use clap::{Args, ValueHint};

/// `report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Only what happened since: a duration back from now (`24h`, `7d`) or an RFC 3339 time [default: everything the folder holds]
    #[arg(long, value_name = "D")]
    pub since: Option<String>,
    /// These targets (`PC`, `PC,NAS`) or `all`
    #[arg(long, short = 't', value_name = "T", default_value = "all")]
    pub target: String,
    /// Write the page here; `-` writes it to stdout
    #[arg(long, value_name = "FILE", default_value = "fleet-report.html", value_hint = ValueHint::FilePath)]
    pub out: PathBuf,
}
