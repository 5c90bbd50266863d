//! The on-disk layout (docs/protocol.md §3), in one place: no other module joins path
//! strings. [`TargetDirs`] names everything under `<root>/<TARGET>/`;
//! [`StateDirs`] names the per-user local state that must never sync.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::names::{JobId, Machine, is_machine};

/// The places under one target's folder in the dispatch root.
#[derive(Clone, Debug)]
pub struct TargetDirs {
    base: PathBuf,
    name: Machine,
}

impl TargetDirs {
    /// `<root>/<target>/`, with `target` already resolved to its spelling.
    pub fn new(root: &Path, target: &Machine) -> TargetDirs {
        TargetDirs {
            base: root.join(target.as_str()),
            name: target.clone(),
        }
    }

    /// The target's name.
    pub fn target(&self) -> &Machine {
        &self.name
    }

    /// `<root>/<TARGET>/`.
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// Queued jobs.
    pub fn inbox(&self) -> PathBuf {
        self.base.join("inbox")
    }
    /// Cancel markers.
    pub fn cancel(&self) -> PathBuf {
        self.base.join("cancel")
    }
    /// What the listener runs now.
    pub fn running(&self) -> PathBuf {
        self.base.join("running")
    }
    /// Signed results.
    pub fn results(&self) -> PathBuf {
        self.base.join("results")
    }
    /// Captured output.
    pub fn logs(&self) -> PathBuf {
        self.base.join("logs")
    }
    /// Processed job files.
    pub fn done(&self) -> PathBuf {
        self.base.join("archive").join("done")
    }
    /// Consumed cancel markers.
    pub fn consumed(&self) -> PathBuf {
        self.base.join("archive").join("consumed")
    }
    /// Rejected inputs and their reasons.
    pub fn rejected(&self) -> PathBuf {
        self.base.join("archive").join("rejected")
    }
    /// The listener heartbeat.
    pub fn listener_json(&self) -> PathBuf {
        self.base.join("listener.json")
    }
    /// The lock a listener holds in the target folder itself, so listeners
    /// with different state directories on one file system (or one SMB
    /// share) cannot serve the target together.
    pub fn folder_lock(&self) -> PathBuf {
        self.base.join("listener.lock")
    }

    /// Refuses the layout when the target folder or any folder in it (or
    /// `archive/`) is a link or a file.
    pub fn check_real(&self) -> Result<()> {
        crate::fsops::check_real_dir(&self.base)?;
        crate::fsops::check_real_dir(&self.base.join("archive"))?;
        self.all_dirs()
            .iter()
            .try_for_each(|d| crate::fsops::check_real_dir(d))
    }

    /// Every directory the listener needs, created on its first start.
    pub fn all_dirs(&self) -> Vec<PathBuf> {
        vec![
            self.inbox(),
            self.cancel(),
            self.running(),
            self.results(),
            self.logs(),
            self.done(),
            self.consumed(),
            self.rejected(),
        ]
    }

    /// `inbox/<id>.json`.
    pub fn job_file(&self, id: &JobId) -> PathBuf {
        self.inbox().join(id.file_name())
    }
    /// `cancel/<id>.json`.
    pub fn marker_file(&self, id: &JobId) -> PathBuf {
        self.cancel().join(id.file_name())
    }
    /// `running/<id>.json`.
    pub fn running_file(&self, id: &JobId) -> PathBuf {
        self.running().join(id.file_name())
    }
    /// `results/<id>.json`.
    pub fn result_file(&self, id: &JobId) -> PathBuf {
        self.results().join(id.file_name())
    }
    /// `archive/done/<id>.json`.
    pub fn done_file(&self, id: &JobId) -> PathBuf {
        self.done().join(id.file_name())
    }
    /// `archive/consumed/<id>.cancel.json`.
    pub fn consumed_file(&self, id: &JobId) -> PathBuf {
        self.consumed().join(format!("{id}.cancel.json"))
    }
    /// `logs/<id>.stdout.log` or `.stderr.log`.
    pub fn log_file(&self, id: &JobId, stream: &str) -> PathBuf {
        self.logs().join(format!("{id}.{stream}.log"))
    }
    /// `archive/rejected/<name>` and its `<name>.reason.json`; `n > 0` adds
    /// `.<n>` when the plain name is taken by an earlier rejection.
    pub fn rejected_files(&self, name: &str, n: u32) -> (PathBuf, PathBuf) {
        let stored = if n == 0 {
            name.to_string()
        } else {
            format!("{name}.{n}")
        };
        (
            self.rejected().join(&stored),
            self.rejected().join(format!("{stored}.reason.json")),
        )
    }
}

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

/// The target folders that exist under `root`: directories with valid names.
pub fn existing_targets(root: &Path) -> Result<Vec<String>> {
    let entries = std::fs::read_dir(root).map_err(|e| Error::io("list", root, &e))?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| is_machine(n))
        .collect();
    names.sort_by_key(|n| n.to_ascii_lowercase());
    Ok(names)
}

