//! The test modules, one per area.

mod cancel;
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
mod http;
mod layers;
// Unix only (symlinks, FIFOs, `sh` jobs and `kill`). Windows: see `windows`.
#[cfg(unix)]
mod hostile;
mod listen;
mod logs;
mod manners;
mod operator;
mod properties;
mod readme;
mod retention;
mod status;
mod stops;
// Unix only (symbolic links swapped in a loop, `sh` jobs and `kill`).
// Windows: a held folder cannot be renamed there, see `platform`.
#[cfg(unix)]
mod swaps;
mod sweep_verify;
mod sync_races;
// Unix only (`sh` jobs).
#[cfg(unix)]
mod trust;
mod vectors;
#[cfg(windows)]
mod windows;
