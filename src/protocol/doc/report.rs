//! How a run ended, as the runner reports it: the facts a result records.
//!
//! Plain data, kept beside the result document rather than in the runner,
//! so the rule turning a run into a signed result ([`super::detail`]) is a
//! pure function the runner does not sit under.

use std::time::Duration;

/// Bytes of each output stream's end a report carries into the result.
pub const TAIL_BYTES: usize = 4096;

use super::Marker;

/// Why the runner stopped a job.
#[derive(Clone, Debug, PartialEq)]
pub enum StopReason {
    /// A valid cancel marker.
    Cancel(Box<Marker>),
    /// The job's timeout passed.
    Timeout,
    /// The listener is stopping.
    Shutdown,
}

/// How the process ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// A signal ended it (by number).
    Signal(i32),
    /// It could not be started.
    SpawnFailed(String),
}

/// A stop the runner carried out.
#[derive(Clone, Debug, PartialEq)]
pub struct Stop {
    /// Why.
    pub reason: StopReason,
    /// True when the grace ran out and the tree was killed.
    pub grace_expired: bool,
    /// True when the forced kill was sent to the main process itself,
    /// still running at the grace's end (the grace can also run out on
    /// processes it left behind after it exited).
    pub main_killed: bool,
}

/// Everything the listener needs to write a result.
#[derive(Clone, Debug)]
pub struct Report {
    /// How the main process ended.
    pub exit: Exit,
    /// The stop carried out, if any signal was sent. `None` also covers a
    /// process that exited by itself before any stop signal (the race).
    pub stop: Option<Stop>,
    /// A stop that was requested but found the process already gone.
    pub raced: Option<StopReason>,
    /// Wall time from spawn to exit.
    pub duration: Duration,
    /// Processes left behind by the main process and stopped with it.
    pub leftovers_stopped: usize,
    /// End of stdout.
    pub stdout_tail: String,
    /// End of stderr.
    pub stderr_tail: String,
    /// Bytes written to stdout and stderr in all.
    pub output_bytes: (u64, u64),
    /// For each stream whose log file holds less than it should (it could
    /// not be made, or a write failed: a full disk), the bytes it holds.
    pub logs_short: (Option<u64>, Option<u64>),
}

impl Report {
    /// A report for a process that never ran.
    pub fn not_started(exit: Exit) -> Report {
        Report {
            exit,
            stop: None,
            raced: None,
            duration: Duration::ZERO,
            leftovers_stopped: 0,
            stdout_tail: String::new(),
            stderr_tail: String::new(),
            output_bytes: (0, 0),
            logs_short: (None, None),
        }
    }

    /// The cancel marker the runner met, whether it stopped the job or
    /// arrived after the job had ended by itself.
    pub fn marker(&self) -> Option<&Marker> {
        let reason = self
            .stop
            .as_ref()
            .map(|s| &s.reason)
            .or(self.raced.as_ref());
        match reason {
            Some(StopReason::Cancel(m)) => Some(m),
            _ => None,
        }
    }
}
