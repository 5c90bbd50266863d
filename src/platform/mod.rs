//! Everything that differs between operating systems, declared here once
//! for the rest of the crate, which names it only as `crate::platform::…`.
//!
//! One folder per concern: `files/` (moves that never replace, opens that
//! never follow a link, folder handles, transient failures, residency),
//! `perms/` (key-file permissions), `host/` (host name, thread priority,
//! the allocator), `spawn/` (a job's process), `procs/` (process trees,
//! signals, orphans) and `wait/` (a job's output and exit, the bell). Each
//! concern's `mod.rs` declares its interface, one documented function or
//! type each saying its errors and how the platforms differ, and hands the
//! call to the implementation compiled in. The OS leaf files (`unix.rs`,
//! `linux.rs`, `macos.rs`, `windows.rs`, `dir_unix.rs`, `dir_windows.rs`)
//! never name one another: what Linux and macOS share is a file of its own
//! in that concern (`procs/tree.rs`, `spawn/process.rs`, `wait/poll.rs`),
//! and what every Windows leaf shares is `win32.rs`. `tests/suite/layers.rs`
//! checks it.
//!
//! All the crate's `unsafe` lives in this module's implementations, each
//! block with its `SAFETY:` reason.

mod files;
mod host;
mod perms;
mod procs;
mod spawn;
mod wait;
#[cfg(windows)]
mod win32;

pub use files::{
    DirHandle, Entry, EntryKind, Residency, create_new_no_follow, is_link_error, is_transient,
    never_block_on_open, open_no_follow, rename_no_replace, residency, sync_dir,
};
pub use host::{hostname, lower_thread_priority, tune_allocator};
pub use perms::{check_key_permissions, create_private};
pub use procs::{
    Orphaned, Signal, Tree, become_subreaper, exit_signal, is_alive, kill_tree_now, orphans,
    reap_orphans_beside, signal_name, signal_pids, terminate,
};
pub use spawn::{JobProcess, JobSpawn, await_start, spawn_job, spawn_may_pass};
pub use wait::{Bell, IoEvent, JobIo, Stream};
