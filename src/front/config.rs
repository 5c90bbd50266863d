//! Resolves the global options into the places and identity a command works
//! with, refusing unsafe set-ups (no root, a key or state directory inside
//! the synced root).
//!
//! Precedence: a flag, then its `FLEET_DISPATCH_*` variable, then the
//! optional config file, then the default. The file (`config.toml` in the user's config directory, or the
//! path in `FLEET_DISPATCH_CONFIG`) lets a Task Scheduler entry or a service
//! unit stay one short line.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::base::error::{Error, Result};
use crate::base::names::Machine;
use crate::front::cli::{Given, Global};
use crate::protocol::jobenv;
use crate::store::layout::{self, StateDirs, TargetDirs};

mod file;
mod key;
mod rules;
mod service;
pub mod shown;
mod store;

use file::load_config;
pub use file::{ConfigFile, FileConfig, config_path, parse_config};
pub use store::S3_KEYS;

/// Where a setting's value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A command-line flag.
    Flag,
    /// A `FLEET_DISPATCH_*` environment variable.
    Variable,
    /// The config file.
    File,
    /// The built-in default.
    Default,
}

impl Source {
    /// The word `config` prints: flag, variable, file, default.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Flag => "flag",
            Source::Variable => "variable",
            Source::File => "file",
            Source::Default => "default",
        }
    }
}

/// A setting's value and where it came from. The value is `None` only when
/// nothing set it and the default cannot be worked out (no `HOME`, no
/// `OneDrive` for the root).
#[derive(Debug, Clone, PartialEq)]
pub struct Setting<T> {
    /// The effective value.
    pub value: Option<T>,
    /// Where it came from.
    pub source: Source,
}

impl<T> Setting<T> {
    /// The precedence, in one place: a flag or its variable (`given`, with
    /// how clap saw it), else the file, else the default.
    fn resolve(
        given: Option<(T, Given)>,
        file: Option<T>,
        default: impl FnOnce() -> Option<T>,
    ) -> Setting<T> {
        match (given, file) {
            (Some((value, how)), _) => Setting {
                value: Some(value),
                source: match how {
                    Given::Flag => Source::Flag,
                    Given::Variable => Source::Variable,
                },
            },
            (None, Some(value)) => Setting {
                value: Some(value),
                source: Source::File,
            },
            (None, None) => Setting {
                value: default(),
                source: Source::Default,
            },
        }
    }
}

/// The variable that lists fleet members.
pub const FLEET_VAR: &str = "FLEET_DISPATCH_FLEET";

/// The variable that sets the listener's poll interval.
pub const POLL_INTERVAL_VAR: &str = "FLEET_DISPATCH_POLL_INTERVAL";

/// The listener's poll interval when nothing sets it.
pub const DEFAULT_POLL_INTERVAL: &str = "2s";

/// The variable that sets the listener's stop grace.
pub const STOP_GRACE_VAR: &str = "FLEET_DISPATCH_STOP_GRACE";
/// The variable that sets how many jobs the listener runs at once.
pub const SLOTS_VAR: &str = "FLEET_DISPATCH_SLOTS";

/// How many jobs the listener runs at once when nothing sets it: one, the
/// serial drain.
pub const DEFAULT_SLOTS: u64 = 1;

pub use crate::front::cli::MAX_SLOTS;

/// The variable that sets `sweep`'s retention.
pub const RETENTION_VAR: &str = "FLEET_DISPATCH_RETENTION";

/// `sweep`'s retention when nothing sets it (raised to the floor when the
/// job max age asks for more, see [`crate::base::retention::retention`]).
pub const DEFAULT_RETENTION: &str = "30d";

/// The variable that sets the job max age of `listen` and `sweep`.
pub const MAX_JOB_AGE_VAR: &str = "FLEET_DISPATCH_MAX_JOB_AGE";

/// The job max age when nothing sets it (docs/protocol.md §6).
pub const DEFAULT_MAX_JOB_AGE: &str = "7d";

/// What every command knows about where it runs.
#[derive(Debug, Clone)]
pub struct Context {
    json: bool,
    root: Setting<PathBuf>,
    key_file: Setting<PathBuf>,
    identity_file: Setting<PathBuf>,
    machine: Setting<String>,
    state_dir: Setting<PathBuf>,
    durability: Setting<crate::store::fsops::Durability>,
    auth: Setting<crate::trust::Auth>,
    file: FileConfig,
    config_file: Option<ConfigFile>,
}

