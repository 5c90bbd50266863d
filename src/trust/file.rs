//! Key files: loading the fleet key (docs/protocol.md §4.2) and writing a
//! new one (`keygen`). The only file reading of [`crate::trust`]; what a
//! file's text holds is judged by [`judge_file_text`], one rule for every
//! command and `doctor`.

use std::io::Write;
use std::path::Path;

use crate::base::error::{Error, Result};
use crate::base::read::FileRead;

use super::{Key, MIN_KEY_BYTES};

/// The largest key file read, in bytes: `keygen` writes 65, so anything
/// much longer is not a key file, and a bound keeps a file that never ends
/// from being read into memory.
pub const MAX_KEY_FILE_BYTES: u64 = 4096;

/// The advice for a key file that is no key file: the setting names some
/// other file.
pub const POINT_AT_KEY: &str = "point --key-file, FLEET_DISPATCH_KEY_FILE or key_file at the key file `fleet-dispatch keygen` wrote";

impl Key {
    /// A key from the text of a key file: trailing ASCII whitespace trimmed.
    pub fn from_file_text(text: &[u8]) -> Option<Key> {
        Key::from_bytes(&text[..trimmed_len(text)])
    }

    /// Loads the key file at `path`, refusing with `CONFIG` a missing or
    /// short one, anything but a regular file (a FIFO is never waited on, a
    /// device never read), one over [`MAX_KEY_FILE_BYTES`], and one others
    /// may read (docs/protocol.md §4.2): a key with the advice to make it
    /// private, a file that does not look like a key as not a key file.
    pub fn load(path: &Path) -> Result<Key> {
        let text = match crate::store::fsops::read_local(path, MAX_KEY_FILE_BYTES) {
            FileRead::Bytes(t) => t,
            FileRead::Missing => {
                return Err(Error::config(format!("no key file at {}", path.display()))
                    .hint("run `fleet-dispatch keygen` on one machine, then copy the file to the others out of band (never into the synced folder)"));
            }
            FileRead::NotAFile(kind) => {
                return Err(Error::config(format!(
                    "key file {} is a {kind}, not a regular file; it was not read",
                    path.display()
                ))
                .hint(POINT_AT_KEY));
            }
            FileRead::TooLarge(_) => {
                return Err(Error::config(format!(
                    "key file {} holds more than {MAX_KEY_FILE_BYTES} bytes; a key file holds one key (keygen writes 65 bytes)",
                    path.display()
                ))
                .hint(POINT_AT_KEY));
            }
            FileRead::Unreadable(e) => {
                return Err(Error::config(format!(
                    "cannot read key file {}: {e}",
                    path.display()
                )));
            }
        };
        // What the file holds is judged before who may read it: advice to
        // make `/etc/hostname` private would protect nothing. A file that
        // could be a key is still refused when others may read it.
        let not_a_key = |why: String| {
            Error::config(format!(
                "{} is not a fleet key file ({why})",
                path.display()
            ))
            // Never `keygen --force` here: it would write over that file.
            .hint(POINT_AT_KEY)
        };
        let exposed = crate::platform::check_key_permissions(path);
        let key = judge_file_text(&text, exposed.is_err()).map_err(not_a_key)?;
        exposed.map(|()| key)
    }
}

/// The length of a key file's text once its trailing whitespace is trimmed.
fn trimmed_len(text: &[u8]) -> usize {
    text.iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |i| i + 1)
}

/// What a key file's `text` holds: the key, or why it is no key file (too
/// short; or, when others may read it (`exposed`), several lines or bytes
/// that are not text: some other file the setting names, not a key to make
/// private). One rule for every command and `doctor`.
pub fn judge_file_text(text: &[u8], exposed: bool) -> std::result::Result<Key, String> {
    let Some(key) = Key::from_file_text(text) else {
        return Err(format!(
            "it holds {} bytes; a key holds at least {MIN_KEY_BYTES}, and keygen writes 64 hex characters",
            trimmed_len(text)
        ));
    };
    match unlike_a_key(text).filter(|_| exposed) {
        Some(why) => Err(why),
        None => Ok(key),
    }
}

/// Why a file long enough to be a key looks like something else: a key is
/// one line of printable text (keygen writes 64 hex characters), never a
/// file of several lines or of bytes that are not text.
fn unlike_a_key(text: &[u8]) -> Option<String> {
    let text = &text[..trimmed_len(text)];
    let lines = text.split(|b| *b == b'\n').count();
    if lines > 1 {
        return Some(format!(
            "it holds {lines} lines; a key file holds one, as keygen writes it"
        ));
    }
    text.iter()
        .any(|b| !(b.is_ascii_graphic() || *b == b' '))
        .then(|| {
            "it holds bytes that are not printable text; keygen writes 64 hex characters"
                .to_string()
        })
}

