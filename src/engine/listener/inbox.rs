//! The listener's view of its inbox: which files are runnable jobs, in
//! drain order, and what it remembers between listings so that a drain of
//! n queued jobs costs n small steps rather than n listings of n files.
//!
//! It remembers four things: the accepted jobs with the (size, mtime)
//! each file had, so an unchanged file is not read and verified again; when
//! an unparseable file was first seen unchanged, so it is
//! rejected only once it has settled (docs/protocol.md §7: it may still be arriving);
//! an unparseable inbox file's stamp and refusal, so it is not read again
//! while it settles unchanged; and which names it already spoke about, so
//! a stuck file is said once.
//! Refusals are returned, not carried out: moving files and counting is
//! the listener's.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime};

use crate::base::error::Result;
use crate::base::names::JobId;
use crate::engine::publisher::Archiving;
use crate::platform::{Entry, EntryKind};
use crate::protocol::accept::{self, Rejection, Verdict};
use crate::protocol::doc::{self, Job};
use crate::protocol::judge;
use crate::store::fsops::Dir;
use crate::trust::{Key, Unchecked};

/// A job that passed acceptance (steps 1 to 8) but, maybe, its Ed25519
/// curve check, made at its turn ([`Candidate::check`]) or ahead of it by
/// [`Inbox::check_ahead`]; its file is `inbox/<id>.json` (the name matches
/// the body's id, §6.1 step 5).
#[derive(Clone)]
pub(super) struct Candidate {
    pub job: Arc<Job>,
    unchecked: Option<Arc<Unchecked>>,
}

impl Candidate {
    /// The job's signature verdict: `Ok` once nothing is left to check.
    pub fn check(&self) -> Result<(), Rejection> {
        self.unchecked.as_deref().map_or(Ok(()), accept::checked)
    }
}

/// A file's size and mtime: the listener's sign that it did not change.
use crate::protocol::settle::{Settling, Stamp};

/// What one listing found besides the runnable jobs.
#[derive(Default)]
pub(super) struct Listing {
    /// Files to refuse: name and why.
    pub refused: Vec<(String, Rejection)>,
    /// Lines to say (each said once per name).
    pub notes: Vec<String>,
}

/// The accepted jobs in drain order, and what the listener remembers
/// between listings.
pub(super) struct Inbox {
    /// The accepted jobs in drain order.
    pub jobs: VecDeque<Candidate>,
    inbox_mtime: Option<SystemTime>,
    listed: Option<Instant>,
    /// Accepted job files by name, with the stamp they had.
    parsed: HashMap<String, (Stamp, Candidate)>,
    /// Unparseable files by name: the stamp
    /// they had when first seen so, and when.
    unsettled: HashMap<String, Settling>,
    /// Inbox files that did not parse, with the stamp they had when read
    /// and the refusal they get once settled: unchanged, they are not
    /// read again while they settle (20,000 of them read at each pass
    /// cost a sixth of a core).
    malformed: HashMap<String, (Stamp, Rejection)>,
    /// Names already spoken about.
    noted: HashSet<String>,
    settle: Duration,
    /// The thread checking signatures ahead of the drain, while it runs.
    ahead: Option<std::thread::JoinHandle<()>>,
    /// The roster's generation the parsed jobs were accepted under
    /// ([`Key::generation`]): another roster judges them all again, so a
    /// revoked machine's queued jobs are refused before they start.
    roster: u64,
}

impl Inbox {
    /// An inbox never listed, whose unparseable files settle after `settle`.
    pub fn new(settle: Duration) -> Inbox {
        Inbox {
            jobs: VecDeque::new(),
            inbox_mtime: None,
            listed: None,
            parsed: HashMap::new(),
            unsettled: HashMap::new(),
            malformed: HashMap::new(),
            noted: HashSet::new(),
            settle,
            ahead: None,
            roster: 0,
        }
    }

    /// True when the listing must be redone: never listed, the folder
    /// changed (other than by our own archiving, `ours`: a change seen
    /// while the publisher archives is judged once it is done), or a poll
    /// interval passed (coarse mtimes on network filesystems can hide a
    /// change, and so can an arrival during our archiving).
    pub fn stale(&self, inbox: &Dir, poll: Duration, ours: Archiving) -> bool {
        let now = inbox.modified();
        // While the publisher archives, the folder changes under our eyes;
        // once it is done, its mtime tells its change from another's.
        let changed = match ours {
            Archiving::Now => false,
            Archiving::Done(ours) => now.is_none() || now != ours,
        };
        self.listed.is_none_or(|t| t.elapsed() >= poll) || (now != self.inbox_mtime && changed)
    }

