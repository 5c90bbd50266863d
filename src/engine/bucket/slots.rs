//! Jobs run beside each other on a bucket (`listen --slots N`, N > 1), as
//! on a folder (docs/protocol.md §7.14): the listener's thread stays the
//! dispatcher. Every check before a start, the claim and the spawn happen
//! in it; the started job is then waited for in a thread of its own, with
//! its own mailbox and its own [`BucketWatch`] (its marker, its output),
//! which hands back how it ended; the end is placed in the dispatcher's
//! thread again. A shutdown reaches every slot.

use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;

use super::BucketListener;
use super::run::Watched;
use super::watch::BucketWatch;
use crate::base::error::{Code, Error, Result};
use crate::base::names::JobId;
use crate::engine::runner::{self, Control, Mailbox};
use crate::protocol::doc::Job;
use crate::protocol::doc::report::Report;
use crate::protocol::jobenv;
use crate::store::port::Shelves;

/// One running job and the thread that waits for it.
struct Slot {
    job: Arc<Job>,
    started_at: String,
    mail: Mailbox,
    thread: JoinHandle<()>,
}

/// How a job in a slot ended.
struct Ended {
    id: JobId,
    report: Report,
    watched: Watched,
}

/// The jobs running in slots, in the order they started, and the channel
/// their ends come back on.
pub(super) struct Slots {
    running: Vec<Slot>,
    tx: Sender<Ended>,
    rx: Receiver<Ended>,
}

impl Default for Slots {
    fn default() -> Slots {
        let (tx, rx) = mpsc::channel();
        Slots {
            running: Vec::new(),
            tx,
            rx,
        }
    }
}

impl Slots {
    /// How many run.
    pub fn len(&self) -> usize {
        self.running.len()
    }

    /// True while `id` runs in a slot.
    pub fn runs(&self, id: &JobId) -> bool {
        self.running.iter().any(|s| &s.job.id == id)
    }

    /// Sends a cancel of `id` to the slot running that job, if any.
    pub fn cancel(&self, id: JobId, marker: Box<crate::protocol::doc::Marker>) {
        if let Some(s) = self.running.iter().find(|s| s.job.id == id) {
            s.mail.send(Control::Cancel(id, marker));
        }
    }

    /// The ids running, in the order they started.
    pub fn ids(&self) -> Vec<String> {
        self.running.iter().map(|s| s.job.id.to_string()).collect()
    }
}

impl BucketListener {
    /// Starts `j` (claimed) in a slot: spawned here, waited for apart.
    pub(super) fn start_slot(&mut self, j: Arc<Job>) -> Result<()> {
        let mark = Some(format!("{}={}", jobenv::JOB_ID, j.id));
        let b = self.begin(&j, mark);
        let claim = self.claimed.take();
        // Made here, in the one thread that spawns: no job can inherit the
        // bell's pipe before it is close-on-exec.
        let (mail, rx) = Mailbox::open(&format!("job {}'s", j.id))?;
        let running = match runner::start(b.req, mail.bell()) {
            Ok(running) => running,
            Err(report) => {
                let w = Watched {
                    notes: Vec::new(),
                    refusal: None,
                    chunks: b.chunks,
                    claim,
                };
                return self.end(&j, &b.started_at, &report, w);
            }
        };
        let show = self.shown_claim(&j, &b.started_at, running.id());
        let mut watch = BucketWatch::new(
            self.t.bucket().target(self.t.target()),
            Arc::clone(&self.key),
            j.id.clone(),
            self.settings.poll,
            None,
            b.chunks,
            claim,
            show,
        );
        let (done, wake, id) = (self.slots.tx.clone(), self.mail.clone(), j.id.clone());
        let thread = std::thread::Builder::new()
            .name(format!("job {id}"))
            .spawn(move || {
                let report = running.wait_guarded(&rx, &mut watch);
                let _ = done.send(Ended {
                    id,
                    report,
                    watched: Watched::from(watch),
                });
                wake.send(Control::Wake);
            })
            .map_err(|e| {
                Error::new(
                    Code::Internal,
                    format!("cannot start a thread for job {}: {e}", j.id),
                )
            })?;
        self.slots.running.push(Slot {
            job: j,
            started_at: b.started_at,
            mail,
            thread,
        });
        Ok(())
    }

    /// Ends every job whose slot has ended; with `all`, waits until no
    /// slot runs.
    pub(super) fn collect_ended(&mut self, all: bool) -> Result<()> {
        loop {
            let e = if all && !self.slots.running.is_empty() {
                match self.slots.rx.recv() {
                    Ok(e) => e,
                    Err(_) => return Ok(()),
                }
            } else {
                match self.slots.rx.try_recv() {
                    Ok(e) => e,
                    Err(_) => return Ok(()),
                }
            };
            let Some(at) = self.slots.running.iter().position(|s| s.job.id == e.id) else {
                continue;
            };
            let slot = self.slots.running.remove(at);
            let _ = slot.thread.join();
            self.end(&slot.job, &slot.started_at, &e.report, e.watched)?;
        }
    }

    /// Stops every job running in a slot, as a listener stopping does,
    /// and ends each.
    pub(super) fn stop_slots(&mut self) -> Result<()> {
        for s in &self.slots.running {
            s.mail.send(Control::Shutdown);
        }
        self.collect_ended(true)
    }
}
