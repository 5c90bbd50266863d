//! Jobs (docs/protocol.md §5.2): `inbox/<jobId>.json`, at most 1 MiB, with a signed
//! `spec` string that is parsed only after its signature holds.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use serde::ser::SerializeStruct;
use serde_json::Value;

use crate::key::Key;
use crate::names::{self, JobId, Machine};

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

/// What to run, as signed in the job's `spec` string.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Spec {
    /// Program and arguments, run directly (never through a shell).
    pub argv: Vec<String>,
    /// Working directory; the listener's own when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Extra environment variables.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Wall-clock limit; none when absent.
    #[serde(
        rename = "timeoutSec",
        skip_serializing_if = "Option::is_none",
        serialize_with = "ser_secs"
    )]
    pub timeout: Option<Duration>,
    /// Time between the graceful stop and the forced kill; 10 s when absent.
    #[serde(
        rename = "graceSec",
        skip_serializing_if = "Option::is_none",
        serialize_with = "ser_secs"
    )]
    pub grace: Option<Duration>,
    /// Drain priority; normal when absent.
    #[serde(skip_serializing_if = "is_normal")]
    pub priority: Priority,
    /// The job that enqueued this one, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_job_id: Option<String>,
    /// A short human description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The jobs that must end before this one starts ([`crate::dependency`]);
    /// none when absent. Signed, so a listener that does not know the field
    /// refuses the job (`unsupported-spec`) rather than run it early.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<After>,
    /// True: any ending of the jobs in `after` will do; false (the
    /// default): each must have succeeded.
    #[serde(skip_serializing_if = "is_false")]
    pub after_any: bool,
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

