//! Doctor's checks of the dispatch root: present and writable, its
//! layout (and what to do when the path given is a level off), the sync
//! engine that owns it and whether its files stay on this device.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{Check, gather};
use crate::platform::Residency;
use crate::store::layout::Place;

/// A sync engine that may own the root.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Engine {
    /// OneDrive.
    OneDrive,
    /// Syncthing.
    Syncthing,
    /// Dropbox.
    Dropbox,
}

impl Engine {
    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Engine::OneDrive => "OneDrive",
            Engine::Syncthing => "Syncthing",
            Engine::Dropbox => "Dropbox",
        }
    }
}

/// What the root's folders look like around it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Shape {
    /// Its folders that hold a target's layout.
    pub targets: Vec<String>,
    /// Its folders that hold no layout themselves but folders that do:
    /// each with the target folders found in it.
    pub nested: Vec<(String, Vec<String>)>,
    /// True when the root itself is a target folder ([`too_deep`]).
    pub is_target: bool,
    /// The names of a target's layout the root itself holds.
    pub own_layout: Vec<String>,
    /// The target folder the root lies inside, if any.
    pub inside_target: Option<PathBuf>,
    /// Its folders that are neither targets nor hold targets, and whose
    /// names are no machine of this fleet (a whole OneDrive's
    /// `Documents`, `Pictures`…).
    pub strangers: Vec<String>,
    /// True when it holds the root's identity file.
    pub identity: bool,
    /// True when one of its folders is the fleet's without being a whole
    /// target: named after a machine of the fleet (a sender made it before
    /// that machine's listener ran), or holding part of a target's layout.
    pub kin: bool,
}

impl Shape {
    /// True when the root is a level off (too deep or too high): the
    /// folders it lists as targets are not targets then.
    pub fn off(&self) -> bool {
        self.is_target
            || self.inside_target.is_some()
            || (self.targets.is_empty() && !self.nested.is_empty())
            || self.foreign()
    }

    /// True when nothing in it is this fleet's (no target folder, no
    /// identity file, no folder named after a machine of the fleet) but
    /// other folders are: it is some other folder, not a dispatch root.
    pub fn foreign(&self) -> bool {
        self.targets.is_empty()
            && self.nested.is_empty()
            && !self.is_target
            && !self.identity
            && !self.kin
            && !self.strangers.is_empty()
    }
}

/// The root as found.
#[derive(Clone, Debug, PartialEq)]
pub enum RootState {
    /// Nothing at the path.
    Missing,
    /// Something other than a folder.
    NotAFolder,
    /// A folder; whether a file could be made in it.
    Folder {
        /// The failure to write, if any.
        writable: Result<(), String>,
    },
}

/// The root and its surroundings.
#[derive(Clone, Debug, PartialEq)]
pub struct RootFacts {
    /// Its path, when one is configured.
    pub path: Option<PathBuf>,
    /// What is there.
    pub state: RootState,
    /// Its layout.
    pub shape: Shape,
    /// The engine that seems to own it, with the evidence.
    pub engine: Option<(Engine, String)>,
    /// Whether its files stay on this device.
    pub residency: Residency,
}

/// True when a folder whose entries are `names` holds a target's layout:
/// an `inbox/` and one of `results/`, `archive/` or a heartbeat.
pub fn holds_layout(names: &[String]) -> bool {
    let has = |n: &str| names.iter().any(|x| x == n);
    has("inbox") && (has("results") || has("archive") || has(crate::store::layout::LISTENER_JSON))
}

/// The names a target folder holds (its places, `archive/`, its heartbeat
/// and lock) that are among `names`.
pub fn layout_names(names: &[String]) -> Vec<String> {
    let own = Place::ALL
        .into_iter()
        .filter(|p| !p.in_archive())
        .map(Place::name)
        .chain([
            crate::store::layout::ARCHIVE,
            crate::store::layout::LISTENER_JSON,
            crate::store::layout::FOLDER_LOCK,
        ]);
    let own: Vec<&str> = own.collect();
    names
        .iter()
        .filter(|n| own.contains(&n.as_str()))
        .cloned()
        .collect()
}

