//! The per-user local state that must never sync (docs/protocol.md §3.4),
//! and the defaults for where the state, key and root are.

use std::path::{Path, PathBuf};

use crate::base::names::Machine;

/// The name of `listen --drain`'s request in a listener's state folder.
pub const DRAIN: &str = "drain";

/// The per-user local state of one target's listener, outside the root.
#[derive(Clone, Debug)]
pub struct StateDirs {
    base: PathBuf,
}

impl StateDirs {
    /// `<state>/<target>/`, the name in lower case: `PC` and `pc` are one
    /// target, so they must share one lock and ledger.
    pub fn new(state: &Path, target: &Machine) -> StateDirs {
        StateDirs {
            base: state.join(target.as_str().to_ascii_lowercase()),
        }
    }
    /// The directory itself.
    pub fn base(&self) -> &Path {
        &self.base
    }
    /// The single-listener lock.
    pub fn lock_file(&self) -> PathBuf {
        self.base.join("listener.lock")
    }
    /// Processed job ids, and the journal of the job in progress.
    pub fn ledger(&self) -> PathBuf {
        self.base.join("ledger.jsonl")
    }
    /// This listener's instance id, kept across restarts.
    pub fn instance(&self) -> PathBuf {
        self.base.join("instance")
    }
    /// The run id and time of the last heartbeat a listener with this
    /// state directory wrote (`<run> <heartbeatAt>`).
    pub fn last_beat(&self) -> PathBuf {
        self.base.join("last-heartbeat")
    }
    /// How the running listener learns of changes (by events, or by its
    /// poll alone, and why), for `doctor`.
    pub fn watching(&self) -> PathBuf {
        self.base.join("watching")
    }
    /// The governor file the running listener obeys (its path, one line),
    /// for `doctor` and `status` on this machine; absent without one.
    pub fn governor(&self) -> PathBuf {
        self.base.join("governor")
    }
    /// A request to the running listener (`listen --drain`): finish the
    /// running job, start no new one, and exit.
    pub fn drain_request(&self) -> PathBuf {
        self.base.join(DRAIN)
    }
}

/// The default state directory: `$XDG_STATE_HOME/fleet-dispatch`,
/// `~/.local/state/fleet-dispatch`, or `%LOCALAPPDATA%\fleet-dispatch`.
pub fn default_state_dir() -> Option<PathBuf> {
    if cfg!(windows) {
        return std::env::var_os("LOCALAPPDATA").map(|d| PathBuf::from(d).join("fleet-dispatch"));
    }
    if let Some(x) = std::env::var_os("XDG_STATE_HOME").filter(|x| !x.is_empty()) {
        return Some(PathBuf::from(x).join("fleet-dispatch"));
    }
    home_dir().map(|h| h.join(".local").join("state").join("fleet-dispatch"))
}

/// The default key file: `~/.claude/fleet-dispatch.key`.
pub fn default_key_file() -> Option<PathBuf> {
    home_dir().map(|h| h.join(".claude").join("fleet-dispatch.key"))
}

/// The default identity file: `~/.claude/fleet-dispatch.identity`.
pub fn default_identity_file() -> Option<PathBuf> {
    home_dir().map(|h| h.join(".claude").join("fleet-dispatch.identity"))
}

/// The default admin key file: `~/.claude/fleet-dispatch.admin.key`.
pub fn default_admin_key_file() -> Option<PathBuf> {
    home_dir().map(|h| h.join(".claude").join("fleet-dispatch.admin.key"))
}

/// The default root: `$OneDrive/fleet-dispatch` when `OneDrive` is set.
pub fn default_root() -> Option<PathBuf> {
    std::env::var_os("OneDrive")
        .filter(|d| !d.is_empty())
        .map(|d| PathBuf::from(d).join("fleet-dispatch"))
}

fn home_dir() -> Option<PathBuf> {
    let var = if cfg!(windows) { "USERPROFILE" } else { "HOME" };
    std::env::var_os(var)
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// True when `inner` lies inside `outer` (both made absolute and, where
/// possible, canonical), used to refuse a state dir or key inside the root.
pub fn is_inside(inner: &Path, outer: &Path) -> bool {
    let canon = |p: &Path| -> PathBuf {
        // Canonicalise the longest existing prefix, so not-yet-created paths
        // are still compared through symlinks.
        let mut existing = p.to_path_buf();
        let mut rest = Vec::new();
        while !existing.exists() {
            match (existing.parent(), existing.file_name()) {
                (Some(parent), Some(name)) => {
                    rest.push(name.to_os_string());
                    existing = parent.to_path_buf();
                }
                _ => break,
            }
        }
        let mut out = std::fs::canonicalize(&existing).unwrap_or(existing);
        for part in rest.iter().rev() {
            out.push(part);
        }
        out
    };
    canon(inner).starts_with(canon(outer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inside_detection() {
        assert!(is_inside(Path::new("/a/b/c"), Path::new("/a/b")));
        assert!(is_inside(Path::new("/a/b"), Path::new("/a/b")));
        assert!(!is_inside(Path::new("/a/bc"), Path::new("/a/b")));
    }
}
