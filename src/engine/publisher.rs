//! The publisher: a thread that places finished jobs' result files and
//! archives their job files, off the listener's path from one job to the
//! next; it also writes and removes the `running/` files.
//!
//! By the time a job reaches it, its result is durable in the ledger, so
//! nothing here is on the way to the next spawn; it runs at a lower
//! priority than the jobs. It gathers work for up to [`GATHER`] and takes
//! it as one batch: writes the results' temp files, flushes them
//! with one call (`syncfs` on Linux; each file elsewhere), then renames
//! them into `results/` (docs/protocol.md §3: a reader never sees half a result) and
//! moves the job files to `archive/done/`. A burst of short jobs thus costs
//! one flush per batch instead of one per result, and no `running/` file
//! for a job that is over before the publisher gets to it.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::base::error::Result;
use crate::base::names::JobId;
use crate::places::rejected;
use crate::protocol::accept;
use crate::protocol::doc::outcome;
use crate::store::fsops;
use crate::store::layout::{Folders, TargetDirs};
use crate::trust::Key;

/// How long the publisher gathers work into one batch (unless the listener
/// waits for it): results appear this much later, and a drain of short jobs
/// costs one flush per batch rather than one per job.
pub const GATHER: Duration = Duration::from_millis(20);

/// ... and while results come faster than [`BUSY_BATCH`] in [`GATHER`] (a
/// drain of short jobs), up to this long: each batch's flush slows the
/// listener's own flush before the next spawn, so fewer of them take about
/// 20 µs off each job of such a drain (bench/README.md).
pub const GATHER_BUSY: Duration = Duration::from_millis(100);

/// How many results gathered within [`GATHER`] make a busy lane.
const BUSY_BATCH: usize = 10;

/// A finished job whose result is recorded in the ledger.
#[derive(Debug)]
pub struct Finished {
    /// The job (its file is `inbox/<id>.json`).
    pub id: JobId,
    /// Its result file's bytes as recorded: not yet signed (signed when
    /// placed, [`outcome::signed_record`]), or signed by an earlier version.
    pub result: Vec<u8>,
    /// A valid cancel marker is waiting to be moved to `archive/consumed/`.
    pub marker: bool,
}

/// What the publisher knows of its own changes to the inbox.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Archiving {
    /// It is moving job files out of the inbox now.
    Now,
    /// The inbox's mtime right after its last archiving (None before any).
    Done(Option<SystemTime>),
}

enum Work {
    /// A job started: its `running/<id>.json` file's bytes.
    Running(JobId, Vec<u8>),
    Publish(Finished),
    /// Answered once everything sent before it was tried: true when all
    /// of it is placed.
    Barrier(Sender<bool>),
}

/// What the listener and the publisher thread share.
#[derive(Default)]
struct Shared {
    /// Jobs handed over and not yet archived: a listing of the inbox must
    /// not take them for queued work.
    in_flight: HashSet<JobId>,
    /// The first failure, reported to the listener at its next call.
    failed: Option<crate::base::error::Error>,
    /// The inbox's mtime right after the publisher's last archiving, so
    /// that change is not taken for new work.
    inbox_mtime: Option<SystemTime>,
    /// A batch is being placed and archived: the inbox's mtime changes
    /// under the listener's eyes, and is known once the batch is done.
    archiving: bool,
    /// What the publisher says about results that were there already, and
    /// about folders it moved aside.
    notes: Vec<String>,
    /// Layout folders it moved aside (links or files where a folder
    /// belongs) since the listener last asked.
    repaired: u64,
    /// Work handed over and not yet taken by the thread.
    work: Vec<Work>,
    /// The listener's side is gone: finish what is queued, then end.
    closed: bool,
}

/// The listener's side of the publisher thread.
pub struct Publisher {
    shared: Arc<(Mutex<Shared>, Condvar)>,
    thread: std::thread::JoinHandle<()>,
}

