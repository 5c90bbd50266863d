//! The test modules, one per area.

mod advice;
mod batch;
mod cancel;
mod cli;
// Unix only (bash, zsh and fish drive the scripts).
#[cfg(unix)]
mod completion;
mod config;
mod contrib;
mod crash_loop;
mod deps;
mod doctor;
mod fanout;
mod first_hour;
mod generated;
mod hostile;
mod http;
mod identity;
mod install;
mod layers;
mod listen;
mod logs;
mod manners;
mod mcp;
mod migrate;
mod objstore;
mod objstore_cmds;
mod objstore_listen;
mod objstore_outage;
mod objstore_roster;
mod operator;
mod pickup;
mod properties;
mod readme;
mod refusals;
mod report;
mod retention;
mod roster;
mod seal;
mod service;
mod short_ids;
mod slots;
mod status;
mod stops;
// Unix only: every test swaps a folder for a symbolic link and back, and
// Wine cannot create symbolic links (on Windows a folder held open cannot
// be renamed at all, see `platform`); the listener stops with SIGTERM.
#[cfg(unix)]
mod swaps;
mod sweep_verify;
mod sync_races;
mod trust;
mod vectors;
mod waits;
#[cfg(windows)]
mod windows;
