//! The service entry that keeps this machine's listener running: a systemd
//! user unit (Linux), a launchd agent (macOS) or a Task Scheduler task
//! (Windows), written as text from a [`Spec`] — the binary's absolute path
//! and the settings the listener must see. Pure: where the entry goes, its
//! text, its quoting, and the commands that start, stop and show it are
//! plain functions over values; [`install`] writes and removes the entry,
//! and `doctor` reads it.
//!
//! Why the entry pins values at all: a service manager starts the listener
//! with an environment of its own — neither the installing shell's
//! `FLEET_DISPATCH_*` variables nor its `PATH`, and not always its
//! `XDG_CONFIG_HOME` — so each setting the listener resolves differently
//! there is written into the entry as the installing shell resolved it.
//!
//! Quoting, per format: systemd's `Environment=` and `ExecStart=` take a
//! double-quoted word with C escapes, `%` doubled (a specifier) and, in
//! `ExecStart=` only, `$` doubled (variable expansion); launchd's plist and
//! Task Scheduler's XML take XML text, and a task's arguments are quoted
//! for `CommandLineToArgvW`. Task Scheduler expands `%NAME%` in its
//! arguments and has no escape for it, so a value with two `%` is refused
//! there. A control character (a newline in a path) fits none of them and
//! is refused everywhere.

pub mod install;

use std::path::{Path, PathBuf};

/// The line every entry opens with (in a comment): `service uninstall`
/// removes only an entry that has it.
pub const MARK: &str =
    "Written by `fleet-dispatch service install`; `fleet-dispatch service uninstall` removes it.";

/// The systemd user unit's name.
pub const SYSTEMD_UNIT: &str = "fleet-dispatch.service";

/// The launchd agent's label (also its file name, with `.plist`).
pub const LAUNCHD_LABEL: &str = "net.fleet-dispatch.listen";

/// The Task Scheduler task's name.
pub const TASK_NAME: &str = "fleet-dispatch-listen";

/// The stop grace an entry gives the listener when nothing sets one: a
/// job's own grace may be longer, and the service manager's stop timeout
/// must cover it.
pub const DEFAULT_STOP_GRACE_SECS: u64 = 20;

/// What the listener needs, beyond the stop grace, to record a stopped
/// job's end: the service manager's stop timeout is the grace plus this.
pub const STOP_MARGIN_SECS: u64 = 10;

/// Which service manager an entry is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Platform {
    /// A systemd user unit
    Linux,
    /// A launchd agent
    Macos,
    /// A Task Scheduler task
    Windows,
}

impl Platform {
    /// The platform this binary was built for (any other Unix counts as
    /// Linux: systemd is the likeliest manager there).
    pub fn host() -> Platform {
        if cfg!(windows) {
            Platform::Windows
        } else if cfg!(target_os = "macos") {
            Platform::Macos
        } else {
            Platform::Linux
        }
    }

    /// Its name as `--platform` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Linux => "linux",
            Platform::Macos => "macos",
            Platform::Windows => "windows",
        }
    }

    /// What kind of entry it gets, for messages.
    pub fn kind(self) -> &'static str {
        match self {
            Platform::Linux => "systemd user unit",
            Platform::Macos => "launchd agent",
            Platform::Windows => "Task Scheduler task",
        }
    }
}

/// One setting the entry pins: the variable that carries it and, for a
/// Task Scheduler task (which sets no variables), the flag that does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pinned {
    /// The `FLEET_DISPATCH_*` variable.
    pub var: &'static str,
    /// The `listen` flag with the same meaning, when there is one.
    pub flag: Option<&'static str>,
    /// The value, as the listener would resolve it in the installing shell.
    pub value: String,
}

/// Everything an entry is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// The binary's absolute path.
    pub exe: String,
    /// The settings, in the order written.
    pub pinned: Vec<Pinned>,
    /// The installing shell's `PATH`, which jobs inherit; `None` when unset.
    pub path: Option<String>,
    /// The home directory (launchd's working directory and log folder).
    pub home: String,
    /// The stop grace in seconds (pinned too, as `listen --stop-grace`):
    /// the service manager's stop timeout adds [`STOP_MARGIN_SECS`].
    pub stop_grace_secs: u64,
    /// `DOMAIN\user`, which a Task Scheduler logon trigger must name.
    pub user: Option<String>,
}

impl Spec {
    /// The value pinned for `var`, when it is.
    pub fn pinned(&self, var: &str) -> Option<&str> {
        self.pinned
            .iter()
            .find(|p| p.var == var)
            .map(|p| p.value.as_str())
    }
}

