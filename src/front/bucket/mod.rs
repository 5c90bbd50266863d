//! The commands that work on an object-store root (`s3://BUCKET[/PREFIX]`,
//! docs/object-store.md): `enqueue` (its `--wait`, `--interrupt` and
//! `--batch`), `status`, `result` and `cancel` (its `--wait`, a target list,
//! from inside a job), the sender's side of the lane, over the storage
//! seam ([`crate::store::port`]) and the rules of
//! [`crate::requests::lane`]; and `logs` (the chunk objects a job's output
//! is kept in), `verify-marker`, `sweep` and `listen` (the listener,
//! [`crate::engine::bucket`]); [`jobref`] names a job as on a folder, and
//! [`each`] answers over a target list. In the roster modes the roster is
//! the object `PREFIX/roster.json` ([`crate::trust::store::RosterAt`]).

pub mod batch;
pub mod cancel;
pub mod each;
pub mod enqueue;
pub mod jobref;
pub mod listen;
pub mod logs;
pub mod look;
pub mod sweep;
pub mod verify;
pub mod wait;

use crate::base::error::{Error, Result};
use crate::base::names::{JobId, Machine};
use crate::front::config::Context;
use crate::store::port::bucket::{Bucket, BucketTarget};
use crate::trust::Key;

/// What a command on a bucket works with: the bucket, and for a writer the
/// key and this machine's name.
pub struct Lane {
    /// The root and its client.
    pub bucket: Bucket,
    /// The fleet key.
    pub key: Key,
}

impl Lane {
    /// The bucket of the root `text`, with the store settings and the key
    /// of the `--auth` mode (in the roster modes, the roster is the object
    /// `PREFIX/roster.json`).
    pub fn load(ctx: &Context, text: &str) -> Result<Lane> {
        let bucket = ctx.bucket(text)?;
        let key = ctx.key_on_bucket(&bucket, text)?;
        Ok(Lane { bucket, key })
    }

    /// The target `name` names on the bucket (docs/protocol.md §2.3): one
    /// with objects under `PREFIX/NAME/`, in the spelling found there, or a
    /// fleet member; anything else is `NOT_FOUND`, naming the known ones.
    pub fn target(&self, ctx: &Context, name: &str) -> Result<BucketTarget> {
        let shown = self.bucket.root().to_string();
        let m = crate::store::layout::resolve_among(
            &shown,
            self.bucket.targets()?,
            name,
            &ctx.fleet(),
        )?;
        Ok(self.bucket.target(&m))
    }

    /// Each target of the list `list` (`A,B`; `all` for every target the
    /// bucket holds), a name at most once.
    pub fn targets(&self, ctx: &Context, list: &str) -> Result<Vec<BucketTarget>> {
        if crate::store::layout::is_all(list) {
            let all = self.bucket.targets()?;
            if all.is_empty() {
                return Err(Error::not_found(format!(
                    "--target all: no target under {} yet",
                    self.bucket.root()
                )));
            }
            return all
                .iter()
                .map(|n| Ok(self.bucket.target(&Machine::parse(n, "target")?)))
                .collect();
        }
        let mut out: Vec<BucketTarget> = Vec::new();
        for name in list.split(',') {
            if name.is_empty() || crate::store::layout::is_all(name) {
                return Err(Error::validation(format!(
                    "--target {list:?}: an empty name, or `all` inside a list"
                ))
                .hint("write A,B,C with no spaces or empty entries, or `all` alone"));
            }
            let t = self.target(ctx, name)?;
            use crate::store::port::Shelves;
            if out.iter().any(|o| o.target().same(t.target().as_str())) {
                return Err(Error::validation(format!(
                    "--target {list:?} names {} twice",
                    t.target()
                )));
            }
            out.push(t);
        }
        Ok(out)
    }
}

/// Prints `json` (with `--json`) or the human lines, as every command does.
fn emit(ctx: &Context, json: &serde_json::Value, human: &str) {
    if ctx.json() {
        crate::base::out::json(json);
    } else if !human.is_empty() {
        crate::base::out::line(human);
    }
}

/// The refusal of a job `id` on `t` whose result does not verify (`why`),
/// naming the result's key: one wording for every command on a bucket.
pub fn unverified(t: &dyn crate::store::port::Shelves, id: &JobId, why: &str) -> Error {
    use crate::store::layout::Place;
    Error::forbidden(format!(
        "the result of {id} on {} does not verify ({}: {why})",
        t.target(),
        t.shelf(Place::Results).shown(&id.file_name())
    ))
}

/// The refusal of `what`, which a bucket root cannot do yet.
pub fn not_yet(root: &str, what: &str) -> Error {
    Error::config(format!(
        "{what} does not work on an object-store root ({root}) in this version"
    ))
    .hint("see docs/object-store.md for what works on a bucket; use a shared folder as the root for the rest")
}

/// The job `text` names: on a bucket, a full job id (for what takes no
/// `last` or prefix: `--after`, a cancel over a target list).
pub fn job_id(root: &str, text: &str) -> Result<JobId> {
    if text == crate::places::jobref::LAST {
        return Err(not_yet(root, "`last` in --after or over a target list"));
    }
    JobId::parse(text).map_err(|e| e.hint("on an object-store root, give the job's full id"))
}
