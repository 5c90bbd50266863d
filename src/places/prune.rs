//! What a sweep removes (docs/protocol.md §8.3): stale cancel markers, our
//! own stale temp files, and what a target keeps of its past — processed
//! job files, results, logs, consumed markers and rejected files — once
//! older than the retention. The rules are [`crate::base::retention`]'s; this
//! module walks a target's folders and names the entries they condemn,
//! removes them for `sweep` ([`sweep`]) and counts them for `doctor`. It
//! never follows a link or leaves the target's folder: every folder is
//! held open as it is walked, and each entry is named in the folder it was
//! found in.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::base::error::Result;
use crate::base::names::JobId;
use crate::base::read::FileRead;
use crate::base::retention::{self, Decision};
use crate::platform::{Entry, EntryKind};
use crate::protocol::doc;
use crate::store::fsops::{self, Child, Dir};
use crate::store::layout::{self, ARCHIVE, Place, TargetDirs};

/// What a removed entry is, in the order a summary counts them.
pub const KINDS: [&str; 8] = [
    MARKER, TEMP, JOB_FILE, RESULT, LOG, CONSUMED, REJECTED, REASON,
];
/// A stale cancel marker.
pub const MARKER: &str = "marker";
/// A stale temp file of ours.
pub const TEMP: &str = "temp file";
/// A processed job file (`archive/done/`).
pub const JOB_FILE: &str = "job file";
/// A result.
pub const RESULT: &str = "result";
/// A captured output log.
pub const LOG: &str = "log";
/// A consumed marker.
pub const CONSUMED: &str = "consumed marker";
/// A rejected file.
pub const REJECTED: &str = "rejected file";
/// A rejected file's reason.
pub const REASON: &str = "rejection reason";

/// A rejected file's reason is `<name>.reason.json` beside it (§6.6).
const REASON_SUFFIX: &str = ".reason.json";

fn age_of(meta: &Entry, now: SystemTime) -> Option<Duration> {
    meta.modified.and_then(|m| now.duration_since(m).ok())
}

/// One entry to remove: the folder it is in, its name, its path (for
/// output) and what it is.
pub struct Doomed {
    /// The folder it is in, held open.
    pub dir: Dir,
    /// Its name there.
    pub name: String,
    /// Its path, for output.
    pub path: PathBuf,
    /// What it is: one of [`KINDS`].
    pub kind: &'static str,
}

/// An entry of a place retention prunes (`results/`, `logs/` and the
/// three archive places), on any root: its place, its name there, its age
/// (`None`: dated in the future, or not known), and whether it is a
/// folder (one moved aside into `archive/rejected/`, §3.5).
#[derive(Clone, Debug)]
pub struct Past {
    /// Its place.
    pub place: Place,
    /// Its name there.
    pub name: String,
    /// Its age.
    pub age: Option<Duration>,
    /// A folder, not a file.
    pub folder: bool,
}

/// How deep below the target folder sweep looks (`archive/done/<file>`).
const DEPTH: usize = 3;

/// `sweep`'s default age for a stale marker (`--max-age`).
pub const MARKER_MAX_AGE: Duration = Duration::from_secs(86400);

/// The rules' settings for one run.
#[derive(Clone, Copy, Debug)]
pub struct Ages {
    /// Now, for the ages of files.
    pub now: SystemTime,
    /// How old a marker must be to go.
    pub marker: Duration,
    /// How old a past job's files must all be to go.
    pub retention: Duration,
}

/// A marker a sweep keeps, and why: what `sweep --dry-run` says when it
/// would remove nothing.
#[derive(Clone, Debug)]
pub struct KeptMarker {
    /// The job it names.
    pub job_id: String,
    /// Why it stays ([`retention::marker`]'s reason).
    pub why: &'static str,
    /// When a sweep with the same max age will take it: its file's time
    /// plus the max age (none while its job waits, or with no file time).
    pub removable_at: Option<SystemTime>,
}

/// What a sweep does with the cancel marker `name` (on any root), last
/// written at `modified` (`None`: not known), by [`retention::marker`]:
/// `Ok` to remove it, `Err` with why it is kept; `None` when the name is
/// not a marker's. `waiting` holds the file names of the jobs that wait.
pub fn marker_fate(
    name: &str,
    modified: Option<SystemTime>,
    ages: Ages,
    waiting: &HashSet<String>,
) -> Option<std::result::Result<(), KeptMarker>> {
    let id = JobId::from_file_name(name)?;
    let queued = waiting.contains(name);
    let age = modified.and_then(|m| ages.now.duration_since(m).ok());
    Some(match retention::marker(age, ages.marker, queued) {
        Decision::Remove => Ok(()),
        Decision::Keep(why) => Err(KeptMarker {
            job_id: id.to_string(),
            why,
            removable_at: modified
                .filter(|_| !queued)
                .and_then(|m| m.checked_add(ages.marker)),
        }),
    })
}

