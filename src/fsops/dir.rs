//! [`Dir`]: a folder of the layout held open, and the file operations the
//! lane makes in it (docs/protocol.md §3.3, §3.5). Every operation names one
//! entry of the open folder, so a folder swapped for a link after it was
//! opened leads nowhere: nothing under the root is looked up by path twice,
//! and no link is followed.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use super::{Flush, retry, temp_name};
use crate::error::{Error, Result};
use crate::platform::{DirHandle, Entry, EntryKind};
use crate::read::FileRead;

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

    /// Writes a temp file for each `(name, bytes)` of `files` (see
    /// [`Dir::write_temp`]), closing each once written, then, when `flush`
    /// asks, flushes their data with one call (docs/protocol.md §7.10):
    /// their temp names, in order. A batch of any size holds one file open
    /// at a time.
    ///
    /// # Errors
    ///
    /// A file error naming the temp file or the folder; the temp files
    /// written are removed.
    fn write_temps<'a>(
        &self,
        files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
        flush: Flush,
    ) -> Result<Vec<String>> {
        let files = files.into_iter();
        let mut temps = Vec::with_capacity(files.size_hint().0);
        let clean = |temps: &[String]| {
            for t in temps {
                let _ = self.handle.remove_file(OsStr::new(t));
            }
        };
        for (name, bytes) in files {
            match self.write_temp(name, bytes, Flush::Nothing) {
                Ok((tmp, file)) => {
                    drop(file);
                    temps.push(tmp);
                }
                Err(e) => {
                    clean(&temps);
                    return Err(e);
                }
            }
        }
        if flush != Flush::Nothing {
            let names: Vec<&OsStr> = temps.iter().map(OsStr::new).collect();
            if let Err(e) = self.handle.sync_names(&names) {
                clean(&temps);
                return Err(Error::io("flush files in", &self.path, &e));
            }
        }
        Ok(temps)
    }

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

    /// Makes and removes one of our temp files (named for `what`) here:
    /// a folder that can be listed but not written answers at once.
    ///
    /// # Errors
    ///
    /// The file error, naming the temp file.
    pub fn check_writable(&self, what: &str) -> Result<()> {
        let (tmp, file) = self.write_temp(what, b"", Flush::Nothing)?;
        drop(file);
        self.remove(&tmp)
    }

    /// Writes `bytes` to a new temp file for the final name `name`
    /// (docs/protocol.md §3.3 step 1), flushed as `flush` says; returns its
    /// name and the file, still open (the caller closes it; a batch closes
    /// each before the next, [`Dir::write_temps`]).
    ///
    /// # Errors
    ///
    /// A file error naming the temp file (which is then removed).
    fn write_temp(&self, name: &str, bytes: &[u8], flush: Flush) -> Result<(String, File)> {
        let tmp = temp_name(name);
        let written = (|| -> io::Result<File> {
            let mut f = self.handle.create_new(OsStr::new(&tmp))?;
            f.write_all(bytes)?;
            if flush != Flush::Nothing {
                f.sync_all()?;
            }
            Ok(f)
        })();
        match written {
            Ok(f) => Ok((tmp, f)),
            Err(e) => {
                let _ = self.handle.remove_file(OsStr::new(&tmp));
                Err(Error::io("write", &self.shown(&tmp), &e))
            }
        }
    }

    /// Publishes `bytes` at `name` unless something is already there
    /// (docs/protocol.md §3.3): `Ok(true)` when placed, `Ok(false)` when the
    /// name was taken (nothing is changed).
    ///
    /// # Errors
    ///
    /// A file error naming the file.
    pub fn publish(&self, name: &str, bytes: &[u8], flush: Flush) -> Result<bool> {
        let (tmp, f) = self.write_temp(name, bytes, flush)?;
        drop(f);
        let placed = self.move_no_replace(&tmp, self, name);
        if !matches!(placed, Ok(true)) {
            let _ = self.handle.remove_file(OsStr::new(&tmp));
        }
        if placed.as_ref().is_ok_and(|p| *p) && flush == Flush::DataAndName {
            self.sync();
        }
        placed
    }

    /// Publishes each `(name, bytes)` of `files` as [`Dir::publish`] does,
    /// with one flush for them all instead of one each: see
    /// [`Dir::publish_all_with`]; a name taken stays taken.
    ///
    /// # Errors
    ///
    /// A file error naming the temp file or the folder (nothing placed).
    pub fn publish_all(
        &self,
        files: &[(String, Vec<u8>)],
        flush: Flush,
    ) -> Result<Vec<Result<bool>>> {
        self.publish_all_with(files, flush, |_| Ok(false))
    }

    /// The one batch publisher (docs/protocol.md §3.3, §7.8 step 6): every
    /// temp file is written and closed, their data flushed with one call
    /// when `flush` asks, each renamed into place without replacing, and
    /// the folder flushed once at [`Flush::DataAndName`]. When the name
    /// of `files[i]` is taken, `taken(i)` may clear it (a forged result
    /// moved aside) and answer true to have the rename tried once more.
    /// `Err` when no file was placed; otherwise, per file, what its rename
    /// came to (an error of `taken` included).
    ///
    /// # Errors
    ///
    /// A file error naming the temp file or the folder (nothing placed).
    pub fn publish_all_with<N: AsRef<str>, B: AsRef<[u8]>>(
        &self,
        files: &[(N, B)],
        flush: Flush,
        mut taken: impl FnMut(usize) -> Result<bool>,
    ) -> Result<Vec<Result<bool>>> {
        let temps = self.write_temps(
            files
                .iter()
                .map(|(name, bytes)| (name.as_ref(), bytes.as_ref())),
            flush,
        )?;
        let placed: Vec<Result<bool>> = temps
            .iter()
            .zip(files)
            .enumerate()
            .map(|(i, (tmp, (name, _)))| {
                let name = name.as_ref();
                let mut placed = self.move_no_replace(tmp, self, name);
                if matches!(placed, Ok(false)) {
                    placed = match taken(i) {
                        Ok(true) => self.move_no_replace(tmp, self, name),
                        Ok(false) => Ok(false),
                        Err(e) => Err(e),
                    };
                }
                if !matches!(placed, Ok(true)) {
                    let _ = self.handle.remove_file(OsStr::new(tmp));
                }
                placed
            })
            .collect();
        if flush == Flush::DataAndName && placed.iter().any(|p| matches!(p, Ok(true))) {
            self.sync();
        }
        Ok(placed)
    }

    /// Writes `bytes` at `name`, replacing it: only for our informational
    /// files (heartbeat, `running/`), never for published documents.
    ///
    /// # Errors
    ///
    /// A file error naming the file.
    pub fn replace(&self, name: &str, bytes: &[u8], flush: Flush) -> Result<()> {
        let (tmp, f) = self.write_temp(name, bytes, flush)?;
        drop(f);
        let (from, to) = (OsStr::new(&tmp), OsStr::new(name));
        retry(|| self.handle.rename_replace(from, &self.handle, to)).map_err(|e| {
            let _ = self.handle.remove_file(from);
            Error::io("replace", &self.shown(name), &e)
        })?;
        if flush == Flush::DataAndName {
            self.sync();
        }
        Ok(())
    }

    /// Moves the entry `from` to `to` in `dest` (this folder or another)
    /// unless `to` exists: `Ok(true)` when moved, `Ok(false)` when `to` was
    /// taken (then `from` is left where it was). A link is moved as itself.
    ///
    /// # Errors
    ///
    /// A file error naming both entries.
    pub fn move_no_replace(&self, from: &str, dest: &Dir, to: &str) -> Result<bool> {
        let (f, t) = (OsStr::new(from), OsStr::new(to));
        match retry(|| self.handle.rename_no_replace(f, &dest.handle, t)) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(Error::io(
                &format!("move {} to", self.shown(from).display()),
                &dest.shown(to),
                &e,
            )),
        }
    }

    /// Removes the entry `name` (a link itself, never what it names),
    /// retrying transient failures; a missing entry is fine.
    ///
    /// # Errors
    ///
    /// A file error naming the entry.
    pub fn remove(&self, name: &str) -> Result<()> {
        match retry(|| self.handle.remove_file(OsStr::new(name))) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io("remove", &self.shown(name), &e)),
        }
    }

    /// Removes `name` when it is there: true when it was (a request file
    /// taken), false when it was not or cannot be removed.
    pub fn take(&self, name: &str) -> bool {
        self.handle.remove_file(OsStr::new(name)).is_ok()
    }

    /// Creates a fresh log file `name` for writing (docs/protocol.md §3.5):
    /// whatever entry had that name (a planted link or hard link to a file
    /// elsewhere) is removed first, and the new file is created exclusively,
    /// never through a link.
    pub fn create_log(&self, name: &str) -> io::Result<Log> {
        match self.handle.remove_file(OsStr::new(name)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        self.handle
            .create_new(OsStr::new(name))
            .map(|file| Log { file })
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

/// A log file made by [`Dir::create_log`], written as output arrives: the
/// one way the root's files are appended to.
#[derive(Debug)]
pub struct Log {
    file: File,
}

impl Write for Log {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
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

/// The `FORBIDDEN` error for a folder of the layout that is not one.
pub fn not_a_folder(path: &Path, kind: &str) -> Error {
    Error::forbidden(format!(
        "{} is not a real folder ({kind}); a folder of the layout must not be a link or a file",
        path.display(),
    ))
    .hint("move it away; the listener moves it aside and makes the folder again")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_never_replaces_and_leaves_no_temp_file() {
        let t = tempfile::tempdir().unwrap();
        let d = Dir::open_trusted(t.path()).unwrap();
        assert!(d.publish("a.json", b"one", Flush::DataAndName).unwrap());
        assert!(!d.publish("a.json", b"two", Flush::DataAndName).unwrap());
        assert_eq!(std::fs::read(t.path().join("a.json")).unwrap(), b"one");
        assert_eq!(d.list().unwrap(), vec!["a.json".to_string()]);
    }

    #[test]
    fn publish_all_places_each_file_never_replaces_and_leaves_no_temp_file() {
        let t = tempfile::tempdir().unwrap();
        let d = Dir::open_trusted(t.path()).unwrap();
        assert!(d.publish("b.json", b"old", Flush::DataAndName).unwrap());
        for flush in [Flush::DataAndName, Flush::Nothing] {
            let files: Vec<(String, Vec<u8>)> = ["a", "b", "c", "d"]
                .iter()
                .map(|n| (format!("{n}.json"), n.as_bytes().to_vec()))
                .collect();
            let placed: Vec<bool> = d
                .publish_all(&files, flush)
                .unwrap()
                .into_iter()
                .map(|p| p.unwrap())
                .collect();
            if flush == Flush::DataAndName {
                assert_eq!(placed, [true, false, true, true]);
            } else {
                assert_eq!(placed, [false; 4], "all taken the second time");
            }
        }
        assert_eq!(std::fs::read(t.path().join("b.json")).unwrap(), b"old");
        assert_eq!(std::fs::read(t.path().join("d.json")).unwrap(), b"d");
        let mut left = d.list().unwrap();
        left.sort();
        assert_eq!(left, ["a.json", "b.json", "c.json", "d.json"]);
    }

    #[test]
    fn read_limited_refuses_links_folders_and_large_files() {
        let t = tempfile::tempdir().unwrap();
        let d = Dir::open_trusted(t.path()).unwrap();
        std::fs::write(t.path().join("a.json"), b"12345").unwrap();
        assert!(matches!(d.read_limited("a.json", 5), FileRead::Bytes(b) if b == b"12345"));
        assert!(matches!(d.read_limited("a.json", 4), FileRead::TooLarge(5)));
        assert!(matches!(d.read_limited("none", 4), FileRead::Missing));
        std::fs::create_dir(t.path().join("sub")).unwrap();
        assert!(matches!(
            d.read_limited("sub", 4),
            FileRead::NotAFile("directory")
        ));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(t.path().join("a.json"), t.path().join("l.json")).unwrap();
            assert!(matches!(
                d.read_limited("l.json", 100),
                FileRead::NotAFile("symbolic link")
            ));
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_folder_link_is_refused_and_a_held_folder_stays_itself_when_swapped() {
        let t = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x.json"), b"outside").unwrap();
        let root = Dir::open_trusted(t.path()).unwrap();
        std::os::unix::fs::symlink(outside.path(), t.path().join("link")).unwrap();
        assert!(matches!(
            root.child("link").unwrap(),
            Child::NotAFolder("symbolic link")
        ));
        std::fs::write(t.path().join("file"), b"").unwrap();
        assert!(matches!(
            root.child("file").unwrap(),
            Child::NotAFolder("file")
        ));
        assert!(matches!(root.child("none").unwrap(), Child::Missing));
        let held = root.child_made("inbox").unwrap();
        // Swapped for a link to the outside folder while held.
        std::fs::rename(t.path().join("inbox"), t.path().join("old")).unwrap();
        std::os::unix::fs::symlink(outside.path(), t.path().join("inbox")).unwrap();
        assert!(!held.exists("x.json"));
        assert!(held.publish("x.json", b"ours", Flush::Nothing).unwrap());
        held.remove("x.json").unwrap();
        assert_eq!(
            std::fs::read(outside.path().join("x.json")).unwrap(),
            b"outside"
        );
    }
}
