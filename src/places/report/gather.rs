//! Reading the folder for the report: each lane's verified results, the
//! job files they came from, the inbox, the listener's refusal notes and
//! its heartbeat, through the judges' doors.
//!
//! Cost: one listing per folder. A result is read once (and its job file
//! from `archive/done/` once); with a span's start, a result file last
//! changed before it is passed over unread — a result is written when its
//! job ends, so one changed earlier ended earlier.

use std::sync::Mutex;
use std::time::SystemTime;

use time::OffsetDateTime;

use super::shape::{self, BAR_LIMIT, FLEET_BAR_LIMIT, NOT_WELL_ROWS, SLICES};
use super::{Bar, BeatSeen, Fleet, Gap, Lane, Listener, Mark, NotWell, Refusal, millis};
use crate::base::names::JobId;
use crate::base::read::FileRead;
use crate::places::heartbeat::{self, BeatVerdict};
use crate::places::rejected::{self, Kind, Reason};
use crate::protocol::accept::Verdict;
use crate::protocol::doc::outcome::Ending;
use crate::protocol::doc::{Detail, Outcome, Termination};
use crate::store::fsops::Dir;
use crate::store::layout::{Place, TargetDirs};
use crate::trust::Key;

/// How many characters of a stderr tail's start the table shows.
const STDERR_START: usize = 200;

/// The span a report covers.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    /// Its start, when `--since` gave one; else the earliest time found.
    pub since: Option<OffsetDateTime>,
    /// Its end: when the report is made.
    pub now: OffsetDateTime,
}

impl Window {
    fn since_ms(&self) -> Option<i64> {
        self.since.map(ms)
    }
}

fn ms(t: OffsetDateTime) -> i64 {
    (t.unix_timestamp_nanos() / 1_000_000) as i64
}

/// The report over `targets` in `window`, verified with `key`.
pub fn gather(targets: &[TargetDirs], key: &Key, window: Window) -> Fleet {
    let now = ms(window.now);
    let mut read: Vec<Read> = targets.iter().map(|d| read_lane(d, key, &window)).collect();
    let from = window.since_ms().unwrap_or_else(|| {
        read.iter()
            .filter_map(Read::earliest)
            .min()
            .unwrap_or(now - 3_600_000)
            .min(now - 1)
    });
    let mut not_well: Vec<NotWell> = read.iter_mut().flat_map(|r| r.not_well.drain(..)).collect();
    not_well.sort_by(|a, b| (b.at_ms, &b.job).cmp(&(a.at_ms, &a.job)));
    let not_well_count = not_well.len();
    not_well.truncate(NOT_WELL_ROWS);
    let sizes: Vec<usize> = read
        .iter()
        .map(|r| r.jobs.len() + r.rejected.len())
        .collect();
    let lanes: Vec<Lane> = read
        .into_iter()
        .zip(shape::drawn(&sizes))
        .map(|(r, draw)| r.lane(from, now, draw))
        .collect();
    Fleet {
        made_at: crate::base::clock::format(window.now),
        from: crate::base::clock::format(
            OffsetDateTime::from_unix_timestamp_nanos(i128::from(from) * 1_000_000)
                .unwrap_or(window.now),
        ),
        from_ms: from,
        to_ms: now,
        since: window.since.is_some(),
        key_fingerprint: key.key_id(),
        roster_version: key.roster_version(),
        bar_limit: BAR_LIMIT,
        fleet_bar_limit: FLEET_BAR_LIMIT,
        slices: SLICES,
        unverified_files: lanes.iter().map(|l| l.unverified_files).sum(),
        lanes,
        not_well,
        not_well_count,
    }
}

/// What was read of one lane, before the span is known.
struct Read {
    target: String,
    jobs: Vec<Bar>,
    rejected: Vec<Refusal>,
    /// When each queued job entered the queue and left it (now, for those
    /// still queued).
    waits: Vec<(i64, i64)>,
    queued_now: usize,
    beat: Option<BeatSeen>,
    /// The listener's own start, as its heartbeat says.
    started_ms: Option<i64>,
    /// Starts that recovered a job the listener had been running.
    recoveries: Vec<i64>,
    not_well: Vec<NotWell>,
    unverified: usize,
}

impl Read {
    fn earliest(&self) -> Option<i64> {
        let jobs = self
            .jobs
            .iter()
            .map(|j| j.created_ms.or(j.started_ms).unwrap_or(j.finished_ms));
        let refused = self.rejected.iter().map(|r| r.at_ms);
        let waits = self.waits.iter().map(|w| w.0);
        jobs.chain(refused).chain(waits).min()
    }

