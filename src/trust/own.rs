//! This machine's own identity as its [`super::Key`] signs with it: loaded
//! once with its signing half derived ([`Mine`]), or, for a `both` machine
//! whose identity file does not exist yet, read again as rosters are taken
//! ([`Later`]), so a running listener signs with it from the first roster
//! that lists it (docs/identities.md, "Moving a fleet from the shared key
//! to the roster").

use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{identity, live, roster, store};

/// A `both` machine's identity as its key is loaded ([`super::Key::both`]).
pub enum Own {
    /// Its identity file, read.
    Loaded(identity::Identity),
    /// Its identity file does not exist yet: read it once a roster is
    /// taken, and use it when it names `machine` (when known).
    Later {
        /// The identity file's path.
        path: PathBuf,
        /// This machine's name.
        machine: Option<String>,
    },
    /// No identity file is set.
    None,
}

/// This machine's identity, its signing half and job token key derived
/// once; the identity itself opens what is sealed to it.
pub(super) struct Mine {
    pub(super) name: String,
    pub(super) signing: identity::Signing,
    pub(super) token: ring::hmac::Key,
    pub(super) identity: identity::Identity,
}

impl Mine {
    pub(super) fn new(id: identity::Identity) -> Mine {
        Mine {
            name: id.name().to_string(),
            signing: id.signing(),
            token: id.token_key(),
            identity: id,
        }
    }

    /// Whether `live`'s good roster lists this key under this machine's
    /// name as valid now.
    pub(super) fn listed(&self, live: &live::Live) -> bool {
        let Ok(body) = live.current() else {
            return false;
        };
        let now = crate::base::clock::now();
        body.machines
            .iter()
            .filter(|m| m.name.eq_ignore_ascii_case(&self.name))
            .flat_map(|m| &m.keys)
            .any(|k| k.key_id == self.signing.key_id() && roster::key_valid_at(k, now))
    }
}

/// A `both` machine's identity file that did not exist when its key was
/// loaded: read again each time another good roster is taken, so a
/// running listener signs with the identity from the first roster that
/// lists it, without a restart (docs/identities.md, "Moving a fleet").
pub(super) struct Later {
    path: PathBuf,
    /// This machine's name: an identity file naming another is not used.
    machine: Option<String>,
    /// The roster generation of the last attempt.
    tried: AtomicU64,
    got: OnceLock<Mine>,
}

impl Later {
    /// The identity file at `path`, not read yet.
    pub(super) fn new(path: PathBuf, machine: Option<String>) -> Later {
        Later {
            path,
            machine,
            tried: AtomicU64::new(u64::MAX),
            got: OnceLock::new(),
        }
    }
}

impl Later {
    /// The identity once it was read, without trying again.
    pub(super) fn loaded(&self) -> Option<&Mine> {
        self.got.get()
    }

    pub(super) fn get(&self, generation: u64) -> Option<&Mine> {
        if let Some(id) = self.got.get() {
            return Some(id);
        }
        if self.tried.swap(generation, Ordering::Relaxed) == generation {
            return None;
        }
        let id = store::load_identity(&self.path).ok()?;
        if self
            .machine
            .as_deref()
            .is_some_and(|m| !m.eq_ignore_ascii_case(id.name()))
        {
            return None;
        }
        Some(self.got.get_or_init(|| Mine::new(id)))
    }
}