/// What one walk of a target collects.
struct Walk<'a> {
    ages: Ages,
    /// The markers kept, with why.
    kept_markers: Vec<KeptMarker>,
    /// Names in `inbox/` and `running/` (the jobs that wait or run), and
    /// of the jobs a queued job waits for.
    waiting: &'a HashSet<String>,
    out: Vec<Doomed>,
    /// Entries of `results/`, `logs/` and the three archive places, and
    /// the folder each is in.
    past: Vec<(Past, Dir)>,
}

/// The names in `inbox/` and `running/` now (none when missing).
fn waiting_names(dirs: &TargetDirs) -> Result<HashSet<String>> {
    let mut names = HashSet::new();
    for p in [Place::Inbox, Place::Running] {
        if let Some(d) = dirs.open(p)? {
            names.extend(d.list()?);
        }
    }
    Ok(names)
}

/// The jobs that a job queued anywhere in a root waits for (its spec's
/// `after`, docs/protocol.md §7.13), by target, as file names: their files
/// are kept like a queued job's, so the waiting job still finds how they
/// ended. Read from every inbox of the root once, for all the targets a
/// command plans (`sweep --all` read each inbox again for each target).
/// The job files are not verified (sweep may run without the key): a
/// forged one can only make files stay longer.
pub struct Awaited(HashMap<String, HashSet<String>>);

impl Awaited {
    /// Reads every target's inbox in the root `dirs`' target lies in.
    pub fn read(dirs: &TargetDirs) -> Result<Awaited> {
        let mut by_target: HashMap<String, HashSet<String>> = HashMap::new();
        for other in dirs.siblings()? {
            let Ok(Some(inbox)) = other.open(Place::Inbox) else {
                continue;
            };
            for name in inbox.list().unwrap_or_default() {
                if JobId::from_file_name(&name).is_none() {
                    continue;
                }
                let FileRead::Bytes(b) = inbox.read_limited(&name, doc::job::MAX_BYTES) else {
                    continue;
                };
                let Some(header) = doc::job::peek(&b) else {
                    continue;
                };
                for a in header.after {
                    by_target
                        .entry(a.target.as_str().to_ascii_lowercase())
                        .or_default()
                        .insert(a.job_id.file_name());
                }
            }
        }
        Ok(Awaited(by_target))
    }

    /// The file names of `dirs`' target's jobs that are waited for.
    fn of(&self, dirs: &TargetDirs) -> impl Iterator<Item = String> + '_ {
        let t = dirs.target().as_str().to_ascii_lowercase();
        self.0.get(&t).into_iter().flatten().cloned()
    }
}

/// The entries to remove under one target, with the jobs waited for in
/// the root already read (a command over several targets of one root reads
/// its inboxes once): markers by age, our temp files anywhere in the
/// target's folders, and past jobs and rejections by the retention; and
/// the markers it keeps with why.
pub fn plan_kept(
    dirs: &TargetDirs,
    ages: Ages,
    awaited: &Awaited,
) -> Result<(Vec<Doomed>, Vec<KeptMarker>)> {
    let Some(base) = dirs.open_base()? else {
        return Ok((Vec::new(), Vec::new()));
    };
    let mut waiting = waiting_names(dirs)?;
    waiting.extend(awaited.of(dirs));
    let mut walk = Walk {
        ages,
        kept_markers: Vec::new(),
        waiting: &waiting,
        out: Vec::new(),
        past: Vec::new(),
    };
    walk.dir(&base, 1, None, false);
    let mut kept_markers = std::mem::take(&mut walk.kept_markers);
    kept_markers.sort_by(|a, b| a.job_id.cmp(&b.job_id));
    let mut out = walk.out;
    let (past, folders): (Vec<Past>, Vec<Dir>) = walk.past.into_iter().unzip();
    out.extend(
        past_to_prune(&past, &waiting, ages.retention, &folder_log)
            .into_iter()
            .map(|(i, kind)| Doomed {
                dir: folders[i].clone(),
                path: folders[i].shown(&past[i].name),
                name: past[i].name.clone(),
                kind,
            }),
    );
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok((out, kept_markers))
}

/// The place a folder met on the walk is: `name` at `depth` below the
/// target folder, inside `archive/` or not.
fn place_of(depth: usize, in_archive: bool, name: &str) -> Option<Place> {
    Place::ALL.into_iter().find(|p| {
        p.name() == name && p.in_archive() == in_archive && depth == 1 + usize::from(in_archive)
    })
}

