//! Writing and removing this machine's service entry: the effects of
//! `service install` and `service uninstall`, over the pure text and paths
//! of [`super`]. The entry is written and removed here, never started:
//! starting it is the service manager's. On Windows a task exists only
//! once registered, so there `install` also registers the XML it wrote
//! (`schtasks /Create`) and `uninstall` deletes the task.

use std::path::{Path, PathBuf};

use super::{Commands, Platform, Spec};
use crate::base::error::{Error, Result};
use crate::base::read::FileRead;

/// The largest entry read back: one is a few kilobytes.
const MAX_ENTRY_BYTES: u64 = 1 << 20;

/// The entry `install` would write: its text and where it goes.
#[derive(Debug)]
pub struct Entry {
    /// The service manager it is for.
    pub platform: Platform,
    /// Where it goes.
    pub path: PathBuf,
    /// Its text.
    pub text: String,
}

/// What `install` did.
#[derive(Debug)]
pub struct Installed {
    /// Whether the file was written (false: it was already this entry).
    pub changed: bool,
    /// Whether a different entry was there and was replaced.
    pub replaced: bool,
    /// Whether the task was registered (Windows).
    pub registered: bool,
    /// How to start, stop and read it.
    pub commands: Commands,
}

/// What `uninstall` did: `None` when there was no entry.
#[derive(Debug)]
pub struct Removed {
    /// How to stop a listener the entry had started.
    pub commands: Commands,
    /// Why the Windows task could not be deleted, when it could not.
    pub note: Option<String>,
}

impl Entry {
    /// The entry for `platform` made from `spec`, and its path from this
    /// process's environment.
    ///
    /// # Errors
    ///
    /// `CONFIG_ERROR` when a value cannot go into this kind of entry, or
    /// there is no home directory.
    pub fn new(platform: Platform, spec: &Spec) -> Result<Entry> {
        let text = super::render(platform, spec).map_err(|u| {
            Error::config(format!(
                "{} {:?} cannot go into a {}: {}; nothing was written",
                u.what,
                u.value,
                platform.kind(),
                u.why
            ))
        })?;
        Ok(Entry {
            platform,
            path: entry_path(platform)?,
            text,
        })
    }

    /// Writes the entry, unless the same one is there; a different one is
    /// replaced only with `force`. Registers it on Windows.
    ///
    /// # Errors
    ///
    /// `VALIDATION_ERROR` for a different entry without `force`; a file
    /// error naming the path.
    pub fn install(&self, spec: &Spec, force: bool) -> Result<Installed> {
        let (platform, path, text) = (self.platform, &self.path, &self.text);
        let (changed, replaced) = match read_entry(path)? {
            Some(old) if old == *text => (false, false),
            Some(old) if !force => {
                return Err(Error::validation(format!(
                    "a different {} is already at {}; refusing to replace it (it has: {})",
                    platform.kind(),
                    path.display(),
                    difference(&old, text)
                ))
                .hint("`fleet-dispatch service install --print` shows what would be written; --force replaces it"));
            }
            old => (true, old.is_some()),
        };
        if changed {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(|e| Error::io("create", dir, &e))?;
            }
            crate::store::fsops::replace(
                path,
                &super::encode(platform, text),
                crate::store::fsops::Flush::DataAndName,
            )?;
        }
        let registered = register(platform, path)?;
        let mut commands = super::commands(platform, path, &spec.home);
        if registered {
            commands.start = format!("schtasks /Run /TN {}", super::TASK_NAME);
        }
        Ok(Installed {
            changed,
            replaced,
            registered,
            commands,
        })
    }
}

/// Removes `platform`'s entry at `path` (and on Linux the link `systemctl
/// enable` made; on Windows the task): `None` when nothing is there. An
/// entry `install` did not write is removed only with `force`.
///
/// # Errors
///
/// `VALIDATION_ERROR` for an entry not ours without `force`; a file error
/// naming the path.
pub fn uninstall(platform: Platform, path: &Path, force: bool) -> Result<Option<Removed>> {
    let Some(text) = read_entry(path)? else {
        return Ok(None);
    };
    if !text.contains(super::MARK) && !force {
        return Err(Error::validation(format!(
            "{} was not written by `fleet-dispatch service install`; refusing to remove it",
            path.display()
        ))
        .hint("remove it yourself, or pass --force"));
    }
    std::fs::remove_file(path).map_err(|e| Error::io("remove", path, &e))?;
    // `systemctl enable` linked it into default.target.wants; `disable`
    // cannot find a unit whose file is gone, so the link goes with it.
    let wants = path
        .parent()
        .map(|d| d.join("default.target.wants").join(super::SYSTEMD_UNIT));
    if platform == Platform::Linux
        && let Some(w) = wants.filter(|w| w.is_symlink())
    {
        std::fs::remove_file(&w).map_err(|e| Error::io("remove", &w, &e))?;
    }
    let note = delete_task(platform);
    let home =
        std::env::var(if cfg!(windows) { "USERPROFILE" } else { "HOME" }).unwrap_or_default();
    Ok(Some(Removed {
        commands: super::commands(platform, path, &home),
        note,
    }))
}

