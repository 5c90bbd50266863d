//! `sweep`: remove what [`crate::places::prune`] condemns — stale cancel markers,
//! our own stale temp files, and a target's past once older than the
//! retention (docs/protocol.md §8.3) — for cron. Quiet when there is
//! nothing to do; each entry is removed from the folder it was found in.

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde_json::json;

use crate::base::error::{Error, Result};
use crate::base::exit;
use crate::base::names::Machine;
use crate::front::cli::SweepArgs;
use crate::front::config::Context;
use crate::places::prune::{self, Ages, KINDS, MARKER, TEMP};
use crate::store::layout::{self, TargetDirs};

/// "3 job files, 1 result": the non-zero counts, in [`KINDS`] order.
fn summary(counts: &BTreeMap<&'static str, usize>) -> String {
    KINDS
        .iter()
        .filter_map(|k| {
            let n = counts.get(k).copied().unwrap_or(0);
            (n > 0).then(|| format!("{n} {k}{}", if n == 1 { "" } else { "s" }))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `2026-12-03 14:02 UTC`: when a kept marker goes, to the minute.
fn minute(at: SystemTime) -> String {
    let text = crate::base::clock::format(crate::base::clock::from_system(at));
    format!("{} UTC", text.get(..16).unwrap_or(&text).replace('T', " "))
}

/// One line per target and reason a marker stays: "1 marker younger than
/// 24h: c-123 (removable at 2026-12-03 14:02 UTC, or now with --max-age
/// 0)".
fn kept_lines(kept: &[(String, prune::KeptMarker)], max_age: &str, several: bool) -> Vec<String> {
    let mut groups: Vec<((&str, &str), Vec<&prune::KeptMarker>)> = Vec::new();
    for (t, k) in kept {
        match groups.iter_mut().find(|(g, _)| *g == (t.as_str(), k.why)) {
            Some((_, list)) => list.push(k),
            None => groups.push(((t.as_str(), k.why), vec![k])),
        }
    }
    groups
        .into_iter()
        .map(|((target, why), list)| {
            let n = list.len();
            let s = if n == 1 { "" } else { "s" };
            let ids: Vec<String> = list
                .iter()
                .map(|k| match k.removable_at {
                    Some(at) => format!(
                        "{} (removable at {}, or now with --max-age 0)",
                        k.job_id,
                        minute(at)
                    ),
                    None => k.job_id.clone(),
                })
                .collect();
            let why = match why {
                crate::base::retention::MARKER_YOUNG => format!("younger than {max_age}"),
                crate::base::retention::MARKER_FUTURE => {
                    "dated in the future (removed now with --max-age 0)".to_string()
                }
                other => format!("kept: {other} (a machine offline must still find its cancel)"),
            };
            let on = if several {
                format!("{target}: ")
            } else {
                String::new()
            };
            format!("{on}{n} marker{s} {why}: {}", ids.join(", "))
        })
        .collect()
}

/// Runs `sweep`.
pub fn run(ctx: &Context, args: SweepArgs) -> Result<u8> {
    let marker = crate::base::clock::parse_duration(&args.max_age)
        .map_err(|e| Error::validation(format!("--max-age: {}", e.message)))?;
    let job_max_age = ctx.max_job_age(args.max_job_age.as_deref())?;
    let retention = ctx.retention(args.retention.as_deref(), job_max_age)?;
    let ages = Ages {
        now: SystemTime::now(),
        marker,
        retention,
    };
    // On a bucket the same rules run over the objects of each target
    // (crate::front::bucket::sweep); the answer is printed alike.
    let (swept, several) = if let Some(root) = ctx.s3_root() {
        let (swept, n) = crate::front::bucket::sweep::run(ctx, &root, &args, ages)?;
        (swept, n > 1)
    } else {
        let root = ctx.root()?;
        let targets: Vec<TargetDirs> = if args.all {
            layout::existing_targets(&root)?
                .iter()
                .map(|t| Machine::parse(t, "target").map(|m| TargetDirs::new(&root, &m)))
                .collect::<Result<_>>()?
        } else {
            let name = match &args.target {
                Some(t) => t.clone(),
                None => ctx.machine()?.to_string(),
            };
            vec![ctx.target(&root, &name)?]
        };
        (
            prune::sweep(&targets, ages, args.dry_run),
            targets.len() > 1,
        )
    };
    let prune::Swept {
        removed,
        failed,
        kept,
    } = swept;
    let failed: Vec<_> = failed
        .into_iter()
        .map(|(path, error)| json!({"path": path, "error": error}))
        .collect();
    let mut counts: BTreeMap<&'static str, usize> = KINDS.iter().map(|k| (*k, 0)).collect();
    for (_, _, kind) in &removed {
        *counts.entry(kind).or_default() += 1;
    }
    let verb = if args.dry_run {
        "would remove"
    } else {
        "removed"
    };
    // Markers and temp files are few and each worth a line; a day's pruned
    // history is many, so it is listed only when asked what would go.
    let mut human: Vec<String> = removed
        .iter()
        .filter(|(_, _, kind)| args.dry_run || [MARKER, TEMP].contains(kind))
        .map(|(_, p, kind)| format!("{verb} {kind} {}", p.display()))
        .chain(failed.iter().map(|f| {
            format!(
                "could not remove {}: {}",
                f["path"].as_str().unwrap_or(""),
                f["error"].as_str().unwrap_or("")
            )
        }))
        .collect();
    if !removed.is_empty() {
        human.push(format!(
            "{verb}: {} (retention {})",
            summary(&counts),
            crate::base::clock::format_duration(retention)
        ));
    }
    // Asked what would go, a sweep also says what stays and when it goes:
    // a marker kept for a day otherwise looks like a sweep that does nothing.
    if args.dry_run {
        if removed.is_empty() && failed.is_empty() {
            human.push(format!(
                "nothing to remove: no marker older than {}, temp file of ours older than {}, or past job older than the retention {}",
                args.max_age,
                crate::base::clock::format_duration(crate::base::retention::TEMP_MAX_AGE),
                crate::base::clock::format_duration(retention)
            ));
        }
        human.extend(kept_lines(&kept, &args.max_age, several));
    }
    super::emit(
        ctx,
        &json!({
            "dryRun": args.dry_run,
            "retention": crate::base::clock::format_duration(retention),
            "counts": counts,
            "removed": removed.iter().map(|(t, p, k)| json!({"target": t, "path": p.display().to_string(), "kind": k})).collect::<Vec<_>>(),
            "failed": failed,
            "keptMarkers": kept.iter().map(|(t, k)| json!({
                "target": t,
                "jobId": k.job_id,
                "reason": k.why,
                "removableAt": k.removable_at.map(|at| crate::base::clock::format(crate::base::clock::from_system(at))),
            })).collect::<Vec<_>>(),
        }),
        &human.join("\n"),
    );
    Ok(if failed.is_empty() {
        exit::SUCCESS
    } else {
        exit::INTERNAL
    })
}
