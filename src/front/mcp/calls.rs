//! What each tool does, through the library the commands use: the sender
//! ([`crate::front::send`]) dispatches, stops and steers; [`crate::places::observe`] and
//! [`crate::view`] answer what a job is and how it ended; the logs are
//! read as `logs` reads them ([`crate::places::output`]). Each returns the tool's
//! structured answer and a one-line text, or the CLI's error.
//!
//! The caller ([`Caller`]) is never an argument: inside a job (task mode)
//! it is that job, from the environment its listener gave it; a job it
//! dispatches is recorded as its child, and it may stop or message only
//! its own direct children ([`crate::requests::cancel::sign`]'s parent rule, checked
//! before anything is written).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::tools::{Args, Waiting};
use crate::base::error::{Error, Result};
use crate::base::names::{JobId, Machine};
use crate::front::cli::{CancelArgs, EnqueueArgs, WaitArgs};
use crate::front::config::Context;
use crate::front::send::job::{self, Enqueued, One};
use crate::front::send::request::{self, Fields, Origin};
use crate::places::observe::{self, NoResult, Observed, Unseen};
use crate::places::output::{Follower, Streams, Verdict};
use crate::protocol::doc::Termination;
use crate::protocol::jobenv;
use crate::requests::cancel::CancelStatus;
use crate::requests::wait::Why;
use crate::store::layout::TargetDirs;
use crate::trust::Key;
use crate::view;

/// A tool's answer: its structured content and its one line.
pub type Answered = Result<(Value, String)>;

/// The longest `job_result` waits in one call; an agent calls again.
const MAX_WAIT: Duration = Duration::from_secs(3600);
/// How often a wait looks at the job.
const POLL: Duration = Duration::from_millis(200);
/// How often a wait reports progress.
const PROGRESS: Duration = Duration::from_secs(1);
/// `job_logs`' default: the last bytes of each stream.
const LOG_BYTES: usize = 16 * 1024;

/// Who calls: the job this server runs inside (task mode), or this
/// machine (operator mode, `None`).
pub struct Caller {
    /// The enclosing job.
    pub job: Option<JobId>,
}

impl Caller {
    /// The caller this process is, from the environment its listener set:
    /// a job id is believed only with the token its listener gave that job
    /// ([`jobenv::token_holds`]), so a process cannot act as another job by
    /// setting [`jobenv::JOB_ID`] (`FORBIDDEN`).
    pub fn of(ctx: &Context) -> Result<Caller> {
        let Some(job) = ctx.enclosing_job()? else {
            return Ok(Caller { job: None });
        };
        let root = ctx.root()?;
        let key = ctx.key(Some(&root))?;
        let var = |name: &str| std::env::var(name).unwrap_or_default();
        if !jobenv::token_holds(&key, &job, &var(jobenv::TARGET), &var(jobenv::TOKEN)) {
            return Err(Error::forbidden(format!(
                "{} names job {job}, but {} is not the token its listener gave it: only that job acts as it",
                jobenv::JOB_ID,
                jobenv::TOKEN
            ))
            .hint(format!(
                "outside a job, unset {} to act as this machine",
                jobenv::JOB_ID
            )));
        }
        Ok(Caller { job: Some(job) })
    }

    /// Refuses (`FORBIDDEN`) a job on `target` that is not the caller's
    /// direct child, in task mode; writes nothing.
    fn may_act_on(&self, ctx: &Context, target: &str, id: &str) -> Result<()> {
        let Some(caller) = &self.job else {
            return Ok(());
        };
        let (s, dirs) = sender(ctx, target)?;
        let id = crate::places::jobref::resolve(
            &dirs,
            ctx.state_dir(&s.root).ok().as_deref(),
            &s.key,
            id,
        )?;
        crate::requests::cancel::sign(&dirs, &id, &s.key, &s.origin, Some(caller)).map(|_| ())
    }
}

/// The sender and the folders of the one target `name` (a list is refused:
/// each tool acts on one job of one target).
fn sender(ctx: &Context, name: &str) -> Result<(crate::front::send::Sender, TargetDirs)> {
    one_target(name)?;
    let s = crate::front::send::Sender::load(ctx)?;
    let dirs = ctx.target(&s.root, name)?;
    Ok((s, dirs))
}

