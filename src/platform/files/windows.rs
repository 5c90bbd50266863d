//! Windows file operations: `MoveFileExW` without replace for moves,
//! opens with `FILE_FLAG_OPEN_REPARSE_POINT` that never follow a link or
//! junction, the sharing and lock violations worth retrying, and a cloud
//! folder's residency read from its attributes.

use std::fs::File;
use std::io;
use std::os::windows::fs::OpenOptionsExt;
use std::os::windows::io::AsRawHandle;
use std::path::Path;

use windows_sys::Win32::Foundation::{
    ERROR_ACCESS_DENIED, ERROR_LOCK_VIOLATION, ERROR_SHARING_VIOLATION, ERROR_STOPPED_ON_SYMLINK,
};
use windows_sys::Win32::Storage::FileSystem::{
    FILE_ATTRIBUTE_REPARSE_POINT, FILE_ATTRIBUTE_TAG_INFO, FILE_FLAG_OPEN_REPARSE_POINT,
    FileAttributeTagInfo, GetFileInformationByHandleEx, MOVEFILE_WRITE_THROUGH, MoveFileExW,
};

use crate::platform::win32::wide;

/// Moves `from` to `to`, failing with `AlreadyExists` when `to` exists:
/// `MoveFileExW` without `MOVEFILE_REPLACE_EXISTING` answers
/// `ERROR_ALREADY_EXISTS` or `ERROR_FILE_EXISTS`, both of which std maps to
/// `AlreadyExists`.
pub(super) fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    let (f, t) = (wide(from.as_os_str())?, wide(to.as_os_str())?);
    // SAFETY: both are NUL-terminated paths.
    if unsafe { MoveFileExW(f.as_ptr(), t.as_ptr(), MOVEFILE_WRITE_THROUGH) } != 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Failures worth retrying: a handle held by a virus scanner, an indexer or
/// OneDrive (sharing and lock violations; access denied is also what a file
/// pending deletion answers).
pub(super) fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error().map(|c| c as u32),
        Some(ERROR_SHARING_VIOLATION) | Some(ERROR_LOCK_VIOLATION) | Some(ERROR_ACCESS_DENIED)
    )
}

/// Flushes a directory's entries to disk: nothing to do on Windows, where
/// NTFS journals a rename before it returns and a directory cannot be opened
/// for flushing without privileges.
pub(super) fn sync_dir(_dir: &Path) {}

/// Creates a new file for writing, failing if anything (a link included)
/// already has the name: with `FILE_FLAG_OPEN_REPARSE_POINT` the name itself
/// is checked, so a planted link is never followed to create its target.
pub(super) fn create_new_no_follow(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
        .open(path)
}

/// Opens the existing file `path` for writing without following a final
/// symbolic link or junction (to flush a file written and closed before).
pub(super) fn open_write_no_follow(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
        .open(path)
}

/// Opens for reading without following a final symbolic link or junction.
///
/// `FILE_FLAG_OPEN_REPARSE_POINT` opens a link as itself; other reparse
/// points (OneDrive's cloud placeholders) are reopened normally so the sync
/// engine can supply their content.
pub(super) fn open_no_follow(path: &Path) -> io::Result<File> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
        .open(path)?;
    let mut tag = FILE_ATTRIBUTE_TAG_INFO::default();
    // SAFETY: `tag` is valid for its size; the handle is open.
    let ok = unsafe {
        GetFileInformationByHandleEx(
            f.as_raw_handle(),
            FileAttributeTagInfo,
            (&mut tag as *mut FILE_ATTRIBUTE_TAG_INFO).cast(),
            size_of::<FILE_ATTRIBUTE_TAG_INFO>() as u32,
        )
    };
    if ok == 0 || tag.FileAttributes & FILE_ATTRIBUTE_REPARSE_POINT == 0 {
        return Ok(f);
    }
    // Name surrogates (symbolic links, junctions) point elsewhere: refuse.
    if tag.ReparseTag & 0x2000_0000 != 0 {
        return Err(io::Error::from_raw_os_error(
            ERROR_STOPPED_ON_SYMLINK as i32,
        ));
    }
    drop(f);
    std::fs::OpenOptions::new().read(true).open(path)
}

/// True when an open failed because the path was a link (see
/// [`open_no_follow`]).
pub(super) fn is_link_error(e: &io::Error) -> bool {
    e.raw_os_error() == Some(ERROR_STOPPED_ON_SYMLINK as i32)
}

