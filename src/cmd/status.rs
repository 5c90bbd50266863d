//! `status`: per target, whether its listener is alive, what runs, what
//! waits (in drain order), which cancels are pending, and the last results —
//! so nobody has to open the shared folder to know what is happening.
//!
//! Cost: one directory listing per folder; job bodies are read for the
//! queue's order (they are small), result bodies only for the last few.

use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::accept;
use crate::cli::StatusArgs;
use crate::clock;
use crate::config::Context;
use crate::doc::{self, Job, Priority};
use crate::error::Result;
use crate::fsops;
use crate::heartbeat::{self, Beat};
use crate::key::Key;
use crate::layout::{self, TargetDirs};
use crate::names::{JobId, Machine};

/// How many recent results are shown.
const RECENT: usize = 5;
/// How many queued jobs the human view lists before summarising.
const SHOWN_QUEUED: usize = 10;

/// The ids named by `<id>.json` entries of `dir`, with their mtimes.
fn entries(dir: &std::path::Path) -> Vec<(JobId, Option<SystemTime>)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| {
            let id = JobId::from_file_name(e.file_name().to_str()?)?;
            Some((id, e.metadata().ok().and_then(|m| m.modified().ok())))
        })
        .collect()
}

fn age_since(ts: &str) -> Option<Duration> {
    let t = clock::parse(ts)?;
    (clock::now() - t).try_into().ok()
}

fn listener(dirs: &TargetDirs) -> Value {
    let read = fsops::read_limited(&dirs.listener_json(), 64 * 1024);
    let crate::read::FileRead::Bytes(b) = read else {
        return json!({"alive": false, "seen": false});
    };
    match serde_json::from_slice::<Beat>(&b) {
        Ok(beat) => {
            let age = age_since(&beat.heartbeat_at);
            json!({
                "alive": heartbeat::alive(&beat.state, age),
                "seen": true,
                "state": beat.state,
                "pid": beat.pid,
                "heartbeatAt": beat.heartbeat_at,
                "heartbeatAgeSec": age.map(|a| a.as_secs()),
                "startedAt": beat.started_at,
                "version": beat.version,
            })
        }
        Err(_) => json!({"alive": false, "seen": true, "state": "unreadable"}),
    }
}

fn running(dirs: &TargetDirs) -> Vec<Value> {
    entries(&dirs.running())
        .into_iter()
        .filter_map(|(id, _)| {
            let crate::read::FileRead::Bytes(b) =
                fsops::read_limited(&dirs.running_file(&id), 1 << 20)
            else {
                return None;
            };
            let v: Value = serde_json::from_slice(&b).ok()?;
            let started = v["startedAt"].as_str().unwrap_or("").to_string();
            Some(json!({
                "jobId": id.as_str(),
                "label": v["label"],
                "argv": v["argv"],
                "startedAt": started,
                "elapsedSec": age_since(&started).map(|a| a.as_secs()),
            }))
        })
        .collect()
}

fn queued(dirs: &TargetDirs, key: &Key) -> (Vec<Job>, usize) {
    let mut jobs = Vec::new();
    let mut invalid = 0;
    // A running job's file stays in the inbox until it is archived.
    let running: Vec<JobId> = entries(&dirs.running())
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    for (id, _) in entries(&dirs.inbox())
        .into_iter()
        .filter(|(id, _)| !running.contains(id))
    {
        let name = id.file_name();
        let read = fsops::read_limited(&dirs.job_file(&id), doc::job::MAX_BYTES);
        match accept::job(&name, read, dirs.target().as_str(), key) {
            Ok(j) => jobs.push(j),
            Err(_) => invalid += 1,
        }
    }
    jobs.sort_by_key(Job::drain_key);
    (jobs, invalid)
}

fn pending_cancels(dirs: &TargetDirs) -> Vec<Value> {
    entries(&dirs.cancel())
        .into_iter()
        .map(|(id, _)| {
            let exists = |p: std::path::PathBuf| std::fs::symlink_metadata(p).is_ok();
            let job = if exists(dirs.running_file(&id)) {
                "running"
            } else if exists(dirs.job_file(&id)) {
                "queued"
            } else if exists(dirs.result_file(&id)) {
                "finished"
            } else {
                "not seen"
            };
            json!({"jobId": id.as_str(), "job": job})
        })
        .collect()
}

fn recent(dirs: &TargetDirs, key: &Key) -> Vec<Value> {
    let mut all = entries(&dirs.results());
    all.sort_by_key(|(id, m)| (*m, id.clone()));
    all.into_iter()
        .rev()
        .take(RECENT)
        .map(|(id, _)| {
            let read = fsops::read_limited(&dirs.result_file(&id), doc::outcome::MAX_BYTES);
            match accept::outcome(id.as_str(), read, dirs.target().as_str(), key) {
                Ok(o) => {
                    let d = o.detail();
                    json!({
                        "jobId": o.job_id,
                        "verified": true,
                        "outcome": o.termination().describe(o.ok),
                        "exitCode": o.exit_code,
                        "finishedAt": o.finished_at,
                        "durationMs": d.duration_ms,
                        "label": d.label,
                    })
                }
                Err(r) => {
                    json!({"jobId": id.as_str(), "verified": false, "problem": r.verdict.as_str()})
                }
            }
        })
        .collect()
}

