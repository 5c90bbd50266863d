//! Where identities and the roster live, and the operations behind the
//! `identity` and `roster` commands (docs/identities.md): the identity and
//! admin key files (mode 600, refused when others may read them, as the
//! fleet key file is), `<root>/roster.json` published whole by a rename,
//! and this machine's pin of the admin key and the highest roster version
//! it has seen, in its state directory (never synced). The rules are
//! [`super::identity`]'s and [`super::roster`]'s; this module only reads,
//! writes and hands values to them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::base::error::{Error, Result};
use crate::base::read::FileRead;
use crate::store::fsops::{Dir, Flush};

use super::identity::{AdminKey, Identity, SigningPublic};
use super::roster::{self, Body, Edit, Refusal};

pub use super::place::{ROSTER_FILE, RosterAt};

/// The pinned admin key's file in the state directory.
const PIN_FILE: &str = "roster.pin";

/// The file in the state directory holding the highest version seen.
const SEEN_FILE: &str = "roster.seen";

/// The largest identity or admin key file read, in bytes.
const MAX_SECRET_FILE_BYTES: u64 = 4096;

/// Reads a private key file's text: `what` names it in messages, `hint`
/// says how to make one.
fn read_secret(path: &Path, what: &str, hint: &str) -> Result<String> {
    let text = match crate::store::fsops::read_local(path, MAX_SECRET_FILE_BYTES) {
        FileRead::Bytes(t) => t,
        FileRead::Missing => {
            return Err(Error::config(format!("no {what} at {}", path.display())).hint(hint));
        }
        FileRead::NotAFile(kind) => {
            return Err(Error::config(format!(
                "{what} {} is a {kind}, not a regular file; it was not read",
                path.display()
            )));
        }
        FileRead::TooLarge(_) => {
            return Err(Error::config(format!(
                "{what} {} holds more than {MAX_SECRET_FILE_BYTES} bytes; it is not a {what}",
                path.display()
            )));
        }
        FileRead::Unreadable(e) => {
            return Err(Error::config(format!(
                "cannot read {what} {}: {e}",
                path.display()
            )));
        }
    };
    crate::platform::check_key_permissions(path)?;
    String::from_utf8(text)
        .map_err(|_| Error::config(format!("{} is not a {what} (not text)", path.display())))
}

/// Writes a private key file: mode 600 from the start, beside `path`, then
/// moved into place; refuses an existing one without `force`
/// (`VALIDATION_ERROR`) and anything but a regular file even with it.
fn write_secret(path: &Path, text: &str, force: bool, what: &str) -> Result<()> {
    let taken = |p: &Path| -> Result<()> {
        match std::fs::symlink_metadata(p) {
            Ok(m) if !m.is_file() => Err(Error::config(format!(
                "{what} {} is a {}, not a regular file; nothing was written",
                p.display(),
                crate::store::fsops::local_kind_word(m.file_type())
            ))),
            Ok(_) if !force => Err(Error::validation(format!(
                "{what} {} already exists; refusing to overwrite it",
                p.display()
            ))
            .hint("pass --force to replace it (the old keys are then gone from this machine)")),
            _ => Ok(()),
        }
    };
    super::file::write_private(path, text, force, taken, |p| {
        taken(p)
            .err()
            .unwrap_or_else(|| Error::validation(format!("{what} {} already exists", p.display())))
    })
}

/// Refuses a private file that lies inside the root: it would sync.
pub fn outside_root(path: &Path, root: Option<&Path>, what: &str) -> Result<()> {
    match root {
        Some(root) if crate::store::layout::is_inside(path, root) => Err(Error::config(format!(
            "{what} {} would lie inside the dispatch root {}; it would sync to every machine",
            path.display(),
            root.display()
        ))),
        _ => Ok(()),
    }
}

/// Makes this machine's identity as `name` at `path`.
pub fn identity_init(path: &Path, name: &str, force: bool) -> Result<Identity> {
    let mut random = [0u8; 64];
    crate::base::random::fill(&mut random);
    let id = Identity::new(name, random);
    write_secret(path, &id.to_file_text(), force, "identity file")?;
    Ok(id)
}

/// Loads this machine's identity.
pub fn load_identity(path: &Path) -> Result<Identity> {
    let text = read_secret(path, "identity file", "run `fleet-dispatch identity init`")?;
    Identity::from_file_text(&text)
        .map_err(|why| Error::config(format!("{} is not an identity file: {why}", path.display())))
}

/// Loads the admin key.
pub fn load_admin(path: &Path) -> Result<AdminKey> {
    let text = read_secret(
        path,
        "admin key file",
        "run `fleet-dispatch roster init` on the admin's machine, or pass --admin-key FILE",
    )?;
    AdminKey::from_file_text(&text).map_err(|why| {
        Error::config(format!(
            "{} is not an admin key file: {why}",
            path.display()
        ))
    })
}

/// This machine's roster state: its pin and the highest version seen.
pub struct Local {
    state: PathBuf,
}

impl Local {
    /// The state kept in the directory `state`.
    pub fn new(state: &Path) -> Local {
        Local {
            state: state.to_path_buf(),
        }
    }

    fn dir(&self) -> Result<Dir> {
        std::fs::create_dir_all(&self.state)
            .map_err(|e| Error::io("create directory", &self.state, &e))?;
        Dir::open_trusted(&self.state)
    }

