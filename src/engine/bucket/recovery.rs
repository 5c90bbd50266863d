//! Start-up recovery on a bucket: what a stopped listener left claimed is
//! brought to an end before anything new runs (docs/object-store.md, "The
//! listener's order of writes").

use std::time::Duration;

use super::BucketListener;
use super::claim::{self, Claim};
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
    /// Start-up recovery: every claim found is another run's (a live one
    /// refused this start), so its job ended with that run: one with a
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
                    self.say(format!(
                        "recovering {id}: the previous listener stopped while it ran"
                    ));
                    let (started_at, pid) =
                        c.as_ref().map_or((clock::format(clock::now()), 0), |c| {
                            (c.started_at.clone(), c.pid)
                        });
                    if c.as_ref().is_some_and(|c| c.host == self.beats.host) {
                        self.stop_leftovers(&id, &started_at, pid);
                    }
                    let o = detail::recovered(
                        &self.key,
                        id.as_str(),
                        self.t.target().as_str(),
                        &started_at,
                        pid,
                        &clock::format(clock::now()),
                    );
                    self.counters.failed += 1;
                    self.say(format!("finished {id}: interrupted"));
                    self.finish(&id, &o, None)?;
                }
            }
        }
        Ok(())
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
