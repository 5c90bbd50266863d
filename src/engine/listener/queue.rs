//! The queue (docs/protocol.md §7.2, §7.3): the inbox's runnable jobs in
//! drain order ([`Inbox`]), the jobs held on others ([`Held`], with their
//! dependency check, §7.13) and those deferred; the walk that gives each
//! job in drain order the per-job steps, so the first that can start or
//! end does; and refusals (§6.6): a refused inbox file is counted, said
//! once, and moved to `archive/rejected/` with its reason; one that cannot
//! be moved stays and is retried, and never takes the listener down.
//!
//! The dependency check reads what became of each job a queued job's
//! signed spec waits for (`after`), found by [`crate::places::observe::dependency`]
//! and judged by [`crate::protocol::dependency`]. The one thing only the listener
//! knows is its own results not yet placed in `results/`: one recorded but
//! not handed over counts at once, one being placed counts once it is.
//! Another target's folders are only read, never changed: a result there
//! that fails verification is that target's listener's to move aside, and
//! here it simply counts as absent.

use std::collections::HashSet;
use std::time::Duration;

use super::held::Held;
use super::inbox::{Candidate, Inbox, Listing};
use super::pickup::Pickup;
use super::recorder::{Counters, Recorder};
use super::site::Site;
use crate::base::clock;
use crate::base::error::Result;
use crate::base::names::JobId;
use crate::engine::publisher::Archiving;
use crate::local::governor::Tier;
use crate::places::observe;
use crate::places::rejected::{self, Kind};
use crate::protocol::accept::{self, Rejection, Verdict};
use crate::protocol::dependency::{self, Found, Verdict as Dependency};
use crate::protocol::doc::detail::DependencySeen;
use crate::protocol::doc::job::After;
use crate::protocol::doc::{Job, Marker};
use crate::store::fsops::Dir;
use crate::store::layout::{Folders, Place};

/// What the walk over the queue found to do.
pub(super) enum Step {
    /// Nothing can start or end now.
    Nothing,
    /// End this job unstarted: a valid marker cancels it.
    Cancel(Candidate, Marker),
    /// End this job unstarted: a job it waited for did not end as required.
    Fail(Candidate, DependencySeen),
    /// Run this job in the listener's own thread (one slot).
    Run(Candidate),
    /// Start these jobs, each in a slot of its own.
    Start(Vec<Candidate>),
}

/// The queued jobs, and what is remembered of them between passes.
pub(super) struct Queue {
    inbox: Inbox,
    /// Jobs already reported as deferred by the governor.
    deferred: HashSet<JobId>,
    /// The held jobs' verdicts, kept until what they wait for may have
    /// ended ([`Held`]).
    held: Held,
    /// A job was held on a result of ours still being placed (with
    /// `--once`, one more pass after the placing lets it start).
    held_on_own: bool,
    /// The verdict being made leaned on a result of ours being placed.
    leaned_on_own: bool,
}

impl Queue {
    /// A queue never listed, whose unparseable files settle after `settle`.
    pub fn new(settle: Duration) -> Queue {
        Queue {
            inbox: Inbox::new(settle),
            deferred: HashSet::new(),
            held: Held::default(),
            held_on_own: false,
            leaned_on_own: false,
        }
    }

    /// True when the inbox must be listed again ([`Inbox::stale`]).
    pub fn stale(&self, f: &Folders, poll: Duration, ours: Archiving) -> bool {
        self.inbox.stale(f.inbox(), poll, ours)
    }

    /// True when another roster was taken since the queue was judged.
    pub fn roster_changed(&self, site: &Site) -> bool {
        self.inbox.roster_changed(&site.key)
    }

    /// Lists the inbox and judges each entry ([`Inbox::scan`]).
    pub fn scan(&mut self, site: &Site, f: &Folders) -> Result<(Vec<Candidate>, Listing)> {
        self.inbox.scan(f.inbox(), site.target(), &site.key)
    }

    /// Takes `jobs` as the queue listed just now, in drain order, but for
    /// those `busy` says are not queued (finished and not yet archived, or
    /// running in a slot: the ledger's start line would refuse them as
    /// replays).
    pub fn reset(&mut self, f: &Folders, mut jobs: Vec<Candidate>, busy: impl Fn(&JobId) -> bool) {
        jobs.retain(|c| !busy(&c.job.id));
        jobs.sort_by(|a, b| a.job.drain_order(&b.job));
        let queued: HashSet<&JobId> = jobs.iter().map(|c| &c.job.id).collect();
        self.held.retain(|id| queued.contains(id));
        self.inbox.reset(jobs, f.inbox());
    }

