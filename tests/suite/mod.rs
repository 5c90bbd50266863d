//! The test modules, one per area.

// Unix only (signals, process groups and `sh` jobs). Windows: see `windows`.
#[cfg(unix)]
mod cancel;
// Unix only (Unix modes and `sh`). Windows: see `windows`.
#[cfg(unix)]
mod cli;
mod config;
mod contrib;
mod generated;
// Unix only (`sh` jobs, FIFOs, `/proc` and `kill`). Windows: see `windows`.
#[cfg(unix)]
mod listen;
mod manners;
mod status;
// Unix only (symlinks, `utimensat` and Unix paths). Windows: see `windows`.
#[cfg(unix)]
mod sweep_verify;
mod vectors;
#[cfg(windows)]
mod windows;
