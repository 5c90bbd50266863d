//! A job request, built and checked before anything is signed: the flags
//! of `enqueue` and each line of a `--batch` file become [`Fields`], and
//! the one [`request`] turns them into a [`Request`], so a line meets the
//! same checks as the flags; [`Request::spec_for`] binds its `after` list
//! to each target, and [`checked`] refuses what a target's
//! listener would.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::base::clock;
use crate::base::error::{Error, Result};
use crate::base::names::{JobId, Machine};
use crate::front::cli::{EnqueueArgs, PriorityArg};
use crate::front::config::Context;
use crate::protocol::dependency;
use crate::protocol::doc::job::{Header, MAX_BYTES, Payload, Unacceptable};
use crate::protocol::doc::{Job, Priority, Spec};

pub use super::resolver::{Resolve, Resolver};
use crate::trust::Key;

/// The fields of one job request, from the flags or from a `--batch`
/// line: every request goes through [`request`], so a line meets the same
/// checks as the flags.
#[derive(Debug, Default, Clone)]
pub struct Fields {
    argv: Vec<String>,
    target: Option<String>,
    job_id: Option<String>,
    cwd: Option<String>,
    env: Option<BTreeMap<String, String>>,
    timeout: Option<String>,
    grace: Option<String>,
    priority: Option<PriorityArg>,
    label: Option<String>,
    after: Option<Vec<String>>,
    after_any: Option<bool>,
}

/// Each field's name in a `--batch` line and as a flag.
const FIELDS: [(&str, &str); 11] = [
    ("argv", "the program after `--`"),
    ("target", "--target"),
    ("jobId", "--job-id"),
    ("cwd", "--cwd"),
    ("env", "--env"),
    ("timeout", "--timeout"),
    ("grace", "--grace"),
    ("priority", "--priority"),
    ("label", "--label"),
    ("after", "--after"),
    ("afterAny", "--after-any"),
];

/// Where a request's fields came from, to name a bad one as it was given.
#[derive(Clone, Copy)]
pub enum Origin {
    /// The flags of `enqueue`.
    Flags,
    /// A line of a `--batch` file.
    Line,
}

impl Origin {
    /// How a message names the field whose line key is `key`.
    pub fn name(self, key: &str) -> String {
        match self {
            Origin::Line => format!("{key:?}"),
            Origin::Flags => FIELDS
                .iter()
                .find(|(k, _)| *k == key)
                .map_or(key, |(_, flag)| flag)
                .to_string(),
        }
    }
}