/// Where `platform`'s entry lives, from this process's environment.
///
/// # Errors
///
/// `CONFIG_ERROR` when there is no home directory.
pub fn entry_path(platform: Platform) -> Result<PathBuf> {
    super::entry_path(platform, |v| std::env::var(v).ok()).ok_or_else(|| {
        Error::config(format!(
            "no home directory (HOME is not set): nowhere to put the {}",
            platform.kind()
        ))
    })
}

/// The entry's current text at `path`: `None` when nothing is there.
fn read_entry(path: &Path) -> Result<Option<String>> {
    match crate::store::fsops::read_local(path, MAX_ENTRY_BYTES) {
        FileRead::Missing => Ok(None),
        // Bytes no entry of ours has (not UTF-8 or UTF-16) differ from any.
        FileRead::Bytes(b) => {
            Ok(Some(super::decode(&b).unwrap_or_else(|| {
                String::from_utf8_lossy(&b).into_owned()
            })))
        }
        FileRead::TooLarge(_) => Ok(Some(String::new())),
        FileRead::NotAFile(kind) => Err(Error::config(format!(
            "{} is a {kind}, not a service entry; nothing was changed",
            path.display()
        ))
        .hint("move it aside, then run `fleet-dispatch service install` again")),
        FileRead::Unreadable(e) => Err(Error::config(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}

/// The first few lines of `installed` that the entry now would not have.
fn difference(installed: &str, expected: &str) -> String {
    let lines = super::differing_lines(installed, expected);
    let shown: Vec<&str> = lines.iter().take(3).copied().collect();
    let more = lines.len().saturating_sub(shown.len());
    let mut s = shown.join(" | ");
    if more > 0 {
        s.push_str(&format!(" (and {more} more)"));
    }
    s
}

/// Runs schtasks (Windows only): `Ok` or its own words on failure.
#[cfg(windows)]
fn schtasks(args: &[&std::ffi::OsStr]) -> std::result::Result<(), String> {
    let out = std::process::Command::new("schtasks")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run schtasks: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stderr).trim().to_string();
    Err(format!("schtasks failed ({}): {text}", out.status))
}

/// Registers the task from the XML at `path`, when this is Windows.
#[cfg(windows)]
fn register(platform: Platform, path: &Path) -> Result<bool> {
    if platform != Platform::Windows {
        return Ok(false);
    }
    let args = ["/Create", "/F", "/TN", super::TASK_NAME, "/XML"];
    let mut all: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    all.push(path.as_os_str());
    schtasks(&all).map_err(|m| {
        Error::new(
            crate::base::error::Code::Internal,
            format!("wrote {} but could not register it: {m}", path.display()),
        )
    })?;
    Ok(true)
}

/// Deletes the task, when this is Windows: why it could not be, when it
/// could not.
#[cfg(windows)]
fn delete_task(platform: Platform) -> Option<String> {
    if platform != Platform::Windows {
        return None;
    }
    schtasks(&[
        "/Delete".as_ref(),
        "/F".as_ref(),
        "/TN".as_ref(),
        super::TASK_NAME.as_ref(),
    ])
    .err()
    .map(|m| format!("the task was not deleted: {m}"))
}

/// Elsewhere there is no task to delete.
#[cfg(not(windows))]
fn delete_task(_platform: Platform) -> Option<String> {
    None
}

/// Elsewhere a task's XML is only written (`--platform windows`).
#[cfg(not(windows))]
fn register(_platform: Platform, _path: &Path) -> Result<bool> {
    Ok(false)
}

/// The unit's state as the systemd user manager says it, only when that
/// manager has loaded the unit from `path` (a read-only question; `None`
/// where there is no systemctl or no user manager to ask).
pub fn systemd_state(path: &Path) -> Option<String> {
    if Platform::host() != Platform::Linux {
        return None;
    }
    let out = std::process::Command::new("systemctl")
        .args(["--user", "show", super::SYSTEMD_UNIT])
        .args(["-p", "FragmentPath", "-p", "ActiveState"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k))
            .map(str::to_string)
    };
    if field("FragmentPath=")?.as_str() != path.to_str()? {
        return None;
    }
    field("ActiveState=")
}
