//! How a person names a job on the command line: its full id, `last` (the
//! last job this machine enqueued, kept in the state directory), or any
//! prefix of an id that only one verified job on the target has. One
//! place, for every command that takes `--job-id`, `--interrupt` or
//! `--after`, with one listing of a target per command. Also whether a job
//! is known at all ([`Names::check_known`]: a mistyped id must not leave a
//! marker behind while the real job runs on), from the target's folders and
//! the ids this machine sent (the `sent` file in the state directory), and
//! `running`, the job a target runs now.
//!
//! The files this machine keeps of what it sent (`last-enqueued`, `sent`)
//! are read and written in `local/sent.rs`.

pub use crate::local::sent::{LAST, record_sent_on, remember_on};
use crate::local::sent::{remembered, sent_to};

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::base::error::{Error, Result};
use crate::base::names::{JobId, Machine};
use crate::store::layout::{Place, TargetDirs};
use crate::trust::Key;

/// The word `enqueue --interrupt` takes for the one job the target runs now.
pub const RUNNING: &str = "running";

/// How many nearest ids a refusal of an unknown id names.
const NEAREST: usize = 3;

/// How many candidates an ambiguous prefix lists.
const SHOWN: usize = 10;

/// The folders whose file names are the job ids a target knows.
const PLACES: [Place; 5] = [
    Place::Inbox,
    Place::Running,
    Place::Results,
    Place::Done,
    Place::Rejected,
];

/// One target's folders as a command names its jobs: opened once, and
/// listed once, the first time a prefix needs it.
struct Seen {
    dirs: TargetDirs,
    open: Vec<(Place, crate::store::fsops::Dir)>,
    /// Every id a folder names, sorted, with the places that name it.
    listed: Option<BTreeMap<String, Vec<Place>>>,
    /// Whether a file of that id verified, once asked.
    verified: BTreeMap<JobId, bool>,
}

impl Seen {
    fn new(dirs: &TargetDirs) -> Seen {
        let open = PLACES
            .into_iter()
            .filter_map(|p| dirs.open(p).ok().flatten().map(|d| (p, d)))
            .collect();
        Seen {
            dirs: dirs.clone(),
            open,
            listed: None,
            verified: BTreeMap::new(),
        }
    }

    /// True when a folder holds a file named for `id`, verified or not.
    fn holds(&self, id: &JobId) -> bool {
        match &self.listed {
            Some(listed) => listed.contains_key(id.as_str()),
            None => self.open.iter().any(|(_, d)| d.exists(&id.file_name())),
        }
    }

    fn listed(&mut self) -> &BTreeMap<String, Vec<Place>> {
        self.listed.get_or_insert_with(|| {
            let mut ids: BTreeMap<String, Vec<Place>> = BTreeMap::new();
            for (place, dir) in &self.open {
                for name in dir.list().unwrap_or_default() {
                    if let Some(id) = JobId::from_file_name(&name) {
                        ids.entry(id.to_string()).or_default().push(*place);
                    }
                }
            }
            ids
        })
    }

    /// True when a file of `id` is a document signed with `key` for this
    /// target: its job (queued, done or refused) or its result. A name
    /// alone proves nothing: anyone who can write the folder can make one.
    fn verified(&mut self, id: &JobId, key: &Key) -> bool {
        if let Some(v) = self.verified.get(id) {
            return *v;
        }
        let places = self.listed().get(id.as_str()).cloned().unwrap_or_default();
        let target = self.dirs.target().as_str();
        let v = places.iter().any(|p| {
            let Some((_, dir)) = self.open.iter().find(|(q, _)| q == p) else {
                return false;
            };
            match p {
                Place::Results => crate::protocol::judge::result(dir, id, target, key).is_ok(),
                // `running/` holds the listener's unsigned note; the job
                // itself is in `inbox/` meanwhile.
                Place::Running => false,
                _ => crate::protocol::judge::job(dir, id, target, key).is_ok(),
            }
        });
        self.verified.insert(id.clone(), v);
        v
    }
}

/// How one command names jobs ([`LAST`], a full id, or a unique prefix of
/// a verified job's id) on any number of targets: each target's folders
/// are listed at most once for the whole command, however many names it
/// resolves (a batch of a thousand lines each `after` another), and only
/// the files a prefix matches are read to verify them.
pub struct Names<'a> {
    key: &'a Key,
    state_dir: Option<PathBuf>,
    /// By target, without case (as target folders are).
    seen: BTreeMap<String, Seen>,
    /// Ids the command itself is about to publish, by target: they are
    /// the command's own, so they count as known and verified.
    own: BTreeMap<String, BTreeSet<JobId>>,
}

