//! Parallel slots (`listen --slots N`, N > 1; docs/protocol.md §7): the
//! listener's thread stays the dispatcher. Every check before a start, the
//! start line in the ledger and the spawn happen in it exactly as in the
//! serial drain ([`super::job_run::begin`], [`super::recorder::Recorder::spawned`]); the started
//! job is then handed to a thread of its own, which waits for it with its
//! own mailbox, bell and cancel watch ([`runner::Running::wait`]) and sends
//! [`Control::Ended`] back. On Linux the spawn here only forks the job's
//! keeper; the main process's start (its exec, or the error it met) is
//! waited for in the job's thread ([`platform::await_start`](crate::platform::await_start)), so the
//! dispatcher starts the next job meanwhile. The end is recorded here again
//! (`Listener::end`), so the ledger has one writer.
//!
//! The dispatcher routes control: a cancel to the slot running that job, a
//! shutdown to every slot, a wake to every slot's watch. Every spawn is made
//! here, in this thread: orphans the listener adopted are reaped here
//! only, never another running job's leader
//! ([`platform::reap_orphans_beside`](crate::platform::reap_orphans_beside)), and each job's stop finds only its
//! own processes (its mark, [`platform::Tree`](crate::platform::Tree)).

use std::sync::Arc;
use std::sync::mpsc::Receiver;
use std::thread::JoinHandle;

use crate::base::error::{Code, Error, Result};
use crate::base::names::JobId;
use crate::engine::runner::{self, Control, Ended, Mailbox};
use crate::engine::watcher::Watch;
use crate::protocol::doc::Job;
use crate::protocol::doc::Marker;

/// One running job and the thread that waits for it.
pub(super) struct Slot {
    job: Arc<Job>,
    started_at: String,
    mail: Mailbox,
    thread: JoinHandle<()>,
}

/// The jobs running in slots, in the order they started.
#[derive(Default)]
pub(super) struct Slots {
    running: Vec<Slot>,
}

impl Slots {
    /// True when no job runs in a slot (always, with one slot).
    pub fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    /// True when a slot of `slots` is free beside `starting` jobs about to
    /// start: always with one slot and none starting (the serial drain
    /// runs its job to the end before the next pass).
    pub fn free_beside(&self, starting: usize, slots: usize) -> bool {
        self.running.len() + starting < slots
    }

    /// True while `id` runs in a slot: its inbox file is not a queued job.
    pub fn runs(&self, id: &JobId) -> bool {
        self.running.iter().any(|s| &s.job.id == id)
    }

    /// Sends `msg` to every slot.
    pub fn send_all(&self, msg: impl Fn() -> Control) {
        for s in &self.running {
            s.mail.send(msg());
        }
    }

    /// Sends a cancel of `id` to the slot running that job, if any.
    pub fn cancel(&self, id: JobId, marker: Box<Marker>) {
        if let Some(s) = self.running.iter().find(|s| s.job.id == id) {
            s.mail.send(Control::Cancel(id, marker));
        }
    }

    /// Takes the slot of the job that ended as `id` out, its thread joined
    /// (it sent its last message: the join is immediate): the job, and
    /// when it started.
    pub fn take(&mut self, id: &JobId) -> Option<(Arc<Job>, String)> {
        let at = self.running.iter().position(|s| &s.job.id == id)?;
        let slot = self.running.remove(at);
        let _ = slot.thread.join();
        Some((slot.job, slot.started_at))
    }

    /// Adds a slot, its job started.
    pub fn add(&mut self, slot: Slot) {
        self.running.push(slot);
    }
}

/// A slot's own mailbox, made for `job` here, in the one thread that
/// spawns: no job can inherit the bell's pipe before it is close-on-exec
/// (macOS sets that apart).
pub(super) fn mailbox(job: &Job) -> Result<(Mailbox, Receiver<Control>)> {
    Mailbox::open(&format!("job {}'s", job.id))
}

/// Hands `running`, the job `job` started at `started_at`, to a thread of
/// its own that waits for it with its own mailbox (`mail`, `rx`) and
/// `watch`, and sends [`Control::Ended`] to `done` when it ends.
pub(super) fn wait_apart(
    job: Arc<Job>,
    started_at: String,
    (mail, rx): (Mailbox, Receiver<Control>),
    running: runner::Running,
    mut watch: Watch,
    done: Mailbox,
) -> Result<Slot> {
    let job_id = job.id.clone();
    let thread = std::thread::Builder::new()
        .name(format!("job {job_id}"))
        .spawn(move || {
            let report = running.wait_guarded(&rx, &mut watch);
            done.send(Control::Ended(Box::new(Ended {
                job_id,
                report,
                watch,
            })));
        })
        .map_err(|e| {
            Error::new(
                Code::Internal,
                format!("cannot start a thread for job {}: {e}", job.id),
            )
        })?;
    Ok(Slot {
        job,
        started_at,
        mail,
        thread,
    })
}
