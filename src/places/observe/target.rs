//! What the folder says about one target as a whole: whether its listener is
//! alive, what runs, what waits (in drain order), which cancels are
//! pending, and the last results. `status` prints it and the HTTP intake's
//! `GET /v1/status` sends it; both take this one document.
//!
//! Cost: one directory listing per folder; job bodies are read for the
//! queue's order (they are small), result bodies only for the last few.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::base::clock;
use crate::base::names::JobId;
use crate::base::read::FileRead;
use crate::places::heartbeat::{self, BeatVerdict};
use crate::places::rejected;
use crate::protocol::accept;
use crate::protocol::doc::outcome::Ending;
use crate::protocol::doc::{Job, Priority};
use crate::store::fsops::Dir;
use crate::store::layout::{Place, TargetDirs};
use crate::trust::Key;

use super::Observed;

/// How many recent results are shown.
pub const RECENT: usize = 5;

/// One target's status (the `status --json` shape docs/guide.md documents).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetStatus {
    /// The target's name.
    pub target: String,
    /// Its listener, as its heartbeat file tells.
    pub listener: ListenerState,
    /// The jobs running now (one per busy slot; a crash may leave a stale file).
    pub running: Vec<RunningJob>,
    /// Valid queued jobs in drain order.
    pub queued: Vec<QueuedJob>,
    /// How many are queued.
    pub queued_count: usize,
    /// Inbox files that will be rejected.
    pub invalid_in_inbox: usize,
    /// Markers waiting in `cancel/`, with their job's state.
    pub cancel_pending: Vec<PendingCancel>,
    /// The last results, newest first.
    pub recent: Vec<RecentResult>,
    /// The last job files its listener rejected, newest first.
    pub rejected: Vec<RejectedJob>,
    /// The governor its listener obeys, when that listener runs on this
    /// machine (the hold is a setting of its machine, not in the folder).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub governor: Option<GovernorHold>,
}

/// A running listener's governor file and the tier it says now.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GovernorHold {
    /// The file.
    pub file: String,
    /// GREEN, YELLOW or RED.
    pub tier: String,
}

/// A job file the listener rejected.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RejectedJob {
    /// The file's name as filed in `archive/rejected/`.
    pub name: String,
    /// The verdict.
    pub verdict: String,
    /// Why.
    pub message: String,
    /// When.
    pub rejected_at: String,
    /// The fingerprint of the key it was judged with, when recorded.
    pub key_fingerprint: Option<String>,
}

/// The listener's heartbeat as read.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum ListenerState {
    /// No heartbeat file, or none readable.
    NotSeen {
        /// Always false.
        alive: bool,
        /// Always false.
        seen: bool,
    },
    /// A heartbeat file that does not parse.
    Unreadable {
        /// Always false.
        alive: bool,
        /// Always true.
        seen: bool,
        /// Always `unreadable`.
        state: &'static str,
    },
    /// A heartbeat.
    #[serde(rename_all = "camelCase")]
    Beat {
        /// Fresh enough, not `stopped`, and verified: a beat that does not
        /// verify is never called alive.
        alive: bool,
        /// Its signature holds under our key (false for an unsigned beat
        /// of an older version, a folder writer's, or one under another
        /// key).
        verified: bool,
        /// Always true.
        seen: bool,
        /// `listening`, `running` or `stopped`.
        state: String,
        /// The listener's pid on its machine.
        pid: u32,
        /// When it was written.
        heartbeat_at: String,
        /// Its age, when its time parses.
        heartbeat_age_sec: Option<u64>,
        /// When the listener started.
        started_at: String,
        /// The listener's version.
        version: String,
        /// The host it runs on.
        host: String,
        /// Its instance id: two listeners for one target differ here.
        instance: String,
        /// Its key's fingerprint.
        key_fingerprint: String,
    },
}

impl ListenerState {
    /// True when the listener is alive.
    pub fn alive(&self) -> bool {
        matches!(self, ListenerState::Beat { alive: true, .. })
    }
}

/// A job in `running/`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunningJob {
    /// The job.
    pub job_id: String,
    /// Its label.
    pub label: Option<String>,
    /// What runs.
    pub argv: Vec<String>,
    /// True for a sealed job: neither its label nor its command is shown.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub sealed: bool,
    /// When it started.
    pub started_at: String,
    /// For how long, when the start time parses.
    pub elapsed_sec: Option<u64>,
}

