//! The test modules, one per area.

mod cancel;
mod cli;
// Unix only (bash, zsh and fish drive the scripts).
#[cfg(unix)]
mod completion;
mod config;
mod contrib;
mod crash_loop;
mod generated;
mod hostile;
mod http;
mod layers;
mod listen;
mod manners;
mod operator;
mod properties;
mod readme;
mod status;
// Unix only (symbolic links swapped in a loop, `sh` jobs and `kill`).
// Windows: a held folder cannot be renamed there, see `platform`.
#[cfg(unix)]
mod swaps;
mod sweep_verify;
mod sync_races;
mod trust;
mod vectors;
#[cfg(windows)]
mod windows;
