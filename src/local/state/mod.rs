//! Local state that must never sync (docs/protocol.md §3.4): the one-listener lock, and
//! the ledger of processed job ids, which is also the journal of the job in
//! progress.
//!
//! The lock is an OS file lock, released by the kernel when the process dies,
//! so a crash never leaves the target stuck. The ledger is one file of
//! lines, each written after the last: a job's line is flushed before it is
//! spawned, so a start-up that finds a started job without a result knows
//! the last listener died mid-job. Its line format, the older one it still
//! reads, and what the lines add up to at start-up are in the `line`
//! submodule; which root a writer is in, by the identity this machine
//! remembers for it, in `root`.

use std::collections::HashMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use time::OffsetDateTime;

use crate::base::error::{Code, Error, Result};
use crate::store::fsops;
use crate::store::layout::StateDirs;

mod line;
mod root;

use line::{Line, replay};
pub use root::identify_root;

/// The held listener lock in the state directory; dropping it releases
/// the lock. (The lock in the target folder, a place in the root, is
/// taken by the listener's liveness check.)
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

/// This listener's instance id: random, made on its first start and kept
/// in the state directory, so a heartbeat tells this listener from another
/// serving the same target (a cloned disk, a copied config, one host name
/// on two machines).
pub fn instance_id(state: &StateDirs) -> Result<String> {
    let path = state.instance();
    if let Ok(text) = std::fs::read_to_string(&path) {
        let id = text.trim();
        if id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(id.to_string());
        }
    }
    let mut raw = [0u8; 8];
    crate::base::random::fill(&mut raw);
    let id = hex::encode(raw);
    fsops::replace(
        &path,
        format!("{id}\n").as_bytes(),
        fsops::Flush::DataAndName,
    )?;
    Ok(id)
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

