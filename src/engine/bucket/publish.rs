//! A job's result and the moves after it, in a thread of their own: the
//! result placed, then the job's inbox copy removed (its claim placed it
//! in `archive/done/` before it started), a valid marker to
//! `archive/consumed/`, what `running/` shows of it removed. The next job
//! is claimed while the result is placed, and spawned only once it is
//! ([`Publisher::placed`]): a crash then leaves a result, and the next
//! start only redoes these moves. The moves go on while the next job runs,
//! as the folder lane's publisher does (docs/object-store.md, "The
//! listener's order of writes").
//!
//! A result the store does not take (it does not answer, past the
//! client's retries) is kept on this machine first, then tried again,
//! and the listener waits for it, spawning nothing: a store that comes
//! back gets it, a listener stopped meanwhile places it at its next
//! start ([`place_kept`]). A job that ran never loses its outcome to an
//! outage.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::objects::{self, Replaced};
use crate::base::error::{Error, Result};
use crate::base::names::JobId;
use crate::engine::shutdown::Shutdown;
use crate::protocol::accept;
use crate::protocol::doc::{self, Outcome, Termination, marker, outcome};
use crate::store::fsops::{Dir, Flush};
use crate::store::layout::Place;
use crate::store::port::Shelves;
use crate::store::port::bucket::BucketTarget;
use crate::trust::Key;

/// The folder of the bucket's state directory where a result the store
/// did not take waits, as `<id>.json`.
pub const KEPT: &str = "unplaced-results";

/// The first pause before a result the store did not take is tried
/// again, and the longest (doubling in between).
const AGAIN: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(30));

/// One finished job's result and moves.
pub struct Moves {
    /// The job.
    pub id: JobId,
    /// Its result's file bytes, placed create-only first (one already
    /// there, placed before a crash, is kept as it is); none: placed
    /// already.
    pub result: Option<Vec<u8>>,
    /// The version of its job object the listing saw, if any.
    pub listed: Option<String>,
    /// Its claim placed it in `archive/done/`: only the inbox copy goes.
    /// Otherwise (a recovery) it is copied there by the store first.
    pub archived: bool,
    /// A marker may be there to consume (the job was cancelled, or ended
    /// by a recovery).
    pub marker: bool,
    /// What `running/` shows of it, as this listener wrote it (nothing
    /// when it never did); none: the one there, if any.
    pub claim: Option<Replaced>,
}

/// What the thread tells the listener.
#[derive(Default)]
struct State {
    /// Moves handed over and not yet done.
    pending: usize,
    /// Results handed over and not yet placed.
    unplaced: usize,
    /// Jobs whose moves are done, and when.
    done: Vec<(JobId, Instant)>,
    /// The first failure, reported at the next [`Publisher::settle`].
    failed: Option<Error>,
}

/// The thread and its queue.
pub struct Publisher {
    tx: Option<Sender<Moves>>,
    thread: Option<JoinHandle<()>>,
    state: Arc<(Mutex<State>, Condvar)>,
}

/// Where the thread keeps what the store did not take, and for how long
/// it tries again.
pub struct Keeping {
    /// The folder ([`KEPT`]).
    pub dir: Dir,
    /// Until it is placed (a listener that serves); else the first
    /// failure is reported, the result kept for the next start (`--once`).
    pub persist: bool,
    /// A stop asked for ends the trying.
    pub shutdown: Arc<Shutdown>,
}

impl Publisher {
    /// Starts the thread, moving on `t` (a target sharing the listener's
    /// client), judging markers with `key`, keeping as `keeping` says.
    pub fn start(t: BucketTarget, key: Arc<Key>, keeping: Keeping) -> Publisher {
        let (tx, rx) = mpsc::channel();
        let state: Arc<(Mutex<State>, Condvar)> = Arc::default();
        let shared = Arc::clone(&state);
        let thread = std::thread::Builder::new()
            .name("bucket-publisher".into())
            .spawn(move || work(&t, &key, &keeping, &rx, &shared))
            .ok();
        Publisher {
            tx: thread.is_some().then_some(tx),
            thread,
            state,
        }
    }

    /// Hands `m` over; without a thread (none could be started) the moves
    /// are made here.
    pub fn send(&self, t: &BucketTarget, key: &Key, m: Moves) -> Result<()> {
        let Some(tx) = &self.tx else {
            return moves(t, key, m);
        };
        {
            let mut s = self.state.0.lock().unwrap_or_else(|p| p.into_inner());
            s.pending += 1;
            s.unplaced += usize::from(m.result.is_some());
        }
        tx.send(m).map_err(|_| {
            Error::new(
                crate::base::error::Code::Internal,
                "the bucket publisher stopped".to_string(),
            )
        })
    }

