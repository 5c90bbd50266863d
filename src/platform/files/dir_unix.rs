//! Folder handles on Unix, through `rustix`: every operation names one
//! entry of a directory held open, so nothing under the root is looked up
//! by its path again, and no link is ever followed.
//!
//! A child folder is opened with `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS)` on Linux kernels that have it (5.6 and later), else
//! with `openat(O_NOFOLLOW | O_DIRECTORY)`; the two agree for the single
//! names opened here, and the second is what every other Unix gets. Moves
//! are `renameat2(RENAME_NOREPLACE)` (`renameatx_np(RENAME_EXCL)` on macOS),
//! or a hard link then unlink where the file system refuses that.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};

use super::{Entry, EntryKind};

/// An open directory.
#[derive(Debug)]
pub struct DirHandle {
    fd: OwnedFd,
    /// Its device and inode, read at the first [`DirHandle::is_at`].
    id: std::sync::OnceLock<Option<(u64, u64)>>,
}

fn io_err(e: rustix::io::Errno) -> io::Error {
    io::Error::from_raw_os_error(e.raw_os_error())
}

/// One name, never a path: a `/` inside would reach past the folder.
fn single(name: &OsStr) -> io::Result<&OsStr> {
    let b = name.as_bytes();
    if b.is_empty() || b == b"." || b == b".." || b.contains(&b'/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{name:?} is not a single file name"),
        ));
    }
    Ok(name)
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::NONBLOCK)
    .union(OFlags::CLOEXEC);

#[cfg(target_os = "linux")]
fn open_dir_at(dir: &OwnedFd, name: &OsStr) -> io::Result<OwnedFd> {
    use std::sync::atomic::{AtomicBool, Ordering};
    // Cleared on the first sign the kernel (or a seccomp filter) lacks it.
    static HAS_OPENAT2: AtomicBool = AtomicBool::new(true);
    if HAS_OPENAT2.load(Ordering::Relaxed) {
        let resolve = rfs::ResolveFlags::BENEATH
            | rfs::ResolveFlags::NO_SYMLINKS
            | rfs::ResolveFlags::NO_MAGICLINKS;
        match rfs::openat2(dir, name, DIR_FLAGS, Mode::empty(), resolve) {
            Ok(fd) => return Ok(fd),
            Err(e)
                if e == rustix::io::Errno::NOSYS
                    || e == rustix::io::Errno::PERM
                    || e == rustix::io::Errno::TOOBIG =>
            {
                HAS_OPENAT2.store(false, Ordering::Relaxed);
            }
            Err(e) => return Err(io_err(e)),
        }
    }
    rfs::openat(dir, name, DIR_FLAGS, Mode::empty()).map_err(io_err)
}

#[cfg(not(target_os = "linux"))]
fn open_dir_at(dir: &OwnedFd, name: &OsStr) -> io::Result<OwnedFd> {
    rfs::openat(dir, name, DIR_FLAGS, Mode::empty()).map_err(io_err)
}

fn entry_of(st: &rfs::Stat) -> Entry {
    let kind = match FileType::from_raw_mode(st.st_mode as _) {
        FileType::RegularFile => EntryKind::File,
        FileType::Directory => EntryKind::Dir,
        FileType::Symlink => EntryKind::Link,
        _ => EntryKind::Other,
    };
    let modified = (st.st_mtime >= 0).then(|| {
        UNIX_EPOCH + Duration::new(st.st_mtime as u64, st.st_mtime_nsec as u32 % 1_000_000_000)
    });
    Entry {
        kind,
        len: st.st_size as u64,
        modified,
    }
}

impl DirHandle {
    fn of(fd: OwnedFd) -> DirHandle {
        DirHandle {
            fd,
            id: std::sync::OnceLock::new(),
        }
    }

    /// True when `name` in `parent` (with no parent: the path `name`, links
    /// followed on the way but not at its end) is still this folder. An
    /// inode cannot be reused while this handle keeps it, so the same
    /// device and inode mean the very folder that was opened.
    pub fn is_at(&self, parent: Option<&DirHandle>, name: &OsStr) -> bool {
        // The fields' types differ between systems (`st_dev` is an i32 on
        // macOS); only equality matters.
        #[allow(clippy::unnecessary_cast)]
        let id = |st: &rfs::Stat| Some((st.st_dev as u64, st.st_ino as u64));
        let held = *self
            .id
            .get_or_init(|| rfs::fstat(&self.fd).ok().and_then(|st| id(&st)));
        let now = match parent {
            Some(p) => single(name)
                .ok()
                .and_then(|n| rfs::statat(&p.fd, n, AtFlags::SYMLINK_NOFOLLOW).ok()),
            None => rfs::lstat(Path::new(name)).ok(),
        };
        held.is_some() && now.and_then(|st| id(&st)) == held
    }