impl Context {
    /// A context from parsed global options and the config file.
    pub fn load(global: Global) -> Result<Context> {
        let (file, config_file) = load_config()?;
        let mut ctx = Context::with_file(global, file);
        ctx.config_file = config_file;
        Ok(ctx)
    }

    /// A context from options and an already-read config.
    pub fn with_file(global: Global, file: FileConfig) -> Context {
        let given = |id: &str| global.given(id);
        let host =
            || crate::platform::hostname().map(|h| h.split('.').next().unwrap_or("").to_string());
        Context {
            json: global.json,
            root: Setting::resolve(
                global.root.clone().map(|v| (v, given("root"))),
                file.root.clone(),
                layout::default_root,
            ),
            key_file: Setting::resolve(
                global.key_file.clone().map(|v| (v, given("key_file"))),
                file.key_file.clone(),
                layout::default_key_file,
            ),
            identity_file: Setting::resolve(
                global
                    .identity_file
                    .clone()
                    .map(|v| (v, given("identity_file"))),
                file.identity_file.clone(),
                layout::default_identity_file,
            ),
            machine: Setting::resolve(
                global.machine.clone().map(|v| (v, given("machine"))),
                file.machine.clone(),
                host,
            ),
            state_dir: Setting::resolve(
                global.state_dir.clone().map(|v| (v, given("state_dir"))),
                file.state_dir.clone(),
                layout::default_state_dir,
            ),
            durability: Setting::resolve(
                global.durability.map(|v| (v, given("durability"))),
                file.durability,
                || Some(crate::store::fsops::Durability::default()),
            ),
            auth: Setting::resolve(global.auth.map(|v| (v, given("auth"))), file.auth, || {
                Some(crate::trust::Auth::default())
            }),
            file,
            config_file: None,
        }
    }

    /// The dispatch root as configured, whether or not it exists.
    pub fn root_setting(&self) -> &Setting<PathBuf> {
        &self.root
    }

    /// The key file as configured, whether or not it exists.
    pub fn key_file_setting(&self) -> &Setting<PathBuf> {
        &self.key_file
    }

    /// The identity file as configured, whether or not it exists.
    pub fn identity_file_setting(&self) -> &Setting<PathBuf> {
        &self.identity_file
    }

    /// This machine's name as configured (the host name by default), not
    /// yet checked.
    pub fn machine_setting(&self) -> &Setting<String> {
        &self.machine
    }

    /// The state directory as configured, whether or not it exists.
    pub fn state_dir_setting(&self) -> &Setting<PathBuf> {
        &self.state_dir
    }

    /// The signature mode and where it came from.
    pub fn auth_setting(&self) -> &Setting<crate::trust::Auth> {
        &self.auth
    }

    /// The signature mode ([`crate::trust::Auth`]).
    pub fn auth(&self) -> crate::trust::Auth {
        self.auth.value.unwrap_or_default()
    }

    /// The durability level and where it came from.
    pub fn durability_setting(&self) -> &Setting<crate::store::fsops::Durability> {
        &self.durability
    }

    /// The config file read or looked for; `None` when there is nowhere to
    /// look (no home directory) or the context was built without one.
    pub fn config_file(&self) -> Option<&ConfigFile> {
        self.config_file.as_ref()
    }

    /// How a refusal of a value from `source` names it and which error it
    /// is, the one place that says so: `CONFIG` naming the config file and
    /// its `key` when the file gave the value, else `VALIDATION_ERROR`
    /// naming the `flag` (or the bare `key` for a default). The value's
    /// rule itself is in [`rules`], the same whatever the source.
    fn refusal(
        &self,
        source: Source,
        key: &str,
        flag: &str,
        message: impl std::fmt::Display,
    ) -> Error {
        match source {
            Source::File => {
                let path = self.config_file.as_ref().map(|f| f.path.as_path());
                file::refusal(path, key, message)
            }
            Source::Default => Error::validation(format!("{key}: {message}")),
            Source::Flag | Source::Variable => Error::validation(format!(
                "{}: {message}",
                crate::front::cli::option_name(flag)
            )),
        }
    }

