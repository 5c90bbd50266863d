//! The flags of the commands a sender runs about one job: `enqueue`,
//! `result`, `logs` and `cancel`, and the waiting `enqueue` and `result`
//! share.

use std::path::PathBuf;

use clap::{Args, ValueEnum, ValueHint};

/// Drain priority on the command line.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum PriorityArg {
    /// The default
    Normal,
    /// Before every normal job
    High,
}

/// `enqueue`.
#[derive(Debug, Args)]
pub struct EnqueueArgs {
    /// The machine that should run the job; a list A,B,C, or `all` for every target folder, publishes a copy to each
    #[arg(long, short = 't', value_name = "T", required_unless_present = "batch")]
    pub target: Option<String>,
    /// Enqueue one job per line of FILE (`-`: stdin), each a JSON object of these flags' fields; every line is checked before any is published. The flags given are defaults for the lines (`--after` with `--after-any` for a line without "after")
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub batch: Option<PathBuf>,
    /// The job id [default: generated, YYYYMMDD-HHMMSS-<16 hex>]
    #[arg(long, value_name = "ID")]
    pub job_id: Option<String>,
    /// Working directory on the target
    #[arg(long, value_name = "DIR", value_hint = ValueHint::Other)]
    pub cwd: Option<String>,
    /// An environment variable for the job (repeatable)
    #[arg(long = "env", value_name = "K=V")]
    pub env: Vec<String>,
    /// Stop the job after this long (e.g. 30m, 2h) [default: no limit]
    #[arg(long, value_name = "D")]
    pub timeout: Option<String>,
    /// Time between the graceful stop and the forced kill [default: 10s]
    #[arg(long, value_name = "D")]
    pub grace: Option<String>,
    /// Drain priority
    #[arg(long, value_enum, value_name = "P")]
    pub priority: Option<PriorityArg>,
    /// A short description shown by status and results
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    // The help text's `[TARGET:]ID` is not a link.
    #[allow(rustdoc::broken_intra_doc_links)]
    /// Start only once this job has succeeded: [TARGET:]ID, the job's own target when none is named (with a target list, each copy's own) (repeatable, up to 64); if it fails, this job ends `dependency-failed` without running
    #[arg(long, value_name = "[TARGET:]ID")]
    pub after: Vec<String>,
    /// With --after: start once each of those jobs has ended, however it ended
    #[arg(long, requires = "after")]
    pub after_any: bool,
    /// Stop and steer: queue this job at high priority, then cancel JOBID (an id, a unique prefix of one, `last`, or `running`: the one job the target runs now)
    #[arg(long, value_name = "JOBID")]
    pub interrupt: Option<String>,
    /// With --interrupt: cancel JOBID even though no folder of the target holds it and this machine never sent it (it may not have synced here yet)
    #[arg(long, requires = "interrupt")]
    pub force: bool,
    /// `--wait`, `--wait-timeout` and `--follow`.
    #[command(flatten)]
    pub waiting: WaitArgs,
    /// Send the job to the target's `listen --http` at this URL (http://HOST:PORT); the shared folder is used only when it cannot be reached
    #[arg(long, value_name = "URL")]
    pub via: Option<String>,
    /// Seal the job's argv, cwd, env and label to the target's X25519 key (--auth roster): its job file shows only the header, its result's detail is sealed back to this machine, its output is not logged to the root; with --batch, every line's job, each copy to its own target
    #[arg(long)]
    pub seal: bool,
    /// The program and its arguments, after `--`
    #[arg(
        last = true,
        required_unless_present = "batch",
        value_name = "PROGRAM [ARG]...",
        value_hint = ValueHint::CommandWithArguments
    )]
    pub argv: Vec<String>,
}

/// Waiting for a job's result, as `enqueue` and `result` take it.
#[derive(Debug, Args)]
pub struct WaitArgs {
    /// Wait for the result and exit with the job's exit code
    #[arg(long)]
    pub wait: bool,
    /// Give up waiting after this long (exit 124)
    #[arg(long, value_name = "D", requires = "wait")]
    pub wait_timeout: Option<String>,
    /// While waiting, stream the job's output as it is written
    #[arg(long, requires = "wait")]
    pub follow: bool,
}

/// `result`.
#[derive(Debug, Args)]
pub struct ResultArgs {
    /// The machine that ran the job; a list A,B,C or `all` shows each copy's result, one line each
    #[arg(long, short = 't', value_name = "T")]
    pub target: String,
    /// The job: its id, a prefix only one job on the target has, or `last` (the last job enqueued from this machine)
    #[arg(long, value_name = "ID")]
    pub job_id: String,
    /// `--wait`, `--wait-timeout` and `--follow`.
    #[command(flatten)]
    pub waiting: WaitArgs,
}

/// `logs`.
#[derive(Debug, Args)]
pub struct LogsArgs {
    /// The machine that runs or ran the job
    #[arg(long, short = 't', value_name = "T")]
    pub target: String,
    /// The job: its id, a prefix only one job on the target has, or `last`
    #[arg(long, value_name = "ID")]
    pub job_id: String,
    /// Keep printing output as it is written, until the job's result appears; then exit as `result` does
    #[arg(long, short = 'f')]
    pub follow: bool,
    /// Which output
    #[arg(long, value_enum, default_value = "both", value_name = "S")]
    pub stream: StreamArg,
}

/// `--stream`.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum StreamArg {
    /// Standard output
    Stdout,
    /// Standard error
    Stderr,
    /// Both, each to its own stream
    Both,
}

/// `cancel`.
#[derive(Debug, Args)]
pub struct CancelArgs {
    /// The machine running the job; a list A,B,C or `all` cancels each copy
    #[arg(long, short = 't', value_name = "T")]
    pub target: String,
    /// The job to stop: its id, a prefix only one job on the target has, or `last`
    #[arg(long, value_name = "ID")]
    pub job_id: String,
    /// Wait until the job has stopped (or finished first)
    #[arg(long)]
    pub wait: bool,
    /// Give up waiting after this long (exit 124)
    #[arg(long, value_name = "D", requires = "wait")]
    pub wait_timeout: Option<String>,
    /// Send the marker to the target's `listen --http` at this URL (http://HOST:PORT); the shared folder is used only when it cannot be reached
    #[arg(long, value_name = "URL")]
    pub via: Option<String>,
    /// Write the marker even though no folder of the target holds the job and this machine never sent it (it may not have synced here yet)
    #[arg(long)]
    pub force: bool,
}