/// True when a folder whose entries are `names`, and that holds
/// `targets` target folders, is itself a target folder: it holds a
/// target's layout ([`holds_layout`]), or, holding no target folder, any
/// name of one (a target whose listener never ran has only the `inbox/`
/// and `cancel/` senders made).
pub fn too_deep(names: &[String], targets: usize) -> bool {
    holds_layout(names) || (targets == 0 && !layout_names(names).is_empty())
}

/// The engine that seems to own `root`: a Syncthing `.stfolder` or a
/// Dropbox `.dropbox` in it or a folder above it (`markers`, nearest
/// first), else a path inside one of `onedrive` (the `OneDrive*`
/// variables) or with a component named `OneDrive…`.
pub fn engine(
    root: &Path,
    markers: &[(PathBuf, Engine)],
    onedrive: &[PathBuf],
) -> Option<(Engine, String)> {
    if let Some((at, e)) = markers.first() {
        let mark = if *e == Engine::Syncthing {
            ".stfolder"
        } else {
            ".dropbox"
        };
        return Some((*e, format!("{mark} in {}", at.display())));
    }
    if let Some(d) = onedrive.iter().find(|d| root.starts_with(d)) {
        return Some((
            Engine::OneDrive,
            format!("inside the OneDrive folder {}", d.display()),
        ));
    }
    root.components()
        .filter_map(|c| c.as_os_str().to_str())
        .find(|c| c.starts_with("OneDrive"))
        .map(|c| {
            (
                Engine::OneDrive,
                format!("a folder named {c:?} on its path"),
            )
        })
}

/// The root checks: present and writable, its layout, its engine and (on
/// Windows) whether it is kept on this device.
pub fn judge_root(r: &RootFacts) -> Vec<Check> {
    let Some(path) = &r.path else {
        return vec![Check::warn(
            "root",
            "no dispatch root is configured",
            "pass --root DIR or set FLEET_DISPATCH_ROOT (or `root` in the config file)",
        )];
    };
    let shown = path.display();
    let mut checks = vec![match &r.state {
        RootState::Missing => {
            return vec![Check::warn(
                "root",
                format!("dispatch root {shown} does not exist"),
                format!(
                    "create it inside the shared folder (`mkdir {shown:?}`), or fix --root / FLEET_DISPATCH_ROOT"
                ),
            )];
        }
        RootState::NotAFolder => {
            return vec![Check::warn(
                "root",
                format!("dispatch root {shown} is not a folder"),
                "point --root / FLEET_DISPATCH_ROOT at a folder inside the shared folder",
            )];
        }
        RootState::Folder { writable: Err(e) } => Check::warn(
            "root",
            format!("{shown} is there but a file cannot be made in it: {e}"),
            "let this account write to the root; listeners and senders both write into it",
        ),
        RootState::Folder { writable: Ok(()) } => Check::ok("root", format!("{shown}: writable")),
    }];
    checks.push(judge_shape(path, &r.shape));
    checks.push(match &r.engine {
        Some((e, why)) => Check::ok("sync engine", format!("{} ({why})", e.name())),
        None => Check::ok(
            "sync engine",
            "none recognised (no .stfolder, .dropbox or OneDrive path): a plain folder or a network share",
        ),
    });
    let onedrive = matches!(r.engine, Some((Engine::OneDrive, _)));
    let pin = "right-click the root → Always keep on this device: a listener started by Task Scheduler cannot download online-only files";
    match r.residency {
        Residency::Unknown => {}
        Residency::Pinned => checks.push(Check::ok(
            "kept on device",
            "marked Always keep on this device",
        )),
        Residency::OnlineOnly => checks.push(Check::warn(
            "kept on device",
            "the root is online-only: its files are downloaded only when opened",
            pin,
        )),
        Residency::Unmarked if onedrive => checks.push(Check::warn(
            "kept on device",
            "the root is not marked Always keep on this device: OneDrive may make its files online-only",
            pin,
        )),
        Residency::Unmarked => checks.push(Check::ok(
            "kept on device",
            "no cloud marks: its files are local",
        )),
    }
    checks
}

