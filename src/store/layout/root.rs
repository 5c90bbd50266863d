//! The root's identity file (docs/protocol.md §3.6), `<root>/fleet-root.json`,
//! and the guard a writer makes its folders under: a root whose mount went
//! away (an unmount, a share dropping, a sync client moving the folder)
//! leaves an empty folder at its path, and nothing is built there.
//!
//! Which identity a root should hold is decided with the fleet key and this
//! machine's memory of it ([`crate::local::state::identify_root`]); here is only
//! what the folder holds, and the check made before each folder is made
//! ([`super::TargetDirs::guarded`]). What a command writes to identify a
//! root it meets first is written at that check, not before: a command
//! refused on the way writes nothing.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::base::error::{Error, Result};
use crate::base::names::is_machine;
use crate::base::read::FileRead;
use crate::store::fsops::{self, Child, Dir, Flush};

/// The identity's name in the root.
pub const ROOT_FILE: &str = "fleet-root.json";

/// The state file that remembers each root's identity: `<id> <root path>`
/// a line.
const KNOWN_FILE: &str = "roots";

/// An identity file's fields: its id, `createdAt` and `sig`.
#[derive(Clone, Debug, PartialEq)]
pub struct Identity {
    /// 16 hex digits.
    pub id: String,
    /// When it was made.
    pub created_at: String,
    /// Its signature ([`identity_canonical`]).
    pub sig: String,
}

/// `fleet-root|{root}|{createdAt}`: what an identity's `sig` signs.
pub fn identity_canonical(id: &str, created_at: &str) -> String {
    format!("fleet-root|{id}|{created_at}")
}

/// What `root` holds at [`ROOT_FILE`]: `None` when nothing, `Some(None)`
/// when something that is no identity.
pub fn read_identity(root: &Dir) -> Option<Option<Identity>> {
    match root.read_limited(ROOT_FILE, 4096) {
        FileRead::Missing => None,
        FileRead::Bytes(b) => Some(serde_json::from_slice::<Value>(&b).ok().and_then(|v| {
            let s = |k: &str| v.get(k)?.as_str().map(str::to_string);
            Some(Identity {
                id: s("root")?,
                created_at: s("createdAt")?,
                sig: s("sig")?,
            })
            .filter(|i| i.id.len() == 16 && i.id.bytes().all(|b| b.is_ascii_hexdigit()))
        })),
        _ => Some(None),
    }
}

/// True when `root` holds a target folder.
pub fn has_layout(root: &Dir) -> bool {
    root.list()
        .unwrap_or_default()
        .iter()
        .any(|n| is_machine(n) && matches!(root.child(n), Ok(Child::Dir(_))))
}

/// The root's path as remembered: resolved, so two spellings of one
/// folder are one root (the folder a mount leaves behind resolves the same).
pub fn root_key(root: &Path) -> String {
    std::fs::canonicalize(root)
        .unwrap_or_else(|_| root.to_path_buf())
        .display()
        .to_string()
}

/// The identity the state directory `state` remembers for the root at
/// `at` ([`root_key`]).
pub fn known_identity(state: &Path, at: &str) -> Option<String> {
    let text = std::fs::read_to_string(state.join(KNOWN_FILE)).ok()?;
    text.lines().find_map(|line| {
        let (id, path) = line.split_once(' ')?;
        (path == at).then(|| id.to_string())
    })
}

/// Remembers `id` for the root at `at`.
fn remember(state: &Path, at: &str, id: &str) -> Result<()> {
    if at.contains('\n') || known_identity(state, at).as_deref() == Some(id) {
        return Ok(());
    }
    fsops::create_dirs(&[state.to_path_buf()])?;
    let file = state.join(KNOWN_FILE);
    let mut text = std::fs::read_to_string(&file).unwrap_or_default();
    text.push_str(&format!("{id} {at}\n"));
    fsops::replace(&file, text.as_bytes(), Flush::DataAndName)
}

