//! The test modules, one per area.

// Unix only (signals, process groups and `sh` jobs). Windows: see `windows`.
#[cfg(unix)]
mod cancel;
// Unix only (Unix modes and `sh`). Windows: see `windows`.
#[cfg(unix)]
mod cli;
// Unix only (bash, zsh and fish drive the scripts).
#[cfg(unix)]
mod completion;
mod config;
mod contrib;
// Unix only (SIGKILL, `sh` jobs and `/proc`). Windows: see `windows`.
#[cfg(unix)]
mod crash_loop;
mod generated;
mod layers;
// Unix only (`sh` jobs and `/proc`). Windows: see `windows`.
#[cfg(unix)]
mod http;
// Unix only (symlinks, FIFOs, `sh` jobs and `kill`). Windows: see `windows`.
#[cfg(unix)]
mod hostile;
// Unix only (`sh` jobs, FIFOs, `/proc` and `kill`). Windows: see `windows`.
#[cfg(unix)]
mod listen;
mod manners;
mod properties;
mod readme;
mod status;
// Unix only (symlinks, `utimensat` and Unix paths). Windows: see `windows`.
#[cfg(unix)]
mod sweep_verify;
// Unix only (`chattr`, `sh` jobs and `kill`). Windows: see `windows`.
#[cfg(unix)]
mod sync_races;
// Unix only (`sh` jobs).
#[cfg(unix)]
mod trust;
mod vectors;
#[cfg(windows)]
mod windows;
