//! The replay guard's one question (docs/protocol.md §6.3): was this job id
//! already used on this target? Asked by the inbox drain, by the HTTP intake
//! and by `enqueue` alike.
//!
//! An id counts as used when a result that verifies is in `results/`, its
//! job, verified, in `archive/done/`, or the listener's ledger holds it. A result file
//! that does not verify does not count (anyone with access to the folder
//! can write one; the publisher moves it aside when the job's genuine
//! result is placed). A file in `archive/rejected/` does not count either:
//! counting it would let a folder writer block a genuine job by filing a
//! rejection under its id first.

use crate::base::names::JobId;
use crate::protocol::judge;
use crate::store::fsops::Dir;
use crate::store::layout::{Place, TargetDirs};
use crate::trust::Key;

/// Where `id` was already used on the target of `dirs`, if anywhere;
/// `in_ledger` is asked last, only when no file says so. Opens the two
/// folders for this one question; the listener, which holds them, asks
/// [`used_in`].
pub fn used_where(
    dirs: &TargetDirs,
    id: &JobId,
    key: &Key,
    in_ledger: impl FnOnce() -> bool,
) -> Option<&'static str> {
    // Each folder is opened without following links; one that cannot be
    // (a link or a file in its place) holds nothing, and the ledger answers.
    let open = |p: Place| dirs.open(p).ok().flatten();
    let target = dirs.target().as_str();
    used_in(
        open(Place::Results).as_ref(),
        open(Place::Done).as_ref(),
        (id, target, key),
        in_ledger,
    )
}

/// [`used_where`] over `results/` and `archive/done/` already held open
/// (`None`: missing), for `id` of `target`, whose results verify with `key`.
pub fn used_in(
    results: Option<&Dir>,
    done: Option<&Dir>,
    (id, target, key): (&JobId, &str, &Key),
    in_ledger: impl FnOnce() -> bool,
) -> Option<&'static str> {
    let name = id.file_name();
    let verified = results.is_some_and(|r| judge::result(r, id, target, key).is_ok());
    // In `archive/done/` only the job `id` of `target` signed with `key`
    // counts: anything else there (empty, garbage, a folder, another job's
    // file) is a folder writer's, and counting it would let one suppress a
    // genuine job, block an id before it is ever sent, or take a short id.
    if verified {
        Some("results/")
    } else if done.is_some_and(|d| d.exists(&name) && judge::job(d, id, target, key).is_ok()) {
        Some("archive/done/")
    } else if in_ledger() {
        Some("the local ledger")
    } else {
        None
    }
}
