//! What `--job-id TEXT` names on a bucket, as on a folder
//! ([`crate::places::jobref`]): `last`, the last job enqueued from this
//! machine (its state directory's record, which `enqueue` on a bucket
//! keeps too); a whole generated id as it is; else the one verified job
//! of the target whose id starts with `TEXT`, found by listing its places
//! with that key prefix (one request a place, however many jobs the
//! bucket holds). A prefix no verified job has is taken as an id as it is
//! (a store may list late); one several have is `VALIDATION_ERROR`
//! listing them.

use std::collections::BTreeSet;

use super::Lane;
use crate::base::error::{Error, Result};
use crate::base::names::JobId;
use crate::front::config::Context;
use crate::places::jobref::LAST;
use crate::protocol::accept;
use crate::protocol::doc::{job, outcome};
use crate::store::layout::Place;
use crate::store::port::Shelves;
use crate::store::port::bucket::BucketTarget;
use crate::trust::Key;

/// The most ids a refusal of an ambiguous prefix lists.
const SHOWN: usize = 10;

/// Refuses, before the store is asked, a `--job-id` that can name nothing:
/// `last` and any valid id (a prefix is one) pass.
///
/// # Errors
///
/// `VALIDATION_ERROR` for text that is no job id.
pub fn checked(text: &str) -> Result<()> {
    if text == LAST {
        return Ok(());
    }
    JobId::parse(text).map(drop)
}

/// The job `text` names on `t` (see the module's text).
///
/// # Errors
///
/// `NOT_FOUND` for `last` when no job from here went to `t`;
/// `VALIDATION_ERROR` for a bad id or a prefix several jobs have; a store
/// that fails, naming the key.
pub fn resolve(ctx: &Context, lane: &Lane, t: &BucketTarget, text: &str) -> Result<JobId> {
    if text == LAST {
        let root = lane.bucket.root().to_string();
        let state = ctx.state_dir(std::path::Path::new(&root)).ok();
        return crate::places::jobref::last(t.target(), state.as_deref());
    }
    let id = JobId::parse(text)?;
    if id.is_generated() {
        return Ok(id);
    }
    let mut listed = BTreeSet::new();
    for place in [Place::Inbox, Place::Results, Place::Done] {
        for name in t.names_starting(place, text)? {
            listed.extend(JobId::from_file_name(&name));
        }
    }
    let mut matching = Vec::new();
    for candidate in listed {
        if matching.len() > SHOWN {
            break;
        }
        if verified(t, &candidate, &lane.key) {
            matching.push(candidate);
        }
    }
    match matching.len() {
        0 => Ok(id),
        1 => Ok(matching.remove(0)),
        n => {
            let mut names: Vec<String> = matching.iter().map(JobId::to_string).collect();
            let count = if n > SHOWN {
                names.truncate(SHOWN);
                names.push("…".into());
                format!("more than {SHOWN}")
            } else {
                n.to_string()
            };
            Err(Error::validation(format!(
                "{text:?} is the start of {count} job ids on {}: {}",
                t.target(),
                names.join(", ")
            ))
            .hint("give more of the id"))
        }
    }
}

/// True when `id` is a job of `t` that verifies: its result, or the job
/// itself in the inbox or the archive. A planted object takes no part.
fn verified(t: &BucketTarget, id: &JobId, key: &Key) -> bool {
    let (name, target) = (id.file_name(), t.target().as_str());
    let result = t.shelf(Place::Results).read(&name, outcome::MAX_BYTES);
    if accept::outcome(id.as_str(), result, target, key).is_ok() {
        return true;
    }
    [Place::Inbox, Place::Done].into_iter().any(|place| {
        let read = t.shelf(place).read(&name, job::MAX_BYTES);
        accept::job(&name, read, target, key).is_ok()
    })
}
