//! Local state that must never sync (SPEC §3): the one-listener lock, the
//! journal of the job in progress, and the ledger of processed job ids.
//!
//! The lock is an OS file lock, released by the kernel when the process dies,
//! so a crash never leaves the target stuck. The journal is written durably
//! before a job is spawned and removed after its result, archive and ledger
//! entry are on disk: finding one at start-up means the last listener died
//! mid-job.

use std::collections::HashMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::error::{Code, Error, Result};
use crate::fsops;
use crate::layout::StateDirs;

/// The held listener lock; dropping it releases the lock.
#[derive(Debug)]
pub struct Lock {
    _file: File,
}

impl Lock {
    /// Takes the lock or answers `BUSY` naming the holder's pid.
    pub fn acquire(state: &StateDirs, target: &str) -> Result<Lock> {
        fsops::create_dirs(&[state.base().to_path_buf()])?;
        let path = state.lock_file();
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| Error::io("open", &path, &e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                let who = if holder.is_empty() {
                    "another process".into()
                } else {
                    format!("pid {holder}")
                };
                return Err(Error::new(
                    Code::Busy,
                    format!(
                        "a listener for {target} is already running ({who}; lock {})",
                        path.display()
                    ),
                )
                .hint("one listener per target and machine; stop the other one first"));
            }
            Err(TryLockError::Error(e)) => return Err(Error::io("lock", &path, &e)),
        }
        let _ = file.set_len(0);
        let _ = file.rewind();
        let _ = writeln!(file, "{}", std::process::id());
        let _ = file.flush();
        Ok(Lock { _file: file })
    }
}

/// The job in progress, as recorded before it was spawned.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct JournalEntry {
    /// The job.
    pub job_id: String,
    /// When it started.
    pub started_at: String,
    /// Its process (and group) id; 0 before the spawn returned.
    pub pid: i32,
}

/// Reads and writes the journal file.
#[derive(Clone, Debug)]
pub struct Journal {
    path: PathBuf,
}

impl Journal {
    /// The journal of `state`.
    pub fn new(state: &StateDirs) -> Journal {
        Journal {
            path: state.journal(),
        }
    }

