//! Atomic file operations (docs/protocol.md §3): write a temp file readers ignore, flush
//! it, then move it into place without ever replacing what is there; read
//! candidates without following links or trusting their size.
//!
//! Under the root every operation goes through a [`Dir`], a folder held
//! open whose entries are named one at a time, so a folder swapped for a
//! link is never followed. The functions here that take paths are for
//! local state outside the root (the ledger, the lock, the key file).
//!
//! Sync engines and virus scanners hold handles for a while, so moves and
//! deletes retry transient failures within a bound, then report them.

use std::fs::OpenOptions;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::base::error::{Error, Result};
use crate::base::read::FileRead;
use crate::platform::EntryKind;

mod dir;

pub use dir::{Child, Dir, FileId, FileLock, Locking, Log, Piece, kind_word, not_a_folder};

/// How long a move or delete keeps retrying a transient failure.
pub const RETRY_BOUND: Duration = Duration::from_secs(5);

/// `.<final name>.<random>.tmp` beside `path`: see [`temp_name`].
pub fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(temp_name(&name))
}

/// `.<final name>.<random>.tmp`, the temp file for `name`: ignored by our
/// readers (not a `<id>.json` name) and skipped by sync engines (the `.tmp`
/// ending).
pub fn temp_name(name: &str) -> String {
    let mut r = [0u8; 6];
    crate::base::random::fill(&mut r);
    format!(".{name}.{}.tmp", hex::encode(r))
}

/// True for our own temp file names (what `sweep` may remove).
pub fn is_our_temp_name(name: &str) -> bool {
    name.starts_with('.')
        && name.ends_with(".tmp")
        && name
            .rsplit('.')
            .nth(1)
            .is_some_and(|r| r.len() == 12 && r.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The final name our temp file `name` was made for (see [`temp_name`]);
/// None for any other name.
pub fn temp_target(name: &str) -> Option<&str> {
    if !is_our_temp_name(name) {
        return None;
    }
    let inner = &name[1..name.len() - ".tmp".len()];
    inner.rsplit_once('.').map(|(target, _random)| target)
}

/// Creates each local directory (and its parents), refusing one that
/// exists as a link or a file.
pub fn create_dirs(dirs: &[PathBuf]) -> Result<()> {
    for d in dirs {
        if let Ok(m) = std::fs::symlink_metadata(d)
            && !m.file_type().is_dir()
        {
            let kind = if m.file_type().is_symlink() {
                "symbolic link"
            } else {
                "file"
            };
            return Err(not_a_folder(d, kind));
        }
        std::fs::create_dir_all(d).map_err(|e| Error::io("create directory", d, &e))?;
    }
    Ok(())
}

/// Reads the local file `path` the user named (the key file, the config
/// file) as [`Dir::read_limited`] reads a candidate, but following links:
/// anything but a regular file, looked at before it is opened and again
/// once open, is [`FileRead::NotAFile`] (a FIFO is opened without
/// blocking, a device is never read), and more than `limit` bytes is
/// [`FileRead::TooLarge`], found before reading more than `limit + 1`.
pub fn read_local(path: &Path, limit: u64) -> FileRead {
    let not_found = |e: &io::Error| e.kind() == io::ErrorKind::NotFound;
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => return FileRead::NotAFile(local_kind_word(m.file_type())),
        Ok(_) => {}
        Err(e) if not_found(&e) => return FileRead::Missing,
        Err(e) => return FileRead::Unreadable(e.to_string()),
    }
    let mut options = OpenOptions::new();
    options.read(true);
    // Swapped for a FIFO since the look above: the open must not wait for
    // a writer (reads of a regular file ignore the flag).
    crate::platform::never_block_on_open(&mut options);
    let f = match options.open(path) {
        Ok(f) => f,
        Err(e) if not_found(&e) => return FileRead::Missing,
        Err(e) => return FileRead::Unreadable(e.to_string()),
    };
    match f.metadata() {
        Ok(m) if !m.is_file() => return FileRead::NotAFile(local_kind_word(m.file_type())),
        Ok(_) => {}
        Err(e) => return FileRead::Unreadable(e.to_string()),
    }
    let mut buf = Vec::new();
    match f.take(limit + 1).read_to_end(&mut buf) {
        Ok(_) if buf.len() as u64 > limit => FileRead::TooLarge(buf.len() as u64),
        Ok(_) => FileRead::Bytes(buf),
        Err(e) => FileRead::Unreadable(e.to_string()),
    }
}

/// Names what a local path holds, for messages: `file`, `directory`,
/// `symbolic link` (on Windows also a junction), on Unix `FIFO`, `socket`,
/// `character device` or `block device`, else `special file`.
pub fn local_kind_word(kind: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "FIFO";
        }
        if kind.is_socket() {
            return "socket";
        }
        if kind.is_char_device() {
            return "character device";
        }
        if kind.is_block_device() {
            return "block device";
        }
    }
    dir::kind_word(if kind.is_symlink() {
        EntryKind::Link
    } else if kind.is_dir() {
        EntryKind::Dir
    } else if kind.is_file() {
        EntryKind::File
    } else {
        EntryKind::Other
    })
}