/// The folder under `root` that serves `wanted`, from the names
/// `existing` lists: the exact spelling wins; without it, the one folder
/// whose name differs only in case. Several such folders (which a folder
/// writer can create on a case-sensitive file system to draw a listener or
/// a sender away) are a `CONFIG` error naming them: nothing picks one.
pub fn pick_target(root: &Path, wanted: &Machine, existing: &[String]) -> Result<Option<String>> {
    if existing.iter().any(|n| n == wanted.as_str()) {
        return Ok(Some(wanted.to_string()));
    }
    let mut alike: Vec<&String> = existing.iter().filter(|n| wanted.same(n)).collect();
    alike.sort();
    match alike.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some((*one).clone())),
        several => Err(Error::config(format!(
            "target {wanted} matches several folders under {} that differ only in case: {}",
            root.display(),
            several
                .iter()
                .map(|n| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .hint(format!(
            "keep the one the listener uses, or spell the target exactly as its folder ({})",
            several[0]
        ))),
    }
}

/// [`pick_target`] over the folders that exist under `root` now.
pub fn find_target(root: &Path, wanted: &Machine) -> Result<Option<String>> {
    pick_target(root, wanted, &existing_targets(root)?)
}

/// Resolves `name` to an existing target folder ([`pick_target`]), or to a
/// fleet member named in `fleet` (whose folder may not exist yet). Anything
/// else is `NOT_FOUND`, listing the known targets.
pub fn resolve_target(root: &Path, name: &str, fleet: &[String]) -> Result<TargetDirs> {
    let wanted = Machine::parse(name, "target")?;
    let existing = existing_targets(root)?;
    if let Some(found) = pick_target(root, &wanted, &existing)? {
        return Ok(TargetDirs::new(root, &Machine::parse(&found, "target")?));
    }
    if let Some(member) = fleet.iter().find(|n| wanted.same(n)) {
        // Nothing is created here: a command that writes makes the one
        // folder it writes into, and one that only reads finds nothing.
        return Ok(TargetDirs::new(root, &Machine::parse(member, "target")?));
    }
    let mut known: Vec<String> = existing;
    for f in fleet {
        if !known.iter().any(|k| k.eq_ignore_ascii_case(f)) {
            known.push(f.clone());
        }
    }
    let list = if known.is_empty() {
        "none yet".to_string()
    } else {
        known.join(", ")
    };
    Err(Error::not_found(format!(
        "unknown target {name:?} under {} (known targets: {list})",
        root.display()
    ))
    .hint("a target's folder appears when its listener first starts; or name it in FLEET_DISPATCH_FLEET"))
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
    fn paths_follow_the_spec_layout() {
        let t = TargetDirs::new(Path::new("/r"), &Machine::parse("PC", "t").unwrap());
        let id = JobId::parse("j1").unwrap();
        assert_eq!(t.job_file(&id), Path::new("/r/PC/inbox/j1.json"));
        assert_eq!(t.marker_file(&id), Path::new("/r/PC/cancel/j1.json"));
        assert_eq!(t.running_file(&id), Path::new("/r/PC/running/j1.json"));
        assert_eq!(t.result_file(&id), Path::new("/r/PC/results/j1.json"));
        assert_eq!(t.done_file(&id), Path::new("/r/PC/archive/done/j1.json"));
        assert_eq!(
            t.consumed_file(&id),
            Path::new("/r/PC/archive/consumed/j1.cancel.json")
        );
        assert_eq!(
            t.log_file(&id, "stdout"),
            Path::new("/r/PC/logs/j1.stdout.log")
        );
        assert_eq!(
            t.rejected_files("x.json", 0),
            (
                PathBuf::from("/r/PC/archive/rejected/x.json"),
                PathBuf::from("/r/PC/archive/rejected/x.json.reason.json")
            )
        );
        assert_eq!(
            t.rejected_files("x.json", 2).0,
            Path::new("/r/PC/archive/rejected/x.json.2")
        );
        assert_eq!(t.listener_json(), Path::new("/r/PC/listener.json"));
        assert_eq!(t.folder_lock(), Path::new("/r/PC/listener.lock"));
    }

    #[test]
    fn the_exact_spelling_wins_and_several_case_variants_are_refused() {
        let root = Path::new("/r");
        let m = Machine::parse("build", "t").unwrap();
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let pick = |v: &[&str]| pick_target(root, &m, &names(v));
        assert_eq!(
            pick(&["BUILD", "build", "buILd"]).unwrap().as_deref(),
            Some("build")
        );
        assert_eq!(pick(&["BUILD", "PC"]).unwrap().as_deref(), Some("BUILD"));
        assert_eq!(pick(&["PC"]).unwrap(), None);
        let e = pick(&["BUILD", "buILd", "PC"]).unwrap_err();
        assert_eq!(e.code, crate::error::Code::Config);
        assert!(e.message.contains("BUILD, buILd"), "{}", e.message);
    }

    #[test]
    fn inside_detection() {
        assert!(is_inside(Path::new("/a/b/c"), Path::new("/a/b")));
        assert!(is_inside(Path::new("/a/b"), Path::new("/a/b")));
        assert!(!is_inside(Path::new("/a/bc"), Path::new("/a/b")));
    }
}