    /// True when another roster was taken since the jobs were judged.
    pub fn roster_changed(&self, key: &Key) -> bool {
        key.generation() != self.roster
    }

    /// Takes `jobs` (in drain order) as the queue listed just now.
    pub fn reset(&mut self, jobs: Vec<Candidate>, inbox: &Dir) {
        self.inbox_mtime = inbox.modified();
        self.jobs = jobs.into();
        self.listed = Some(Instant::now());
        self.check_ahead();
    }

    /// Starts a thread that makes the curve checks left in the queue, in
    /// drain order, while the drain runs: a first listing of a thousand
    /// new jobs then starts the first after one check, not a thousand
    /// (each is made once, by this thread or at the job's turn, whichever
    /// comes first). A thread that cannot start leaves them to their turn.
    fn check_ahead(&mut self) {
        if self.ahead.as_ref().is_some_and(|t| !t.is_finished()) {
            return;
        }
        let left: Vec<Weak<Unchecked>> = self
            .jobs
            .iter()
            .filter_map(|c| c.unchecked.as_ref())
            .filter(|u| !u.is_done())
            .map(Arc::downgrade)
            .collect();
        if left.len() < CHECK_AHEAD_FROM {
            return;
        }
        // Weak: a job refused or forgotten meanwhile is not checked.
        self.ahead = std::thread::Builder::new()
            .name("check-ahead".into())
            .spawn(move || {
                for u in left.iter().filter_map(Weak::upgrade) {
                    let _ = u.verdict();
                }
            })
            .ok();
    }

    /// Records the folder's state after our own change to it (archiving).
    pub fn note_own_change(&mut self, inbox: &Dir) {
        self.inbox_mtime = inbox.modified();
    }

    /// Forgets the parsed copy of `name` (its job ended or was refused).
    pub fn forget(&mut self, name: &str) {
        self.parsed.remove(name);
    }

    /// True the first time `name` is spoken about (until it leaves).
    pub fn first_note(&mut self, name: &str) -> bool {
        self.noted.insert(name.to_string())
    }

    /// Lists the inbox and judges each entry: returns the runnable jobs
    /// (unsorted) and what to refuse. Names that are not `<id>.json` are
    /// never read, moved or deleted.
    /// The listing goes through `inbox` held open (the listener opened the
    /// layout for this pass, making missing folders and moving aside links),
    /// so every entry judged is one of that folder's.
    pub fn scan(
        &mut self,
        inbox: &Dir,
        target: &str,
        key: &Key,
    ) -> Result<(Vec<Candidate>, Listing)> {
        let generation = key.generation();
        if generation != self.roster {
            self.parsed.clear();
            self.roster = generation;
        }
        let mut found = Listing::default();
        let mut out = Vec::new();
        let mut present = HashSet::new();
        // Files accepted before and unchanged since come from memory; the
        // others are read and judged afterwards, by several threads when
        // there are many (a burst of new jobs, or a listener's first pass).
        let mut unread = Vec::new();
        for name in inbox.list()? {
            if JobId::from_file_name(&name).is_none() {
                continue;
            }
            present.insert(name.clone());
            let meta = inbox.entry(&name);
            let stamp = stamp_of(&meta);
            match (stamp, self.parsed.get(&name)) {
                (Some(stamp), Some((seen, c))) if *seen == stamp => {
                    self.unsettled.remove(&name);
                    out.push(c.clone());
                }
                (Some(stamp), None) if self.malformed.get(&name).is_some_and(|m| m.0 == stamp) => {
                    if self.settled_at(&name, stamp) {
                        let (_, r) = self.malformed.remove(&name).expect("just seen");
                        self.unsettled.remove(&name);
                        found.refused.push((name, r));
                    }
                }
                _ => unread.push((name, meta)),
            }
        }
        for (name, stamp, judged) in judge_all(unread, inbox, target, key) {
            match judged {
                Ok(c) => {
                    if let Some(stamp) = stamp {
                        self.parsed.insert(name.clone(), (stamp, c.clone()));
                    }
                    self.unsettled.remove(&name);
                    out.push(c);
                }
                Err(r) if matches!(r.verdict, Verdict::Missing) => {}
                Err(r) if matches!(r.verdict, Verdict::Unreadable) => {
                    if self.first_note(&name) {
                        found
                            .notes
                            .push(format!("left {name} in place: {}", r.message));
                    }
                }
                Err(r)
                    if matches!(r.verdict, Verdict::Malformed)
                        && let Some(stamp) = stamp
                        && !self.settled_at(&name, stamp) =>
                {
                    self.malformed.insert(name, (stamp, r));
                }
                Err(r)
                    if matches!(r.verdict, Verdict::Malformed)
                        && stamp.is_none()
                        && !self.settled(&name, inbox, &name) => {}
                Err(r) => {
                    self.unsettled.remove(&name);
                    self.malformed.remove(&name);
                    found.refused.push((name, r));
                }
            }
        }
        self.unsettled.retain(|n, _| present.contains(n));
        self.parsed.retain(|n, _| present.contains(n));
        self.malformed.retain(|n, _| present.contains(n));
        self.noted.retain(|n| present.contains(n));
        Ok((out, found))
    }

