//! Key-file permissions: who else may read or change a secret, and how a
//! file only its owner can open is made. `unix.rs` (mode bits) or
//! `windows.rs` (the DACL) implements each function under the same name.

use std::fs::File;
use std::io;
use std::path::Path;

use crate::base::error::Result;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as imp;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as imp;

/// Refuses a key file others could read or change, with a `CONFIG` error
/// naming the file (and, on Unix, the `chmod 600` hint); also `CONFIG` when
/// the file cannot be read. Unix: any group or other mode bit. Windows: a
/// DACL granting read or write to anyone but the owner, the current user,
/// SYSTEM and Administrators (deny entries are not weighed).
pub fn check_key_permissions(path: &Path) -> Result<()> {
    imp::check_key_permissions(path)
}

/// Creates a new file only its owner can open (mode 600 on Unix; a
/// protected owner-and-SYSTEM DACL set at creation on Windows). Fails with
/// `AlreadyExists` when the name is taken.
pub fn create_private(path: &Path) -> io::Result<File> {
    imp::create_private(path)
}
