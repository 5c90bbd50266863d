//! Jobs (docs/protocol.md §5.2): `inbox/<jobId>.json`, at most 1 MiB, with a signed
//! `spec` string that is parsed only after its signature holds ([`peek`]
//! alone reads it unverified, for a reader without the key).
//!
//! A spec is two parts: the [`Header`], the scheduling facts other
//! machines read (`status`, `sweep`, dependencies, `cancel`), and the
//! [`Payload`], what runs, read by the target and the origin. Both are
//! signed in one text today; the split is where a body sealed to its
//! target will cut, so no reader of another machine's job touches the
//! payload but through [`Job::readable_payload`].

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use serde::ser::SerializeStruct;
use serde_json::Value;

use crate::names::{self, JobId, Machine};
use crate::trust::Key;

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
/// the job's target and its origin. Today both travel in one signed text
/// (docs/protocol.md §5.2), field order unchanged; the split is where a
/// sealed body will cut.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spec {
    /// What other machines read: scheduling and dependencies.
    pub header: Header,
    /// What runs: read by the target and the origin only.
    pub payload: Payload,
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
    /// The jobs that must end before this one starts ([`crate::dependency`]);
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
    argv: &'a [String],
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
        Wire {
            argv: &p.argv,
            cwd: &p.cwd,
            env: &p.env,
            timeout: &h.timeout,
            grace: &h.grace,
            priority: &h.priority,
            parent_job_id: &h.parent_job_id,
            label: &p.label,
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
    crate::clock::seconds_value(d.unwrap_or_default()).serialize(s)
}

/// The graceful-stop window when a spec names none.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(10);

const KNOWN_FIELDS: &[&str] = &[
    "argv",
    "cwd",
    "env",
    "timeoutSec",
    "graceSec",
    "priority",
    "parentJobId",
    "label",
    "after",
    "afterAny",
];

/// Why [`Spec::check`] refused a spec: the field at fault (`None`: the
/// spec as a whole) and the reason, which names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecRefusal {
    /// The spec field at fault, as the spec spells it.
    pub field: Option<&'static str>,
    /// Why, as [`Spec::parse`] says it.
    pub message: String,
}

fn refuse(field: &'static str, message: impl Into<String>) -> SpecRefusal {
    SpecRefusal {
        field: Some(field),
        message: message.into(),
    }
}

fn refuse_whole(message: impl Into<String>) -> SpecRefusal {
    SpecRefusal {
        field: None,
        message: message.into(),
    }
}

impl Spec {
    /// Parses a spec string; the error says which field is wrong and why.
    pub fn parse(text: &str) -> Result<Spec, String> {
        Spec::check(text).map_err(|r| r.message)
    }