/// How much of the lane's state reaches the disk before it goes on: a
/// setting of the file layer, chosen by `--durability` or the config file.
#[derive(Debug, Clone, Copy, clap::ValueEnum, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// Every job's start and result are flushed before the next step, and
    /// a queued job's folder entry before `enqueue` returns
    #[default]
    Full,
    /// The listener flushes its ledger at most every 20 ms and `enqueue`
    /// flushes nothing: a crash of the listener changes nothing, but a
    /// power loss may run a job started in the last moments a second time,
    /// or lose one queued in the last seconds (or leave it torn, and then
    /// rejected)
    Relaxed,
}

impl Durability {
    /// How a newly queued job is published: relaxed, a power loss may lose
    /// the job or leave it torn (the listener rejects it once settled); a
    /// crash of the process cannot.
    pub fn enqueue_flush(self) -> Flush {
        match self {
            Durability::Full => Flush::DataAndName,
            Durability::Relaxed => Flush::Nothing,
        }
    }
}

/// How much of a write reaches the disk before the call returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flush {
    /// Nothing: files whose loss, or whose torn copy after a power loss,
    /// is acceptable (informational files, or the caller flushes them).
    Nothing,
    /// The bytes, before the file gets its name; the folder entry is
    /// flushed later by the caller (the listener's checkpoint, §7.8).
    Data,
    /// The bytes and the directory entry: the write survives a power loss.
    DataAndName,
}

/// Writes `bytes` to a new temp file beside `path` (see [`temp_path`]).
pub fn write_temp(path: &Path, bytes: &[u8], flush: Flush) -> Result<PathBuf> {
    let tmp = temp_path(path);
    let written = (|| -> io::Result<()> {
        let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        if flush != Flush::Nothing {
            f.sync_all()?;
        }
        Ok(())
    })();
    match written {
        Ok(()) => Ok(tmp),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(Error::io("write", &tmp, &e))
        }
    }
}

/// Writes `bytes` at the local file `path`, replacing it (local state only;
/// under the root see [`Dir::replace`]).
pub fn replace(path: &Path, bytes: &[u8], flush: Flush) -> Result<()> {
    let tmp = write_temp(path, bytes, flush)?;
    retry(|| std::fs::rename(&tmp, path)).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io("replace", path, &e)
    })?;
    if flush == Flush::DataAndName {
        sync_parent(path);
    }
    Ok(())
}

/// Moves the local file `from` to `to` unless `to` exists: `Ok(true)` when moved,
/// `Ok(false)` when `to` was taken (then `from` is left where it was).
pub fn move_no_replace(from: &Path, to: &Path) -> Result<bool> {
    match retry(|| crate::platform::rename_no_replace(from, to)) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(Error::io(&format!("move {} to", from.display()), to, &e)),
    }
}

/// Runs `op` until it succeeds, fails for good, or [`RETRY_BOUND`] passes.
fn retry(mut op: impl FnMut() -> io::Result<()>) -> io::Result<()> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(25);
    loop {
        match op() {
            Err(e) if crate::platform::is_transient(&e) && start.elapsed() < RETRY_BOUND => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(400));
            }
            other => return other,
        }
    }
}

/// Flushes the directory entry of `path` (a rename is durable only then).
fn sync_parent(path: &Path) {
    if let Some(dir) = path.parent() {
        crate::platform::sync_dir(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names_are_ignored_by_readers_and_recognised_by_sweep() {
        let t = temp_path(Path::new("/x/inbox/abc.json"));
        let name = t.file_name().unwrap().to_str().unwrap();
        assert!(crate::base::names::JobId::from_file_name(name).is_none());
        assert!(is_our_temp_name(name), "{name}");
        assert!(!is_our_temp_name(".syncthing.abc.json.tmp"));
        assert!(!is_our_temp_name("abc.json"));
        assert!(!is_our_temp_name("~$abc.json"));
        assert_eq!(temp_target(&temp_name("abc.json")), Some("abc.json"));
        assert_eq!(temp_target(".syncthing.abc.json.tmp"), None);
        assert_eq!(temp_target("abc.json"), None);
    }
}