impl Fields {
    /// The fields the flags give.
    pub fn from_flags(args: &EnqueueArgs) -> Result<Fields> {
        let mut env = BTreeMap::new();
        for kv in &args.env {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| Error::validation(format!("--env {kv:?}: write NAME=VALUE")))?;
            if env.insert(k.to_string(), v.to_string()).is_some() {
                return Err(Error::validation(format!(
                    "--env {k}: the variable is given twice; a job gets one value"
                )));
            }
        }
        Ok(Fields {
            argv: args.argv.clone(),
            target: args.target.clone(),
            job_id: args.job_id.clone(),
            cwd: args.cwd.clone(),
            env: (!args.env.is_empty()).then_some(env),
            timeout: args.timeout.clone(),
            grace: args.grace.clone(),
            priority: args.priority,
            label: args.label.clone(),
            after: (!args.after.is_empty()).then(|| args.after.clone()),
            after_any: args.after_any.then_some(true),
        })
    }

    /// The fields of one `--batch` line: a JSON object with the keys of
    /// `FIELDS`; any other key, a key given twice (at any depth), or a
    /// value of the wrong type, is refused naming the key.
    pub fn from_line(text: &str) -> Result<Fields> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| Error::validation(format!("not a JSON object: {e}")))?;
        if let Some(path) = super::strict_json::duplicate_key(text) {
            let (key, within) = path.split_last().expect("a path names its key");
            let within = within
                .iter()
                .map(|k| format!(" in {k:?}"))
                .collect::<String>();
            return Err(Error::validation(format!(
                "key {key:?}{within} is given twice: write each field once"
            )));
        }
        let Value::Object(map) = value else {
            return Err(Error::validation(
                "not a JSON object: write {\"argv\": [\"PROGRAM\", \"ARG\"], ...}",
            ));
        };
        let mut f = Fields::default();
        for (key, v) in map {
            fn take<T: serde::de::DeserializeOwned>(key: &str, v: Value) -> Result<T> {
                serde_json::from_value(v)
                    .map_err(|e| Error::validation(format!("field {key:?}: {e}")))
            }
            match key.as_str() {
                "argv" => f.argv = take(&key, v)?,
                "target" => f.target = Some(take(&key, v)?),
                "jobId" => f.job_id = Some(take(&key, v)?),
                "cwd" => f.cwd = Some(take(&key, v)?),
                "env" => f.env = Some(take(&key, v)?),
                "timeout" => f.timeout = Some(duration_text(&key, v)?),
                "grace" => f.grace = Some(duration_text(&key, v)?),
                "label" => f.label = Some(take(&key, v)?),
                "after" => f.after = Some(take(&key, v)?),
                "afterAny" => f.after_any = Some(take(&key, v)?),
                "priority" => {
                    let word: String = take(&key, v)?;
                    f.priority = Some(match word.as_str() {
                        "normal" => PriorityArg::Normal,
                        "high" => PriorityArg::High,
                        _ => {
                            return Err(Error::validation(format!(
                                "field \"priority\": {word:?} is not normal or high"
                            )));
                        }
                    });
                }
                other => {
                    let known: Vec<&str> = FIELDS.iter().map(|(k, _)| *k).collect();
                    return Err(Error::validation(format!(
                        "unknown field {other:?} (the fields are {})",
                        known.join(", ")
                    )));
                }
            }
        }
        Ok(f)
    }

    /// These fields, each one not given taken from `defaults`. The
    /// dependency is one default: `--after-any` qualifies the `--after`
    /// jobs, so a line naming its own `after` takes `afterAny` from the
    /// line alone (false unless it says so).
    pub fn or(self, defaults: &Fields) -> Fields {
        let d = defaults.clone();
        let (after, after_any) = match self.after {
            Some(own) => (Some(own), self.after_any),
            None => (d.after, self.after_any.or(d.after_any)),
        };
        Fields {
            argv: if self.argv.is_empty() {
                d.argv
            } else {
                self.argv
            },
            target: self.target.or(d.target),
            job_id: self.job_id.or(d.job_id),
            cwd: self.cwd.or(d.cwd),
            env: self.env.or(d.env),
            timeout: self.timeout.or(d.timeout),
            grace: self.grace.or(d.grace),
            priority: self.priority.or(d.priority),
            label: self.label.or(d.label),
            after,
            after_any,
        }
    }
}

/// One job to sign: its id, its target list as given, its spec but for the
/// `after` list, and the jobs that list names, bound to each target by
/// [`Request::spec_for`].
pub struct Request {
    /// The job's id.
    pub id: JobId,
    /// Its target or target list, as given.
    pub targets: String,
    /// Its spec, with an empty `after` list.
    pub spec: Spec,
    /// The job it was sent from inside of (`FLEET_DISPATCH_JOB_ID`).
    pub parent: Option<JobId>,
    after: Vec<dependency::Named>,
    origin: Origin,
}

impl Request {
    /// The spec of the copy for `target`: a dependency without a target
    /// means the job of that id on `target` itself (docs/protocol.md
    /// §7.13), so each copy of a fan-out waits for its own. Each is named
    /// as a job is anywhere ([`crate::places::jobref`]: `last`, a unique prefix,
    /// or an id taken as it is); its target must be known (`NOT_FOUND`).
    /// A job named twice there, or the copy itself, is `VALIDATION_ERROR`.
    pub fn spec_for(&self, at: &mut Resolver, target: &Machine) -> Result<Spec> {
        self.spec_by(target, &mut |on, id| at.resolve(on, id))
    }

