//! Windows job spawn: std's `Child`, started suspended in a console
//! process group of its own.

use std::io;
use std::os::windows::process::CommandExt;
use std::process::Command;

use windows_sys::Win32::Foundation::{ERROR_INTERNAL_ERROR, ERROR_NO_SYSTEM_RESOURCES};
use windows_sys::Win32::System::Threading::{CREATE_NEW_PROCESS_GROUP, CREATE_SUSPENDED};

/// See [`super::spawn_may_pass`].
pub(super) fn spawn_may_pass(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error().map(|c| c as u32),
        Some(ERROR_NO_SYSTEM_RESOURCES) | Some(ERROR_INTERNAL_ERROR)
    )
}

/// A job's process: std's own.
pub type JobProcess = std::process::Child;

/// See [`super::spawn_job`].
/// See [`super::await_start`]: a job here has no keeper, and has
/// started once spawned.
pub(super) fn await_start(
    _child: &JobProcess,
    _retrying: &mut dyn FnMut(&io::Error, usize),
) -> io::Result<()> {
    Ok(())
}

pub(super) fn spawn_job(s: &super::JobSpawn<'_>) -> io::Result<JobProcess> {
    super::std_command(s).spawn()
}

/// Starts the job's process suspended, in a console process group of its
/// own: [`Tree::adopt`] puts it in its Job Object before it runs a single
/// instruction, then resumes it.
pub(in crate::platform) fn prepare_job(cmd: &mut Command) {
    cmd.creation_flags(CREATE_NEW_PROCESS_GROUP | CREATE_SUSPENDED);
}
