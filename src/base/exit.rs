//! Every exit status the binary can end with, named once: the statuses that
//! answer a question (success, a plain no, a wait that ran out, an
//! interrupt), and the statuses of the error codes ([`crate::base::error::Code`]).
//! The man pages' EXIT STATUS section is generated from [`table`], so the
//! page and the code cannot drift apart (docs/protocol.md §9).

use crate::base::error::Code;

/// Success; `listen` exits 0 whatever its jobs' outcomes.
pub const SUCCESS: u8 = 0;
/// A plain no: the question was answered, the answer is negative.
pub const NO: u8 = 1;
/// A command line that cannot be parsed (clap's own status); with `--json`
/// it is `VALIDATION` instead, as its JSON error says.
pub const USAGE: u8 = 2;
/// `VALIDATION_ERROR`.
pub const VALIDATION: u8 = 64;
/// `BAD_REQUEST`.
pub const BAD_REQUEST: u8 = 65;
/// `NOT_FOUND`.
pub const NOT_FOUND: u8 = 66;
/// `INTERNAL_ERROR`; also `sweep` when some files could not be removed.
pub const INTERNAL: u8 = 70;
/// `BUSY`.
pub const BUSY: u8 = 75;
/// `FORBIDDEN`.
pub const FORBIDDEN: u8 = 77;
/// `CONFIG`.
pub const CONFIG: u8 = 78;
/// The target's listener rejected the job file (EX_PROTOCOL: the remote
/// side refused it); the reason is printed.
pub const REJECTED: u8 = 76;
/// The job has not finished: a `--wait` reached its `--wait-timeout` (as
/// `timeout(1)`), or `result` asked without `--wait`.
pub const UNFINISHED: u8 = 124;
/// Interrupted by Ctrl-C or SIGTERM (128 + SIGINT, as shells report it).
pub const INTERRUPTED: u8 = 130;

/// The statuses that are not error codes, with when they are used.
const OTHERS: [(u8, &str); 6] = [
    (
        SUCCESS,
        "success; `listen` exits 0 whatever its jobs' outcomes",
    ),
    (
        NO,
        "a plain no: `doctor` when a check warns, `verify-marker` on an invalid marker, `cancel` when an invalid file blocks the marker's place, `cancel --wait` when the job finished first; `result` (with or without `--wait`) and `enqueue --wait` for a job that was cancelled, timed out or never started (`dependency-failed` included). A job that ran to its end gives its own exit code instead",
    ),
    (
        USAGE,
        "a command line that cannot be parsed (with `--json` on it: 64, printed as a VALIDATION_ERROR document)",
    ),
    (
        REJECTED,
        "`result`, `logs` or a `--wait`: the target's listener rejected the job file; the reason is printed (with both key fingerprints when the signature did not verify)",
    ),
    (
        UNFINISHED,
        "the job is still queued or running: `result` without `--wait`, or a `--wait` that reached its `--wait-timeout`",
    ),
    (INTERRUPTED, "interrupted (Ctrl-C or SIGTERM)"),
];

/// Every exit status in ascending order, with its meaning: the man pages'
/// EXIT STATUS table.
pub fn table() -> Vec<(u8, String)> {
    let mut all: Vec<(u8, String)> = OTHERS.iter().map(|(n, t)| (*n, t.to_string())).collect();
    all.extend(
        Code::ALL
            .iter()
            .map(|c| (of(*c), format!("{}: {}", c.as_str(), c.meaning()))),
    );
    all.sort_by_key(|(n, _)| *n);
    all
}

/// The exit status of an error code: the BSD sysexits numbers.
pub fn of(code: Code) -> u8 {
    match code {
        Code::Validation => VALIDATION,
        Code::BadRequest => BAD_REQUEST,
        Code::NotFound => NOT_FOUND,
        Code::Internal => INTERNAL,
        Code::Busy => BUSY,
        Code::Forbidden => FORBIDDEN,
        Code::Config => CONFIG,
    }
}

/// `NO` when `no` holds, else `SUCCESS`.
pub fn no_if(no: bool) -> u8 {
    if no { NO } else { SUCCESS }
}

/// How bad a status is when several answers make one (a command over
/// several targets exits with the worst of theirs), lowest first: success;
/// a job's own failure (`NO`, or any exit code a job gave); `UNFINISHED`;
/// `REJECTED`; `NOT_FOUND`; any other error code's status; `INTERRUPTED`.
/// Written out in [`WORST_ORDER`].
fn badness(status: u8) -> u8 {
    match status {
        SUCCESS => 0,
        UNFINISHED => 2,
        REJECTED => 3,
        NOT_FOUND => 4,
        VALIDATION | BAD_REQUEST | INTERNAL | BUSY | FORBIDDEN | CONFIG => 5,
        INTERRUPTED => 6,
        _ => 1,
    }
}

/// The order [`worst`] ranks statuses in, worst last, for the docs.
pub const WORST_ORDER: &str = "0 (success) < a job's own failure (1, or the exit code the job gave) < 124 (unfinished) < 76 (rejected) < 66 (not found) < any other error's status < 130 (interrupted); of two equally bad, the first target's";

/// The worst of `statuses` in the order of [`WORST_ORDER`] (the first of equals); `SUCCESS`
/// for none.
pub fn worst(statuses: impl IntoIterator<Item = u8>) -> u8 {
    statuses
        .into_iter()
        .fold(SUCCESS, |w, s| if badness(s) > badness(w) { s } else { w })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_is_named_once() {
        let t = table();
        let mut codes: Vec<u8> = t.iter().map(|(n, _)| *n).collect();
        codes.dedup();
        assert_eq!(codes.len(), t.len(), "a status has two meanings: {t:?}");
        assert_eq!(
            codes,
            [
                SUCCESS,
                NO,
                USAGE,
                VALIDATION,
                BAD_REQUEST,
                NOT_FOUND,
                INTERNAL,
                BUSY,
                REJECTED,
                FORBIDDEN,
                CONFIG,
                UNFINISHED,
                INTERRUPTED
            ]
        );
    }

    #[test]
    fn error_codes_exit_with_the_protocol_table() {
        let table = [
            (Code::Validation, "VALIDATION_ERROR", 64),
            (Code::BadRequest, "BAD_REQUEST", 65),
            (Code::NotFound, "NOT_FOUND", 66),
            (Code::Internal, "INTERNAL_ERROR", 70),
            (Code::Busy, "BUSY", 75),
            (Code::Forbidden, "FORBIDDEN", 77),
            (Code::Config, "CONFIG", 78),
        ];
        for (code, name, status) in table {
            assert_eq!(code.as_str(), name);
            assert_eq!(of(code), status);
        }
        assert_eq!((REJECTED, UNFINISHED, INTERRUPTED), (76, 124, 130));
    }

    #[test]
    fn worst_ranks_errors_over_unfinished_over_failed_jobs() {
        assert_eq!(worst([]), SUCCESS);
        assert_eq!(worst([SUCCESS, 3, SUCCESS]), 3);
        assert_eq!(worst([3, NO]), 3, "the first of equals");
        assert_eq!(worst([2, UNFINISHED, SUCCESS]), UNFINISHED);
        assert_eq!(worst([UNFINISHED, REJECTED]), REJECTED);
        assert_eq!(worst([REJECTED, NOT_FOUND, UNFINISHED]), NOT_FOUND);
        assert_eq!(worst([NOT_FOUND, FORBIDDEN]), FORBIDDEN);
        assert_eq!(worst([FORBIDDEN, INTERRUPTED, 1]), INTERRUPTED);
    }
}
