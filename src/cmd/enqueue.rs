//! `enqueue`: sign a job and publish it into the target's inbox; with
//! `--interrupt`, stop-and-steer; with `--wait`, wait for its result.

use std::collections::BTreeMap;

use serde_json::json;

use crate::cancel::{self, CancelStatus};
use crate::cli::{EnqueueArgs, PriorityArg};
use crate::clock;
use crate::config::Context;
use crate::dependency;
use crate::doc::{Job, Priority, Spec};
use crate::error::{Error, Result};
use crate::exit;
use crate::http::client::{self, Url};
use crate::names::{self, JobId};
use crate::output::{Follower, Streams};
use crate::submit;
use crate::wait;

/// Builds the spec from the flags; every value is checked before anything
/// is written.
fn spec_from(args: &EnqueueArgs, parent: Option<&JobId>) -> Result<Spec> {
    let mut env = BTreeMap::new();
    for kv in &args.env {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| Error::validation(format!("--env {kv:?}: write NAME=VALUE")))?;
        if !names::is_env_name(k) {
            return Err(Error::validation(format!(
                "--env {k:?}: names are letters, digits and '_', not starting with a digit or FLEET_DISPATCH_"
            )));
        }
        if v.contains('\0') {
            return Err(Error::validation(format!(
                "--env {k}: the value holds a NUL character"
            )));
        }
        env.insert(k.to_string(), v.to_string());
    }
    if args.argv.is_empty() || args.argv[0].is_empty() {
        return Err(Error::validation("no program given: put it after `--`"));
    }
    if let Some(cwd) = args.cwd.as_deref() {
        if cwd.is_empty() {
            return Err(Error::validation("--cwd is empty"));
        }
        if !is_absolute_anywhere(cwd) {
            return Err(Error::validation(format!(
                "--cwd {cwd:?} is relative: the job runs on the target, where no directory of this shell applies"
            ))
            .hint("give the full path on the target, e.g. /home/me/repo or C:\\Users\\me\\repo"));
        }
    }
    let timeout = super::duration_flag(&args.timeout, "--timeout")?;
    if timeout.is_some_and(|t| t.is_zero()) {
        return Err(
            Error::validation("--timeout 0 would stop the job as soon as it starts")
                .hint("omit --timeout for no limit"),
        );
    }
    let high = args.priority == Some(PriorityArg::High) || args.interrupt.is_some();
    Ok(Spec {
        argv: args.argv.clone(),
        cwd: args.cwd.clone(),
        env,
        timeout,
        grace: super::duration_flag(&args.grace, "--grace")?,
        priority: if high {
            Priority::High
        } else {
            Priority::Normal
        },
        parent_job_id: parent.map(|p| p.to_string()),
        label: args.label.clone(),
        // Bound to the job's target and id once they are known.
        after: Vec::new(),
        after_any: args.after_any,
    })
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

/// Runs `enqueue`.
pub fn run(ctx: &Context, args: EnqueueArgs) -> Result<u8> {
    let parent = ctx.enclosing_job()?;
    let mut spec = spec_from(&args, parent.as_ref())?;
    let after = dependency::parse_flags(&args.after)?;
    let wait_limit = super::duration_flag(&args.wait_timeout, "--wait-timeout")?;
    let id = match &args.job_id {
        Some(s) => JobId::parse(s)?,
        None => JobId::generate(clock::now()),
    };
    let via = args.via.as_deref().map(Url::parse).transpose()?;
    let root = ctx.root()?;
    // Key and identity first: a refusal must not leave a fleet member's
    // folder behind.
    let key = ctx.key(Some(&root))?;
    let origin = ctx.machine()?;
    let dirs = ctx.target(&root, &args.target)?;
    let interrupt = args
        .interrupt
        .as_deref()
        .map(|text| super::job_ref(ctx, &root, &dirs, text))
        .transpose()?;

    spec.after = dependency::bind(&after, dirs.target(), &id)?;
    submit::check_unused(&dirs, &id, &key)?;
    let job = Job::sign(
        &key,
        id.clone(),
        dirs.target().as_str(),
        origin.as_str(),
        clock::now(),
        spec,
    );
    let path = dirs.job_file(&id);
    client::deliver_job(
        via.as_ref(),
        &dirs,
        &job,
        &key,
        ctx.durability().enqueue_flush(),
    )?;
    if let Ok(state) = ctx.state_dir(&root) {
        crate::jobref::remember(&state, &dirs, &id);
    }

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
        "priority": if job.spec.priority == Priority::High { "high" } else { "normal" },
    });
    if let Some(p) = &parent {
        out["parentJobId"] = json!(p.as_str());
    }
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
    if !args.wait {
        super::emit(ctx, &out, &human);
        return Ok(exit::SUCCESS);
    }
    if !ctx.json() {
        crate::out::line(&human.to_string());
    }
    let mut follower = args
        .follow
        .then(|| Follower::new(&dirs, &id, Streams::Both));
    let waited = wait::for_result(&dirs, &id, &key, wait_limit, ctx.json(), follower.as_mut())?;
    let limit = Some(wait_limit.unwrap_or_default());
    let o = match super::with_result(ctx, &dirs, &id, &key, &out, waited, limit) {
        Ok(o) => o,
        Err(status) => return Ok(status),
    };
    if ctx.json() {
        out["result"] = super::result_json(&o);
        crate::out::line(&out.to_string());
    } else {
        crate::out::line(&super::result_human(&o));
    }
    Ok(o.wait_exit_status())
}
