//! A job's result and the moves after it, in a thread of their own: the
//! result placed, then the job's inbox copy removed (its claim placed it
//! in `archive/done/` before it started), a valid marker to
//! `archive/consumed/`, what `running/` shows of it removed. The next job
//! is claimed while the result is placed, and spawned only once it is
//! ([`Publisher::placed`]): a crash then leaves a result, and the next
//! start only redoes these moves. The moves go on while the next job runs,
//! as the folder lane's publisher does (docs/object-store.md, "The
//! listener's order of writes").

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use super::objects::{self, Replaced};
use crate::base::error::{Error, Result};
use crate::base::names::JobId;
use crate::protocol::accept;
use crate::protocol::doc::marker;
use crate::store::layout::Place;
use crate::store::port::Shelves;
use crate::store::port::bucket::BucketTarget;
use crate::trust::Key;

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

impl Publisher {
    /// Starts the thread, moving on `t` (a target sharing the listener's
    /// client), judging markers with `key`.
    pub fn start(t: BucketTarget, key: Arc<Key>) -> Publisher {
        let (tx, rx) = mpsc::channel();
        let state: Arc<(Mutex<State>, Condvar)> = Arc::default();
        let shared = Arc::clone(&state);
        let thread = std::thread::Builder::new()
            .name("bucket-publisher".into())
            .spawn(move || work(&t, &key, &rx, &shared))
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

fn work(t: &BucketTarget, key: &Key, rx: &Receiver<Moves>, state: &(Mutex<State>, Condvar)) {
    for mut m in rx {
        let id = m.id.clone();
        if let Some(bytes) = m.result.take() {
            let placed = place(t, &m.id, &bytes);
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
