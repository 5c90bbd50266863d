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
