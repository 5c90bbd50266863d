//! Jobs (docs/protocol.md §5.2): `inbox/<jobId>.json`, at most 1 MiB, with a signed
//! `spec` string that is parsed only after its signature holds ([`peek`]
//! alone reads it unverified, for a reader without the key).
//!
//! A spec is two parts: the [`Header`], the scheduling facts other
//! machines read (`status`, `sweep`, dependencies, `cancel`), and the
//! [`Payload`], what runs, read by the target and the origin. Both are
//! signed in one text; a sealed job (`enqueue --seal`, docs/protocol.md
//! §6.8) carries its payload in `sealed`, an envelope to its target
//! ([`Job::sign_sealed`]), so no reader of another machine's job touches
//! the payload but through [`Job::readable_payload`].
//!
//! This file is the document: the spec's parts, its text, the envelope
//! and the verified [`Job`]. The spec's rules, what a listener accepts and
//! a sender may sign, are `job/rules.rs`.

mod rules;

pub use rules::{Name, SpecRefusal};

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use serde::ser::SerializeStruct;
use serde_json::Value;

use crate::base::names::{JobId, Machine};
use crate::trust::Key;
use crate::trust::identity::SealingPublic;
use crate::trust::seal::{self, Sealed};

/// The most jobs one job may wait for (`after`).
pub const MAX_AFTER: usize = 64;

/// Largest job file accepted, checked before reading.
pub const MAX_BYTES: u64 = 1024 * 1024;

/// The longest `timeoutSec`/`graceSec` accepted: ten years, far beyond any job,
/// and small enough that deadline arithmetic can never overflow. The
/// sender checks it too ([`MAX_DURATION`]), so no job it sends is refused
/// for it.
const MAX_SECONDS: f64 = 10.0 * 365.0 * 86400.0;

/// `MAX_SECONDS` (ten years) as a duration.
pub const MAX_DURATION: Duration = Duration::from_secs(MAX_SECONDS as u64);

/// Drain priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    /// Runs before every normal job.
    High,
    /// The default.
    #[default]
    Normal,
}

/// What to run, as signed in the job's `spec` string: a public
/// [`Header`] that every machine may read, and a [`Payload`] read only by
/// the job's target and its origin. Both travel in one signed text
/// (docs/protocol.md §5.2), field order unchanged, the payload in clear or
/// sealed to the target (§6.8).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spec {
    /// What other machines read: scheduling and dependencies.
    pub header: Header,
    /// What runs: read by the target and the origin only. Empty in a
    /// sealed spec until its target opens the envelope.
    pub payload: Payload,
    /// The payload sealed to the target (docs/identities.md, "Sealed
    /// jobs"): signed in its place, so the job file shows only the header.
    pub sealed: Option<Sealed>,
}

/// The scheduling facts of a job: what `status`, `sweep`, dependencies
/// and `cancel` read of a job that is not theirs to run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Header {
    /// Wall-clock limit; none when absent.
    pub timeout: Option<Duration>,
    /// Time between the graceful stop and the forced kill; 10 s when absent.
    pub grace: Option<Duration>,
    /// Drain priority; normal when absent.
    pub priority: Priority,
    /// The job that enqueued this one, if any.
    pub parent_job_id: Option<String>,
    /// The jobs that must end before this one starts ([`crate::protocol::dependency`]);
    /// none when absent. Signed, so a listener that does not know the field
    /// refuses the job (`unsupported-spec`) rather than run it early.
    pub after: Vec<After>,
    /// True: any ending of the jobs in `after` will do; false (the
    /// default): each must have succeeded.
    pub after_any: bool,
}

/// What a job runs, and how it is described: read by the target that
/// runs it and the origin that sent it ([`Job::payload`]); a machine that
/// only observes the job asks [`Job::readable_payload`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Payload {
    /// Program and arguments, run directly (never through a shell).
    pub argv: Vec<String>,
    /// Working directory; the listener's own when absent.
    pub cwd: Option<String>,
    /// Extra environment variables.
    pub env: BTreeMap<String, String>,
    /// A short human description.
    pub label: Option<String>,
}

impl Spec {
    /// A spec that runs `argv`, with every other field absent.
    pub fn of(argv: Vec<String>) -> Spec {
        Spec {
            payload: Payload {
                argv,
                ..Payload::default()
            },
            ..Spec::default()
        }
    }
}