    /// [`Spec::parse`], the error naming the field at fault apart: the one
    /// rule of what a listener accepts as a spec (`unsupported-spec`).
    pub fn check(text: &str) -> Result<Spec, SpecRefusal> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| refuse_whole(format!("spec is not JSON: {e}")))?;
        let obj = v
            .as_object()
            .ok_or_else(|| refuse_whole("spec is not a JSON object"))?;
        if let Some(unknown) = obj.keys().find(|k| !KNOWN_FIELDS.contains(&k.as_str())) {
            return Err(refuse_whole(format!(
                "spec field {unknown:?} is not supported"
            )));
        }
        let argv = match obj.get("argv") {
            Some(Value::Array(items)) if !items.is_empty() => items
                .iter()
                .map(|i| i.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| refuse("argv", "spec argv must hold only strings"))?,
            _ => {
                return Err(refuse(
                    "argv",
                    "spec argv must be a non-empty array of strings",
                ));
            }
        };
        argv_rule(&argv, &spec_field)?;
        let cwd = opt_string(obj, "cwd")?;
        cwd_rule(cwd.as_deref(), &spec_field)?;
        let mut env = BTreeMap::new();
        match obj.get("env") {
            None => {}
            Some(Value::Object(m)) => {
                for (k, v) in m {
                    // A value that is not a string is named as one with a NUL is.
                    let v = v.as_str().unwrap_or("\0");
                    env_rule(k, v, &spec_field)?;
                    env.insert(k.clone(), v.to_string());
                }
            }
            Some(_) => return Err(refuse("env", "spec env must be an object of strings")),
        }
        let priority = match opt_string(obj, "priority")?.as_deref() {
            None | Some("normal") => Priority::Normal,
            Some("high") => Priority::High,
            Some(other) => {
                return Err(refuse(
                    "priority",
                    format!("spec priority {other:?} is not normal or high"),
                ));
            }
        };
        let parent_job_id = opt_string(obj, "parentJobId")?;
        parent_rule(parent_job_id.as_deref(), &spec_field)?;
        let after = parse_after(obj.get("after")).map_err(|m| refuse("after", m))?;
        let after_any = match obj.get("afterAny") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(refuse("afterAny", "spec afterAny must be true or false")),
        };
        after_any_rule(after_any, &after, &spec_field)?;
        Ok(Spec {
            header: Header {
                timeout: opt_seconds(obj, "timeoutSec")?,
                grace: opt_seconds(obj, "graceSec")?,
                priority,
                parent_job_id,
                after,
                after_any,
            },
            payload: Payload {
                argv,
                cwd,
                env,
                label: opt_string(obj, "label")?,
            },
        })
    }

    /// The spec as the JSON text that gets signed.
    pub fn to_text(&self) -> String {
        serde_json::to_string(self).expect("specs serialise")
    }

    /// What a listener would refuse in this spec's values
    /// (`unsupported-spec`), by the same rules [`Spec::check`] applies once
    /// it has read a spec's text: a sender asks before it signs, without
    /// writing the spec out and reading it back. `name` says how a message
    /// names a field, given as the spec spells it (`--env` for a flag, say).
    pub fn refusal(&self, name: Name) -> Option<SpecRefusal> {
        argv_rule(&self.payload.argv, name)
            .and_then(|()| cwd_rule(self.payload.cwd.as_deref(), name))
            .and_then(|()| {
                self.payload
                    .env
                    .iter()
                    .try_for_each(|(k, v)| env_rule(k, v, name))
            })
            .and_then(|()| parent_rule(self.header.parent_job_id.as_deref(), name))
            .and_then(|()| after_any_rule(self.header.after_any, &self.header.after, name))
            .and_then(|()| seconds_rule("timeoutSec", self.header.timeout, name))
            .and_then(|()| seconds_rule("graceSec", self.header.grace, name))
            .err()
    }
}

impl Header {
    /// The grace to use when stopping this job.
    pub fn grace(&self) -> Duration {
        self.grace.unwrap_or(DEFAULT_GRACE)
    }
}