    fn read(&self, name: &str) -> Result<Option<String>> {
        let path = self.state.join(name);
        match crate::store::fsops::read_local(&path, 4096) {
            FileRead::Bytes(b) => Ok(Some(String::from_utf8_lossy(&b).trim().to_string())),
            FileRead::Missing => Ok(None),
            _ => Err(Error::config(format!("cannot read {}", path.display()))),
        }
    }

    /// The pinned admin key, if any.
    pub fn pin(&self) -> Result<Option<SigningPublic>> {
        let Some(text) = self.read(PIN_FILE)? else {
            return Ok(None);
        };
        SigningPublic::parse(&text).map(Some).ok_or_else(|| {
            Error::config(format!(
                "{} does not hold an admin public key",
                self.state.join(PIN_FILE).display()
            ))
            .hint("run `fleet-dispatch roster pin ed25519:<key>` again")
        })
    }

    /// The pin, or the `CONFIG` refusal that says how to make one.
    pub fn pinned(&self) -> Result<SigningPublic> {
        self.pin()?.ok_or_else(|| {
            Error::config("no admin key is pinned on this machine")
                .hint("run `fleet-dispatch roster pin ed25519:<key>` with the key `roster init` printed on the admin's machine")
        })
    }

    /// Pins `key`; a new pin forgets the versions seen under the old one.
    pub fn set_pin(&self, key: &SigningPublic) -> Result<()> {
        let dir = self.dir()?;
        if self.pin()? != Some(*key) {
            dir.replace(SEEN_FILE, b"0\n", Flush::DataAndName)?;
        }
        dir.replace(PIN_FILE, format!("{key}\n").as_bytes(), Flush::DataAndName)
    }

    /// The highest version seen (0 for none).
    pub fn seen(&self) -> Result<u64> {
        match self.read(SEEN_FILE)? {
            None => Ok(0),
            // Never read as 0: that would let an old roster back in.
            Some(t) => t.parse().map_err(|_| {
                Error::config(format!(
                    "{} does not hold a roster version",
                    self.state.join(SEEN_FILE).display()
                ))
                .hint("remove it and run `fleet-dispatch roster verify` to record the current version again")
            }),
        }
    }

    /// Records `version` as seen when higher than what was.
    pub fn saw(&self, version: u64) -> Result<()> {
        if version > self.seen()? {
            self.dir()?.replace(
                SEEN_FILE,
                format!("{version}\n").as_bytes(),
                Flush::DataAndName,
            )?;
        }
        Ok(())
    }
}

/// The verdict on the roster file at `path` for this machine; a good
/// one's version is recorded as seen.
pub fn verify(path: &Path, local: &Local) -> Result<std::result::Result<Body, Refusal>> {
    let pin = local.pinned()?;
    judge(&super::place::read_file(path)?, &pin, local)
}

/// The same for the roster at `at`.
pub fn verify_at(at: &RosterAt, local: &Local) -> Result<std::result::Result<Body, Refusal>> {
    let pin = local.pinned()?;
    judge(&at.read()?.bytes, &pin, local)
}

/// The verdict on roster `bytes` against `pin` and what `local` has seen;
/// a good one's version recorded.
fn judge(
    bytes: &[u8],
    pin: &SigningPublic,
    local: &Local,
) -> Result<std::result::Result<Body, Refusal>> {
    let verdict = roster::verify(bytes, pin, local.seen()?, crate::base::clock::now(), true);
    if let Ok(body) = &verdict {
        local.saw(body.version)?;
    }
    Ok(verdict)
}

/// `roster init`: the admin key at `admin_path` (made when absent), the
/// first roster published at `at` and pinned here. Returns the admin
/// public key and whether the key file was made.
pub fn roster_init(
    at: &RosterAt,
    admin_path: &Path,
    local: &Local,
    expires: Duration,
) -> Result<(SigningPublic, bool)> {
    let taken = |what: &str| {
        Error::validation(format!("{} {what}; refusing to replace it", at.shown()))
            .hint("edit it with `roster add`, `remove`, `rotate` or `renew`")
    };
    if at.version().is_some() {
        return Err(taken("already exists"));
    }
    let made = !admin_path.exists();
    let admin = if made {
        let mut seed = [0u8; 32];
        crate::base::random::fill(&mut seed);
        let admin = AdminKey::new(seed);
        write_secret(admin_path, &admin.to_file_text(), false, "admin key file")?;
        admin
    } else {
        load_admin(admin_path)?
    };
    let body = roster::first(&admin, crate::base::clock::now(), expires);
    if !at.create(&roster::sign(&body, &admin))? {
        return Err(taken("appeared meanwhile"));
    }
    local.set_pin(&admin.public())?;
    local.saw(body.version)?;
    Ok((admin.public(), made))
}

/// An admin's edit: the roster at `at` verified with the admin key itself
/// (expired or not: `renew` mends that) and not older than seen here,
/// edited, re-signed and put in its place whole.
pub fn roster_edit(
    at: &RosterAt,
    admin_path: &Path,
    local: &Local,
    edit: Edit,
    expires: Option<Duration>,
) -> Result<Body> {
    let admin = load_admin(admin_path)?;
    let read = at.read()?;
    let now = crate::base::clock::now();
    let body = roster::verify(&read.bytes, &admin.public(), local.seen()?, now, false)
        .map_err(|r| Error::config(format!("{}: {r}; it was not edited", at.shown())))?;
    let next = roster::apply(body, edit, now, expires).map_err(Error::validation)?;
    at.replace(&read, &roster::sign(&next, &admin))?;
    local.saw(next.version)?;
    Ok(next)
}