/// A value an entry cannot hold, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unwritable {
    /// What the value is (`the binary path`, `FLEET_DISPATCH_ROOT`).
    pub what: String,
    /// The value.
    pub value: String,
    /// Why it cannot be written.
    pub why: &'static str,
}

/// Where the entry for `platform` lives, from the environment `var` reads:
/// systemd's user unit folder (`$XDG_CONFIG_HOME/systemd/user`, else
/// `~/.config/systemd/user`), `~/Library/LaunchAgents`, or for Task
/// Scheduler the XML it was registered from, in `%LOCALAPPDATA%\fleet-dispatch`
/// (`~/AppData/Local/…` when that is unset). `None` without a home.
pub fn entry_path(platform: Platform, var: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let var = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let home = var("HOME").or_else(|| var("USERPROFILE"));
    Some(match platform {
        Platform::Linux => var("XDG_CONFIG_HOME")
            .or_else(|| home.map(|h| h.join(".config")))?
            .join("systemd")
            .join("user")
            .join(SYSTEMD_UNIT),
        Platform::Macos => home?
            .join("Library")
            .join("LaunchAgents")
            .join(format!("{LAUNCHD_LABEL}.plist")),
        Platform::Windows => var("LOCALAPPDATA")
            .or_else(|| home.map(|h| h.join("AppData").join("Local")))?
            .join("fleet-dispatch")
            .join(format!("{TASK_NAME}.xml")),
    })
}

/// The launchd agent's log file under `home`.
pub fn launchd_log(home: &str) -> String {
    format!("{home}/Library/Logs/fleet-dispatch-listen.log")
}

/// The entry's text for `platform`, or the first value it cannot hold.
pub fn render(platform: Platform, spec: &Spec) -> Result<String, Unwritable> {
    check(platform, spec)?;
    Ok(match platform {
        Platform::Linux => systemd_unit(spec),
        Platform::Macos => launchd_plist(spec),
        Platform::Windows => task_xml(spec),
    })
}

/// The values `spec` writes, each named, for [`check`].
fn values(spec: &Spec) -> Vec<(String, &str)> {
    let mut v = vec![
        ("the binary path".to_string(), spec.exe.as_str()),
        ("HOME".to_string(), spec.home.as_str()),
    ];
    v.extend(
        spec.pinned
            .iter()
            .map(|p| (p.var.to_string(), p.value.as_str())),
    );
    v.extend(spec.path.as_deref().map(|p| ("PATH".to_string(), p)));
    v.extend(spec.user.as_deref().map(|u| ("the user".to_string(), u)));
    v
}

/// Refuses a value no entry can hold: a control character anywhere, and
/// for Task Scheduler two `%`, which it would expand as a variable.
fn check(platform: Platform, spec: &Spec) -> Result<(), Unwritable> {
    for (what, value) in values(spec) {
        let refuse = |why| {
            Err(Unwritable {
                what: what.clone(),
                value: value.to_string(),
                why,
            })
        };
        if value.chars().any(char::is_control) {
            return refuse(
                "it holds a control character (a line break?), which no service entry can carry",
            );
        }
        if platform == Platform::Windows && value.matches('%').count() >= 2 {
            return refuse(
                "Task Scheduler would expand %…% in it as a variable, and has no escape for %",
            );
        }
    }
    Ok(())
}

