//! The reference sections of the man page that are not flags: the
//! environment variables, the files of the layout and the config file.
//! Kept beside the clap definition so the man page is generated from one
//! place; `config` also names [`CONFIG_FILE`]'s keys in a bad file's hint.

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
        "FLEET_DISPATCH_AUTH",
        "shared-key (the default), roster or both (--auth)",
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
            "auth = \"shared-key\"",
            "shared-key, roster or both (--auth; docs/identities.md)",
        ),
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
        (
            "s3_endpoint = \"URL\"",
            "an s3:// root's store (FLEET_DISPATCH_S3_ENDPOINT; docs/object-store.md)",
        ),
        (
            "s3_region = \"REGION\"",
            "the region its requests are signed for (FLEET_DISPATCH_S3_REGION)",
        ),
        (
            "s3_path_style = true",
            "ENDPOINT/BUCKET/KEY URLs (FLEET_DISPATCH_S3_PATH_STYLE)",
        ),
        (
            "s3_allow_http = false",
            "allow a plain-HTTP endpoint off this machine (FLEET_DISPATCH_S3_ALLOW_HTTP)",
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
