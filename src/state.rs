//! Local state that must never sync (SPEC §3): the one-listener lock, and
//! the ledger of processed job ids, which is also the journal of the job in
//! progress.
//!
//! The lock is an OS file lock, released by the kernel when the process dies,
//! so a crash never leaves the target stuck. The ledger is one append-only
//! file: a job's line is flushed before it is spawned, so a start-up that
//! finds a started job without a result knows the last listener died
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

/// A job the ledger says was started and never finished: the listener died
/// while it ran.
#[derive(Clone, Debug, PartialEq)]
pub struct Started {
    /// The job.
    pub job_id: String,
    /// When it started.
    pub started_at: String,
    /// Its process (and group) id; 0 when the listener died before noting it.
    pub pid: i32,
}

/// A result the ledger holds that may not have reached `results/` before a
/// crash: recovery publishes it again if it is missing.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    /// The job.
    pub job_id: String,
    /// The result file's exact bytes.
    pub result: Vec<u8>,
}

/// What a crashed listener left unfinished, read from the ledger at start-up.
#[derive(Debug, Default)]
pub struct Unfinished {
    /// Jobs started and never finished (at most one in practice: jobs run
    /// one at a time).
    pub started: Vec<Started>,
    /// Results recorded since the last checkpoint.
    pub recorded: Vec<Recorded>,
}

/// One line of the ledger. Every kind names a job except the checkpoint;
/// a line with only `jobId` and `processedAt` is the plain record that
/// compaction keeps.
#[derive(Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Line {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    job_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    processed_at: Option<String>,
    /// On the line written before a job is spawned.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    run: bool,
    /// The spawned process, noted after the spawn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pid: Option<i32>,
    /// The result file's text, on the line that finishes a job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result: Option<String>,
    /// Every result before this line is durably in `results/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    checkpoint: Option<String>,
}

/// The ledger of processed job ids (SPEC §3, §7), which is also the journal
/// of the job in progress: one append-only file in the state directory.
///
/// A job is consumed by one flushed line written before it is spawned;
/// its result is appended when it ends and flushed together with the next
/// job's start line, so a busy listener pays one flush per job. Results
/// are published to `results/` from there; a checkpoint line notes when the
/// folders were flushed, and start-up publishes again any result recorded
/// after the last one that did not reach `results/`.
#[derive(Debug)]
pub struct Ledger {
    path: PathBuf,
    /// Open for appending; closed while compaction replaces the file
    /// (Windows refuses to replace an open file).
    file: Option<File>,
    seen: Seen,
    /// Bytes of the file that compaction would drop (everything but plain
    /// records), and bytes it would keep.
    extra_bytes: u64,
    plain_bytes: u64,
    /// Expired ids or damaged lines were found: compact at the next
    /// checkpoint.
    stale: bool,
    /// A start or result line was appended and not flushed yet.
    unsynced: bool,
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

/// Compaction runs at a checkpoint once the lines it would drop pass this
/// size and outweigh the plain records.
const COMPACT_AFTER: u64 = 4 << 20;

impl Ledger {
    /// Loads the ledger, forgetting ids older than `retention`, and returns
    /// what a crashed listener left unfinished. The file is rewritten only
    /// at the first [`Ledger::checkpoint`], once that is dealt with.
    pub fn load(
        state: &StateDirs,
        now: OffsetDateTime,
        retention: Duration,
    ) -> Result<(Ledger, Unfinished)> {
        let path = state.ledger();
        let text = match std::fs::read(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(Error::io("read", &path, &e)),
        };
        let mut seen = HashMap::new();
        let mut expired = false;
        let mut extra_bytes = 0;
        let mut left = Unfinished::default();
        // A torn last line (a crash mid-append) is skipped: it was never
        // flushed, so nothing was spawned or published on its word.
        for raw in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let Ok(line) = serde_json::from_slice::<Line>(raw) else {
                expired = true;
                continue;
            };
            let extra = line.run || line.pid.is_some() || line.result.is_some();
            if extra || line.checkpoint.is_some() {
                extra_bytes += raw.len() as u64 + 1;
            }
            if line.checkpoint.is_some() {
                left.recorded.clear();
                continue;
            }
            let Some(id) = line.job_id else {
                continue;
            };
            if let Some(at) = line.processed_at.as_deref().and_then(crate::clock::parse) {
                if now - at <= retention {
                    seen.insert(id.clone(), at);
                } else {
                    expired = true;
                }
            }
            if line.run {
                left.started.push(Started {
                    job_id: id.clone(),
                    started_at: line.processed_at.clone().unwrap_or_default(),
                    pid: 0,
                });
            }
            if let Some(pid) = line.pid
                && let Some(s) = left.started.iter_mut().find(|s| s.job_id == id)
            {
                s.pid = pid;
            }
            if let Some(result) = line.result {
                left.started.retain(|s| s.job_id != id);
                left.recorded.push(Recorded {
                    job_id: id,
                    result: result.into_bytes(),
                });
            }
        }
        let file = Some(fsops::open_append(&path)?);
        let mut ledger = Ledger {
            path,
            file,
            seen: Arc::new(RwLock::new(seen)),
            extra_bytes,
            plain_bytes: 0,
            // After a crash, rewrite the file once recovery is done, so
            // what it settled is not met again.
            stale: expired || !left.started.is_empty() || !left.recorded.is_empty(),
            unsynced: false,
        };
        ledger.plain_bytes = ledger.plain_size();
        Ok((ledger, left))
    }

