//! How a person names a job on the command line: its full id, `last` (the
//! last job this machine enqueued, kept in the state directory), or any
//! prefix of an id that only one job on the target has. One place, for
//! every command that takes `--job-id` or `--interrupt`.

use std::path::Path;

use crate::error::{Error, Result};
use crate::fsops;
use crate::layout::{Place, TargetDirs};
use crate::names::JobId;

/// The word that names the last job enqueued from this machine.
pub const LAST: &str = "last";

/// The file in the state directory that remembers it.
const LAST_FILE: &str = "last-enqueued";

/// How many candidates an ambiguous prefix lists.
const SHOWN: usize = 10;

/// Remembers `id`, just enqueued for each of `targets`, as `last` in the
/// state directory `state`. One that cannot be used (not set, inside the
/// root, not a folder) loses only the shorthand: the job is sent, and that
/// is said on stderr.
pub fn remember_on(state: Result<std::path::PathBuf>, targets: &[&TargetDirs], id: &JobId) {
    let remembered =
        state.and_then(|dir| targets.iter().try_for_each(|dirs| remember(&dir, dirs, id)));
    if let Err(e) = remembered {
        eprintln!(
            "fleet-dispatch: {id} is not remembered as `{LAST}`: {}",
            e.message
        );
    }
}

/// Remembers `id`, just enqueued for `dirs`' target, as `last`: a copy of
/// the same id for another target (a fan-out) joins the targets already
/// remembered for it, so `last` names it on each.
fn remember(state_dir: &Path, dirs: &TargetDirs, id: &JobId) -> Result<()> {
    fsops::create_dirs(&[state_dir.to_path_buf()])?;
    let mut targets = match remembered(state_dir) {
        Some((targets, last)) if last == id.as_str() => targets,
        _ => Vec::new(),
    };
    if !targets.iter().any(|t| dirs.target().same(t)) {
        targets.push(dirs.target().to_string());
    }
    let text = format!("{} {id}\n", targets.join(","));
    fsops::replace(
        &state_dir.join(LAST_FILE),
        text.as_bytes(),
        fsops::Flush::Nothing,
    )
}

/// The folders whose file names are the job ids a target knows.
const PLACES: [Place; 5] = [
    Place::Inbox,
    Place::Running,
    Place::Results,
    Place::Done,
    Place::Rejected,
];

/// Those of the target's folders that exist.
fn places(dirs: &TargetDirs) -> impl Iterator<Item = crate::fsops::Dir> + '_ {
    PLACES
        .into_iter()
        .filter_map(|p| dirs.open(p).ok().flatten())
}

