//! The test modules, one per area.

mod cancel;
mod cli;
mod config;
mod contrib;
// Unix only (SIGKILL, `sh` jobs and `/proc`). Windows: see `windows`.
#[cfg(unix)]
mod crash_loop;
mod generated;
mod http;
mod layers;
// Unix only (symlinks, FIFOs, `sh` jobs and `kill`). Windows: see `windows`.
#[cfg(unix)]
mod hostile;
mod listen;
mod manners;
mod properties;
mod status;
mod sweep_verify;
mod sync_races;
mod vectors;
#[cfg(windows)]
mod windows;