    /// Where a path the config file gave came from, for a refusal that is
    /// about more than the value alone (a root that does not exist, a state
    /// directory inside it): ` (key in config file PATH)`, or nothing when
    /// the value came from elsewhere.
    fn given_in_file(&self, source: Source, key: &str) -> String {
        match (source, &self.config_file) {
            (Source::File, Some(f)) => format!(" ({key} in config file {})", f.path.display()),
            _ => String::new(),
        }
    }

    /// A setting written as text (a duration): `given` (the flag or its
    /// variable), else the file's `file`, else `default`.
    fn text_setting(
        given: Option<(&str, Given)>,
        file: &Option<String>,
        default: Option<&str>,
    ) -> Setting<String> {
        Setting::resolve(
            given.map(|(v, how)| (v.to_string(), how)),
            file.clone(),
            || default.map(str::to_string),
        )
    }

    /// The poll interval's text and where it came from: `given` (the flag
    /// or its variable), else the file, else 2 s.
    pub fn poll_interval_setting(&self, given: Option<(&str, Given)>) -> Setting<String> {
        Self::text_setting(given, &self.file.poll_interval, Some(DEFAULT_POLL_INTERVAL))
    }

    /// The stop grace's text and where it came from: `given` (the flag or
    /// its variable), else the file, else none (the job's own grace).
    pub fn stop_grace_setting(&self, given: Option<(&str, Given)>) -> Setting<String> {
        Self::text_setting(given, &self.file.stop_grace, None)
    }

    /// The most grace a stopped listener gives its running job: the flag
    /// or its variable, else the file, else none (the job's own grace).
    pub fn stop_grace(&self, flag: Option<&str>) -> Result<Option<Duration>> {
        let setting = self.stop_grace_setting(flag.map(|f| (f, Given::Flag)));
        let Some(text) = &setting.value else {
            return Ok(None);
        };
        rules::stop_grace(text)
            .map(Some)
            .map_err(|m| self.refusal(setting.source, "stop_grace", "--stop-grace", m))
    }

    /// Fleet members and where the list came from: `FLEET_DISPATCH_FLEET`
    /// (a comma list), else the file, else none.
    pub fn fleet_setting(&self) -> Setting<Vec<String>> {
        let var = std::env::var(FLEET_VAR)
            .ok()
            .filter(|l| !l.trim().is_empty())
            .map(|list| {
                let names = list
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect();
                (names, Given::Variable)
            });
        Setting::resolve(var, self.file.fleet.clone(), || Some(Vec::new()))
    }

    /// `sweep`'s retention text and where it came from: `given` (the flag
    /// or its variable), else the file, else [`DEFAULT_RETENTION`].
    pub fn retention_setting(&self, given: Option<(&str, Given)>) -> Setting<String> {
        Self::text_setting(given, &self.file.retention, Some(DEFAULT_RETENTION))
    }

    /// `sweep`'s retention: the flag or its variable, else the file, else
    /// 30 days raised to the floor. A value under the floor (the job max age
    /// plus a day, docs/protocol.md §8.3) is refused, as `CONFIG` when the
    /// config file holds it and `VALIDATION_ERROR` otherwise, naming the
    /// floor.
    pub fn retention(&self, flag: Option<&str>, job_max_age: Duration) -> Result<Duration> {
        let setting = self.retention_setting(flag.map(|f| (f, Given::Flag)));
        let text = setting.value.clone().unwrap_or_default();
        let refuse =
            |message: String| self.refusal(setting.source, "retention", "--retention", message);
        let given = match setting.source {
            Source::Default => None,
            _ => Some(rules::retention(&text).map_err(refuse)?),
        };
        crate::base::retention::retention(given, job_max_age).map_err(|floor| {
            refuse(format!(
                "{text} is shorter than its floor {}: the job max age ({}) plus {}, \
                 so that a pruned job file that comes back is still refused as stale",
                crate::base::clock::format_duration(floor),
                crate::base::clock::format_duration(job_max_age),
                crate::base::clock::format_duration(crate::base::retention::RETENTION_MARGIN),
            ))
            .hint(format!(
                "use a retention of {} or more, or leave it unset",
                crate::base::clock::format_duration(floor)
            ))
        })
    }

    /// The job max age's text and where it came from: `given` (the flag or
    /// its variable), else the file, else [`DEFAULT_MAX_JOB_AGE`].
    pub fn max_job_age_setting(&self, given: Option<(&str, Given)>) -> Setting<String> {
        Self::text_setting(given, &self.file.max_job_age, Some(DEFAULT_MAX_JOB_AGE))
    }

