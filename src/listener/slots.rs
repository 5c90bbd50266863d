//! Parallel slots (`listen --slots N`, N > 1; docs/protocol.md §7): the
//! listener's thread stays the dispatcher. Every check before a start, the
//! start line in the ledger and the spawn happen in it exactly as in the
//! serial drain ([`Listener::begin`], [`Listener::spawned`]); the started
//! job is then handed to a thread of its own, which waits for it with its
//! own mailbox, bell and cancel watch ([`runner::Running::wait`]) and sends
//! [`Control::Ended`] back. On Linux the spawn here only forks the job's
//! keeper; the main process's start (its exec, or the error it met) is
//! waited for in the job's thread ([`platform::await_start`]), so the
//! dispatcher starts the next job meanwhile. The end is recorded here again
//! ([`Listener::end`]), so the ledger has one writer.
//!
//! The dispatcher routes control: a cancel to the slot running that job, a
//! shutdown to every slot, a wake to every slot's watch. Every spawn is made
//! here, in this thread: orphans the listener adopted are reaped here
//! only, never another running job's leader
//! ([`platform::reap_orphans_beside`]), and each job's stop finds only its
//! own processes (its mark, [`platform::Tree`]).

use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;

use super::{Candidate, Listener};
use crate::doc::Job;
use crate::doc::report::{Exit, Report};
use crate::error::{Code, Error, Result};
use crate::fsops::Durability;
use crate::layout::Folders;
use crate::names::JobId;
use crate::platform;
use crate::runner::{self, Control, Ended, Mailbox};

use super::job_run::Begun;

/// One running job and the thread that waits for it.
struct Slot {
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

    /// True while `id` runs in a slot: its inbox file is not a queued job.
    pub fn runs(&self, id: &JobId) -> bool {
        self.running.iter().any(|s| &s.job.id == id)
    }

    fn send_all(&self, msg: impl Fn() -> Control) {
        for s in &self.running {
            s.mail.send(msg());
        }
    }
}

impl Listener {
    /// True when another job may start: always with one slot (the serial
    /// drain runs its job to the end before the next pass).
    pub(super) fn slot_free(&self) -> bool {
        self.slot_free_beside(0)
    }

    /// True when a slot is free beside `starting` jobs about to start.
    pub(super) fn slot_free_beside(&self, starting: usize) -> bool {
        self.slots.running.len() + starting < self.settings.slots
    }

    /// Starts each of `batch` in a slot of its own (see the module doc),
    /// their markers last looked for when the hint's change count was
    /// `looked`. Their start lines are flushed together, before the first
    /// spawn: jobs that can start at the same moment share one flush.
    pub(super) fn start_slots(
        &mut self,
        f: &Folders,
        batch: Vec<Candidate>,
        looked: u64,
    ) -> Result<()> {
        if self.shutdown.requested() {
            return Ok(());
        }
        let mut begun = Vec::with_capacity(batch.len());
        for c in batch {
            let b = self.begin(f, &c, looked, false)?;
            begun.push((c, b));
        }
        if self.settings.durability == Durability::Full {
            self.ledger.sync()?;
        }
        let mut settled = Ok(());
        for (c, b) in begun {
            let s = self.start_slot(c, b);
            if settled.is_ok() {
                settled = s;
            }
        }
        settled
    }