fn job_json(j: &Job) -> Value {
    json!({
        "jobId": j.id.as_str(),
        "priority": if j.spec.priority == Priority::High { "high" } else { "normal" },
        "createdAt": j.created_at,
        "origin": j.origin,
        "label": j.spec.label,
        "argv": j.spec.argv,
    })
}

/// The status of one target as a JSON value (the shape the README documents).
pub fn target_status(dirs: &TargetDirs, key: &Key) -> Value {
    let (jobs, invalid) = queued(dirs, key);
    json!({
        "target": dirs.target().as_str(),
        "listener": listener(dirs),
        "running": running(dirs),
        "queued": jobs.iter().map(job_json).collect::<Vec<_>>(),
        "queuedCount": jobs.len(),
        "invalidInInbox": invalid,
        "cancelPending": pending_cancels(dirs),
        "recent": recent(dirs, key),
    })
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => doc::job::argv_summary(
            &a.iter()
                .map(|x| x.as_str().unwrap_or("").to_string())
                .collect::<Vec<_>>(),
        ),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn human(t: &Value) -> String {
    let l = &t["listener"];
    let listener = if l["alive"].as_bool() == Some(true) {
        format!(
            "listener {} (pid {}, heartbeat {}s ago)",
            crate::out::paint("alive", crate::out::Tone::Good),
            l["pid"],
            l["heartbeatAgeSec"].as_u64().unwrap_or(0)
        )
    } else if l["seen"].as_bool() == Some(true) {
        match l["heartbeatAgeSec"].as_u64() {
            Some(age) => format!(
                "listener {} ({}, last heartbeat {} ago)",
                crate::out::paint("not running", crate::out::Tone::Bad),
                text(&l["state"]),
                clock::human(Duration::from_secs(age))
            ),
            None => "listener not running".to_string(),
        }
    } else {
        "no listener has run here yet".to_string()
    };
    let mut out = vec![format!("{}: {listener}", text(&t["target"]))];
    for r in t["running"].as_array().into_iter().flatten() {
        out.push(format!(
            "  running  {}  {}  {}  for {}",
            text(&r["jobId"]),
            text(&r["label"]),
            text(&r["argv"]),
            clock::human(Duration::from_secs(r["elapsedSec"].as_u64().unwrap_or(0)))
        ));
    }
    let queued = t["queued"].as_array().cloned().unwrap_or_default();
    out.push(format!("  queued   {} job(s)", queued.len()));
    for (i, q) in queued.iter().take(SHOWN_QUEUED).enumerate() {
        out.push(format!(
            "    {:>2}. {}  {:<6}  {}  {}",
            i + 1,
            text(&q["jobId"]),
            text(&q["priority"]),
            text(&q["label"]),
            text(&q["argv"])
        ));
    }
    if queued.len() > SHOWN_QUEUED {
        out.push(format!(
            "    … and {} more (--json lists them all)",
            queued.len() - SHOWN_QUEUED
        ));
    }
    if t["invalidInInbox"].as_u64().unwrap_or(0) > 0 {
        out.push(format!(
            "  {} inbox file(s) will be rejected (not valid jobs)",
            t["invalidInInbox"]
        ));
    }
    for c in t["cancelPending"].as_array().into_iter().flatten() {
        out.push(format!(
            "  cancel   {} (job {})",
            text(&c["jobId"]),
            text(&c["job"])
        ));
    }
    let recent = t["recent"].as_array().cloned().unwrap_or_default();
    if !recent.is_empty() {
        out.push("  recent".to_string());
    }
    for r in recent {
        if r["verified"].as_bool() == Some(true) {
            let word = text(&r["outcome"]);
            let padded = format!("{word:<22}");
            out.push(format!(
                "    {}  {}  exit {:<3}  {:>7}  {}",
                text(&r["jobId"]),
                crate::out::paint(&padded, crate::out::outcome_tone(&word)),
                r["exitCode"],
                clock::human(Duration::from_millis(r["durationMs"].as_u64().unwrap_or(0))),
                text(&r["label"])
            ));
        } else {
            out.push(format!(
                "    {}  result does not verify ({})",
                text(&r["jobId"]),
                text(&r["problem"])
            ));
        }
    }
    out.join("\n")
}

/// Runs `status`.
pub fn run(ctx: &Context, args: StatusArgs) -> Result<u8> {
    let root = ctx.root()?;
    let key = ctx.key(Some(&root))?;
    let names: Vec<String> = if args.all {
        layout::existing_targets(&root)?
    } else if let Some(t) = &args.target {
        vec![ctx.target(&root, t)?.target().to_string()]
    } else {
        let me = ctx.machine()?;
        let all = layout::existing_targets(&root)?;
        match all.iter().find(|n| me.same(n)) {
            Some(mine) => vec![mine.clone()],
            None => all,
        }
    };
    let targets: Vec<Value> = names
        .iter()
        .filter_map(|n| Machine::parse(n, "target").ok())
        .map(|m| target_status(&TargetDirs::new(&root, &m), &key))
        .collect();
    let human_text = if targets.is_empty() {
        format!("no targets under {} yet", root.display())
    } else {
        targets.iter().map(human).collect::<Vec<_>>().join("\n\n")
    };
    super::emit(
        ctx,
        &json!({"root": root.display().to_string(), "targets": targets}),
        &human_text,
    );
    Ok(0)
}
