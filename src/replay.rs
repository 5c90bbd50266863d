//! The replay guard's one question (docs/protocol.md §6.3): was this job id already used
//! on this target? Asked by the inbox drain and by the HTTP intake alike.
//!
//! An id counts as used when its result is in `results/`, its job in
//! `archive/done/`, or the listener's ledger holds it. A file in
//! `archive/rejected/` does not count: anyone with access to the folder
//! can write one, so counting it would let a folder writer block a genuine
//! job by filing a rejection under its id first.

use crate::layout::{Place, TargetDirs};
use crate::names::JobId;

/// Where `id` was already used on the target of `dirs`, if anywhere;
/// `in_ledger` is asked last, only when no file says so.
pub fn used_where(
    dirs: &TargetDirs,
    id: &JobId,
    in_ledger: impl FnOnce() -> bool,
) -> Option<&'static str> {
    // Each folder is opened without following links; one that cannot be
    // (a link or a file in its place) holds nothing, and the ledger answers.
    let name = id.file_name();
    let there = |p: Place| dirs.open(p).ok().flatten().is_some_and(|d| d.exists(&name));
    if there(Place::Results) {
        Some("results/")
    } else if there(Place::Done) {
        Some("archive/done/")
    } else if in_ledger() {
        Some("the local ledger")
    } else {
        None
    }
}
