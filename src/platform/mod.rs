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
