//! The optional config file (docs/protocol.md §8.1): where it is looked
//! for, what it may hold, and how it is read. Its values are the third
//! source of a setting, after a flag and its variable.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{Source, rules};
use crate::base::error::{Error, Result};
use crate::base::read::FileRead;

/// The largest config file read, in bytes: a few settings take a few
/// hundred, and a bound keeps a file that never ends from being read into
/// memory.
pub const MAX_CONFIG_FILE_BYTES: u64 = 1 << 20;

/// The settings a config file may hold; every one optional.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// The dispatch root.
    pub root: Option<PathBuf>,
    /// The fleet key file.
    pub key_file: Option<PathBuf>,
    /// This machine's identity file.
    pub identity_file: Option<PathBuf>,
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
    pub durability: Option<crate::store::fsops::Durability>,
    /// `shared-key`, `roster` or `both`.
    pub auth: Option<crate::trust::Auth>,
    /// How long `sweep` keeps a processed job's files, e.g. "90d".
    pub retention: Option<String>,
    /// The age past which `listen` refuses a job as stale, e.g. "14d"; also
    /// the floor of `sweep`'s retention, so one key serves both.
    pub max_job_age: Option<String>,
    /// An object-store root's endpoint URL (`FLEET_DISPATCH_S3_ENDPOINT`).
    pub s3_endpoint: Option<String>,
    /// The region object-store requests are signed for.
    pub s3_region: Option<String>,
    /// Path-style object-store URLs (`ENDPOINT/BUCKET/KEY`).
    pub s3_path_style: Option<bool>,
    /// A plain-HTTP object-store endpoint off this machine is allowed.
    pub s3_allow_http: Option<bool>,
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

