//! [`JobIo`] for systems without a `poll(2)` over pipes and processes
//! (Windows): a reader thread per output stream and a waiter thread feed one
//! channel, which the bell also rings into. The runner above it is the same.

use std::io::Read;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::{IoEvent, Stream};
use crate::platform::Tree;

/// What the helper threads send.
#[derive(Debug)]
enum Note {
    Chunk(Stream, Vec<u8>),
    Closed(Stream),
    Exited,
    Bell,
}

/// Wakes a runner waiting in [`JobIo::next`]: rings into the channel of the
/// job being waited on, if any.
#[derive(Clone, Debug, Default)]
pub struct Bell {
    waiting: Arc<Mutex<Option<Sender<Note>>>>,
}

impl Bell {
    /// A new bell.
    pub fn new() -> std::io::Result<Bell> {
        Ok(Bell::default())
    }

    /// Rings: wakes the runner if one is waiting.
    pub fn ring(&self) {
        if let Some(tx) = self
            .waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            let _ = tx.send(Note::Bell);
        }
    }
}

/// A running job's output and exit, as events from helper threads.
pub struct JobIo {
    rx: Receiver<Note>,
    open: [bool; 2],
    bell: Bell,
}

impl JobIo {
    /// Takes over `child`'s output pipes.
    pub fn new(child: &mut std::process::Child, tree: &Tree, bell: &Bell) -> JobIo {
        let (tx, rx) = mpsc::channel();
        let out = child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>);
        let err = child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>);
        let open = [out.is_some(), err.is_some()];
        for (stream, pipe) in [(Stream::Out, out), (Stream::Err, err)] {
            let Some(mut pipe) = pipe else {
                continue;
            };
            let tx = tx.clone();
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 8192];
                while let Ok(n) = pipe.read(&mut buf) {
                    if n == 0 || tx.send(Note::Chunk(stream, buf[..n].to_vec())).is_err() {
                        break;
                    }
                }
                let _ = tx.send(Note::Closed(stream));
            });
        }
        let wait_exit = tree.exit_waiter();
        let waiter = tx.clone();
        std::thread::spawn(move || {
            wait_exit();
            let _ = waiter.send(Note::Exited);
        });
        *bell.waiting.lock().unwrap_or_else(|p| p.into_inner()) = Some(tx);
        JobIo {
            rx,
            open,
            bell: bell.clone(),
        }
    }

    /// True while an output pipe is open.
    pub fn streams_open(&self) -> bool {
        self.open[0] || self.open[1]
    }

    /// Waits until output arrives, the main process exits, the bell rings or
    /// `until` passes.
    pub fn next(&mut self, until: Instant, buf: &mut [u8]) -> IoEvent {
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(Note::Chunk(stream, bytes)) => {
                    // Chunks are at most the readers' buffer, the runner's size.
                    let n = bytes.len().min(buf.len());
                    buf[..n].copy_from_slice(&bytes[..n]);
                    return IoEvent::Output(stream, n);
                }
                Ok(Note::Closed(stream)) => self.open[stream as usize] = false,
                Ok(Note::Exited) => return IoEvent::Exited,
                Ok(Note::Bell) => return IoEvent::Bell,
                Err(RecvTimeoutError::Timeout) => return IoEvent::Timeout,
                // Cannot happen while the bell holds a sender; wait it out.
                Err(RecvTimeoutError::Disconnected) => {
                    std::thread::sleep(left);
                    return IoEvent::Timeout;
                }
            }
        }
    }
}

impl Drop for JobIo {
    fn drop(&mut self) {
        *self.bell.waiting.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}
