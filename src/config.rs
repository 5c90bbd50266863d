//! Resolves the global options (flag > environment variable > default) into
//! the places and identity a command works with, refusing unsafe set-ups:
//! no root, a key or state directory inside the synced root.

use std::path::{Path, PathBuf};

use crate::cli::Global;
use crate::error::{Error, Result};
use crate::key::Key;
use crate::layout::{self, StateDirs, TargetDirs};
use crate::names::Machine;

/// What every command knows about where it runs.
#[derive(Debug, Clone)]
pub struct Context {
    global: Global,
}

impl Context {
    /// A context from parsed global options.
    pub fn new(global: Global) -> Context {
        Context { global }
    }

    /// True when output should be one JSON document.
    pub fn json(&self) -> bool {
        self.global.json
    }

    /// The dispatch root; it must exist (it is the shared folder).
    pub fn root(&self) -> Result<PathBuf> {
        let root =
            self.global
                .root
                .clone()
                .or_else(layout::default_root)
                .ok_or_else(|| {
                    Error::config("no dispatch root: pass --root DIR or set FLEET_DISPATCH_ROOT")
                .hint("the root is a folder every machine shares, e.g. ~/OneDrive/fleet-dispatch")
                })?;
        match std::fs::metadata(&root) {
            Ok(m) if m.is_dir() => Ok(root),
            Ok(_) => Err(Error::config(format!(
                "dispatch root {} is not a directory",
                root.display()
            ))),
            Err(_) => Err(Error::config(format!(
                "dispatch root {} does not exist",
                root.display()
            ))
            .hint("create it inside the shared folder, or fix --root / FLEET_DISPATCH_ROOT")),
        }
    }

    /// The key file's path.
    pub fn key_path(&self) -> Result<PathBuf> {
        self.global.key_file.clone().or_else(layout::default_key_file).ok_or_else(|| {
            Error::config("no key file: pass --key-file FILE or set FLEET_DISPATCH_KEY_FILE (HOME is not set)")
        })
    }

    /// Loads the key, refusing one that lies inside `root` (it would sync).
    pub fn key(&self, root: Option<&Path>) -> Result<Key> {
        let path = self.key_path()?;
        if let Some(root) = root
            && layout::is_inside(&path, root)
        {
            return Err(Error::config(format!(
                "key file {} lies inside the dispatch root {}; it would sync to every machine",
                path.display(),
                root.display()
            ))
            .hint("move it out, e.g. to ~/.claude/fleet-dispatch.key"));
        }
        Key::load(&path)
    }

    /// This machine's name: `--machine`, or the host name up to its first dot.
    pub fn machine(&self) -> Result<Machine> {
        if let Some(m) = &self.global.machine {
            return Machine::parse(m, "machine name");
        }
        let host = crate::platform::hostname().unwrap_or_default();
        let short = host.split('.').next().unwrap_or("");
        Machine::parse(short, "host name").map_err(|e| {
            Error::config(format!("{}; this machine needs a name", e.message))
                .hint("pass --machine NAME or set FLEET_DISPATCH_MACHINE")
        })
    }

    /// The state directory, refused when it lies inside `root`.
    pub fn state_dir(&self, root: &Path) -> Result<PathBuf> {
        let dir = self
            .global
            .state_dir
            .clone()
            .or_else(layout::default_state_dir)
            .ok_or_else(|| {
                Error::config(
                    "no state directory: pass --state-dir DIR or set FLEET_DISPATCH_STATE_DIR",
                )
            })?;
        if layout::is_inside(&dir, root) {
            return Err(Error::config(format!(
                "state directory {} lies inside the dispatch root {}; local state must not sync",
                dir.display(),
                root.display()
            )));
        }
        Ok(dir)
    }

    /// The per-target state of `target`.
    pub fn state(&self, root: &Path, target: &Machine) -> Result<StateDirs> {
        Ok(StateDirs::new(&self.state_dir(root)?, target))
    }

    /// Fleet members named in `FLEET_DISPATCH_FLEET`.
    pub fn fleet(&self) -> Vec<String> {
        std::env::var("FLEET_DISPATCH_FLEET")
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    }

    /// Resolves a target name under `root` (SPEC §2).
    pub fn target(&self, root: &Path, name: &str) -> Result<TargetDirs> {
        let fleet = self.fleet();
        for f in &fleet {
            Machine::parse(f, "machine name in FLEET_DISPATCH_FLEET")?;
        }
        layout::resolve_target(root, name, &fleet)
    }

    /// The job this process runs inside, from `FLEET_DISPATCH_JOB_ID`.
    pub fn enclosing_job(&self) -> Result<Option<crate::names::JobId>> {
        match std::env::var("FLEET_DISPATCH_JOB_ID") {
            Ok(v) if !v.is_empty() => crate::names::JobId::parse(&v)
                .map(Some)
                .map_err(|e| Error::validation(format!("FLEET_DISPATCH_JOB_ID: {}", e.message))),
            _ => Ok(None),
        }
    }
}