impl Publisher {
    /// Starts the thread for `dirs`. With `ledger` (the relaxed level) it
    /// flushes that file before each batch: the listener did not.
    pub fn start(dirs: TargetDirs, key: Arc<Key>, ledger: Option<PathBuf>) -> Publisher {
        let shared = Arc::new((Mutex::new(Shared::default()), Condvar::new()));
        let theirs = Arc::clone(&shared);
        let thread = std::thread::spawn(move || serve(&dirs, &key, ledger.as_deref(), &theirs));
        Publisher { shared, thread }
    }

    fn shared(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `work`, waking the thread only when it waits for a first
    /// item or for a barrier: work that arrives while a batch gathers
    /// costs no wake-up (two per job on a busy lane otherwise).
    fn send(&self, work: Work) {
        let mut s = self.shared();
        let wake = s.work.is_empty() || matches!(work, Work::Barrier(_));
        s.work.push(work);
        drop(s);
        if wake {
            self.shared.1.notify_one();
        }
    }

    /// Hands over a finished job; a failure of an earlier one is returned
    /// instead (the listener then stops, and its next start redoes the work
    /// from the ledger).
    pub fn publish(&self, job: Finished) -> Result<()> {
        self.check()?;
        self.shared().in_flight.insert(job.id.clone());
        self.send(Work::Publish(job));
        Ok(())
    }

    /// Shows a started job in `running/` (informational: a failure to write
    /// it is not reported).
    pub fn show_running(&self, id: JobId, bytes: Vec<u8>) {
        self.send(Work::Running(id, bytes));
    }

    /// Waits until everything handed over was tried: true when it is all
    /// published and archived, false when some is kept to be tried again
    /// (a folder of the layout vanished or was swapped meanwhile).
    pub fn wait(&self) -> Result<bool> {
        let (done, wait) = mpsc::channel();
        self.send(Work::Barrier(done));
        // A thread that died (it never should) cannot answer: don't hang.
        let placed = loop {
            match wait.recv_timeout(Duration::from_millis(100)) {
                Ok(placed) => break placed,
                Err(mpsc::RecvTimeoutError::Timeout) if !self.thread.is_finished() => {}
                Err(_) => break false,
            }
        };
        self.check()?;
        Ok(placed)
    }

    fn check(&self) -> Result<()> {
        match self.shared().failed.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// True while `id` is handed over and not yet archived.
    pub fn in_flight(&self, id: &JobId) -> bool {
        self.shared().in_flight.contains(id)
    }

    /// The inbox's mtime right after the last archiving (None before
    /// any), or [`Archiving::Now`] while a batch is being archived.
    pub fn inbox_mtime(&self) -> Archiving {
        let s = self.shared();
        if s.archiving {
            Archiving::Now
        } else {
            Archiving::Done(s.inbox_mtime)
        }
    }

    /// Notes the publisher made since the last call (for the listener's log).
    pub fn notes(&self) -> Vec<String> {
        std::mem::take(&mut self.shared().notes)
    }

    /// How many layout folders the publisher moved aside since the last call.
    pub fn repaired(&self) -> u64 {
        std::mem::take(&mut self.shared().repaired)
    }
}

impl Drop for Publisher {
    /// Lets the thread finish what it holds and end.
    fn drop(&mut self) {
        self.shared().closed = true;
        self.shared.1.notify_one();
    }
}

/// Waits for work, then gathers for up to [`GATHER`], or [`GATHER_BUSY`]
/// on a busy lane (less when a barrier comes); None once the listener is
/// gone and nothing is left.
fn gather(shared: &(Mutex<Shared>, Condvar)) -> Option<Vec<Work>> {
    let (lock, cv) = shared;
    let mut s = lock.lock().unwrap_or_else(|p| p.into_inner());
    while s.work.is_empty() {
        if s.closed {
            return None;
        }
        s = cv.wait(s).unwrap_or_else(|p| p.into_inner());
    }
    let first = Instant::now();
    let mut until = first + GATHER;
    while !s.closed && !s.work.iter().any(|w| matches!(w, Work::Barrier(_))) {
        let now = Instant::now();
        if now >= until {
            let results = s.work.iter().filter(|w| matches!(w, Work::Publish(_)));
            if until - first >= GATHER_BUSY || results.count() < BUSY_BATCH {
                break;
            }
            until = first + GATHER_BUSY;
            continue;
        }
        s = cv
            .wait_timeout(s, until - now)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
    Some(std::mem::take(&mut s.work))
}

/// How often one batch is tried, its folders opened afresh each time,
/// before it is kept for the next batch.
const ATTEMPTS: usize = 2;

fn serve(
    dirs: &TargetDirs,
    key: &Key,
    ledger: Option<&std::path::Path>,
    shared: &(Mutex<Shared>, Condvar),
) {
    crate::platform::lower_thread_priority();
    let lock = || shared.0.lock().unwrap_or_else(|p| p.into_inner());
    // Jobs whose results could not be placed yet (a folder of the layout
    // vanished or was swapped meanwhile): tried again with the next batch
    // or wait, never dropped; until then a wait answers "not all placed".
    let mut carried: Vec<Finished> = Vec::new();
    while let Some(gathered) = gather(shared) {
        let mut batch = std::mem::take(&mut carried);
        let mut shows = Vec::new();
        let mut barriers = Vec::new();
        for work in gathered {
            match work {
                Work::Running(id, bytes) => shows.push((id, bytes)),
                Work::Publish(f) => batch.push(f),
                Work::Barrier(b) => barriers.push(b),
            }
        }
        let over: HashSet<&JobId> = batch.iter().map(|f| &f.id).collect();
        // After a failure of the local ledger nothing more is placed: the
        // listener stops, and its next start publishes from the ledger.
        if (!batch.is_empty() || !shows.is_empty()) && lock().failed.is_none() {
            if let Err(e) = flush_ledger(ledger) {
                lock().failed = Some(e);
            } else {
                lock().archiving = !batch.is_empty();
                let mut outcome = Err(None);
                // The folders are opened for each batch (a swap since the
                // last one is noticed), and again when the batch fails: a
                // folder swapped for a link meanwhile is moved aside and
                // made again.
                for _ in 0..ATTEMPTS {
                    outcome = match rejected::open_repairing(dirs) {
                        Ok((folders, notes)) => {
                            {
                                let mut s = lock();
                                s.repaired += notes.len() as u64;
                                s.notes.extend(notes);
                            }
                            for (id, bytes) in shows.iter().filter(|(id, _)| !over.contains(id)) {
                                let _ = folders.running().replace(
                                    &id.file_name(),
                                    bytes,
                                    fsops::Flush::Nothing,
                                );
                            }
                            shows.clear();
                            publish_batch(&folders, key, dirs.target().as_str(), None, &batch)
                                .map(|notes| (notes, folders.inbox().modified()))
                                .map_err(Some)
                        }
                        Err(e) => Err(Some(e)),
                    };
                    if outcome.is_ok() {
                        break;
                    }
                }
                match outcome {
                    Ok((notes, mtime)) => {
                        let mut s = lock();
                        s.notes.extend(notes);
                        s.inbox_mtime = mtime;
                        s.archiving = false;
                        for f in &batch {
                            s.in_flight.remove(&f.id);
                        }
                    }
                    Err(e) => {
                        // A root that went away is said once, by the
                        // listener that waits for it (docs/protocol.md §3.6).
                        let gone = e
                            .as_ref()
                            .is_some_and(|e| e.code == crate::base::error::Code::Config);
                        let why = e.map_or_else(String::new, |e| format!(": {e}"));
                        let mut s = lock();
                        // Unknown changes to the inbox: the listener lists it.
                        s.archiving = false;
                        if !gone {
                            s.notes.push(format!(
                                "could not place {} result(s) yet{why}; trying again",
                                batch.len()
                            ));
                        }
                        carried = batch;
                    }
                }
            }
        }
        for b in barriers {
            let _ = b.send(carried.is_empty());
        }
    }
}

/// Flushes the ledger at `ledger`, if given (the relaxed level).
fn flush_ledger(ledger: Option<&std::path::Path>) -> Result<()> {
    if let Some(ledger) = ledger {
        std::fs::OpenOptions::new()
            .append(true)
            .open(ledger)
            .and_then(|f| f.sync_data())
            .map_err(|e| crate::base::error::Error::io("flush", ledger, &e))?;
    }
    Ok(())
}

/// Flushes `ledger` if given (the relaxed level: the start lines and
/// results in it), places the results of `batch` (flushed before they get
/// their names; a result file there that does not verify with `key` for
/// `target` is moved aside first), archives the job files and consumes
/// their markers; returns notes for the log. Safe to repeat.
pub fn publish_batch(
    folders: &Folders,
    key: &Key,
    target: &str,
    ledger: Option<&std::path::Path>,
    batch: &[Finished],
) -> Result<Vec<String>> {
    flush_ledger(ledger)?;
    if batch.is_empty() {
        return Ok(Vec::new());
    }
    let results = folders.results();
    let mut notes = Vec::new();
    // Signed here, on this thread: the listener records them unsigned.
    let signed: Vec<Vec<u8>> = batch
        .iter()
        .map(|f| outcome::signed_record(&f.result, key))
        .collect();
    let files: Vec<(String, &[u8])> = batch
        .iter()
        .zip(&signed)
        .map(|(f, bytes)| (f.id.file_name(), bytes.as_slice()))
        .collect();
    // Flushed before they get their names; the folder entries wait for the
    // checkpoint. A name taken by a result that does not verify is cleared
    // and tried again.
    let placed = results.publish_all_with(&files, fsops::Flush::Data, |i| {
        set_aside_forged(folders, key, target, &batch[i].id, &mut notes)
    })?;
    for (placed, f) in placed.into_iter().zip(batch) {
        if !placed? {
            notes.push(format!("a result for {} already exists; keeping it", f.id));
        }
    }
    for f in batch {
        archive(folders, &f.id)?;
        if f.marker {
            consume_marker(folders, &f.id)?;
        }
        let _ = folders.running().remove(&f.id.file_name());
    }
    Ok(notes)
}

/// Moves a result file for `id` that does not verify to `archive/rejected/`
/// (a folder writer's forgery must not take the place of the genuine
/// result); true when it did. A result that verifies is kept.
fn set_aside_forged(
    folders: &Folders,
    key: &Key,
    target: &str,
    id: &JobId,
    notes: &mut Vec<String>,
) -> Result<bool> {
    let (results, name) = (folders.results(), id.file_name());
    let r = match crate::protocol::judge::result(results, id, target, key) {
        Ok(_) => return Ok(false),
        Err(r) if r.verdict == accept::Verdict::Missing => return Ok(true),
        Err(r) => r,
    };
    let reason = rejected::Reason::new(&r, rejected::Kind::Result, target).judged_with(key);
    rejected::file(folders.rejected(), results, &name, &reason)?;
    notes.push(format!(
        "moved aside a result for {id} that does not verify ({}: {})",
        r.verdict.as_str(),
        r.message
    ));
    Ok(true)
}

/// Moves a finished job's (valid) marker to `archive/consumed/`. Safe to
/// repeat.
pub fn consume_marker(folders: &Folders, id: &JobId) -> Result<()> {
    let (cancel, name) = (folders.cancel(), id.file_name());
    if cancel.exists(&name)
        && !cancel.move_no_replace(
            &name,
            folders.consumed(),
            &crate::store::layout::consumed_name(id),
        )?
    {
        cancel.remove(&name)?;
    }
    Ok(())
}

/// Moves a finished job's file to `archive/done/`. Safe to repeat.
pub fn archive(folders: &Folders, id: &JobId) -> Result<()> {
    let (inbox, name) = (folders.inbox(), id.file_name());
    if inbox.exists(&name) && !inbox.move_no_replace(&name, folders.done(), &name)? {
        // An earlier copy is archived already (a resurrected file): this
        // one is a duplicate of processed work.
        inbox.remove(&name)?;
    }
    // Flushed at the next checkpoint; if a power loss undoes this move
    // first, the ledger still refuses the job.
    Ok(())
}
