//! Everything that differs between operating systems, behind one set of
//! functions: file moves that never replace, key-file permissions, process
//! groups and signals, and finding a job's escaped descendants.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;

#[cfg(windows)]
mod threaded;
#[cfg(windows)]
pub use threaded::{Bell, JobIo};

/// Which output stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Standard output.
    Out = 0,
    /// Standard error.
    Err,
}

/// What [`JobIo::next`] saw.
#[derive(Debug, PartialEq, Eq)]
pub enum IoEvent {
    /// This many bytes of a stream are at the start of the buffer.
    Output(Stream, usize),
    /// The job's main process exited (reported once; it is not reaped).
    Exited,
    /// The bell rang: a control message may be waiting.
    Bell,
    /// The deadline passed.
    Timeout,
}

/// What a dead listener's journal says about the job it ran, for
/// [`orphans`] to find what is left of it.
#[derive(Clone, Debug)]
pub struct Orphaned<'a> {
    /// The job id.
    pub job_id: &'a str,
    /// The dispatch root the job ran for (its environment says so).
    pub root: &'a str,
    /// The target.
    pub target: &'a str,
    /// The job's leader pid (its process group on Unix); 0 if never spawned.
    pub group: i32,
    /// When the job started.
    pub started: std::time::SystemTime,
}
