//! [`super::Shelves`] over a target's folders ([`TargetDirs`]): each
//! operation opens the place it names without following links, as every
//! command does (docs/protocol.md §3.5); publishing makes the missing
//! folders and is [`crate::store::fsops::Dir::publish`] (a temp file, then a
//! no-replace move, §3.3).

use super::{Shelf, Shelves};
use crate::base::error::Result;
use crate::base::names::Machine;
use crate::base::read::FileRead;
use crate::store::fsops::Flush;
use crate::store::layout::{Place, TargetDirs};

/// A target's folders, written with `flush`.
pub struct Folder {
    dirs: TargetDirs,
    flush: Flush,
}

impl Folder {
    /// The places of `dirs`; what is published is flushed as `flush` says.
    pub fn new(dirs: TargetDirs, flush: Flush) -> Folder {
        Folder { dirs, flush }
    }
}

impl Shelves for Folder {
    fn target(&self) -> &Machine {
        self.dirs.target()
    }

    fn shelf(&self, place: Place) -> Box<dyn Shelf + '_> {
        Box::new(FolderShelf { of: self, place })
    }

    fn shown(&self) -> String {
        self.dirs.base().display().to_string()
    }
}

/// One folder of a [`Folder`].
struct FolderShelf<'a> {
    of: &'a Folder,
    place: Place,
}

impl Shelf for FolderShelf<'_> {
    fn list(&self) -> Result<Vec<String>> {
        match self.of.dirs.open(self.place)? {
            Some(d) => d.list(),
            None => Ok(Vec::new()),
        }
    }

    fn read(&self, name: &str, limit: u64) -> FileRead {
        match self.of.dirs.open(self.place) {
            Ok(Some(d)) => d.read_limited(name, limit),
            Ok(None) => FileRead::Missing,
            Err(e) => FileRead::Unreadable(e.message),
        }
    }

    fn publish(&self, name: &str, bytes: &[u8]) -> Result<bool> {
        self.of
            .dirs
            .open_made(self.place)?
            .publish(name, bytes, self.of.flush)
    }

    fn exists(&self, name: &str) -> Result<bool> {
        Ok(self
            .of
            .dirs
            .open(self.place)?
            .is_some_and(|d| d.exists(name)))
    }

    fn remove(&self, name: &str) -> Result<()> {
        match self.of.dirs.open(self.place)? {
            Some(d) => d.remove(name),
            None => Ok(()),
        }
    }

    fn shown(&self, name: &str) -> String {
        self.of
            .dirs
            .place(self.place)
            .join(name)
            .display()
            .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::port::Shelves;

    /// The seam over a folder: a missing place lists and reads as empty,
    /// publishing makes the folders and never replaces, and removing an
    /// entry (or nothing) is no error.
    #[test]
    fn a_folder_place_publishes_create_only_and_reads_back() {
        let t = tempfile::tempdir().unwrap();
        let pc = Machine::parse("PC", "target").unwrap();
        let f = Folder::new(TargetDirs::new(t.path(), &pc), Flush::Nothing);
        let done = f.shelf(Place::Done);
        assert!(done.list().unwrap().is_empty());
        assert!(matches!(done.read("a.json", 10), FileRead::Missing));
        assert!(done.publish("a.json", b"one").unwrap());
        assert!(!done.publish("a.json", b"two").unwrap());
        assert!(t.path().join("PC/archive/done/a.json").is_file());
        assert!(matches!(done.read("a.json", 10), FileRead::Bytes(b) if b == b"one"));
        assert!(matches!(done.read("a.json", 2), FileRead::TooLarge(_)));
        assert!(done.exists("a.json").unwrap());
        assert_eq!(done.list().unwrap(), ["a.json"]);
        done.remove("a.json").unwrap();
        done.remove("a.json").unwrap();
        assert!(!done.exists("a.json").unwrap());
        assert!(done.shown("a.json").ends_with("a.json"));
    }
}
