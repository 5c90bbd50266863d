//! The walk over the queue (docs/protocol.md §7.2, §7.3): each job in
//! drain order gets the per-job steps, and the first that can start or end
//! does.

use super::Listener;
use crate::accept;
use crate::clock;
use crate::dependency;
use crate::error::Result;
use crate::governor::Tier;
use crate::layout::Folders;
use crate::names::JobId;
use crate::replay;

impl Listener {
    /// Walks the queue in drain order and acts on the first job that can
    /// start or end: replay guard → age → cancel check (before the governor,
    /// so a cancelled job never sits deferred under RED) → dependencies (a
    /// held job is passed over, so the jobs behind it still run) → a date
    /// too far ahead of this clock → governor → run.
    ///
    /// With slots, every job that can start now, up to the free slots, is
    /// started at once, their start lines sharing one flush; a job that
    /// would end unstarted after them is left to the next pass.
    pub(super) fn act(&mut self, f: &Folders) -> Result<bool> {
        // Read before any marker is looked for: the job's watch looks at
        // once if an event came after.
        let looked = self.hint.changes();
        let tier = Tier::read(self.settings.governor.as_deref());
        self.look_for_endings(f);
        let mut batch = Vec::new();
        let mut i = 0;
        while i < self.inbox.jobs.len() {
            let c = &self.inbox.jobs[i];
            if !f.inbox().exists(&c.job.id.file_name()) {
                // Gone meanwhile (moved by a sync engine): nothing to do.
                self.inbox.jobs.remove(i);
                continue;
            }
            let checked = accept::replay(&c.job.id, self.seen_where(f, &c.job.id)).and_then(|()| {
                accept::freshness(c.job.created, clock::now(), self.settings.max_age)
            });
            if let Err(r) = checked {
                let c = self.inbox.jobs.remove(i).expect("index in range");
                self.held.remove(&c.job.id);
                self.refuse(f, &c.job.id.file_name(), &r);
                continue;
            }
            let id = c.job.id.clone();
            if let Some(marker) = self.valid_marker(f, &id) {
                if !batch.is_empty() {
                    break;
                }
                let c = self.inbox.jobs.remove(i).expect("index in range");
                self.held.remove(&id);
                self.cancel_before_start(&c, &marker)?;
                self.inbox.note_own_change(f.inbox());
                return Ok(true);
            }
            let verdict = if self.inbox.jobs[i].job.header().after.is_empty() {
                dependency::Verdict::Run
            } else if self.held.still_held(&self.inbox.jobs[i].job) {
                // Nothing it waits for may have ended since it was held.
                i += 1;
                continue;
            } else {
                let job = self.inbox.jobs[i].job.clone();
                self.dependency_verdict(&job)
            };
            match verdict {
                dependency::Verdict::Run => {}
                dependency::Verdict::Hold(waiting) => {
                    let job = self.inbox.jobs[i].job.clone();
                    self.note_held(&job, &waiting);
                    i += 1;
                    continue;
                }
                dependency::Verdict::Fail(_) if !batch.is_empty() => break,
                dependency::Verdict::Fail(dep) => {
                    let c = self.inbox.jobs.remove(i).expect("index in range");
                    self.held.remove(&id);
                    self.dependency_failed(&c, dep)?;
                    self.inbox.note_own_change(f.inbox());
                    return Ok(true);
                }
            }
            // Dated too far ahead (this clock stepped back, or the sender's
            // is wrong): left queued until the clock reaches it, never refused.
            if let Some(ahead) = accept::ahead(self.inbox.jobs[i].job.created, clock::now()) {
                if self.deferred.insert(id.clone()) {
                    self.counters.deferred += 1;
                    self.say(format!("deferred {id}: {}", accept::ahead_reason(ahead)));
                }
                i += 1;
                continue;
            }
            if !tier.admits(self.inbox.jobs[i].job.header().priority) {
                if self.deferred.insert(id.clone()) {
                    self.counters.deferred += 1;
                    self.say(format!("deferred {id} (governor {})", tier.as_str()));
                }
                i += 1;
                continue;
            }
            let c = self.inbox.jobs.remove(i).expect("index in range");
            self.deferred.remove(&c.job.id);
            self.held.remove(&c.job.id);
            if self.settings.slots == 1 {
                self.run_job(f, c, looked)?;
                self.inbox.note_own_change(f.inbox());
                return Ok(true);
            }
            batch.push(c);
            if !self.slot_free_beside(batch.len()) {
                break;
            }
        }
        if batch.is_empty() {
            return Ok(false);
        }
        self.start_slots(f, batch, looked)?;
        self.inbox.note_own_change(f.inbox());
        Ok(true)
    }

    /// Where `id` was already processed, if anywhere, in the folders this
    /// pass holds.
    fn seen_where(&self, f: &Folders, id: &JobId) -> Option<&'static str> {
        let job = (id, self.dirs.target().as_str(), &*self.key);
        replay::used_in(Some(f.results()), Some(f.done()), job, || {
            self.ledger.contains(id.as_str())
        })
    }
}
