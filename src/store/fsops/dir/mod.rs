//! [`Dir`]: a folder of the layout held open, and the file operations the
//! lane makes in it (docs/protocol.md §3.3, §3.5). Every operation names one
//! entry of the open folder, so a folder swapped for a link after it was
//! opened leads nowhere: nothing under the root is looked up by path twice,
//! and no link is followed.
//!
//! This file is the handle: opening a folder of the layout, finding its
//! children, listing it. What is done with the files in it is in
//! `read.rs`, `write.rs` and `lock.rs`.

mod lock;
mod read;
#[cfg(test)]
mod tests;
mod write;

pub use lock::{FileLock, Locking};
pub use read::{FileId, Piece};
pub use write::Log;

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use crate::base::error::{Error, Result};
use crate::platform::{DirHandle, Entry, EntryKind};

/// An open folder and its path (for messages; on Windows also for the
/// operations, see `platform`). Cheap to clone: clones share the handle.
#[derive(Clone, Debug)]
pub struct Dir {
    handle: Arc<DirHandle>,
    path: Arc<Path>,
}

/// What [`Dir::child`] found at a folder's name.
#[derive(Debug)]
pub enum Child {
    /// A real folder, now open.
    Dir(Dir),
    /// Nothing has the name.
    Missing,
    /// Something other than a folder has it: `symbolic link`, `file` or
    /// `special file`.
    NotAFolder(&'static str),
}

/// Names the kind of a non-folder entry, for messages and reasons.
pub fn kind_word(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::Link => "symbolic link",
        EntryKind::Dir => "directory",
        EntryKind::File => "file",
        EntryKind::Other => "special file",
    }
}

impl Dir {
    /// Opens the folder at `path`, following links on the way: for the
    /// dispatch root, which the user names, never for a folder under it.
    ///
    /// # Errors
    ///
    /// `NOT_FOUND` or another file error naming `path`.
    pub fn open_trusted(path: &Path) -> Result<Dir> {
        let handle = DirHandle::open_trusted(path).map_err(|e| Error::io("open", path, &e))?;
        Ok(Dir {
            handle: Arc::new(handle),
            path: path.into(),
        })
    }

    /// The folder's path, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of the entry `name`, for messages.
    pub fn shown(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Opens the child folder `name`, never following a link.
    ///
    /// # Errors
    ///
    /// A file error other than the three answers of [`Child`].
    pub fn child(&self, name: &str) -> Result<Child> {
        let shown = self.shown(name);
        match self.handle.open_child(OsStr::new(name), &shown) {
            Ok(handle) => Ok(Child::Dir(Dir {
                handle: Arc::new(handle),
                path: shown.into(),
            })),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Child::Missing),
            Err(e) if crate::platform::is_link_error(&e) => Ok(Child::NotAFolder("symbolic link")),
            Err(e) if e.kind() == io::ErrorKind::NotADirectory => {
                let kind = match self.entry(name).map(|m| m.kind) {
                    Ok(EntryKind::Link) => "symbolic link",
                    Ok(EntryKind::Other) => "special file",
                    _ => "file",
                };
                Ok(Child::NotAFolder(kind))
            }
            Err(e) => Err(Error::io("open", &shown, &e)),
        }
    }

    /// Opens the folder `rel` below this one, one component at a time and
    /// never following a link; `None` when one is missing.
    ///
    /// # Errors
    ///
    /// `FORBIDDEN` when a component is a link or a file, or is not a plain
    /// name (`..`, a root); a file error.
    pub fn descend(&self, rel: &Path) -> Result<Option<Dir>> {
        let mut dir = self.clone();
        for c in rel.components() {
            let name = match c {
                std::path::Component::Normal(n) => n.to_str(),
                std::path::Component::CurDir => continue,
                _ => None,
            };
            let Some(name) = name else {
                return Err(not_a_folder(
                    &dir.path.join(c.as_os_str()),
                    "name that is not a plain folder name",
                ));
            };
            dir = match dir.child(name)? {
                Child::Dir(d) => d,
                Child::Missing => return Ok(None),
                Child::NotAFolder(kind) => return Err(not_a_folder(&dir.shown(name), kind)),
            };
        }
        Ok(Some(dir))
    }

    /// Opens the child folder `name`, making it when missing.
    ///
    /// # Errors
    ///
    /// `FORBIDDEN` when a link or a file has the name, or a file error.
    pub fn child_made(&self, name: &str) -> Result<Dir> {
        for _ in 0..3 {
            match self.child(name)? {
                Child::Dir(d) => return Ok(d),
                Child::NotAFolder(kind) => return Err(not_a_folder(&self.shown(name), kind)),
                Child::Missing => match self.handle.create_dir(OsStr::new(name)) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(Error::io("create directory", &self.shown(name), &e)),
                },
            }
        }
        Err(Error::io(
            "create directory",
            &self.shown(name),
            &io::Error::from(io::ErrorKind::NotFound),
        ))
    }

    /// What the entry `name` is, without following a link.
    pub fn entry(&self, name: &str) -> io::Result<Entry> {
        self.handle.entry(OsStr::new(name))
    }

    /// True when `name` in `parent` still leads to this very folder (not a
    /// link to it, nor another folder put in its place). Always false where
    /// that cannot be told cheaply (Windows).
    pub fn is_child_of(&self, parent: &Dir, name: &str) -> bool {
        self.handle.is_at(Some(&parent.handle), OsStr::new(name))
    }

    /// True when this folder's own path, its last part not followed if a
    /// link, still leads to it (see [`Dir::is_child_of`]).
    pub fn is_at_its_path(&self) -> bool {
        self.handle.is_at(None, self.path.as_os_str())
    }

    /// True when anything (a link included) has the name `name`.
    pub fn exists(&self, name: &str) -> bool {
        self.entry(name).is_ok()
    }

    /// The UTF-8 names in the folder; other names are skipped (readers
    /// never consider them, docs/protocol.md §3.2).
    ///
    /// # Errors
    ///
    /// A file error naming the folder.
    pub fn list(&self) -> Result<Vec<String>> {
        let names = self
            .handle
            .names()
            .map_err(|e| Error::io("list", &self.path, &e))?;
        Ok(names
            .into_iter()
            .filter_map(|n| n.into_string().ok())
            .collect())
    }

    /// True when `other` holds the very same open folder (a clone of it).
    pub fn same_folder(&self, other: &Dir) -> bool {
        Arc::ptr_eq(&self.handle, &other.handle)
    }

    /// The folder's own modification time.
    pub fn modified(&self) -> Option<SystemTime> {
        self.handle.modified()
    }

    /// Flushes the folder's entries to disk, best effort.
    pub fn sync(&self) {
        self.handle.sync()
    }
}

/// The `FORBIDDEN` error for a folder of the layout that is not one.
pub fn not_a_folder(path: &Path, kind: &str) -> Error {
    Error::forbidden(format!(
        "{} is not a real folder ({kind}); a folder of the layout must not be a link or a file",
        path.display(),
    ))
    .hint("move it away; the listener moves it aside and makes the folder again")
}
