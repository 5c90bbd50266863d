//! Unix job spawn through `std::process` (other Unixes, and Linux's
//! fallback), in a process group of its own.

use std::io;
use std::process::Command;

use super::process::JobProcess;

/// See [`super::spawn_may_pass`].
pub(super) fn spawn_may_pass(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EAGAIN)
}

/// Puts the job's process in a new process group of its own.
pub(super) fn prepare_job(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
}

/// See [`super::spawn_job`]: what Linux's own spawn leaves to
/// `std::process` (a listener started with a standard descriptor closed).
pub(super) fn spawn_job(s: &super::JobSpawn<'_>) -> io::Result<JobProcess> {
    super::std_command(s).spawn().map(JobProcess::from_std)
}

/// See [`super::await_start`].
pub(super) fn await_start(
    child: &JobProcess,
    retrying: &mut dyn FnMut(&io::Error, usize),
) -> io::Result<()> {
    match &child.kept {
        Some(kept) => kept.started(retrying).map(drop),
        None => Ok(()),
    }
}