    /// Records the inbox's state after our own change to it (archiving).
    pub fn note_own_change(&mut self, f: &Folders) {
        self.inbox.note_own_change(f.inbox());
    }

    /// Takes (once) that a job was held on a result of ours still being
    /// placed.
    pub fn take_held_on_own(&mut self) -> bool {
        std::mem::take(&mut self.held_on_own)
    }

    /// Notes that `id`'s job of `target` ended: its parsed copy is
    /// forgotten, and the held jobs waiting for it are judged afresh.
    pub fn ended(&mut self, target: &str, id: &JobId) {
        self.inbox.forget(&id.file_name());
        self.held.ended(target, id);
    }

    /// Counts and moves aside a refused inbox file. A file we cannot move
    /// stays and is retried; it must never take the listener down.
    pub fn refuse(
        &mut self,
        site: &Site,
        counters: &mut Counters,
        f: &Folders,
        name: &str,
        r: &Rejection,
    ) {
        self.inbox.forget(name);
        // A job refused may be one a held job waits for.
        if let Some(id) = JobId::from_file_name(name) {
            self.held.ended(site.target(), &id);
        }
        if r.verdict == Verdict::AlreadyProcessed {
            counters.skipped += 1;
        } else {
            counters.rejected += 1;
        }
        site.say(format!(
            "rejected {name}: {} ({})",
            r.verdict.as_str(),
            r.message
        ));
        let reason = rejected::Reason::new(r, Kind::Job, site.target()).judged_with(&site.key);
        if let Err(e) = rejected::file(f.rejected(), f.inbox(), name, &reason)
            && self.inbox.first_note(name)
        {
            site.say(format!("could not move {name} aside: {e}"));
        }
    }

    /// Walks the queue in drain order to the first job that can start or
    /// end: replay guard → age → cancel check (before the governor, so a
    /// cancelled job never sits deferred under RED) → dependencies (a held
    /// job is passed over, so the jobs behind it still run) → a date too
    /// far ahead of this clock → governor (`tier`) → run. Refusals on the
    /// way are made at once.
    ///
    /// With slots, every job that can start now, while `free` says a slot
    /// is free beside those already taken, is started at once; a job that
    /// would end unstarted after them is left to the next pass.
    #[allow(clippy::too_many_arguments)]
    pub fn walk(
        &mut self,
        site: &Site,
        pickup: &mut Pickup,
        rec: &mut Recorder,
        f: &Folders,
        tier: Tier,
        free: impl Fn(usize) -> bool,
    ) -> Step {
        let mut batch = Vec::new();
        let mut i = 0;
        while i < self.inbox.jobs.len() {
            let c = &self.inbox.jobs[i];
            if !f.inbox().exists(&c.job.id.file_name()) {
                // Gone meanwhile (moved by a sync engine): nothing to do.
                self.inbox.jobs.remove(i);
                continue;
            }
            // A signature the listing left unchecked is checked at the
            // job's turn at the latest, before anything else of it.
            let checked = c
                .check()
                .and_then(|()| accept::replay(&c.job.id, rec.seen_where(site, f, &c.job.id)))
                .and_then(|()| {
                    accept::freshness(c.job.created, clock::now(), site.settings.max_age)
                });
            if let Err(r) = checked {
                let c = self.inbox.jobs.remove(i).expect("index in range");
                self.held.remove(&c.job.id);
                self.refuse(site, &mut rec.counters, f, &c.job.id.file_name(), &r);
                continue;
            }
            let id = c.job.id.clone();
            if let Some(marker) = pickup.valid_marker(site, f, &id) {
                if !batch.is_empty() {
                    break;
                }
                let c = self.inbox.jobs.remove(i).expect("index in range");
                self.held.remove(&id);
                return Step::Cancel(c, marker);
            }
            let verdict = if self.inbox.jobs[i].job.header().after.is_empty() {
                Dependency::Run
            } else if self.held.still_held(&self.inbox.jobs[i].job) {
                // Nothing it waits for may have ended since it was held.
                i += 1;
                continue;
            } else {
                let job = self.inbox.jobs[i].job.clone();
                self.dependency_verdict(site, rec, &job)
            };
            match verdict {
                Dependency::Run => {}
                Dependency::Hold(waiting) => {
                    let job = self.inbox.jobs[i].job.clone();
                    self.note_held(site, &job, &waiting);
                    i += 1;
                    continue;
                }
                Dependency::Fail(_) if !batch.is_empty() => break,
                Dependency::Fail(dep) => {
                    let c = self.inbox.jobs.remove(i).expect("index in range");
                    self.held.remove(&id);
                    return Step::Fail(c, dep);
                }
            }
            // Dated too far ahead (this clock stepped back, or the sender's
            // is wrong): left queued until the clock reaches it, never refused.
            if let Some(ahead) = accept::ahead(self.inbox.jobs[i].job.created, clock::now()) {
                if self.deferred.insert(id.clone()) {
                    rec.counters.deferred += 1;
                    site.say(format!("deferred {id}: {}", accept::ahead_reason(ahead)));
                }
                i += 1;
                continue;
            }
            if !tier.admits(self.inbox.jobs[i].job.header().priority) {
                if self.deferred.insert(id.clone()) {
                    rec.counters.deferred += 1;
                    site.say(format!("deferred {id} (governor {})", tier.as_str()));
                }
                i += 1;
                continue;
            }
            let c = self.inbox.jobs.remove(i).expect("index in range");
            self.deferred.remove(&c.job.id);
            self.held.remove(&c.job.id);
            if site.settings.slots == 1 {
                return Step::Run(c);
            }
            batch.push(c);
            if !free(batch.len()) {
                break;
            }
        }
        if batch.is_empty() {
            return Step::Nothing;
        }
        Step::Start(batch)
    }