    /// The job max age `listen` refuses by and `sweep` keeps files for at
    /// least: the flag or its variable, else the file, else 7 days. One
    /// setting for both, so a sweep beside a listener with a longer max age
    /// never prunes a job file the age rule would no longer refuse. 0 is
    /// refused: it would make every job stale.
    pub fn max_job_age(&self, flag: Option<&str>) -> Result<Duration> {
        let setting = self.max_job_age_setting(flag.map(|f| (f, Given::Flag)));
        let text = setting.value.clone().unwrap_or_default();
        rules::max_job_age(&text)
            .map_err(|m| self.refusal(setting.source, "max_job_age", "--max-job-age", m))
    }

    /// The poll interval: the flag or its variable, else the file, else 2 s.
    /// 0 is refused: the listener would rescan without a pause.
    pub fn poll_interval(&self, flag: Option<&str>) -> Result<Duration> {
        let setting = self.poll_interval_setting(flag.map(|f| (f, Given::Flag)));
        let text = setting.value.clone().unwrap_or_default();
        rules::poll_interval(&text)
            .map_err(|m| self.refusal(setting.source, "poll_interval", "--poll-interval", m))
    }

    /// The slot count's text and where it came from: `given` (the flag or
    /// its variable), else the file, else [`DEFAULT_SLOTS`].
    pub fn slots_setting(&self, given: Option<(&str, Given)>) -> Setting<String> {
        Setting::resolve(
            given.map(|(v, how)| (v.to_string(), how)),
            self.file.slots.map(|n| n.to_string()),
            || Some(DEFAULT_SLOTS.to_string()),
        )
    }

    /// How many jobs the listener runs at once: the flag or its variable,
    /// else the file, else 1. Anything but a whole number from 1 to
    /// [`MAX_SLOTS`] is refused, as `CONFIG` when the config file holds it
    /// and `VALIDATION_ERROR` otherwise.
    pub fn slots(&self, flag: Option<&str>) -> Result<usize> {
        let setting = self.slots_setting(flag.map(|f| (f, Given::Flag)));
        let text = setting.value.clone().unwrap_or_default();
        rules::slots(&text).map_err(|m| self.refusal(setting.source, "slots", "--slots", m))
    }

    /// Whether the listener watches for file-system events, and where that
    /// came from: the file's `watch`, else yes (`listen --no-watch` turns
    /// it off either way; no variable sets it).
    pub fn watch_setting(&self) -> Setting<bool> {
        Setting::resolve(None, self.file.watch, || Some(true))
    }

    /// Whether the listener watches for file-system events ([`Self::watch_setting`]).
    pub fn watch(&self) -> bool {
        self.watch_setting().value.unwrap_or(true)
    }

    /// The durability level: the flag or its variable, else the file, else
    /// full.
    pub fn durability(&self) -> crate::store::fsops::Durability {
        self.durability.value.unwrap_or_default()
    }

    /// True when output should be one JSON document.
    pub fn json(&self) -> bool {
        self.json
    }

    /// The configured root's text when it names an object store
    /// (`s3://…`, docs/object-store.md).
    pub fn s3_root(&self) -> Option<String> {
        let text = self.root.value.as_ref()?.to_str()?;
        crate::store::objstore::is_s3(text).then(|| text.to_string())
    }

    /// The dispatch root; it must exist (it is the shared folder). An
    /// object-store root is refused here: the commands that work on one
    /// ([`store::S3_WORKS`]) take it before asking.
    pub fn root(&self) -> Result<PathBuf> {
        let root = self.root.value.clone().ok_or_else(|| {
            Error::config("no dispatch root: pass --root DIR or set FLEET_DISPATCH_ROOT")
                .hint("the root is a folder every machine shares, e.g. ~/OneDrive/fleet-dispatch")
        })?;
        if let Some(text) = self.s3_root() {
            return Err(Error::config(format!(
                "dispatch root {text} is an object store: in this version only {} work on an s3:// root",
                store::S3_WORKS
            ))
            .hint("use a shared folder as the root for this command; see docs/object-store.md"));
        }
        let given = self.given_in_file(self.root.source, "root");
        let fix = match self.root.source {
            Source::File => "fix root in the config file",
            _ => "fix --root / FLEET_DISPATCH_ROOT",
        };
        match std::fs::metadata(&root) {
            Ok(m) if m.is_dir() => Ok(root),
            Ok(_) => Err(Error::config(format!(
                "dispatch root {}{given} is not a directory",
                root.display()
            ))),
            Err(_) => Err(Error::config(format!(
                "dispatch root {}{given} does not exist",
                root.display()
            ))
            .hint(format!("create it inside the shared folder, or {fix}"))),
        }
    }

