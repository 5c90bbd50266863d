//! The acceptance rules of docs/protocol.md §6, as pure functions over a file's name, its
//! bytes and the key. The listener, `verify-marker`, `sweep`, `cancel` and
//! `result` all decide here, so a document is judged the same way everywhere.
//!
//! Checks run in the protocol's order and the first failure is the verdict:
//! file kind → size → JSON shape → names → file name → target → signature →
//! spec. Nothing here touches the disk: [`FileRead`] carries what the caller
//! found, so tests drive every branch with plain values.

use std::time::Duration;

use serde_json::{Map, Value};
use time::OffsetDateTime;

use crate::base::names::{self, JobId};
use crate::base::read::FileRead;
use crate::protocol::doc::{Marker, Outcome, Termination, marker, outcome};
use crate::trust::{Claim, Key, Refusal, Unchecked};

/// A verdict word of docs/protocol.md §6.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Accepted.
    Valid,
    /// Not a regular file.
    NotAFile,
    /// Cannot be read now (left in place and retried).
    Unreadable,
    /// Over the kind's size limit.
    TooLarge,
    /// Not a JSON object with string fields.
    Malformed,
    /// Bad job id.
    InvalidJobId,
    /// Bad target name.
    InvalidTarget,
    /// Bad origin name.
    InvalidOrigin,
    /// `createdAt` is not RFC 3339.
    InvalidCreatedAt,
    /// The file name is not `<body jobId>.json`.
    JobIdMismatch,
    /// A marker for another target.
    TargetMismatch,
    /// A job for another target.
    WrongTarget,
    /// Signature missing, not hex, or not verifying.
    BadSignature,
    /// Its machine or key id is not on the roster, or was removed.
    UnknownSigner,
    /// Its key is outside its validity window on the roster.
    KeyNotValid,
    /// Its origin may not send to this target.
    NotPermitted,
    /// The target's roster entry requires sealed jobs.
    SealRequired,
    /// A sealed job whose envelope does not open at its target, or opens
    /// to a payload that is no payload.
    BadSeal,
    /// Signed by an algorithm this machine's `--auth` mode refuses.
    AlgNotAllowed,
    /// A job spec that does not parse or has unknown fields.
    UnsupportedSpec,
    /// The job id was processed before (replay).
    AlreadyProcessed,
    /// `createdAt` too old or too far in the future.
    Stale,
    /// The file does not exist.
    Missing,
}

impl Verdict {
    /// The protocol's word for this verdict.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Valid => "valid",
            Verdict::NotAFile => "not-a-file",
            Verdict::Unreadable => "unreadable",
            Verdict::TooLarge => "too-large",
            Verdict::Malformed => "malformed",
            Verdict::InvalidJobId => "invalid-job-id",
            Verdict::InvalidTarget => "invalid-target",
            Verdict::InvalidOrigin => "invalid-origin",
            Verdict::InvalidCreatedAt => "invalid-created-at",
            Verdict::JobIdMismatch => "job-id-mismatch",
            Verdict::TargetMismatch => "target-mismatch",
            Verdict::WrongTarget => "wrong-target",
            Verdict::BadSignature => "bad-signature",
            Verdict::UnknownSigner => "unknown-signer",
            Verdict::KeyNotValid => "key-not-valid",
            Verdict::NotPermitted => "not-permitted",
            Verdict::SealRequired => "seal-required",
            Verdict::BadSeal => "bad-seal",
            Verdict::AlgNotAllowed => "alg-not-allowed",
            Verdict::UnsupportedSpec => "unsupported-spec",
            Verdict::AlreadyProcessed => "already-processed",
            Verdict::Stale => "stale",
            Verdict::Missing => "missing",
        }
    }
}

/// A refusal: the verdict and a sentence saying why.
#[derive(Clone, Debug, PartialEq)]
pub struct Rejection {
    /// The verdict.
    pub verdict: Verdict,
    /// Why, naming the offending field or value.
    pub message: String,
}

impl Rejection {
    /// A refusal with `verdict`, saying why.
    pub fn new(verdict: Verdict, message: impl Into<String>) -> Rejection {
        Rejection {
            verdict,
            message: message.into(),
        }
    }
}

type Verdicted<T> = Result<T, Rejection>;

/// The envelope checks shared by markers and jobs: steps 1 to 5 and 7 need
/// the same fields.
struct Envelope {
    obj: Map<String, Value>,
}