    /// The entry left by a listener that died mid-job, if any. An entry that
    /// cannot be parsed is reported, not ignored: it means a job may be lost.
    pub fn read(&self) -> Result<Option<JournalEntry>> {
        match std::fs::read(&self.path) {
            Ok(b) => serde_json::from_slice(&b).map(Some).map_err(|e| {
                Error::new(
                    Code::Internal,
                    format!("journal {} is damaged: {e}", self.path.display()),
                )
                .hint("look for the job it names, then remove the file")
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io("read", &self.path, &e)),
        }
    }

    /// Records `entry` durably: done before a job is spawned, so that even
    /// a power loss cannot forget that it started.
    pub fn write(&self, entry: &JournalEntry) -> Result<()> {
        fsops::replace(
            &self.path,
            &serde_json::to_vec(entry).expect("serialises"),
            true,
        )
    }

    /// Adds the spawned process's id, without flushing: the id matters after
    /// the listener dies while the machine lives on (the page cache keeps
    /// the write); after a power loss the job's processes are gone anyway.
    pub fn note_pid(&self, entry: &JournalEntry) -> Result<()> {
        fsops::replace(
            &self.path,
            &serde_json::to_vec(entry).expect("serialises"),
            false,
        )
    }

    /// Clears the journal once the job is fully recorded. Not flushed: a journal that reappears after a power loss names a job
    /// whose result is already durable, and recovery then only redoes the
    /// bookkeeping.
    pub fn clear(&self) -> Result<()> {
        fsops::remove(&self.path)
    }
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LedgerLine {
    job_id: String,
    processed_at: String,
}

/// Processed job ids and when, kept at least `retention` (≥ the job max age).
#[derive(Debug)]
pub struct Ledger {
    path: PathBuf,
    seen: Seen,
}

/// The ids in memory, shared with [`LedgerView`]s on other threads.
type Seen = Arc<RwLock<HashMap<String, OffsetDateTime>>>;

/// A read-only view of a [`Ledger`]'s ids for another thread (the HTTP
/// intake's replay guard): it sees every id the ledger records, at once.
#[derive(Clone, Debug)]
pub struct LedgerView(Seen);

impl LedgerView {
    /// True when `id` was processed within the retention.
    pub fn contains(&self, id: &str) -> bool {
        self.0
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(id)
    }
}

impl Ledger {
    /// Loads the ledger, dropping entries older than `retention`.
    pub fn load(state: &StateDirs, now: OffsetDateTime, retention: Duration) -> Result<Ledger> {
        let path = state.ledger();
        let text = match std::fs::read(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(Error::io("read", &path, &e)),
        };
        let mut seen = HashMap::new();
        let mut lines = 0;
        // A torn last line (a crash mid-append) is skipped; the result and
        // archive written before it still guard that job.
        for line in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            lines += 1;
            if let Ok(l) = serde_json::from_slice::<LedgerLine>(line)
                && let Some(at) = crate::clock::parse(&l.processed_at)
                && now - at <= retention
            {
                seen.insert(l.job_id, at);
            }
        }
        let kept = seen.len();
        let ledger = Ledger {
            path,
            seen: Arc::new(RwLock::new(seen)),
        };
        if lines > kept {
            ledger.compact()?;
        }
        Ok(ledger)
    }

    fn compact(&self) -> Result<()> {
        let mut out = Vec::new();
        let seen = self.seen.read().unwrap_or_else(|p| p.into_inner());
        let mut rows: Vec<_> = seen.iter().collect();
        rows.sort_by_key(|(_, at)| **at);
        for (id, at) in rows {
            out.extend(line(id, *at));
        }
        fsops::replace(&self.path, &out, true)
    }

    /// True when `id` was processed within the retention.
    pub fn contains(&self, id: &str) -> bool {
        self.seen
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(id)
    }

    /// A view of the ids for another thread.
    pub fn view(&self) -> LedgerView {
        LedgerView(Arc::clone(&self.seen))
    }

    /// Records `id` durably.
    pub fn append(&mut self, id: &str, now: OffsetDateTime) -> Result<()> {
        let mut f = fsops::open_append(&self.path)?;
        f.write_all(&line(id, now))
            .and_then(|_| f.sync_data())
            .map_err(|e| Error::io("append to", &self.path, &e))?;
        self.seen
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.to_string(), now);
        Ok(())
    }

    /// Where the ledger lives.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn line(id: &str, at: OffsetDateTime) -> Vec<u8> {
    let mut l = serde_json::to_vec(&LedgerLine {
        job_id: id.to_string(),
        processed_at: crate::clock::format(at),
    })
    .expect("serialises");
    l.push(b'\n');
    l
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::Machine;
    use time::macros::datetime;

    #[test]
    fn ledger_keeps_recent_ids_and_drops_old_ones() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDirs::new(dir.path(), &Machine::parse("PC", "t").unwrap());
        std::fs::create_dir_all(state.base()).unwrap();
        let t0 = datetime!(2026-11-01 00:00 UTC);
        let mut l = Ledger::load(&state, t0, Duration::from_secs(86400 * 10)).unwrap();
        l.append("old", t0).unwrap();
        l.append("new", t0 + time::Duration::days(9)).unwrap();
        // A torn line from a crash is skipped.
        std::fs::OpenOptions::new()
            .append(true)
            .open(l.path())
            .unwrap()
            .write_all(b"{\"jobId\":\"x")
            .unwrap();
        let later = t0 + time::Duration::days(15);
        let l = Ledger::load(&state, later, Duration::from_secs(86400 * 10)).unwrap();
        assert!(!l.contains("old"));
        assert!(l.contains("new"));
        assert!(!l.contains("x"));
        let text = std::fs::read_to_string(l.path()).unwrap();
        assert_eq!(text.lines().count(), 1, "compacted: {text}");
    }

    #[test]
    fn a_second_lock_is_busy() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDirs::new(dir.path(), &Machine::parse("PC", "t").unwrap());
        let _held = Lock::acquire(&state, "PC").unwrap();
        let err = Lock::acquire(&state, "PC").unwrap_err();
        assert_eq!(err.code, Code::Busy);
        assert!(
            err.message.contains(&std::process::id().to_string()),
            "{}",
            err.message
        );
    }
}