    /// True when a file that does not parse (remembered as `name`, the
    /// entry `file` of `dir`) counts as settled ([`crate::protocol::settle`]).
    fn settled(&mut self, name: &str, dir: &Dir, file: &str) -> bool {
        let Ok(meta) = dir.entry(file) else {
            return false;
        };
        self.settled_at(name, (meta.len, meta.modified))
    }

    /// [`Self::settled`] for a file whose entry had `stamp` just now.
    fn settled_at(&mut self, name: &str, stamp: Stamp) -> bool {
        let now = Instant::now();
        self.unsettled
            .entry(name.to_string())
            .or_insert_with(|| Settling::new(stamp, now))
            .observe(stamp, now, SystemTime::now(), self.settle)
    }
}

/// The (size, mtime) of a regular file's entry; None for anything else.
fn stamp_of(meta: &std::io::Result<Entry>) -> Option<Stamp> {
    meta.as_ref()
        .ok()
        .filter(|m| m.kind == EntryKind::File)
        .map(|m| (m.len, m.modified))
}

/// From this many curve checks left in the queue, a thread makes them
/// ahead of the drain ([`Inbox::check_ahead`]); fewer are made at each
/// job's turn, at a thread's price of a few checks.
const CHECK_AHEAD_FROM: usize = 8;

/// Below this many files to read, one thread reads them all: a thread
/// costs about as much to start as a few dozen files take to read.
const READ_APART_FROM: usize = 64;

/// What [`judge_all`] says of one file: its name, its stamp, its verdict.
type Judged = (String, Option<Stamp>, Result<Candidate, Rejection>);

