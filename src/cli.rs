//! The command line, defined once: this clap definition drives parsing,
//! `--help`, the man pages and the shell completions.
//!
//! Longer than other modules on purpose: every flag's help text is the
//! user's documentation and lives beside its flag, and splitting one clap
//! definition across files would hide which flags a command has.

use std::path::PathBuf;

use crate::doc::outcome::Ending;

use clap::parser::ValueSource;
use clap::{
    ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum, ValueHint,
};

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
    pub durability: Option<crate::fsops::Durability>,
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
/// given, for `config`; a refusal goes to [`refuse`].
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
    pub platform: Option<crate::service::Platform>,
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

/// `identity`.
#[derive(Debug, Subcommand)]
pub enum IdentityCmd {
    /// Make this machine's key pair; prints its identity line, last
    Init {
        /// Replace an existing identity (the old keys are gone from this machine)
        #[arg(long)]
        force: bool,
    },
    /// Print this machine's identity line and key id
    Show,
}

/// The admin key file option of the roster edits.
#[derive(Debug, Args)]
pub struct AdminKeyArg {
    /// The admin key file [default: ~/.claude/fleet-dispatch.admin.key]
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub admin_key: Option<PathBuf>,
}

/// `roster`.
#[derive(Debug, Subcommand)]
pub enum RosterCmd {
    /// Make the admin key (when FILE is absent) and the root's roster.json, version 1, pinned here; prints the admin public key, last
    Init {
        /// The admin key file.
        #[command(flatten)]
        admin: AdminKeyArg,
        /// How long the roster is valid, e.g. 90d [default: 90d]
        #[arg(long, value_name = "D")]
        expires: Option<String>,
    },
    /// Trust this admin public key (ed25519:KEY) on this machine
    Pin {
        /// The key `roster init` printed
        #[arg(value_name = "ADMIN_PUBLIC_KEY")]
        key: String,
    },
    /// Add a machine by its identity line
    Add {
        /// The machine's name, as its identity line gives it
        name: String,
        /// The line `identity init` printed on that machine
        #[arg(long, value_name = "LINE")]
        identity: String,
        /// The targets it may send to, comma-separated, or * [default: *]
        #[arg(long, value_name = "T1,T2|*")]
        may_send: Option<String>,
        /// Jobs to this machine must be sealed
        #[arg(long)]
        require_seal: bool,
        /// The admin key file.
        #[command(flatten)]
        admin: AdminKeyArg,
    },
    /// Remove a machine, or only one of its keys
    Remove {
        /// The machine's name
        name: String,
        /// Remove only this key id
        #[arg(long, value_name = "KEY_ID")]
        key: Option<String>,
        /// The admin key file.
        #[command(flatten)]
        admin: AdminKeyArg,
    },
    /// Give a machine a new key; its old keys end after the overlap
    Rotate {
        /// The machine's name
        name: String,
        /// The new identity line
        #[arg(long, value_name = "LINE")]
        identity: String,
        /// How long the old keys stay valid [default: 24h]
        #[arg(long, value_name = "D")]
        overlap: Option<String>,
        /// The admin key file.
        #[command(flatten)]
        admin: AdminKeyArg,
    },
    /// Sign the roster again with a new expiry
    Renew {
        /// How long the roster is valid from now [default: 90d]
        #[arg(long, value_name = "D")]
        expires: Option<String>,
        /// The admin key file.
        #[command(flatten)]
        admin: AdminKeyArg,
    },
    /// Print the roster's machines and keys, once verified
    Show,
    /// Check a roster's signature, version and expiry; exit 0 valid, 1 not
    Verify {
        /// The roster file [default: roster.json in the root]
        #[arg(value_hint = ValueHint::FilePath)]
        file: Option<PathBuf>,
    },
}

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
    /// The program and its arguments, after `--`
    #[arg(
        last = true,
        required_unless_present = "batch",
        value_name = "PROGRAM [ARG]...",
        value_hint = ValueHint::CommandWithArguments
    )]
    pub argv: Vec<String>,
}

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