/// The folder's residency marks, from its attributes (opened for
/// attributes only: nothing is downloaded).
pub fn residency(path: &Path) -> super::Residency {
    use std::os::windows::fs::MetadataExt;
    // Cloud Files attributes (winnt.h); spelled here so the check needs no
    // further windows-sys feature.
    const PINNED: u32 = 0x0008_0000;
    const UNPINNED: u32 = 0x0010_0000;
    const RECALL_ON_OPEN: u32 = 0x0004_0000;
    const RECALL_ON_DATA_ACCESS: u32 = 0x0040_0000;
    let Ok(attrs) = std::fs::metadata(path).map(|m| m.file_attributes()) else {
        return super::Residency::Unknown;
    };
    if attrs & PINNED != 0 {
        super::Residency::Pinned
    } else if attrs & (UNPINNED | RECALL_ON_OPEN | RECALL_ON_DATA_ACCESS) != 0 {
        super::Residency::OnlineOnly
    } else {
        super::Residency::Unmarked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_replace_move_refuses_an_existing_name_in_any_case() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
        std::fs::write(&a, "a").unwrap();
        std::fs::write(&b, "b").unwrap();
        let e = rename_no_replace(&a, &b).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{e:?}");
        // Windows folders are case-insensitive: B.JSON is b.json.
        let e = rename_no_replace(&a, &dir.path().join("B.JSON")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{e:?}");
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "a");
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "b");
        rename_no_replace(&a, &dir.path().join("c.json")).unwrap();
        assert!(!a.exists());
    }

    #[test]
    fn sharing_and_lock_violations_are_transient() {
        for code in [5, 32, 33] {
            assert!(is_transient(&io::Error::from_raw_os_error(code)), "{code}");
        }
        assert!(!is_transient(&io::Error::from_raw_os_error(2)));
        assert!(!is_transient(&io::Error::from_raw_os_error(183)));
    }

    #[test]
    fn a_new_file_never_takes_a_name_in_use() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.log");
        std::io::Write::write_all(&mut create_new_no_follow(&p).unwrap(), b"x").unwrap();
        let e = create_new_no_follow(&p).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&p).unwrap(), b"x");
    }

    #[test]
    #[ignore = "Wine 8 cannot make symbolic links (CreateSymbolicLinkW succeeds, no link appears); \
                on Windows run with --ignored, with Developer Mode or as an administrator"]
    fn links_are_neither_read_through_nor_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.json");
        std::fs::write(&target, "secret").unwrap();
        let link = dir.path().join("link.json");
        std::os::windows::fs::symlink_file(&target, &link).unwrap();
        assert!(is_link_error(&open_no_follow(&link).unwrap_err()));
        let dangling = dir.path().join("dangling.log");
        std::os::windows::fs::symlink_file(dir.path().join("elsewhere"), &dangling).unwrap();
        assert!(create_new_no_follow(&dangling).is_err());
        assert!(
            !dir.path().join("elsewhere").exists(),
            "written through the link"
        );
    }

    #[test]
    #[ignore = "Wine 8 cannot make junctions (`mklink /J` exits 0 and no junction appears); \
                on Windows run with --ignored (a junction needs no privilege)"]
    fn a_junction_in_place_of_a_folder_is_never_entered() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("a.json"), "secret").unwrap();
        let junction = dir.path().join("inbox");
        let made = std::process::Command::new("cmd")
            .arg("/C")
            .arg("mklink")
            .arg("/J")
            .arg(&junction)
            .arg(&elsewhere)
            .status()
            .unwrap();
        assert!(made.success() && junction.exists(), "no junction was made");
        let root = crate::platform::DirHandle::open_trusted(dir.path()).unwrap();
        let name = std::ffi::OsStr::new("inbox");
        assert!(matches!(
            root.entry(name).unwrap().kind,
            crate::platform::EntryKind::Link
        ));
        match root.open_child(name, &junction) {
            Ok(_) => panic!("entered a junction"),
            Err(e) => assert!(is_link_error(&e), "{e}"),
        }
    }

    #[test]
    fn reads_do_not_follow_but_do_read_plain_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        std::fs::write(&p, "12345").unwrap();
        let mut s = String::new();
        std::io::Read::read_to_string(&mut open_no_follow(&p).unwrap(), &mut s).unwrap();
        assert_eq!(s, "12345");
        assert!(is_link_error(&io::Error::from_raw_os_error(
            ERROR_STOPPED_ON_SYMLINK as i32
        )));
    }
}
