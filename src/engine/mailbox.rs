//! How the listener, its runners and whoever wakes them talk: the
//! [`Mailbox`] (a channel and a bell a waiting runner hears), the
//! [`Control`] messages it carries, and what a job's thread hands back
//! when its job [`Ended`].

use std::sync::mpsc::{Receiver, Sender};

use crate::base::names::JobId;
use crate::engine::watcher::Watch;
use crate::platform;
use crate::protocol::doc::Marker;
use crate::protocol::doc::report::Report;

/// Where control messages for the listener and its runner go: a channel,
/// and a bell that wakes a runner waiting on its job.
#[derive(Clone, Debug)]
pub struct Mailbox {
    tx: Sender<Control>,
    bell: platform::Bell,
}

impl Mailbox {
    /// A mailbox sending into `tx`, ringing `bell`.
    pub fn new(tx: Sender<Control>, bell: platform::Bell) -> Mailbox {
        Mailbox { tx, bell }
    }

    /// A new mailbox and the receiver of what it is sent; `whose` names
    /// it in the error (`the listener's`, `job ID's`).
    ///
    /// # Errors
    ///
    /// `INTERNAL` when its wake-up pipe cannot be made.
    pub fn open(whose: &str) -> crate::base::error::Result<(Mailbox, Receiver<Control>)> {
        let bell = platform::Bell::new().map_err(|e| {
            crate::base::error::Error::new(
                crate::base::error::Code::Internal,
                format!("cannot make {whose} wake-up pipe: {e}"),
            )
        })?;
        let (tx, rx) = std::sync::mpsc::channel();
        Ok((Mailbox::new(tx, bell), rx))
    }

    /// The bell a runner waits on.
    pub fn bell(&self) -> &platform::Bell {
        &self.bell
    }

    /// Sends `msg`; a listener that is gone is not an error.
    pub fn send(&self, msg: Control) {
        let _ = self.tx.send(msg);
        self.bell.ring();
    }
}

/// Messages the runner acts on while a job runs.
#[derive(Debug)]
pub enum Control {
    /// A valid cancel marker for this job (from the watcher).
    Cancel(JobId, Box<Marker>),
    /// The listener is shutting down (first Ctrl-C or SIGTERM).
    Shutdown,
    /// New work or a marker may be waiting (from the HTTP intake or a
    /// file-system event): an idle listener rescans at once instead of at
    /// its next poll, and a running job's watch looks for its marker.
    Wake,
    /// A job run in a thread of its own (listener slots) ended: to the
    /// listener, never to a runner.
    Ended(Box<Ended>),
}

/// What a job's thread hands back to the listener when its job ended.
pub struct Ended {
    /// The job.
    pub job_id: JobId,
    /// How it went.
    pub report: Report,
    /// Its cancel watch, with what it saw.
    pub watch: Watch,
}

impl std::fmt::Debug for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ended")
            .field("job_id", &self.job_id)
            .finish()
    }
}