    fn lane(self, from: i64, to: i64, draw: bool) -> Lane {
        let mut totals = std::collections::BTreeMap::new();
        for j in &self.jobs {
            *totals.entry(j.outcome.as_str()).or_insert(0) += 1;
        }
        if !self.rejected.is_empty() {
            totals.insert("rejected", self.rejected.len());
        }
        let mut activity: Vec<i64> = self
            .jobs
            .iter()
            .flat_map(|j| j.started_ms.into_iter().chain([j.finished_ms]))
            .collect();
        let mut restarts: Vec<Mark> = self
            .recoveries
            .iter()
            .map(|&at| Mark {
                at_ms: at,
                what: "restarted; recovered a job it had been running".into(),
            })
            .collect();
        // A recovery's own end is the restart: the activity before it is
        // what came earlier.
        let mut gaps = shape::gaps(
            &mut activity,
            &self.recoveries,
            "no sign of the listener until it restarted",
        );
        if let Some(s) = self.started_ms {
            restarts.push(Mark {
                at_ms: s,
                what: "listener started".into(),
            });
        }
        if let Some(b) = &self.beat
            && !b.alive
            && b.heartbeat_ms < to
        {
            gaps.push(Gap {
                from_ms: b.heartbeat_ms,
                to_ms: to,
                what: format!("no heartbeat since the last one ({})", b.state),
            });
        }
        restarts.retain(|m| m.at_ms >= from);
        restarts.sort_by_key(|m| m.at_ms);
        let median_run_ms = shape::median(
            self.jobs
                .iter()
                .filter(|j| j.started_ms.is_some())
                .filter_map(|j| j.duration_ms)
                .collect(),
        );
        let aggregated = !draw;
        let slices = if aggregated {
            let refused: Vec<i64> = self.rejected.iter().map(|r| r.at_ms).collect();
            shape::per_slice(&self.jobs, &refused, from, to, SLICES)
        } else {
            Vec::new()
        };
        Lane {
            target: self.target,
            finished: self.jobs.len(),
            jobs: if aggregated { Vec::new() } else { self.jobs },
            aggregated,
            slices,
            rejected: if aggregated {
                Vec::new()
            } else {
                self.rejected
            },
            listener: Listener {
                beat: self.beat,
                restarts,
                gaps,
            },
            queue: shape::depth_per_slice(&self.waits, from, to, SLICES),
            queued_now: self.queued_now,
            totals,
            median_run_ms,
            unverified_files: self.unverified,
        }
    }
}

fn open(dirs: &TargetDirs, place: Place) -> Option<Dir> {
    dirs.open(place).ok().flatten()
}

/// The `<id>.json` entries of `dir`, less those last changed before `since`.
fn ids(dir: &Dir, since: Option<SystemTime>) -> Vec<JobId> {
    dir.list()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|n| {
            let id = JobId::from_file_name(&n)?;
            let recent = since.is_none_or(|s| {
                dir.entry(&n)
                    .ok()
                    .and_then(|e| e.modified)
                    .is_none_or(|m| m >= s)
            });
            recent.then_some(id)
        })
        .collect()
}

/// Counts a judged file that is there but does not verify.
fn unverified(v: Verdict) -> usize {
    usize::from(v != Verdict::Missing)
}