/// The spec text's fields in the order they have always been signed in:
/// header and payload fields interleave, so the text is written from
/// this one borrowed view rather than from the two parts.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Wire<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    sealed: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    argv: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cwd: &'a Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    env: &'a BTreeMap<String, String>,
    #[serde(
        rename = "timeoutSec",
        skip_serializing_if = "Option::is_none",
        serialize_with = "ser_secs"
    )]
    timeout: &'a Option<Duration>,
    #[serde(
        rename = "graceSec",
        skip_serializing_if = "Option::is_none",
        serialize_with = "ser_secs"
    )]
    grace: &'a Option<Duration>,
    #[serde(skip_serializing_if = "is_normal")]
    priority: &'a Priority,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_job_id: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    label: &'a Option<String>,
    #[serde(skip_serializing_if = "<[After]>::is_empty")]
    after: &'a [After],
    #[serde(skip_serializing_if = "is_false")]
    after_any: &'a bool,
}

impl Serialize for Spec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (h, p) = (&self.header, &self.payload);
        // A sealed spec carries none of the payload's fields in clear.
        let none = Payload::default();
        let clear = if self.sealed.is_some() { &none } else { p };
        Wire {
            sealed: self.sealed.as_ref().map(Sealed::to_json),
            argv: self.sealed.is_none().then_some(&p.argv[..]),
            cwd: &clear.cwd,
            env: &clear.env,
            timeout: &h.timeout,
            grace: &h.grace,
            priority: &h.priority,
            parent_job_id: &h.parent_job_id,
            label: &clear.label,
            after: &h.after,
            after_any: &h.after_any,
        }
        .serialize(s)
    }
}

/// A job this one waits for: its id on its target (docs/protocol.md §5.2).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct After {
    /// The machine that runs it.
    pub target: Machine,
    /// Its id.
    pub job_id: JobId,
}

impl After {
    /// True when this names the job `id` of `target` (names compared
    /// without case, as target folders are).
    pub fn names(&self, target: &str, id: &str) -> bool {
        self.target.same(target) && self.job_id.as_str() == id
    }
}

impl std::fmt::Display for After {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.target, self.job_id)
    }
}

impl Serialize for After {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("After", 2)?;
        st.serialize_field("target", self.target.as_str())?;
        st.serialize_field("jobId", self.job_id.as_str())?;
        st.end()
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_normal(p: &Priority) -> bool {
    *p == Priority::Normal
}

fn ser_secs<S: serde::Serializer>(d: &&Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    crate::base::clock::seconds_value(d.unwrap_or_default()).serialize(s)
}

/// The graceful-stop window when a spec names none.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(10);

impl Header {
    /// The grace to use when stopping this job.
    pub fn grace(&self) -> Duration {
        self.grace.unwrap_or(DEFAULT_GRACE)
    }
}

/// A job whose envelope, signature and spec have been checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    /// Its id.
    pub id: JobId,
    /// The machine that runs it (as signed).
    pub target: String,
    /// When it was made, as signed.
    pub created_at: String,
    /// The same, parsed.
    pub created: time::OffsetDateTime,
    /// The machine that sent it.
    pub origin: String,
    /// The signed spec text.
    pub spec_text: String,
    /// The spec, parsed: read through [`Job::header`] and [`Job::payload`],
    /// which say who may read what.
    pub(crate) spec: Spec,
    /// `ed25519` in the roster lane; none for the fleet key's HMAC.
    pub alg: Option<String>,
    /// The signing key's id on the roster; none for the fleet key.
    pub key_id: Option<String>,
    /// The signature.
    pub sig: String,
    /// For a sealed job, whether its payload is known here: opened by its
    /// target, or sealed by this machine.
    pub opened: bool,
}

/// Why a listener would refuse a signed job ([`Job::refusal`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unacceptable {
    /// The job file would be this many bytes, over [`MAX_BYTES`].
    TooLarge(u64),
    /// The spec is refused.
    Spec(SpecRefusal),
}

/// The job file as written: field order fixed for readability.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Envelope<'a> {
    v: u32,
    job_id: &'a str,
    target: &'a str,
    created_at: &'a str,
    origin: &'a str,
    spec: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    alg: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    key_id: Option<&'a str>,
    sig: &'a str,
}

/// `job|{jobId}|{target}|{createdAt}|{origin}|{spec}`.
pub fn canonical(job_id: &str, target: &str, created_at: &str, origin: &str, spec: &str) -> String {
    format!("job|{job_id}|{target}|{created_at}|{origin}|{spec}")
}

impl Job {
    /// A newly signed job whose payload is sealed to `to`, the target's
    /// X25519 key, with `random` (32 fresh bytes) for the envelope's
    /// ephemeral key; within the job's [`seal_context`], so the envelope
    /// opens in no other job.
    pub fn sign_sealed(
        key: &Key,
        id: JobId,
        target: &str,
        origin: &str,
        created: time::OffsetDateTime,
        spec: Spec,
        (to, random): (&SealingPublic, [u8; 32]),
    ) -> Job {
        let plain = payload_text(&spec.payload);
        let context = seal_context(id.as_str(), target, origin);
        let sealed = seal::seal(to, context.as_bytes(), plain.as_bytes(), random);
        let spec = Spec {
            sealed: Some(sealed),
            ..spec
        };
        Job::sign(key, id, target, origin, created, spec)
    }