    /// Opens the folder at `path`, following links on the way: only for a
    /// folder the user named (the dispatch root), never for one under it.
    pub fn open_trusted(path: &Path) -> io::Result<DirHandle> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = rfs::open(path, flags, Mode::empty()).map_err(io_err)?;
        Ok(DirHandle::of(fd))
    }

    /// Opens the child folder `name` (`shown` is its path, for Windows),
    /// refusing a link ([`super::is_link_error`]) or anything but a folder
    /// (`NotADirectory`).
    pub fn open_child(&self, name: &OsStr, _shown: &Path) -> io::Result<DirHandle> {
        let name = single(name)?;
        match open_dir_at(&self.fd, name) {
            Ok(fd) => Ok(DirHandle::of(fd)),
            // Name the refusal by what is there: O_NOFOLLOW answers ELOOP or
            // ENOTDIR for a link, depending on the system.
            Err(e) => match self.entry(name).map(|m| m.kind) {
                Ok(EntryKind::Link) => Err(io::Error::from_raw_os_error(libc::ELOOP)),
                Ok(EntryKind::File | EntryKind::Other) => {
                    Err(io::Error::from_raw_os_error(libc::ENOTDIR))
                }
                _ => Err(e),
            },
        }
    }

    /// Makes the folder `name`; `AlreadyExists` when anything has the name.
    pub fn create_dir(&self, name: &OsStr) -> io::Result<()> {
        rfs::mkdirat(&self.fd, single(name)?, Mode::from_raw_mode(0o777)).map_err(io_err)
    }

    /// What the entry `name` is, without following a link (`lstat`).
    pub fn entry(&self, name: &OsStr) -> io::Result<Entry> {
        rfs::statat(&self.fd, single(name)?, AtFlags::SYMLINK_NOFOLLOW)
            .map(|st| entry_of(&st))
            .map_err(io_err)
    }

    /// Opens the file `name` for reading, never following a link
    /// (`ELOOP`) and never blocking on a FIFO.
    pub fn open_read(&self, name: &OsStr) -> io::Result<File> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = rfs::openat(&self.fd, single(name)?, flags, Mode::empty()).map_err(io_err)?;
        Ok(File::from(fd))
    }

    /// Creates the new file `name` for writing (`O_CREAT | O_EXCL`, which
    /// never follows a link): `AlreadyExists` when anything has the name.
    pub fn create_new(&self, name: &OsStr) -> io::Result<File> {
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mode = Mode::from_raw_mode(0o666);
        let fd = rfs::openat(&self.fd, single(name)?, flags, mode).map_err(io_err)?;
        Ok(File::from(fd))
    }

    /// Moves the entry `from` to `to` in `dest` (this folder or another),
    /// failing with `AlreadyExists` when `to` is taken. A link is moved as
    /// itself.
    pub fn rename_no_replace(&self, from: &OsStr, dest: &DirHandle, to: &OsStr) -> io::Result<()> {
        let (from, to) = (single(from)?, single(to)?);
        #[cfg(any(target_os = "linux", target_os = "android", target_vendor = "apple"))]
        {
            match rfs::renameat_with(&self.fd, from, &dest.fd, to, rfs::RenameFlags::NOREPLACE) {
                Ok(()) => return Ok(()),
                // Filesystems without the flag (some network mounts) answer
                // EINVAL (ENOTSUP on macOS): the hard-link route below.
                Err(e)
                    if e == rustix::io::Errno::INVAL
                        || e == rustix::io::Errno::NOSYS
                        || e == rustix::io::Errno::NOTSUP => {}
                Err(e) => return Err(io_err(e)),
            }
        }
        rfs::linkat(&self.fd, from, &dest.fd, to, AtFlags::empty()).map_err(io_err)?;
        rfs::unlinkat(&self.fd, from, AtFlags::empty()).map_err(io_err)
    }

    /// Moves the entry `from` to `to` in `dest`, replacing what is there.
    pub fn rename_replace(&self, from: &OsStr, dest: &DirHandle, to: &OsStr) -> io::Result<()> {
        rfs::renameat(&self.fd, single(from)?, &dest.fd, single(to)?).map_err(io_err)
    }

    /// Removes the entry `name` (a link is removed, never what it names;
    /// a folder is refused).
    pub fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        rfs::unlinkat(&self.fd, single(name)?, AtFlags::empty()).map_err(io_err)
    }

    /// The names in this folder (without `.` and `..`).
    pub fn names(&self) -> io::Result<Vec<OsString>> {
        let mut out = Vec::new();
        for e in rfs::Dir::read_from(&self.fd).map_err(io_err)? {
            let e = e.map_err(io_err)?;
            let n = e.file_name().to_bytes();
            if n != b"." && n != b".." {
                out.push(OsStr::from_bytes(n).to_os_string());
            }
        }
        Ok(out)
    }

    /// Flushes this folder's entries to disk, best effort.
    pub fn sync(&self) {
        let _ = rfs::fsync(&self.fd);
    }

    /// Flushes the files `names`, written in this folder and closed since:
    /// one `syncfs` for three or more on Linux (one flush for them all,
    /// six times quicker than each file's own at 1,000 files; see
    /// bench/README.md), each file reopened and flushed elsewhere. No file
    /// need stay open until the flush, so a batch of any size holds one
    /// descriptor at a time.
    pub fn sync_names(&self, names: &[&OsStr]) -> io::Result<()> {
        #[cfg(target_os = "linux")]
        if names.len() >= 3 {
            return rfs::syncfs(&self.fd).map_err(io_err);
        }
        names.iter().try_for_each(|n| self.open_read(n)?.sync_all())
    }

    /// The folder's own modification time.
    pub fn modified(&self) -> Option<SystemTime> {
        rfs::fstat(self.fd.as_fd())
            .ok()
            .and_then(|st| entry_of(&st).modified)
    }
}
