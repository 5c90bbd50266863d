//! The storage seam: what a command needs of one place of one target
//! (`inbox/`, `cancel/`, `results/`, `archive/done/`, …), whichever root
//! holds it. A [`Shelf`] is one such place; [`Shelves`] hands out the
//! shelves of one target. [`folder`] implements them over the held-open
//! folders of [`crate::store::layout`], [`bucket`] over the object-store
//! client, where a name is the key `PREFIX/TARGET/PLACE/NAME` and
//! publishing is one create-only PUT (docs/object-store.md, "The protocol
//! on objects"). The documents are the same bytes on both.

pub mod bucket;
pub mod folder;

use crate::base::error::Result;
use crate::base::names::Machine;
use crate::base::read::FileRead;
use crate::store::layout::Place;

/// One place of one target.
pub trait Shelf {
    /// The names the place holds now (none when the place is missing), in
    /// no particular order.
    ///
    /// # Errors
    ///
    /// The place cannot be listed (naming it).
    fn list(&self) -> Result<Vec<String>>;

    /// The whole of `name` when it is at most `limit` bytes;
    /// [`FileRead::Missing`] when there is none, [`FileRead::TooLarge`]
    /// over the limit, [`FileRead::Unreadable`] when the store refused.
    fn read(&self, name: &str, limit: u64) -> FileRead;

    /// Places `bytes` at `name` unless the name is taken, never replacing
    /// anything: true when this call placed it, false when the name was
    /// already taken (nothing changed).
    ///
    /// # Errors
    ///
    /// The store failed (naming the file or key).
    fn publish(&self, name: &str, bytes: &[u8]) -> Result<bool>;

    /// Whether `name` is there.
    ///
    /// # Errors
    ///
    /// The store failed (naming the file or key).
    fn exists(&self, name: &str) -> Result<bool>;

    /// Removes `name`; nothing there is no error.
    ///
    /// # Errors
    ///
    /// The store failed (naming the file or key).
    fn remove(&self, name: &str) -> Result<()>;

    /// Where `name` is, as people read it: a path, or `s3://BUCKET/KEY`.
    fn shown(&self, name: &str) -> String;

    /// The names the place holds now, each with when it was last written
    /// (`None`: not known), for `sweep`'s ages. A place that cannot tell
    /// gives no time, so nothing of it is ever old enough to go.
    ///
    /// # Errors
    ///
    /// The place cannot be listed (naming it).
    fn list_aged(&self) -> Result<Vec<(String, Option<std::time::SystemTime>)>> {
        Ok(self.list()?.into_iter().map(|n| (n, None)).collect())
    }
}

/// The places of one target.
pub trait Shelves {
    /// The target, spelled as its root holds it.
    fn target(&self) -> &Machine;

    /// The shelf of `place`.
    fn shelf(&self, place: Place) -> Box<dyn Shelf + '_>;

    /// Where the target is, as people read it.
    fn shown(&self) -> String;
}