/// A queued job.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueuedJob {
    /// The job.
    pub job_id: String,
    /// `high` or `normal`.
    pub priority: &'static str,
    /// When it was signed.
    pub created_at: String,
    /// Who sent it.
    pub origin: String,
    /// Its label.
    pub label: Option<String>,
    /// What it runs.
    pub argv: Vec<String>,
    /// True when it is sealed and not readable here: neither its label nor
    /// its command is shown.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub sealed: bool,
    /// The jobs it still waits for (`TARGET:ID`), when held by a
    /// dependency (docs/protocol.md §7.13); absent otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waits_for: Vec<String>,
    /// How far its `createdAt` lies ahead of this machine's clock, in
    /// seconds, when that is beyond the skew allowed
    /// ([`accept::MAX_AHEAD`]): it is deferred until the clock comes
    /// within the skew of it; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ahead_sec: Option<u64>,
    /// True when it was running as its listener was killed (a second
    /// Ctrl-C): it is recorded `interrupted` when the listener next starts.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub killed_with_listener: bool,
}

/// A marker in `cancel/`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingCancel {
    /// The job it names.
    pub job_id: String,
    /// `running`, `queued`, `finished` or `not seen`.
    pub job: &'static str,
    /// A result file of the job that does not verify, ignored because the
    /// job is still queued or running ([`super::Look::ignored`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignored_result: Option<String>,
}

/// One of the last results.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum RecentResult {
    /// A result that verifies.
    #[serde(rename_all = "camelCase")]
    Verified {
        /// The job.
        job_id: String,
        /// Always true.
        verified: bool,
        /// How it ended, in its word.
        outcome: Ending,
        /// Its exit code.
        exit_code: i64,
        /// How its process ended, for people ([`crate::protocol::doc::Outcome::exit_phrase`]).
        #[serde(skip)]
        exit: String,
        /// When it finished.
        finished_at: String,
        /// How long it ran.
        duration_ms: Option<u64>,
        /// Its label.
        label: Option<String>,
        /// The key id that signed it, in the roster lane (with the target,
        /// the machine whose key it is).
        #[serde(skip_serializing_if = "Option::is_none")]
        signed_by_key: Option<String>,
    },
    /// A result file that does not verify.
    #[serde(rename_all = "camelCase")]
    Unverified {
        /// The job.
        job_id: String,
        /// Always false.
        verified: bool,
        /// The verdict.
        problem: &'static str,
    },
}

/// The ids named by `<id>.json` entries of `dir` (a folder of the layout,
/// held open once for the whole look), with their mtimes.
fn entries(dir: Option<&Dir>) -> Vec<(JobId, Option<SystemTime>)> {
    let Some(dir) = dir else {
        return Vec::new();
    };
    dir.list()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|n| {
            let id = JobId::from_file_name(&n)?;
            let mtime = dir.entry(&n).ok().and_then(|m| m.modified);
            Some((id, mtime))
        })
        .collect()
}

/// Reads the entry `name` of `dir` as [`Dir::read_limited`] does.
fn read(dir: Option<&Dir>, name: &str, limit: u64) -> FileRead {
    dir.map_or(FileRead::Missing, |d| d.read_limited(name, limit))
}

fn age_since(ts: &str) -> Option<Duration> {
    let t = clock::parse(ts)?;
    (clock::now() - t).try_into().ok()
}

/// The jobs a listener killed as a second signal stopped it at once, as
/// its last verified beat (`stopped`) names them: they have no result
/// until the listener next starts and records each `interrupted`.
pub fn killed_with_listener(dirs: &TargetDirs, key: &Key) -> Vec<String> {
    match heartbeat::judged(dirs, key) {
        Ok(beat) if beat.state == "stopped" => beat.running_jobs,
        _ => Vec::new(),
    }
}

fn listener(dirs: &TargetDirs, key: &Key) -> ListenerState {
    let (beat, verified) = match heartbeat::judged(dirs, key) {
        Ok(beat) => (beat, true),
        Err(BeatVerdict::Unverified(beat)) => (*beat, false),
        Err(BeatVerdict::Missing | BeatVerdict::NotRead) => {
            return ListenerState::NotSeen {
                alive: false,
                seen: false,
            };
        }
        Err(BeatVerdict::Malformed) => {
            return ListenerState::Unreadable {
                alive: false,
                seen: true,
                state: "unreadable",
            };
        }
    };
    let age = age_since(&beat.heartbeat_at);
    ListenerState::Beat {
        alive: verified && heartbeat::seen_alive(&beat.state, age, heartbeat::changed(dirs)),
        verified,
        seen: true,
        heartbeat_age_sec: age.map(|a| a.as_secs()),
        state: beat.state,
        pid: beat.pid,
        heartbeat_at: beat.heartbeat_at,
        started_at: beat.started_at,
        version: beat.version,
        host: beat.host,
        instance: beat.instance,
        key_fingerprint: beat.key_fingerprint,
    }
}

