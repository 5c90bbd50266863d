//! A status rendered ([`crate::places::observe::TargetStatus`], which `status`
//! and `GET /v1/status` share): each target as lines for a terminal
//! ([`text`], queued jobs summarised past the first ten), or the whole
//! answer as one JSON document ([`json()`]) with every job listed.

use std::time::Duration;

use serde_json::{Value, json};

use crate::base::clock;
use crate::places::observe::{ListenerState, RecentResult, TargetStatus};
use crate::protocol::accept;
use crate::protocol::doc::job::argv_summary;
use crate::trust::{self, COPY_ONE_KEY, KeyIds};

use super::{Tone, paint};

/// How many queued jobs the human view lists before summarising.
const SHOWN_QUEUED: usize = 10;

fn listener_line(l: &ListenerState) -> String {
    match l {
        ListenerState::Beat {
            verified: false,
            state,
            heartbeat_age_sec,
            ..
        } => format!(
            "listener {} (a heartbeat not signed with this machine's key: {state}, written {} ago; an older version, another key, or a folder writer's)",
            paint("unverified", Tone::Bad),
            heartbeat_age_sec.map_or("at an unreadable time".to_string(), |a| clock::human(
                Duration::from_secs(a)
            ))
        ),
        ListenerState::Beat {
            alive: true,
            pid,
            heartbeat_age_sec,
            ..
        } => format!(
            "listener {} (pid {pid}, heartbeat {}s ago)",
            paint("alive", Tone::Good),
            heartbeat_age_sec.unwrap_or(0)
        ),
        ListenerState::Beat {
            state,
            heartbeat_age_sec: Some(age),
            ..
        } => format!(
            "listener {} ({state}, last heartbeat {} ago)",
            paint("not running", Tone::Bad),
            clock::human(Duration::from_secs(*age))
        ),
        ListenerState::Beat { .. } | ListenerState::Unreadable { .. } => {
            "listener not running".to_string()
        }
        ListenerState::NotSeen { .. } => "no listener has run here yet".to_string(),
    }
}

fn label(l: &Option<String>) -> &str {
    l.as_deref().unwrap_or("")
}

/// What a job runs, or `sealed` for a sealed job not readable here.
fn command(argv: &[String], sealed: bool) -> String {
    if sealed {
        "sealed".to_string()
    } else {
        argv_summary(argv)
    }
}

/// One target's status for a terminal; `mine` is this machine's key
/// fingerprint, told apart from its listener's when they differ.
pub fn text(t: &TargetStatus, mine: &str) -> String {
    let mut lines = vec![format!("{}: {}", t.target, listener_line(&t.listener))];
    if let ListenerState::Beat {
        key_fingerprint: theirs,
        ..
    } = &t.listener
        && let KeyIds::Differ { mine, theirs } =
            trust::compare(Some(mine), Some(theirs.as_str()).filter(|t| !t.is_empty()))
    {
        lines.push(format!(
            "  {}  its listener's key has fingerprint {theirs}, this machine's {mine}: jobs sent from here are rejected; {COPY_ONE_KEY}",
            paint("key differs", Tone::Bad)
        ));
    }
    for r in &t.running {
        lines.push(format!(
            "  running  {}  {}  {}  for {}",
            r.job_id,
            label(&r.label),
            command(&r.argv, r.sealed),
            clock::human(Duration::from_secs(r.elapsed_sec.unwrap_or(0)))
        ));
    }
    lines.push(format!("  queued   {} job(s)", t.queued.len()));
    for (i, q) in t.queued.iter().take(SHOWN_QUEUED).enumerate() {
        lines.push(format!(
            "    {:>2}. {}  {:<6}  {}  {}",
            i + 1,
            q.job_id,
            q.priority,
            label(&q.label),
            command(&q.argv, q.sealed)
        ));
        if !q.waits_for.is_empty() {
            lines.push(format!(
                "        held: waits for {}",
                q.waits_for.join(", ")
            ));
        }
        if q.killed_with_listener {
            lines.push(
                "        killed with its listener (a second Ctrl-C): recorded as interrupted when the listener next starts"
                    .to_string(),
            );
        }
        if let Some(ahead) = q.ahead_sec {
            lines.push(format!(
                "        deferred: {}",
                accept::ahead_reason(Duration::from_secs(ahead))
            ));
        }
    }
    if let Some(g) = &t.governor
        && g.tier != "GREEN"
    {
        let holds = if g.tier == "RED" {
            "no job starts"
        } else {
            "only `high` jobs start"
        };
        lines.push(format!(
            "  {}  {} says {}: {holds} (write GREEN into it to lift the hold)",
            paint("governor", Tone::Bad),
            g.file,
            g.tier
        ));
    }
    if t.queued.len() > SHOWN_QUEUED {
        lines.push(format!(
            "    … and {} more (--json lists them all)",
            t.queued.len() - SHOWN_QUEUED
        ));
    }
    if t.invalid_in_inbox > 0 {
        lines.push(format!(
            "  {} inbox file(s) will be rejected (not valid jobs)",
            t.invalid_in_inbox
        ));
    }
    for c in &t.cancel_pending {
        lines.push(format!("  cancel   {} (job {})", c.job_id, c.job));
        if let Some(f) = &c.ignored_result {
            lines.push(format!(
                "        {}: {f}; ignored",
                paint("warning", Tone::Bad)
            ));
        }
    }
    if !t.recent.is_empty() {
        lines.push("  results (newest first)".to_string());
    }
    for r in &t.recent {
        match r {
            RecentResult::Verified {
                job_id,
                outcome,
                exit,
                duration_ms,
                label: l,
                signed_by_key,
                ..
            } => {
                let padded = format!("{:<22}", outcome.as_str());
                let row = format!(
                    "    {job_id}  {}  {:<16}  {:>7}  {}",
                    paint(&padded, Tone::of_ending(*outcome)),
                    exit,
                    clock::human(Duration::from_millis(duration_ms.unwrap_or(0))),
                    label(l)
                );
                let row = match signed_by_key {
                    Some(k) => format!("{}  signed by {} key {k}", row.trim_end(), t.target),
                    None => row,
                };
                // No trailing blanks where a row has no label.
                lines.push(row.trim_end().to_string());
            }
            RecentResult::Unverified {
                job_id, problem, ..
            } => lines.push(format!("    {job_id}  result does not verify ({problem})")),
        }
    }
    if !t.rejected.is_empty() {
        lines.push("  rejected".to_string());
    }
    for r in &t.rejected {
        lines.push(format!(
            "    {}  {}  {}",
            r.name,
            paint(&r.verdict, Tone::Bad),
            r.message
        ));
    }
    lines.join("\n")
}

/// The targets of `root` for a terminal, a blank line between two; `mine`
/// as in [`text`].
pub fn text_all(root: &std::path::Path, targets: &[TargetStatus], mine: &str) -> String {
    if targets.is_empty() {
        return format!("no targets under {} yet", root.display());
    }
    targets
        .iter()
        .map(|t| text(t, mine))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// `status --json`: the root, this machine's key fingerprint, and each
/// target's whole status.
pub fn json(root: &std::path::Path, mine: &str, targets: &[TargetStatus]) -> Value {
    json!({"root": root.display().to_string(), "keyFingerprint": mine, "targets": targets})
}
