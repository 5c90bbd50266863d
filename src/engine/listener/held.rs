//! What the listener remembers of its held jobs (docs/protocol.md §7.13),
//! so that a pass over a queue of jobs waiting for others costs what
//! changed, not every dependency of every held job again.
//!
//! A held job's verdict is kept with the jobs it still waits for, indexed
//! by those. It is judged afresh only when one of them may have ended: a
//! result of ours recorded or a file of ours refused under its id (told
//! here at once), or its id newly seen in the `results/` or
//! `archive/rejected/` of its target. Those two folders are listed when
//! their modification time moved, at most once a poll interval, and in any
//! case every [`NET`] (a network share's coarse times can hide a change).
//! A job whose awaited id has a file there that did not count (a forged
//! result, a refusal while it is queued again) is judged again at each
//! listing, since the file may change without its name doing so.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant, SystemTime};

use crate::base::names::{JobId, Machine};
use crate::protocol::doc::Job;
use crate::protocol::doc::job::After;
use crate::store::fsops::Dir;

/// The longest a change to the awaited folders goes unlisted, whatever
/// their modification times say.
pub(super) const NET: Duration = Duration::from_secs(30);

/// A target's name as folders compare it (without case).
type TargetKey = String;

/// One held job's last verdict.
struct Memo {
    /// The signature of the job judged (another file under the id is
    /// another job).
    sig: String,
    /// The jobs it still waited for.
    waiting: Vec<After>,
}

/// The modification times of a target's `results/` and
/// `archive/rejected/`.
pub(super) type Stamp = (Option<SystemTime>, Option<SystemTime>);

/// When a target's awaited folders were last listed, and their times then.
struct Looked {
    stamp: Stamp,
    at: Instant,
}

/// The held jobs' verdicts, what they wait for, and what was seen of it.
#[derive(Default)]
pub(super) struct Held {
    memo: HashMap<JobId, Memo>,
    /// Awaited job → the held jobs waiting for it.
    by_dep: HashMap<(TargetKey, JobId), HashSet<JobId>>,
    /// Each target awaited (as a held job names it) and how many of
    /// `by_dep`'s jobs are on it: asked at every walk, so kept as it
    /// changes rather than gathered from every held job's list.
    targets: HashMap<TargetKey, (Machine, usize)>,
    /// Held jobs to judge afresh at their next turn.
    dirty: HashSet<JobId>,
    looked: HashMap<TargetKey, Looked>,
}

fn target_key(a: &After) -> TargetKey {
    a.target.as_str().to_ascii_lowercase()
}

impl Held {
    /// True when `job` was held and nothing it waits for may have ended
    /// since: its verdict stands without a look at the folders.
    pub fn still_held(&self, job: &Job) -> bool {
        !self.dirty.contains(&job.id) && self.memo.get(&job.id).is_some_and(|m| m.sig == job.sig)
    }

    /// Records that `job` is held on `waiting`; true the first time it is
    /// (what to say once). `volatile`: the verdict leaned on something
    /// that may change unseen (our own result being placed), so it is
    /// judged again at its next turn.
    pub fn record(&mut self, job: &Job, waiting: &[After], volatile: bool) -> bool {
        let first = self.forget_memo(&job.id).is_none();
        for a in waiting {
            let t = target_key(a);
            let waiters = self
                .by_dep
                .entry((t.clone(), a.job_id.clone()))
                .or_default();
            if waiters.is_empty() {
                self.targets.entry(t).or_insert((a.target.clone(), 0)).1 += 1;
            }
            waiters.insert(job.id.clone());
        }
        self.memo.insert(
            job.id.clone(),
            Memo {
                sig: job.sig.clone(),
                waiting: waiting.to_vec(),
            },
        );
        if volatile {
            self.dirty.insert(job.id.clone());
        } else {
            self.dirty.remove(&job.id);
        }
        first
    }

