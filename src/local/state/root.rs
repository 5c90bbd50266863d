//! Which root a writer is in (docs/protocol.md §3.6): the root's signed
//! identity file against the identity this machine remembers for the
//! root's path. A root this machine never knew is adopted as it is, and
//! one without an identity — brand new, or from a version before
//! identities — gets one; a folder at a known root's path that holds
//! neither its identity nor any target folder is not that root (its mount
//! went away), and one holding another signed identity is another root.
//! Only a signed identity counts, so a folder writer without the key
//! cannot pass one root off as another.

use std::path::Path;

use serde_json::json;

use crate::base::clock;
use crate::base::error::Result;
use crate::store::fsops::Dir;
use crate::store::layout::{
    Pending, RootGuard, has_layout, identity_canonical, known_identity, not_the_root,
    read_identity, root_key,
};
use crate::trust::{Key, Signer};

/// What the root holds, judged with the fleet key.
#[derive(Clone, Debug, PartialEq)]
pub enum Found {
    /// An identity signed with the fleet key.
    Signed(String),
    /// Nothing there.
    Missing,
    /// Something else: not an identity, or not signed with the fleet key.
    Unsigned,
}

/// What a writer makes of a root ([`judge`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// The root this machine knows, or a signed one it never knew.
    Use(String),
    /// Write the identity: the one known (a root that still holds target
    /// folders but lost the file), or a new one (`None`: a root this
    /// machine never knew, brand new or from before identities).
    Write(Option<String>),
    /// Neither the identity this machine knew nor any target folder: the
    /// root is not there.
    Vanished(String),
    /// Another signed identity than the one this machine knew.
    Other {
        /// The one found.
        found: String,
        /// The one known.
        known: String,
    },
}

/// The rule: what the root holds (`found`, and whether it holds any
/// target folder: `layout`) against what this machine remembers of it
/// (`known`).
pub fn judge(found: &Found, known: Option<&str>, layout: bool) -> Verdict {
    match (found, known) {
        (Found::Signed(f), Some(k)) if f != k => Verdict::Other {
            found: f.clone(),
            known: k.to_string(),
        },
        (Found::Signed(f), _) => Verdict::Use(f.clone()),
        (_, Some(k)) if layout => Verdict::Write(Some(k.to_string())),
        (_, Some(k)) => Verdict::Vanished(k.to_string()),
        (_, None) => Verdict::Write(None),
    }
}

/// Recognises the root at `root` for a command that writes into it with
/// `key`, by what the state directory `state` remembers (when there is one
/// it can use: without, every root is new to it). Writes nothing: what a
/// first use writes is written before the first folder is made
/// ([`RootGuard::check`]).
///
/// # Errors
///
/// `CONFIG` naming the root and its identity file when the root is not
/// the one this machine knew; a file error opening the root.
pub fn identify_root(root: &Path, state: Option<&Path>, key: &Key) -> Result<RootGuard> {
    let dir = Dir::open_trusted(root)?;
    let known = state.and_then(|s| known_identity(s, &root_key(root)));
    let found = match read_identity(&dir) {
        None => Found::Missing,
        Some(Some(i))
            if key.verify(
                Signer::Unnamed,
                &identity_canonical(&i.id, &i.created_at),
                &i.sig,
            ) =>
        {
            Found::Signed(i.id)
        }
        Some(_) => Found::Unsigned,
    };
    let replace = found == Found::Unsigned;
    let guard = |id: String, pending| RootGuard::new(id, root, state, pending);
    match judge(&found, known.as_deref(), has_layout(&dir)) {
        Verdict::Use(id) => {
            let pending = known.is_none().then(|| Pending::new(None, false, true));
            Ok(guard(id, pending))
        }
        Verdict::Write(id) => {
            let id = id.unwrap_or_else(new_id);
            let document = document(&id, key);
            let remember = known.is_none();
            Ok(guard(
                id,
                Some(Pending::new(Some(document), replace, remember)),
            ))
        }
        Verdict::Vanished(known) => Err(not_the_root(root, state, &known, None)),
        Verdict::Other { found, known } => Err(not_the_root(root, state, &known, Some(&found))),
    }
}

/// A new identity: 16 random hex digits.
fn new_id() -> String {
    let mut raw = [0u8; 8];
    crate::base::random::fill(&mut raw);
    hex::encode(raw)
}

/// The identity document for `id`, signed with `key`.
fn document(id: &str, key: &Key) -> String {
    let at = clock::format(clock::now());
    let sig = key.sign(&identity_canonical(id, &at));
    format!(
        "{}\n",
        json!({"v": 1, "root": id, "createdAt": at, "sig": sig})
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_is_used_made_or_refused_by_what_this_machine_knew() {
        let id = |s: &str| Found::Signed(s.to_string());
        let a = "00112233aabbccdd";
        let b = "ffeeddccbbaa9988";
        assert_eq!(judge(&id(a), Some(a), true), Verdict::Use(a.into()));
        // Never known: adopted as it is, or given an identity.
        assert_eq!(judge(&id(a), None, false), Verdict::Use(a.into()));
        assert_eq!(judge(&Found::Missing, None, false), Verdict::Write(None));
        assert_eq!(judge(&Found::Missing, None, true), Verdict::Write(None));
        assert_eq!(judge(&Found::Unsigned, None, false), Verdict::Write(None));
        // Known: an empty folder without it is not the root...
        assert_eq!(
            judge(&Found::Missing, Some(a), false),
            Verdict::Vanished(a.into())
        );
        assert_eq!(
            judge(&Found::Unsigned, Some(a), false),
            Verdict::Vanished(a.into())
        );
        // ...but the root with its folders that lost the file gets it back.
        assert_eq!(
            judge(&Found::Missing, Some(a), true),
            Verdict::Write(Some(a.into()))
        );
        assert_eq!(
            judge(&id(b), Some(a), true),
            Verdict::Other {
                found: b.into(),
                known: a.into()
            }
        );
    }
}