/// A systemd word: double-quoted, `\` and `"` escaped, `%` doubled (a
/// specifier), and with `dollar`, `$` doubled (`ExecStart=` expands
/// variables; `Environment=` does not).
pub fn systemd_quote(s: &str, dollar: bool) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '%' => out.push_str("%%"),
            '$' if dollar => out.push_str("$$"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Text for an XML element's content or an attribute.
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// One argument quoted as `CommandLineToArgvW` reads it back: in double
/// quotes, a quote escaped with a backslash, and backslashes doubled
/// where they precede a quote (or the closing one).
pub fn windows_arg(s: &str) -> String {
    let mut out = String::from("\"");
    let mut slashes = 0;
    for c in s.chars() {
        match c {
            '\\' => slashes += 1,
            '"' => {
                out.push_str(&"\\".repeat(slashes * 2 + 1));
                out.push('"');
                slashes = 0;
            }
            c => {
                out.push_str(&"\\".repeat(slashes));
                out.push(c);
                slashes = 0;
            }
        }
    }
    out.push_str(&"\\".repeat(slashes * 2));
    out.push('"');
    out
}

/// The variables a systemd unit or launchd agent sets: the pinned
/// settings, then `PATH`.
fn environment(spec: &Spec) -> Vec<(&str, String)> {
    let mut env: Vec<(&str, String)> = spec
        .pinned
        .iter()
        .map(|p| (p.var, p.value.clone()))
        .collect();
    if let Some(p) = &spec.path {
        env.push(("PATH", p.clone()));
    }
    env
}

/// The systemd user unit: `ExecStart=` the binary with `listen`, the
/// settings as `Environment=` lines, restarted 30 s after any failure
/// (exit 75, another listener holds the lock, included), and a stop
/// timeout that covers the stop grace.
pub fn systemd_unit(spec: &Spec) -> String {
    let mut s = String::new();
    s.push_str(&format!("# {MARK}\n"));
    s.push_str(
        "# Start: systemctl --user daemon-reload && systemctl --user enable --now fleet-dispatch\n",
    );
    s.push_str("# Log:   journalctl --user -u fleet-dispatch -f\n\n");
    s.push_str("[Unit]\n");
    s.push_str(
        "Description=fleet-dispatch listener (runs this machine's jobs from the shared folder)\n",
    );
    s.push_str("Documentation=man:fleet-dispatch-listen(1)\n");
    s.push_str("StartLimitIntervalSec=0\n\n");
    s.push_str("[Service]\n");
    s.push_str("Type=exec\n");
    s.push_str(&format!(
        "ExecStart={} listen\n",
        systemd_quote(&spec.exe, true)
    ));
    for (k, v) in environment(spec) {
        s.push_str(&format!(
            "Environment={}\n",
            systemd_quote(&format!("{k}={v}"), false)
        ));
    }
    s.push_str("Restart=on-failure\n");
    s.push_str("RestartSec=30s\n");
    s.push_str("KillMode=mixed\n");
    s.push_str("KillSignal=SIGTERM\n");
    s.push_str(&format!(
        "TimeoutStopSec={}s\n",
        spec.stop_grace_secs + STOP_MARGIN_SECS
    ));
    s.push_str("SuccessExitStatus=130\n\n");
    s.push_str("[Install]\n");
    s.push_str("WantedBy=default.target\n");
    s
}

/// The launchd agent: started at login and again whenever it exits (at
/// most every 30 s), its output in `~/Library/Logs`.
pub fn launchd_plist(spec: &Spec) -> String {
    let x = xml_escape;
    let log = launchd_log(&spec.home);
    let mut s = String::new();
    s.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    s.push_str("<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n");
    s.push_str(&format!("<!-- {MARK} -->\n"));
    s.push_str("<plist version=\"1.0\">\n<dict>\n");
    s.push_str(&format!(
        "\t<key>Label</key>\n\t<string>{LAUNCHD_LABEL}</string>\n"
    ));
    s.push_str(&format!(
        "\t<key>ProgramArguments</key>\n\t<array>\n\t\t<string>{}</string>\n\t\t<string>listen</string>\n\t</array>\n",
        x(&spec.exe)
    ));
    s.push_str("\t<key>EnvironmentVariables</key>\n\t<dict>\n");
    for (k, v) in environment(spec) {
        s.push_str(&format!(
            "\t\t<key>{}</key>\n\t\t<string>{}</string>\n",
            x(k),
            x(&v)
        ));
    }
    s.push_str("\t</dict>\n");
    s.push_str(&format!(
        "\t<key>WorkingDirectory</key>\n\t<string>{}</string>\n",
        x(&spec.home)
    ));
    s.push_str("\t<key>RunAtLoad</key>\n\t<true/>\n");
    s.push_str("\t<key>KeepAlive</key>\n\t<true/>\n");
    s.push_str("\t<key>ThrottleInterval</key>\n\t<integer>30</integer>\n");
    s.push_str(&format!(
        "\t<key>ExitTimeOut</key>\n\t<integer>{}</integer>\n",
        spec.stop_grace_secs + STOP_MARGIN_SECS
    ));
    for k in ["StandardOutPath", "StandardErrorPath"] {
        s.push_str(&format!(
            "\t<key>{k}</key>\n\t<string>{}</string>\n",
            x(&log)
        ));
    }
    s.push_str("</dict>\n</plist>\n");
    s
}

/// The arguments a Task Scheduler task passes: `listen`, then each pinned
/// setting that has a flag. A task sets no variables;
/// it runs with the account's own environment (its `PATH` from the
/// registry), so `PATH` and the settings without a flag are not carried.
pub fn task_arguments(spec: &Spec) -> String {
    let mut args = vec!["listen".to_string()];
    for p in &spec.pinned {
        if let Some(flag) = p.flag {
            args.push(flag.to_string());
            args.push(windows_arg(&p.value));
        }
    }
    args.join(" ")
}

/// The pinned settings a Task Scheduler task cannot carry (no flag).
pub fn not_carried(platform: Platform, spec: &Spec) -> Vec<&'static str> {
    if platform != Platform::Windows {
        return Vec::new();
    }
    let mut v: Vec<&str> = spec
        .pinned
        .iter()
        .filter(|p| p.flag.is_none())
        .map(|p| p.var)
        .collect();
    if spec.path.is_some() {
        v.push("PATH");
    }
    v
}