    /// Forgets `id` (it ran, ended or left the queue).
    pub fn remove(&mut self, id: &JobId) {
        self.forget_memo(id);
        self.dirty.remove(id);
    }

    /// Keeps only the held jobs `keep` says are still queued.
    pub fn retain(&mut self, keep: impl Fn(&JobId) -> bool) {
        let gone: Vec<JobId> = self.memo.keys().filter(|id| !keep(id)).cloned().collect();
        for id in gone {
            self.remove(&id);
        }
    }

    fn forget_memo(&mut self, id: &JobId) -> Option<Memo> {
        let memo = self.memo.remove(id)?;
        for a in &memo.waiting {
            let key = (target_key(a), a.job_id.clone());
            if let Some(jobs) = self.by_dep.get_mut(&key) {
                jobs.remove(id);
                if jobs.is_empty() {
                    self.by_dep.remove(&key);
                    if let Some(n) = self.targets.get_mut(&key.0) {
                        n.1 -= 1;
                        if n.1 == 0 {
                            self.targets.remove(&key.0);
                        }
                    }
                }
            }
        }
        Some(memo)
    }

    /// Job `id` of `target` may have ended (a result recorded, a file
    /// refused): the jobs waiting for it are judged afresh.
    pub fn ended(&mut self, target: &str, id: &JobId) {
        let key = (target.to_ascii_lowercase(), id.clone());
        if let Some(jobs) = self.by_dep.get(&key) {
            self.dirty.extend(jobs.iter().cloned());
        }
    }

    /// The targets held jobs wait on (their names as a held job gives them).
    pub fn targets(&self) -> Vec<Machine> {
        self.targets.values().map(|(m, _)| m.clone()).collect()
    }

    /// True when `target`'s awaited folders, now of these modification
    /// times, are to be listed again (`poll`: the least time between two
    /// listings).
    pub fn due(&self, target: &str, stamp: Stamp, poll: Duration) -> bool {
        match self.looked.get(&target.to_ascii_lowercase()) {
            None => true,
            Some(l) => {
                let since = l.at.elapsed();
                // Windows' folder times are not trusted to move with every
                // entry (as for the markers' listing, `store/listing.rs`): there
                // a listing is made at each poll.
                let moved = stamp != l.stamp || cfg!(windows);
                since >= NET || (since >= poll && moved)
            }
        }
    }

    /// Takes the listing of `target`'s `results/` and `archive/rejected/`
    /// (`dirs`, `None` when missing) made now, when their times were
    /// `stamp`: each held job waiting for an id newly there, or for one
    /// whose file there did not count before, is judged afresh.
    pub fn listed(&mut self, target: &str, stamp: Stamp, dirs: [Option<&Dir>; 2]) {
        let t = target.to_ascii_lowercase();
        for dir in dirs.into_iter().flatten() {
            for name in dir.list().unwrap_or_default() {
                // `<id>.json`, and in `archive/rejected/` its numbered
                // copies and reasons (`<id>.json.1`, `….reason.json`).
                let Some(stem) = name.split(".json").next() else {
                    continue;
                };
                let Ok(id) = JobId::parse(stem) else {
                    continue;
                };
                // Whether new or there before: a held job waits for it, so
                // a file there did not count when it was judged.
                if let Some(jobs) = self.by_dep.get(&(t.clone(), id)) {
                    self.dirty.extend(jobs.iter().cloned());
                }
            }
        }
        self.looked.insert(
            t,
            Looked {
                stamp,
                at: Instant::now(),
            },
        );
    }