fn ser_secs<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
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
            argv,
            cwd,
            env,
            timeout: opt_seconds(obj, "timeoutSec")?,
            grace: opt_seconds(obj, "graceSec")?,
            priority,
            parent_job_id,
            label: opt_string(obj, "label")?,
            after,
            after_any,
        })
    }

    /// The spec as the JSON text that gets signed.
    pub fn to_text(&self) -> String {
        serde_json::to_string(self).expect("specs serialise")
    }

    /// The grace to use when stopping this job.
    pub fn grace(&self) -> Duration {
        self.grace.unwrap_or(DEFAULT_GRACE)
    }

    /// What a listener would refuse in this spec's values
    /// (`unsupported-spec`), by the same rules [`Spec::check`] applies once
    /// it has read a spec's text: a sender asks before it signs, without
    /// writing the spec out and reading it back. `name` says how a message
    /// names a field, given as the spec spells it (`--env` for a flag, say).
    pub fn refusal(&self, name: Name) -> Option<SpecRefusal> {
        argv_rule(&self.argv, name)
            .and_then(|()| cwd_rule(self.cwd.as_deref(), name))
            .and_then(|()| self.env.iter().try_for_each(|(k, v)| env_rule(k, v, name)))
            .and_then(|()| parent_rule(self.parent_job_id.as_deref(), name))
            .and_then(|()| after_any_rule(self.after_any, &self.after, name))
            .and_then(|()| seconds_rule("timeoutSec", self.timeout, name))
            .and_then(|()| seconds_rule("graceSec", self.grace, name))
            .err()
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
    /// The spec, parsed.
    pub spec: Spec,
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

    /// The order in which the inbox drains: high first, then `createdAt`,
    /// then id. Compared borrowed, so a sort of the whole inbox (each
    /// listing of it) copies no id.
    pub fn drain_order(&self, other: &Job) -> std::cmp::Ordering {
        (self.spec.priority, self.created, &self.id).cmp(&(
            other.spec.priority,
            other.created,
            &other.id,
        ))
    }
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
mod tests {
    use super::*;

    #[test]
    fn spec_fields() {
        let s = Spec::parse(
            r#"{"argv":["a","b"],"cwd":"/tmp","env":{"X":"1"},"timeoutSec":1.5,"graceSec":2,"priority":"high","parentJobId":"p-1","label":"hi"}"#,
        )
        .unwrap();
        assert_eq!(s.argv, ["a", "b"]);
        assert_eq!(s.timeout, Some(Duration::from_millis(1500)));
        assert_eq!(s.grace(), Duration::from_secs(2));
        assert_eq!(s.priority, Priority::High);
        assert_eq!(Spec::parse(&s.to_text()).unwrap(), s);
    }

    #[test]
    fn spec_refusals() {
        for bad in [
            r#"{"argv":["a"],"shell":true}"#,
            r#"{"argv":[]}"#,
            r#"{"argv":"a"}"#,
            r#"{"argv":[1]}"#,
            r#"{}"#,
            r#"[]"#,
            r#"{"argv":["a"],"env":{"FLEET_DISPATCH_JOB_ID":"x"}}"#,
            r#"{"argv":["a"],"env":{"A-B":"x"}}"#,
            r#"{"argv":["a"],"env":{"A":1}}"#,
            r#"{"argv":["a"],"timeoutSec":-1}"#,
            r#"{"argv":["a"],"timeoutSec":1e300}"#,
            r#"{"argv":["a"],"timeoutSec":"5"}"#,
            r#"{"argv":["a"],"priority":"urgent"}"#,
            r#"{"argv":["a"],"parentJobId":"../x"}"#,
            r#"{"argv":["a\u0000b"]}"#,
            r#"{"argv":["a"],"after":[]}"#,
            r#"{"argv":["a"],"after":{"target":"PC","jobId":"x"}}"#,
            r#"{"argv":["a"],"after":[{"target":"PC"}]}"#,
            r#"{"argv":["a"],"after":[{"target":"PC","jobId":"../x"}]}"#,
            r#"{"argv":["a"],"after":[{"target":"a/b","jobId":"x"}]}"#,
            r#"{"argv":["a"],"after":[{"target":"PC","jobId":"x","ok":true}]}"#,
            r#"{"argv":["a"],"after":[{"target":"PC","jobId":"x"},{"target":"pc","jobId":"x"}]}"#,
            r#"{"argv":["a"],"afterAny":true}"#,
            r#"{"argv":["a"],"after":[{"target":"PC","jobId":"x"}],"afterAny":"yes"}"#,
            r#"not json"#,
        ] {
            assert!(Spec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn after_round_trips_and_is_bounded() {
        let s = Spec::parse(
            r#"{"argv":["a"],"after":[{"target":"BUILD","jobId":"j-1"},{"target":"PC","jobId":"j-2"}],"afterAny":true}"#,
        )
        .unwrap();
        assert_eq!(s.after.len(), 2);
        assert_eq!(s.after[0].to_string(), "BUILD:j-1");
        assert!(s.after_any);
        assert_eq!(Spec::parse(&s.to_text()).unwrap(), s);
        let list = |n: usize| {
            (0..n)
                .map(|i| format!(r#"{{"target":"PC","jobId":"j-{i}"}}"#))
                .collect::<Vec<_>>()
                .join(",")
        };
        assert!(
            Spec::parse(&format!(
                r#"{{"argv":["a"],"after":[{}]}}"#,
                list(MAX_AFTER)
            ))
            .is_ok()
        );
        let over = Spec::parse(&format!(
            r#"{{"argv":["a"],"after":[{}]}}"#,
            list(MAX_AFTER + 1)
        ));
        assert!(over.unwrap_err().contains("at most 64"));
        // No dependencies: the spec text is what it always was.
        let plain = Spec {
            argv: vec!["a".into()],
            ..Spec::default()
        };
        assert_eq!(plain.to_text(), r#"{"argv":["a"]}"#);
    }

    #[test]
    fn a_refusal_names_its_field() {
        for (bad, field) in [
            (r#"{"argv":["a\u0000b"]}"#, Some("argv")),
            (r#"{"argv":["a"],"cwd":"/tmp/\u0000"}"#, Some("cwd")),
            (r#"{"argv":["a"],"env":{"A":"\u0000"}}"#, Some("env")),
            (r#"{"argv":["a"],"timeoutSec":-1}"#, Some("timeoutSec")),
            (r#"{"argv":["a"],"afterAny":true}"#, Some("afterAny")),
            (r#"{"argv":["a"],"after":[]}"#, Some("after")),
            (r#"{"argv":["a"],"shell":true}"#, None),
        ] {
            let r = Spec::check(bad).unwrap_err();
            assert_eq!(r.field, field, "{bad}");
            assert_eq!(Spec::parse(bad).unwrap_err(), r.message);
        }
    }

    #[test]
    fn a_job_over_the_limit_or_with_a_bad_spec_would_be_refused() {
        let key = Key::from_bytes(&[7u8; 32]).unwrap();
        let t0 = time::macros::datetime!(2026-11-29 10:00 UTC);
        let sign = |argv: Vec<String>| {
            Job::sign(
                &key,
                JobId::parse("j").unwrap(),
                "PC",
                "PC",
                t0,
                Spec {
                    argv,
                    ..Spec::default()
                },
            )
        };
        let refusal = |j: &Job| j.refusal(&j.to_file_bytes(), &spec_field);
        assert_eq!(refusal(&sign(vec!["true".into()])), None);
        let big = sign(vec!["x".repeat(MAX_BYTES as usize)]);
        assert!(matches!(refusal(&big), Some(Unacceptable::TooLarge(n)) if n > MAX_BYTES));
        let nul = sign(vec!["tr\0ue".into()]);
        assert!(matches!(
            refusal(&nul),
            Some(Unacceptable::Spec(SpecRefusal {
                field: Some("argv"),
                ..
            }))
        ));
    }

    #[test]
    fn drain_order_is_high_then_created_then_id() {
        let key = Key::from_bytes(&[7u8; 32]).unwrap();
        let t0 = time::macros::datetime!(2026-11-29 10:00 UTC);
        let mk = |id: &str, secs: i64, p: Priority| {
            Job::sign(
                &key,
                JobId::parse(id).unwrap(),
                "PC",
                "PC",
                t0 + time::Duration::seconds(secs),
                Spec {
                    argv: vec!["true".into()],
                    priority: p,
                    ..Spec::default()
                },
            )
        };
        let mut jobs = [
            mk("b", 0, Priority::Normal),
            mk("a", 0, Priority::Normal),
            mk("c", -10, Priority::Normal),
            mk("z", 50, Priority::High),
        ];
        jobs.sort_by(Job::drain_order);
        let ids: Vec<_> = jobs.iter().map(|j| j.id.as_str()).collect();
        assert_eq!(ids, ["z", "c", "a", "b"]);
    }
}
