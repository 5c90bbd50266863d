//! Where a root keeps its roster: the file `<root>/roster.json` of a
//! folder root, or the object `PREFIX/roster.json` of a bucket root
//! (docs/identities.md). Each edit replaces it whole: a folder by one
//! rename, a bucket by a PUT with `If-Match` of the version the edit read,
//! so of two admins editing at once one is refused rather than lost.

use std::path::PathBuf;

use crate::base::error::{Code, Error, Result};
use crate::base::read::FileRead;
use crate::store::fsops::{Dir, Flush};
use crate::store::objstore::Answer;
use crate::store::port::bucket::{Bucket, failed};

use super::roster;

/// The roster's name in its root.
pub const ROSTER_FILE: &str = "roster.json";

/// Where the roster of a root is.
#[derive(Clone)]
pub enum RosterAt {
    /// `<root>/roster.json`, for the folder root given.
    Folder(PathBuf),
    /// `PREFIX/roster.json` on the bucket.
    Bucket(Bucket),
}

/// One version of the roster as read: its bytes and what tells that
/// version from another without reading it ([`RosterAt::version`]).
pub struct Read {
    /// The roster's bytes.
    pub bytes: Vec<u8>,
    /// Its version tag (a folder: time and size; a bucket: the ETag).
    pub tag: Option<String>,
}

impl RosterAt {
    /// The roster of the bucket root `root`, reached through `client`.
    pub fn on_bucket(
        client: crate::store::objstore::Client,
        root: crate::store::objstore::S3Root,
    ) -> RosterAt {
        RosterAt::Bucket(Bucket::new(client, root))
    }

    /// The folder root, for a roster in one.
    pub fn folder(&self) -> Option<&std::path::Path> {
        match self {
            RosterAt::Folder(root) => Some(root),
            RosterAt::Bucket(_) => None,
        }
    }

    /// The roster's place as people read it: a path, or an `s3://` address.
    pub fn shown(&self) -> String {
        match self {
            RosterAt::Folder(root) => root.join(ROSTER_FILE).display().to_string(),
            RosterAt::Bucket(b) => format!(
                "{}/{ROSTER_FILE}",
                b.root().to_string().trim_end_matches('/')
            ),
        }
    }

    /// What tells the version there now from another, without reading it
    /// (`None`: nothing there, or no answer).
    pub fn version(&self) -> Option<String> {
        match self {
            RosterAt::Folder(root) => {
                let m = std::fs::metadata(root.join(ROSTER_FILE)).ok()?;
                Some(format!("{:?}/{}", m.modified().ok(), m.len()))
            }
            RosterAt::Bucket(b) => match b.client().head(&self.key(b)) {
                Answer::Done(r) => r.etag,
                _ => None,
            },
        }
    }

    /// The roster's bytes and version; `NOT_FOUND` when there is none.
    pub fn read(&self) -> Result<Read> {
        match self {
            RosterAt::Folder(root) => Ok(Read {
                tag: self.version(),
                bytes: read_file(&root.join(ROSTER_FILE))?,
            }),
            RosterAt::Bucket(b) => {
                let key = self.key(b);
                match b.client().get(&key) {
                    Answer::Done(r) if r.body.len() as u64 <= roster::MAX_ROSTER_BYTES => {
                        Ok(Read {
                            bytes: r.body,
                            tag: r.etag,
                        })
                    }
                    Answer::Done(r) => Err(Error::config(format!(
                        "the roster {} is {} bytes, more than a roster holds",
                        self.shown(),
                        r.body.len()
                    ))),
                    Answer::NotFound => Err(missing(&self.shown())),
                    a => Err(failed("read", b.root(), &key, &a)),
                }
            }
        }
    }

    /// Places the first roster; false when one is there already.
    pub fn create(&self, bytes: &[u8]) -> Result<bool> {
        match self {
            RosterAt::Folder(root) => {
                Dir::open_trusted(root)?.publish(ROSTER_FILE, bytes, Flush::DataAndName)
            }
            RosterAt::Bucket(b) => {
                let key = self.key(b);
                match b.client().create_only(&key, bytes) {
                    Answer::Done(_) => Ok(true),
                    Answer::Precondition => Ok(false),
                    a => Err(failed("create", b.root(), &key, &a)),
                }
            }
        }
    }

    /// Replaces the roster `read` was read from with `bytes`. On a bucket,
    /// a roster written since that read is kept and the edit refused.
    pub fn replace(&self, read: &Read, bytes: &[u8]) -> Result<()> {
        match self {
            RosterAt::Folder(root) => {
                Dir::open_trusted(root)?.replace(ROSTER_FILE, bytes, Flush::DataAndName)
            }
            RosterAt::Bucket(b) => {
                let key = self.key(b);
                let a = match &read.tag {
                    Some(etag) => b.client().put_if_match(&key, bytes, etag),
                    None => b.client().create_only(&key, bytes),
                };
                match a {
                    Answer::Done(_) => Ok(()),
                    Answer::Precondition | Answer::NotFound => Err(Error::new(
                        Code::Internal,
                        format!(
                            "{} changed while it was edited; it was not replaced",
                            self.shown()
                        ),
                    )
                    .hint("run the edit again: it starts from the roster there now")),
                    a => Err(failed("replace", b.root(), &key, &a)),
                }
            }
        }
    }

    fn key(&self, b: &Bucket) -> String {
        b.root().key(ROSTER_FILE)
    }
}

/// The roster file's bytes at `path` (a folder root's, or one given to
/// `roster verify FILE`).
pub fn read_file(path: &std::path::Path) -> Result<Vec<u8>> {
    match crate::store::fsops::read_local(path, roster::MAX_ROSTER_BYTES) {
        FileRead::Bytes(b) => Ok(b),
        FileRead::Missing => Err(missing(&path.display().to_string())),
        _ => Err(Error::config(format!(
            "cannot read the roster {}",
            path.display()
        ))),
    }
}

/// `NOT_FOUND`: no roster at `shown`.
fn missing(shown: &str) -> Error {
    Error::not_found(format!("no roster at {shown}"))
        .hint("run `fleet-dispatch roster init` on the admin's machine")
}
