//! Writing through a [`Dir`]: create without replacing (one file, or a
//! batch with one flush), replace an informational file, move without
//! replacing, remove, and a log appended as output arrives
//! (docs/protocol.md §3.3, §7.10).

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Write};

use super::Dir;
use crate::base::error::{Error, Result};
use crate::store::fsops::{Flush, retry, temp_name};

impl Dir {
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
