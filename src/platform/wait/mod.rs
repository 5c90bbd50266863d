//! Waiting on a running job: its output, its exit, the bell that says a
//! control message may be waiting, and a deadline, all at once. Unix waits
//! with one `poll(2)` in the runner's thread (`poll.rs`, shared by Linux
//! and macOS; macOS's exit watch and pipe are `macos.rs`); Windows with
//! helper threads feeding one channel (`windows.rs`).

#[cfg(target_os = "macos")]
mod macos;
#[cfg(unix)]
pub(in crate::platform) mod poll;
#[cfg(windows)]
mod windows;

// `Bell::new()` and `ring()` wake a runner waiting in `JobIo::next`;
// `JobIo::new(&mut JobProcess, &Tree, &Bell)`, `streams_open()` and
// `next(until, buf) -> IoEvent` wait for a job's output, its exit, the bell
// or a deadline. Unix: one `poll(2)` in the runner's thread (a pipe for the
// bell, a pidfd for the exit on Linux, a kqueue with `NOTE_EXIT` on macOS).
// Windows: helper threads feeding one channel.
#[cfg(unix)]
pub use poll::{Bell, JobIo};
#[cfg(windows)]
pub use windows::{Bell, JobIo};

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
    /// The last output stream closed after the main process exited.
    Closed,
    /// The deadline passed.
    Timeout,
}