    /// A newly signed job.
    pub fn sign(
        key: &Key,
        id: JobId,
        target: &str,
        origin: &str,
        created: time::OffsetDateTime,
        spec: Spec,
    ) -> Job {
        let created_at = crate::base::clock::format(created);
        let spec_text = spec.to_text();
        let signed = key.sign_document(&canonical(
            id.as_str(),
            target,
            &created_at,
            origin,
            &spec_text,
        ));
        Job {
            id,
            target: target.to_string(),
            created_at,
            created,
            origin: origin.to_string(),
            spec_text,
            spec,
            alg: signed.alg,
            key_id: signed.key_id,
            sig: signed.sig,
            opened: true,
        }
    }

    /// The job file's bytes.
    pub fn to_file_bytes(&self) -> Vec<u8> {
        super::to_file_bytes(&Envelope {
            v: 1,
            job_id: self.id.as_str(),
            target: &self.target,
            created_at: &self.created_at,
            origin: &self.origin,
            spec: &self.spec_text,
            alg: self.alg.as_deref(),
            key_id: self.key_id.as_deref(),
            sig: &self.sig,
        })
    }

    /// What a target's listener would refuse this job for once it holds
    /// the signature: a `file` (the job's bytes) over [`MAX_BYTES`]
    /// (`too-large`), or a spec [`Spec::refusal`] refuses
    /// (`unsupported-spec`), a field named by `name`. A sender asks before
    /// publishing, so it never sends a job that cannot run.
    pub fn refusal(&self, file: &[u8], name: Name) -> Option<Unacceptable> {
        let size = file.len() as u64;
        if size > MAX_BYTES {
            return Some(Unacceptable::TooLarge(size));
        }
        self.spec.refusal(name).map(Unacceptable::Spec)
    }

    /// The job's public facts: what any machine may read of it
    /// (scheduling, dependencies, its parent).
    pub fn header(&self) -> &Header {
        &self.spec.header
    }

    /// What the job runs: for the target that runs it and the origin that
    /// sent it; empty for a sealed job not opened here (read it through
    /// [`Job::readable_payload`] when that may be so).
    pub fn payload(&self) -> &Payload {
        &self.spec.payload
    }

    /// What the job runs, as a machine that only observes it (`status`)
    /// may see it: `None` when the payload is sealed and not opened here.
    pub fn readable_payload(&self) -> Option<&Payload> {
        (self.spec.sealed.is_none() || self.opened).then_some(&self.spec.payload)
    }

    /// True when the job's payload is sealed (whether or not it is opened
    /// here): what it prints, logs and reports must not reach the root.
    pub fn is_sealed(&self) -> bool {
        self.spec.sealed.is_some()
    }

    /// The order in which the inbox drains: high first, then `createdAt`,
    /// then id. Compared borrowed, so a sort of the whole inbox (each
    /// listing of it) copies no id.
    pub fn drain_order(&self, other: &Job) -> std::cmp::Ordering {
        (self.header().priority, self.created, &self.id).cmp(&(
            other.header().priority,
            other.created,
            &other.id,
        ))
    }
}

/// What a job's envelope is sealed within: `job|<jobId>|<target>|<origin>`.
pub fn seal_context(job_id: &str, target: &str, origin: &str) -> String {
    format!("job|{job_id}|{target}|{origin}")
}

/// The fields of the payload, for sealing: the JSON object of its fields
/// as a clear spec spells them.
#[derive(Serialize)]
struct PayloadWire<'a> {
    argv: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    cwd: &'a Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    env: &'a BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    label: &'a Option<String>,
}

/// The sealed plaintext of `p`.
fn payload_text(p: &Payload) -> String {
    serde_json::to_string(&PayloadWire {
        argv: &p.argv,
        cwd: &p.cwd,
        env: &p.env,
        label: &p.label,
    })
    .expect("payloads serialise")
}

/// The header a job file claims, read without verifying it: for a reader
/// without the key (`sweep` keeping the jobs a queued job waits for), so
/// never trusted beyond what a forged file may do harmlessly. `None` when
/// the file is not a JSON object with a `spec` string that [`Spec::check`]
/// accepts.
pub fn peek(bytes: &[u8]) -> Option<Header> {
    let v: Value = serde_json::from_slice(bytes).ok()?;
    let spec = Spec::parse(v.get("spec")?.as_str()?).ok()?;
    Some(spec.header)
}

/// `prog arg1 arg2 …` on one line, shortened to 80 characters.
pub fn argv_summary(argv: &[String]) -> String {
    let mut s = argv.join(" ");
    if s.chars().count() > 80 {
        s = s.chars().take(77).collect::<String>() + "...";
    }
    s
}

#[cfg(test)]
mod tests;
