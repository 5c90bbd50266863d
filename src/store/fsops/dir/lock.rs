//! A lock on a file of a [`Dir`]: an OS lock, released when its guard is
//! dropped (a lock the kernel frees when its holder dies).

use std::ffi::OsStr;
use std::fs::File;
use std::io;

use super::Dir;
use crate::platform::EntryKind;

impl Dir {
    /// Takes an OS lock on the regular file `name`, made empty when
    /// missing; never through a link. The lock is held until the answer's
    /// [`FileLock`] is dropped, and released by the kernel when the process
    /// dies.
    ///
    /// # Errors
    ///
    /// The file error of opening or locking it.
    pub fn lock_file(&self, name: &str) -> io::Result<Locking> {
        for _ in 0..3 {
            let opened = match self.handle.open_read(OsStr::new(name)) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    match self.handle.create_new(OsStr::new(name)) {
                        // Made by someone else meanwhile: open theirs.
                        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                        other => other,
                    }
                }
                other => other,
            };
            let file = match opened {
                Ok(f) if f.metadata()?.is_file() => f,
                Ok(_) => return Ok(Locking::NotAFile),
                Err(e) if crate::platform::is_link_error(&e) => return Ok(Locking::NotAFile),
                // Windows refuses to open a folder as a file (access
                // denied): one there is no lock file, as elsewhere.
                Err(_) if self.entry(name).is_ok_and(|en| en.kind != EntryKind::File) => {
                    return Ok(Locking::NotAFile);
                }
                Err(e) => return Err(e),
            };
            return match file.try_lock() {
                Ok(()) => Ok(Locking::Held(FileLock { _file: file })),
                Err(std::fs::TryLockError::WouldBlock) => Ok(Locking::Busy),
                Err(std::fs::TryLockError::Error(e)) => Err(e),
            };
        }
        Err(io::Error::from(io::ErrorKind::AlreadyExists))
    }
}

/// What [`Dir::lock_file`] found.
#[derive(Debug)]
pub enum Locking {
    /// The lock is ours until this is dropped.
    Held(FileLock),
    /// Another process holds it.
    Busy,
    /// Something other than a regular file has the name (a link, a folder,
    /// a FIFO), to be moved aside.
    NotAFile,
}

/// An OS lock on a file of a folder, held until dropped.
#[derive(Debug)]
pub struct FileLock {
    _file: File,
}