/// Writes a new key file: 32 random bytes as 64 hex characters and a newline,
/// mode 600, written beside `path` and moved into place. Refuses an existing
/// file unless `force` (`VALIDATION_ERROR`); even with `force`, refuses
/// anything at `path` but a regular file (a link, directory, FIFO, socket or
/// device) with `CONFIG`, and nothing is written: `--force` replaces an old
/// key file, never whatever else has its name.
pub fn generate(path: &Path, force: bool) -> Result<()> {
    let mut raw = [0u8; 32];
    crate::base::random::fill(&mut raw);
    let text = format!("{}\n", hex::encode(raw));
    write_private(
        path,
        &text,
        force,
        |p| may_take_place(p, force),
        already_exists,
    )
}

/// Writes a secret file: beside `path` with owner-only permissions from the
/// start, then moved into place, so the secret is never briefly readable by
/// others. `may_take` judges what is at `path` first, and again just before
/// a replacing rename (`force`), so what appeared there meanwhile is
/// refused too; without `force` nothing is ever replaced and a name taken
/// meanwhile is `taken`'s error. The temp file is removed on any failure.
pub(crate) fn write_private(
    path: &Path,
    text: &str,
    force: bool,
    may_take: impl Fn(&Path) -> Result<()>,
    taken: impl Fn(&Path) -> Error,
) -> Result<()> {
    may_take(path)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::io("create directory", dir, &e))?;
    }
    let tmp = crate::store::fsops::temp_path(path);
    let mut f = crate::platform::create_private(&tmp).map_err(|e| Error::io("create", &tmp, &e))?;
    let written = f
        .write_all(text.as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(|e| Error::io("write", &tmp, &e));
    drop(f);
    let moved = written.and_then(|_| {
        if force {
            may_take(path)?;
            std::fs::rename(&tmp, path).map_err(|e| Error::io("replace", path, &e))
        } else if crate::store::fsops::move_no_replace(&tmp, path)? {
            Ok(())
        } else {
            Err(taken(path))
        }
    });
    if moved.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    moved
}

/// Whether a new key file may take `path`: yes when nothing is there, or a
/// regular file is and `force` allows replacing it. The entry is looked at
/// itself, never through a link: a link is refused, not replaced, and what
/// it points to is never touched.
fn may_take_place(path: &Path, force: bool) -> Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        // Nothing there (or nothing this user may look at: creating the
        // temp file beside it then says why).
        return Ok(());
    };
    if !meta.is_file() {
        let kind = crate::store::fsops::local_kind_word(meta.file_type());
        return Err(Error::config(format!(
            "key file {} is a {kind}, not a regular file; keygen replaces only an old key file, never anything else at its path, and changed nothing",
            path.display()
        ))
        .hint("remove it yourself if it is no longer needed, or pass --key-file with another path"));
    }
    if !force {
        return Err(already_exists(path)
            .hint("pass --force to replace it (every machine then needs the new key)"));
    }
    Ok(())
}

/// The refusal of a key file already at `path` without `--force`.
fn already_exists(path: &Path) -> Error {
    Error::validation(format!(
        "key file {} already exists; refusing to overwrite it",
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const VECTOR_KEY: &[u8] = b"3f6c2a9e1b7d4c58a0e9f2b6d1c7e4a89b3d5f7a1c2e4b6d8f0a1b3c5d7e9f21\n";

    #[test]
    fn trims_trailing_whitespace_only() {
        let a = Key::from_file_text(VECTOR_KEY).unwrap();
        let b = Key::from_file_text(&VECTOR_KEY[..64]).unwrap();
        let c = Key::from_file_text(
            b"3f6c2a9e1b7d4c58a0e9f2b6d1c7e4a89b3d5f7a1c2e4b6d8f0a1b3c5d7e9f21 \r\n\t",
        )
        .unwrap();
        assert_eq!(a.sign("x"), b.sign("x"));
        assert_eq!(a.sign("x"), c.sign("x"));
        let leading = Key::from_file_text(
            b" 3f6c2a9e1b7d4c58a0e9f2b6d1c7e4a89b3d5f7a1c2e4b6d8f0a1b3c5d7e9f21",
        )
        .unwrap();
        assert_ne!(a.sign("x"), leading.sign("x"));
    }

    #[test]
    fn refuses_short_keys() {
        assert!(Key::from_file_text(&[b'a'; 31]).is_none());
        assert!(Key::from_file_text(b"0123456789012345678901234567890\n\n\n").is_none());
        assert!(Key::from_file_text(&[b'a'; 32]).is_some());
    }
}