/// The part of a `running/` file that status shows.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Shown {
    #[serde(default, deserialize_with = "crate::base::screen::tamed_opt")]
    label: Option<String>,
    #[serde(default, deserialize_with = "crate::base::screen::tamed_list")]
    argv: Vec<String>,
    #[serde(default, deserialize_with = "crate::base::screen::tamed")]
    started_at: String,
    #[serde(default)]
    sealed: bool,
}

/// The jobs `running/` shows, less those with a verified result: the file
/// is unsigned and informational, and one a sync engine brings back after
/// its job ended must not show a finished job as running forever. In the
/// order they started (then by id), not the folder's.
fn running(dirs: &TargetDirs, key: &Key) -> Vec<RunningJob> {
    let dir = super::open(dirs, Place::Running);
    let results = super::open(dirs, Place::Results);
    let target = dirs.target().as_str();
    let mut jobs: Vec<RunningJob> = entries(dir.as_ref())
        .into_iter()
        .filter(|(id, _)| {
            results
                .as_ref()
                .is_none_or(|r| crate::protocol::judge::result(r, id, target, key).is_err())
        })
        .filter_map(|(id, _)| {
            let FileRead::Bytes(b) = read(dir.as_ref(), &id.file_name(), 1 << 20) else {
                return None;
            };
            let shown: Shown = serde_json::from_slice(&b).ok()?;
            Some(RunningJob {
                job_id: id.to_string(),
                elapsed_sec: age_since(&shown.started_at).map(|a| a.as_secs()),
                label: shown.label,
                argv: shown.argv,
                sealed: shown.sealed,
                started_at: shown.started_at,
            })
        })
        .collect();
    jobs.sort_by(|a, b| (&a.started_at, &a.job_id).cmp(&(&b.started_at, &b.job_id)));
    jobs
}

fn queued(dirs: &TargetDirs, key: &Key) -> (Vec<Job>, usize) {
    let mut jobs = Vec::new();
    let mut invalid = 0;
    // A running job's file stays in the inbox until it is archived.
    let running: Vec<JobId> = entries(super::open(dirs, Place::Running).as_ref())
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let inbox = super::open(dirs, Place::Inbox);
    for (id, _) in entries(inbox.as_ref())
        .into_iter()
        .filter(|(id, _)| !running.contains(id))
    {
        // Listed from the inbox, so it is open.
        let Some(inbox) = inbox.as_ref() else {
            continue;
        };
        match crate::protocol::judge::job(inbox, &id, dirs.target().as_str(), key) {
            Ok(j) => jobs.push(j),
            Err(_) => invalid += 1,
        }
    }
    jobs.sort_by(Job::drain_order);
    (jobs, invalid)
}

fn pending_cancels(dirs: &TargetDirs, key: &Key) -> Vec<PendingCancel> {
    entries(super::open(dirs, Place::Cancel).as_ref())
        .into_iter()
        .map(|(id, _)| {
            // Status shows what it can: a folder that is a link is a
            // layout fault doctor names, and a job behind it "not seen".
            let look =
                super::look(dirs, &id, key).unwrap_or_else(|_| super::Look::of(Observed::NotSeen));
            PendingCancel {
                job: match look.state {
                    Observed::Done(_) | Observed::ForgedResult(_) => "finished",
                    Observed::Running => "running",
                    Observed::Queued => "queued",
                    Observed::Rejected(_) | Observed::NotSeen => "not seen",
                },
                ignored_result: look.ignored.map(|f| f.to_string()),
                job_id: id.to_string(),
            }
        })
        .collect()
}

/// Which past results a status shows: the newest `count` that match.
#[derive(Clone, Debug)]
pub struct History {
    /// How many, newest first.
    pub count: usize,
    /// Only those that ended so (`done`, `failed`, `cancelled`, …).
    pub outcome: Option<Ending>,
    /// Only those whose label holds this text.
    pub label: Option<String>,
}

impl Default for History {
    fn default() -> History {
        History {
            count: RECENT,
            outcome: None,
            label: None,
        }
    }
}

impl History {
    /// True when a filter is set: results that do not verify are left out
    /// then, since what they say cannot be trusted to match.
    fn filtered(&self) -> bool {
        self.outcome.is_some() || self.label.is_some()
    }

