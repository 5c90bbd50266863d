//! The fleet report's model: what the folder says about every lane over a
//! span of time, as one document that `report --json` prints and
//! [`crate::view::report`] draws as a page.
//!
//! Only verified documents are drawn: results, the job files kept in
//! `archive/done/` and the inbox, and heartbeats each go through their
//! judge's door; a file that does not verify is counted in
//! `unverifiedFiles`, never shown. Refusals come from the listener's
//! reason notes beside each refused file (unsigned, as `status` shows
//! them): their texts are shown as text, escaped by the view.
//!
//! Reading is [`gather()`]'s (one listing per folder; with `--since`, a
//! result file older than the span is passed over by its modification
//! time, never read); the rules that shape what was read — queue depth,
//! listener gaps, medians, when bars are aggregated — are pure functions
//! in `shape.rs`.

mod gather;
mod shape;

pub use gather::{Window, gather};
pub use shape::{
    BAR_LIMIT, FLEET_BAR_LIMIT, NOT_WELL_ROWS, SLICES, depth_per_slice, drawn, gaps, median,
};

use std::collections::BTreeMap;

use serde::Serialize;

use crate::protocol::doc::outcome::Ending;

/// The whole report.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Fleet {
    /// When it was made (the span's end).
    pub made_at: String,
    /// The span's start: `--since`, else the earliest time drawn.
    pub from: String,
    /// The span's start, in milliseconds since the Unix epoch.
    pub from_ms: i64,
    /// The span's end (`madeAt`), in milliseconds since the Unix epoch.
    pub to_ms: i64,
    /// True when `--since` set the start.
    pub since: bool,
    /// The fingerprint of the fleet key the documents were verified with
    /// (empty in the roster lane, which has none).
    pub key_fingerprint: String,
    /// The version of the roster the documents were verified against, in
    /// the roster lane (`roster`, `both`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roster_version: Option<u64>,
    /// Past this many jobs, a lane's bars are aggregated into slices.
    pub bar_limit: usize,
    /// Past this many bars on the page, the busiest lanes are aggregated.
    pub fleet_bar_limit: usize,
    /// How many slices the span is cut into (queue depth, aggregated bars).
    pub slices: usize,
    /// One lane per target, in name order.
    pub lanes: Vec<Lane>,
    /// Files that did not verify (results, job files, heartbeats), all lanes.
    pub unverified_files: usize,
    /// The jobs that did not end well, newest first, at most
    /// [`NOT_WELL_ROWS`].
    pub not_well: Vec<NotWell>,
    /// How many jobs did not end well in all.
    pub not_well_count: usize,
}

/// One target over the span.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Lane {
    /// The target.
    pub target: String,
    /// Its finished jobs, by start (empty when `aggregated`).
    pub jobs: Vec<Bar>,
    /// True when its jobs and refusals are drawn as counts per slice
    /// (`slices`), not one bar each ([`drawn`]).
    pub aggregated: bool,
    /// Per slice of the span, how many jobs ended so, and how many files
    /// were refused (only when `aggregated`).
    pub slices: Vec<BTreeMap<&'static str, usize>>,
    /// Job files its listener refused, by time (empty when `aggregated`).
    pub rejected: Vec<Refusal>,
    /// Its listener's liveness: heartbeat, restarts, gaps.
    pub listener: Listener,
    /// The most jobs waiting at once, per slice of the span.
    pub queue: Vec<usize>,
    /// Jobs queued now.
    pub queued_now: usize,
    /// How many jobs ended each way, by its word.
    pub totals: BTreeMap<&'static str, usize>,
    /// Finished jobs in the span.
    pub finished: usize,
    /// The median run time of the jobs that ran.
    pub median_run_ms: Option<u64>,
    /// Its files that did not verify.
    pub unverified_files: usize,
}

/// One finished job, as its verified result and job file say.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Bar {
    /// The job.
    pub job_id: String,
    /// How it ended.
    pub outcome: Ending,
    /// Its exit code (-1 when it has none of its own).
    pub exit_code: i64,
    /// How its process ended, for people.
    pub exit: String,
    /// When it was queued (its job file's `createdAt`), when known.
    pub created_ms: Option<i64>,
    /// When it started; none when it never did.
    pub started_ms: Option<i64>,
    /// When it finished.
    pub finished_ms: i64,
    /// When it finished, as the result says.
    pub finished_at: String,
    /// How long it ran.
    pub duration_ms: Option<u64>,
    /// Its label.
    pub label: Option<String>,
    /// What it ran, on one line; none when its job file is gone.
    pub argv: Option<String>,
    /// True when its body is sealed: neither label nor command is readable.
    pub sealed: bool,
}

/// A refused job file, as the listener's reason note says.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Refusal {
    /// The refused file's name.
    pub name: String,
    /// The verdict.
    pub verdict: String,
    /// Why.
    pub message: String,
    /// When, as the note says.
    pub rejected_at: String,
    /// The same, in milliseconds.
    pub at_ms: i64,
}

/// What is known of a lane's listener over the span.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Listener {
    /// Its last verified heartbeat.
    pub beat: Option<BeatSeen>,
    /// When it (re)started: its heartbeat's start, and each start that
    /// recovered a job it had been running when it stopped.
    pub restarts: Vec<Mark>,
    /// Spans without a sign of life.
    pub gaps: Vec<Gap>,
}

/// A verified heartbeat.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BeatSeen {
    /// `listening`, `running` or `stopped`.
    pub state: String,
    /// When it was written.
    pub heartbeat_at: String,
    /// The same, in milliseconds.
    pub heartbeat_ms: i64,
    /// True while it counts as alive.
    pub alive: bool,
    /// The listener's version.
    pub version: String,
    /// The host it runs on.
    pub host: String,
}

/// A moment on a lane.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Mark {
    /// When, in milliseconds.
    pub at_ms: i64,
    /// What happened.
    pub what: String,
}

/// A span on a lane without a sign of life from its listener.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Gap {
    /// Its start, in milliseconds.
    pub from_ms: i64,
    /// Its end, in milliseconds.
    pub to_ms: i64,
    /// What shows it.
    pub what: String,
}

/// A job that did not end well, for the table.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NotWell {
    /// Its target.
    pub target: String,
    /// The job id, or the refused file's name.
    pub job: String,
    /// How it ended (`rejected` for a refused file).
    pub outcome: String,
    /// Why, as its result or reason note says.
    pub reason: String,
    /// Its exit code, when it has a result.
    pub exit_code: Option<i64>,
    /// When it ended or was refused, in milliseconds.
    pub at_ms: i64,
    /// Its label.
    pub label: Option<String>,
    /// True when its body is sealed: its label is not readable.
    pub sealed: bool,
    /// The start of its stderr tail.
    pub stderr: Option<String>,
}

/// Milliseconds since the Unix epoch of an RFC 3339 time.
pub fn millis(text: &str) -> Option<i64> {
    crate::base::clock::parse(text).map(|t| (t.unix_timestamp_nanos() / 1_000_000) as i64)
}