    /// The spec of the copy for `target`, each job its `after` list names
    /// found by `resolve` (the target it names, or `target` itself; and
    /// the text naming the job there): [`Self::spec_for`]'s rules over any
    /// root.
    pub fn spec_by(&self, target: &Machine, resolve: &mut Resolve<'_>) -> Result<Spec> {
        let field = self.origin.name("after");
        let named = self
            .after
            .iter()
            .map(|(t, id)| {
                let on = t.as_ref().unwrap_or(target);
                let named = resolve(on, id).map_err(|mut e| {
                    e.message = format!("{field} {on}:{id}: {}", e.message);
                    e
                })?;
                Ok((Some(named.0), named.1))
            })
            .collect::<Result<Vec<_>>>()?;
        let after = dependency::bind(&named, target, &self.id, &field)?;
        let mut spec = self.spec.clone();
        spec.header.after = after;
        Ok(spec)
    }
}

/// Checks `f` and builds its request: every value is checked before
/// anything is written. `high` forces high priority (`--interrupt`).
pub fn request(f: &Fields, origin: Origin, parent: Option<&JobId>, high: bool) -> Result<Request> {
    let name = |key: &str| origin.name(key);
    if f.argv.is_empty() || f.argv[0].is_empty() {
        return Err(Error::validation(match origin {
            Origin::Flags => "no program given: put it after `--`".to_string(),
            Origin::Line => "no program given: write \"argv\": [\"PROGRAM\", ...]".to_string(),
        }));
    }
    let Some(targets) = f.target.clone() else {
        return Err(
            Error::validation(format!("no target: give {}", name("target")))
                .hint("or give --target with --batch, for every line without one"),
        );
    };
    // An empty one is the spec's to refuse ([`Spec::refusal`]).
    if let Some(cwd) = f.cwd.as_deref().filter(|c| !c.is_empty())
        && !is_absolute_anywhere(cwd)
    {
        return Err(Error::validation(format!(
            "{} {cwd:?} is relative: the job runs on the target, where no directory of this shell applies",
            name("cwd")
        ))
        .hint("give the full path on the target, e.g. /home/me/repo or C:\\Users\\me\\repo"));
    }
    let timeout = spec_duration(&f.timeout, &name("timeout"))?;
    if timeout.is_some_and(|t| t.is_zero()) {
        return Err(Error::validation(format!(
            "{} 0 would stop the job as soon as it starts",
            name("timeout")
        ))
        .hint("omit it for no limit"));
    }
    let after = dependency::parse(f.after.as_deref().unwrap_or_default(), &name("after"))?;
    let after_any = f.after_any.unwrap_or(false);
    let high = f.priority == Some(PriorityArg::High) || high;
    let id = match &f.job_id {
        Some(s) if s == crate::places::jobref::LAST => {
            return Err(Error::validation(format!(
                "{} {s:?}: the word names the last job enqueued, so no job may have it as its id",
                name("jobId")
            )));
        }
        Some(s) => JobId::parse(s)?,
        None => JobId::generate(clock::now()),
    };
    let spec = Spec {
        header: Header {
            timeout,
            grace: spec_duration(&f.grace, &name("grace"))?,
            priority: if high {
                Priority::High
            } else {
                Priority::Normal
            },
            parent_job_id: parent.map(|p| p.to_string()),
            // Bound to each copy's target by `Request::spec_for`.
            after: Vec::new(),
            after_any,
        },
        payload: Payload {
            argv: f.argv.clone(),
            cwd: f.cwd.clone(),
            env: f.env.clone().unwrap_or_default(),
            label: f.label.clone(),
        },
        sealed: None,
    };
    Ok(Request {
        id,
        targets,
        spec,
        parent: parent.cloned(),
        after,
        origin,
    })
}

/// A batch line's `timeout` or `grace`: a duration as the flag takes it
/// (`"90s"`, `"1h30m"`), or a bare number of seconds, as a bare flag
/// value (`--timeout 90`) means.
fn duration_text(key: &str, v: Value) -> Result<String> {
    match v {
        Value::String(s) => Ok(s),
        Value::Number(n) => Ok(n.to_string()),
        _ => Err(Error::validation(format!(
            "field {key:?}: a duration such as \"90s\" or a number of seconds"
        ))),
    }
}

