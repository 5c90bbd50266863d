//! The optional config file (docs/protocol.md §8.1): where it is looked
//! for, what it may hold, and how it is read. Its values are the third
//! source of a setting, after a flag and its variable.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::Source;
use crate::error::{Error, Result};

/// The settings a config file may hold; every one optional.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// The dispatch root.
    pub root: Option<PathBuf>,
    /// The fleet key file.
    pub key_file: Option<PathBuf>,
    /// This machine's name.
    pub machine: Option<String>,
    /// The local state directory.
    pub state_dir: Option<PathBuf>,
    /// Fleet members that are valid targets before their listener starts.
    pub fleet: Option<Vec<String>>,
    /// The listener's poll interval, e.g. "2s".
    pub poll_interval: Option<String>,
    /// `false`: the listener polls only, without file-system events.
    pub watch: Option<bool>,
    /// The most grace a stopped listener gives its running job, e.g. "20s".
    pub stop_grace: Option<String>,
    /// How many jobs the listener runs at once (1 to [`super::MAX_SLOTS`]).
    pub slots: Option<u64>,
    /// `full` or `relaxed`.
    pub durability: Option<crate::fsops::Durability>,
    /// How long `sweep` keeps a processed job's files, e.g. "90d".
    pub retention: Option<String>,
    /// The age past which `listen` refuses a job as stale, e.g. "14d"; also
    /// the floor of `sweep`'s retention, so one key serves both.
    pub max_job_age: Option<String>,
}

/// Where the config file is looked for: `FLEET_DISPATCH_CONFIG`, else
/// `config.toml` under `$XDG_CONFIG_HOME/fleet-dispatch` (`~/.config/…`),
/// `~/Library/Application Support/fleet-dispatch` on macOS, or
/// `%APPDATA%\fleet-dispatch` on Windows. Returns the path and whether it
/// was named explicitly (then it must exist).
pub fn config_path() -> Option<(PathBuf, bool)> {
    if let Some(p) = std::env::var_os("FLEET_DISPATCH_CONFIG").filter(|p| !p.is_empty()) {
        return Some((PathBuf::from(p), true));
    }
    let var = |v: &str| {
        std::env::var_os(v)
            .filter(|x| !x.is_empty())
            .map(PathBuf::from)
    };
    let dir = if cfg!(windows) {
        var("APPDATA")
    } else if cfg!(target_os = "macos") {
        var("HOME").map(|h| h.join("Library").join("Application Support"))
    } else {
        var("XDG_CONFIG_HOME").or_else(|| var("HOME").map(|h| h.join(".config")))
    }?;
    Some((dir.join("fleet-dispatch").join("config.toml"), false))
}

/// Parses config file text; `path` names the file in errors.
pub fn parse_config(text: &str, path: &Path) -> Result<FileConfig> {
    let mut cfg: FileConfig = toml::from_str(text).map_err(|e| {
        Error::config(format!(
            "config file {} is not valid: {}",
            path.display(),
            e.message()
        ))
        .hint(format!(
            "keys: {} (see CONFIGURATION FILE in fleet-dispatch(1))",
            crate::cli::CONFIG_FILE
                .key_names()
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    let home = std::env::var_os(if cfg!(windows) { "USERPROFILE" } else { "HOME" });
    for p in [&mut cfg.root, &mut cfg.key_file, &mut cfg.state_dir]
        .into_iter()
        .flatten()
    {
        if let (Ok(rest), Some(home)) = (p.strip_prefix("~"), home.as_ref()) {
            *p = PathBuf::from(home).join(rest);
        }
    }
    for (key, value) in [
        ("poll_interval", &cfg.poll_interval),
        ("stop_grace", &cfg.stop_grace),
        ("retention", &cfg.retention),
        ("max_job_age", &cfg.max_job_age),
    ] {
        if let Some(d) = value {
            crate::clock::parse_duration(d).map_err(|e| {
                Error::config(format!(
                    "config file {}: {key}: {}",
                    path.display(),
                    e.message
                ))
            })?;
        }
    }
    Ok(cfg)
}

/// The config file a context read, or looked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigFile {
    /// Its path.
    pub path: PathBuf,
    /// [`Source::Variable`] when `FLEET_DISPATCH_CONFIG` named it, else
    /// [`Source::Default`].
    pub source: Source,
    /// Whether it was there and read.
    pub read: bool,
}

pub(super) fn load_config() -> Result<(FileConfig, Option<ConfigFile>)> {
    let Some((path, explicit)) = config_path() else {
        return Ok((FileConfig::default(), None));
    };
    let source = if explicit {
        Source::Variable
    } else {
        Source::Default
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let cfg = parse_config(&text, &path)?;
            let read = true;
            Ok((cfg, Some(ConfigFile { path, source, read })))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {
            let read = false;
            let file = ConfigFile { path, source, read };
            Ok((FileConfig::default(), Some(file)))
        }
        Err(e) => Err(Error::config(format!(
            "cannot read config file {}: {e}",
            path.display()
        ))),
    }
}
