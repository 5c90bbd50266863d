//! What runs on a bucket, and where: the object `running/<jobId>.json`
//! (the folder's informational `running/` file), written once a job has
//! run a second (the job's claim, its copy in `archive/done/`, is placed
//! before the spawn: `checks`) and removed after its result. One left
//! without a result is a listener that stopped while the job ran: it
//! names the host and the job's process group, so the next start there
//! stops what is left of it. The rules here are pure; the listener places
//! and reads.

use serde::{Deserialize, Serialize};

use crate::protocol::doc::Job;

/// The `running/` document (unsigned, informational like the folder's
/// `running/` file: a forged one can only end a job `interrupted` at a
/// listener's start, as deleting its file could keep it from running).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Claim {
    /// The job claimed.
    #[serde(deserialize_with = "crate::base::screen::tamed")]
    pub job_id: String,
    /// Who sent it.
    #[serde(deserialize_with = "crate::base::screen::tamed")]
    pub origin: String,
    /// Its program and arguments (none for a sealed job).
    #[serde(default, deserialize_with = "crate::base::screen::tamed_list")]
    pub argv: Vec<String>,
    /// Its label (none for a sealed job).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::base::screen::tamed_opt"
    )]
    pub label: Option<String>,
    /// True for a sealed job (its payload is not shown).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sealed: bool,
    /// When the listener claimed it.
    #[serde(deserialize_with = "crate::base::screen::tamed")]
    pub started_at: String,
    /// The host the listener runs on.
    #[serde(default, deserialize_with = "crate::base::screen::tamed")]
    pub host: String,
    /// The listener's process id there.
    #[serde(default)]
    pub listener_pid: u32,
    /// The listener's run id ([`crate::places::heartbeat::run_id`]).
    #[serde(default, deserialize_with = "crate::base::screen::tamed")]
    pub run: String,
    /// The job's process (group) id, once spawned; 0 before.
    #[serde(default)]
    pub pid: i32,
}

impl Claim {
    /// The claim of `job`, started now (`started_at`) by the listener
    /// `run` (pid `listener_pid`) on `host`.
    pub fn of(job: &Job, started_at: &str, host: &str, listener_pid: u32, run: &str) -> Claim {
        let clear = (!job.is_sealed()).then(|| job.payload());
        Claim {
            job_id: job.id.to_string(),
            origin: job.origin.clone(),
            argv: clear.map(|p| p.argv.clone()).unwrap_or_default(),
            label: clear.and_then(|p| p.label.clone()),
            sealed: job.is_sealed(),
            started_at: started_at.to_string(),
            host: host.to_string(),
            listener_pid,
            run: run.to_string(),
            pid: 0,
        }
    }

    /// The claim as read from `bytes`, if it parses.
    pub fn parse(bytes: &[u8]) -> Option<Claim> {
        serde_json::from_slice(bytes).ok()
    }
}

/// What a starting listener does with a claim it finds.
#[derive(Debug, PartialEq)]
pub enum Found {
    /// Its job has a result: only the bookkeeping after it is left
    /// (archive the job, consume a marker, remove the claim).
    Finished,
    /// Left by a listener that stopped while its job ran: its leftover
    /// processes are stopped when they are on this host, and it gets one
    /// `interrupted` result; it is never run again.
    Interrupted,
    /// This run's own claim (cannot be at start; kept for the rule's sake).
    Ours,
}

/// The rule for a claim `c` (or an unreadable one, `None`) found at start
/// by run `run`, its job having a verified result or not. A starting
/// listener has made sure no other one serves the target (a live
/// heartbeat refuses the start), so every other run's claim is a stopped
/// listener's.
pub fn found(c: Option<&Claim>, run: &str, has_result: bool) -> Found {
    match c {
        Some(c) if c.run == run => Found::Ours,
        _ if has_result => Found::Finished,
        _ => Found::Interrupted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(run: &str) -> Claim {
        Claim {
            job_id: "20261204-040000-0123456789abcdef".into(),
            origin: "LAPTOP".into(),
            argv: vec!["true".into()],
            label: None,
            sealed: false,
            started_at: "2026-12-04T04:00:00.000Z".into(),
            host: "h".into(),
            listener_pid: 7,
            run: run.into(),
            pid: 0,
        }
    }

    #[test]
    fn a_claim_round_trips_and_a_broken_one_is_none() {
        let c = claim("r1");
        let bytes = crate::protocol::doc::to_file_bytes(&c);
        assert_eq!(Claim::parse(&bytes), Some(c));
        assert_eq!(Claim::parse(b"{"), None);
    }

    #[test]
    fn another_runs_claim_is_finished_or_interrupted_by_its_result() {
        let c = claim("old");
        assert_eq!(found(Some(&c), "new", true), Found::Finished);
        assert_eq!(found(Some(&c), "new", false), Found::Interrupted);
        assert_eq!(found(None, "new", false), Found::Interrupted);
        assert_eq!(found(Some(&c), "old", false), Found::Ours);
    }
}
