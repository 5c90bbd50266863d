//! The command line, defined once: this clap definition drives parsing,
//! `--help`, the man pages and the shell completions.
//!
//! This file holds the top of it: the global options every command takes
//! and the list of subcommands. Each command's flags, with their help text
//! (the user's documentation, beside its flag), are in the file of its
//! group; the man page's reference sections and the wording of a refused
//! command line have their own files. Everything is re-exported here, so
//! the rest of the crate names `crate::front::cli::X`.

mod identity;
mod jobs;
mod reference;
mod refuse;
mod report;
mod setup;
mod target;

pub use identity::{AdminKeyArg, IdentityCmd, RosterCmd};
pub use jobs::{CancelArgs, EnqueueArgs, LogsArgs, PriorityArg, ResultArgs, StreamArg, WaitArgs};
pub use reference::{CONFIG_FILE, ConfigFileDoc, ENVIRONMENT, FILES};
pub use refuse::{option_name, refuse};
pub use report::ReportArgs;
pub use setup::{
    ConfigArgs, DemoArgs, DoctorArgs, KeygenArgs, McpArgs, ServiceAction, ServiceArgs,
    VerifyMarkerArgs,
};
pub use target::{ListenArgs, MAX_SLOTS, StatusArgs, SweepArgs};

use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueHint};

/// Hand signed jobs to the machines of a fleet through a shared folder.
#[derive(Debug, Parser)]
#[command(
    name = "fleet-dispatch",
    version,
    about,
    long_about = "Hand signed jobs to the machines of a fleet through a folder they already share \
(OneDrive, Syncthing, an SMB share). A machine drops a signed job into <root>/<TARGET>/inbox/; \
the target's listener runs it and writes back a signed result. Cancel markers stop running or \
queued jobs. Folder access alone can never run, cancel or forge anything: every document is \
signed with the fleet key, which never lives in the shared folder.",
    after_help = "Examples:\n  \
fleet-dispatch demo                    # the whole lane in a temporary folder\n  \
fleet-dispatch listen                  # on the machine that runs the jobs\n  \
fleet-dispatch enqueue --target PC -- make test    # from any machine\n  \
fleet-dispatch result --target PC --job-id last --wait\n\n\
Settings come from a flag, else its FLEET_DISPATCH_* variable, else the config file \
(see `fleet-dispatch config`), else the default."
)]
pub struct Cli {
    /// Options every command takes.
    #[command(flatten)]
    pub global: Global,
    /// The operation.
    #[command(subcommand)]
    pub command: Cmd,
}

/// Options every command takes, each also from its environment variable.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// The dispatch root, the shared folder [default: $OneDrive/fleet-dispatch]
    #[arg(
        long,
        global = true,
        env = "FLEET_DISPATCH_ROOT",
        hide_env_values = true,
        value_name = "DIR",
        value_hint = ValueHint::DirPath
    )]
    pub root: Option<PathBuf>,
    /// The fleet key file [default: ~/.claude/fleet-dispatch.key]
    #[arg(
        long,
        global = true,
        env = "FLEET_DISPATCH_KEY_FILE",
        hide_env_values = true,
        value_name = "FILE",
        value_hint = ValueHint::FilePath
    )]
    pub key_file: Option<PathBuf>,
    /// This machine's identity file [default: ~/.claude/fleet-dispatch.identity]
    #[arg(
        long,
        global = true,
        env = "FLEET_DISPATCH_IDENTITY_FILE",
        hide_env_values = true,
        value_name = "FILE",
        value_hint = ValueHint::FilePath
    )]
    pub identity_file: Option<PathBuf>,
    /// This machine's name [default: the host name]
    #[arg(
        long,
        global = true,
        env = "FLEET_DISPATCH_MACHINE",
        hide_env_values = true,
        value_name = "NAME"
    )]
    pub machine: Option<String>,
    /// Local state (lock, ledger) [default: ~/.local/state/fleet-dispatch]
    #[arg(
        long,
        global = true,
        env = "FLEET_DISPATCH_STATE_DIR",
        hide_env_values = true,
        value_name = "DIR",
        value_hint = ValueHint::DirPath
    )]
    pub state_dir: Option<PathBuf>,
    /// Print one JSON document on stdout, for programs (JSON lines for demo and --follow)
    #[arg(long, global = true)]
    pub json: bool,
    /// How much reaches the disk before going on: full, or relaxed (a power loss may repeat or lose the last moments' work) [default: full]
    #[arg(
        long,
        global = true,
        env = "FLEET_DISPATCH_DURABILITY",
        hide_env_values = true,
        value_name = "LEVEL"
    )]
    pub durability: Option<crate::store::fsops::Durability>,
    /// Which signatures to make and accept: shared-key (the fleet key), roster (each machine's identity, docs/identities.md) or both [default: shared-key]
    #[arg(
        long,
        global = true,
        env = "FLEET_DISPATCH_AUTH",
        hide_env_values = true,
        value_name = "MODE"
    )]
    pub auth: Option<crate::trust::Auth>,
    /// Which options were given as a flag and which by their variable,
    /// by id ([`parse`] fills it in; absent means a flag).
    #[arg(skip)]
    pub given: Vec<(String, Given)>,
}