    /// The key file's path.
    pub fn key_path(&self) -> Result<PathBuf> {
        self.key_file.value.clone().ok_or_else(|| {
            Error::config("no key file: pass --key-file FILE or set FLEET_DISPATCH_KEY_FILE (HOME is not set)")
        })
    }

    /// The identity file's path.
    pub fn identity_path(&self) -> Result<PathBuf> {
        self.identity_file.value.clone().ok_or_else(|| {
            Error::config("no identity file: pass --identity-file FILE or set FLEET_DISPATCH_IDENTITY_FILE (HOME is not set)")
        })
    }

    /// This machine's name: `--machine` (or its variable, or the file's
    /// `machine`), else the host name up to its first dot.
    pub fn machine(&self) -> Result<Machine> {
        let name = self.machine.value.as_deref().unwrap_or("");
        match self.machine.source {
            Source::Default => Machine::parse(name, "host name").map_err(|e| {
                Error::config(format!("{}; this machine needs a name", e.message))
                    .hint("pass --machine NAME or set FLEET_DISPATCH_MACHINE")
            }),
            // The name says what is wrong; a flag needs no other label.
            Source::Flag | Source::Variable => rules::machine(name).map_err(Error::validation),
            Source::File => rules::machine(name)
                .map_err(|m| self.refusal(Source::File, "machine", "--machine", m)),
        }
    }

    /// The state directory, refused when it lies inside `root`.
    pub fn state_dir(&self, root: &Path) -> Result<PathBuf> {
        let dir = self.state_dir.value.clone().ok_or_else(|| {
            Error::config(
                "no state directory: pass --state-dir DIR or set FLEET_DISPATCH_STATE_DIR",
            )
        })?;
        if layout::is_inside(&dir, root) {
            return Err(Error::config(format!(
                "state directory {}{} lies inside the dispatch root {}{}; local state must not sync",
                dir.display(),
                self.given_in_file(self.state_dir.source, "state_dir"),
                root.display(),
                self.given_in_file(self.root.source, "root"),
            )));
        }
        Ok(dir)
    }

    /// The per-target state of `target`.
    pub fn state(&self, root: &Path, target: &Machine) -> Result<StateDirs> {
        Ok(StateDirs::new(&self.state_dir(root)?, target))
    }

    /// Fleet members: `FLEET_DISPATCH_FLEET` (a comma list), else the file.
    pub fn fleet(&self) -> Vec<String> {
        self.fleet_setting().value.unwrap_or_default()
    }

    /// Resolves a target name under `root` (docs/protocol.md §2).
    pub fn target(&self, root: &Path, name: &str) -> Result<TargetDirs> {
        layout::resolve_target(root, name, &self.checked_fleet()?)
    }

    /// The fleet list, each name checked.
    fn checked_fleet(&self) -> Result<Vec<String>> {
        let fleet = self.fleet_setting();
        let members = fleet.value.unwrap_or_default();
        for f in &members {
            rules::fleet_member(f)
                .map_err(|m| self.refusal(fleet.source, "fleet", FLEET_VAR, m))?;
        }
        Ok(members)
    }

    /// The targets a target list names ([`layout::resolve_targets`]).
    pub fn targets(&self, root: &Path, list: &str) -> Result<Vec<TargetDirs>> {
        layout::resolve_targets(root, list, &self.checked_fleet()?)
    }

    /// The job this process runs inside, from [`jobenv::JOB_ID`].
    pub fn enclosing_job(&self) -> Result<Option<crate::base::names::JobId>> {
        match std::env::var(jobenv::JOB_ID) {
            Ok(v) if !v.is_empty() => crate::base::names::JobId::parse(&v)
                .map(Some)
                .map_err(|e| Error::validation(format!("{}: {}", jobenv::JOB_ID, e.message))),
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests;
