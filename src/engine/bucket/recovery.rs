//! Recovery on a bucket: what a stopped listener left is brought to an
//! end, never run: the jobs `running/` shows, at start, before anything
//! new runs; a claimed job it does not show, when the first listing meets
//! it (docs/object-store.md, "The
//! listener's order of writes").

use std::time::Duration;

use super::BucketListener;
use super::claim::{self, Claim};
use super::objects::Replaced;
use crate::base::clock;
use crate::base::error::Result;
use crate::base::names::JobId;
use crate::base::read::FileRead;
use crate::platform::{self, Signal};
use crate::protocol::doc::{detail, job};
use crate::protocol::jobenv;
use crate::store::layout::Place;
use crate::store::port::Shelves;

impl BucketListener {
    /// Start-up recovery: every job `running/` shows is another run's (a
    /// live one refused this start), so it ended with that run: one with a
    /// result has only its moves redone; one without gets one
    /// `interrupted` result, its leftover processes on this host stopped
    /// first. Neither runs again.
    pub(super) fn recover(&mut self) -> Result<()> {
        let names = self.t.shelf(Place::Running).list()?;
        for name in names {
            let Some(id) = name
                .strip_suffix(".json")
                .and_then(|s| JobId::parse(s).ok())
            else {
                continue;
            };
            let c = match self.t.shelf(Place::Running).read(&name, job::MAX_BYTES) {
                FileRead::Bytes(b) => Claim::parse(&b),
                _ => None,
            };
            let has_result = self.verified_result(&id).is_some();
            match claim::found(c.as_ref(), &self.beats.run, has_result) {
                claim::Found::Ours => {}
                claim::Found::Finished => self.archive(&id)?,
                claim::Found::Interrupted => {
                    let (started_at, pid) =
                        c.as_ref().map_or((clock::format(clock::now()), 0), |c| {
                            (c.started_at.clone(), c.pid)
                        });
                    let here = c.as_ref().is_some_and(|c| c.host == self.beats.host);
                    self.interrupted(&id, (&started_at, pid), here, None)?;
                }
            }
        }
        Ok(())
    }

    /// A job a stopped listener claimed and did not end, met by this
    /// run's first listing ([`super::checks::Replay::Left`]): it ended
    /// with that listener. One that ran less than a second shows nothing
    /// in `running/`: its leftover processes here are found by their
    /// environment alone.
    pub(super) fn left(&mut self, id: &JobId) -> Result<()> {
        let claim = Some(Replaced::new(
            self.t.key(Place::Running, &id.file_name()),
            None,
        ));
        self.interrupted(id, (&clock::format(clock::now()), 0), true, claim)
    }

    /// Ends `id`, which a stopped listener left running, with one
    /// `interrupted` result; its processes, started at `started_at` in
    /// group `pid` (0 when not known), are stopped first when they ran
    /// `here`, on this host.
    fn interrupted(
        &mut self,
        id: &JobId,
        (started_at, pid): (&str, i32),
        here: bool,
        claim: Option<Replaced>,
    ) -> Result<()> {
        self.say(format!(
            "recovering {id}: the previous listener stopped while it ran"
        ));
        if here {
            self.stop_leftovers(id, started_at, pid);
        }
        let o = detail::recovered(
            id.as_str(),
            self.t.target().as_str(),
            started_at,
            pid,
            &clock::format(clock::now()),
        )
        .signed(&self.key);
        self.counters.failed += 1;
        self.say(format!("finished {id}: interrupted"));
        self.finish(id, &o, claim)
    }

    /// Stops what a job of a stopped listener left running on this host.
    fn stop_leftovers(&self, id: &JobId, started_at: &str, pid: i32) {
        let started = clock::parse(started_at).map_or(std::time::UNIX_EPOCH, Into::into);
        let env = jobenv::identifying(id, &self.root_shown);
        let pids = platform::orphans(&platform::Orphaned {
            env: &env,
            group: pid,
            started,
        });
        if pids.is_empty() {
            return;
        }
        self.say(format!(
            "stopping {} leftover process(es) of {id}",
            pids.len()
        ));
        platform::signal_pids(&pids, Signal::Term);
        let until = std::time::Instant::now() + Duration::from_secs(2);
        while pids.iter().any(|&p| platform::is_alive(p)) && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        platform::signal_pids(&pids, Signal::Kill);
    }
}
