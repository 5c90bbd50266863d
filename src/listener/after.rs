//! A queued job's dependency check (docs/protocol.md §7.13): what became of
//! each job its signed spec waits for (`after`), found by
//! [`crate::observe::dependency`] and judged by [`crate::dependency`].
//!
//! The one thing only the listener knows is its own results not yet placed
//! in `results/`: one recorded but not handed over counts at once, one
//! being placed counts once it is. Another target's folders are only read,
//! never changed: a result there that fails verification is that target's
//! listener's to move aside, and here it simply counts as absent.

use super::{Candidate, Listener};
use crate::accept;
use crate::clock;
use crate::dependency::{self, Found, Verdict};
use crate::doc::Job;
use crate::doc::detail::{self, DependencySeen};
use crate::doc::job::After;
use crate::error::Result;
use crate::fsops::Dir;
use crate::layout::{Folders, Place};
use crate::observe;
use crate::read::FileRead;

impl Listener {
    /// The dependency verdict for `job`.
    pub(super) fn dependency_verdict(&mut self, job: &Job) -> Verdict {
        self.leaned_on_own = false;
        let found: Vec<(After, Found)> = job
            .header()
            .after
            .iter()
            .map(|a| (a.clone(), self.found(a)))
            .collect();
        dependency::decide(job.header().after_any, &found)
    }

    /// What became of the job `a` names: a result of ours not yet placed
    /// counts at once; otherwise the folders say ([`observe::dependency`]).
    fn found(&mut self, a: &After) -> Found {
        let id = &a.job_id;
        if a.target.same(self.dirs.target().as_str()) {
            if let Some(p) = self.pending.iter().find(|p| &p.id == id) {
                let read = FileRead::Bytes(p.result.clone());
                let target = self.dirs.target().as_str();
                return accept::outcome(id.as_str(), read, target, &self.key)
                    .map_or(Found::Unseen, |o| Found::ended(&o));
            }
            if self.publisher.in_flight(id) {
                self.held_on_own = true;
                self.leaned_on_own = true;
                return Found::Unseen;
            }
        }
        observe::dependency(&self.dirs, a, &self.key)
    }

    /// Ends `c`, unstarted, because the job it waited for did not end as
    /// required.
    pub(super) fn dependency_failed(&mut self, c: &Candidate, dep: DependencySeen) -> Result<()> {
        let finished_at = clock::format(clock::now());
        self.counters.failed += 1;
        self.say(format!(
            "ended {} without running: dependency-failed ({}:{} {})",
            c.job.id, dep.target, dep.job_id, dep.ended
        ));
        let outcome = detail::dependency_failed(&self.key, &c.job, dep, &finished_at);
        let marker = self.has_valid_marker(&c.job.id);
        self.finish(&c.job.id, &outcome, marker)
    }

    /// Keeps `job`'s verdict, held on `waiting`, and says once per job
    /// what it waits for.
    pub(super) fn note_held(&mut self, job: &Job, waiting: &[After]) {
        if self.held.record(job, waiting, self.leaned_on_own) {
            let names: Vec<String> = waiting.iter().map(After::to_string).collect();
            self.say(format!(
                "holding {}: waits for {}",
                job.id,
                names.join(", ")
            ));
        }
    }

    /// Lists the `results/` and `archive/rejected/` of each target a held
    /// job waits on, when due ([`super::held::Held::due`]), so a job whose
    /// dependency may have ended there is judged afresh at its turn.
    pub(super) fn look_for_endings(&mut self, f: &Folders) {
        self.held.keep_looked();
        for target in self.held.targets() {
            let other;
            let (results, rejected) = if target.same(self.dirs.target().as_str()) {
                (Some(f.results()), Some(f.rejected()))
            } else {
                other = match self.dirs.sibling(&target) {
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
            if self.held.due(target.as_str(), stamp, self.settings.poll) {
                self.held
                    .listed(target.as_str(), stamp, [results, rejected]);
            }
        }
    }
}
