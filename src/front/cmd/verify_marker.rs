//! `verify-marker`: print the docs/protocol.md §6 verdict for a marker file and why;
//! exit 0 when valid, 1 when not.

use std::path::Path;

use serde_json::json;

use crate::base::error::{Error, Result};
use crate::base::exit;
use crate::base::names::Machine;
use crate::front::cli::VerifyMarkerArgs;
use crate::front::config::Context;
use crate::store::fsops::Dir;

/// Runs `verify-marker`.
pub fn run(ctx: &Context, args: VerifyMarkerArgs) -> Result<u8> {
    if let Some(root) = ctx.s3_root() {
        return crate::front::bucket::verify::run(ctx, &root, &args);
    }
    let file = &args.file;
    let name = file
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| Error::validation(format!("{} does not name a file", file.display())))?;
    let given = args
        .target
        .as_deref()
        .map(|t| Machine::parse(t, "target"))
        .transpose()?;
    // A folder under the root is reached from the root without following
    // a link, as every reader there does; one elsewhere is opened as
    // given. The marker in it is read without following a link.
    let parent = match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    // A folder reached through a link is refused as such; one that cannot
    // be opened otherwise holds no marker.
    let dir = match open_folder(ctx, parent) {
        Err(e) if e.code == crate::base::error::Code::Forbidden => return Err(e),
        other => other,
    };
    if !dir.as_ref().is_ok_and(|d| d.exists(name)) {
        return Err(Error::not_found(format!(
            "no marker file at {}",
            file.display()
        )));
    }
    let dir = dir?;
    // Told from the path only once a file is known to be there to judge.
    let target = match given {
        Some(t) => t,
        None => target_from_path(file)?,
    };
    let key = ctx.key(ctx.root().ok().as_deref())?;
    // A consumed marker is kept as `archive/consumed/<id>.cancel.json`: it
    // is judged under the name it had in `cancel/`.
    let judged = match name.strip_suffix(".cancel.json") {
        Some(id) => format!("{id}.json"),
        None => name.to_string(),
    };
    let (verdict, message) =
        match crate::protocol::judge::marker_as(&dir, name, &judged, target.as_str(), &key) {
            Ok(m) => (
                "valid",
                format!(
                    "a genuine request from {} at {} to stop job {} on {}",
                    m.origin, m.created_at, m.job_id, m.target
                ),
            ),
            Err(r) => (r.verdict.as_str(), r.message),
        };
    super::emit(
        ctx,
        &json!({"file": file.display().to_string(), "target": target.as_str(), "verdict": verdict, "message": message}),
        &format!(
            "{}: {message}",
            crate::view::paint(verdict, crate::view::Tone::of_verdict(verdict))
        ),
    );
    Ok(exit::no_if(verdict != "valid"))
}

/// The marker's folder `parent`: below the root, reached from it one
/// component at a time without following a link; elsewhere, as named.
fn open_folder(ctx: &Context, parent: &Path) -> Result<Dir> {
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let under_root = ctx.root().ok().and_then(|root| {
        let rel = abs(parent).strip_prefix(abs(&root)).ok()?.to_path_buf();
        Some((root, rel))
    });
    match under_root {
        Some((root, rel)) => Dir::open_trusted(&root)?
            .descend(&rel)?
            .ok_or_else(|| Error::not_found(format!("no folder {}", parent.display()))),
        None => Dir::open_trusted(parent),
    }
}

/// `<root>/<TARGET>/cancel/<file>` → `TARGET`.
fn target_from_path(file: &std::path::Path) -> Result<Machine> {
    let abs = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    let dir = abs.parent();
    let in_cancel = dir
        .and_then(|d| d.file_name())
        .is_some_and(|n| n == "cancel");
    let target = dir
        .and_then(|d| d.parent())
        .and_then(|t| t.file_name())
        .and_then(|t| t.to_str());
    match (in_cancel, target) {
        (true, Some(t)) => Machine::parse(t, "target (from the marker's folder)"),
        _ => Err(Error::validation(format!(
            "cannot tell the target of {}: it is not in a <root>/<TARGET>/cancel/ folder",
            file.display()
        ))
        .hint("pass --target T")),
    }
}
