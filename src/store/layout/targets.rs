//! Which target folder a name means (docs/protocol.md §2.3): the exact
//! spelling wins, several case variants without it are refused, and a list
//! (`A,B`, `all`) names several.

use std::path::Path;

use super::TargetDirs;
use crate::base::error::{Error, Result};
use crate::base::names::{Machine, is_machine};
use crate::platform::EntryKind;
use crate::store::fsops::Dir;

/// The target folders that exist under `root`: folders (never links) with
/// valid names, listed through the folder port like every read of the root.
pub fn existing_targets(root: &Path) -> Result<Vec<String>> {
    let dir = Dir::open_trusted(root)?;
    let mut names: Vec<String> = dir
        .list()?
        .into_iter()
        .filter(|n| is_machine(n))
        .filter(|n| dir.entry(n).is_ok_and(|e| e.kind == EntryKind::Dir))
        .collect();
    names.sort_by_key(|n| n.to_ascii_lowercase());
    Ok(names)
}

/// The folder under `root` that serves `wanted`, from the names
/// `existing` lists: the exact spelling wins; without it, the one folder
/// whose name differs only in case. Several such folders (which a folder
/// writer can create on a case-sensitive file system to draw a listener or
/// a sender away) are a `CONFIG` error naming them: nothing picks one.
pub fn pick_target(root: &Path, wanted: &Machine, existing: &[String]) -> Result<Option<String>> {
    pick_among(&root.display().to_string(), wanted, existing)
}