/// Refuses a target list.
fn one_target(name: &str) -> Result<()> {
    if crate::store::layout::is_target_list(name) {
        return Err(Error::validation(format!(
            "argument \"target\" names one machine; {name:?} names several"
        )));
    }
    Ok(())
}

/// The key, the target's folders and the job `args` name.
fn located(ctx: &Context, args: &Args) -> Result<(Key, TargetDirs, JobId)> {
    let target = args.need("target")?;
    one_target(&target)?;
    let root = ctx.root()?;
    let key = ctx.key(Some(&root))?;
    let dirs = ctx.target(&root, &target)?;
    let text = args.need("job_id")?;
    let id =
        crate::places::jobref::resolve(&dirs, ctx.state_dir(&root).ok().as_deref(), &key, &text)?;
    Ok((key, dirs, id))
}

/// Signs and publishes the job `args` describe, as `enqueue` does: with
/// `interrupt`, `--interrupt` of that job; with `after_any`, to run once
/// that job has ended, however it ended; with `seal`, `--seal`.
fn send(
    ctx: &Context,
    args: &Args,
    interrupt: Option<String>,
    after_any: Option<&str>,
    seal: bool,
) -> Result<One> {
    let target = args.need("target")?;
    one_target(&target)?;
    let mut line = args.job_line();
    if let Some(old) = after_any {
        let mut after = match line.get("after") {
            Some(Value::Array(a)) => a.clone(),
            _ => Vec::new(),
        };
        after.push(json!(old));
        line["after"] = json!(after);
        line["afterAny"] = json!(true);
    }
    let fields = Fields::from_line(&line.to_string())?;
    let parent = ctx.enclosing_job()?;
    let req = request::request(&fields, Origin::Line, parent.as_ref(), interrupt.is_some())?;
    let flags = EnqueueArgs {
        target: Some(target),
        batch: None,
        job_id: None,
        cwd: None,
        env: Vec::new(),
        timeout: None,
        grace: None,
        priority: None,
        label: None,
        after: Vec::new(),
        after_any: false,
        interrupt,
        force: false,
        waiting: WaitArgs {
            wait: false,
            wait_timeout: None,
            follow: false,
        },
        via: None,
        seal,
        argv: Vec::new(),
    };
    match job::send(ctx, &flags, req)? {
        Enqueued::One(one) => Ok(*one),
        Enqueued::Copies(c) => Err(Error::validation(format!(
            "{} was sent to several targets",
            c.req.id
        ))),
    }
}

/// `dispatch_job`.
pub fn dispatch(ctx: &Context, args: &Args) -> Answered {
    let one = send(ctx, args, None, None, args.flag("seal")?)?;
    let (id, target) = (&one.req.id, one.dirs.target());
    let mut v = json!({"job_id": id.as_str(), "target": target.as_str(), "status": "queued"});
    if let Some(p) = &one.req.parent {
        v["parent_job_id"] = json!(p.as_str());
    }
    Ok((v, format!("{id} queued on {target}")))
}

/// `job_status`: the job's state, and its entry in `status --json`.
pub fn status(ctx: &Context, args: &Args) -> Answered {
    let (key, dirs, id) = located(ctx, args)?;
    let look = observe::look(&dirs, &id, &key)?;
    let mut v = json!({"job_id": id.as_str(), "target": dirs.target().as_str(), "state": look.state.word()});
    let mut line = format!("{id} on {}: {}", dirs.target(), look.state.word());
    match &look.state {
        Observed::Done(o) => {
            v["result"] = view::result::json(o);
            line = view::result::text(o);
        }
        Observed::Rejected(r) => {
            line = observe::rejection_sentence(&dirs, &id, r, &key);
            v["rejected"] = json!(r);
        }
        _ => {}
    }
    let t = observe::target(&dirs, &key, &observe::History::default());
    let t = serde_json::to_value(t).unwrap_or_default();
    for list in ["running", "queued", "cancelPending"] {
        let found = t[list]
            .as_array()
            .and_then(|a| a.iter().find(|e| e["jobId"] == id.as_str()));
        if let Some(entry) = found {
            v[list] = entry.clone();
        }
    }
    if let Some(w) = v["queued"]["waitsFor"].as_array().filter(|w| !w.is_empty()) {
        line.push_str(&format!(" (held: waits for {})", w.len()));
    }
    Ok((v, line))
}