/// The Task Scheduler task: started 30 s after this user logs on and
/// again every 5 minutes while it is not running, never timed out, at
/// normal priority (as `contrib/windows/fleet-dispatch-listen.xml`, whose
/// comments say why each setting). No encoding in the declaration: it is
/// written as UTF-16 ([`utf16`]), which schtasks reads.
pub fn task_xml(spec: &Spec) -> String {
    let x = xml_escape;
    let user = spec
        .user
        .as_deref()
        .map(|u| format!("      <UserId>{}</UserId>\n", x(u)))
        .unwrap_or_default();
    let mut s = String::new();
    s.push_str("<?xml version=\"1.0\"?>\n");
    s.push_str(&format!("<!-- {MARK} -->\n"));
    s.push_str(
        "<Task version=\"1.2\" xmlns=\"http://schemas.microsoft.com/windows/2004/02/mit/task\">\n",
    );
    s.push_str("  <RegistrationInfo>\n    <Description>fleet-dispatch listener: runs this machine's jobs from the shared folder.</Description>\n  </RegistrationInfo>\n");
    s.push_str("  <Triggers>\n    <LogonTrigger>\n      <Enabled>true</Enabled>\n");
    s.push_str("      <Repetition>\n        <Interval>PT5M</Interval>\n        <StopAtDurationEnd>false</StopAtDurationEnd>\n      </Repetition>\n");
    s.push_str(&user);
    s.push_str("      <Delay>PT30S</Delay>\n    </LogonTrigger>\n  </Triggers>\n");
    s.push_str("  <Principals>\n    <Principal id=\"Author\">\n");
    s.push_str(&user);
    s.push_str("      <LogonType>InteractiveToken</LogonType>\n      <RunLevel>LeastPrivilege</RunLevel>\n    </Principal>\n  </Principals>\n");
    s.push_str("  <Settings>\n");
    for (k, v) in [
        ("MultipleInstancesPolicy", "IgnoreNew"),
        ("DisallowStartIfOnBatteries", "false"),
        ("StopIfGoingOnBatteries", "false"),
        ("AllowHardTerminate", "true"),
        ("StartWhenAvailable", "false"),
        ("RunOnlyIfNetworkAvailable", "false"),
        ("AllowStartOnDemand", "true"),
        ("Enabled", "true"),
        ("Hidden", "false"),
        ("RunOnlyIfIdle", "false"),
        ("WakeToRun", "false"),
        ("ExecutionTimeLimit", "PT0S"),
        ("Priority", "5"),
    ] {
        s.push_str(&format!("    <{k}>{v}</{k}>\n"));
    }
    s.push_str("    <RestartOnFailure>\n      <Interval>PT1M</Interval>\n      <Count>10</Count>\n    </RestartOnFailure>\n");
    s.push_str("  </Settings>\n");
    s.push_str("  <Actions Context=\"Author\">\n    <Exec>\n");
    s.push_str(&format!("      <Command>{}</Command>\n", x(&spec.exe)));
    s.push_str(&format!(
        "      <Arguments>{}</Arguments>\n",
        x(&task_arguments(spec))
    ));
    s.push_str(&format!(
        "      <WorkingDirectory>{}</WorkingDirectory>\n",
        x(&spec.home)
    ));
    s.push_str("    </Exec>\n  </Actions>\n</Task>\n");
    s
}

/// The bytes written for `platform`: UTF-16 little-endian with a byte
/// order mark for Task Scheduler (schtasks refuses UTF-8 that says so, and
/// a path may not be ASCII), UTF-8 otherwise.
pub fn encode(platform: Platform, text: &str) -> Vec<u8> {
    match platform {
        Platform::Windows => utf16(text),
        _ => text.as_bytes().to_vec(),
    }
}