    /// The jobs whose moves were done before `before`, taken from the
    /// list; and the first failure since the last call, as an error.
    pub fn settle(&self, before: Instant) -> Result<Vec<JobId>> {
        let mut s = self.state.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = s.failed.take() {
            return Err(e);
        }
        let (old, new): (Vec<_>, Vec<_>) = s.done.drain(..).partition(|(_, at)| *at < before);
        s.done = new;
        Ok(old.into_iter().map(|(id, _)| id).collect())
    }

    /// Waits until every result handed over is placed; the first failure
    /// (of a result or of a move).
    pub fn placed(&self) -> Result<()> {
        self.until(|s| s.unplaced == 0)
    }

    /// Waits until every move handed over is done; the first failure.
    pub fn wait(&self) -> Result<()> {
        self.until(|s| s.pending == 0)
    }

    /// Waits until `done` holds of the thread's state; the first failure.
    /// (The thread stops trying to place a result once a stop is asked
    /// for, so this wait ends then too.)
    fn until(&self, done: impl Fn(&State) -> bool) -> Result<()> {
        let (lock, cv) = &*self.state;
        let mut s = lock.lock().unwrap_or_else(|p| p.into_inner());
        while !done(&s) {
            s = cv.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        s.failed.take().map_or(Ok(()), Err)
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn work(
    t: &BucketTarget,
    key: &Key,
    keeping: &Keeping,
    rx: &Receiver<Moves>,
    state: &(Mutex<State>, Condvar),
) {
    for mut m in rx {
        let id = m.id.clone();
        if let Some(bytes) = m.result.take() {
            let placed = place_or_keep(t, keeping, &m.id, &bytes);
            let mut s = state.0.lock().unwrap_or_else(|p| p.into_inner());
            s.unplaced -= 1;
            // A failure is there before a waiter for the result wakes: no
            // job is spawned after a result that was not placed.
            if let Err(e) = placed {
                s.failed.get_or_insert(e);
                s.pending -= 1;
                state.1.notify_all();
                continue;
            }
            state.1.notify_all();
        }
        let r = moves(t, key, m);
        let mut s = state.0.lock().unwrap_or_else(|p| p.into_inner());
        s.pending -= 1;
        match r {
            Ok(()) => s.done.push((id, Instant::now())),
            Err(e) => {
                s.failed.get_or_insert(e);
            }
        }
        state.1.notify_all();
    }
}

/// Places `bytes`, the result of `id`, create-only: one already there (a
/// result placed before a crash) is kept as it is.
fn place(t: &BucketTarget, id: &JobId, bytes: &[u8]) -> Result<()> {
    t.shelf(Place::Results)
        .publish(&id.file_name(), bytes)
        .map(|_| ())
}

/// [`place`], and when the store does not take it: kept in
/// `keeping.dir` (when the disk allows), said, tried again (pausing as
/// [`AGAIN`] says) until it is placed, a stop is asked for, or (not
/// `persist`) at once: the store's error then, saying where it is kept.
fn place_or_keep(t: &BucketTarget, keeping: &Keeping, id: &JobId, bytes: &[u8]) -> Result<()> {
    let Err(first) = place(t, id, bytes) else {
        return Ok(());
    };
    let name = id.file_name();
    // Kept on this machine first; a disk that refuses it too does not
    // stop the trying, only what a stop meanwhile can save.
    let kept = keeping
        .dir
        .replace(&name, bytes, Flush::DataAndName)
        .map(|()| keeping.dir.shown(&name));
    // `--once` says it in its error, below.
    if keeping.persist {
        let how = match &kept {
            Ok(path) => format!("kept in {} until it does", path.display()),
            Err(e) => format!("nor could it be kept on this machine ({})", e.message),
        };
        crate::note!(
            "fleet-dispatch: the store did not take the result of {id}: {}; {how}, no job starts meanwhile",
            first.message
        );
    }
    let (mut pause, mut tries, mut last) = (AGAIN.0, 1, first);
    // Not `persist`, or a stop asked for: the error, the result kept.
    while keeping.persist && !keeping.shutdown.requested() {
        let until = Instant::now() + pause;
        while Instant::now() < until && !keeping.shutdown.requested() {
            std::thread::sleep(Duration::from_millis(100));
        }
        if keeping.shutdown.requested() {
            break;
        }
        tries += 1;
        match place(t, id, bytes) {
            Ok(()) => {
                let _ = keeping.dir.remove(&name);
                crate::note!("fleet-dispatch: placed the result of {id} (try {tries})");
                return Ok(());
            }
            Err(e) => last = e,
        }
        pause = (pause * 2).min(AGAIN.1);
    }
    let what = match kept {
        Ok(path) => format!(
            "it is kept in {} and placed at the next start",
            path.display()
        ),
        Err(e) => format!(
            "nor could it be kept ({}): the next start ends the job interrupted",
            e.message
        ),
    };
    Err(Error::new(
        last.code,
        format!(
            "the result of {id} is not placed ({}); {what}",
            last.message
        ),
    ))
}

/// Places the results an earlier run kept in `kept` ([`place_or_keep`]),
/// before this run looks at anything: each create-only (one already there
/// is kept), then forgotten. What follows a result (the inbox copy's
/// removal, `running/`) is then what a stop right after it leaves, and is
/// brought to its end as such. Returns how many it placed.
///
/// # Errors
///
/// The store's error for the first one it does not take: it stays kept.
pub fn place_kept(t: &BucketTarget, kept: &Dir) -> Result<usize> {
    let mut placed = 0;
    for name in kept.list()? {
        let Some(id) = name
            .strip_suffix(".json")
            .and_then(|s| JobId::parse(s).ok())
        else {
            continue;
        };
        let crate::base::read::FileRead::Bytes(bytes) =
            kept.read_limited(&name, outcome::MAX_BYTES)
        else {
            continue;
        };
        place(t, &id, &bytes)?;
        kept.remove(&name)?;
        placed += 1;
    }
    Ok(placed)
}

/// `m`'s result, if it carries one, then the moves after it.
pub fn moves(t: &BucketTarget, key: &Key, mut m: Moves) -> Result<()> {
    if let Some(bytes) = m.result.take() {
        place(t, &m.id, &bytes)?;
    }
    let name = m.id.file_name();
    let inbox = (Place::Inbox, name.as_str(), m.listed.as_deref());
    match m.archived {
        true => objects::remove_listed(t, inbox)?,
        false => objects::archive(t, inbox, None, (Place::Done, &name))?,
    }
    if !m.marker {
        return remove_claim(t, m.claim, &name);
    }
    let read = t.shelf(Place::Cancel).read(&name, marker::MAX_BYTES);
    if accept::marker(&name, read, t.target().as_str(), key).is_ok() {
        objects::archive(
            t,
            (Place::Cancel, &name, None),
            None,
            (Place::Consumed, &format!("{}.cancel.json", m.id)),
        )?;
    }
    remove_claim(t, m.claim, &name)
}

/// Removes what `running/` shows of `name`: `claim` as this listener
/// wrote it (if it did), else the one there.
fn remove_claim(t: &BucketTarget, claim: Option<Replaced>, name: &str) -> Result<()> {
    match claim {
        Some(c) if !c.written() => Ok(()),
        Some(c) => c.remove(t),
        None => t.shelf(Place::Running).remove(name),
    }
}

/// The listener's side: what it hands the thread, and its wait.
impl super::BucketListener {
    /// Hands `o`, the result of `id`, and the moves after it to the
    /// publisher, which places the result first; the next job is claimed
    /// meanwhile, and spawned only once it is placed ([`Self::results_placed`]).
    pub(super) fn finish(
        &mut self,
        id: &JobId,
        o: &Outcome,
        claim: Option<Replaced>,
    ) -> Result<()> {
        self.finished.insert(id.clone());
        // A marker is looked for only where one may have ended the job (or
        // a recovery ends it), as on a folder: one placed in a job's last
        // moment, after its last look, stays for `sweep`.
        let marked = matches!(
            o.termination(),
            Termination::Cancelled | Termination::CancelledBeforeStart | Termination::Interrupted
        );
        let mut moves = self.moves(id, claim, marked);
        moves.result = Some(doc::to_file_bytes(o));
        self.publisher.send(&self.t, &self.key, moves)
    }

    /// Waits until every result handed over is placed: before a spawn, so
    /// a job ended before it has its result first (a crash then never
    /// takes the outcome of a job that ended), and before a job's
    /// dependencies are looked up (one may have just ended here); the
    /// first failure of the publisher, as an error.
    pub(super) fn results_placed(&mut self) -> Result<()> {
        self.publisher.placed()
    }

    /// The moves after a result, here and now (a result found, not
    /// made: its job is not in the publisher's hands).
    pub(super) fn archive(&mut self, id: &JobId) -> Result<()> {
        let claim = self.claimed.take();
        let m = self.moves(id, claim, true);
        moves(&self.t, &self.key, m)
    }

    /// The moves after `id`'s result, the job taken off the queue. A
    /// `claim` held means the job's claim is its copy in `archive/done/`
    /// (none: a recovery of what `running/` showed, which copies it there
    /// first if need be).
    fn moves(&mut self, id: &JobId, claim: Option<Replaced>, marker: bool) -> Moves {
        let listed = self.accepted.remove(&id.file_name());
        self.queue.retain(|j| j.id != *id);
        Moves {
            id: id.clone(),
            result: None,
            archived: claim.is_some(),
            listed: listed.and_then(|l| l.etag),
            claim,
            marker,
        }
    }
}
