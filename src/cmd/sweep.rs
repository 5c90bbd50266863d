//! `sweep`: remove stale cancel markers and our own stale temp files, for
//! cron. Quiet when there is nothing to do; never follows a link or leaves
//! the target's folder.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::json;
use walkdir::WalkDir;

use crate::cli::SweepArgs;
use crate::config::Context;
use crate::error::{Error, Result};
use crate::exit;
use crate::fsops;
use crate::layout::{self, TargetDirs};
use crate::names::{JobId, Machine};
use crate::retention::{self, Decision};

fn age_of(meta: &std::fs::Metadata) -> Option<std::time::Duration> {
    meta.modified()
        .ok()
        .and_then(|m| SystemTime::now().duration_since(m).ok())
}

/// The entries to remove under one target: markers by age, and our temp
/// files anywhere in the target's folders.
fn plan(dirs: &TargetDirs, max_age: std::time::Duration) -> Vec<(PathBuf, &'static str)> {
    let mut out = Vec::new();
    for entry in WalkDir::new(dirs.base())
        .min_depth(1)
        .max_depth(3)
        .follow_links(false)
        .follow_root_links(false)
        .into_iter()
        .flatten()
    {
        if entry.file_type().is_dir() {
            continue;
        }
        let Some(name) = entry.file_name().to_str() else {
            continue;
        };
        let Ok(meta) = entry.metadata() else { continue };
        if fsops::is_our_temp_name(name) {
            if retention::temp_file(age_of(&meta)) == Decision::Remove {
                out.push((entry.path().to_path_buf(), "temp file"));
            }
            continue;
        }
        if entry.depth() != 2 || entry.path().parent() != Some(dirs.cancel().as_path()) {
            continue;
        }
        let Some(id) = JobId::from_file_name(name) else {
            continue;
        };
        let waiting = exists(&dirs.job_file(&id)) || exists(&dirs.running_file(&id));
        if retention::marker(age_of(&meta), max_age, waiting) == Decision::Remove {
            out.push((entry.path().to_path_buf(), "marker"));
        }
    }
    out.sort();
    out
}

fn exists(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

/// Runs `sweep`.
pub fn run(ctx: &Context, args: SweepArgs) -> Result<u8> {
    let max_age = crate::clock::parse_duration(&args.max_age)
        .map_err(|e| Error::validation(format!("--max-age: {}", e.message)))?;
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
    let mut removed = Vec::new();
    let mut failed = Vec::new();
    for dirs in &targets {
        for (path, kind) in plan(dirs, max_age) {
            if !args.dry_run
                && let Err(e) = fsops::remove(&path)
            {
                failed.push(json!({"path": path.display().to_string(), "error": e.message}));
                continue;
            }
            removed.push((dirs.target().to_string(), path, kind));
        }
    }
    let verb = if args.dry_run {
        "would remove"
    } else {
        "removed"
    };
    let human: Vec<String> = removed
        .iter()
        .map(|(_, p, kind)| format!("{verb} {kind} {}", p.display()))
        .chain(failed.iter().map(|f| {
            format!(
                "could not remove {}: {}",
                f["path"].as_str().unwrap_or(""),
                f["error"].as_str().unwrap_or("")
            )
        }))
        .collect();
    super::emit(
        ctx,
        &json!({
            "dryRun": args.dry_run,
            "removed": removed.iter().map(|(t, p, k)| json!({"target": t, "path": p.display().to_string(), "kind": k})).collect::<Vec<_>>(),
            "failed": failed,
        }),
        &human.join("\n"),
    );
    Ok(if failed.is_empty() {
        exit::SUCCESS
    } else {
        exit::INTERNAL
    })
}
