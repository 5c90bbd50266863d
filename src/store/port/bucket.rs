//! [`super::Shelves`] over an object-store root (`s3://BUCKET[/PREFIX]`):
//! the file `NAME` of a place is the key `PREFIX/TARGET/PLACE/NAME`
//! (`PLACE` as the folder layout names it: `inbox`, `archive/done`, …).
//! Publishing is one PUT with `If-None-Match: *` (a 412 is a name already
//! taken), with no temp name: a reader never sees half an object. A target
//! exists when any key is under `PREFIX/TARGET/`.

use std::sync::Arc;

use super::{Shelf, Shelves};
use crate::base::error::{Code, Error, Result};
use crate::base::names::{Machine, is_machine};
use crate::base::read::FileRead;
use crate::store::layout::Place;
use crate::store::objstore::{Answer, Client, S3Root};

/// The store's answer `a` to `what` on `key`, as an error naming the key:
/// `CONFIG` when the credentials or the bucket policy refuse (a setting to
/// fix), `INTERNAL_ERROR` otherwise.
pub fn failed(what: &str, root: &S3Root, key: &str, a: &Answer) -> Error {
    let code = match a {
        Answer::Denied(_) => Code::Config,
        _ => Code::Internal,
    };
    let e = Error::new(
        code,
        format!(
            "cannot {what} s3://{}/{key}: the store {}",
            root.bucket,
            a.said()
        ),
    );
    match a {
        Answer::Denied(_) => {
            e.hint("check the credentials and the bucket policy (docs/object-store.md)")
        }
        _ => e.hint("`fleet-dispatch doctor` checks the store; try again once it answers"),
    }
}

/// An object-store root and a client of its bucket.
#[derive(Clone)]
pub struct Bucket {
    client: Arc<Client>,
    root: S3Root,
}

impl Bucket {
    /// The root `root`, reached through `client`.
    pub fn new(client: Client, root: S3Root) -> Bucket {
        Bucket {
            client: Arc::new(client),
            root,
        }
    }

    /// The root's address.
    pub fn root(&self) -> &S3Root {
        &self.root
    }

    /// The client of its bucket.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The targets the root holds: each valid machine name with a key under
    /// `PREFIX/NAME/`, sorted without regard to case.
    ///
    /// # Errors
    ///
    /// The store did not answer the listing (naming the prefix).
    pub fn targets(&self) -> Result<Vec<String>> {
        let prefix = &self.root.prefix;
        let folders = self
            .client
            .folders(prefix)
            .map_err(|a| failed("list", &self.root, prefix, &a))?;
        let mut names: Vec<String> = folders
            .iter()
            .filter_map(|f| f.strip_prefix(prefix.as_str())?.strip_suffix('/'))
            .filter(|n| is_machine(n))
            .map(str::to_string)
            .collect();
        names.sort_by_key(|n| n.to_ascii_lowercase());
        Ok(names)
    }

    /// The places of `target` (spelled as the root holds it).
    pub fn target(&self, target: &Machine) -> BucketTarget {
        BucketTarget {
            bucket: self.clone(),
            name: target.clone(),
        }
    }
}

/// The places of one target on a bucket.
#[derive(Clone)]
pub struct BucketTarget {
    bucket: Bucket,
    name: Machine,
}

impl BucketTarget {
    /// The bucket it is on.
    pub fn bucket(&self) -> &Bucket {
        &self.bucket
    }

    /// The key of `rest` under the target: `PREFIX/TARGET/rest`.
    pub fn key_of(&self, rest: &str) -> String {
        self.bucket.root.key(&format!("{}/{rest}", self.name))
    }

    /// The key of `name` in `place`.
    pub fn key(&self, place: Place, name: &str) -> String {
        self.bucket
            .root
            .key(&format!("{}/{}/{name}", self.name, place.shown()))
    }