/// The ledger of processed job ids (docs/protocol.md §3.4, §7.8), which is also the journal
/// of the job in progress: one file of lines in the state directory.
///
/// A job is consumed by one flushed line written before it is spawned;
/// its result is appended when it ends and flushed together with the next
/// job's start line, so a busy listener pays one flush per job. Results
/// are published to `results/` from there; a checkpoint line notes when the
/// folders were flushed, and start-up publishes again any result recorded
/// after the last one that did not reach `results/`.
///
/// Lines are written over zeroed space the file already has (see
/// `GROW_BY`), so the file may end in zero bytes: readers take them for
/// line ends, and a clean stop cuts them off.
#[derive(Debug)]
pub struct Ledger {
    path: PathBuf,
    /// Open for writing at `end`; closed while compaction replaces the
    /// file (Windows refuses to replace an open file).
    file: Option<File>,
    /// Where the next line goes: the end of the last whole line.
    end: u64,
    /// The file's length: zeroes from `end` on.
    room: u64,
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
    /// Jobs started and not yet recorded, with their pids (0 until
    /// noted): compaction keeps their start and pid lines, so a
    /// checkpoint while jobs run in slots loses nothing crash recovery
    /// needs.
    running: HashMap<String, i32>,
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

/// The ledger grows by this much zeroed space at a time, ahead of the lines
/// written into it: flushing a line written over bytes the file already
/// has writes that block alone, while flushing an appended line also
/// writes the file's new length (on this project's ext4, 160 µs against
/// 230 µs a flush; bench/README.md). 64 KiB is about 80 jobs.
const GROW_BY: u64 = 64 << 10;

/// Where the ledger's lines end in `text`: after its last whole line. What
/// follows (zeroed space, a line torn by a crash) was never flushed.
fn lines_end(text: &[u8]) -> usize {
    text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)
}

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
        let replay = replay(&text, now, retention);
        // Lines are written from the last whole one on: a torn line left by
        // a crash must not swallow the next (its start would be unreadable).
        let end = lines_end(&text) as u64;
        let file = Some(open_at(&path, end)?);
        let mut ledger = Ledger {
            path,
            file,
            end,
            room: end,
            seen: Arc::new(RwLock::new(replay.seen)),
            extra_bytes: replay.extra_bytes,
            plain_bytes: 0,
            // After a crash, rewrite the file once recovery is done, so
            // what it settled is not met again.
            stale: replay.stale
                || !replay.left.started.is_empty()
                || !replay.left.recorded.is_empty(),
            unsynced: false,
            running: HashMap::new(),
        };
        ledger.plain_bytes = ledger.plain_size();
        Ok((ledger, replay.left))
    }

    fn plain_size(&self) -> u64 {
        let seen = self.seen.read().unwrap_or_else(|p| p.into_inner());
        seen.iter().map(|(id, at)| plain_len(id, *at)).sum()
    }

    /// Rewrites the file with one plain record per id, and the start and
    /// pid lines of the jobs still running (durably, by an atomic
    /// replace). Only when no result is left to recover: call it after a
    /// checkpoint.
    fn compact(&mut self) -> Result<()> {
        let mut out = Vec::new();
        {
            let seen = self.seen.read().unwrap_or_else(|p| p.into_inner());
            let mut rows: Vec<_> = seen.iter().collect();
            rows.sort_by_key(|(id, at)| (**at, id.as_str()));
            for (id, at) in rows {
                match self.running.get(id.as_str()) {
                    None => out.extend(plain(id, *at)),
                    Some(&pid) => {
                        let job_id = id.to_string();
                        out.extend(line::encode(&Line::Start {
                            job_id: job_id.clone(),
                            processed_at: crate::base::clock::format(*at),
                        }));
                        if pid != 0 {
                            out.extend(line::encode(&Line::Pid { job_id, pid }));
                        }
                    }
                }
            }
        }
        self.file = None;
        fsops::replace(&self.path, &out, fsops::Flush::DataAndName)?;
        self.end = out.len() as u64;
        self.room = self.end;
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
        let bytes = line::encode(line);
        let end = self.end + bytes.len() as u64;
        if end > self.room {
            self.grow(end)?;
        }
        let written = self.file()?.write_all(&bytes);
        if let Err(e) = written {
            // A line written in part (a full disk) is written over by the
            // next: `end` must stay where the file is positioned.
            self.rewind();
            return Err(Error::io("append to", &self.path, &e));
        }
        self.end = end;
        self.extra_bytes += bytes.len() as u64;
        Ok(())
    }

    /// Adds zeroed space past `need` (written, not flushed: the next flush
    /// takes it with the line), leaving the file positioned at `end`.
    fn grow(&mut self, need: u64) -> Result<()> {
        self.file()?; // (re)opened, so `room` is known
        let (from, end) = (self.room, self.end);
        let to = need + GROW_BY;
        let zeros = vec![0u8; (to - from) as usize];
        let file = self.file()?;
        let grown = file
            .seek(std::io::SeekFrom::Start(from))
            .and_then(|_| file.write_all(&zeros))
            .and_then(|()| file.seek(std::io::SeekFrom::Start(end)));
        if let Err(e) = grown {
            self.rewind();
            return Err(Error::io("grow", &self.path, &e));
        }
        self.room = to;
        Ok(())
    }

    /// After a failed write: positions the file at `end` again, or closes it
    /// so that the next write opens it there.
    fn rewind(&mut self) {
        let end = self.end;
        if let Some(f) = &mut self.file
            && f.seek(std::io::SeekFrom::Start(end)).is_err()
        {
            self.file = None;
        }
    }

    fn consume(&mut self, id: &str, at: OffsetDateTime) {
        let mut seen = self.seen.write().unwrap_or_else(|p| p.into_inner());
        if seen.insert(id.to_string(), at).is_none() {
            self.plain_bytes += plain_len(id, at);
        }
    }

    /// Records that `id` starts now and, with `flush`, flushes the ledger
    /// with whatever was appended before (the previous job's result): done
    /// before a job is spawned, so that even a power loss cannot forget
    /// that it started. Without `flush` the line is safe from a crash of
    /// the listener (the page cache keeps it), not from a power loss.
    pub fn start(&mut self, id: &str, at: OffsetDateTime, flush: bool) -> Result<()> {
        self.append(&Line::Start {
            job_id: id.to_string(),
            processed_at: crate::base::clock::format(at),
        })?;
        if flush {
            self.flush()?;
        } else {
            self.unsynced = true;
        }
        self.consume(id, at);
        self.running.insert(id.to_string(), 0);
        Ok(())
    }

    /// Notes the started job's process id, without flushing: the id matters
    /// after the listener dies while the machine lives on (the page cache
    /// keeps the write); after a power loss the job's processes are gone.
    pub fn note_pid(&mut self, id: &str, pid: i32) -> Result<()> {
        self.append(&Line::Pid {
            job_id: id.to_string(),
            pid,
        })?;
        if let Some(noted) = self.running.get_mut(id) {
            *noted = pid;
        }
        Ok(())
    }

    /// Appends `id`'s result (the exact bytes of its result file), which
    /// also consumes the id. Not flushed: call [`Ledger::sync`] (or
    /// [`Ledger::start`]) before the result is published.
    pub fn record(&mut self, id: &str, at: OffsetDateTime, result: &[u8]) -> Result<()> {
        self.append(&Line::Result {
            job_id: id.to_string(),
            processed_at: crate::base::clock::format(at),
            result: String::from_utf8_lossy(result).into_owned(),
        })?;
        self.unsynced = true;
        self.consume(id, at);
        self.running.remove(id);
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
            self.file = Some(open_at(&self.path, self.end)?);
            self.room = self.end;
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
    /// bound. Jobs may be running meanwhile: their start lines are kept.
    /// Not flushed: a lost checkpoint only makes start-up check a few
    /// results more.
    pub fn checkpoint(&mut self, at: OffsetDateTime) -> Result<()> {
        let grown = self.extra_bytes > COMPACT_AFTER && self.extra_bytes > self.plain_bytes;
        if self.stale || grown {
            return self.compact();
        }
        self.append(&Line::Checkpoint {
            checkpoint: crate::base::clock::format(at),
        })
    }

    /// Where the ledger lives.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Ledger {
    /// A clean stop leaves the file ending with its last line.
    fn drop(&mut self) {
        if self.room > self.end
            && let Some(f) = &self.file
        {
            let _ = f.set_len(self.end);
        }
    }
}

/// Opens the ledger for writing at `end`, cutting off what lies past it (a
/// torn line, zeroed space).
fn open_at(path: &Path, end: u64) -> Result<File> {
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| Error::io("open", path, &e))?;
    file.set_len(end)
        .and_then(|()| file.seek(std::io::SeekFrom::Start(end)))
        .map_err(|e| Error::io("open", path, &e))?;
    Ok(file)
}

fn plain(id: &str, at: OffsetDateTime) -> Vec<u8> {
    line::encode(&Line::Record {
        job_id: id.to_string(),
        processed_at: crate::base::clock::format(at),
    })
}

/// `plain(id, at).len()`, without making the line at every start: ids
/// (their characters need no escape) and timestamps (of one width) only
/// lengthen it by their own length.
fn plain_len(id: &str, at: OffsetDateTime) -> u64 {
    static AROUND: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let around = *AROUND.get_or_init(|| plain("", OffsetDateTime::UNIX_EPOCH).len() as u64);
    if crate::base::names::is_job_id(id) && (1..=9998).contains(&at.year()) {
        around + id.len() as u64
    } else {
        plain(id, at).len() as u64
    }
}

#[cfg(test)]
mod tests;
