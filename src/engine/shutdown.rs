//! Stopping the listener: the one module a Ctrl-C or SIGTERM goes through.
//!
//! The first signal asks for a graceful stop ([`Shutdown::request`]): each
//! running job is stopped like a cancelled one and the listener exits
//! [`exit::INTERRUPTED`]. A second signal does not wait: it takes the recording
//! lock for good, kills every running job's process tree and exits
//! [`exit::INTERRUPTED`] at once. Holding the lock first means no job killed
//! there is recorded as having ended, so the next start records each
//! `interrupted`, as for any listener that died mid-job.
//!
//! It sits below the runner and the listener: the runner notes each job's
//! process group here (one job, or one per slot with `listen --slots`), the listener records results under [`recording`],
//! and `listen` only calls [`install`].

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use crate::base::error::{Code, Error, Result};
use crate::base::exit;
use crate::platform;

/// What wakes the listener when a stop is asked for.
type Wake = Box<dyn Fn() + Send + Sync>;

/// What a second signal does before the exit, given the job it killed.
type LastWords = Box<dyn Fn(&[String]) + Send + Sync>;

/// A stop request, shared by the signal handler and the listener.
#[derive(Default)]
pub struct Shutdown {
    requested: AtomicBool,
    wake: Mutex<Option<Wake>>,
    /// What the second signal does before the exit: say in the folder that
    /// the listener stopped.
    last_words: Mutex<Option<LastWords>>,
}

impl Shutdown {
    /// Asks the listener to stop: the running job is stopped gracefully.
    pub fn request(&self) {
        self.requested.store(true, Ordering::SeqCst);
        if let Some(wake) = self.wake.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            wake();
        }
    }

    /// True once a stop was asked for.
    pub fn requested(&self) -> bool {
        self.requested.load(Ordering::SeqCst)
    }

    /// Sets what [`Shutdown::request`] calls to reach a listener that is
    /// waiting (idle, or for its job).
    pub fn on_request(&self, wake: impl Fn() + Send + Sync + 'static) {
        *self.wake.lock().unwrap_or_else(|p| p.into_inner()) = Some(Box::new(wake));
    }

    /// Sets what a second signal does after it killed the running jobs
    /// (named) and before the process exits (the listener's heartbeat says
    /// `stopped`).
    pub fn on_kill(&self, words: impl Fn(&[String]) + Send + Sync + 'static) {
        *self.last_words.lock().unwrap_or_else(|p| p.into_inner()) = Some(Box::new(words));
    }

    fn last_words(&self, killed: &[String]) {
        if let Some(words) = self
            .last_words
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            words(killed);
        }
    }
}

/// Held while a result is written to the ledger; a second signal takes it
/// for good before it kills the job (see the module doc).
static RECORDING: Mutex<()> = Mutex::new(());

/// A job running now: its process group, its id and its grace.
struct Job {
    group: i32,
    id: String,
    grace: Duration,
}

/// The jobs running now, in the order they started: for a second signal to
/// kill, and for what the first one says.
static JOBS: Mutex<Vec<Job>> = Mutex::new(Vec::new());

fn jobs() -> MutexGuard<'static, Vec<Job>> {
    JOBS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Takes the recording lock: hold it while a job's end is written down.
pub fn recording() -> MutexGuard<'static, ()> {
    RECORDING.lock().unwrap_or_else(|p| p.into_inner())
}

/// Notes the job that just started, `id` with its `grace`, and its process
/// group (job object id on Windows), for a second signal to kill.
pub fn job_started(group: i32, id: &str, grace: Duration) {
    jobs().push(Job {
        group,
        id: id.to_string(),
        grace,
    });
}

/// Notes that the job of process group `group` no longer runs.
pub fn job_ended(group: i32) {
    jobs().retain(|j| j.group != group);
}

/// True while job `id` runs: known from its spawn on.
pub fn is_running(id: &str) -> bool {
    jobs().iter().any(|j| j.id == id)
}

/// What the first signal tells the person who sent it.
fn first_words() -> String {
    match jobs().as_slice() {
        [] => "fleet-dispatch: stopping (no job is running)".to_string(),
        [j] => format!(
            "fleet-dispatch: stopping: job {} is asked to stop and is killed if it has not after its grace of {}; press Ctrl-C again to kill it now",
            j.id,
            crate::base::clock::format_duration(j.grace)
        ),
        all => format!(
            "fleet-dispatch: stopping: jobs {} are asked to stop and each is killed if it has not after its grace (at most {}); press Ctrl-C again to kill them now",
            all.iter()
                .map(|j| j.id.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            crate::base::clock::format_duration(
                all.iter().map(|j| j.grace).max().unwrap_or_default()
            )
        ),
    }
}

static SHUTDOWN: OnceLock<Arc<Shutdown>> = OnceLock::new();
static SIGNALS: AtomicUsize = AtomicUsize::new(0);

/// Installs the Ctrl-C / SIGTERM handler (once per process) and returns
/// the [`Shutdown`] it requests.
///
/// # Errors
///
/// `INTERNAL` when the handler cannot be installed.
pub fn install() -> Result<Arc<Shutdown>> {
    let mut fresh = false;
    let shutdown = SHUTDOWN.get_or_init(|| {
        fresh = true;
        Arc::new(Shutdown::default())
    });
    if fresh {
        ctrlc::set_handler(|| {
            if SIGNALS.fetch_add(1, Ordering::SeqCst) == 0 {
                crate::note!("{}", first_words());
                if let Some(s) = SHUTDOWN.get() {
                    s.request();
                }
            } else {
                // Kept until the exit: the listener cannot record the end of
                // the job killed here.
                let _recording = recording();
                // Named before the kill: once its process is gone a runner
                // notes that its job no longer runs.
                let running = jobs();
                let killed: Vec<String> = running.iter().map(|j| j.id.clone()).collect();
                for j in running.iter() {
                    platform::kill_tree_now(j.group);
                }
                drop(running);
                if let Some(s) = SHUTDOWN.get() {
                    s.last_words(&killed);
                }
                match killed.len() {
                    0 => crate::note!("fleet-dispatch: stopped at once; no job was running"),
                    1 => crate::note!(
                        "fleet-dispatch: killed; the job is recorded as interrupted at the next start"
                    ),
                    _ => crate::note!(
                        "fleet-dispatch: killed; the jobs are recorded as interrupted at the next start"
                    ),
                }
                std::process::exit(i32::from(exit::INTERRUPTED));
            }
        })
        .map_err(|e| {
            Error::new(
                Code::Internal,
                format!("cannot install the signal handler: {e}"),
            )
        })?;
    }
    Ok(Arc::clone(shutdown))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_sets_the_flag_and_wakes_the_listener() {
        let s = Shutdown::default();
        let woken = Arc::new(AtomicUsize::new(0));
        let w = Arc::clone(&woken);
        s.on_request(move || {
            w.fetch_add(1, Ordering::SeqCst);
        });
        assert!(!s.requested());
        s.request();
        assert!(s.requested());
        assert_eq!(woken.load(Ordering::SeqCst), 1);
    }
}
