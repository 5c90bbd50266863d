//! Atomic file operations (docs/protocol.md §3): write a temp file readers ignore, flush
//! it, then move it into place without ever replacing what is there; read
//! candidates without following links or trusting their size.
//!
//! Sync engines and virus scanners hold handles for a while, so moves and
//! deletes retry transient failures within a bound, then report them.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::read::FileRead;

mod dir;

pub use dir::{Child, Dir, kind_word, not_a_folder};

/// How long a move or delete keeps retrying a transient failure.
pub const RETRY_BOUND: Duration = Duration::from_secs(5);

/// `.<final name>.<random>.tmp` beside `path`: ignored by our readers (not a
/// `<id>.json` name) and skipped by sync engines (the `.tmp` ending).
pub fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut r = [0u8; 6];
    crate::random::fill(&mut r);
    path.with_file_name(format!(".{name}.{}.tmp", hex::encode(r)))
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

/// Creates each directory (and its parents), refusing one that exists as
/// a link or a file: a planted link would lead our writes out of the root.
pub fn create_dirs(dirs: &[PathBuf]) -> Result<()> {
    for d in dirs {
        check_real_dir(d)?;
        std::fs::create_dir_all(d).map_err(|e| Error::io("create directory", d, &e))?;
    }
    Ok(())
}

/// Refuses a folder that exists but is not a real directory (a symbolic
/// link could lead reads, writes and deletes outside the root).
pub fn check_real_dir(dir: &Path) -> Result<()> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if !m.file_type().is_dir() => Err(Error::forbidden(format!(
            "{} is not a real folder ({}); a folder of the layout must not be a link or a file",
            dir.display(),
            not_a_file(&m).unwrap_or("file")
        ))
        .hint("move it away; the listener makes the folder again")),
        _ => Ok(()),
    }
}

/// Creates a fresh log file at `path` for writing: whatever entry had that
/// name (a planted link or hard link to a file elsewhere) is removed first,
/// and the new file is created without following links.
pub fn create_log(path: &Path) -> std::io::Result<File> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    crate::platform::create_new_no_follow(path)
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

/// Publishes `bytes` at `path` unless something is already there: `Ok(true)`
/// when placed, `Ok(false)` when the name was taken (nothing is changed).
pub fn publish(path: &Path, bytes: &[u8], flush: Flush) -> Result<bool> {
    let tmp = write_temp(path, bytes, flush)?;
    let placed = move_no_replace(&tmp, path);
    if !matches!(placed, Ok(true)) {
        let _ = std::fs::remove_file(&tmp);
    }
    if placed.as_ref().is_ok_and(|p| *p) && flush == Flush::DataAndName {
        sync_parent(path);
    }
    placed
}

/// Writes `bytes` at `path`, replacing it: only for our informational files
/// (heartbeat, `running/`) and local state, never for published documents.
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

/// Moves `from` to `to` unless `to` exists: `Ok(true)` when moved,
/// `Ok(false)` when `to` was taken (then `from` is left where it was).
pub fn move_no_replace(from: &Path, to: &Path) -> Result<bool> {
    match retry(|| crate::platform::rename_no_replace(from, to)) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(Error::io(&format!("move {} to", from.display()), to, &e)),
    }
}

/// Removes a file, retrying transient failures; a missing file is fine.
pub fn remove(path: &Path) -> Result<()> {
    match retry(|| std::fs::remove_file(path)) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io("remove", path, &e)),
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
pub fn sync_parent(path: &Path) {
    if let Some(dir) = path.parent() {
        crate::platform::sync_dir(dir);
    }
}

/// Reads a candidate file (docs/protocol.md §6 steps 1 and 2): never follows a link,
/// never blocks on a FIFO, and refuses anything over `limit` before reading
/// more than `limit + 1` bytes.
pub fn read_limited(path: &Path, limit: u64) -> FileRead {
    read_limited_with(path, std::fs::symlink_metadata(path), limit)
}

/// [`read_limited`] for a caller that has just taken the entry's
/// `symlink_metadata` itself, so the entry is looked up once.
pub fn read_limited_with(path: &Path, meta: io::Result<std::fs::Metadata>, limit: u64) -> FileRead {
    let meta = match meta {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return FileRead::Missing,
        Err(e) => return FileRead::Unreadable(e.to_string()),
    };
    if let Some(kind) = not_a_file(&meta) {
        return FileRead::NotAFile(kind);
    }
    if meta.len() > limit {
        return FileRead::TooLarge(meta.len());
    }
    let mut f = match crate::platform::open_no_follow(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return FileRead::Missing,
        Err(e) if crate::platform::is_link_error(&e) => return FileRead::NotAFile("symbolic link"),
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

/// Names the kind of a non-regular directory entry.
pub fn not_a_file(meta: &std::fs::Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_symlink() {
        Some("symbolic link")
    } else if t.is_dir() {
        Some("directory")
    } else if !t.is_file() {
        Some("special file")
    } else {
        None
    }
}

/// Opens `path` for appending, creating it; used for logs and the ledger.
pub fn open_append(path: &Path) -> Result<File> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| Error::io("open", path, &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names_are_ignored_by_readers_and_recognised_by_sweep() {
        let t = temp_path(Path::new("/x/inbox/abc.json"));
        let name = t.file_name().unwrap().to_str().unwrap();
        assert!(crate::names::JobId::from_file_name(name).is_none());
        assert!(is_our_temp_name(name), "{name}");
        assert!(!is_our_temp_name(".syncthing.abc.json.tmp"));
        assert!(!is_our_temp_name("abc.json"));
        assert!(!is_our_temp_name("~$abc.json"));
    }

    #[test]
    fn publish_never_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        assert!(publish(&p, b"one", Flush::DataAndName).unwrap());
        assert!(!publish(&p, b"two", Flush::DataAndName).unwrap());
        assert_eq!(std::fs::read(&p).unwrap(), b"one");
        let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temp file is left behind");
    }

    #[test]
    fn read_limited_refuses_links_and_large_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        std::fs::write(&p, b"12345").unwrap();
        assert!(matches!(read_limited(&p, 5), FileRead::Bytes(b) if b == b"12345"));
        assert!(matches!(read_limited(&p, 4), FileRead::TooLarge(5)));
        assert!(matches!(
            read_limited(&dir.path().join("none"), 4),
            FileRead::Missing
        ));
        assert!(matches!(
            read_limited(dir.path(), 4),
            FileRead::NotAFile("directory")
        ));
        #[cfg(unix)]
        {
            let l = dir.path().join("l.json");
            std::os::unix::fs::symlink(&p, &l).unwrap();
            assert!(matches!(
                read_limited(&l, 100),
                FileRead::NotAFile("symbolic link")
            ));
        }
    }
}
