//! The replay guard's one question (docs/protocol.md §6.3): was this job id already used
//! on this target? Asked by the inbox drain and by the HTTP intake alike.
//!
//! An id counts as used when a result that verifies is in `results/`, its
//! job in `archive/done/`, or the listener's ledger holds it. A result file
//! that does not verify does not count (anyone with access to the folder
//! can write one; the publisher moves it aside when the job's genuine
//! result is placed). A file in
//! `archive/rejected/` does not count: anyone with access to the folder
//! can write one, so counting it would let a folder writer block a genuine
//! job by filing a rejection under its id first.

use crate::accept;
use crate::doc::outcome;
use crate::fsops;
use crate::key::Key;
use crate::layout::TargetDirs;
use crate::names::JobId;
use crate::read::FileRead;

/// Where `id` was already used on the target of `dirs`, if anywhere;
/// `in_ledger` is asked last, only when no file says so.
pub fn used_where(
    dirs: &TargetDirs,
    id: &JobId,
    key: &Key,
    in_ledger: impl FnOnce() -> bool,
) -> Option<&'static str> {
    if has_result(dirs, id, key) {
        Some("results/")
    } else if std::fs::symlink_metadata(dirs.done_file(id)).is_ok() {
        Some("archive/done/")
    } else if in_ledger() {
        Some("the local ledger")
    } else {
        None
    }
}

/// True when `results/<id>.json` holds a result that verifies.
pub fn has_result(dirs: &TargetDirs, id: &JobId, key: &Key) -> bool {
    match fsops::read_limited(&dirs.result_file(id), outcome::MAX_BYTES) {
        FileRead::Missing => false,
        read => accept::outcome(id.as_str(), read, dirs.target().as_str(), key).is_ok(),
    }
}
