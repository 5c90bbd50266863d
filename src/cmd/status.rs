//! `status`: per target, whether its listener is alive, what runs, what
//! waits (in drain order), which cancels are pending, and the last results —
//! so nobody has to open the shared folder to know what is happening. The
//! document is [`observe::target`]'s; this file only prints it.

use std::time::Duration;

use serde_json::json;

use crate::accept;
use crate::cli::StatusArgs;
use crate::clock;
use crate::config::Context;
use crate::doc::job::argv_summary;
use crate::doctor;
use crate::error::Result;
use crate::exit;
use crate::layout::StateDirs;
use crate::layout::{self, TargetDirs};
use crate::names::Machine;
use crate::observe::{self, GovernorHold, ListenerState, RecentResult, TargetStatus};
use crate::out::{self, Tone};
use crate::trust::{self, COPY_ONE_KEY, KeyIds};

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
            out::paint("unverified", Tone::Bad),
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
            out::paint("alive", Tone::Good),
            heartbeat_age_sec.unwrap_or(0)
        ),
        ListenerState::Beat {
            state,
            heartbeat_age_sec: Some(age),
            ..
        } => format!(
            "listener {} ({state}, last heartbeat {} ago)",
            out::paint("not running", Tone::Bad),
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

fn human(t: &TargetStatus, mine: &str) -> String {
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
            out::paint("key differs", Tone::Bad)
        ));
    }
    for r in &t.running {
        lines.push(format!(
            "  running  {}  {}  {}  for {}",
            r.job_id,
            label(&r.label),
            argv_summary(&r.argv),
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
            argv_summary(&q.argv)
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
            out::paint("governor", Tone::Bad),
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
                out::paint("warning", Tone::Bad)
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
                ..
            } => {
                let padded = format!("{outcome:<22}");
                let row = format!(
                    "    {job_id}  {}  {:<16}  {:>7}  {}",
                    out::paint(&padded, out::outcome_tone(outcome)),
                    exit,
                    clock::human(Duration::from_millis(duration_ms.unwrap_or(0))),
                    label(l)
                );
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
            out::paint(&r.verdict, Tone::Bad),
            r.message
        ));
    }
    lines.join("\n")
}

/// Runs `status`.
pub fn run(ctx: &Context, args: StatusArgs) -> Result<u8> {
    let history = observe::History {
        count: args.results,
        outcome: args.outcome.map(|o| o.word().to_string()),
        label: args.label.clone(),
    };
    let root = ctx.root()?;
    let key = ctx.key(Some(&root))?;
    let state = ctx.state_dir(&root).ok();
    let look = |m: &Machine| {
        let mut t = observe::target(&TargetDirs::new(&root, m), &key, &history);
        t.governor = state
            .as_deref()
            .and_then(|s| doctor::running_governor(&StateDirs::new(s, m)))
            .map(|(file, tier)| GovernorHold {
                file,
                tier: tier.as_str().to_string(),
            });
        t
    };
    let each = |names: Vec<String>| -> Vec<TargetStatus> {
        names
            .iter()
            .filter_map(|n| Machine::parse(n, "target").ok())
            .map(|m| look(&m))
            .collect()
    };
    let targets = if args.all {
        each(layout::existing_targets(&root)?)
    } else if let Some(t) = &args.target {
        each(vec![ctx.target(&root, t)?.target().to_string()])
    } else {
        // A machine whose listener runs asks about itself; one that only
        // sends (no listener here now, or no folder of its own) about
        // every target it may send to.
        let me = ctx.machine()?;
        let mine = layout::find_target(&root, &me)?
            .and_then(|n| Machine::parse(&n, "target").ok())
            .map(|m| look(&m));
        match mine {
            Some(t) if t.listener.alive() => vec![t],
            _ => each(layout::existing_targets(&root)?),
        }
    };
    let human_text = if targets.is_empty() {
        format!("no targets under {} yet", root.display())
    } else {
        targets
            .iter()
            .map(|t| human(t, &key.key_id()))
            .collect::<Vec<_>>()
            .join("\n\n")
    };
    super::emit(
        ctx,
        &json!({"root": root.display().to_string(), "keyFingerprint": key.key_id(), "targets": targets}),
        &human_text,
    );
    Ok(exit::SUCCESS)
}