/// `job_result`: the verified result, waited for up to `wait_seconds`;
/// `None` when the client cancelled the wait.
pub fn result(ctx: &Context, args: &Args, wait: &Waiting) -> Result<Option<(Value, String)>> {
    let (key, dirs, id) = located(ctx, args)?;
    let seconds = args.number("wait_seconds")?.unwrap_or(0.0);
    let limit = Duration::from_secs_f64(seconds).min(MAX_WAIT);
    let start = Instant::now();
    let mut said = start;
    let mut out = json!({"job_id": id.as_str(), "target": dirs.target().as_str()});
    loop {
        let look = observe::look(&dirs, &id, &key)?;
        // A wait takes a job not seen yet for one on its way (sync lags).
        let unseen = if limit.is_zero() {
            Unseen::Missing
        } else {
            Unseen::Pending
        };
        let no = match look.state.clone().answer(&dirs, &id, unseen)? {
            Ok(o) => {
                let mut v = view::result::json(&o);
                v["finished"] = json!(true);
                return Ok(Some((v, view::result::text(&o))));
            }
            Err(no) => no,
        };
        let elapsed = start.elapsed();
        let waited_out = elapsed >= limit;
        if waited_out || matches!(no, NoResult::Rejected(_)) {
            let no = no.map(|seen| view::result::Unfinished {
                why: Box::new(Why::now(&dirs, &id, &key, seen)),
                limit: (!limit.is_zero()).then_some(limit),
            });
            let line = view::result::no_result(&dirs, &id, &key, &mut out, &no);
            out["finished"] = json!(matches!(no, NoResult::Rejected(_)));
            return Ok(Some((out, line)));
        }
        if wait.cancelled.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(None);
        }
        if said.elapsed() >= PROGRESS {
            said = Instant::now();
            (wait.progress)(
                elapsed.as_secs_f64(),
                limit.as_secs_f64(),
                &format!("{id} {}", look.state.word()),
            );
        }
        std::thread::sleep(POLL.min(limit - elapsed));
    }
}

/// `job_logs`: the last `max_bytes` of each stream; a finished job's logs
/// are held against its verified result first, as `logs` holds them.
pub fn logs(ctx: &Context, args: &Args) -> Answered {
    let (key, dirs, id) = located(ctx, args)?;
    let most = match args.number("max_bytes")? {
        Some(n) if n >= 1.0 => n as usize,
        Some(_) => {
            return Err(Error::validation(
                "argument \"max_bytes\" must be 1 or more",
            ));
        }
        None => LOG_BYTES,
    };
    let seen = observe::job(&dirs, &id, &key)?;
    let mut f = Follower::new(&dirs, &id, Streams::Both);
    if !f.any() && matches!(seen, Observed::NotSeen) {
        return Err(Error::not_found(format!(
            "no job {id} on {} (no log, not queued, running or finished)",
            dirs.target()
        )));
    }
    f.saw(&seen);
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    f.pump(&mut stdout, &mut stderr).map_err(|e| {
        Error::new(
            crate::base::error::Code::Internal,
            format!("reading the logs of {id}: {e}"),
        )
    })?;
    if let Observed::Done(o) = &seen {
        for (file, verdict) in f.judged(o) {
            if let Verdict::NotTheJobs(why) = verdict {
                return Err(Error::forbidden(format!(
                    "{file} is not {id}'s output: {why}"
                )));
            }
        }
    }
    let tail = |b: &[u8]| {
        let from = b.len().saturating_sub(most);
        (String::from_utf8_lossy(&b[from..]).into_owned(), from > 0)
    };
    let ((out, out_cut), (err, err_cut)) = (tail(&stdout), tail(&stderr));
    let v = json!({
        "job_id": id.as_str(), "target": dirs.target().as_str(), "state": seen.word(),
        "stdout": out, "stderr": err,
        "stdout_truncated": out_cut, "stderr_truncated": err_cut,
    });
    let line = format!(
        "{id} on {} ({}): {} bytes of stdout, {} of stderr",
        dirs.target(),
        seen.word(),
        stdout.len(),
        stderr.len()
    );
    Ok((v, line))
}