impl<'a> Names<'a> {
    /// Names resolved with `key` (to verify what a prefix matches), `last`
    /// read from `state_dir`.
    pub fn new(key: &'a Key, state_dir: Option<PathBuf>) -> Names<'a> {
        Names {
            key,
            state_dir,
            seen: BTreeMap::new(),
            own: BTreeMap::new(),
        }
    }

    /// Counts `id`, about to be published on `target` by this command, as
    /// a known job there.
    pub fn add_own(&mut self, target: &Machine, id: &JobId) {
        let t = target.as_str().to_ascii_lowercase();
        self.own.entry(t).or_default().insert(id.clone());
    }

    /// The job `text` names on `dirs`' target: [`LAST`]; an exact id,
    /// which always wins (a whole generated id, one the command itself
    /// sends, or one a folder holds); else the one verified job whose id
    /// starts with `text`. A prefix that no verified job has is taken as
    /// an id as it is (sync may lag); one that several have is
    /// `VALIDATION_ERROR` listing them. A file whose name matches but that
    /// does not verify (planted, garbled, for another target) takes no
    /// part.
    pub fn resolve(&mut self, dirs: &TargetDirs, text: &str) -> Result<JobId> {
        if text == LAST {
            return last(dirs.target(), self.state_dir.as_deref());
        }
        let t = dirs.target().as_str().to_ascii_lowercase();
        let own = self.own.get(&t);
        let seen = self.seen.entry(t).or_insert_with(|| Seen::new(dirs));
        // A whole generated id is taken as it is, held or not: read as a
        // prefix, a longer name would take a job still on its way.
        if let Ok(id) = JobId::parse(text)
            && (id.is_generated() || own.is_some_and(|o| o.contains(&id)) || seen.holds(&id))
        {
            return Ok(id);
        }
        if text.is_empty() {
            return JobId::parse(text);
        }
        let named: Vec<JobId> = seen
            .listed()
            .range::<str, _>((std::ops::Bound::Included(text), std::ops::Bound::Unbounded))
            .map(|(id, _)| id)
            .take_while(|id| id.starts_with(text))
            .filter_map(|id| JobId::parse(id).ok())
            .collect();
        let mut matching: BTreeSet<JobId> = own
            .into_iter()
            .flatten()
            .filter(|id| id.as_str().starts_with(text))
            .cloned()
            .collect();
        // Each file matched is read to verify it, up to one more than a
        // refusal lists.
        for id in named {
            if matching.len() > SHOWN {
                break;
            }
            if !matching.contains(&id) && seen.verified(&id, self.key) {
                matching.insert(id);
            }
        }
        let mut matching = matching.into_iter();
        match (matching.next(), matching.len()) {
            (None, _) => JobId::parse(text),
            (Some(one), 0) => Ok(one),
            (Some(first), _) => {
                let mut list: Vec<String> = std::iter::once(first)
                    .chain(matching)
                    .map(|i| i.to_string())
                    .collect();
                let count = if list.len() > SHOWN {
                    list.truncate(SHOWN);
                    list.push("…".to_string());
                    format!("more than {SHOWN}")
                } else {
                    list.len().to_string()
                };
                Err(Error::validation(format!(
                    "{text:?} is the start of {count} job ids on {}: {}",
                    dirs.target(),
                    list.join(", ")
                ))
                .hint("give more of the id"))
            }
        }
    }
}

impl Names<'_> {
    /// True when `id` is a job `dirs`' target or this machine knows: a
    /// file of its name in one of the target's folders (a marker for it
    /// too: asking twice is the same), this command's own, or one this
    /// machine sent there (sync may not have carried it yet).
    pub fn is_known(&mut self, dirs: &TargetDirs, id: &JobId) -> bool {
        let t = dirs.target().as_str().to_ascii_lowercase();
        if self.own.get(&t).is_some_and(|o| o.contains(id)) {
            return true;
        }
        let seen = self.seen.entry(t).or_insert_with(|| Seen::new(dirs));
        if seen.holds(id)
            || dirs
                .open(Place::Cancel)
                .ok()
                .flatten()
                .is_some_and(|d| d.exists(&id.file_name()))
        {
            return true;
        }
        let state = self.state_dir.as_deref();
        sent_to(state, dirs.target())
            .iter()
            .any(|s| s == id.as_str())
            || state.and_then(remembered).is_some_and(|(ts, last)| {
                last == id.as_str() && ts.iter().any(|t| dirs.target().same(t))
            })
    }

    /// Refuses `id`, given as `text`, when neither `dirs`' target nor this
    /// machine knows it ([`Names::is_known`]): `NOT_FOUND`, naming the
    /// nearest ids known there. `flag` is what says "write it anyway".
    pub fn check_known(&mut self, dirs: &TargetDirs, id: &JobId, flag: &str) -> Result<()> {
        if self.is_known(dirs, id) {
            return Ok(());
        }
        let t = dirs.target().as_str().to_ascii_lowercase();
        let mut known: BTreeSet<String> = sent_to(self.state_dir.as_deref(), dirs.target())
            .into_iter()
            .collect();
        if let Some(seen) = self.seen.get_mut(&t) {
            known.extend(seen.listed().keys().cloned());
        }
        let near = nearest(id.as_str(), known.iter().map(String::as_str), NEAREST);
        let near = if near.is_empty() {
            format!("no job is known on {} yet", dirs.target())
        } else {
            format!("the nearest known ids: {}", near.join(", "))
        };
        Err(Error::not_found(format!(
            "no job {id} on {}: none of its folders holds it and this machine never sent it ({near}); nothing was written",
            dirs.target()
        ))
        .hint(format!(
            "check the id (`fleet-dispatch status --target {}` lists the jobs); if it was sent from another machine and has not synced here yet, repeat with {flag}",
            dirs.target()
        )))
    }
}

