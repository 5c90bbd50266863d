//! `enqueue`: sign a job and publish it into the target's inbox; with
//! `--interrupt`, stop-and-steer; with `--wait`, wait for its result. A
//! target list (`A,B`, `all`) fans the job out, one copy per target;
//! `--batch` takes one job per line. The flags and a batch line both
//! become [`Fields`], checked by the one [`request`].

mod batch;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use clap::ValueEnum;
use serde_json::{Value, json};

use crate::cancel::{self, CancelStatus};
use crate::cli::{EnqueueArgs, PriorityArg};
use crate::clock;
use crate::config::Context;
use crate::dependency;
use crate::doc::job::{Header, Payload};
use crate::doc::job::{MAX_BYTES, Unacceptable};
use crate::doc::{Job, Priority, Spec};
use crate::error::{Error, Result};
use crate::exit;
use crate::http::client::{self, Url};
use crate::layout::{TargetDirs, is_target_list};
use crate::names::{self, JobId, Machine};
use crate::observe::Observed;
use crate::submit;
use crate::trust::Key;
use crate::wait;

/// The fields of one job request, from the flags or from a `--batch`
/// line: every request goes through [`request`], so a line meets the same
/// checks as the flags.
#[derive(Debug, Default, Clone)]
struct Fields {
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
enum Origin {
    Flags,
    Line,
}

impl Origin {
    /// How a message names the field whose line key is `key`.
    fn name(self, key: &str) -> String {
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
    fn from_flags(args: &EnqueueArgs) -> Result<Fields> {
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
    /// [`FIELDS`]; any other key, a key given twice (at any depth), or a
    /// value of the wrong type, is refused naming the key.
    fn from_line(text: &str) -> Result<Fields> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| Error::validation(format!("not a JSON object: {e}")))?;
        if let Some(path) = batch::duplicate_key(text) {
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
                    f.priority = Some(PriorityArg::from_str(&word, false).map_err(|_| {
                        Error::validation(format!(
                            "field \"priority\": {word:?} is not normal or high"
                        ))
                    })?);
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
    fn or(self, defaults: &Fields) -> Fields {
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
struct Request {
    id: JobId,
    targets: String,
    spec: Spec,
    after: Vec<dependency::Named>,
    origin: Origin,
}

impl Request {
    /// The spec of the copy for `target`: a dependency without a target
    /// means the job of that id on `target` itself (docs/protocol.md
    /// §7.13), so each copy of a fan-out waits for its own. Each is named
    /// as a job is anywhere ([`crate::jobref`]: `last`, a unique prefix,
    /// or an id taken as it is); its target must be known (`NOT_FOUND`).
    /// A job named twice there, or the copy itself, is `VALIDATION_ERROR`.
    fn spec_for(&self, at: &mut Resolver, target: &Machine) -> Result<Spec> {
        let field = self.origin.name("after");
        let named = self
            .after
            .iter()
            .map(|(t, id)| {
                let on = t.as_ref().unwrap_or(target);
                let named = at.resolve(on, id).map_err(|mut e| {
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

/// Names the jobs `after` lists as every command names a job
/// ([`crate::jobref::Names`]): each target's folders listed at most once
/// per command, and each `TARGET:TEXT` resolved once, so a batch of many
/// lines, each after another, costs one listing, not one per line.
struct Resolver<'a> {
    ctx: &'a Context,
    root: &'a Path,
    names: crate::jobref::Names<'a>,
    /// Target folders by the name given, without case.
    targets: BTreeMap<String, TargetDirs>,
    seen: BTreeMap<(String, String), (Machine, JobId)>,
}

impl<'a> Resolver<'a> {
    fn new(ctx: &'a Context, root: &'a Path, key: &'a Key) -> Resolver<'a> {
        Resolver {
            ctx,
            root,
            names: crate::jobref::Names::new(key, ctx.state_dir(root).ok()),
            targets: BTreeMap::new(),
            seen: BTreeMap::new(),
        }
    }

    /// Counts `id`, which this command sends to `target`, as a job known
    /// there: a line of a batch may wait for another line's job.
    fn add_own(&mut self, target: &Machine, id: &JobId) {
        self.names.add_own(target, id);
    }

    /// The target folder `on` names (`NOT_FOUND` when none does) and the
    /// job `text` names there.
    fn resolve(&mut self, on: &Machine, text: &JobId) -> Result<(Machine, JobId)> {
        let target = on.as_str().to_ascii_lowercase();
        let key = (target.clone(), text.to_string());
        if let Some(found) = self.seen.get(&key) {
            return Ok(found.clone());
        }
        let dirs = match self.targets.get(&target) {
            Some(d) => d.clone(),
            None => {
                let d = self.ctx.target(self.root, on.as_str())?;
                self.targets.insert(target, d.clone());
                d
            }
        };
        let id = self.names.resolve(&dirs, text.as_str())?;
        let found = (dirs.target().clone(), id);
        self.seen.insert(key, found.clone());
        Ok(found)
    }
}

/// Checks `f` and builds its request: every value is checked before
/// anything is written. `high` forces high priority (`--interrupt`).
fn request(f: &Fields, origin: Origin, parent: Option<&JobId>, high: bool) -> Result<Request> {
    let name = |key: &str| origin.name(key);
    let mut env = BTreeMap::new();
    for (k, v) in f.env.iter().flatten() {
        if !names::is_env_name(k) {
            return Err(Error::validation(format!(
                "{} {k:?}: names are letters, digits and '_', not starting with a digit or FLEET_DISPATCH_",
                name("env")
            )));
        }
        if v.contains('\0') {
            return Err(Error::validation(format!(
                "{} {k}: the value holds a NUL character",
                name("env")
            )));
        }
        env.insert(k.clone(), v.clone());
    }
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
    if let Some(cwd) = f.cwd.as_deref() {
        if cwd.is_empty() {
            return Err(Error::validation(format!("{} is empty", name("cwd"))));
        }
        if !is_absolute_anywhere(cwd) {
            return Err(Error::validation(format!(
                "{} {cwd:?} is relative: the job runs on the target, where no directory of this shell applies",
                name("cwd")
            ))
            .hint("give the full path on the target, e.g. /home/me/repo or C:\\Users\\me\\repo"));
        }
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
    if after_any && after.is_empty() {
        return Err(Error::validation(format!(
            "{} means nothing without {}: it says any ending of those jobs will do",
            name("afterAny"),
            name("after")
        )));
    }
    let high = f.priority == Some(PriorityArg::High) || high;
    let id = match &f.job_id {
        Some(s) if s == crate::jobref::LAST => {
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
            env,
            label: f.label.clone(),
        },
    };
    Ok(Request {
        id,
        targets,
        spec,
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

/// A `timeout` or `grace` value, within what every listener accepts.
fn spec_duration(value: &Option<String>, name: &str) -> Result<Option<Duration>> {
    let d = super::duration_flag(value, name)?;
    if d.is_some_and(|d| d > crate::doc::job::MAX_DURATION) {
        return Err(Error::validation(format!(
            "{name} {}: more than 10 years, the longest a target accepts",
            value.as_deref().unwrap_or_default()
        )));
    }
    Ok(d)
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

/// Refuses `job`, signed and not yet published, when its target's listener
/// would ([`Job::refusal`]: `too-large`, `unsupported-spec`), naming the
/// field as `origin` gives it. Every door checks so before it writes.
fn check_acceptable(job: &Job, origin: Origin) -> Result<()> {
    match job.refusal() {
        None => Ok(()),
        Some(Unacceptable::TooLarge(size)) => Err(Error::validation(format!(
            "the job file would be {size} bytes, over the {MAX_BYTES} a target accepts (it would refuse it as too-large); most of it is {}",
            origin.name(largest_field(job.payload()))
        ))
        .hint("put large data in a file on the target and give the job its path")),
        Some(Unacceptable::Spec(r)) => {
            let given = r.field.map_or("the job".to_string(), |f| {
                origin.name(match f {
                    "timeoutSec" => "timeout",
                    "graceSec" => "grace",
                    other => other,
                })
            });
            Err(Error::validation(format!(
                "{given}: {}; a target would refuse the job (unsupported-spec)",
                r.message
            )))
        }
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

/// Runs `enqueue`.
pub fn run(ctx: &Context, args: EnqueueArgs) -> Result<u8> {
    if let Some(file) = &args.batch {
        return batch::run(ctx, &args, file);
    }
    let parent = ctx.enclosing_job()?;
    let fields = Fields::from_flags(&args)?;
    let req = request(
        &fields,
        Origin::Flags,
        parent.as_ref(),
        args.interrupt.is_some(),
    )?;
    let wait_limit = super::duration_flag(&args.waiting.wait_timeout, "--wait-timeout")?;
    if is_target_list(&req.targets) {
        return fan_out(ctx, &args, req, parent.as_ref(), wait_limit);
    }
    let via = args.via.as_deref().map(Url::parse).transpose()?;
    let root = ctx.root()?;
    // Key and identity first: a refusal must not leave a fleet member's
    // folder behind.
    let key = ctx.key(Some(&root))?;
    let origin = ctx.machine()?;
    // Through the folder only: a root that went away is not built again.
    let guard = via
        .is_none()
        .then(|| super::known_root(ctx, &root, &key))
        .transpose()?;
    let dirs = ctx.target(&root, &req.targets)?;
    let dirs = match &guard {
        Some(g) => dirs.guarded(g),
        None => dirs,
    };
    let interrupt = args
        .interrupt
        .as_deref()
        .map(|text| interrupted(ctx, &root, &dirs, &key, text, &req.id, args.force))
        .transpose()?;
    if let Some(old) = interrupt.as_ref().filter(|old| **old == req.id) {
        return Err(Error::validation(format!(
            "--interrupt {old}: a job cannot interrupt itself (it is the job being enqueued)"
        ))
        .hint("name the running job to stop, or give the new job another --job-id"));
    }

    let spec = req.spec_for(&mut Resolver::new(ctx, &root, &key), dirs.target())?;
    let id = req.id;
    submit::check_unused(&dirs, &id, &key)?;
    let job = Job::sign(
        &key,
        id.clone(),
        dirs.target().as_str(),
        origin.as_str(),
        clock::now(),
        spec,
    );
    check_acceptable(&job, Origin::Flags)?;
    let path = dirs.job_file(&id);
    client::deliver_job(
        via.as_ref(),
        &dirs,
        &job,
        &key,
        ctx.durability().enqueue_flush(),
    )?;
    crate::jobref::remember_on(ctx.state_dir(&root), &[&dirs], &id);
    let warnings = if via.is_none() {
        crate::doctor::listener_warnings(&dirs, &key)
    } else {
        Vec::new()
    };

    // Steer: the new job is queued first, so a cancel that cannot land
    // leaves it simply waiting its turn.
    let steer = interrupt.as_ref().map(|old| {
        (
            old,
            cancel::sign(&dirs, old, &key, &origin, parent.as_ref())
                .and_then(|m| client::deliver_marker(via.as_ref(), &dirs, old, &key, &m)),
        )
    });
    let mut out = json!({
        "jobId": id.as_str(),
        "target": dirs.target().as_str(),
        "path": path.display().to_string(),
        "resultPath": dirs.result_file(&id).display().to_string(),
        "priority": priority_word(job.header().priority),
    });
    if let Some(p) = &parent {
        out["parentJobId"] = json!(p.as_str());
    }
    warn(ctx, &mut out, &warnings);
    // Stdout carries only the answer, the id (`id=$(fleet-dispatch enqueue
    // …)`); what became of the interrupt is a note on stderr.
    let human = id.to_string();
    let note = match &steer {
        Some((old, Ok(status))) => {
            out["interrupt"] = status.to_json(old);
            let mut note = status.sentence(old);
            if !matches!(status, CancelStatus::Requested { .. }) {
                note.push_str(&format!("; {id} waits its turn"));
            }
            let running = matches!(
                status,
                CancelStatus::Requested {
                    observed: Observed::Running,
                    ..
                }
            );
            if args.interrupt.as_deref() == Some(crate::jobref::LAST) && !running {
                // `last` is this machine's last job, not the one running:
                // say so, or the steer reads as done.
                note = format!(
                    "--interrupt {} named {old}, the last job sent from here, which is not running: nothing running was interrupted ({note})",
                    crate::jobref::LAST
                );
                out["interrupt"]["lastNotRunning"] = json!(true);
            }
            Some(note)
        }
        Some((old, Err(e))) => {
            out["interrupt"] = json!({"jobId": old.as_str(), "status": "not_requested", "error": e.to_json()["error"]});
            Some(format!(
                "cancel of {old} not requested ({e}); {id} waits its turn"
            ))
        }
        None => None,
    };
    if let Some(note) = note.filter(|_| !ctx.json()) {
        eprintln!("fleet-dispatch: {note}");
    }
    if !args.waiting.wait {
        super::emit(ctx, &out, &human);
        return Ok(exit::SUCCESS);
    }
    if !ctx.json() {
        crate::out::line(&human.to_string());
    }
    let mut follower = args
        .waiting
        .follow
        .then(|| super::follower(ctx, &dirs, &id));
    let waited = wait::for_result(&dirs, &id, &key, wait_limit, ctx.json(), follower.as_mut())?;
    if let Some(f) = follower.as_mut() {
        // A character cut short at the very end of the output.
        let _ = f.end_json(&mut std::io::stdout());
    }
    let limit = Some(wait_limit.unwrap_or_default());
    let o = match super::with_result(ctx, &dirs, &id, &key, &out, waited, limit) {
        Ok(o) => o,
        Err(status) => return Ok(status),
    };
    if ctx.json() {
        out["result"] = crate::view::result::json(&o);
        crate::out::line(&out.to_string());
    } else {
        let followed = args.waiting.follow;
        crate::out::line(&if followed {
            crate::view::result::followed(&o)
        } else {
            crate::view::result::text(&o)
        });
    }
    Ok(o.wait_exit_status())
}

/// The job `--interrupt TEXT` names on `dirs`' target: `running`, the one
/// job the target runs now ([`crate::jobref::running`]), or a job named as
/// any command names one, refused (`NOT_FOUND`) when neither the target nor
/// this machine knows it, unless `force` (`--force`). Checked before the
/// new job (`own`) is published, so a mistake queues nothing; `own` counts
/// as known, for the caller to refuse as a job interrupting itself.
fn interrupted(
    ctx: &Context,
    root: &Path,
    dirs: &TargetDirs,
    key: &Key,
    text: &str,
    own: &JobId,
    force: bool,
) -> Result<JobId> {
    let refused = |mut e: Error| {
        e.message = format!("--interrupt {text}: {}", e.message);
        e
    };
    if text == crate::jobref::RUNNING {
        return crate::jobref::running(dirs, key).map_err(refused);
    }
    let mut names = crate::jobref::Names::new(key, ctx.state_dir(root).ok());
    names.add_own(dirs.target(), own);
    let id = names.resolve(dirs, text).map_err(refused)?;
    if !force {
        names.check_known(dirs, &id, "--force").map_err(refused)?;
    }
    Ok(id)
}

/// Adds what `doctor` warns of a target's listener ([`crate::doctor::listener_warnings`])
/// to the answer `out` as `warnings`, and says it on stderr: the job is
/// queued, but it will wait, or be refused, and the sender should know
/// now rather than at the timeout.
fn warn(ctx: &Context, out: &mut Value, warnings: &[crate::doctor::Check]) {
    if warnings.is_empty() {
        return;
    }
    out["warnings"] = json!(warnings);
    if ctx.json() {
        return;
    }
    for w in warnings {
        let target = w.target.as_deref().unwrap_or_default();
        let hint = w
            .hint
            .as_deref()
            .map(|h| format!("\nhint: {h}"))
            .unwrap_or_default();
        eprintln!(
            "fleet-dispatch: warning: {target}: {}; the job is queued{hint}",
            w.message
        );
    }
}

/// `enqueue` to a target list: the same id to each target, each copy
/// signed for its target. Every target and id is checked before any copy
/// is published; a copy that cannot be published stops the rest, and the
/// error says which targets have the job. With `all`, a target folder
/// whose inbox cannot take a job (a file or a link in its place) is passed
/// over and named in the answer, so one unsound folder does not keep the
/// job from the sound ones.
fn fan_out(
    ctx: &Context,
    args: &EnqueueArgs,
    req: Request,
    parent: Option<&JobId>,
    wait_limit: Option<std::time::Duration>,
) -> Result<u8> {
    // One job to stop, one listener to reach, one stream to follow: each
    // of these names a single target.
    for (given, flag) in [
        (args.interrupt.is_some(), "--interrupt"),
        (args.via.is_some(), "--via"),
        (args.waiting.follow, "--follow"),
    ] {
        if given {
            return Err(Error::validation(format!(
                "{flag} takes one target; --target {} names several",
                req.targets
            )));
        }
    }
    let root = ctx.root()?;
    let key = ctx.key(Some(&root))?;
    let origin = ctx.machine()?;
    let guard = super::known_root(ctx, &root, &key)?;
    let listed: Vec<TargetDirs> = ctx
        .targets(&root, &req.targets)?
        .into_iter()
        .map(|d| d.guarded(&guard))
        .collect();
    let mut targets = Vec::with_capacity(listed.len());
    let mut passed_over: Vec<(usize, TargetDirs, Error)> = Vec::new();
    let mut specs = Vec::with_capacity(listed.len());
    let mut names = Resolver::new(ctx, &root, &key);
    // Where each target stands in the list, so answers keep its order.
    let mut at = Vec::with_capacity(listed.len());
    for (n, dirs) in listed.into_iter().enumerate() {
        let held = match submit::check_target(&dirs) {
            Ok(held) => held,
            Err(e) if crate::layout::is_all(&req.targets) => {
                passed_over.push((n, dirs, e));
                continue;
            }
            Err(e) => return Err(e),
        };
        submit::check_free(&dirs, &held, &req.id, &key)?;
        specs.push(req.spec_for(&mut names, dirs.target())?);
        targets.push(dirs);
        at.push(n);
    }
    if targets.is_empty()
        && let Some((_, _, first)) = passed_over.first()
    {
        let each: Vec<String> = passed_over
            .iter()
            .map(|(_, d, e)| format!("{}: {}", d.target(), e.message))
            .collect();
        return Err(Error::new(
            first.code,
            format!(
                "--target all: no target folder can take the job ({})",
                each.join("; ")
            ),
        ));
    }
    let passed_over: Vec<(usize, super::Answer)> = passed_over
        .iter()
        .map(|(n, d, e)| (*n, super::Answer::failed(d, e)))
        .collect();
    let id = &req.id;
    let created = clock::now();
    let jobs = targets
        .iter()
        .zip(specs)
        .map(|(dirs, spec)| {
            let job = Job::sign(
                &key,
                id.clone(),
                dirs.target().as_str(),
                origin.as_str(),
                created,
                spec,
            );
            check_acceptable(&job, Origin::Flags).map(|()| job)
        })
        .collect::<Result<Vec<_>>>()?;
    let flush = ctx.durability().enqueue_flush();
    let mut copies = Vec::with_capacity(targets.len());
    for (n, (dirs, job)) in targets.iter().zip(&jobs).enumerate() {
        if let Err(e) = submit::publish(dirs, job, &key, flush) {
            return Err(partly(id, &targets[..n], &targets[n..], e));
        }
        copies.push(json!({
            "target": dirs.target().as_str(),
            "path": dirs.job_file(id).display().to_string(),
            "resultPath": dirs.result_file(id).display().to_string(),
        }));
    }
    // Remembered on each target, so `last` names every copy.
    let each: Vec<&TargetDirs> = targets.iter().collect();
    crate::jobref::remember_on(ctx.state_dir(&root), &each, id);
    let mut out = json!({
        "jobId": id.as_str(),
        "targets": targets.iter().map(|d| d.target().as_str()).collect::<Vec<_>>(),
        "copies": copies,
        "priority": priority_word(req.spec.header.priority),
    });
    if let Some(p) = parent {
        out["parentJobId"] = json!(p.as_str());
    }
    if !passed_over.is_empty() {
        out["passedOver"] = passed_over.iter().map(|(_, a)| a.json.clone()).collect();
    }
    let warnings: Vec<_> = targets
        .iter()
        .flat_map(|d| crate::doctor::listener_warnings(d, &key))
        .collect();
    warn(ctx, &mut out, &warnings);
    if !args.waiting.wait {
        super::emit(ctx, &out, id.as_str());
        if !ctx.json() {
            for (_, a) in &passed_over {
                eprintln!("fleet-dispatch: {}; no copy was sent there", a.line);
            }
        }
        return Ok(exit::worst(passed_over.iter().map(|(_, a)| a.status)));
    }
    let each: Vec<_> = targets.into_iter().map(|d| (d, Ok(id.clone()))).collect();
    let mut answers: Vec<(usize, super::Answer)> = at
        .into_iter()
        .zip(super::results_each(&each, &key, Some(wait_limit)))
        .chain(passed_over)
        .collect();
    answers.sort_by_key(|(n, _)| *n);
    let answers: Vec<super::Answer> = answers.into_iter().map(|(_, a)| a).collect();
    if ctx.json() {
        out["results"] = answers.iter().map(|a| a.json.clone()).collect();
        crate::out::line(&out.to_string());
        return Ok(exit::worst(answers.iter().map(|a| a.status)));
    }
    crate::out::line(id.as_str());
    Ok(super::emit_each(ctx, &answers))
}

/// The error of a fan-out or batch stopped by `e` part way: which targets
/// have the job and which do not, so nothing is left half done unsaid.
fn partly(id: &JobId, done: &[TargetDirs], not: &[TargetDirs], e: Error) -> Error {
    let names = |d: &[TargetDirs]| {
        d.iter()
            .map(|d| d.target().as_str())
            .collect::<Vec<_>>()
            .join(",")
    };
    if done.is_empty() {
        return Error::new(
            e.code,
            format!("{id} was published to no target: {}", e.message),
        );
    }
    Error::new(
        e.code,
        format!(
            "{id} was published to {} but not to {}: {}",
            names(done),
            names(not),
            e.message
        ),
    )
    .hint(format!(
        "publish the rest with --job-id {id} --target {}, or cancel the copies with cancel --target {} --job-id {id}",
        names(not),
        names(done)
    ))
}

/// The word for a priority in JSON.
fn priority_word(p: Priority) -> &'static str {
    if p == Priority::High {
        "high"
    } else {
        "normal"
    }
}