fn read_lane(dirs: &TargetDirs, key: &Key, w: &Window) -> Read {
    let target = dirs.target().to_string();
    let since_ms = w.since_ms();
    let since_sys = w.since.map(SystemTime::from);
    let now = ms(w.now);
    let mut r = Read {
        target: target.clone(),
        jobs: Vec::new(),
        rejected: Vec::new(),
        waits: Vec::new(),
        queued_now: 0,
        beat: None,
        started_ms: None,
        recoveries: Vec::new(),
        not_well: Vec::new(),
        unverified: 0,
    };
    if let Some(results) = open(dirs, Place::Results) {
        let done = open(dirs, Place::Done);
        let parts = in_parts(ids(&results, since_sys), |part| {
            finished_jobs(&results, done.as_ref(), part, &target, key, since_ms)
        });
        for f in parts {
            r.jobs.extend(f.jobs);
            r.recoveries.extend(f.recoveries);
            r.waits.extend(f.waits);
            r.not_well.extend(f.not_well);
            r.unverified += f.unverified;
        }
    }
    r.jobs.sort_by(|a, b| {
        (a.started_ms.unwrap_or(a.finished_ms), &a.job_id)
            .cmp(&(b.started_ms.unwrap_or(b.finished_ms), &b.job_id))
    });
    if let Some(inbox) = open(dirs, Place::Inbox) {
        // A running job's file stays in the inbox until it is archived: it
        // no longer waits.
        let running = open(dirs, Place::Running).map_or_else(Vec::new, |d| ids(&d, None));
        for id in ids(&inbox, None)
            .into_iter()
            .filter(|i| !running.contains(i))
        {
            match crate::protocol::judge::job(&inbox, &id, &target, key) {
                Ok(j) => {
                    r.queued_now += 1;
                    r.waits.push((ms(j.created), now));
                }
                Err(e) => r.unverified += unverified(e.verdict),
            }
        }
    }
    refusals(dirs, since_sys, since_ms, &mut r);
    match heartbeat::judged(dirs, key) {
        Ok(b) => {
            r.started_ms = millis(&b.started_at);
            r.beat = millis(&b.heartbeat_at).map(|at| BeatSeen {
                alive: b.alive(),
                state: b.state.clone(),
                heartbeat_at: b.heartbeat_at.clone(),
                heartbeat_ms: at,
                version: b.version.clone(),
                host: b.host.clone(),
            });
        }
        Err(BeatVerdict::Unverified(_) | BeatVerdict::Malformed | BeatVerdict::NotRead) => {
            r.unverified += 1;
        }
        Err(BeatVerdict::Missing) => {}
    }
    r
}

/// Below this many results a lane is read by one thread.
const READ_APART_FROM: usize = 2000;