/// A root one level off (too deep or too high): what is wrong, and the
/// folder that is the root.
#[derive(Clone, Debug, PartialEq)]
pub struct Off {
    /// What the folders show.
    pub message: String,
    /// The folder to use as the root instead, when the folders show it.
    pub root: Option<PathBuf>,
}

/// The layout rule, for `doctor` and for every command about to write
/// into the root ([`check_layout`]): `None` when `root`, whose folders are
/// `s`, is where target folders belong.
pub fn layout_off(root: &Path, s: &Shape) -> Option<Off> {
    let shown = root.display();
    if s.is_target {
        let holds = if s.own_layout.is_empty() {
            "inbox/".to_string()
        } else {
            s.own_layout.join(", ")
        };
        return Some(Off {
            message: format!(
                "{shown} is itself a target folder (it holds {holds}, and no target folder): the root is one level too deep"
            ),
            root: Some(root.parent().unwrap_or(root).to_path_buf()),
        });
    }
    if let Some(t) = &s.inside_target {
        return Some(Off {
            message: format!(
                "{shown} lies inside the target folder {}: the root is too deep",
                t.display()
            ),
            root: Some(t.parent().unwrap_or(t).to_path_buf()),
        });
    }
    if s.targets.is_empty()
        && let Some((inner, found)) = s.nested.first()
    {
        return Some(Off {
            message: format!(
                "{shown} holds no target folders, but its folder {inner} holds {}: the root is one level too high",
                found.join(", ")
            ),
            root: Some(root.join(inner)),
        });
    }
    if s.foreign() {
        let mut some: Vec<&str> = s.strangers.iter().take(3).map(String::as_str).collect();
        if s.strangers.len() > 3 {
            some.push("…");
        }
        return Some(Off {
            message: format!(
                "{shown} holds {} folder(s) ({}) and nothing of this fleet's (no target folder, no {}, no folder named after one of its machines): it is not a dispatch root",
                s.strangers.len(),
                some.join(", "),
                crate::store::layout::ROOT_FILE
            ),
            root: None,
        });
    }
    None
}

/// What to do about a root one level off, as `lead` starts it.
fn off_fix(off: &Off, lead: &str) -> String {
    match &off.root {
        Some(r) => format!(
            "{lead} --root {} (or set FLEET_DISPATCH_ROOT, or `root` in the config file, to it)",
            r.display()
        ),
        None => "point --root (or FLEET_DISPATCH_ROOT, or `root` in the config file) at the folder kept for fleet-dispatch inside the shared folder; a new root is an empty folder".to_string(),
    }
}

/// Refuses a root one level off ([`layout_off`]) before a command writes
/// a target folder into it, where no listener would ever look (`CONFIG`,
/// naming the root to use). An empty root, or one that holds only its
/// identity file, is a new root and fine; so is one that holds a folder
/// named after a machine of `fleet` (this machine and the ones it knows).
pub fn check_layout(root: &Path, fleet: &[String]) -> crate::base::error::Result<()> {
    let abs = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    match layout_off(&abs, &gather::shape(&abs, fleet)) {
        None => Ok(()),
        Some(off) => Err(crate::base::error::Error::config(format!(
            "{}; nothing was written",
            off.message
        ))
        .hint(format!(
            "{}; `fleet-dispatch doctor` checks the root",
            off_fix(&off, "did you mean")
        ))),
    }
}

pub(super) fn judge_shape(root: &Path, s: &Shape) -> Check {
    if let Some(off) = layout_off(root, s) {
        let fix = off_fix(&off, "use");
        return Check::warn("layout", off.message, fix);
    }
    if s.targets.is_empty() {
        return Check::ok(
            "layout",
            "no target folders yet: a listener makes its own when it first starts",
        );
    }
    Check::ok(
        "layout",
        format!(
            "{} target folder(s): {}",
            s.targets.len(),
            s.targets.join(", ")
        ),
    )
}