/// A `timeout` or `grace` value as a duration (a listener's bound on it is
/// the spec's rule, [`Spec::refusal`]).
fn spec_duration(value: &Option<String>, name: &str) -> Result<Option<Duration>> {
    value
        .as_deref()
        .map(|s| {
            clock::parse_duration(s)
                .map_err(|e| Error::validation(format!("{name}: {}", e.message)))
        })
        .transpose()
}

/// True for a path that is absolute on the Unix or the Windows side: the
/// target's system is not known here.
fn is_absolute_anywhere(p: &str) -> bool {
    let b = p.as_bytes();
    p.starts_with('/')
        || p.starts_with('\\')
        || (b.len() >= 3
            && b[0].is_ascii_alphabetic()
            && b[1] == b':'
            && matches!(b[2], b'/' | b'\\'))
}

/// The signed `job` with its file's bytes (serialised once: checked here,
/// then written as they are); refused when its target's listener would
/// refuse it (`too-large`, `unsupported-spec`), naming the field as
/// `given` gives it. Every door checks so before it writes.
pub fn checked(job: Job, given: Origin) -> Result<(Job, Vec<u8>)> {
    let bytes = job.to_file_bytes();
    let name = |field: &'static str| {
        given.name(match field {
            "timeoutSec" => "timeout",
            "graceSec" => "grace",
            other => other,
        })
    };
    match job.refusal(&bytes, &name) {
        None => Ok((job, bytes)),
        Some(Unacceptable::TooLarge(size)) => Err(Error::validation(format!(
            "the job file would be {size} bytes, over the {MAX_BYTES} a target accepts (it would refuse it as too-large); most of it is {}",
            given.name(largest_field(job.payload()))
        ))
        .hint("put large data in a file on the target and give the job its path")),
        Some(Unacceptable::Spec(r)) => Err(Error::validation(format!(
            "{}; a target would refuse the job (unsupported-spec)",
            r.message
        ))),
    }
}

/// In `roster` mode, refuses `job` (its file's `bytes`) when its target
/// would refuse it for its signer, judged here by the same rules against
/// this machine's own good roster: this machine not on it
/// (`unknown-signer`), its key outside its window (`key-not-valid`), or not
/// permitted to send there (`not-permitted`). The message names the
/// verdict; nothing is written.
pub fn roster_refusal(job: &Job, bytes: &[u8], key: &Key) -> Result<()> {
    use crate::protocol::accept::Verdict;
    let good_here = key.live().is_some_and(|l| l.current().is_ok());
    if key.auth() != crate::trust::Auth::Roster || !good_here {
        return Ok(());
    }
    let read = crate::base::read::FileRead::Bytes(bytes.to_vec());
    match crate::protocol::accept::job(&job.id.file_name(), read, &job.target, key) {
        Err(r)
            if matches!(
                r.verdict,
                Verdict::UnknownSigner
                    | Verdict::KeyNotValid
                    | Verdict::NotPermitted
                    | Verdict::SealRequired
            ) =>
        {
            let e = Error::forbidden(format!(
                "{} would refuse this job as {}: {}",
                job.target,
                r.verdict.as_str(),
                r.message
            ));
            Err(if r.verdict == Verdict::SealRequired {
                e.hint("send it with enqueue --seal")
            } else {
                e.hint("the admin changes the roster (`roster add`, `rotate` or `remove` and `add` with --may-send)")
            })
        }
        _ => Ok(()),
    }
}

/// The key of the field that takes the most room in `spec`: what to name
/// when the job is too large.
fn largest_field(spec: &Payload) -> &'static str {
    let len = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    [
        ("argv", spec.argv.iter().map(String::len).sum::<usize>()),
        ("env", spec.env.iter().map(|(k, v)| k.len() + v.len()).sum()),
        ("cwd", len(&spec.cwd)),
        ("label", len(&spec.label)),
    ]
    .into_iter()
    .max_by_key(|(_, n)| *n)
    .map_or("argv", |(k, _)| k)
}