/// Environment variables read or set, for the man page.
pub const ENVIRONMENT: &[(&str, &str)] = &[
    ("FLEET_DISPATCH_ROOT", "the dispatch root (--root)"),
    ("FLEET_DISPATCH_KEY_FILE", "the fleet key file (--key-file)"),
    (
        "FLEET_DISPATCH_IDENTITY_FILE",
        "this machine's identity file (--identity-file)",
    ),
    ("FLEET_DISPATCH_MACHINE", "this machine's name (--machine)"),
    (
        "FLEET_DISPATCH_STATE_DIR",
        "the local state directory (--state-dir)",
    ),
    (
        "FLEET_DISPATCH_DURABILITY",
        "full (the default) or relaxed (--durability)",
    ),
    (
        "FLEET_DISPATCH_POLL_INTERVAL",
        "the listener's poll interval (listen --poll-interval)",
    ),
    (
        "FLEET_DISPATCH_STOP_GRACE",
        "the most grace a stopped listener gives its running job (listen --stop-grace)",
    ),
    (
        "FLEET_DISPATCH_MAX_JOB_AGE",
        "the age past which listen refuses a job as stale, also the floor of sweep's retention (--max-job-age)",
    ),
    (
        "FLEET_DISPATCH_RETENTION",
        "how long sweep keeps a processed job's files (sweep --retention)",
    ),
    (
        "FLEET_DISPATCH_SLOTS",
        "how many jobs the listener runs at once (listen --slots)",
    ),
    (
        "FLEET_DISPATCH_CONFIG",
        "the config file to read instead of the default one; it must exist",
    ),
    (
        "FLEET_DISPATCH_FLEET",
        "a comma list of machine names that are valid targets before their listener first starts",
    ),
    (
        "FLEET_DISPATCH_JOB_ID",
        "set by the listener for a job; inside a job, enqueue records it as parentJobId and cancel applies the parent rule",
    ),
    (
        "FLEET_DISPATCH_JOB_TOKEN",
        "set by the listener for a job: the token by which mcp, run inside the job, acts as that job",
    ),
    (
        "FLEET_DISPATCH_TARGET, FLEET_DISPATCH_ORIGIN",
        "set by the listener for a job: the machine running it and the one that sent it",
    ),
    (
        "FLEET_DISPATCH_COMPLETE",
        "set to bash, zsh, fish, powershell or elvish: print that shell's completion script and exit; the scripts set it to ask the binary for completions",
    ),
    (
        "OneDrive",
        "when set, the default root is $OneDrive/fleet-dispatch",
    ),
    (
        "XDG_STATE_HOME",
        "the default state directory is $XDG_STATE_HOME/fleet-dispatch (else ~/.local/state/fleet-dispatch; %LOCALAPPDATA%\\fleet-dispatch on Windows)",
    ),
];

/// The on-disk layout, for the man page's FILES section.
pub const FILES: &[(&str, &str)] = &[
    ("<root>/<TARGET>/inbox/<jobId>.json", "queued jobs (signed)"),
    (
        "<root>/<TARGET>/cancel/<jobId>.json",
        "cancel markers (signed)",
    ),
    (
        "<root>/<TARGET>/running/<jobId>.json",
        "what the listener is running now",
    ),
    ("<root>/<TARGET>/results/<jobId>.json", "results (signed)"),
    (
        "<root>/<TARGET>/logs/<jobId>.stdout.log",
        "captured output, capped (.stderr.log likewise)",
    ),
    (
        "<root>/<TARGET>/archive/done/<jobId>.json",
        "processed jobs (replay guard)",
    ),
    (
        "<root>/<TARGET>/archive/consumed/<jobId>.cancel.json",
        "consumed markers",
    ),
    (
        "<root>/<TARGET>/archive/rejected/<name>",
        "rejected inputs, each with <name>.reason.json",
    ),
    ("<root>/<TARGET>/listener.json", "listener heartbeat"),
    (
        "<state>/<target in lower case>/listener.lock, ledger.jsonl",
        "local state: the one-listener lock; the ledger of processed ids, which also records the job in progress",
    ),
    (
        "~/.claude/fleet-dispatch.key",
        "the fleet key (default path); never inside the root",
    ),
];