/// Steps 1 to 8 of acceptance for each of `unread` (entries of `inbox`,
/// with what `lstat` said of them), in their order. Many are shared out
/// among up to four threads: each file is opened, read, parsed and its
/// signature checked, the same work whichever thread does it.
fn judge_all(
    unread: Vec<(String, std::io::Result<Entry>)>,
    inbox: &Dir,
    target: &str,
    key: &Key,
) -> Vec<Judged> {
    let judge = |entries: Vec<(String, std::io::Result<Entry>)>| -> Vec<Judged> {
        entries
            .into_iter()
            .map(|(name, meta)| {
                let stamp = stamp_of(&meta);
                let read = inbox.read_limited_with(&name, meta, doc::job::MAX_BYTES);
                let judged =
                    judge::job_read_later(&name, read, target, key).and_then(|(job, unchecked)| {
                        match accept::runnable(job) {
                            Ok(job) => Ok(Candidate {
                                job: Arc::new(job),
                                unchecked: unchecked.map(Arc::new),
                            }),
                            // The signature's step comes first.
                            Err(r) => Err(unchecked
                                .as_ref()
                                .map_or(Ok(()), accept::checked)
                                .err()
                                .unwrap_or(r)),
                        }
                    });
                (name, stamp, judged)
            })
            .collect()
    };
    if unread.len() < 2 * READ_APART_FROM {
        return judge(unread);
    }
    // Asked only now: the answer reads the process's CPU quota files.
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(4)
        .min(unread.len() / READ_APART_FROM);
    if threads < 2 {
        return judge(unread);
    }
    let per = unread.len().div_ceil(threads);
    let mut parts = Vec::with_capacity(threads);
    let mut rest = unread;
    while rest.len() > per {
        let tail = rest.split_off(per);
        parts.push(rest);
        rest = tail;
    }
    parts.push(rest);
    // Each part waits in a slot for the thread that takes it; a part whose
    // thread cannot be started (a thread limit) is judged here instead.
    let slots: Vec<_> = parts.into_iter().map(|p| Mutex::new(Some(p))).collect();
    let take = |slot: &Mutex<Option<Vec<_>>>| {
        slot.lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .unwrap_or_default()
    };
    std::thread::scope(|s| {
        let others: Vec<_> = slots[1..]
            .iter()
            .filter_map(|slot| {
                std::thread::Builder::new()
                    .spawn_scoped(s, || judge(take(slot)))
                    .ok()
            })
            .collect();
        let mut all = judge(take(&slots[0]));
        for h in others {
            // A panic there is one here, as if one thread had judged all.
            all.extend(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        }
        for slot in &slots[1..] {
            all.extend(judge(take(slot)));
        }
        all
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::doc::Spec;

    #[cfg(unix)]
    #[test]
    fn a_change_seen_while_the_publisher_archives_waits_for_its_end() {
        let t = tempfile::tempdir().unwrap();
        let dir = Dir::open_trusted(t.path()).unwrap();
        let mut inbox = Inbox::new(Duration::from_secs(1));
        inbox.reset(Vec::new(), &dir);
        let hour = Duration::from_secs(3600);
        assert!(!inbox.stale(&dir, hour, Archiving::Done(None)));
        // The folder changes (its mtime, set apart from the clock's tick).
        let changed = SystemTime::now() + Duration::from_secs(60);
        std::fs::File::open(t.path())
            .unwrap()
            .set_modified(changed)
            .unwrap();
        assert!(!inbox.stale(&dir, hour, Archiving::Now), "judged mid-batch");
        assert!(
            !inbox.stale(&dir, hour, Archiving::Done(Some(changed))),
            "the publisher's own change"
        );
        assert!(
            inbox.stale(&dir, hour, Archiving::Done(None)),
            "a change that is not the publisher's"
        );
        let earlier = changed - Duration::from_secs(30);
        assert!(inbox.stale(&dir, hour, Archiving::Done(Some(earlier))));
    }

    /// A first listing of many new files shares their reading out among
    /// threads: every file must get the verdict it would get alone.
    #[test]
    fn a_listing_of_many_new_files_judges_each_as_alone() {
        let t = tempfile::tempdir().unwrap();
        let dir = Dir::open_trusted(t.path()).unwrap();
        let key = Key::from_bytes(&[7u8; 32]).unwrap();
        let created = crate::base::clock::now();
        let mut runnable = Vec::new();
        let mut forged = Vec::new();
        let mut elsewhere = Vec::new();
        for i in 0..300 {
            let id = format!("job-{i:03}");
            let target = if i % 25 == 7 { "OTHER" } else { "PC" };
            let job = Job::sign(
                &key,
                JobId::parse(&id).unwrap(),
                target,
                "PC",
                created,
                Spec::of(vec!["true".into(), i.to_string()]),
            );
            let mut bytes = job.to_file_bytes();
            if i % 10 == 3 {
                // Another job's signature: it does not verify for this one.
                let text = String::from_utf8(bytes).unwrap();
                bytes = text
                    .replace(&job.sig, &"0".repeat(job.sig.len()))
                    .into_bytes();
                forged.push(format!("{id}.json"));
            } else if target == "OTHER" {
                elsewhere.push(format!("{id}.json"));
            } else {
                runnable.push(id.clone());
            }
            std::fs::write(t.path().join(format!("{id}.json")), bytes).unwrap();
        }
        std::fs::write(t.path().join("notes.txt"), "not a job").unwrap();
        let mut inbox = Inbox::new(Duration::from_secs(3600));
        let (jobs, found) = inbox.scan(&dir, "PC", &key).unwrap();
        let mut ids: Vec<String> = jobs.iter().map(|c| c.job.id.to_string()).collect();
        ids.sort();
        assert_eq!(ids, runnable);
        let verdict = |names: &[String], v: Verdict| {
            names.iter().all(|n| {
                found
                    .refused
                    .iter()
                    .any(|(name, r)| name == n && r.verdict == v)
            })
        };
        assert!(verdict(&forged, Verdict::BadSignature));
        assert!(verdict(&elsewhere, Verdict::WrongTarget));
        assert_eq!(found.refused.len(), forged.len() + elsewhere.len());
        // Listed again unchanged, the accepted files come from memory alike.
        let (again, _) = inbox.scan(&dir, "PC", &key).unwrap();
        assert_eq!(again.len(), runnable.len());
    }
}
