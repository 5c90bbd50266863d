//! What steers the listener from outside the folder: its mailbox (a wake
//! from an event, a cancel from the HTTP intake, the end of a job in a
//! slot), a shutdown (Ctrl-C, SIGTERM), a drain request (`listen --drain`)
//! and the jobs running in slots, to which it routes messages.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use super::slots::Slots;
use crate::base::error::Result;
use crate::engine::runner::{Control as Message, Mailbox};
use crate::engine::shutdown::Shutdown;
use crate::places::heartbeat::Heartbeat;
use crate::store::fsops::Dir;
use crate::store::layout::{DRAIN, Place, StateDirs, TargetDirs};

/// The mailbox, the shutdown and drain requests, and the slots.
pub(super) struct Control {
    mail: Mailbox,
    rx: Receiver<Message>,
    shutdown: Arc<Shutdown>,
    /// Where `listen --drain` asks this listener to stop between jobs: the
    /// state folder, held open (the request is looked for by its one name
    /// after every job, not by its path).
    drain: Dir,
    /// The jobs running in slots (none with one slot: its job runs in
    /// this thread).
    pub slots: Slots,
}

impl Control {
    /// The mailbox, woken by `shutdown`; a second Ctrl-C exits at once,
    /// after telling the folder (`running/` and the heartbeat, `beat`) that
    /// the listener stopped. A drain request left from an earlier run is
    /// not for this one: it is taken away.
    pub fn new(
        shutdown: Arc<Shutdown>,
        dirs: &TargetDirs,
        beat: &Heartbeat,
        state: &StateDirs,
    ) -> Result<Control> {
        let (mail, rx) = Mailbox::open("the listener's")?;
        let wake = mail.clone();
        shutdown.on_request(move || wake.send(Message::Shutdown));
        // A second Ctrl-C exits at once: the folder is told the listener
        // stopped, and no killed job shows as running any more.
        let (last_beat, last_dirs) = (beat.clone(), dirs.clone());
        shutdown.on_kill(move |killed| {
            if let Ok(Some(running)) = last_dirs.open(Place::Running) {
                for id in killed {
                    let _ = running.remove(&format!("{id}.json"));
                }
            }
            last_beat.write_killed(killed);
        });
        let drain = Dir::open_trusted(state.base())?;
        // A request left from an earlier run is not for this one.
        drain.take(DRAIN);
        Ok(Control {
            mail,
            rx,
            shutdown,
            drain,
            slots: Slots::default(),
        })
    }

    /// The mailbox: wakes the listener, or reaches the job it runs.
    pub fn mail(&self) -> &Mailbox {
        &self.mail
    }

    /// Where the messages arrive, for the job run in this thread.
    pub fn rx(&self) -> &Receiver<Message> {
        &self.rx
    }

    /// True once a shutdown was asked for.
    pub fn shutdown_requested(&self) -> bool {
        self.shutdown.requested()
    }

    /// True (once) when `listen --drain` asked this listener to stop.
    pub fn drain_requested(&self) -> bool {
        self.drain.take(DRAIN)
    }

    /// Drops the messages left from an earlier job: they are stale.
    pub fn clear(&self) {
        while self.rx.try_recv().is_ok() {}
    }

    /// The next message, waiting at most `poll`; None after the wait.
    pub fn next(&self, poll: Duration) -> Option<Message> {
        self.rx.recv_timeout(poll).ok()
    }

    /// The next message, waiting at most `poll`: `Err(true)` when the
    /// mailbox is closed (no message can come any more).
    pub fn next_or_closed(&self, poll: Duration) -> std::result::Result<Message, bool> {
        match self.rx.recv_timeout(poll) {
            Ok(msg) => Ok(msg),
            Err(RecvTimeoutError::Timeout) => Err(false),
            Err(RecvTimeoutError::Disconnected) => Err(true),
        }
    }

    /// A message waiting, without waiting.
    pub fn waiting(&self) -> Option<Message> {
        self.rx.try_recv().ok()
    }

    /// Routes a message that is not a job's end: a cancel to the slot
    /// running its job, a wake and a shutdown to every slot. True for a
    /// shutdown.
    pub fn route(&self, msg: Message) -> bool {
        match msg {
            Message::Cancel(id, marker) => self.slots.cancel(id, marker),
            Message::Wake => self.slots.send_all(|| Message::Wake),
            Message::Shutdown => {
                self.slots.send_all(|| Message::Shutdown);
                return true;
            }
            Message::Ended(_) => {}
        }
        false
    }
}