/// How a refusal names a spec field, given as the spec spells it.
pub type Name<'a> = &'a dyn Fn(&'static str) -> String;

/// A field as [`Spec::check`] names it: `spec argv`.
fn spec_field(field: &'static str) -> String {
    format!("spec {field}")
}

// The rules on a spec's values, one place each, for `Spec::check` and
// `Spec::refusal`.

fn argv_rule(argv: &[String], name: Name) -> Result<(), SpecRefusal> {
    if argv.is_empty() {
        let why = format!("{} must be a non-empty array of strings", name("argv"));
        return Err(refuse("argv", why));
    }
    if argv.iter().any(|a| a.contains('\0')) {
        return Err(refuse(
            "argv",
            format!("{} holds a NUL character", name("argv")),
        ));
    }
    Ok(())
}

fn cwd_rule(cwd: Option<&str>, name: Name) -> Result<(), SpecRefusal> {
    if cwd.is_some_and(|c| c.is_empty() || c.contains('\0')) {
        let why = format!("{} must be a non-empty path without NUL", name("cwd"));
        return Err(refuse("cwd", why));
    }
    Ok(())
}

fn env_rule(k: &str, v: &str, name: Name) -> Result<(), SpecRefusal> {
    if !names::is_env_name(k) {
        let why = format!(
            "{} name {k:?} is not allowed: names are letters, digits and '_', not starting with a digit or FLEET_DISPATCH_",
            name("env")
        );
        return Err(refuse("env", why));
    }
    if v.contains('\0') {
        let why = format!("{} {k:?} must be a string without NUL", name("env"));
        return Err(refuse("env", why));
    }
    Ok(())
}

fn parent_rule(parent: Option<&str>, name: Name) -> Result<(), SpecRefusal> {
    match parent {
        Some(p) if !names::is_job_id(p) => Err(refuse(
            "parentJobId",
            format!("{} {p:?} is not a valid job id", name("parentJobId")),
        )),
        _ => Ok(()),
    }
}

fn after_any_rule(after_any: bool, after: &[After], name: Name) -> Result<(), SpecRefusal> {
    if after_any && after.is_empty() {
        return Err(refuse(
            "afterAny",
            format!(
                "{} means nothing without {}: it says any ending of those jobs will do",
                name("afterAny"),
                name("after")
            ),
        ));
    }
    Ok(())
}

fn seconds_rule(field: &'static str, d: Option<Duration>, name: Name) -> Result<(), SpecRefusal> {
    if d.is_some_and(|d| d > MAX_DURATION) {
        let why = format!(
            "{} must be a number of seconds from 0 to 10 years",
            name(field)
        );
        return Err(refuse(field, why));
    }
    Ok(())
}

/// The `after` list: at most [`MAX_AFTER`] distinct `{"target", "jobId"}`
/// objects with valid names and nothing else.
fn parse_after(v: Option<&Value>) -> Result<Vec<After>, String> {
    let items = match v {
        None => return Ok(Vec::new()),
        Some(Value::Array(items)) if !items.is_empty() => items,
        Some(_) => return Err("spec after must be a non-empty array".into()),
    };
    if items.len() > MAX_AFTER {
        return Err(format!(
            "spec after names {} jobs; at most {MAX_AFTER} are allowed",
            items.len()
        ));
    }
    let mut out: Vec<After> = Vec::with_capacity(items.len());
    for item in items {
        let obj = item
            .as_object()
            .filter(|o| o.len() == 2)
            .ok_or("spec after entries must be objects with exactly target and jobId")?;
        let field = |f: &str| {
            obj.get(f)
                .and_then(Value::as_str)
                .ok_or_else(|| format!("spec after entry field {f} must be a string"))
        };
        let (target, job_id) = (field("target")?, field("jobId")?);
        let after = After {
            target: Machine::parse(target, "target")
                .map_err(|_| format!("spec after target {target:?} is not a valid machine name"))?,
            job_id: JobId::parse(job_id)
                .map_err(|_| format!("spec after jobId {job_id:?} is not a valid job id"))?,
        };
        if out.iter().any(|a| a.names(target, job_id)) {
            return Err(format!("spec after names {after} twice"));
        }
        out.push(after);
    }
    Ok(out)
}

fn opt_string(
    obj: &serde_json::Map<String, Value>,
    field: &'static str,
) -> Result<Option<String>, SpecRefusal> {
    match obj.get(field) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(refuse(field, format!("spec {field} must be a string"))),
    }
}

fn opt_seconds(
    obj: &serde_json::Map<String, Value>,
    field: &'static str,
) -> Result<Option<Duration>, SpecRefusal> {
    match obj.get(field) {
        None => Ok(None),
        Some(v) => v
            .as_f64()
            .filter(|s| s.is_finite() && *s >= 0.0 && *s <= MAX_SECONDS)
            .map(|s| Some(Duration::from_secs_f64(s)))
            .ok_or_else(|| {
                refuse(
                    field,
                    format!("spec {field} must be a number of seconds from 0 to 10 years"),
                )
            }),
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
    /// The signature.
    pub sig: String,
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
    sig: &'a str,
}

/// `job|{jobId}|{target}|{createdAt}|{origin}|{spec}`.
pub fn canonical(job_id: &str, target: &str, created_at: &str, origin: &str, spec: &str) -> String {
    format!("job|{job_id}|{target}|{created_at}|{origin}|{spec}")
}

impl Job {
    /// A newly signed job.
    pub fn sign(
        key: &Key,
        id: JobId,
        target: &str,
        origin: &str,
        created: time::OffsetDateTime,
        spec: Spec,
    ) -> Job {
        let created_at = crate::clock::format(created);
        let spec_text = spec.to_text();
        let sig = key.sign(&canonical(
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
            sig,
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
    /// sent it, the only machines a sealed body will be readable by.
    pub fn payload(&self) -> &Payload {
        &self.spec.payload
    }

    /// What the job runs, as a machine that only observes it (`status`)
    /// may see it: `None` when the body is not readable here. No body is
    /// sealed yet, so today it always is.
    pub fn readable_payload(&self) -> Option<&Payload> {
        Some(&self.spec.payload)
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
