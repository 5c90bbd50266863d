//! A spec's rules (docs/protocol.md §5.2): what a listener accepts as a
//! spec's text ([`Spec::check`]) and what a sender may sign
//! ([`Spec::refusal`]), one function per value rule, each naming the field
//! as its caller spells it.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use super::{After, Header, MAX_AFTER, MAX_DURATION, MAX_SECONDS, Payload, Priority, Spec};
use crate::base::names::{self, JobId, Machine};
use crate::trust::seal::Sealed;

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
    "sealed",
];

/// The fields a sealed spec carries in its envelope, never in clear.
const PAYLOAD_FIELDS: &[&str] = &["argv", "cwd", "env", "label"];

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
        if let Some(sealed) = obj.get("sealed") {
            return Spec::check_sealed(obj, sealed);
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
            sealed: None,
        })
    }

    /// A sealed spec: its header by the same rules as a clear one's, its
    /// payload fields absent (they are in the envelope), the envelope well
    /// formed.
    fn check_sealed(
        obj: &serde_json::Map<String, Value>,
        sealed: &Value,
    ) -> Result<Spec, SpecRefusal> {
        if let Some(clear) = PAYLOAD_FIELDS.iter().find(|f| obj.contains_key(**f)) {
            return Err(refuse_whole(format!(
                "spec field {clear:?} must not be in clear beside sealed"
            )));
        }
        let envelope =
            Sealed::from_json(sealed).map_err(|m| refuse("sealed", format!("spec sealed: {m}")))?;
        let mut clear = obj.clone();
        clear.remove("sealed");
        clear.insert(
            "argv".into(),
            Value::Array(vec![Value::String("sealed".into())]),
        );
        let header = Spec::check(&Value::Object(clear).to_string())?.header;
        Ok(Spec {
            header,
            payload: Payload::default(),
            sealed: Some(envelope),
        })
    }

    /// The spec of `spec_text`, a sealed one, with its envelope's
    /// `plaintext` as its payload, judged by [`Spec::check`] as one spec:
    /// the plaintext must be a JSON object of the payload's fields only.
    pub fn check_opened(spec_text: &str, plaintext: &[u8]) -> Result<Spec, SpecRefusal> {
        let sealed = Spec::check(spec_text)?;
        let Ok(Value::Object(payload)) = serde_json::from_slice::<Value>(plaintext) else {
            return Err(refuse("sealed", "the sealed payload is not a JSON object"));
        };
        if let Some(other) = payload
            .keys()
            .find(|k| !PAYLOAD_FIELDS.contains(&k.as_str()))
        {
            return Err(refuse(
                "sealed",
                format!("the sealed payload has field {other:?}, not one of argv, cwd, env, label"),
            ));
        }
        let Ok(Value::Object(mut whole)) = serde_json::from_str::<Value>(spec_text) else {
            return Err(refuse_whole("spec is not a JSON object"));
        };
        whole.remove("sealed");
        whole.extend(payload);
        let opened = Spec::check(&Value::Object(whole).to_string())?;
        Ok(Spec {
            sealed: sealed.sealed,
            ..opened
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

/// How a refusal names a spec field, given as the spec spells it.
pub type Name<'a> = &'a dyn Fn(&'static str) -> String;

/// A field as [`Spec::check`] names it: `spec argv`.
pub(super) fn spec_field(field: &'static str) -> String {
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