impl Envelope {
    /// Steps 1 to 3: a readable regular file within `limit`, holding a JSON
    /// object whose `required` fields are strings.
    fn open(read: FileRead, limit: u64, required: &[&str]) -> Verdicted<Envelope> {
        let bytes = match read {
            FileRead::Bytes(b) => b,
            FileRead::NotAFile(kind) => {
                return Err(Rejection::new(
                    Verdict::NotAFile,
                    format!("it is a {kind}, not a regular file; it is never followed or read"),
                ));
            }
            FileRead::Unreadable(why) => {
                return Err(Rejection::new(
                    Verdict::Unreadable,
                    format!("it cannot be read now ({why}); it is left in place and retried"),
                ));
            }
            FileRead::TooLarge(n) => {
                return Err(Rejection::new(
                    Verdict::TooLarge,
                    format!("it is {n} bytes, over the limit of {limit}"),
                ));
            }
            FileRead::Missing => {
                return Err(Rejection::new(Verdict::Missing, "there is no such file"));
            }
        };
        if bytes.len() as u64 > limit {
            return Err(Rejection::new(
                Verdict::TooLarge,
                format!("it is {} bytes, over the limit of {limit}", bytes.len()),
            ));
        }
        let value: Value = serde_json::from_slice(&bytes)
            .map_err(|e| Rejection::new(Verdict::Malformed, format!("it is not JSON ({e})")))?;
        let Value::Object(obj) = value else {
            return Err(Rejection::new(
                Verdict::Malformed,
                "it is not a JSON object",
            ));
        };
        for field in required {
            match obj.get(*field) {
                Some(Value::String(_)) => {}
                Some(_) => {
                    return Err(Rejection::new(
                        Verdict::Malformed,
                        format!("field {field:?} is not a string"),
                    ));
                }
                None => {
                    return Err(Rejection::new(
                        Verdict::Malformed,
                        format!("field {field:?} is missing"),
                    ));
                }
            }
        }
        Ok(Envelope { obj })
    }

    fn str(&self, field: &str) -> &str {
        self.obj.get(field).and_then(Value::as_str).unwrap_or("")
    }

    /// Step 4: job id, target, origin, createdAt, in that order.
    fn names(&self) -> Verdicted<OffsetDateTime> {
        let id = self.str("jobId");
        if !names::is_job_id(id) {
            return Err(Rejection::new(
                Verdict::InvalidJobId,
                format!("jobId {id:?} is not a valid job id"),
            ));
        }
        let target = self.str("target");
        if !names::is_machine(target) {
            return Err(Rejection::new(
                Verdict::InvalidTarget,
                format!("target {target:?} is not a valid machine name"),
            ));
        }
        let origin = self.str("origin");
        if !names::is_machine(origin) {
            return Err(Rejection::new(
                Verdict::InvalidOrigin,
                format!("origin {origin:?} is not a valid machine name"),
            ));
        }
        let created = self.str("createdAt");
        crate::base::clock::parse(created).ok_or_else(|| {
            Rejection::new(
                Verdict::InvalidCreatedAt,
                format!("createdAt {created:?} is not RFC 3339"),
            )
        })
    }

    /// Step 5: the file is named after the id it carries.
    fn file_name(&self, file_name: &str) -> Verdicted<()> {
        let id = self.str("jobId");
        if file_name == format!("{id}.json") {
            Ok(())
        } else {
            Err(Rejection::new(
                Verdict::JobIdMismatch,
                format!("file {file_name:?} does not match jobId {id:?} (expected {id}.json)"),
            ))
        }
    }

    /// Step 6: the document is for this target.
    fn target(&self, listener_target: &str, verdict: Verdict) -> Verdicted<()> {
        let target = self.str("target");
        if target.eq_ignore_ascii_case(listener_target) {
            Ok(())
        } else {
            Err(Rejection::new(
                verdict,
                format!("it is for target {target:?}, not {listener_target:?}"),
            ))
        }
    }

    /// Step 7: `sig` present, a signature's text ([`crate::trust`]), and
    /// `signer`'s over `canonical` by the algorithm the document states,
    /// as this machine's mode allows ([`Key::judge`]); made at `made`, and
    /// for a job or marker sent to `sends_to`. Returns the document's
    /// `alg`, `keyId` and `sig`.
    fn signature(
        &self,
        key: &Key,
        signer: &str,
        canonical: &str,
        made: Option<OffsetDateTime>,
        sends_to: Option<&str>,
    ) -> Verdicted<(Option<String>, Option<String>, String)> {
        self.signature_with(key, signer, canonical, made, sends_to, false)
            .map(|(alg, key_id, sig, _)| (alg, key_id, sig))
    }