/// What a command writes at its first folder ([`RootGuard::check`]).
#[derive(Debug)]
pub struct Pending {
    /// The identity document to place, when the root holds none.
    pub document: Option<String>,
    /// Place it over what is there (a file that is no signed identity).
    pub replace: bool,
    /// Remember the identity the root then holds in the state directory.
    pub remember: bool,
    /// The identity the root held once this was written: the one held to
    /// from then on.
    settled: OnceLock<Option<String>>,
}

impl Pending {
    /// What to write: see the fields.
    pub fn new(document: Option<String>, replace: bool, remember: bool) -> Pending {
        Pending {
            document,
            replace,
            remember,
            settled: OnceLock::new(),
        }
    }
}

/// The identity a writer recognised the root by: its folders are made
/// only while the root is still that root.
#[derive(Clone, Debug)]
pub struct RootGuard {
    id: String,
    root: PathBuf,
    state: Option<PathBuf>,
    pending: Option<Arc<Pending>>,
}

impl RootGuard {
    /// A guard for the root at `root` known by `id`, with what to write
    /// at the first folder made, if anything.
    pub fn new(
        id: String,
        root: &Path,
        state: Option<&Path>,
        pending: Option<Pending>,
    ) -> RootGuard {
        RootGuard {
            id,
            root: root.to_path_buf(),
            state: state.map(Path::to_path_buf),
            pending: pending.map(Arc::new),
        }
    }

    /// The root's identity.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Before a folder is made in `root` (the root, held open): what is
    /// pending is written once, then `Ok` while the root holds this
    /// identity or any target folder. A lost or altered identity file in
    /// a root that still holds its folders is the next start's to judge:
    /// a folder writer cannot stop a writer so.
    ///
    /// # Errors
    ///
    /// `CONFIG` naming the root and [`ROOT_FILE`] when it holds neither;
    /// a file error writing the identity.
    pub fn check(&self, root: &Dir) -> Result<()> {
        let held = match &self.pending {
            None => Some(self.id.as_str()),
            Some(p) => {
                if p.settled.get().is_none() {
                    self.settle(p, root)?;
                }
                p.settled.get().and_then(Option::as_deref)
            }
        };
        let Some(held) = held else {
            return Ok(());
        };
        if read_identity(root).flatten().is_some_and(|i| i.id == held) || has_layout(root) {
            return Ok(());
        }
        Err(not_the_root(&self.root, self.state.as_deref(), held, None))
    }

    /// Writes what `p` holds, and settles on the identity the root holds then.
    fn settle(&self, p: &Pending, root: &Dir) -> Result<()> {
        if let Some(doc) = &p.document
            && read_identity(root).flatten().map(|i| i.id).as_deref() != Some(&self.id)
        {
            // Never over another first writer's: both then take the one placed.
            let placed = root.publish(ROOT_FILE, doc.as_bytes(), Flush::DataAndName)?;
            if !placed && p.replace {
                root.replace(ROOT_FILE, doc.as_bytes(), Flush::DataAndName)?;
            }
        }
        let now = read_identity(root).flatten().map(|i| i.id);
        if p.remember
            && let (Some(state), Some(id)) = (&self.state, &now)
        {
            // Losing this only makes the next command's use a first one.
            let _ = remember(state, &root_key(&self.root), id);
        }
        let _ = p.settled.set(now);
        Ok(())
    }
}

/// The refusal for a root that is not the one this machine knew as
/// `known`: `found` is the signed identity it holds instead, if any.
pub fn not_the_root(root: &Path, state: Option<&Path>, known: &str, found: Option<&str>) -> Error {
    let why = match found {
        None => format!(
            "the dispatch root {} holds neither the {ROOT_FILE} this machine knew (identity {known}) nor any target folder: it is not that root; its mount or share went away, or a sync client moved it, leaving a folder in its place",
            root.display()
        ),
        Some(found) => format!(
            "the dispatch root {} holds identity {found} in {ROOT_FILE}, not {known}, the one this machine knew: another folder stands at its path",
            root.display()
        ),
    };
    let forget = state.map_or(String::new(), |s| {
        format!(
            "; if the root was made anew on purpose, remove its line from {}",
            s.join(KNOWN_FILE).display()
        )
    });
    Error::config(why).hint(format!(
        "mount or restore the root; nothing is written into this folder meanwhile{forget}"
    ))
}