/// `stop_job`: `cancel`'s marker; `stopped` once a stop was accepted,
/// `not_running` for a job with nothing live (one that ended during the
/// call too). A marker that could not be placed is an error, never a
/// false `stopped`. The parent rule is the sender's
/// ([`crate::requests::cancel::sign`]), with the caller [`Caller::of`] checked at
/// start, read from the same environment.
pub fn stop(ctx: &Context, args: &Args) -> Answered {
    let target = args.need("target")?;
    one_target(&target)?;
    let flags = CancelArgs {
        target,
        job_id: args.need("job_id")?,
        wait: false,
        wait_timeout: None,
        via: None,
        force: false,
    };
    let r = match crate::front::send::cancel::send(ctx, &flags)? {
        crate::front::send::cancel::Cancelled::One(r) => r,
        crate::front::send::cancel::Cancelled::Each(_) => {
            return Err(Error::validation("stop_job stops one job of one target"));
        }
    };
    let (dirs, id) = (&r.dirs, &r.id);
    let live = match &r.status {
        CancelStatus::Requested { observed, .. } => match observed {
            Observed::Rejected(_) => false,
            // It may have ended on its own while the marker was placed.
            _ => match observe::job(dirs, id, &r.sender.key)? {
                Observed::Done(o) => matches!(
                    o.termination(),
                    Termination::Cancelled | Termination::CancelledBeforeStart
                ),
                _ => true,
            },
        },
        CancelStatus::NotRunning(_) => false,
        CancelStatus::Blocked(_) => {
            return Err(Error::new(
                crate::base::error::Code::Internal,
                r.status.sentence(id),
            ));
        }
    };
    let word = if live { "stopped" } else { "not_running" };
    let v = json!({"job_id": id.as_str(), "target": dirs.target().as_str(), "status": word});
    let line = if live {
        format!(
            "{id} on {}: stop accepted; it gets its grace, then its process tree is stopped",
            dirs.target()
        )
    } else {
        format!(
            "{id} on {}: not running; nothing was stopped",
            dirs.target()
        )
    };
    Ok((v, line))
}

/// `message_job`: a new job for `job_id`'s work. `interrupt` is `enqueue
/// --interrupt` (`sent` when the old job's stop was accepted, else
/// `queued` with the reason); `queued` runs it once the old job has ended,
/// however it ended.
pub fn message(ctx: &Context, caller: &Caller, args: &Args) -> Answered {
    let target = args.need("target")?;
    let old = args.need("job_id")?;
    let interrupt = match args.text("delivery_mode")?.as_deref() {
        None | Some("queued") => false,
        Some("interrupt") => true,
        Some(other) => {
            return Err(Error::validation(format!(
                "argument \"delivery_mode\": {other:?} is not \"queued\" or \"interrupt\""
            )));
        }
    };
    let seal = args.flag("seal")?;
    caller.may_act_on(ctx, &target, &old)?;
    let one = if interrupt {
        send(ctx, args, Some(old.clone()), None, seal)?
    } else {
        send(ctx, args, None, Some(&old), seal)?
    };
    let (id, target) = (&one.req.id, one.dirs.target());
    let mut v = json!({"job_id": id.as_str(), "target": target.as_str()});
    let line = match &one.steer {
        Some((old, status)) => {
            let (report, note) = job::steer_report(id, old, status, Some(old.as_str()));
            let sent = matches!(status, Ok(CancelStatus::Requested { .. }));
            v["delivery"] = json!(if sent { "sent" } else { "queued" });
            v["interrupted"] = report;
            if !sent {
                v["reason"] = json!(note);
            }
            note
        }
        None => {
            v["delivery"] = json!("queued");
            v["after"] = json!(old);
            format!("{id} queued on {target}: it runs once {old} has ended")
        }
    };
    Ok((v, line))
}

/// `list_jobs`: `status --json` of one target, or of every target.
pub fn list(ctx: &Context, args: &Args) -> Answered {
    let root = ctx.root()?;
    let key = ctx.key(Some(&root))?;
    let names = match args.text("target")? {
        Some(t) => {
            one_target(&t)?;
            vec![ctx.target(&root, &t)?.target().to_string()]
        }
        None => crate::store::layout::existing_targets(&root)?,
    };
    let targets: Vec<_> = names
        .iter()
        .filter_map(|n| Machine::parse(n, "target").ok())
        .map(|m| {
            observe::target(
                &TargetDirs::new(&root, &m),
                &key,
                &observe::History::default(),
            )
        })
        .collect();
    let line = targets
        .iter()
        .map(|t| {
            format!(
                "{}: {} running, {} queued",
                t.target,
                t.running.len(),
                t.queued_count
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    Ok((view::status::json(&root, &key.key_id(), &targets), line))
}
