//! A job's logs rendered for `logs --json` ([`document`], [`with_result`])
//! and the note that a log printed holds less than its job wrote
//! ([`short_log_notes`]), and a sealed job's output, which no log holds
//! ([`sealed`]). The logs' bytes themselves are printed as they
//! are: they are the job's own output, which its reader asked for.

use serde_json::{Value, json};

use crate::base::error::{Error, Result};
use crate::base::names::JobId;
use crate::places::output::Streams;
use crate::protocol::doc::Outcome;

/// `out` (the job's id and target) with the job's state `done` and its
/// verified result: the last JSON line of `logs --follow --json`, and
/// the head of `logs --json` for a finished job.
pub fn with_result(mut out: Value, o: &Outcome) -> Value {
    out["state"] = json!("done");
    out["result"] = super::result::json(o);
    out
}

/// Each chosen stream's text into `out` (`stdout`, `stderr`), as UTF-8 (a
/// byte that is not is replaced with U+FFFD).
pub fn document(out: &mut Value, streams: Streams, stdout: &[u8], stderr: &[u8]) {
    if streams != Streams::Stderr {
        out["stdout"] = json!(String::from_utf8_lossy(stdout));
    }
    if streams != Streams::Stdout {
        out["stderr"] = json!(String::from_utf8_lossy(stderr));
    }
}

/// A line for each chosen stream whose log holds less than its job wrote
/// (its result records it: the log could not be made, or a write failed);
/// for a sealed job its origin opened, one saying no log holds its output.
pub fn short_log_notes(o: &Outcome, streams: Streams) -> Vec<String> {
    let d = o.detail();
    let sealed = o
        .opened
        .is_some()
        .then(|| format!("{}: {SEALED_NOTE}", o.job_id));
    [
        (
            "stdout",
            streams != Streams::Stderr,
            d.stdout_log_bytes,
            d.stdout_bytes,
        ),
        (
            "stderr",
            streams != Streams::Stdout,
            d.stderr_log_bytes,
            d.stderr_bytes,
        ),
    ]
    .into_iter()
    .filter_map(|(name, shown, logged, total)| {
        let k = logged.filter(|_| shown)?;
        Some(format!(
            "{name} of {} holds only its first {k} of {} bytes: writing the log failed (a full disk, or something else in its place); its last bytes are in the result",
            o.job_id,
            total.unwrap_or(k)
        ))
    })
    .chain(sealed)
    .collect()
}

/// What `logs` says beside a sealed job's output.
pub const SEALED_NOTE: &str = "the job is sealed: its output is not logged to the root; shown is the end of each stream its sealed result carries";

/// The output of the sealed job `id`, finished with `o`, as `streams`
/// asks (stdout's, stderr's): its target logs none of it to the root
/// (docs/identities.md, "Sealed jobs"), so its origin, which opened the
/// result, is shown the ends of its streams the result carries.
///
/// # Errors
///
/// `FORBIDDEN` on any other machine: the result does not open there.
pub fn sealed(id: &JobId, o: &Outcome, streams: Streams) -> Result<(Vec<u8>, Vec<u8>)> {
    if o.opened.is_none() {
        return Err(Error::forbidden(format!(
            "job {id} on {} is sealed: its output is not logged to the root, and the end of it its result carries opens only on the job's origin",
            o.target
        ))
        .hint("run logs (or result) on the machine that sent the job"));
    }
    let d = o.detail();
    let stdout = d.stdout_tail.unwrap_or_default().into_bytes();
    let stderr = d.stderr_tail.unwrap_or_default().into_bytes();
    Ok(match streams {
        Streams::Stdout => (stdout, Vec::new()),
        Streams::Stderr => (Vec::new(), stderr),
        Streams::Both => (stdout, stderr),
    })
}
