//! What a service entry pins ([`crate::front::service`]): the settings the
//! listener must see under a service manager, resolved here as `listen`
//! resolves them in the installing shell, so the service runs the same
//! listener `fleet-dispatch listen` would run there.
//!
//! Root, machine, key file and state directory are always pinned (as
//! absolute paths): a service manager's environment has none of the
//! shell's `FLEET_DISPATCH_*` variables, and its `XDG_*` variables may
//! differ, which would move the default state directory — and with it the
//! lock that keeps two listeners apart. The config file read is pinned
//! too (`FLEET_DISPATCH_CONFIG`), so its other settings still apply; a
//! listener setting given by a variable in the shell is pinned as given;
//! the stop grace always is, so the service manager's stop timeout can
//! cover it.

use std::path::{Path, PathBuf};

use super::{Context, FLEET_VAR, MAX_JOB_AGE_VAR, POLL_INTERVAL_VAR, SLOTS_VAR, STOP_GRACE_VAR};
use crate::base::error::{Error, Result};
use crate::front::service::{DEFAULT_STOP_GRACE_SECS, Pinned, Platform, Spec};

/// `path` made absolute (a service starts elsewhere) and as text.
fn absolute(path: &Path, what: &str) -> Result<String> {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    abs.to_str().map(str::to_string).ok_or_else(|| {
        Error::config(format!(
            "{what} {} is not valid Unicode; a service entry cannot name it",
            abs.display()
        ))
    })
}

/// A variable's value, when set and not empty.
fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

impl Context {
    /// The [`Spec`] of this machine's service entry for `platform`: the
    /// running binary, the pinned settings, the shell's `PATH`. Refuses,
    /// as `listen` would, a configuration it could not start with: no
    /// root, no usable key, a bad machine name or setting.
    pub fn service_spec(&self, platform: Platform) -> Result<Spec> {
        let root = self.root()?;
        let machine = self.machine()?;
        self.key(Some(&root))?;
        let key = self.key_path()?;
        let state = self.state_dir(&root)?;
        let mut pinned = vec![
            Pinned {
                var: "FLEET_DISPATCH_ROOT",
                flag: Some("--root"),
                value: absolute(&root, "the dispatch root")?,
            },
            Pinned {
                var: "FLEET_DISPATCH_MACHINE",
                flag: Some("--machine"),
                value: machine.as_str().to_string(),
            },
            Pinned {
                var: "FLEET_DISPATCH_KEY_FILE",
                flag: Some("--key-file"),
                value: absolute(&key, "the key file")?,
            },
            Pinned {
                var: "FLEET_DISPATCH_STATE_DIR",
                flag: Some("--state-dir"),
                value: absolute(&state, "the state directory")?,
            },
        ];
        if let Some(f) = self.config_file().filter(|f| f.read) {
            pinned.push(Pinned {
                var: "FLEET_DISPATCH_CONFIG",
                flag: None,
                value: absolute(&f.path, "the config file")?,
            });
        }
        if matches!(
            self.durability.source,
            super::Source::Flag | super::Source::Variable
        ) && let Some(d) = self
            .durability
            .value
            .and_then(|d| clap::ValueEnum::to_possible_value(&d))
        {
            pinned.push(Pinned {
                var: "FLEET_DISPATCH_DURABILITY",
                flag: Some("--durability"),
                value: d.get_name().to_string(),
            });
        }
        if matches!(
            self.auth.source,
            super::Source::Flag | super::Source::Variable
        ) {
            pinned.push(Pinned {
                var: "FLEET_DISPATCH_AUTH",
                flag: Some("--auth"),
                value: self.auth().as_str().to_string(),
            });
        }
        if let Some(fleet) = var(FLEET_VAR) {
            self.checked_fleet()?;
            pinned.push(Pinned {
                var: FLEET_VAR,
                flag: None,
                value: fleet,
            });
        }
        // Each listener setting a variable gives, checked as `listen` checks it.
        if let Some(v) = var(POLL_INTERVAL_VAR) {
            self.poll_interval(Some(&v))?;
            pinned.push(Pinned {
                var: POLL_INTERVAL_VAR,
                flag: Some("--poll-interval"),
                value: v,
            });
        }
        if let Some(v) = var(SLOTS_VAR) {
            self.slots(Some(&v))?;
            pinned.push(Pinned {
                var: SLOTS_VAR,
                flag: Some("--slots"),
                value: v,
            });
        }
        if let Some(v) = var(MAX_JOB_AGE_VAR) {
            self.max_job_age(Some(&v))?;
            pinned.push(Pinned {
                var: MAX_JOB_AGE_VAR,
                flag: Some("--max-job-age"),
                value: v,
            });
        }
        let grace = self
            .stop_grace(var(STOP_GRACE_VAR).as_deref())?
            .map_or(DEFAULT_STOP_GRACE_SECS, |d| {
                d.as_secs() + u64::from(d.subsec_nanos() > 0)
            });
        pinned.push(Pinned {
            var: STOP_GRACE_VAR,
            flag: Some("--stop-grace"),
            value: format!("{grace}s"),
        });
        let exe = std::env::current_exe()
            .map_err(|e| Error::io("find", Path::new("the running binary"), &e))?;
        let home = var(if cfg!(windows) { "USERPROFILE" } else { "HOME" })
            .map(PathBuf::from)
            .ok_or_else(|| {
                Error::config("no home directory (HOME is not set): a service entry lives under it")
            })?;
        let user = match (var("USERDOMAIN"), var("USERNAME").or_else(|| var("USER"))) {
            (Some(d), Some(u)) => Some(format!("{d}\\{u}")),
            (None, Some(u)) => Some(u),
            _ => None,
        };
        Ok(Spec {
            exe: absolute(&exe, "the binary")?,
            pinned,
            path: var("PATH"),
            home: absolute(&home, "the home directory")?,
            stop_grace_secs: grace,
            user: user.filter(|_| platform == Platform::Windows),
        })
    }
}