/// How a global option's value was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Given {
    /// On the command line.
    Flag,
    /// By its `FLEET_DISPATCH_*` environment variable.
    Variable,
}

impl Global {
    /// How the option with this id was given, when it was.
    pub fn given(&self, id: &str) -> Given {
        self.given
            .iter()
            .find(|(i, _)| i == id)
            .map_or(Given::Flag, |(_, g)| *g)
    }
}

/// Parses the command line `args` and records how each global option was
/// given, for `config`; a refusal goes to [`refuse()`].
pub fn parse(args: &[std::ffi::OsString]) -> Result<Cli, clap::Error> {
    let matches = Cli::command().try_get_matches_from(args)?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    cli.global.given = given(&matches);
    Ok(cli)
}

/// How each global option in `matches` was given.
pub fn given(matches: &ArgMatches) -> Vec<(String, Given)> {
    Global::augment_args(clap::Command::new("global"))
        .get_arguments()
        .filter_map(|a| {
            let id = a.get_id().as_str();
            let how = match matches.value_source(id)? {
                ValueSource::CommandLine => Given::Flag,
                ValueSource::EnvVariable => Given::Variable,
                _ => return None,
            };
            Some((id.to_string(), how))
        })
        .collect()
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Create the fleet key file (32 random bytes as 64 hex characters, mode 600)
    #[command(
        after_help = "Example:\n  fleet-dispatch keygen\n  # copy it out of band, never into the shared folder:\n  scp ~/.claude/fleet-dispatch.key laptop:.claude/"
    )]
    Keygen(KeygenArgs),
    /// This machine's identity: an Ed25519 and an X25519 key pair (docs/identities.md)
    #[command(
        subcommand,
        disable_help_subcommand = true,
        after_help = "Example:\n  fleet-dispatch identity init\n  # paste the line it prints into `roster add` on the admin's machine"
    )]
    Identity(IdentityCmd),
    /// The signed roster of the fleet's machines and their keys (docs/identities.md)
    #[command(
        subcommand,
        disable_help_subcommand = true,
        after_help = "Example (the admin's machine):\n  fleet-dispatch roster init\n  fleet-dispatch roster add LAPTOP --identity \"LAPTOP ed25519:… x25519:…\"\n# every other machine:\n  fleet-dispatch roster pin ed25519:…"
    )]
    Roster(RosterCmd),
    /// Sign a job and drop it into a target's inbox; prints its id
    #[command(
        after_help = "Examples:\n  fleet-dispatch enqueue --target PC -- claude -p \"fix the flaky test\"\n  fleet-dispatch enqueue --target PC --timeout 1h --wait -- make test\n  # stop job 9f2c… and run this one first:\n  fleet-dispatch enqueue --target PC --interrupt 9f2c -- claude -p \"do this\"\n  # straight to PC's listen --http:\n  fleet-dispatch enqueue --target PC --via http://pc.lan:7070 -- make test\n  # the same job id on each target:\n  fleet-dispatch enqueue --target PC,LAPTOP -- make test\n  # one job per line, such as {\"argv\": [\"make\", \"test\"], \"label\": \"t\"}:\n  fleet-dispatch enqueue --batch jobs.jsonl --target PC"
    )]
    Enqueue(EnqueueArgs),
    /// Run this machine's jobs: drain its inbox, up to --slots at once
    #[command(
        after_help = "Examples:\n  fleet-dispatch listen                 # forever, rescanning every 2 s\n  fleet-dispatch listen --once --json   # drain once, print the counters\n  fleet-dispatch listen --slots 4       # up to four jobs at once\n  # also take jobs and cancels over HTTP on 127.0.0.1:7070:\n  fleet-dispatch listen --http 7070"
    )]
    Listen(ListenArgs),
    /// Show a job's verified result
    #[command(
        after_help = "Examples:\n  fleet-dispatch result --target PC --job-id last --wait\n  fleet-dispatch result --target PC --job-id 9f2c   # a prefix of its id"
    )]
    Result(ResultArgs),
    /// Print a job's captured output; --follow streams it while the job runs
    #[command(
        after_help = "Examples:\n  fleet-dispatch logs --target PC --job-id last\n  fleet-dispatch logs --target PC --job-id 9f2c --follow --stream stderr"
    )]
    Logs(LogsArgs),
    /// Ask a target to stop a job (running or still queued)
    #[command(
        after_help = "Examples:\n  fleet-dispatch cancel --target PC --job-id 9f2c --wait\n  fleet-dispatch cancel --target PC --job-id 9f2c --via http://pc.lan:7070"
    )]
    Cancel(CancelArgs),
    /// Remove stale markers and temp files, prune old job history (cron)
    #[command(
        after_help = "Example (crontab, daily at 04:00):\n  0 4 * * * fleet-dispatch sweep --all"
    )]
    Sweep(SweepArgs),
    /// Show what is running, queued, cancelled and finished, per target
    #[command(
        after_help = "Examples:\n  fleet-dispatch status          # here, or every target from a sender\n  fleet-dispatch status --all --json"
    )]
    Status(StatusArgs),
    /// Write the fleet as one HTML page: timelines, queue depth, failures
    #[command(
        long_about = "Write the fleet as one self-contained HTML page (inline CSS and SVG, no script, \
nothing fetched): a swimlane per machine with each job as a bar from start to end coloured by how it \
ended and its queue wait drawn lighter before it, the listener's heartbeat, restarts and gaps along \
each lane, the queue depth over time, totals and median run time per machine, and the jobs that did \
not end well with their reason, exit code and the start of their stderr. Only documents that verify \
with the fleet key are drawn; others are counted as unverified files. With --json, prints the data \
the page is drawn from and writes no page. See docs/report.md.",
        after_help = "Examples:\n  fleet-dispatch report                      # fleet-report.html, every target\n  fleet-dispatch report --since 24h --out ~/Sync/fleet.html\n  fleet-dispatch report --target PC,NAS --out - > /srv/www/fleet.html"
    )]
    Report(ReportArgs),
    /// Explain whether a cancel marker would be accepted, and why
    #[command(
        after_help = "Example:\n  cd ~/OneDrive/fleet-dispatch\n  fleet-dispatch verify-marker PC/cancel/20261129-193000-9f2c4e1ab37d5c08.json"
    )]
    VerifyMarker(VerifyMarkerArgs),
    /// Run the whole lane on a temporary folder and narrate each step
    #[command(after_help = "Example:\n  fleet-dispatch demo")]
    Demo(DemoArgs),
    /// Show the effective settings and where each came from; creates nothing
    #[command(
        long_about = "Show the effective settings (root, key file, machine, state directory, \
durability, poll interval, fleet list, config file) and where each came from: a flag, its \
FLEET_DISPATCH_* variable, the config file, or the default. Creates nothing and never reads \
the key: a missing key file or root is said, not an error.",
        after_help = "Examples:\n  fleet-dispatch config\n  fleet-dispatch --root ~/Sync/fleet-dispatch config --json"
    )]
    Config(ConfigArgs),
    /// Check this machine's set-up and every target's health, one line each
    #[command(
        long_about = "Check what stands between this machine and a working lane, one line each, \
failures first with what to do: the key file (present, private, long enough, its fingerprint), \
the root (present, writable, its layout, the sync engine that owns it, on Windows whether it is \
kept on this device), each target's listener (heartbeat age, host and instance, key fingerprint \
against ours, clock skew), its queue, pending cancels, files rejected in the last day, file \
counts against sync engine limits and conflict copies, and the local state (ledger, lock, where \
the settings came from). Exits 0 when every check passes, 1 when one warns.",
        after_help = "Examples:\n  fleet-dispatch doctor\n  fleet-dispatch doctor --all --json"
    )]
    Doctor(DoctorArgs),
    /// Run the listener as a service (systemd, launchd, Task Scheduler)
    #[command(
        long_about = "Run this machine's listener as a service, in one command. `install` writes \
the service entry for this machine from the effective settings (as `fleet-dispatch config` shows \
them): a systemd user unit (~/.config/systemd/user/fleet-dispatch.service), a launchd agent \
(~/Library/LaunchAgents/net.fleet-dispatch.listen.plist) or a Task Scheduler task \
(fleet-dispatch-listen, registered from %LOCALAPPDATA%\\fleet-dispatch\\fleet-dispatch-listen.xml). \
The entry runs this binary by its absolute path with the root, machine, key file, state \
directory and config file pinned, and with this shell's PATH, which jobs inherit. It prints \
where the entry went and how to start, stop and read its log. It refuses, writing nothing, \
when `listen` could not start (no root, no key) and when a different entry is there \
(--force replaces it). `uninstall` removes the entry. `doctor` checks an installed entry \
against the current settings.",
        after_help = "Examples:\n  fleet-dispatch service install --print   # show the entry, write nothing\n  fleet-dispatch service install\n  fleet-dispatch service uninstall"
    )]
    Service(ServiceArgs),
    /// Serve the fleet to an AI agent as MCP tools on stdin and stdout
    #[command(
        long_about = "Run a Model Context Protocol server on stdin and stdout (JSON-RPC, one \
message a line), so an agent dispatches, follows, stops and steers jobs as tools: dispatch_job, \
job_status, job_result, job_logs, stop_job, message_job, list_jobs. It uses this machine's \
settings. Inside a job, the caller is that job: what it dispatches is its child, and it may stop \
or message only its own direct children.",
        after_help = "Example (Claude Code):\n  claude mcp add fleet -- fleet-dispatch mcp"
    )]
    Mcp(McpArgs),
}
