//! What this machine signs and judges with, loaded for its `--auth` mode
//! (docs/identities.md): the fleet key file, this machine's identity, and
//! the roster of the root as this machine's state directory pins it.

use std::path::{Path, PathBuf};

use super::Context;
use crate::base::error::{Error, Result};
use crate::store::layout;
use crate::store::port::bucket::Bucket;
use crate::trust::Key;
use crate::trust::store::RosterAt;

impl Context {
    /// Loads what this machine signs and judges with for its `--auth`
    /// mode ([`crate::trust::Auth`]): the fleet key (`shared-key`,
    /// `both`), this machine's identity (`roster`) and, for `roster` and a
    /// `both` machine that pins an admin key, the roster of `root`.
    pub fn key(&self, root: Option<&Path>) -> Result<Key> {
        if self.auth() == crate::trust::Auth::SharedKey {
            return self.fleet_key(root);
        }
        let root = root.ok_or_else(|| {
            Error::config(format!(
                "--auth {}: the roster is read from the dispatch root, and none is set",
                self.auth().as_str()
            ))
            .hint("pass --root DIR or set FLEET_DISPATCH_ROOT")
        })?;
        let state = self.state_dir(root)?;
        self.key_at(RosterAt::Folder(root.to_path_buf()), &state, Some(root))
    }

    /// [`Context::key`] for the bucket root `text`: its roster is the
    /// object `PREFIX/roster.json`, pinned in the bucket's own state.
    pub fn key_on_bucket(&self, bucket: &Bucket, text: &str) -> Result<Key> {
        if self.auth() == crate::trust::Auth::SharedKey {
            return self.fleet_key(None);
        }
        let state = self.bucket_state(text)?;
        self.key_at(RosterAt::Bucket(bucket.clone()), &state, None)
    }

    /// Where the roster of the root set here is, and this machine's state
    /// for it (the pin, the versions seen).
    pub fn roster_at(&self) -> Result<(RosterAt, PathBuf)> {
        match self.s3_root() {
            Some(text) => Ok((
                RosterAt::Bucket(self.bucket(&text)?),
                self.bucket_state(&text)?,
            )),
            None => {
                let root = self.root()?;
                let state = self.state_dir(&root)?;
                Ok((RosterAt::Folder(root), state))
            }
        }
    }

    /// The roster modes' key: the roster at `at`, pinned in `state`; the
    /// key and identity files checked to lie outside the folder `root`.
    fn key_at(&self, at: RosterAt, state: &Path, root: Option<&Path>) -> Result<Key> {
        use crate::trust::{Auth, Own, live::Live};
        if self.auth() == Auth::Both {
            let pinned = crate::trust::store::Local::new(state).pin()?.is_some();
            let live = if pinned {
                Some(Live::open_at(at, state)?)
            } else {
                None
            };
            let fleet = self.fleet_key(root)?;
            let own = match self.identity_path() {
                Ok(path) if path.exists() => Own::Loaded(self.own_identity(root, &path)?),
                Ok(path) => Own::Later {
                    path,
                    machine: self.machine().ok().map(|m| m.to_string()),
                },
                Err(_) => Own::None,
            };
            return Ok(Key::both(fleet, live, own));
        }
        let path = self.identity_path()?;
        Ok(Key::roster(
            self.own_identity(root, &path)?,
            Live::open_at(at, state)?,
        ))
    }

    /// This machine's identity from `path`: outside `root`, and naming
    /// this machine.
    fn own_identity(
        &self,
        root: Option<&Path>,
        path: &Path,
    ) -> Result<crate::trust::identity::Identity> {
        use crate::trust::store;
        store::outside_root(path, root, "identity file")?;
        let own = store::load_identity(path)?;
        if let Ok(m) = self.machine()
            && !m.same(own.name())
        {
            return Err(Error::config(format!(
                "identity file {} is {}'s, and this machine is {m}",
                path.display(),
                own.name()
            ))
            .hint("run `fleet-dispatch identity init --force` here, then `roster rotate` on the admin's machine"));
        }
        Ok(own)
    }

    /// Loads the fleet key, refusing one that lies inside `root` (it would sync).
    fn fleet_key(&self, root: Option<&Path>) -> Result<Key> {
        let path = self.key_path()?;
        if let Some(root) = root
            && layout::is_inside(&path, root)
        {
            return Err(Error::config(format!(
                "key file {}{} lies inside the dispatch root {}{}; it would sync to every machine",
                path.display(),
                self.given_in_file(self.key_file.source, "key_file"),
                root.display(),
                self.given_in_file(self.root.source, "root"),
            ))
            .hint("move it out, e.g. to ~/.claude/fleet-dispatch.key"));
        }
        Key::load(&path)
    }
}