/// [`pick_target`] in the root shown as `root` (a folder, or an
/// `s3://` root).
fn pick_among(root: &str, wanted: &Machine, existing: &[String]) -> Result<Option<String>> {
    if existing.iter().any(|n| n == wanted.as_str()) {
        return Ok(Some(wanted.to_string()));
    }
    let mut alike: Vec<&String> = existing.iter().filter(|n| wanted.same(n)).collect();
    alike.sort();
    match alike.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some((*one).clone())),
        several => Err(Error::config(format!(
            "target {wanted} matches several folders under {root} that differ only in case: {}",
            several
                .iter()
                .map(|n| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .hint(format!(
            "keep the one the listener uses, or spell the target exactly as its folder ({})",
            several[0]
        ))),
    }
}

/// [`pick_target`] over the folders that exist under `root` now.
pub fn find_target(root: &Path, wanted: &Machine) -> Result<Option<String>> {
    pick_target(root, wanted, &existing_targets(root)?)
}

/// Resolves `name` to an existing target folder ([`pick_target`]), or to a
/// fleet member named in `fleet` (whose folder may not exist yet). Anything
/// else is `NOT_FOUND`, listing the known targets.
pub fn resolve_target(root: &Path, name: &str, fleet: &[String]) -> Result<TargetDirs> {
    let found = resolve_among(
        &root.display().to_string(),
        existing_targets(root)?,
        name,
        fleet,
    )?;
    Ok(TargetDirs::new(root, &found))
}

/// [`resolve_target`] among the targets `existing` of the root shown as
/// `root` (a folder, or an `s3://` root): the target's spelling there.
pub fn resolve_among(
    root: &str,
    existing: Vec<String>,
    name: &str,
    fleet: &[String],
) -> Result<Machine> {
    let wanted = Machine::parse(name, "target")?;
    if let Some(found) = pick_among(root, &wanted, &existing)? {
        return Machine::parse(&found, "target");
    }
    if let Some(member) = fleet.iter().find(|n| wanted.same(n)) {
        // Nothing is created here: a command that writes makes the one
        // folder it writes into, and one that only reads finds nothing.
        return Machine::parse(member, "target");
    }
    let mut known: Vec<String> = existing;
    for f in fleet {
        if !known.iter().any(|k| k.eq_ignore_ascii_case(f)) {
            known.push(f.clone());
        }
    }
    let list = if known.is_empty() {
        "none yet".to_string()
    } else {
        known.join(", ")
    };
    Err(Error::not_found(format!(
        "unknown target {name:?} under {root} (known targets: {list})"
    ))
    .hint("a target's folder appears when its listener first starts; or name it in FLEET_DISPATCH_FLEET"))
}

/// The word that names every target at once in a target list.
pub const ALL_TARGETS: &str = "all";

/// True when `text` names more than one target: a comma list, or
/// `all`.
pub fn is_target_list(text: &str) -> bool {
    text.contains(',') || text.eq_ignore_ascii_case(ALL_TARGETS)
}

/// Refuses `machine` as the name of a target a listener serves when no
/// `--target` could ever name it: `all`, in any case, always
/// means every target (docs/protocol.md §2.2).
pub fn check_addressable(machine: &Machine) -> Result<()> {
    if !is_all(machine.as_str()) {
        return Ok(());
    }
    Err(Error::config(format!(
        "this machine is named {machine:?}, which no sender could address: `--target {ALL_TARGETS}` names every target at once"
    ))
    .hint("give it another name: --machine NAME, FLEET_DISPATCH_MACHINE, or `machine` in the config file"))
}

/// True when `text` is `all`: every target folder this machine
/// sees, which a folder writer can add to, so a fan-out to them passes over
/// one that cannot take a job rather than stop at it.
pub fn is_all(text: &str) -> bool {
    text.eq_ignore_ascii_case(ALL_TARGETS)
}

/// Resolves a target list (`A,B,C`, or `all` for every target
/// folder under `root`) by [`resolve_target`], in the order given. A name
/// given twice (in any case) or an empty entry is `VALIDATION_ERROR`: a
/// fan-out publishes one copy per target, never two to one; for the same
/// reason `all` over folders that differ only in case is `CONFIG`.
pub fn resolve_targets(root: &Path, list: &str, fleet: &[String]) -> Result<Vec<TargetDirs>> {
    if list.eq_ignore_ascii_case(ALL_TARGETS) {
        let all = existing_targets(root)?;
        if all.is_empty() {
            return Err(Error::not_found(format!(
                "--target {ALL_TARGETS}: no target folder under {} yet",
                root.display()
            ))
            .hint("a target's folder appears when its listener first starts"));
        }
        // Sorted without regard to case, so variants of a name are neighbours.
        if let Some(pair) = all.windows(2).find(|p| p[0].eq_ignore_ascii_case(&p[1])) {
            let variants: Vec<&str> = all
                .iter()
                .filter(|n| n.eq_ignore_ascii_case(&pair[0]))
                .map(String::as_str)
                .collect();
            return Err(Error::config(format!(
                "--target {ALL_TARGETS}: folders under {} differ only in case: {}; each would get a copy",
                root.display(),
                variants.join(", ")
            ))
            .hint("remove the one no listener uses (`status --target NAME` shows its heartbeat), or list the targets"));
        }
        return all
            .iter()
            .map(|n| Ok(TargetDirs::new(root, &Machine::parse(n, "target")?)))
            .collect();
    }
    let mut out: Vec<TargetDirs> = Vec::new();
    for name in list.split(',') {
        if name.is_empty() {
            return Err(
                Error::validation(format!("--target {list:?}: an empty name in the list"))
                    .hint("write A,B,C with no spaces or empty entries"),
            );
        }
        if name.eq_ignore_ascii_case(ALL_TARGETS) {
            return Err(Error::validation(format!(
                "--target {list:?}: `{ALL_TARGETS}` names every target, so it stands alone"
            ))
            .hint(format!("write --target {ALL_TARGETS}, or list the targets")));
        }
        let dirs = resolve_target(root, name, fleet)?;
        if out.iter().any(|d| d.target().same(dirs.target().as_str())) {
            return Err(Error::validation(format!(
                "--target {list:?} names {} twice",
                dirs.target()
            )));
        }
        out.push(dirs);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exact_spelling_wins_and_several_case_variants_are_refused() {
        let root = Path::new("/r");
        let m = Machine::parse("build", "t").unwrap();
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let pick = |v: &[&str]| pick_target(root, &m, &names(v));
        assert_eq!(
            pick(&["BUILD", "build", "buILd"]).unwrap().as_deref(),
            Some("build")
        );
        assert_eq!(pick(&["BUILD", "PC"]).unwrap().as_deref(), Some("BUILD"));
        assert_eq!(pick(&["PC"]).unwrap(), None);
        let e = pick(&["BUILD", "buILd", "PC"]).unwrap_err();
        assert_eq!(e.code, crate::base::error::Code::Config);
        assert!(e.message.contains("BUILD, buILd"), "{}", e.message);
    }
}
