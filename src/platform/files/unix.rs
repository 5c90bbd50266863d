//! Unix file operations: `renameat2(RENAME_NOREPLACE)` on Linux and
//! `renameatx_np(RENAME_EXCL)` on macOS (a hard link then unlink where the
//! file system refuses either, and on other Unixes), `O_NOFOLLOW` opens, and
//! the error numbers worth retrying.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

fn cstr(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

/// Moves `from` to `to`, failing with `AlreadyExists` when `to` exists.
pub(super) fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let (f, t) = (cstr(from)?, cstr(to)?);
        // SAFETY: both are valid NUL-terminated paths; AT_FDCWD resolves them
        // relative to the working directory like rename(2).
        let rc = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                f.as_ptr(),
                libc::AT_FDCWD,
                t.as_ptr(),
                libc::RENAME_NOREPLACE,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        // Filesystems without RENAME_NOREPLACE (some network mounts) answer
        // EINVAL; fall back to the hard-link route below.
        if !matches!(err.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOSYS)) {
            return Err(err);
        }
    }
    #[cfg(target_os = "macos")]
    {
        let (f, t) = (cstr(from)?, cstr(to)?);
        // SAFETY: both are valid NUL-terminated paths; AT_FDCWD resolves them
        // relative to the working directory like rename(2).
        let rc = unsafe {
            libc::renameatx_np(
                libc::AT_FDCWD,
                f.as_ptr(),
                libc::AT_FDCWD,
                t.as_ptr(),
                libc::RENAME_EXCL,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        // File systems without RENAME_EXCL answer ENOTSUP (or EINVAL).
        if !matches!(
            err.raw_os_error(),
            Some(libc::EINVAL) | Some(libc::ENOTSUP) | Some(libc::ENOSYS)
        ) {
            return Err(err);
        }
    }
    std::fs::hard_link(from, to)?;
    std::fs::remove_file(from)
}

/// Failures worth retrying: a handle held by a scanner or sync client.
pub(super) fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EACCES)
            | Some(libc::EPERM)
            | Some(libc::EBUSY)
            | Some(libc::EAGAIN)
            | Some(libc::ETXTBSY)
    )
}

/// Flushes a directory's entries to disk; best effort.
pub(super) fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// The open flag of [`super::never_block_on_open`].
pub(super) const NONBLOCK: i32 = libc::O_NONBLOCK;

/// Creates a new file for writing, failing if anything (a link included)
/// already has the name.
pub(super) fn create_new_no_follow(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// Opens for reading without following a final symlink and without
/// blocking on a FIFO.
pub(super) fn open_no_follow(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
}

/// True when an open failed because the path was a symlink.
pub(super) fn is_link_error(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

/// Unix has no cloud-file residency marks.
pub fn residency(_path: &Path) -> super::Residency {
    super::Residency::Unknown
}
