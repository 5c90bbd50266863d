//! Reading through a [`Dir`]: a document, refused over its limit before
//! it is read, and part of a log that may still be growing.

use std::ffi::OsStr;
use std::io::{self, Read};

use super::{Dir, kind_word};
use crate::base::read::FileRead;
use crate::platform::{Entry, EntryKind};

impl Dir {
    /// Reads the candidate file `name` (docs/protocol.md §6.1 steps 1 and
    /// 2): never follows a link, never blocks on a FIFO, and refuses
    /// anything over `limit` before reading more than `limit + 1` bytes.
    pub fn read_limited(&self, name: &str, limit: u64) -> FileRead {
        self.read_limited_with(name, self.entry(name), limit)
    }

    /// [`Dir::read_limited`] for a caller that has just looked at the entry
    /// itself, so it is looked up once.
    pub fn read_limited_with(&self, name: &str, meta: io::Result<Entry>, limit: u64) -> FileRead {
        let meta = match meta {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return FileRead::Missing,
            Err(e) => return FileRead::Unreadable(e.to_string()),
        };
        if meta.kind != EntryKind::File {
            return FileRead::NotAFile(kind_word(meta.kind));
        }
        if meta.len > limit {
            return FileRead::TooLarge(meta.len);
        }
        let mut f = match self.handle.open_read(OsStr::new(name)) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return FileRead::Missing,
            Err(e) if crate::platform::is_link_error(&e) => {
                return FileRead::NotAFile("symbolic link");
            }
            Err(e) => return FileRead::Unreadable(e.to_string()),
        };
        // The entry may have been swapped between lstat and open: check again.
        let size = match f.metadata() {
            Ok(m) if !m.is_file() => return FileRead::NotAFile("special file"),
            Ok(m) => m.len().min(limit),
            Err(e) => return FileRead::Unreadable(e.to_string()),
        };
        // Room for the whole file and one byte more: one read takes it all and
        // the next sees the end (an empty buffer would start with small probes).
        let mut buf = Vec::with_capacity(size as usize + 1);
        match (&mut f).take(limit + 1).read_to_end(&mut buf) {
            Ok(_) if buf.len() as u64 > limit => FileRead::TooLarge(buf.len() as u64),
            Ok(_) => FileRead::Bytes(buf),
            Err(e) => FileRead::Unreadable(e.to_string()),
        }
    }

    /// Up to `limit` bytes of the regular file `name` from byte `offset` on
    /// (a file that grows is read as far as it is): for following a log.
    /// `NotFound` when it does not exist; a link is never followed.
    pub fn read_from(&self, name: &str, offset: u64, limit: u64) -> io::Result<Piece> {
        use std::io::{Read, Seek, SeekFrom};
        let mut file = self.handle.open_read(OsStr::new(name))?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::other(format!("{name} is not a regular file")));
        }
        file.seek(SeekFrom::Start(offset))?;
        let mut bytes = Vec::new();
        file.take(limit).read_to_end(&mut bytes)?;
        Ok(Piece {
            bytes,
            len: meta.len(),
            file: file_id(&meta),
        })
    }
}

/// Which file an open file is, where the system tells files apart
/// cheaply: on Unix its device and inode, so a file removed and another
/// made under its name is told from it.
pub type FileId = (u64, u64);

#[cfg(unix)]
fn file_id(meta: &std::fs::Metadata) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

/// Windows: std gives no file index on stable Rust; a replaced log is told
/// by its length and by the result alone (SECURITY.md, Reliability).
#[cfg(not(unix))]
fn file_id(_: &std::fs::Metadata) -> Option<FileId> {
    None
}

/// Part of a file read by [`Dir::read_from`].
#[derive(Debug)]
pub struct Piece {
    /// The bytes read.
    pub bytes: Vec<u8>,
    /// The file's whole length when it was opened.
    pub len: u64,
    /// Which file it was, where that can be told.
    pub file: Option<FileId>,
}
