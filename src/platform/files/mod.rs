//! File operations that differ between systems: moves that never replace,
//! opens that never follow a link, folder handles, the failures worth
//! retrying, and a cloud folder's residency.
//!
//! This file declares the interface; `unix.rs` or `windows.rs` implements
//! each function under the same name and signature, and `dir_unix.rs` or
//! `dir_windows.rs` the folder handle. The leaves never name one another:
//! what `dir_windows.rs` needs of `windows.rs` it asks of this file.

use std::fs::File;
use std::io;
use std::path::Path;

#[cfg(unix)]
mod dir_unix;
#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as imp;

#[cfg(windows)]
mod dir_windows;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as imp;

// An open folder, for operations on its entries by name. Every platform
// provides `DirHandle::open_trusted(&Path)` (a folder the user named; links
// on the way are followed), `open_child(name, shown)` (refusing a link, an
// error `is_link_error` recognises, or anything but a folder,
// `NotADirectory`), `create_dir`, `entry` (lstat), `open_read` (never
// following a link, never blocking on a FIFO), `create_new` (exclusive,
// never through a link), `rename_no_replace` and `rename_replace` (to a
// name in this or another handle's folder), `remove_file`, `names`,
// `sync`, `sync_names(&[&OsStr])` and `modified`. Unix: descriptors and the
// `*at` calls (`openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` on
// Linux where the kernel has it, `O_NOFOLLOW | O_DIRECTORY` otherwise,
// `renameat2(RENAME_NOREPLACE)`, `unlinkat`). Windows: a handle held
// without delete sharing pins the folder in place while path operations
// name its entries.
#[cfg(unix)]
pub use dir_unix::DirHandle;
#[cfg(windows)]
pub use dir_windows::DirHandle;

/// What a folder entry is, as `lstat` tells it (a link is never followed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A folder.
    Dir,
    /// A symbolic link (on Windows also a junction).
    Link,
    /// A FIFO, socket or device.
    Other,
}

/// One folder entry's kind, size and modification time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// What it is.
    pub kind: EntryKind,
    /// Its size in bytes.
    pub len: u64,
    /// When it last changed, where the system says.
    pub modified: Option<std::time::SystemTime>,
}

/// Moves `from` to `to`, failing with `AlreadyExists` when `to` exists, so
/// a name already taken is an answer, never overwritten. Unix:
/// `renameat2(RENAME_NOREPLACE)` on Linux, `renameatx_np(RENAME_EXCL)` on
/// macOS, else (or where the file system refuses it) a hard link then
/// unlink. Windows: `MoveFileExW` without
/// replace.
pub fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    imp::rename_no_replace(from, to)
}

/// True for failures worth retrying later: a handle held for a while by a
/// scanner or sync client (Unix: `EACCES`, `EPERM`, `EBUSY`, `EAGAIN`,
/// `ETXTBSY`; Windows: sharing and lock violations, access denied).
pub fn is_transient(e: &io::Error) -> bool {
    imp::is_transient(e)
}

/// Flushes a directory's entries to disk, best effort (errors are
/// ignored). A no-op on Windows, where NTFS journals a rename before it
/// returns.
pub fn sync_dir(dir: &Path) {
    imp::sync_dir(dir)
}

/// Creates a new file for writing, failing (`AlreadyExists`) if anything,
/// a symbolic link included, already has the name: a planted link is never
/// followed (`O_NOFOLLOW` on Unix, `FILE_FLAG_OPEN_REPARSE_POINT` on
/// Windows).
pub fn create_new_no_follow(path: &Path) -> io::Result<File> {
    imp::create_new_no_follow(path)
}

/// Opens a file for reading without following a final symbolic link (an
/// error [`is_link_error`] recognises). Unix also never blocks on a FIFO;
/// Windows refuses links and junctions but opens cloud placeholders
/// normally, so the sync engine can supply their content.
pub fn open_no_follow(path: &Path) -> io::Result<File> {
    imp::open_no_follow(path)
}

/// True when [`open_no_follow`] failed because the path was a link
/// (`ELOOP` on Unix, `ERROR_STOPPED_ON_SYMLINK` on Windows).
pub fn is_link_error(e: &io::Error) -> bool {
    imp::is_link_error(e)
}

/// Makes an open with `options` return at once on a FIFO with no writer
/// (`O_NONBLOCK` on Unix; Windows has no such wait). Reads of a regular
/// file ignore it.
pub fn never_block_on_open(options: &mut std::fs::OpenOptions) {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(options, imp::NONBLOCK);
    #[cfg(not(unix))]
    let _ = options;
}

/// Opens the existing file `path` for writing without following a final
/// link or junction (Windows: to flush a file written and closed before,
/// by name, from a folder handle).
#[cfg(windows)]
fn open_write_no_follow(path: &Path) -> io::Result<File> {
    imp::open_write_no_follow(path)
}

/// What a cloud sync engine says about keeping a folder's files on this
/// device, for `doctor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Residency {
    /// Marked "Always keep on this device": its files stay downloaded.
    Pinned,
    /// Marked online-only, or its content is fetched when opened: a
    /// listener started without a user session (Task Scheduler) may be
    /// unable to read it.
    OnlineOnly,
    /// No mark either way: a plain folder, or a cloud folder left to the
    /// engine's default.
    Unmarked,
    /// The platform has no such marks (every Unix).
    Unknown,
}

/// The residency of the folder at `path` (links followed: the root is a
/// folder the user named). Windows: from its attributes, read without
/// opening its content so nothing is downloaded: `FILE_ATTRIBUTE_PINNED`
/// is [`Residency::Pinned`]; `UNPINNED`, `RECALL_ON_OPEN` or
/// `RECALL_ON_DATA_ACCESS` is [`Residency::OnlineOnly`]. Unix: always
/// [`Residency::Unknown`]. The marks come from the Cloud Files API, which
/// Wine does not provide, so only a real Windows machine with OneDrive can
/// show the first two answers.
pub fn residency(path: &Path) -> Residency {
    imp::residency(path)
}