    /// The names in `place` that start with `start`: one listing of that
    /// key prefix, however many other names the place holds.
    ///
    /// # Errors
    ///
    /// The store failed, naming the prefix.
    pub fn names_starting(&self, place: Place, start: &str) -> Result<Vec<String>> {
        let folder = self.key(place, "");
        let prefix = self.key(place, start);
        let keys = self
            .bucket
            .client
            .list(&prefix, None, 1000)
            .map_err(|a| failed("list", &self.bucket.root, &prefix, &a))?;
        // Only the place's own names: `archive/` also holds other places.
        Ok(keys
            .into_iter()
            .filter_map(|e| {
                let name = e.key.strip_prefix(folder.as_str())?;
                (!name.is_empty() && !name.contains('/')).then(|| name.to_string())
            })
            .collect())
    }
}

impl Shelves for BucketTarget {
    fn target(&self) -> &Machine {
        &self.name
    }

    fn shelf(&self, place: Place) -> Box<dyn Shelf + '_> {
        Box::new(BucketShelf { of: self, place })
    }

    fn shown(&self) -> String {
        format!("{}{}/", self.bucket.root, self.name)
    }
}

/// One place of a [`BucketTarget`].
struct BucketShelf<'a> {
    of: &'a BucketTarget,
    place: Place,
}

impl BucketShelf<'_> {
    fn client(&self) -> &Client {
        &self.of.bucket.client
    }

    fn failed(&self, what: &str, key: &str, a: &Answer) -> Error {
        failed(what, &self.of.bucket.root, key, a)
    }
}

impl Shelf for BucketShelf<'_> {
    fn list(&self) -> Result<Vec<String>> {
        self.of.names_starting(self.place, "")
    }

    fn read(&self, name: &str, limit: u64) -> FileRead {
        let key = self.of.key(self.place, name);
        match self.client().get(&key) {
            Answer::Done(r) if r.body.len() as u64 > limit => {
                FileRead::TooLarge(r.body.len() as u64)
            }
            Answer::Done(r) => FileRead::Bytes(r.body),
            Answer::NotFound => FileRead::Missing,
            a => FileRead::Unreadable(self.failed("read", &key, &a).message),
        }
    }

    fn publish(&self, name: &str, bytes: &[u8]) -> Result<bool> {
        let key = self.of.key(self.place, name);
        match self.client().create_only(&key, bytes) {
            Answer::Done(_) => Ok(true),
            Answer::Precondition => Ok(false),
            a => Err(self.failed("create", &key, &a)),
        }
    }

    fn exists(&self, name: &str) -> Result<bool> {
        let key = self.of.key(self.place, name);
        match self.client().head(&key) {
            Answer::Done(_) => Ok(true),
            Answer::NotFound => Ok(false),
            a => Err(self.failed("look up", &key, &a)),
        }
    }

    fn remove(&self, name: &str) -> Result<()> {
        // Only the version looked at: one written again meanwhile stays.
        let key = self.of.key(self.place, name);
        let etag = match self.client().head(&key) {
            Answer::Done(r) => r.etag,
            Answer::NotFound => return Ok(()),
            a => return Err(self.failed("look up", &key, &a)),
        };
        let Some(etag) = etag else {
            return Err(self.failed("remove", &key, &Answer::Other(200, "no ETag".into())));
        };
        match self.client().delete_if_match(&key, &etag) {
            Answer::Done(_) | Answer::NotFound | Answer::Precondition => Ok(()),
            a => Err(self.failed("remove", &key, &a)),
        }
    }

    fn shown(&self, name: &str) -> String {
        format!(
            "s3://{}/{}",
            self.of.bucket.root.bucket,
            self.of.key(self.place, name)
        )
    }

    fn list_aged(&self) -> Result<Vec<(String, Option<std::time::SystemTime>)>> {
        let prefix = self.of.key(self.place, "");
        let keys = self
            .client()
            .list(&prefix, None, 1000)
            .map_err(|a| self.failed("list", &prefix, &a))?;
        Ok(keys
            .into_iter()
            .filter_map(|e| {
                let name = e.key.strip_prefix(prefix.as_str())?;
                (!name.is_empty() && !name.contains('/')).then(|| (name.to_string(), e.modified))
            })
            .collect())
    }
}