impl Walk<'_> {
    fn dir(&mut self, dir: &Dir, depth: usize, place: Option<Place>, in_archive: bool) {
        for name in dir.list().unwrap_or_default() {
            let Ok(meta) = dir.entry(&name) else { continue };
            let age = age_of(&meta, self.ages.now);
            if meta.kind == EntryKind::Dir {
                if place == Some(Place::Rejected) {
                    // A layout folder moved aside (§3.5): kept, with its reason.
                    self.found(Place::Rejected, dir, name, age, true);
                    continue;
                }
                if depth < DEPTH
                    && let Ok(Child::Dir(sub)) = dir.child(&name)
                {
                    let archive = depth == 1 && name == ARCHIVE;
                    let below = place_of(depth, in_archive, &name);
                    self.dir(&sub, depth + 1, below, archive);
                }
                continue;
            }
            if fsops::is_our_temp_name(&name) {
                if retention::temp_file(age) == Decision::Remove {
                    self.doom(dir, name, TEMP);
                }
                continue;
            }
            match place {
                Some(Place::Cancel) => {
                    match marker_fate(&name, meta.modified, self.ages, self.waiting) {
                        Some(Ok(())) => self.doom(dir, name, MARKER),
                        Some(Err(kept)) => self.kept_markers.push(kept),
                        None => {}
                    }
                }
                Some(
                    p @ (Place::Results
                    | Place::Logs
                    | Place::Done
                    | Place::Consumed
                    | Place::Rejected),
                ) => self.found(p, dir, name, age, false),
                _ => {}
            }
        }
    }

    fn doom(&mut self, dir: &Dir, name: String, kind: &'static str) {
        self.out.push(Doomed {
            dir: dir.clone(),
            path: dir.shown(&name),
            name,
            kind,
        });
    }

    fn found(&mut self, p: Place, dir: &Dir, name: String, age: Option<Duration>, folder: bool) {
        let past = Past {
            place: p,
            name,
            age,
            folder,
        };
        self.past.push((past, dir.clone()));
    }
}

/// Whether `name` is a log of `id` in a folder's `logs/`.
fn folder_log(id: &JobId, name: &str) -> bool {
    ["stdout", "stderr"]
        .iter()
        .any(|s| name == layout::log_name(id, s))
}

/// The job an entry of `results/`, `logs/`, `archive/done/` or
/// `archive/consumed/` belongs to, and what it is (`is_log` tells a log of
/// a job by its name); `None` for any other name (conflict copies, other
/// programs' files), which is never pruned.
fn job_of(
    place: Place,
    name: &str,
    is_log: &dyn Fn(&JobId, &str) -> bool,
) -> Option<(JobId, &'static str)> {
    let id = JobId::parse(name.split_once('.')?.0).ok()?;
    let (kind, ok) = match place {
        Place::Done => (JOB_FILE, name == id.file_name()),
        Place::Results => (RESULT, name == id.file_name()),
        Place::Consumed => (CONSUMED, name == layout::consumed_name(&id)),
        Place::Logs => (LOG, is_log(&id, name)),
        _ => return None,
    };
    ok.then_some((id, kind))
}

/// Which of `past` go by the retention: each processed job's entries in
/// `archive/done/`, `results/`, `logs/` and `archive/consumed/` together
/// ([`retention::job_files`]; `is_log` tells a log of a job by its name,
/// which differs between roots), and each rejected entry with its reason
/// ([`retention::rejected_files`]); nothing of a job in `waiting` (file
/// names). Each as its index in `past`, and what it is.
pub fn past_to_prune(
    past: &[Past],
    waiting: &HashSet<String>,
    retention: Duration,
    is_log: &dyn Fn(&JobId, &str) -> bool,
) -> Vec<(usize, &'static str)> {
    let mut out = Vec::new();
    let mut jobs: HashMap<JobId, Vec<(usize, &'static str)>> = HashMap::new();
    for (i, p) in past.iter().enumerate() {
        if let Some((id, kind)) = job_of(p.place, &p.name, is_log) {
            jobs.entry(id).or_default().push((i, kind));
        }
    }
    for (id, files) in jobs {
        let ages: Vec<_> = files.iter().map(|(i, _)| past[*i].age).collect();
        let queued = waiting.contains(&id.file_name());
        if retention::job_files(&ages, retention, queued) == Decision::Remove {
            out.extend(files);
        }
    }
    let mut groups: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, p) in past.iter().enumerate() {
        if p.place == Place::Rejected {
            groups.entry(rejected_group(&p.name)).or_default().push(i);
        }
    }
    for (name, files) in groups {
        let ages: Vec<_> = files.iter().map(|i| past[*i].age).collect();
        let folder = files.iter().any(|i| past[*i].folder);
        let queued = JobId::from_file_name(name).is_some() && waiting.contains(name);
        if retention::rejected_files(&ages, retention, queued, folder) == Decision::Remove {
            out.extend(files.into_iter().map(|i| {
                let kind = if past[i].name.ends_with(REASON_SUFFIX) {
                    REASON
                } else {
                    REJECTED
                };
                (i, kind)
            }));
        }
    }
    out
}