    /// Forgets the listings of targets no held job waits on any more.
    pub fn keep_looked(&mut self) {
        let targets = &self.targets;
        self.looked.retain(|t, _| targets.contains_key(t));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::doc::Spec;
    use crate::protocol::doc::job::Header;
    use crate::trust::Key;

    fn job(id: &str, after: &[&str]) -> Job {
        let key = Key::from_bytes(&[7u8; 32]).unwrap();
        let after = after
            .iter()
            .map(|a| After {
                target: Machine::parse("PC", "t").unwrap(),
                job_id: JobId::parse(a).unwrap(),
            })
            .collect();
        Job::sign(
            &key,
            JobId::parse(id).unwrap(),
            "PC",
            "PC",
            crate::base::clock::now(),
            Spec {
                header: Header {
                    after,
                    ..Header::default()
                },
                ..Spec::of(vec!["true".into()])
            },
        )
    }

    #[test]
    fn a_verdict_stands_until_what_it_waits_for_may_have_ended() {
        let mut h = Held::default();
        let a = job("a", &["x", "y"]);
        let b = job("b", &["z"]);
        assert!(!h.still_held(&a), "never judged");
        assert!(h.record(&a, &a.header().after, false));
        assert!(h.record(&b, &b.header().after, false));
        assert!(h.still_held(&a) && h.still_held(&b));
        assert!(!h.record(&a, &a.header().after, false), "said once");
        // Another job ends: nothing to judge.
        h.ended("PC", &JobId::parse("other").unwrap());
        assert!(h.still_held(&a) && h.still_held(&b));
        // One it waits for ends (names compared without case).
        h.ended("pc", &JobId::parse("y").unwrap());
        assert!(!h.still_held(&a) && h.still_held(&b));
        // Judged again: held on x alone, and y no longer wakes it.
        h.record(&a, &a.header().after[..1], false);
        h.ended("PC", &JobId::parse("y").unwrap());
        assert!(h.still_held(&a));
        // A verdict leaning on something unseen is judged at its next turn.
        h.record(&a, &a.header().after[..1], true);
        assert!(!h.still_held(&a));
        h.remove(&a.id);
        h.ended("PC", &JobId::parse("x").unwrap());
        assert!(!h.still_held(&a), "forgotten");
        // Another file under b's id is another job.
        let b2 = job("b", &["w"]);
        assert!(!h.still_held(&b2));
    }

    #[test]
    fn a_listing_wakes_the_jobs_waiting_for_what_it_shows() {
        let t = tempfile::tempdir().unwrap();
        let dir = Dir::open_trusted(t.path()).unwrap();
        let mut h = Held::default();
        let a = job("a", &["x"]);
        let b = job("b", &["y"]);
        h.record(&a, &a.header().after, false);
        h.record(&b, &b.header().after, false);
        let stamp = (dir.modified(), None);
        let poll = Duration::from_secs(2);
        assert!(h.due("PC", stamp, poll), "never listed");
        h.listed("PC", stamp, [Some(&dir), None]);
        assert!(h.still_held(&a) && h.still_held(&b));
        assert!(!h.due("PC", stamp, poll), "listed just now");
        assert!(
            !h.due("PC", (None, None), poll),
            "a change, but within the poll"
        );
        assert!(
            h.due("PC", (None, None), Duration::ZERO),
            "a change after it"
        );
        std::fs::write(t.path().join("y.json"), "{}").unwrap();
        std::fs::write(t.path().join("x.json.reason.json"), "{}").unwrap();
        std::fs::write(t.path().join("unrelated.json"), "{}").unwrap();
        h.listed("PC", stamp, [Some(&dir), None]);
        assert!(!h.still_held(&a) && !h.still_held(&b));
        // Judged again and still held (the files there do not count):
        // the next listing wakes them again, as such a file may change.
        h.record(&a, &a.header().after, false);
        h.record(&b, &b.header().after, false);
        h.listed("PC", stamp, [Some(&dir), None]);
        assert!(!h.still_held(&a) && !h.still_held(&b));
        h.record(&a, &a.header().after, false);
        h.remove(&b.id);
        h.keep_looked();
        assert_eq!(h.targets().len(), 1);
        h.retain(|_| false);
        h.keep_looked();
        assert!(h.targets().is_empty() && h.looked.is_empty());
        assert!(h.by_dep.is_empty());
    }
}