    /// Spawns `c`, begun as `b`, and hands it to a thread of its own.
    fn start_slot(&mut self, c: Candidate, b: Begun) -> Result<()> {
        let Begun {
            req,
            mut watch,
            started_at,
        } = b;
        // Made here, in the one thread that spawns: no job can inherit the
        // bell's pipe before it is close-on-exec (macOS sets that apart).
        let bell = platform::Bell::new().map_err(|e| {
            Error::new(
                Code::Internal,
                format!("cannot make the wake-up pipe of job {}: {e}", c.job.id),
            )
        })?;
        let (tx, rx) = mpsc::channel();
        let mail = Mailbox::new(tx, bell);
        let running = match runner::start(req, mail.bell()) {
            Ok(r) => r,
            Err(report) => {
                let settled = self.settle();
                self.end(&c.job, &started_at, &report, watch)?;
                return settled;
            }
        };
        let leader = running.id();
        let settled = self.spawned(&c.job, leader, &started_at);
        let done = self.mail.clone();
        let job_id = c.job.id.clone();
        let thread = std::thread::Builder::new()
            .name(format!("job {job_id}"))
            .spawn(move || {
                let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    running.wait(&rx, &mut watch)
                }));
                // A runner that failed still ends its slot, so the
                // dispatcher never waits for it forever.
                let report = waited.unwrap_or_else(|_| {
                    crate::shutdown::job_ended(leader);
                    Report::not_started(Exit::SpawnFailed(
                        "lost track of the process: its runner failed".to_string(),
                    ))
                });
                done.send(Control::Ended(Box::new(Ended {
                    job_id,
                    report,
                    watch,
                })));
            })
            .map_err(|e| {
                Error::new(
                    Code::Internal,
                    format!("cannot start a thread for job {}: {e}", c.job.id),
                )
            })?;
        self.beat.slot(c.job.id.as_str(), true);
        self.slots.running.push(Slot {
            job: c.job,
            started_at,
            mail,
            thread,
        });
        settled
    }

    /// Acts on one control message: an ended job is recorded, a cancel goes
    /// to the slot running its job, a wake and a shutdown to every slot.
    /// True for a shutdown. With one slot no job runs here while messages
    /// are read: a wake only notes the hint, a cancel has no one to go to.
    pub(super) fn dispatch(&mut self, msg: Control) -> Result<bool> {
        match msg {
            Control::Ended(e) => self.slot_ended(*e)?,
            Control::Cancel(id, marker) => {
                if let Some(s) = self.slots.running.iter().find(|s| s.job.id == id) {
                    s.mail.send(Control::Cancel(id, marker));
                }
            }
            Control::Wake => {
                self.hint.woken();
                self.slots.send_all(|| Control::Wake);
            }
            Control::Shutdown => {
                self.slots.send_all(|| Control::Shutdown);
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Acts on the messages waiting, without waiting; true when one was a
    /// shutdown.
    pub(super) fn dispatch_waiting(&mut self) -> Result<bool> {
        let mut stop = false;
        while let Ok(msg) = self.rx.try_recv() {
            stop |= self.dispatch(msg)?;
        }
        Ok(stop)
    }

    /// Records the end of a job that ran in a slot.
    fn slot_ended(&mut self, ended: Ended) -> Result<()> {
        let Some(at) = self
            .slots
            .running
            .iter()
            .position(|s| s.job.id == ended.job_id)
        else {
            return Ok(());
        };
        let slot = self.slots.running.remove(at);
        // It sent its last message: the join is immediate.
        let _ = slot.thread.join();
        self.beat.slot(slot.job.id.as_str(), false);
        platform::reap_orphans_beside();
        self.end(&slot.job, &slot.started_at, &ended.report, ended.watch)
    }

    /// After a failure of the listener: every job in a slot gets the stop
    /// a shutdown gives, and is waited for, whatever fails meanwhile. Each
    /// end is recorded when it can be; one that cannot is in the ledger as
    /// started, so the next start records it `interrupted`. Its processes
    /// are stopped either way.
    pub(super) fn stop_every_slot(&mut self) {
        self.slots.send_all(|| Control::Shutdown);
        while !self.slots.is_empty() {
            match self.rx.recv_timeout(self.settings.poll) {
                // An end leaves its slot before it is recorded.
                Ok(msg) => {
                    let _ = self.dispatch(msg);
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
    }

    /// Waits until every job running in a slot has ended, recording each:
    /// they are asked to stop first when a shutdown was asked for (also
    /// while waiting), and left to finish otherwise (a drain). Results are
    /// handed on as they come.
    pub(super) fn wind_down(&mut self) -> Result<()> {
        let mut stopping = false;
        while !self.slots.is_empty() {
            if self.shutdown.requested() && !stopping {
                stopping = true;
                self.slots.send_all(|| Control::Shutdown);
            }
            match self.rx.recv_timeout(self.settings.poll) {
                Ok(msg) => stopping |= self.dispatch(msg)?,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            self.settle()?;
        }
        Ok(())
    }
}