    fn admits(&self, outcome: Ending, label: Option<&str>) -> bool {
        self.outcome.is_none_or(|o| o == outcome)
            && self
                .label
                .as_deref()
                .is_none_or(|l| label.is_some_and(|have| have.contains(l)))
    }
}

fn recent(dirs: &TargetDirs, key: &Key, history: &History) -> Vec<RecentResult> {
    let Some(results) = super::open(dirs, Place::Results) else {
        return Vec::new();
    };
    let mut all = entries(Some(&results));
    all.sort_by_key(|(id, m)| (*m, id.clone()));
    all.into_iter()
        .rev()
        .filter_map(|(id, _)| {
            match crate::protocol::judge::result(&results, &id, dirs.target().as_str(), key) {
                Ok(o) => {
                    let d = o.detail();
                    let outcome = o.termination().ending(o.ok);
                    history
                        .admits(outcome, d.label.as_deref())
                        .then(|| RecentResult::Verified {
                            job_id: o.job_id.clone(),
                            verified: true,
                            outcome,
                            exit_code: o.exit_code,
                            exit: o.exit_phrase(),
                            finished_at: o.finished_at.clone(),
                            duration_ms: d.duration_ms,
                            label: d.label,
                            signed_by_key: o.key_id.clone(),
                        })
                }
                Err(r) => (!history.filtered()).then(|| RecentResult::Unverified {
                    job_id: id.to_string(),
                    verified: false,
                    problem: r.verdict.as_str(),
                }),
            }
        })
        .take(history.count)
        .collect()
}

/// A queued job as status shows it: its header, and what it runs only
/// when its body is readable here (a body that is not shows neither a
/// label nor a command).
fn queued_job(dirs: &TargetDirs, key: &Key, j: &Job, killed: &[String]) -> QueuedJob {
    let payload = j.readable_payload();
    QueuedJob {
        killed_with_listener: killed.iter().any(|k| *k == j.id.as_str()),
        job_id: j.id.to_string(),
        priority: if j.header().priority == Priority::High {
            "high"
        } else {
            "normal"
        },
        created_at: j.created_at.clone(),
        origin: j.origin.clone(),
        label: payload.and_then(|p| p.label.clone()),
        argv: payload.map(|p| p.argv.clone()).unwrap_or_default(),
        sealed: payload.is_none(),
        waits_for: super::waits_for(dirs, j, key)
            .iter()
            .map(ToString::to_string)
            .collect(),
        ahead_sec: accept::ahead(j.created, clock::now()).map(|a| a.as_secs()),
    }
}

/// How many jobs `job` (queued on `dirs`' target) is behind: those
/// running now, and those queued before it in drain order that may start
/// (neither held by a dependency nor deferred, nor to be cancelled).
pub fn ahead_of(dirs: &TargetDirs, key: &Key, job: &Job) -> (usize, usize) {
    let (jobs, _) = queued(dirs, key);
    let now = clock::now();
    let marked: Vec<JobId> = entries(super::open(dirs, Place::Cancel).as_ref())
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let queued = jobs
        .iter()
        .take_while(|j| j.drain_order(job).is_lt())
        .filter(|j| {
            accept::ahead(j.created, now).is_none()
                && super::waits_for(dirs, j, key).is_empty()
                && !(marked.contains(&j.id) && super::cancel_pending(dirs, &j.id, key).is_some())
        })
        .count();
    (running(dirs, key).len(), queued)
}

/// Looks at the whole of `dirs`' target, with the past results `history`
/// asks for.
pub fn target(dirs: &TargetDirs, key: &Key, history: &History) -> TargetStatus {
    let (jobs, invalid) = queued(dirs, key);
    TargetStatus {
        target: dirs.target().to_string(),
        listener: listener(dirs, key),
        running: running(dirs, key),
        queued_count: jobs.len(),
        queued: {
            let killed = killed_with_listener(dirs, key);
            jobs.iter()
                .map(|j| queued_job(dirs, key, j, &killed))
                .collect()
        },
        invalid_in_inbox: invalid,
        cancel_pending: pending_cancels(dirs, key),
        recent: recent(dirs, key, history),
        rejected: rejected::recent_jobs(dirs, RECENT)
            .into_iter()
            .map(|(name, r)| RejectedJob {
                name,
                verdict: r.verdict,
                message: r.message,
                rejected_at: r.rejected_at,
                key_fingerprint: r.key_fingerprint,
            })
            .collect(),
        governor: None,
    }
}
