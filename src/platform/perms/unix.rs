//! Unix key-file permissions: the mode bits.

use std::fs::File;
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use crate::base::error::{Error, Result};

/// Refuses a key file readable or writable by group or others.
pub(super) fn check_key_permissions(path: &Path) -> Result<()> {
    let meta = std::fs::metadata(path)
        .map_err(|e| Error::config(format!("cannot read key file {}: {e}", path.display())))?;
    let mode = meta.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(Error::config(format!(
            "key file {} is readable by others (mode {:03o})",
            path.display(),
            mode & 0o777
        ))
        .hint(format!("run `chmod 600 {}`", path.display())));
    }
    Ok(())
}

/// Creates a new file only its owner can read.
pub(super) fn create_private(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}
