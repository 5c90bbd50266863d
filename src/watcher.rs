//! The cancel watcher: while a job runs, a thread looks at
//! `cancel/<jobId>.json` once per poll interval and, when a marker there is
//! accepted by the SPEC §6 rules, tells the runner to stop the job.
//!
//! Its steady cost is one `lstat` per poll; the file is read only when it
//! appears or changes. It also keeps the listener's heartbeat fresh while
//! the job runs, since the listener itself is busy waiting for the job.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use crate::accept;
use crate::fsops;
use crate::heartbeat::{self, Heartbeat};
use crate::key::Key;
use crate::names::JobId;
use crate::runner::Control;

/// What a watcher looks at and whom it tells.
pub struct Watch {
    /// The running job.
    pub job: JobId,
    /// `cancel/<job>.json`.
    pub marker: PathBuf,
    /// The listener's target, for the acceptance rules.
    pub target: String,
    /// The fleet key.
    pub key: Arc<Key>,
    /// How often to look.
    pub poll: Duration,
    /// The runner's control channel.
    pub to_runner: Sender<Control>,
    /// The listener's heartbeat.
    pub beat: Heartbeat,
}

/// A running watcher; [`Watcher::stop`] ends it.
pub struct Watcher {
    stop: Sender<()>,
    handle: JoinHandle<Watched>,
}

/// What a watcher saw.
#[derive(Debug, Default)]
pub struct Watched {
    /// The last refusal, when a marker was present but not accepted.
    pub refusal: Option<accept::Rejection>,
    /// True when it wrote a "running" heartbeat (the job ran long enough).
    pub beat_written: bool,
}

/// A job runs this long before the heartbeat says so: a fast drain of
/// short jobs then costs no heartbeat writes in the synced folder.
const FIRST_BEAT: Duration = Duration::from_secs(1);

impl Watcher {
    /// Starts a thread carrying out `watch`.
    pub fn start(watch: Watch) -> Watcher {
        let (stop, stopped) = mpsc::channel();
        let handle = std::thread::spawn(move || watch.run(&stopped));
        Watcher { stop, handle }
    }

    /// Stops the watcher and says what it saw.
    pub fn stop(self) -> Watched {
        let _ = self.stop.send(());
        self.handle.join().unwrap_or_default()
    }
}

impl Watch {
    fn run(self, stopped: &Receiver<()>) -> Watched {
        let Watch {
            job,
            marker,
            target,
            key,
            poll,
            to_runner,
            beat,
        } = &self;
        let mut last_seen: Option<(u64, Option<SystemTime>)> = None;
        let started = Instant::now();
        let mut last_beat: Option<Instant> = None;
        let mut refusal = None;
        let name = job.file_name();
        loop {
            if let Ok(meta) = std::fs::symlink_metadata(marker) {
                let stamp = (meta.len(), meta.modified().ok());
                if last_seen != Some(stamp) {
                    last_seen = Some(stamp);
                    match accept::marker(
                        &name,
                        fsops::read_limited(marker, crate::doc::marker::MAX_BYTES),
                        target,
                        key,
                    ) {
                        Ok(m) => {
                            let _ = to_runner.send(Control::Cancel(job.clone(), Box::new(m)));
                            return Watched {
                                refusal: None,
                                beat_written: last_beat.is_some(),
                            };
                        }
                        Err(r) => {
                            // A marker that cannot be read yet is retried next poll.
                            if matches!(
                                r.verdict,
                                accept::Verdict::Unreadable | accept::Verdict::Missing
                            ) {
                                last_seen = None;
                            }
                            refusal = Some(r);
                        }
                    }
                }
            }
            let due = match last_beat {
                None => started.elapsed() >= FIRST_BEAT,
                Some(t) => t.elapsed() >= heartbeat::EVERY,
            };
            if due {
                last_beat = Some(Instant::now());
                beat.write(Some(job.as_str()), "running");
            }
            match stopped.recv_timeout(*poll) {
                Err(RecvTimeoutError::Timeout) => continue,
                _ => {
                    return Watched {
                        refusal,
                        beat_written: last_beat.is_some(),
                    };
                }
            }
        }
    }
}
