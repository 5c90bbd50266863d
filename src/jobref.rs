//! How a person names a job on the command line: its full id, `last` (the
//! last job this machine enqueued, kept in the state directory), or any
//! prefix of an id that only one verified job on the target has. One
//! place, for every command that takes `--job-id`, `--interrupt` or
//! `--after`, with one listing of a target per command.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::fsops;
use crate::key::Key;
use crate::layout::{Place, TargetDirs};
use crate::names::{JobId, Machine};
use crate::replay;

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

/// One target's folders as a command names its jobs: opened once, and
/// listed once, the first time a prefix needs it.
struct Seen {
    dirs: TargetDirs,
    open: Vec<(Place, crate::fsops::Dir)>,
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
                Place::Results => replay::verified_result(dir, id, target, key).is_some(),
                // `running/` holds the listener's unsigned note; the job
                // itself is in `inbox/` meanwhile.
                Place::Running => false,
                _ => replay::genuine_job(dir, id, target, key),
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
            return last(dirs, self.state_dir.as_deref());
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

    fn key() -> Key {
        Key::from_bytes(&[7u8; 32]).unwrap()
    }

    /// A job signed with [`key`] for PC, written as `dir/<id>.json`.
    fn signed(dir: &std::path::Path, id: &str) {
        signed_for(dir, id, "PC");
    }

    fn signed_for(dir: &std::path::Path, id: &str, target: &str) {
        let job = crate::doc::Job::sign(
            &key(),
            JobId::parse(id).unwrap(),
            target,
            "PC",
            crate::clock::now(),
            crate::doc::Spec {
                argv: vec!["true".into()],
                ..crate::doc::Spec::default()
            },
        );
        std::fs::write(dir.join(format!("{id}.json")), job.to_file_bytes()).unwrap();
    }

    #[test]
    fn a_unique_prefix_names_its_verified_job_and_an_ambiguous_one_lists_them() {
        let (_d, dirs) = world();
        let key = key();
        signed(&dirs.inbox(), "20261201-0900-aaaa1111");
        signed(&dirs.rejected(), "20261201-0900-aaaa2222");
        signed(&dirs.done(), "20261201-0900-bbbb3333");
        let got = resolve(&dirs, None, &key, "20261201-0900-b").unwrap();
        assert_eq!(got.as_str(), "20261201-0900-bbbb3333");
        let e = resolve(&dirs, None, &key, "20261201-0900-aaaa").unwrap_err();
        assert_eq!(e.code, crate::error::Code::Validation);
        assert!(
            e.message.contains("aaaa1111") && e.message.contains("aaaa2222"),
            "{}",
            e.message
        );
        // A full id nothing knows yet is taken as it is.
        assert_eq!(
            resolve(&dirs, None, &key, "not-synced-yet")
                .unwrap()
                .as_str(),
            "not-synced-yet"
        );
    }

    #[test]
    fn a_file_that_does_not_verify_takes_no_part_and_an_exact_id_wins() {
        let (_d, dirs) = world();
        let key = key();
        // Planted: not JSON, unsigned, signed for another target.
        std::fs::write(dirs.inbox().join("nightly-x.json"), b"junk").unwrap();
        std::fs::write(dirs.results().join("nightly-y.json"), b"{}").unwrap();
        // Signed, but for another target, or under another id's name.
        signed_for(&dirs.inbox(), "nightly-v", "LAPTOP");
        signed(&dirs.done(), "nightly-z");
        let moved = dirs.inbox().join("nightly-w.json");
        std::fs::rename(dirs.done().join("nightly-z.json"), moved).unwrap();
        let got = resolve(&dirs, None, &key, "nightly").unwrap();
        assert_eq!(got.as_str(), "nightly", "taken as it is");
        // A verified job it is the start of is named by it ...
        signed(&dirs.done(), "nightly-2");
        assert_eq!(
            resolve(&dirs, None, &key, "nightly").unwrap().as_str(),
            "nightly-2"
        );
        // ... until a job of exactly that id is known.
        signed(&dirs.inbox(), "nightly");
        assert_eq!(
            resolve(&dirs, None, &key, "nightly").unwrap().as_str(),
            "nightly"
        );
        // The command's own job is known and wins as exactly.
        let mut names = Names::new(&key, None);
        names.add_own(dirs.target(), &JobId::parse("night").unwrap());
        assert_eq!(names.resolve(&dirs, "night").unwrap().as_str(), "night");
        assert_eq!(
            names.resolve(&dirs, "nig").unwrap_err().code,
            crate::error::Code::Validation
        );
    }

    #[test]
    fn last_is_the_last_job_enqueued_to_that_target() {
        let (d, dirs) = world();
        let state = d.path().join("state");
        let key = key();
        assert_eq!(
            resolve(&dirs, Some(&state), &key, LAST).unwrap_err().code,
            crate::error::Code::NotFound
        );
        remember(&state, &dirs, &JobId::parse("j-1").unwrap()).unwrap();
        assert_eq!(
            resolve(&dirs, Some(&state), &key, LAST).unwrap().as_str(),
            "j-1"
        );
        let other = TargetDirs::new(d.path(), &Machine::parse("LAPTOP", "t").unwrap());
        let e = resolve(&other, Some(&state), &key, LAST).unwrap_err();
        assert!(e.message.contains("went to PC"), "{}", e.message);
        // A fan-out's copies: `last` names the id on each of its targets,
        // until another id is enqueued.
        remember(&state, &other, &JobId::parse("j-1").unwrap()).unwrap();
        assert_eq!(
            resolve(&dirs, Some(&state), &key, LAST).unwrap().as_str(),
            "j-1"
        );
        assert_eq!(
            resolve(&other, Some(&state), &key, LAST).unwrap().as_str(),
            "j-1"
        );
        remember(&state, &other, &JobId::parse("j-2").unwrap()).unwrap();
        let e = resolve(&dirs, Some(&state), &key, LAST).unwrap_err();
        assert!(
            e.message.contains("went to LAPTOP, not PC"),
            "{}",
            e.message
        );
    }
}