    fn plain_size(&self) -> u64 {
        let seen = self.seen.read().unwrap_or_else(|p| p.into_inner());
        seen.iter()
            .map(|(id, at)| plain(id, *at).len() as u64)
            .sum()
    }

    /// Rewrites the file with one plain record per id (durably, by an
    /// atomic replace). Only when nothing is left to recover: call it after
    /// a checkpoint.
    fn compact(&mut self) -> Result<()> {
        let mut out = Vec::new();
        {
            let seen = self.seen.read().unwrap_or_else(|p| p.into_inner());
            let mut rows: Vec<_> = seen.iter().collect();
            rows.sort_by_key(|(id, at)| (**at, id.as_str()));
            for (id, at) in rows {
                out.extend(plain(id, *at));
            }
        }
        self.file = None;
        fsops::replace(&self.path, &out, fsops::Flush::DataAndName)?;
        self.plain_bytes = out.len() as u64;
        self.extra_bytes = 0;
        self.stale = false;
        self.unsynced = false;
        Ok(())
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

    fn append(&mut self, line: &Line) -> Result<()> {
        let mut bytes = serde_json::to_vec(line).expect("serialises");
        bytes.push(b'\n');
        self.file()?
            .write_all(&bytes)
            .map_err(|e| Error::io("append to", &self.path, &e))?;
        self.extra_bytes += bytes.len() as u64;
        Ok(())
    }

    fn consume(&mut self, id: &str, at: OffsetDateTime) {
        let mut seen = self.seen.write().unwrap_or_else(|p| p.into_inner());
        if seen.insert(id.to_string(), at).is_none() {
            self.plain_bytes += plain(id, at).len() as u64;
        }
    }

    /// Records that `id` starts now and, with `flush`, flushes the ledger
    /// with whatever was appended before (the previous job's result): done
    /// before a job is spawned, so that even a power loss cannot forget
    /// that it started. Without `flush` the line is safe from a crash of
    /// the listener (the page cache keeps it), not from a power loss.
    pub fn start(&mut self, id: &str, at: OffsetDateTime, flush: bool) -> Result<()> {
        self.append(&Line {
            job_id: Some(id.to_string()),
            processed_at: Some(crate::clock::format(at)),
            run: true,
            ..Line::default()
        })?;
        if flush {
            self.flush()?;
        } else {
            self.unsynced = true;
        }
        self.consume(id, at);
        Ok(())
    }

    /// Notes the started job's process id, without flushing: the id matters
    /// after the listener dies while the machine lives on (the page cache
    /// keeps the write); after a power loss the job's processes are gone.
    pub fn note_pid(&mut self, id: &str, pid: i32) -> Result<()> {
        self.append(&Line {
            job_id: Some(id.to_string()),
            pid: Some(pid),
            ..Line::default()
        })
    }

    /// Appends `id`'s result (the exact bytes of its result file), which
    /// also consumes the id. Not flushed: call [`Ledger::sync`] (or
    /// [`Ledger::start`]) before the result is published.
    pub fn record(&mut self, id: &str, at: OffsetDateTime, result: &[u8]) -> Result<()> {
        self.append(&Line {
            job_id: Some(id.to_string()),
            processed_at: Some(crate::clock::format(at)),
            result: Some(String::from_utf8_lossy(result).into_owned()),
            ..Line::default()
        })?;
        self.unsynced = true;
        self.consume(id, at);
        Ok(())
    }

    /// Makes every recorded line that matters durable (a no-op when
    /// [`Ledger::start`] flushed them already).
    pub fn sync(&mut self) -> Result<()> {
        if self.unsynced {
            self.flush()?;
        }
        Ok(())
    }

    fn file(&mut self) -> Result<&mut File> {
        if self.file.is_none() {
            self.file = Some(fsops::open_append(&self.path)?);
        }
        Ok(self.file.as_mut().expect("just opened"))
    }

    fn flush(&mut self) -> Result<()> {
        self.file()?
            .sync_data()
            .map_err(|e| Error::io("flush", &self.path, &e))?;
        self.unsynced = false;
        Ok(())
    }

    /// True when the file should be rewritten at the next checkpoint even
    /// if nothing was published (it holds expired ids or damaged lines).
    pub fn wants_checkpoint(&self) -> bool {
        self.stale
    }

    /// Notes that every result recorded so far is durably published (the
    /// caller flushed the folders), and compacts the file when it holds
    /// expired ids or the lines compaction drops have grown past their
    /// bound. Not flushed: a lost checkpoint only makes start-up check a few
    /// results more.
    pub fn checkpoint(&mut self, at: OffsetDateTime) -> Result<()> {
        let grown = self.extra_bytes > COMPACT_AFTER && self.extra_bytes > self.plain_bytes;
        if self.stale || grown {
            return self.compact();
        }
        self.append(&Line {
            checkpoint: Some(crate::clock::format(at)),
            ..Line::default()
        })
    }

    /// Where the ledger lives.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn plain(id: &str, at: OffsetDateTime) -> Vec<u8> {
    let mut l = serde_json::to_vec(&Line {
        job_id: Some(id.to_string()),
        processed_at: Some(crate::clock::format(at)),
        ..Line::default()
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

    fn state() -> (tempfile::TempDir, StateDirs) {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDirs::new(dir.path(), &Machine::parse("PC", "t").unwrap());
        std::fs::create_dir_all(state.base()).unwrap();
        (dir, state)
    }

    const TEN_DAYS: Duration = Duration::from_secs(86400 * 10);

    #[test]
    fn ledger_keeps_recent_ids_and_drops_old_ones() {
        let (_dir, state) = state();
        let t0 = datetime!(2026-11-01 00:00 UTC);
        let (mut l, _) = Ledger::load(&state, t0, TEN_DAYS).unwrap();
        l.record("old", t0, b"r1").unwrap();
        l.record("new", t0 + time::Duration::days(9), b"r2")
            .unwrap();
        l.checkpoint(t0).unwrap();
        let path = l.path().to_path_buf();
        drop(l);
        // A torn line from a crash is skipped.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"{\"jobId\":\"x")
            .unwrap();
        let later = t0 + time::Duration::days(15);
        let (mut l, left) = Ledger::load(&state, later, TEN_DAYS).unwrap();
        assert!(!l.contains("old"));
        assert!(l.contains("new"));
        assert!(!l.contains("x"));
        assert!(left.started.is_empty() && left.recorded.is_empty());
        assert!(l.wants_checkpoint());
        l.checkpoint(later).unwrap();
        let text = std::fs::read_to_string(l.path()).unwrap();
        assert_eq!(text.lines().count(), 1, "compacted: {text}");
    }

    #[test]
    fn a_start_without_a_result_and_results_after_the_checkpoint_are_unfinished() {
        let (_dir, state) = state();
        let t0 = datetime!(2026-11-01 00:00 UTC);
        let (mut l, _) = Ledger::load(&state, t0, TEN_DAYS).unwrap();
        l.start("a", t0, true).unwrap();
        l.note_pid("a", 41).unwrap();
        l.record("a", t0, b"result a").unwrap();
        l.checkpoint(t0).unwrap();
        l.start("b", t0, true).unwrap();
        l.note_pid("b", 42).unwrap();
        l.record("b", t0, b"result b").unwrap();
        l.start("c", t0, true).unwrap();
        l.note_pid("c", 43).unwrap();
        drop(l);
        let (l, left) = Ledger::load(&state, t0, TEN_DAYS).unwrap();
        assert!(l.contains("a") && l.contains("b") && l.contains("c"));
        assert_eq!(
            left.recorded,
            vec![Recorded {
                job_id: "b".into(),
                result: b"result b".to_vec()
            }]
        );
        assert_eq!(
            left.started,
            vec![Started {
                job_id: "c".into(),
                started_at: crate::clock::format(t0),
                pid: 43
            }]
        );
        assert!(l.wants_checkpoint(), "recovery is followed by a rewrite");
    }

    #[test]
    fn compaction_keeps_one_plain_line_per_id_and_nothing_to_recover() {
        let (_dir, state) = state();
        let t0 = datetime!(2026-11-01 00:00 UTC);
        let (mut l, _) = Ledger::load(&state, t0, TEN_DAYS).unwrap();
        let big = vec![b'x'; 64 * 1024];
        for i in 0..100 {
            let id = format!("j{i}");
            l.start(&id, t0, true).unwrap();
            l.record(&id, t0, &big).unwrap();
        }
        let before = std::fs::metadata(l.path()).unwrap().len();
        assert!(before > COMPACT_AFTER, "{before}");
        l.checkpoint(t0).unwrap();
        let text = std::fs::read_to_string(l.path()).unwrap();
        assert_eq!(text.lines().count(), 100, "compacted");
        assert!(!text.contains("result"), "{}", &text[..200]);
        // Appends go on to the new file.
        l.start("after", t0, true).unwrap();
        drop(l);
        let (l, left) = Ledger::load(&state, t0, TEN_DAYS).unwrap();
        assert!(l.contains("j0") && l.contains("j99") && l.contains("after"));
        assert_eq!(left.started.len(), 1);
        assert!(left.recorded.is_empty());
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