/// The config file, for the man page's CONFIGURATION FILE section and the
/// hint of a bad file: where it is, its keys, and the precedence.
pub const CONFIG_FILE: ConfigFileDoc = ConfigFileDoc {
    paths: &[
        (
            "$FLEET_DISPATCH_CONFIG",
            "when set, this file and no other; it must exist",
        ),
        (
            "$XDG_CONFIG_HOME/fleet-dispatch/config.toml",
            "on Linux and other Unix (~/.config/fleet-dispatch/config.toml without XDG_CONFIG_HOME)",
        ),
        (
            "~/Library/Application Support/fleet-dispatch/config.toml",
            "on macOS",
        ),
        ("%APPDATA%\\fleet-dispatch\\config.toml", "on Windows"),
    ],
    keys: &[
        (
            "root = \"DIR\"",
            "the dispatch root (--root); ~ is the home directory",
        ),
        ("key_file = \"FILE\"", "the fleet key file (--key-file)"),
        (
            "identity_file = \"FILE\"",
            "this machine's identity file (--identity-file)",
        ),
        ("machine = \"NAME\"", "this machine's name (--machine)"),
        (
            "state_dir = \"DIR\"",
            "the local state directory (--state-dir)",
        ),
        (
            "fleet = [\"NAME\", ...]",
            "machines that are valid targets before their listener first starts",
        ),
        ("poll_interval = \"2s\"", "the listener's poll interval"),
        (
            "watch = false",
            "the listener polls only, without file-system events (listen --no-watch)",
        ),
        (
            "slots = 1",
            "how many jobs the listener runs at once (listen --slots)",
        ),
        ("durability = \"full\"", "full or relaxed (--durability)"),
        (
            "stop_grace = \"20s\"",
            "the most grace a stopped listener gives its running job (listen --stop-grace); unset, the job's own",
        ),
        (
            "retention = \"30d\"",
            "how long sweep keeps a processed job's files (sweep --retention); never under max_job_age plus a day",
        ),
        (
            "max_job_age = \"7d\"",
            "the age past which listen refuses a job as stale, and the floor of sweep's retention (--max-job-age)",
        ),
    ],
    precedence: "Every setting comes from its flag, else its FLEET_DISPATCH_* variable, else the config file, else the default. The file is TOML and optional; an unknown key is an error naming the file. `fleet-dispatch config` shows the result and where each setting came from.",
};

/// What [`CONFIG_FILE`] holds.
pub struct ConfigFileDoc {
    /// Where the file is looked for, and when.
    pub paths: &'static [(&'static str, &'static str)],
    /// Each key, as a line of the file, and what it sets.
    pub keys: &'static [(&'static str, &'static str)],
    /// How the file ranks against flags, variables and defaults.
    pub precedence: &'static str,
}

impl ConfigFileDoc {
    /// The documented keys' names, in the order of [`Self::keys`].
    pub fn key_names(&self) -> impl Iterator<Item = &'static str> {
        self.keys
            .iter()
            .map(|(line, _)| line.split(' ').next().unwrap_or(line))
    }
}

/// Reports a command line clap refused, and returns the exit status: a bad
/// value for a flag (an unknown `--priority`, say) is `VALIDATION_ERROR`
/// like every other bad value; help and version are success; anything
/// else is a command line that cannot be parsed. A program given without
/// the `--` that must come before it gets a hint. With `--json` on the
/// command line the refusal is the JSON error every other error prints
/// (docs/protocol.md §9.2), `VALIDATION_ERROR` whatever clap's reason, so
/// a program reading stdout always gets a document whose code matches the
/// exit status.
pub fn refuse(mut err: clap::Error, args: &[std::ffi::OsString]) -> u8 {
    use clap::error::ErrorKind;
    plain_usage(&mut err, args);
    let kind = err.kind();
    if matches!(
        kind,
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = err.print();
        return crate::exit::SUCCESS;
    }
    let hint = forgot_dashes(kind, args).then_some(DASHES_HINT);
    if json_asked(args) {
        let mut e = crate::error::Error::validation(named_message(&err, args));
        if let Some(h) = hint {
            e = e.hint(h);
        }
        e.report(true);
        return crate::exit::VALIDATION;
    }
    if matches!(
        kind,
        ErrorKind::InvalidValue | ErrorKind::ValueValidation | ErrorKind::InvalidUtf8
    ) {
        // A bad value is the SPEC's VALIDATION_ERROR, said in its form.
        let mut e = crate::error::Error::validation(named_message(&err, args));
        if let Some(h) = hint {
            e = e.hint(h);
        }
        e.report(false);
        return crate::exit::VALIDATION;
    }
    let _ = err.print();
    if let Some(h) = hint {
        eprintln!("hint: {h}");
    }
    crate::exit::USAGE
}