/// The ids among `known` nearest to `id`, at most `n`: by edit distance,
/// then by the longer common start, then in order.
pub fn nearest<'k>(id: &str, known: impl Iterator<Item = &'k str>, n: usize) -> Vec<String> {
    let mut scored: Vec<(usize, usize, &str)> = known
        .map(|k| {
            let common = id
                .bytes()
                .zip(k.bytes())
                .take_while(|(a, b)| a == b)
                .count();
            (edit_distance(id, k), usize::MAX - common, k)
        })
        .collect();
    scored.sort();
    scored
        .into_iter()
        .take(n)
        .map(|(_, _, k)| k.to_string())
        .collect()
}

/// The Levenshtein distance between two ids (ASCII by §2).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let up = row[j + 1];
            row[j + 1] = if ca == cb {
                diag
            } else {
                1 + diag.min(up).min(row[j])
            };
            diag = up;
        }
    }
    row[b.len()]
}

/// The one job `dirs`' target runs now, by its listener's heartbeat
/// signed with `key` (docs/protocol.md §7): `NOT_FOUND` when its listener
/// is not running or runs nothing, `VALIDATION_ERROR` listing them when it
/// runs several (`listen --slots`).
pub fn running(dirs: &TargetDirs, key: &Key) -> Result<JobId> {
    let target = dirs.target();
    let Ok(beat) = crate::places::heartbeat::judged(dirs, key) else {
        return Err(Error::not_found(format!(
            "`{RUNNING}` names the job {target} runs now, but {target} has no heartbeat signed with this key: no listener runs there that this machine can trust; nothing was written"
        ))
        .hint(format!(
            "`fleet-dispatch doctor` says why; or give the job's id (`fleet-dispatch status --target {target}`)"
        )));
    };
    let alive = crate::places::heartbeat::seen_alive(
        &beat.state,
        beat.age(),
        crate::places::heartbeat::changed(dirs),
    );
    if !alive {
        return Err(Error::not_found(format!(
            "`{RUNNING}` names the job {target} runs now, but its listener is not running ({} {}); nothing was written",
            beat.state,
            beat.who()
        ))
        .hint(format!("start `fleet-dispatch listen` on {target}, or give the job's id")));
    }
    let mut ids = beat.running_jobs.clone();
    if ids.is_empty() {
        ids.extend(beat.running.clone());
    }
    the_one(target, ids, Some(&beat.state.to_string()))
}

/// The one of `ids`, the jobs `target` runs now (its listener's state
/// when known): `NOT_FOUND` when there is none, `VALIDATION_ERROR` listing
/// them when there are several (`listen --slots`). On any root.
pub fn the_one(target: &Machine, ids: Vec<String>, state: Option<&str>) -> Result<JobId> {
    let state = state
        .map(|s| format!(" (its listener is {s})"))
        .unwrap_or_default();
    match ids.as_slice() {
        [] => Err(Error::not_found(format!(
            "no job runs on {target} now{state}; nothing was written"
        ))
        .hint(format!(
            "queue the job without --interrupt, or name a queued job's id (`fleet-dispatch status --target {target}`)"
        ))),
        [one] => JobId::parse(one),
        several => Err(Error::validation(format!(
            "{} jobs run on {target} now: {}; `{RUNNING}` names one",
            several.len(),
            several.join(", ")
        ))
        .hint("give the id of the one to stop")),
    }
}

/// The job `text` names on `dirs`' target, as [`Names::resolve`] says, for
/// a command that names one job.
pub fn resolve(
    dirs: &TargetDirs,
    state_dir: Option<&Path>,
    key: &Key,
    text: &str,
) -> Result<JobId> {
    Names::new(key, state_dir.map(Path::to_path_buf)).resolve(dirs, text)
}

/// The job [`LAST`] names on `target`: the last one enqueued from this
/// machine (its state directory `state_dir`), when it went to `target`.
///
/// # Errors
///
/// `NOT_FOUND` when none was, or it went elsewhere (naming where).
pub fn last(target: &Machine, state_dir: Option<&Path>) -> Result<JobId> {
    let (targets, id) = state_dir.and_then(remembered).ok_or_else(|| {
        Error::not_found(format!(
            "no job was enqueued from this machine yet, so `{LAST}` names none"
        ))
    })?;
    if !targets.iter().any(|t| target.same(t)) {
        let went = targets.join(",");
        return Err(Error::not_found(format!(
            "the last job enqueued from this machine went to {went}, not {target}"
        ))
        .hint(format!("use --target {went}, or give the job's id")));
    }
    JobId::parse(&id)
}

#[cfg(test)]
mod tests;