    /// [`Self::signature`]; with `later`, an Ed25519 curve check is
    /// returned unmade when nothing else refuses ([`Key::judge_later`]).
    fn signature_with(
        &self,
        key: &Key,
        signer: &str,
        canonical: &str,
        made: Option<OffsetDateTime>,
        sends_to: Option<&str>,
        later: bool,
    ) -> Verdicted<Signed> {
        let sig = match self.obj.get("sig") {
            Some(Value::String(s)) => s,
            Some(_) => return Err(Rejection::new(Verdict::BadSignature, "sig is not a string")),
            None => {
                return Err(Rejection::new(
                    Verdict::BadSignature,
                    "it is not signed (no sig)",
                ));
            }
        };
        // A field that is there but no string is judged as an empty one.
        let field = |name: &str| match self.obj.get(name) {
            None => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(_) => Some(""),
        };
        let (alg, key_id) = (field("alg"), field("keyId"));
        let claim = Claim {
            signer,
            alg,
            key_id,
            made,
            sends_to,
            canonical,
            sig,
        };
        let judged = if later {
            key.judge_later(&claim)
        } else {
            key.judge(&claim).map(|()| None)
        };
        match judged {
            Ok(unchecked) => Ok((
                alg.map(str::to_string),
                key_id.map(str::to_string),
                sig.clone(),
                unchecked,
            )),
            Err(why) => Err(Rejection::new(refused(&why), why.to_string())),
        }
    }
}

/// A document's `alg`, `keyId` and `sig` as judged, and its curve check
/// when it was left for later.
type Signed = (Option<String>, Option<String>, String, Option<Unchecked>);

/// The verdict of a signature [`Key::judge`] refused.
fn refused(why: &Refusal) -> Verdict {
    match why {
        Refusal::NotASignature | Refusal::DoesNotVerify | Refusal::Forged(_) => {
            Verdict::BadSignature
        }
        Refusal::UnknownSigner(_) => Verdict::UnknownSigner,
        Refusal::KeyNotValid(_) => Verdict::KeyNotValid,
        Refusal::NotPermitted(_) => Verdict::NotPermitted,
        Refusal::AlgNotAllowed(_) => Verdict::AlgNotAllowed,
    }
}

/// Judges a cancel marker named `file_name` found in `listener_target`'s
/// `cancel/` directory.
pub fn marker(
    file_name: &str,
    read: FileRead,
    listener_target: &str,
    key: &Key,
) -> Verdicted<Marker> {
    let env = Envelope::open(
        read,
        marker::MAX_BYTES,
        &["jobId", "target", "createdAt", "origin"],
    )?;
    env.names()?;
    env.file_name(file_name)?;
    env.target(listener_target, Verdict::TargetMismatch)?;
    let canonical = marker::canonical(
        env.str("jobId"),
        env.str("target"),
        env.str("createdAt"),
        env.str("origin"),
    );
    let made = crate::base::clock::parse(env.str("createdAt"));
    let (alg, key_id, sig) = env.signature(
        key,
        env.str("origin"),
        &canonical,
        made,
        Some(env.str("target")),
    )?;
    Ok(Marker {
        job_id: env.str("jobId").to_string(),
        target: env.str("target").to_string(),
        created_at: env.str("createdAt").to_string(),
        origin: env.str("origin").to_string(),
        alg,
        key_id,
        sig,
    })
}

/// What becomes of a file in a cancel marker's place that did not verify
/// (docs/protocol.md §6.5): the watcher, the drain and `cancel` each ask
/// [`bad_marker`], with their own settle rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadMarker {
    /// There is no file: nothing to do; look again later.
    Gone,
    /// It may still be arriving: left in place and judged again.
    Wait,
    /// Moved to `archive/rejected/`, so it cannot hold the place a genuine
    /// marker needs.
    SetAside,
}

/// The bad-marker policy for a marker refused with `verdict`. A malformed
/// or unreadable one (held open, or mode 000, which a sync engine carries)
/// waits until `settled` says it is settled; `settled` is asked only then,
/// and a caller that holds the key passes `|| true` (it moves such a file
/// aside at once). Every other refusal is final.
pub fn bad_marker(verdict: Verdict, settled: impl FnOnce() -> bool) -> BadMarker {
    match verdict {
        Verdict::Missing => BadMarker::Gone,
        Verdict::Unreadable | Verdict::Malformed => {
            if settled() {
                BadMarker::SetAside
            } else {
                BadMarker::Wait
            }
        }
        _ => BadMarker::SetAside,
    }
}

/// How far ahead of the listener's clock a job may be dated and still run
/// now: clocks of a fleet drift, but not by hours.
pub const MAX_AHEAD: Duration = Duration::from_secs(3600);

/// A job's age rule: `stale` when `createdAt` is older than `max_age`. A
/// job dated in the future is never refused here ([`ahead`] holds it back):
/// a clock stepped back must lose nothing.
pub fn freshness(created: OffsetDateTime, now: OffsetDateTime, max_age: Duration) -> Verdicted<()> {
    let age = now - created;
    if age > max_age {
        return Err(Rejection::new(
            Verdict::Stale,
            format!(
                "createdAt is {} old, beyond the job max age of {}",
                crate::base::clock::human(age.unsigned_abs()),
                crate::base::clock::format_duration(max_age)
            ),
        ));
    }
    Ok(())
}