/// Puts the command's own usage line in `err`. Clap's lists the options
/// given, and counts as given one that its environment variable set, so
/// with `FLEET_DISPATCH_ROOT` exported a refused `result` read
/// `Usage: fleet-dispatch result --target <T> --job-id <ID> --root <DIR>`,
/// as if `--root` were required.
fn plain_usage(err: &mut clap::Error, args: &[std::ffi::OsString]) {
    use clap::error::{ContextKind, ContextValue};
    if err.get(ContextKind::Usage).is_none() {
        return;
    }
    let mut cli = Cli::command();
    cli.build();
    let named = args
        .iter()
        .skip(1)
        .take_while(|a| *a != "--")
        .filter_map(|a| a.to_str())
        .find(|a| cli.find_subcommand(a).is_some())
        .map(str::to_string);
    let usage = match named.and_then(|n| cli.find_subcommand_mut(n)) {
        Some(sub) => sub.render_usage(),
        None => cli.render_usage(),
    };
    err.insert(ContextKind::Usage, ContextValue::StyledStr(usage));
}

/// What a command line missing its `--` is told.
const DASHES_HINT: &str = "the program and its arguments come after `--`: fleet-dispatch enqueue --target PC -- PROGRAM [ARG]...";

/// Whether a refused `enqueue` line looks like a program given without `--`.
fn forgot_dashes(kind: clap::error::ErrorKind, args: &[std::ffi::OsString]) -> bool {
    use clap::error::ErrorKind;
    args.iter().any(|a| a == "enqueue")
        && !args.iter().any(|a| a == "--" || a == "--batch")
        && matches!(
            kind,
            ErrorKind::UnknownArgument | ErrorKind::MissingRequiredArgument
        )
}

/// Whether `--json` is among our own arguments: before any `--`, after
/// which the words are the job's.
fn json_asked(args: &[std::ffi::OsString]) -> bool {
    args.iter()
        .skip(1)
        .take_while(|a| *a != "--")
        .any(|a| a == "--json")
}

/// [`clap_message`], naming the `FLEET_DISPATCH_*` variable the bad value
/// came from when the flag itself is not on the command line: clap names
/// only the flag, which the user never typed.
fn named_message(err: &clap::Error, args: &[std::ffi::OsString]) -> String {
    use clap::error::{ContextKind, ContextValue};
    let message = clap_message(err);
    let Some(ContextValue::String(arg)) = err.get(ContextKind::InvalidArg) else {
        return message;
    };
    let Some(flag) = arg.split_whitespace().next() else {
        return message;
    };
    match given_by_variable(flag, args) {
        Some(var) => format!("{var}: {message}"),
        None => message,
    }
}

/// The `FLEET_DISPATCH_*` variable that gave the option `flag` (`--slots`)
/// its value: set, with the flag itself not on the command line `args`.
fn given_by_variable(flag: &str, args: &[std::ffi::OsString]) -> Option<String> {
    let long = flag.strip_prefix("--")?;
    let typed = args.iter().skip(1).take_while(|a| *a != "--").any(|a| {
        a.to_str().is_some_and(|a| {
            a.strip_prefix("--")
                .is_some_and(|a| a == long || a.starts_with(&format!("{long}=")))
        })
    });
    let var = variable_of(&Cli::command(), long)?;
    (!typed && std::env::var_os(&var).is_some()).then_some(var)
}

/// How a refusal names the option `flag` whose value this process was
/// given: by its variable when that is where the value came from, else by
/// the flag.
pub fn option_name(flag: &str) -> String {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    given_by_variable(flag, &args).unwrap_or_else(|| flag.to_string())
}

/// The environment variable of the option `--long`, anywhere in `cmd`.
fn variable_of(cmd: &clap::Command, long: &str) -> Option<String> {
    cmd.get_arguments()
        .find(|a| a.get_long() == Some(long))
        .and_then(|a| a.get_env())
        .map(|v| v.to_string_lossy().into_owned())
        .or_else(|| cmd.get_subcommands().find_map(|c| variable_of(c, long)))
}

/// clap's message on one line, without its `error:` prefix, usage and
/// pointer to `--help`.
fn clap_message(err: &clap::Error) -> String {
    let text = err.render().to_string();
    let text = text.trim_start().strip_prefix("error:").unwrap_or(&text);
    text.split("\n\n")
        .next()
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