/// Parses config file text; `path` names the file in errors. A file that is
/// not TOML, holds an unknown key or a value of the wrong type is refused
/// naming its line and column; a value that breaks its setting's rule
/// (`config::rules`) is refused naming its key, so every bad value in the
/// file is a `CONFIG` error whichever command reads it.
pub fn parse_config(text: &str, path: &Path) -> Result<FileConfig> {
    let mut cfg: FileConfig = toml::from_str(text).map_err(|e| {
        let at = e
            .span()
            .map(|span| {
                let (line, column) = line_and_column(text, span.start);
                format!(" at line {line}, column {column}")
            })
            .unwrap_or_default();
        Error::config(format!(
            "config file {} is not valid{at}: {}",
            path.display(),
            e.message().trim_end()
        ))
        .hint(format!(
            "keys: {} (see CONFIGURATION FILE in fleet-dispatch(1))",
            crate::front::cli::CONFIG_FILE
                .key_names()
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    let home = std::env::var_os(if cfg!(windows) { "USERPROFILE" } else { "HOME" });
    for p in [
        &mut cfg.root,
        &mut cfg.key_file,
        &mut cfg.identity_file,
        &mut cfg.state_dir,
    ]
    .into_iter()
    .flatten()
    {
        if let (Ok(rest), Some(home)) = (p.strip_prefix("~"), home.as_ref()) {
            *p = PathBuf::from(home).join(rest);
        }
    }
    check(&cfg).map_err(|(key, message)| refusal(Some(path), key, message))?;
    Ok(cfg)
}

/// The first key whose value breaks its setting's rule, with what is wrong.
fn check(cfg: &FileConfig) -> std::result::Result<(), (&'static str, String)> {
    fn each<T, R>(
        key: &'static str,
        value: Option<&T>,
        rule: impl Fn(&T) -> std::result::Result<R, String>,
    ) -> std::result::Result<(), (&'static str, String)> {
        value.map_or(Ok(()), |v| rule(v).map(drop).map_err(|m| (key, m)))
    }
    let path = |p: &PathBuf| {
        if p.as_os_str().is_empty() {
            Err("an empty path: name the path, or leave the key out for the default".to_string())
        } else {
            Ok(())
        }
    };
    each("root", cfg.root.as_ref(), path)?;
    each("key_file", cfg.key_file.as_ref(), path)?;
    each("identity_file", cfg.identity_file.as_ref(), path)?;
    each("state_dir", cfg.state_dir.as_ref(), path)?;
    each("machine", cfg.machine.as_ref(), |m| rules::machine(m))?;
    for member in cfg.fleet.iter().flatten() {
        each("fleet", Some(member), |m| rules::fleet_member(m))?;
    }
    each("poll_interval", cfg.poll_interval.as_ref(), |t| {
        rules::poll_interval(t)
    })?;
    each("stop_grace", cfg.stop_grace.as_ref(), |t| {
        rules::stop_grace(t)
    })?;
    each("slots", cfg.slots.as_ref(), |n| {
        rules::slots(&n.to_string())
    })?;
    each("retention", cfg.retention.as_ref(), |t| rules::retention(t))?;
    each("max_job_age", cfg.max_job_age.as_ref(), |t| {
        rules::max_job_age(t)
    })?;
    // Plain HTTP off this machine also depends on s3_allow_http or its
    // variable: judged when the store is used.
    each("s3_endpoint", cfg.s3_endpoint.as_ref(), |t| {
        crate::store::objstore::endpoint_rule(t, true)
    })?;
    each("s3_region", cfg.s3_region.as_ref(), |t| {
        if t.trim().is_empty() {
            Err("an empty region: name it, or leave the key out for the default".to_string())
        } else {
            Ok(())
        }
    })
}

/// The refusal of a value the config file at `path` gives `key`: `CONFIG`,
/// naming both (the path is `None` only for a context built without a
/// file, in unit tests).
pub(super) fn refusal(path: Option<&Path>, key: &str, message: impl std::fmt::Display) -> Error {
    let file = path.map_or(String::new(), |p| format!(" {}", p.display()));
    Error::config(format!("config file{file}: {key}: {message}"))
}

/// The 1-based line and column (in characters) of byte `offset` in `text`.
fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (
        before.matches('\n').count() + 1,
        before[line_start..].chars().count() + 1,
    )
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

/// Reads the config file [`config_path`] names, if there is one: a missing
/// file is no error unless `FLEET_DISPATCH_CONFIG` named it; anything but a
/// regular file (a FIFO is never waited on, a device never read) and a file
/// over [`MAX_CONFIG_FILE_BYTES`] are refused with `CONFIG`, naming it.
pub(super) fn load_config() -> Result<(FileConfig, Option<ConfigFile>)> {
    let Some((path, explicit)) = config_path() else {
        return Ok((FileConfig::default(), None));
    };
    let source = if explicit {
        Source::Variable
    } else {
        Source::Default
    };
    let cannot = |why: String| {
        Error::config(format!("config file {} {why}", path.display()))
            .hint("point FLEET_DISPATCH_CONFIG at a config.toml, or move this one aside")
    };
    let bytes = match crate::store::fsops::read_local(&path, MAX_CONFIG_FILE_BYTES) {
        FileRead::Bytes(b) => b,
        FileRead::Missing if !explicit => {
            let read = false;
            let file = ConfigFile { path, source, read };
            return Ok((FileConfig::default(), Some(file)));
        }
        FileRead::Missing => {
            return Err(Error::config(format!(
                "cannot read config file {}: it does not exist",
                path.display()
            ))
            .hint(
                "FLEET_DISPATCH_CONFIG must name an existing file; unset it to use the default",
            ));
        }
        FileRead::NotAFile(kind) => {
            return Err(cannot(format!(
                "is a {kind}, not a regular file; it was not read"
            )));
        }
        FileRead::TooLarge(_) => {
            return Err(cannot(format!(
                "holds more than {MAX_CONFIG_FILE_BYTES} bytes (1 MiB); it was not read"
            )));
        }
        FileRead::Unreadable(e) => {
            return Err(Error::config(format!(
                "cannot read config file {}: {e}",
                path.display()
            )));
        }
    };
    let text = String::from_utf8(bytes).map_err(|_| cannot("is not UTF-8 text".into()))?;
    let cfg = parse_config(&text, &path)?;
    let read = true;
    Ok((cfg, Some(ConfigFile { path, source, read })))
}
