//! What this machine remembers of the jobs it sent, in its state
//! directory: `last-enqueued` (what `last` names) and `sent` (the ids sent
//! from here, known before sync carries them to the target's folder).
//! Local files, written by path: they never sync.

use std::path::Path;

use crate::base::error::{Error, Result};
use crate::base::names::{JobId, Machine};
use crate::store::fsops;
use crate::store::layout::TargetDirs;

/// The file in the state directory that remembers the last job enqueued.
/// The word that names the last job enqueued from this machine.
pub const LAST: &str = "last";

const LAST_FILE: &str = "last-enqueued";

/// The file in the state directory that lists the jobs this machine sent,
/// one `TARGET ID` a line, newest last: an id sent from here is known even
/// before sync has carried it to the target's folder.
const SENT_FILE: &str = "sent";

/// The size past which the sent list keeps only its newer half: thousands
/// of ids, more than sync ever lags behind.
const SENT_MAX_BYTES: u64 = 256 * 1024;

/// Remembers `id`, just enqueued for each of `targets`, as `last` in the
/// state directory `state`. One that cannot be used (not set, inside the
/// root, not a folder) loses only the shorthand: the job is sent, and that
/// is said on stderr.
pub fn remember_on(state: Result<std::path::PathBuf>, targets: &[&Machine], id: &JobId) {
    let remembered = state.and_then(|dir| {
        targets
            .iter()
            .try_for_each(|target| remember(&dir, target, id))
    });
    if let Err(e) = remembered {
        crate::note!(
            "fleet-dispatch: {id} is not remembered as `{LAST}`: {}",
            e.message
        );
    }
}

/// Remembers `id`, just enqueued for `target`, as `last`: a copy of
/// the same id for another target (a fan-out) joins the targets already
/// remembered for it, so `last` names it on each.
pub fn remember(state_dir: &Path, target: &Machine, id: &JobId) -> Result<()> {
    fsops::create_dirs(&[state_dir.to_path_buf()])?;
    let mut targets = match remembered(state_dir) {
        Some((targets, last)) if last == id.as_str() => targets,
        _ => Vec::new(),
    };
    if !targets.iter().any(|t| target.same(t)) {
        targets.push(target.to_string());
    }
    let text = format!("{} {id}\n", targets.join(","));
    fsops::replace(
        &state_dir.join(LAST_FILE),
        text.as_bytes(),
        fsops::Flush::Nothing,
    )?;
    record_sent(state_dir, &[(target, id)])
}

/// Adds every job of a batch, each `(targets, id)`, to the sent list in
/// one write (only the last becomes `last`, by [`remember_on`]), so a
/// cancel of any of them is taken before it has synced. A failure is
/// said on stderr; the jobs are sent either way.
pub fn record_sent_on(state: Result<std::path::PathBuf>, jobs: &[(&[TargetDirs], &JobId)]) {
    let each: Vec<(&Machine, &JobId)> = jobs
        .iter()
        .flat_map(|(targets, id)| targets.iter().map(move |d| (d.target(), *id)))
        .collect();
    let recorded = state.and_then(|dir| {
        fsops::create_dirs(std::slice::from_ref(&dir))?;
        record_sent(&dir, &each)
    });
    if let Err(e) = recorded {
        crate::note!(
            "fleet-dispatch: the batch's ids are not recorded as sent from here: {}",
            e.message
        );
    }
}

/// Adds each `(target, id)` sent to the sent list in one append, keeping
/// the list's newer half once it outgrows [`SENT_MAX_BYTES`].
fn record_sent(state_dir: &Path, sent: &[(&Machine, &JobId)]) -> Result<()> {
    use std::io::Write;
    let path = state_dir.join(SENT_FILE);
    let lines: String = sent
        .iter()
        .map(|(target, id)| format!("{target} {id}\n"))
        .collect();
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(lines.as_bytes()))
        .map_err(|e| Error::io("write", &path, &e))?;
    if std::fs::metadata(&path).is_ok_and(|m| m.len() > SENT_MAX_BYTES) {
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io("read", &path, &e))?;
        let lines: Vec<&str> = text.lines().collect();
        let kept = lines[lines.len() / 2..].join("\n") + "\n";
        fsops::replace(&path, kept.as_bytes(), fsops::Flush::Nothing)?;
    }
    Ok(())
}

/// The ids this machine sent to `target` (any case), oldest first.
pub fn sent_to(state_dir: Option<&Path>, target: &Machine) -> Vec<String> {
    let Some(text) = state_dir.and_then(|d| std::fs::read_to_string(d.join(SENT_FILE)).ok()) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(t, _)| target.same(t))
        .map(|(_, id)| id.to_string())
        .collect()
}

/// The targets and the id `last` names, from the state directory.
pub fn remembered(state_dir: &Path) -> Option<(Vec<String>, String)> {
    let text = std::fs::read_to_string(state_dir.join(LAST_FILE)).ok()?;
    let (targets, id) = text.trim().split_once(' ')?;
    let targets = targets.split(',').map(str::to_string).collect();
    Some((targets, id.to_string()))
}