    /// The dependency verdict for `job`.
    fn dependency_verdict(&mut self, site: &Site, rec: &Recorder, job: &Job) -> Dependency {
        self.leaned_on_own = false;
        let found: Vec<(After, Found)> = job
            .header()
            .after
            .iter()
            .map(|a| (a.clone(), self.found(site, rec, a)))
            .collect();
        dependency::decide(job.header().after_any, &found)
    }

    /// What became of the job `a` names: a result of ours not yet placed
    /// counts at once; otherwise the folders say ([`observe::dependency`]).
    fn found(&mut self, site: &Site, rec: &Recorder, a: &After) -> Found {
        let id = &a.job_id;
        if a.target.same(site.target()) {
            if let Some(o) = rec.pending_result(id) {
                return Found::ended(&o);
            }
            if rec.placing(id) {
                self.held_on_own = true;
                self.leaned_on_own = true;
                return Found::Unseen;
            }
        }
        observe::dependency(&site.dirs, a, &site.key)
    }

    /// Keeps `job`'s verdict, held on `waiting`, and says once per job
    /// what it waits for.
    fn note_held(&mut self, site: &Site, job: &Job, waiting: &[After]) {
        if self.held.record(job, waiting, self.leaned_on_own) {
            let names: Vec<String> = waiting.iter().map(After::to_string).collect();
            site.say(format!(
                "holding {}: waits for {}",
                job.id,
                names.join(", ")
            ));
        }
    }

    /// Lists the `results/` and `archive/rejected/` of each target a held
    /// job waits on, when due ([`Held::due`]), so a job whose dependency
    /// may have ended there is judged afresh at its turn.
    pub fn look_for_endings(&mut self, site: &Site, f: &Folders) {
        self.held.keep_looked();
        for target in self.held.targets() {
            let other;
            let (results, rejected) = if target.same(site.target()) {
                (Some(f.results()), Some(f.rejected()))
            } else {
                other = match site.dirs.sibling(&target) {
                    Ok(Some(d)) => {
                        [Place::Results, Place::Rejected].map(|p| d.open(p).ok().flatten())
                    }
                    _ => [None, None],
                };
                (other[0].as_ref(), other[1].as_ref())
            };
            let stamp = (
                results.and_then(Dir::modified),
                rejected.and_then(Dir::modified),
            );
            if self.held.due(target.as_str(), stamp, site.settings.poll) {
                self.held
                    .listed(target.as_str(), stamp, [results, rejected]);
            }
        }
    }
}