/// The name a rejected entry was refused under: `<name>`, its slots
/// `<name>.1` … `<name>.999` and their reasons are one group, so the lookup
/// that stops at the first free slot (§6.6) never loses a later one.
fn rejected_group(name: &str) -> &str {
    let stored = name.strip_suffix(REASON_SUFFIX).unwrap_or(name);
    match stored.rsplit_once('.') {
        Some((base, n))
            if !base.is_empty()
                && (1..=3).contains(&n.len())
                && n.bytes().all(|b| b.is_ascii_digit()) =>
        {
            base
        }
        _ => stored,
    }
}

/// What a sweep of some targets of one root did.
#[derive(Debug, Default)]
pub struct Swept {
    /// What was removed (or would be, on a dry run): target, path, kind.
    pub removed: Vec<(String, PathBuf, &'static str)>,
    /// What could not be planned or removed: path, and why.
    pub failed: Vec<(String, String)>,
    /// The markers kept, by target.
    pub kept: Vec<(String, KeptMarker)>,
}

/// Removes what [`plan_kept`] condemns in each of `targets` (all of one
/// root), or with `dry_run` only lists it. A target whose plan fails, or
/// an entry that cannot be removed, is reported and the sweep goes on.
pub fn sweep(targets: &[TargetDirs], ages: Ages, dry_run: bool) -> Swept {
    let mut swept = Swept::default();
    // Every target is of one root: what its queued jobs wait for is read
    // once, not once per target.
    let mut awaited: Option<Awaited> = None;
    for dirs in targets {
        let read = match awaited.take() {
            Some(a) => Ok(a),
            None => Awaited::read(dirs),
        };
        let planned = match read.and_then(|a| {
            let planned = plan_kept(dirs, ages, &a);
            awaited = Some(a);
            planned
        }) {
            Ok((p, k)) => {
                let target = dirs.target().to_string();
                swept
                    .kept
                    .extend(k.into_iter().map(|k| (target.clone(), k)));
                p
            }
            Err(e) => {
                let path = dirs.base().display().to_string();
                swept.failed.push((path, e.message));
                continue;
            }
        };
        for d in planned {
            if !dry_run && let Err(e) = d.dir.remove(&d.name) {
                swept.failed.push((d.path.display().to_string(), e.message));
                continue;
            }
            swept
                .removed
                .push((dirs.target().to_string(), d.path, d.kind));
        }
    }
    swept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_jobs_own_names_belong_to_it() {
        let id = "20261129-193000-9f2c4e1ab37d5c08";
        let kind = |p, n: &str| job_of(p, n, &folder_log).map(|(j, k)| (j.to_string(), k));
        assert_eq!(
            kind(Place::Done, &format!("{id}.json")),
            Some((id.into(), JOB_FILE))
        );
        assert_eq!(
            kind(Place::Logs, &format!("{id}.stderr.log")),
            Some((id.into(), LOG))
        );
        assert_eq!(
            kind(Place::Consumed, &format!("{id}.cancel.json")),
            Some((id.into(), CONSUMED))
        );
        for (p, n) in [
            (
                Place::Results,
                format!("{id}.sync-conflict-20261129-193000-ABCDEFG.json"),
            ),
            (Place::Logs, format!("{id}.json")),
            (Place::Consumed, format!("{id}.json")),
            (Place::Done, format!("{id} (PC's conflicted copy).json")),
            (Place::Done, "~$x.json".to_string()),
        ] {
            assert_eq!(kind(p, &n), None, "{n}");
        }
    }

    #[test]
    fn a_rejected_names_slots_and_reasons_are_one_group() {
        for n in [
            "x.json",
            "x.json.reason.json",
            "x.json.1",
            "x.json.12.reason.json",
        ] {
            assert_eq!(rejected_group(n), "x.json", "{n}");
        }
        assert_eq!(
            rejected_group("archive-done.20261129T193105.123Z.moved-aside"),
            "archive-done.20261129T193105.123Z.moved-aside"
        );
        assert_eq!(rejected_group(".5"), ".5");
    }
}
