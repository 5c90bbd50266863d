//! Folder handles on Windows. A folder is opened as itself
//! (`FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_BACKUP_SEMANTICS`) and
//! refused when it is a symbolic link or junction (a name-surrogate reparse
//! point; OneDrive's cloud reparse points are folders as usual).
//!
//! The handle is held without `FILE_SHARE_DELETE`, so while it is open
//! nobody can rename, remove or swap that folder: the path operations below
//! (Win32 has no rename relative to a folder handle short of the native
//! API) resolve through folders that stay where they were checked. Each
//! entry is still opened as itself, never through a link.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::windows::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use windows_sys::Win32::Foundation::{ERROR_DIRECTORY, ERROR_STOPPED_ON_SYMLINK};
use windows_sys::Win32::Storage::FileSystem::{
    FILE_ATTRIBUTE_DIRECTORY, FILE_FLAG_BACKUP_SEMANTICS, FILE_FLAG_OPEN_REPARSE_POINT,
    FILE_SHARE_READ, FILE_SHARE_WRITE,
};

use super::{Entry, EntryKind};

/// An open directory, and its path for the operations below.
#[derive(Debug)]
pub struct DirHandle {
    pin: File,
    path: PathBuf,
}

/// One name, never a path.
fn single(name: &OsStr) -> io::Result<&OsStr> {
    let s = name.to_string_lossy();
    if s.is_empty() || s == "." || s == ".." || s.contains(['/', '\\', ':']) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{name:?} is not a single file name"),
        ));
    }
    Ok(name)
}

fn entry_of(m: &std::fs::Metadata) -> Entry {
    let t = m.file_type();
    let kind = if t.is_symlink() {
        EntryKind::Link
    } else if t.is_dir() {
        EntryKind::Dir
    } else if t.is_file() {
        EntryKind::File
    } else {
        EntryKind::Other
    };
    Entry {
        kind,
        len: m.len(),
        modified: m.modified().ok(),
    }
}

/// Opens the folder at `path` as itself, refusing a link or a file.
fn openpinned(path: &Path) -> io::Result<File> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE)
        .custom_flags(FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT)
        .open(path)?;
    let t = f.metadata()?.file_type();
    // `is_symlink` is true for name-surrogate reparse points: symbolic
    // links and junctions.
    if t.is_symlink() {
        return Err(io::Error::from_raw_os_error(
            ERROR_STOPPED_ON_SYMLINK as i32,
        ));
    }
    if !t.is_dir() {
        return Err(io::Error::from_raw_os_error(ERROR_DIRECTORY as i32));
    }
    Ok(f)
}

impl DirHandle {
    /// Opens the folder at `path`, following links on the way: only for a
    /// folder the user named (the dispatch root), never for one under it.
    pub fn open_trusted(path: &Path) -> io::Result<DirHandle> {
        let pin = std::fs::OpenOptions::new()
            .read(true)
            .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE)
            .custom_flags(FILE_FLAG_BACKUP_SEMANTICS)
            .open(path)?;
        if !pin.metadata()?.is_dir() {
            return Err(io::Error::from_raw_os_error(ERROR_DIRECTORY as i32));
        }
        Ok(DirHandle {
            pin,
            path: path.to_path_buf(),
        })
    }

    /// Opens the child folder `name` at `shown`, refusing a link or
    /// junction ([`super::is_link_error`]) or anything but a folder.
    pub fn open_child(&self, name: &OsStr, shown: &Path) -> io::Result<DirHandle> {
        let path = self.path.join(single(name)?);
        let _ = shown;
        Ok(DirHandle {
            pin: openpinned(&path)?,
            path,
        })
    }

    fn at(&self, name: &OsStr) -> io::Result<PathBuf> {
        Ok(self.path.join(single(name)?))
    }

    /// Never: telling whether a name still leads to this folder takes a
    /// second open of it here, as much as opening it again, so folders are
    /// opened afresh for each pass instead.
    pub fn is_at(&self, _parent: Option<&DirHandle>, _name: &OsStr) -> bool {
        false
    }

    /// Makes the folder `name`; `AlreadyExists` when anything has the name.
    pub fn create_dir(&self, name: &OsStr) -> io::Result<()> {
        std::fs::create_dir(self.at(name)?)
    }

    /// What the entry `name` is, without following a link.
    pub fn entry(&self, name: &OsStr) -> io::Result<Entry> {
        std::fs::symlink_metadata(self.at(name)?).map(|m| entry_of(&m))
    }

    /// Opens the file `name` for reading, never following a link.
    pub fn open_read(&self, name: &OsStr) -> io::Result<File> {
        super::open_no_follow(&self.at(name)?)
    }

    /// Creates the new file `name` for writing, never through a link.
    pub fn create_new(&self, name: &OsStr) -> io::Result<File> {
        super::create_new_no_follow(&self.at(name)?)
    }

    /// Moves the entry `from` to `to` in `dest`, never replacing.
    pub fn rename_no_replace(&self, from: &OsStr, dest: &DirHandle, to: &OsStr) -> io::Result<()> {
        super::rename_no_replace(&self.at(from)?, &dest.at(to)?)
    }

    /// Moves the entry `from` to `to` in `dest`, replacing what is there.
    pub fn rename_replace(&self, from: &OsStr, dest: &DirHandle, to: &OsStr) -> io::Result<()> {
        std::fs::rename(self.at(from)?, dest.at(to)?)
    }

    /// Removes the file `name` (a link is removed, never what it names).
    pub fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        let p = self.at(name)?;
        match std::fs::symlink_metadata(&p) {
            // A directory symbolic link or junction is removed as a folder.
            Ok(m)
                if m.file_type().is_symlink()
                    && m.file_attributes() & FILE_ATTRIBUTE_DIRECTORY != 0 =>
            {
                std::fs::remove_dir(&p)
            }
            _ => std::fs::remove_file(&p),
        }
    }

    /// The names in this folder.
    pub fn names(&self) -> io::Result<Vec<OsString>> {
        std::fs::read_dir(&self.path)?
            .map(|e| e.map(|e| e.file_name()))
            .collect()
    }

    /// A no-op: NTFS journals a rename before it returns.
    pub fn sync(&self) {}

    /// Flushes each of the files `names`, written in this folder and
    /// closed since, reopened one at a time (Windows flushes a file only
    /// through a handle that may write it).
    pub fn sync_names(&self, names: &[&OsStr]) -> io::Result<()> {
        names
            .iter()
            .try_for_each(|n| super::open_write_no_follow(&self.at(n)?)?.sync_all())
    }

    /// The folder's own modification time.
    pub fn modified(&self) -> Option<SystemTime> {
        self.pin.metadata().and_then(|m| m.modified()).ok()
    }
}