/// The request the flags of `enqueue` make, from inside the job
/// `FLEET_DISPATCH_JOB_ID` names, if any (its parent); `--interrupt` forces
/// high priority.
pub fn from_flags(ctx: &Context, args: &EnqueueArgs) -> Result<Request> {
    let parent = ctx.enclosing_job()?;
    let fields = Fields::from_flags(args)?;
    request(
        &fields,
        Origin::Flags,
        parent.as_ref(),
        args.interrupt.is_some(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::doc::job::After;

    /// A spec with `argv` `true` changed by `f`.
    fn spec(f: impl FnOnce(&mut Spec)) -> Spec {
        let mut s = Spec::of(vec!["true".into()]);
        f(&mut s);
        s
    }

    #[test]
    fn a_spec_value_is_refused_as_a_listener_refuses_its_text() {
        let long = Some(crate::protocol::doc::job::MAX_DURATION + Duration::from_secs(1));
        let bad = [
            spec(|s| s.payload.argv = vec!["tr\0ue".into()]),
            spec(|s| s.payload.cwd = Some(String::new())),
            spec(|s| s.payload.cwd = Some("/tmp/\0".into())),
            spec(|s| {
                s.payload.env.insert("1A".into(), "x".into());
            }),
            spec(|s| {
                s.payload.env.insert("A".into(), "\0".into());
            }),
            spec(|s| s.header.timeout = long),
            spec(|s| s.header.grace = long),
            spec(|s| s.header.after_any = true),
            spec(|s| s.header.parent_job_id = Some("../x".into())),
        ];
        let listener = |f: &'static str| format!("spec {f}");
        for s in bad {
            let by_value = s.refusal(&listener);
            assert!(by_value.is_some(), "{s:?}");
            assert_eq!(by_value, Spec::check(&s.to_text()).err(), "{s:?}");
        }
        let fine = spec(|s| {
            s.header.after = vec![After {
                target: Machine::parse("PC", "target").unwrap(),
                job_id: JobId::parse("a").unwrap(),
            }];
            s.header.after_any = true;
            s.header.timeout = Some(crate::protocol::doc::job::MAX_DURATION);
        });
        assert_eq!(fine.refusal(&listener), None);
        assert!(Spec::check(&fine.to_text()).is_ok());
    }

    #[test]
    fn a_refused_spec_names_the_field_as_it_was_given() {
        let key = Key::from_bytes(&[7u8; 32]).unwrap();
        let id = JobId::parse("j").unwrap();
        let job = |s: Spec| Job::sign(&key, id.clone(), "PC", "PC", clock::now(), s);
        let env = || {
            spec(|s| {
                s.payload.env.insert("1A".into(), "x".into());
            })
        };
        let flags = checked(job(env()), Origin::Flags).unwrap_err();
        assert!(
            flags.message.starts_with("--env name \"1A\""),
            "{}",
            flags.message
        );
        assert!(
            flags.message.ends_with("(unsupported-spec)"),
            "{}",
            flags.message
        );
        let line = checked(job(env()), Origin::Line).unwrap_err();
        assert!(line.message.starts_with("\"env\" name"), "{}", line.message);
        let any = checked(job(spec(|s| s.header.after_any = true)), Origin::Line).unwrap_err();
        assert!(
            any.message
                .starts_with("\"afterAny\" means nothing without \"after\""),
            "{}",
            any.message
        );
        let long = spec(|s| s.header.grace = Some(crate::protocol::doc::job::MAX_DURATION * 2));
        let grace = checked(job(long), Origin::Flags).unwrap_err();
        assert!(
            grace.message.starts_with("--grace must be"),
            "{}",
            grace.message
        );
        let (j, bytes) = checked(job(spec(|_| {})), Origin::Flags).unwrap();
        assert_eq!(bytes, j.to_file_bytes());
    }
}