/// `text` as UTF-16 little-endian with a byte order mark.
pub fn utf16(text: &str) -> Vec<u8> {
    let mut out = vec![0xFF, 0xFE];
    for u in text.encode_utf16() {
        out.extend_from_slice(&u.to_le_bytes());
    }
    out
}

/// The text of an entry's bytes as [`encode`] wrote them; `None` when they
/// are not (then they differ from any entry this module writes).
pub fn decode(bytes: &[u8]) -> Option<String> {
    match bytes {
        [0xFF, 0xFE, rest @ ..] if rest.len() % 2 == 0 => {
            let units: Vec<u16> = rest
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect();
            String::from_utf16(&units).ok()
        }
        _ => String::from_utf8(bytes.to_vec()).ok(),
    }
}

/// The commands that start, stop and show an entry at `path`, and after
/// `service uninstall`, stop what still runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commands {
    /// Starts it now and at every login.
    pub start: String,
    /// Stops it.
    pub stop: String,
    /// Shows its log.
    pub log: String,
    /// Restarts it with a rewritten entry.
    pub restart: String,
    /// After the entry is removed: stops what still runs and forgets it.
    pub after_removal: String,
}

/// [`Commands`] for `platform`'s entry at `path`.
pub fn commands(platform: Platform, path: &Path, home: &str) -> Commands {
    let unit = SYSTEMD_UNIT.trim_end_matches(".service");
    match platform {
        Platform::Linux => Commands {
            start: format!(
                "systemctl --user daemon-reload && systemctl --user enable --now {unit}"
            ),
            stop: format!("systemctl --user stop {unit}"),
            log: format!("journalctl --user -u {unit} -f"),
            restart: format!("systemctl --user daemon-reload && systemctl --user restart {unit}"),
            after_removal: format!("systemctl --user stop {unit}; systemctl --user daemon-reload"),
        },
        Platform::Macos => Commands {
            start: format!(
                "launchctl bootstrap gui/$(id -u) '{}'",
                path.display().to_string().replace('\'', r"'\''")
            ),
            stop: format!("launchctl bootout gui/$(id -u)/{LAUNCHD_LABEL}"),
            restart: format!(
                "launchctl bootout gui/$(id -u)/{LAUNCHD_LABEL}; launchctl bootstrap gui/$(id -u) '{}'",
                path.display().to_string().replace('\'', r"'\''")
            ),
            log: format!("tail -f '{}'", launchd_log(home).replace('\'', r"'\''")),
            after_removal: format!("launchctl bootout gui/$(id -u)/{LAUNCHD_LABEL}"),
        },
        Platform::Windows => Commands {
            start: format!(
                "schtasks /Create /F /TN {TASK_NAME} /XML \"{}\" && schtasks /Run /TN {TASK_NAME}",
                path.display()
            ),
            stop: format!("schtasks /End /TN {TASK_NAME}"),
            restart: format!("schtasks /End /TN {TASK_NAME} & schtasks /Run /TN {TASK_NAME}"),
            log: format!("schtasks /Query /TN {TASK_NAME} /V /FO LIST"),
            after_removal: format!(
                "schtasks /End /TN {TASK_NAME} & schtasks /Delete /F /TN {TASK_NAME}"
            ),
        },
    }
}

/// True when `exe` is a build inside a cargo target folder
/// (`…/target/debug/…`, `…/target/<triple>/release/…`): a service pointed there
/// breaks at the next `cargo clean`, and runs whatever was built last.
pub fn is_build_output(exe: &str) -> bool {
    let parts: Vec<&str> = exe.split(['/', '\\']).collect();
    let profile = |p: &str| p == "debug" || p == "release";
    // `target/<profile>/…`, or `target/<triple>/<profile>/…` when cross-built.
    parts.iter().enumerate().any(|(i, p)| {
        *p == "target"
            && (parts.get(i + 1).is_some_and(|n| profile(n))
                || parts.get(i + 2).is_some_and(|n| profile(n)))
    })
}

/// The lines of `installed` that `expected` does not have, for a report
/// of how an entry differs from what `service install` would write now.
pub fn differing_lines<'a>(installed: &'a str, expected: &str) -> Vec<&'a str> {
    let want: std::collections::HashSet<&str> = expected.lines().map(str::trim).collect();
    installed
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !want.contains(l))
        .collect()
}

#[cfg(test)]
mod tests;
