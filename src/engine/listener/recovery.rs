//! Start-up recovery (docs/protocol.md §7): what the previous listener left unfinished,
//! as its ledger tells, is brought to an end before anything new runs.
//!
//! A result recorded but not placed is published again, and its job
//! archived; a job started without a result has its leftover processes
//! stopped and gets one `interrupted` result: it is never run again, as a
//! job may not be safe to run twice. There is no runner here, so whether a
//! marker waits to be consumed is read from the folder.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use super::pickup::Pickup;
use super::recorder::Recorder;
use super::site::Site;
use crate::base::clock;
use crate::base::error::Result;
use crate::base::names::JobId;
use crate::engine::publisher::{self, Finished};
use crate::local::state::Unfinished;
use crate::platform::{self, Signal};
use crate::protocol::doc::detail;
use crate::protocol::jobenv;
use crate::store::fsops;

/// How many recorded results start-up recovery publishes with one flush.
const RECOVER_CHUNK: usize = 256;

/// Start-up recovery from what the ledger says the previous listener
/// left unfinished: recorded results missing from `results/` are
/// published again and their jobs archived; a job started without a
/// result has its leftover processes stopped and gets one `interrupted`
/// result; it is never run again.
pub(super) fn recover(
    site: &Site,
    pickup: &mut Pickup,
    rec: &mut Recorder,
    left: Unfinished,
) -> Result<()> {
    remove_crash_temps(site, pickup, rec, &left);
    let mut recorded = Vec::new();
    for r in left.recorded {
        let Ok(id) = JobId::parse(&r.job_id) else {
            continue;
        };
        if !pickup
            .open(site, &mut rec.counters)?
            .results()
            .exists(&id.file_name())
        {
            site.say(format!("publishing the recorded result of {id}"));
        }
        recorded.push(Finished {
            marker: pickup.has_valid_marker(site, &mut rec.counters, &id),
            id,
            result: r.result,
        });
    }
    // A result already in place is kept as it is (publishing never
    // replaces); only the bookkeeping after it is redone. The ledger
    // lines are flushed first: after a crash of a relaxed listener they
    // may be in the page cache only. In chunks, each flushed with one
    // call: however many results a crash left, one file is open at a
    // time, and a crash meanwhile leaves one chunk's temp files at most.
    let mut ledger = Some(rec.ledger_path().to_path_buf());
    for chunk in recorded.chunks(RECOVER_CHUNK) {
        let f = pickup.open(site, &mut rec.counters)?;
        publisher::publish_batch(
            &f,
            &site.key,
            site.target(),
            ledger.take().as_deref(),
            chunk,
        )?;
    }
    rec.republished(recorded.len());
    for entry in left.started {
        let Ok(id) = JobId::parse(&entry.job_id) else {
            continue;
        };
        recover_started(site, pickup, rec, &id, &entry.started_at, entry.pid)?;
    }
    // Nothing runs in a slot yet.
    rec.checkpoint(site, pickup, false)
}

/// Removes the temp files a crash left in `results/` (written, not yet
/// renamed) for the jobs `left` names: only this listener writes there,
/// and each of those jobs gets its result published again below.
/// Before anything is published, so no temp file of this start is
/// taken; best effort (`sweep` removes what is left).
fn remove_crash_temps(site: &Site, pickup: &mut Pickup, rec: &mut Recorder, left: &Unfinished) {
    let names: HashSet<String> = left
        .recorded
        .iter()
        .map(|r| &r.job_id)
        .chain(left.started.iter().map(|s| &s.job_id))
        .map(|id| format!("{id}.json"))
        .collect();
    if names.is_empty() {
        return;
    }
    let Ok(f) = pickup.open(site, &mut rec.counters) else {
        return;
    };
    let results = f.results();
    for name in results.list().unwrap_or_default() {
        if fsops::temp_target(&name).is_some_and(|t| names.contains(t)) {
            let _ = results.remove(&name);
        }
    }
}

fn recover_started(
    site: &Site,
    pickup: &mut Pickup,
    rec: &mut Recorder,
    id: &JobId,
    started_at: &str,
    pid: i32,
) -> Result<()> {
    site.say(format!(
        "recovering {id}: the previous listener stopped while it ran"
    ));
    let started = clock::parse(started_at).map_or(std::time::UNIX_EPOCH, Into::into);
    let env = jobenv::identifying(id, &site.root.display().to_string());
    let pids = platform::orphans(&platform::Orphaned {
        env: &env,
        group: pid,
        started,
    });
    if !pids.is_empty() {
        site.say(format!(
            "stopping {} leftover process(es) of {id}",
            pids.len()
        ));
        platform::signal_pids(&pids, Signal::Term);
        let until = Instant::now() + Duration::from_secs(2);
        while pids.iter().any(|&p| platform::is_alive(p)) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        platform::signal_pids(&pids, Signal::Kill);
    }
    let f = pickup.open(site, &mut rec.counters)?;
    let name = id.file_name();
    let _ = f.running().remove(&name);
    if crate::protocol::judge::result(f.results(), id, site.target(), &site.key).is_ok() {
        // A genuine result is there already (placed by another copy):
        // only the bookkeeping after it is left to do. One that does not
        // verify is a folder writer's: the job gets its `interrupted`
        // result, whose publishing moves that file aside.
        publisher::archive(&f, id)?;
        if pickup.has_valid_marker(site, &mut rec.counters, id) {
            publisher::consume_marker(&f, id)?;
        }
        return Ok(());
    }
    let outcome = detail::recovered(
        id.as_str(),
        site.target(),
        started_at,
        pid,
        &clock::format(clock::now()),
    );
    rec.counters.failed += 1;
    site.say(format!("finished {id}: interrupted"));
    let marker = pickup.has_valid_marker(site, &mut rec.counters, id);
    // Recorded only: nothing is queued yet, so no queued job waits for it.
    rec.record(id, &outcome, marker)
}