/// Every job id the target's folders know, sorted, without repeats.
fn known_ids(dirs: &TargetDirs) -> Vec<JobId> {
    let mut ids: Vec<JobId> = places(dirs)
        .flat_map(|d| d.list().unwrap_or_default())
        .filter_map(|name| JobId::from_file_name(&name))
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// The job `text` names on `dirs`' target ([`LAST`], a full id, or a unique
/// prefix of one). A full id nothing knows yet is taken as it is (sync may
/// lag), and a whole generated id always is; an ambiguous prefix is
/// `VALIDATION_ERROR` listing the candidates.
pub fn resolve(dirs: &TargetDirs, state_dir: Option<&Path>, text: &str) -> Result<JobId> {
    if text == LAST {
        return last(dirs, state_dir);
    }
    // A full id a folder holds is looked up by name: a listing of every
    // folder (a year of history) is only for a prefix. A whole generated id
    // is taken as it is, held or not: read as a prefix, a longer name a
    // folder writer planted would take a cancel of a job still on its way.
    if let Ok(id) = JobId::parse(text)
        && (id.is_generated() || places(dirs).any(|d| d.exists(&id.file_name())))
    {
        return Ok(id);
    }
    let known = known_ids(dirs);
    let matching: Vec<&JobId> = known
        .iter()
        .filter(|id| !text.is_empty() && id.as_str().starts_with(text))
        .collect();
    match matching.as_slice() {
        [one] => Ok((*one).clone()),
        [] => JobId::parse(text),
        several => {
            let mut list: Vec<&str> = several.iter().take(SHOWN).map(|i| i.as_str()).collect();
            if several.len() > SHOWN {
                list.push("…");
            }
            Err(Error::validation(format!(
                "{text:?} is the start of {} job ids on {}: {}",
                several.len(),
                dirs.target(),
                list.join(", ")
            ))
            .hint("give more of the id"))
        }
    }
}

/// The targets and the id `last` names, from the state directory.
fn remembered(state_dir: &Path) -> Option<(Vec<String>, String)> {
    let text = std::fs::read_to_string(state_dir.join(LAST_FILE)).ok()?;
    let (targets, id) = text.trim().split_once(' ')?;
    let targets = targets.split(',').map(str::to_string).collect();
    Some((targets, id.to_string()))
}

fn last(dirs: &TargetDirs, state_dir: Option<&Path>) -> Result<JobId> {
    let (targets, id) = state_dir.and_then(remembered).ok_or_else(|| {
        Error::not_found(format!(
            "no job was enqueued from this machine yet, so `{LAST}` names none"
        ))
    })?;
    if !targets.iter().any(|t| dirs.target().same(t)) {
        let went = targets.join(",");
        return Err(Error::not_found(format!(
            "the last job enqueued from this machine went to {went}, not {}",
            dirs.target()
        ))
        .hint(format!("use --target {went}, or give the job's id")));
    }
    JobId::parse(&id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::Machine;

    fn world() -> (tempfile::TempDir, TargetDirs) {
        let dir = tempfile::tempdir().unwrap();
        let dirs = TargetDirs::new(dir.path(), &Machine::parse("PC", "t").unwrap());
        dirs.make_all().unwrap();
        (dir, dirs)
    }

    fn touch(dir: &std::path::Path, name: &str) {
        std::fs::write(dir.join(name), b"{}").unwrap();
    }

    #[test]
    fn a_unique_prefix_names_its_job_and_an_ambiguous_one_lists_them() {
        let (_d, dirs) = world();
        touch(&dirs.inbox(), "20261201-0900-aaaa1111.json");
        touch(&dirs.results(), "20261201-0900-aaaa2222.json");
        touch(&dirs.done(), "20261201-0900-bbbb3333.json");
        let got = resolve(&dirs, None, "20261201-0900-b").unwrap();
        assert_eq!(got.as_str(), "20261201-0900-bbbb3333");
        let e = resolve(&dirs, None, "20261201-0900-aaaa").unwrap_err();
        assert_eq!(e.code, crate::error::Code::Validation);
        assert!(
            e.message.contains("aaaa1111") && e.message.contains("aaaa2222"),
            "{}",
            e.message
        );
        // A full id nothing knows yet is taken as it is.
        assert_eq!(
            resolve(&dirs, None, "not-synced-yet").unwrap().as_str(),
            "not-synced-yet"
        );
    }

    #[test]
    fn last_is_the_last_job_enqueued_to_that_target() {
        let (d, dirs) = world();
        let state = d.path().join("state");
        assert_eq!(
            resolve(&dirs, Some(&state), LAST).unwrap_err().code,
            crate::error::Code::NotFound
        );
        remember(&state, &dirs, &JobId::parse("j-1").unwrap()).unwrap();
        assert_eq!(resolve(&dirs, Some(&state), LAST).unwrap().as_str(), "j-1");
        let other = TargetDirs::new(d.path(), &Machine::parse("LAPTOP", "t").unwrap());
        let e = resolve(&other, Some(&state), LAST).unwrap_err();
        assert!(e.message.contains("went to PC"), "{}", e.message);
        // A fan-out's copies: `last` names the id on each of its targets,
        // until another id is enqueued.
        remember(&state, &other, &JobId::parse("j-1").unwrap()).unwrap();
        assert_eq!(resolve(&dirs, Some(&state), LAST).unwrap().as_str(), "j-1");
        assert_eq!(resolve(&other, Some(&state), LAST).unwrap().as_str(), "j-1");
        remember(&state, &other, &JobId::parse("j-2").unwrap()).unwrap();
        let e = resolve(&dirs, Some(&state), LAST).unwrap_err();
        assert!(
            e.message.contains("went to LAPTOP, not PC"),
            "{}",
            e.message
        );
    }
}
