//! `sweep`: remove stale cancel markers and our own stale temp files, for
//! cron. Quiet when there is nothing to do; never follows a link or leaves
//! the target's folder: every folder is held open as it is walked, and each
//! entry is removed from the folder it was found in.

use std::path::PathBuf;
use std::time::SystemTime;

use serde_json::json;

use crate::cli::SweepArgs;
use crate::config::Context;
use crate::error::{Error, Result};
use crate::exit;
use crate::fsops::{self, Child, Dir};
use crate::layout::{self, Place, TargetDirs};
use crate::names::{JobId, Machine};
use crate::platform::{Entry, EntryKind};
use crate::retention::{self, Decision};

fn age_of(meta: &Entry) -> Option<std::time::Duration> {
    meta.modified
        .and_then(|m| SystemTime::now().duration_since(m).ok())
}

/// One entry to remove: the folder it is in, its name, its path (for
/// output) and what it is.
struct Doomed {
    dir: Dir,
    name: String,
    path: PathBuf,
    kind: &'static str,
}

/// How deep below the target folder sweep looks (`archive/done/<file>`).
const DEPTH: usize = 3;

/// The entries to remove under one target: markers by age, and our temp
/// files anywhere in the target's folders (none when the target folder is
/// missing).
fn plan(dirs: &TargetDirs, max_age: std::time::Duration) -> Result<Vec<Doomed>> {
    let mut out = Vec::new();
    if let Some(base) = dirs.open_base()? {
        walk(dirs, &base, 1, false, max_age, &mut out);
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

fn walk(
    dirs: &TargetDirs,
    dir: &Dir,
    depth: usize,
    in_cancel: bool,
    max_age: std::time::Duration,
    out: &mut Vec<Doomed>,
) {
    for name in dir.list().unwrap_or_default() {
        let Ok(meta) = dir.entry(&name) else { continue };
        if meta.kind == EntryKind::Dir {
            if depth < DEPTH
                && let Ok(Child::Dir(sub)) = dir.child(&name)
            {
                let cancel = depth == 1 && name == Place::Cancel.name();
                walk(dirs, &sub, depth + 1, cancel, max_age, out);
            }
            continue;
        }
        let mut doomed = |kind| {
            out.push(Doomed {
                dir: dir.clone(),
                path: dir.shown(&name),
                name: name.clone(),
                kind,
            })
        };
        if fsops::is_our_temp_name(&name) {
            if retention::temp_file(age_of(&meta)) == Decision::Remove {
                doomed("temp file");
            }
            continue;
        }
        let Some(id) = JobId::from_file_name(&name).filter(|_| in_cancel) else {
            continue;
        };
        let there = |p: Place| {
            dirs.open(p)
                .ok()
                .flatten()
                .is_some_and(|d| d.exists(&id.file_name()))
        };
        let waiting = there(Place::Inbox) || there(Place::Running);
        if retention::marker(age_of(&meta), max_age, waiting) == Decision::Remove {
            doomed("marker");
        }
    }
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
        let planned = match plan(dirs, max_age) {
            Ok(p) => p,
            Err(e) => {
                let path = dirs.base().display().to_string();
                failed.push(json!({"path": path, "error": e.message}));
                continue;
            }
        };
        for d in planned {
            if !args.dry_run
                && let Err(e) = d.dir.remove(&d.name)
            {
                failed.push(json!({"path": d.path.display().to_string(), "error": e.message}));
                continue;
            }
            removed.push((dirs.target().to_string(), d.path, d.kind));
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