/// How far a job created at `created` lies ahead of `now`, when that is
/// more than [`MAX_AHEAD`]: the job is deferred (left queued and judged
/// again each pass) until the clock comes within that much of it.
pub fn ahead(created: OffsetDateTime, now: OffsetDateTime) -> Option<Duration> {
    let ahead = (created - now).try_into().ok()?;
    (ahead > MAX_AHEAD).then_some(ahead)
}

/// Why a job dated `ahead` in the future waits, for logs and views.
pub fn ahead_reason(ahead: Duration) -> String {
    format!(
        "dated {} ahead of this clock, more than the {} allowed: it waits until the clock comes within {} of it",
        crate::base::clock::human(ahead),
        crate::base::clock::format_duration(MAX_AHEAD),
        crate::base::clock::format_duration(MAX_AHEAD)
    )
}

/// The replay rule: a job id seen in `results/`, `archive/done/` or the ledger
/// is `already-processed`; `seen` names where it was found.
pub fn replay(id: &JobId, seen: Option<&str>) -> Verdicted<()> {
    match seen {
        None => Ok(()),
        Some(place) => Err(Rejection::new(
            Verdict::AlreadyProcessed,
            format!("job {id} was already processed (found in {place}); job ids are single-use"),
        )),
    }
}

/// Judges a result file for `job_id` on `target`: the same shape, name and
/// signature rules as markers and jobs.
pub fn outcome(job_id: &str, read: FileRead, target: &str, key: &Key) -> Verdicted<Outcome> {
    let env = Envelope::open(
        read,
        outcome::MAX_BYTES,
        &[
            "jobId",
            "target",
            "error",
            "startedAt",
            "finishedAt",
            "detail",
        ],
    )?;
    let ok = env
        .obj
        .get("ok")
        .and_then(Value::as_bool)
        .ok_or_else(|| Rejection::new(Verdict::Malformed, "field \"ok\" is not a boolean"))?;
    let exit_code = env
        .obj
        .get("exitCode")
        .and_then(Value::as_i64)
        .ok_or_else(|| {
            Rejection::new(Verdict::Malformed, "field \"exitCode\" is not an integer")
        })?;
    // Every field before `detail` in the canonical string must be unable to
    // hold a `|`, or a signature could be re-split across fields.
    if !names::is_job_id(env.str("jobId")) {
        return Err(Rejection::new(
            Verdict::InvalidJobId,
            format!("jobId {:?} is not a valid job id", env.str("jobId")),
        ));
    }
    if !names::is_machine(env.str("target")) {
        return Err(Rejection::new(
            Verdict::InvalidTarget,
            format!("target {:?} is not a valid machine name", env.str("target")),
        ));
    }
    if Termination::parse(env.str("error")).is_none() {
        return Err(Rejection::new(
            Verdict::Malformed,
            format!(
                "error {:?} is not a result word of the protocol",
                env.str("error")
            ),
        ));
    }
    let started = env.str("startedAt");
    if !started.is_empty() && crate::base::clock::parse(started).is_none() {
        return Err(Rejection::new(
            Verdict::Malformed,
            format!("startedAt {started:?} is not RFC 3339"),
        ));
    }
    if crate::base::clock::parse(env.str("finishedAt")).is_none() {
        return Err(Rejection::new(
            Verdict::Malformed,
            format!("finishedAt {:?} is not RFC 3339", env.str("finishedAt")),
        ));
    }
    if env.str("jobId") != job_id {
        return Err(Rejection::new(
            Verdict::JobIdMismatch,
            format!("it carries jobId {:?}, not {job_id:?}", env.str("jobId")),
        ));
    }
    env.target(target, Verdict::TargetMismatch)?;
    let mut o = Outcome {
        v: 1,
        job_id: env.str("jobId").to_string(),
        target: env.str("target").to_string(),
        ok,
        exit_code,
        error: env.str("error").to_string(),
        started_at: env.str("startedAt").to_string(),
        finished_at: env.str("finishedAt").to_string(),
        detail: env.str("detail").to_string(),
        alg: None,
        key_id: None,
        sig: String::new(),
        opened: None,
    };
    let made = crate::base::clock::parse(env.str("finishedAt"));
    (o.alg, o.key_id, o.sig) = env.signature(key, env.str("target"), &o.canonical(), made, None)?;
    // A sealed job's detail opens on its origin only.
    if let Some(me) = key.identity() {
        o.open_detail(me);
    }
    Ok(o)
}

mod jobs;
mod sealed;

pub use jobs::{checked, job, job_later};
pub use sealed::runnable;

#[cfg(test)]
mod tests;
