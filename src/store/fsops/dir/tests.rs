//! Unit tests of the folder port: publishing never replaces and leaves no
//! temp file, reads refuse links, folders and large files, a held folder
//! stays itself.

use super::*;
use crate::base::read::FileRead;
use crate::store::fsops::Flush;

#[test]
fn publish_never_replaces_and_leaves_no_temp_file() {
    let t = tempfile::tempdir().unwrap();
    let d = Dir::open_trusted(t.path()).unwrap();
    assert!(d.publish("a.json", b"one", Flush::DataAndName).unwrap());
    assert!(!d.publish("a.json", b"two", Flush::DataAndName).unwrap());
    assert_eq!(std::fs::read(t.path().join("a.json")).unwrap(), b"one");
    assert_eq!(d.list().unwrap(), vec!["a.json".to_string()]);
}

#[test]
fn publish_all_places_each_file_never_replaces_and_leaves_no_temp_file() {
    let t = tempfile::tempdir().unwrap();
    let d = Dir::open_trusted(t.path()).unwrap();
    assert!(d.publish("b.json", b"old", Flush::DataAndName).unwrap());
    for flush in [Flush::DataAndName, Flush::Nothing] {
        let files: Vec<(String, Vec<u8>)> = ["a", "b", "c", "d"]
            .iter()
            .map(|n| (format!("{n}.json"), n.as_bytes().to_vec()))
            .collect();
        let placed: Vec<bool> = d
            .publish_all(&files, flush)
            .unwrap()
            .into_iter()
            .map(|p| p.unwrap())
            .collect();
        if flush == Flush::DataAndName {
            assert_eq!(placed, [true, false, true, true]);
        } else {
            assert_eq!(placed, [false; 4], "all taken the second time");
        }
    }
    assert_eq!(std::fs::read(t.path().join("b.json")).unwrap(), b"old");
    assert_eq!(std::fs::read(t.path().join("d.json")).unwrap(), b"d");
    let mut left = d.list().unwrap();
    left.sort();
    assert_eq!(left, ["a.json", "b.json", "c.json", "d.json"]);
}

#[test]
fn read_limited_refuses_links_folders_and_large_files() {
    let t = tempfile::tempdir().unwrap();
    let d = Dir::open_trusted(t.path()).unwrap();
    std::fs::write(t.path().join("a.json"), b"12345").unwrap();
    assert!(matches!(d.read_limited("a.json", 5), FileRead::Bytes(b) if b == b"12345"));
    assert!(matches!(d.read_limited("a.json", 4), FileRead::TooLarge(5)));
    assert!(matches!(d.read_limited("none", 4), FileRead::Missing));
    std::fs::create_dir(t.path().join("sub")).unwrap();
    assert!(matches!(
        d.read_limited("sub", 4),
        FileRead::NotAFile("directory")
    ));
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(t.path().join("a.json"), t.path().join("l.json")).unwrap();
        assert!(matches!(
            d.read_limited("l.json", 100),
            FileRead::NotAFile("symbolic link")
        ));
    }
}

#[cfg(unix)]
#[test]
fn a_folder_link_is_refused_and_a_held_folder_stays_itself_when_swapped() {
    let t = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("x.json"), b"outside").unwrap();
    let root = Dir::open_trusted(t.path()).unwrap();
    std::os::unix::fs::symlink(outside.path(), t.path().join("link")).unwrap();
    assert!(matches!(
        root.child("link").unwrap(),
        Child::NotAFolder("symbolic link")
    ));
    std::fs::write(t.path().join("file"), b"").unwrap();
    assert!(matches!(
        root.child("file").unwrap(),
        Child::NotAFolder("file")
    ));
    assert!(matches!(root.child("none").unwrap(), Child::Missing));
    let held = root.child_made("inbox").unwrap();
    // Swapped for a link to the outside folder while held.
    std::fs::rename(t.path().join("inbox"), t.path().join("old")).unwrap();
    std::os::unix::fs::symlink(outside.path(), t.path().join("inbox")).unwrap();
    assert!(!held.exists("x.json"));
    assert!(held.publish("x.json", b"ours", Flush::Nothing).unwrap());
    held.remove("x.json").unwrap();
    assert_eq!(
        std::fs::read(outside.path().join("x.json")).unwrap(),
        b"outside"
    );
}
