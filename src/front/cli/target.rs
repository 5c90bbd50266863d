//! The flags of the commands about a target's folder as a whole:
//! `listen` (which runs its jobs), `sweep` and `status`, and the words
//! `status --outcome` takes.

use std::path::PathBuf;

use clap::{Args, ValueEnum, ValueHint};

use crate::protocol::doc::outcome::Ending;

/// The most jobs one listener runs at once (`listen --slots`, config `slots`).
pub const MAX_SLOTS: u64 = 64;

/// `listen`.
#[derive(Debug, Args)]
pub struct ListenArgs {
    /// Drain the inbox once and exit
    #[arg(long)]
    pub once: bool,
    /// How often to rescan the inbox and check for cancel markers [default: 2s]
    #[arg(
        long,
        value_name = "D",
        env = "FLEET_DISPATCH_POLL_INTERVAL",
        hide_env_values = true
    )]
    pub poll_interval: Option<String>,
    /// Find new jobs and cancel markers by the poll alone, without file-system events (for network shares that deliver none) [config: watch = false]
    #[arg(long)]
    pub no_watch: bool,
    /// How long a file that does not parse may stay unchanged before it is rejected
    #[arg(long, value_name = "D", default_value = "30s")]
    pub settle: String,
    /// Run up to N jobs at once, started in drain order; each has its own cancel watch, timeout and stop [default: 1]
    #[arg(
        long,
        value_name = "N",
        value_parser = clap::value_parser!(u64).range(1..=MAX_SLOTS),
        env = "FLEET_DISPATCH_SLOTS",
        hide_env_values = true
    )]
    pub slots: Option<u64>,
    /// Jobs older than this are refused as stale [default: 7d]
    #[arg(
        long,
        value_name = "D",
        env = "FLEET_DISPATCH_MAX_JOB_AGE",
        hide_env_values = true
    )]
    pub max_job_age: Option<String>,
    /// When the listener is stopped (Ctrl-C, SIGTERM), give the running job at most this grace instead of its own, so a service manager's stop timeout can cover it; cancels and timeouts keep the job's grace [default: the job's grace]
    #[arg(
        long,
        value_name = "D",
        env = "FLEET_DISPATCH_STOP_GRACE",
        hide_env_values = true
    )]
    pub stop_grace: Option<String>,
    /// Governor file: first word GREEN, YELLOW (only high jobs run) or RED (none)
    #[arg(long, value_name = "F", value_hint = ValueHint::FilePath)]
    pub governor_file: Option<PathBuf>,
    /// Also take jobs and cancels over HTTP on ADDR (HOST:PORT; a bare port means 127.0.0.1:PORT). Plain HTTP, no TLS [default: off]
    #[arg(long, value_name = "ADDR", conflicts_with = "once")]
    pub http: Option<String>,
    /// Ask the listener already running here to finish its job, start no new one and stop; waits until it has (for service managers)
    #[arg(long, conflicts_with_all = ["once", "http"])]
    pub drain: bool,
}

/// `sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Sweep this target [default: this machine]
    #[arg(long, short = 't', value_name = "T", conflicts_with = "all")]
    pub target: Option<String>,
    /// Sweep every target under the root
    #[arg(long)]
    pub all: bool,
    /// Remove markers whose file is older than this (0: every marker whose job is no longer queued or running)
    #[arg(long, value_name = "D", default_value = "24h")]
    pub max_age: String,
    /// Prune processed jobs (job file, result, logs, consumed marker) and rejected files whose files are all older than this; never under the job max age plus a day [default: 30d]
    #[arg(
        long,
        value_name = "D",
        env = "FLEET_DISPATCH_RETENTION",
        hide_env_values = true
    )]
    pub retention: Option<String>,
    /// The listeners' job max age, which sets the retention's floor; the same setting as `listen --max-job-age` [default: 7d]
    #[arg(
        long,
        value_name = "D",
        env = "FLEET_DISPATCH_MAX_JOB_AGE",
        hide_env_values = true
    )]
    pub max_job_age: Option<String>,
    /// Say what would be removed, remove nothing
    #[arg(long)]
    pub dry_run: bool,
}

/// `status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Show this target [default: this machine while its listener runs; on a machine that only sends, every target]
    #[arg(long, short = 't', value_name = "T", conflicts_with = "all")]
    pub target: Option<String>,
    /// Show every target under the root
    #[arg(long)]
    pub all: bool,
    /// How many past results to show, newest first
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub results: usize,
    /// Only past results that ended so
    #[arg(long, value_enum, value_name = "OUTCOME")]
    pub outcome: Option<Ending>,
    /// Only past results whose label contains this text
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
}

/// `status --outcome` takes an [`Ending`]: its words and their list are
/// the type's, so a new ending is a new value here; only the help each
/// value shows in `--help` is written here, beside the flag.
impl ValueEnum for Ending {
    fn value_variants<'a>() -> &'a [Self] {
        &Ending::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let help = match self {
            Ending::Done => "Ran and exited 0",
            Ending::Failed => "Ran and ended any other way by itself",
            Ending::Cancelled => "Stopped by a cancel marker",
            Ending::CancelledBeforeStart => "Cancelled before it started",
            Ending::Timeout => "Outlived its timeout",
            Ending::Interrupted => "The listener stopped while it ran",
            Ending::SpawnFailed => "Could not be started",
            Ending::DependencyFailed => {
                "Never started: a job it waited for did not end as required"
            }
        };
        Some(clap::builder::PossibleValue::new(self.as_str()).help(help))
    }
}