/// `f` over `ids` cut into parts, each on a thread of its own when there
/// are many (a thread that cannot be started leaves its part to this one).
fn in_parts<T: Send>(ids: Vec<JobId>, f: impl Fn(Vec<JobId>) -> T + Sync) -> Vec<T> {
    let threads = if ids.len() < READ_APART_FROM {
        1
    } else {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(4)
    };
    if threads < 2 {
        return vec![f(ids)];
    }
    let per = ids.len().div_ceil(threads);
    let mut parts: Vec<Vec<JobId>> = Vec::with_capacity(threads);
    let mut rest = ids;
    while rest.len() > per {
        let tail = rest.split_off(per);
        parts.push(rest);
        rest = tail;
    }
    parts.push(rest);
    // Each part waits in a slot for the thread that takes it; a part whose
    // thread could not be started is read here after the others.
    let slots: Vec<Mutex<Option<Vec<JobId>>>> =
        parts.into_iter().map(|p| Mutex::new(Some(p))).collect();
    let take = |slot: &Mutex<Option<Vec<JobId>>>| {
        slot.lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .unwrap_or_default()
    };
    std::thread::scope(|s| {
        let f = &f;
        let others: Vec<_> = slots[1..]
            .iter()
            .filter_map(|slot| {
                std::thread::Builder::new()
                    .spawn_scoped(s, move || f(take(slot)))
                    .ok()
            })
            .collect();
        let mut out = vec![f(take(&slots[0]))];
        for h in others {
            out.push(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        }
        for slot in &slots[1..] {
            let left = take(slot);
            if !left.is_empty() {
                out.push(f(left));
            }
        }
        out
    })
}

/// What the results of one part of a lane said.
#[derive(Default)]
struct Found {
    jobs: Vec<Bar>,
    recoveries: Vec<i64>,
    waits: Vec<(i64, i64)>,
    not_well: Vec<NotWell>,
    unverified: usize,
}

/// The finished jobs `ids` of `target`: each verified result in `results`
/// ending in the span, with its job file in `done`.
fn finished_jobs(
    results: &Dir,
    done: Option<&Dir>,
    ids: Vec<JobId>,
    target: &str,
    key: &Key,
    since_ms: Option<i64>,
) -> Found {
    let mut f = Found::default();
    for id in ids {
        let o = match crate::protocol::judge::result(results, &id, target, key) {
            Ok(o) => o,
            Err(e) => {
                f.unverified += unverified(e.verdict);
                continue;
            }
        };
        let Some(finished) = millis(&o.finished_at) else {
            continue;
        };
        if since_ms.is_some_and(|s| finished < s) {
            continue;
        }
        let d = o.detail();
        let (bar, recovered) = bar(&o, &d, finished, done, key, &mut f.unverified);
        if recovered {
            f.recoveries.push(finished);
        }
        if let Some(c) = bar.created_ms {
            f.waits.push((c, bar.started_ms.unwrap_or(bar.finished_ms)));
        }
        if bar.outcome != Ending::Done {
            f.not_well.push(not_well(target, &bar, d));
        }
        f.jobs.push(bar);
    }
    f
}

/// The bar of the verified result `o`, with what its job file in `done`
/// adds (one that does not verify is counted in `unverified_files`);
/// and whether it is a recovery after a listener stopped.
fn bar(
    o: &Outcome,
    d: &Detail,
    finished: i64,
    done: Option<&Dir>,
    key: &Key,
    unverified_files: &mut usize,
) -> (Bar, bool) {
    let job = JobId::parse(&o.job_id).ok().and_then(|id| {
        let done = done?;
        crate::protocol::judge::job(done, &id, &o.target, key)
            .map_err(|e| *unverified_files += unverified(e.verdict))
            .ok()
    });
    let payload = job.as_ref().map(|j| j.readable_payload());
    let sealed = matches!(payload, Some(None));
    let (label, argv) = match payload.flatten() {
        Some(p) => (
            p.label.clone().or(d.label.clone()),
            Some(crate::protocol::doc::job::argv_summary(&p.argv)),
        ),
        None if sealed => (None, None),
        None => (d.label.clone(), None),
    };
    let started_ms = millis(&o.started_at);
    let bar = Bar {
        job_id: o.job_id.clone(),
        outcome: o.termination().ending(o.ok),
        exit_code: o.exit_code,
        exit: o.exit_phrase_with(d),
        created_ms: job.as_ref().map(|j| ms(j.created)),
        started_ms,
        finished_ms: finished,
        finished_at: o.finished_at.clone(),
        duration_ms: d
            .duration_ms
            .or_else(|| started_ms.map(|s| (finished - s).max(0) as u64)),
        label,
        argv,
        sealed,
    };
    let recovered = o.termination() == Termination::Interrupted && d.recovered == Some(true);
    (bar, recovered)
}

fn not_well(target: &str, b: &Bar, d: Detail) -> NotWell {
    let reason = if let Some(e) = &d.spawn_error {
        e.clone()
    } else if let Some(dep) = &d.dependency {
        format!(
            "waited for {} on {}, which ended {}",
            dep.job_id, dep.target, dep.ended
        )
    } else if let Some(m) = &d.marker {
        format!("cancelled by {} at {}", m.origin, m.created_at)
    } else if let Some(n) = &d.note {
        n.clone()
    } else if b.outcome == Ending::Timeout {
        "outlived its timeout".into()
    } else {
        b.exit.clone()
    };
    let stderr = d
        .stderr_tail
        .map(|s| {
            s.trim_start()
                .chars()
                .take(STDERR_START)
                .collect::<String>()
        })
        .filter(|s| !s.is_empty());
    NotWell {
        target: target.to_string(),
        job: b.job_id.clone(),
        outcome: b.outcome.as_str().to_string(),
        reason,
        exit_code: Some(b.exit_code),
        at_ms: b.finished_ms,
        label: b.label.clone(),
        sealed: b.sealed,
        stderr,
    }
}

/// The job files the lane's listener refused in the span, from its notes.
fn refusals(dirs: &TargetDirs, since: Option<SystemTime>, since_ms: Option<i64>, r: &mut Read) {
    let Some(dir) = open(dirs, Place::Rejected) else {
        return;
    };
    for name in dir.list().unwrap_or_default() {
        let Some(refused) = name.strip_suffix(".reason.json") else {
            continue;
        };
        if let Some(s) = since
            && dir
                .entry(&name)
                .ok()
                .and_then(|e| e.modified)
                .is_some_and(|m| m < s)
        {
            continue;
        }
        let FileRead::Bytes(b) = dir.read_limited(&name, rejected::MAX_BYTES) else {
            continue;
        };
        let Ok(reason) = serde_json::from_slice::<Reason>(&b) else {
            continue;
        };
        let Some(at) = millis(&reason.rejected_at) else {
            continue;
        };
        if reason.kind != Kind::Job || since_ms.is_some_and(|s| at < s) {
            continue;
        }
        r.not_well.push(NotWell {
            target: r.target.clone(),
            job: refused.to_string(),
            outcome: "rejected".into(),
            reason: format!("{}: {}", reason.verdict, reason.message),
            exit_code: None,
            at_ms: at,
            label: None,
            sealed: false,
            stderr: None,
        });
        r.rejected.push(Refusal {
            name: refused.to_string(),
            verdict: reason.verdict,
            message: reason.message,
            rejected_at: reason.rejected_at,
            at_ms: at,
        });
    }
    r.rejected
        .sort_by(|a, b| (a.at_ms, &a.name).cmp(&(b.at_ms, &b.name)));
}
