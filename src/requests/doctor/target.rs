//! The checks of one target (docs/protocol.md §8.2, `doctor`): its
//! listener (heartbeat, key, clock), its queue and cancels, what it
//! rejected lately, its file counts and conflict copies. Plain judgements
//! over facts [`super::gather`] collected.

use super::*;
use crate::trust::{self, COPY_ONE_KEY, KeyIds};

/// The heartbeat file as found.
#[derive(Clone, Debug, PartialEq)]
pub enum BeatFile {
    /// No heartbeat file.
    Missing,
    /// One that does not parse.
    Unreadable,
    /// A heartbeat, and the file's modification time.
    Beat(Box<Beat>, Option<OffsetDateTime>),
}

/// What one target's folder says.
#[derive(Clone, Debug)]
pub struct TargetFacts {
    /// Its name.
    pub name: String,
    /// Its listener's heartbeat.
    pub beat: BeatFile,
    /// Whether that heartbeat's signature holds under our key (none
    /// without a key or a heartbeat).
    pub beat_verified: Option<bool>,
    /// Its status document, when the key loads (the queue needs it).
    pub status: Option<TargetStatus>,
    /// Files its listener rejected within [`REJECTED_WINDOW`]: the name
    /// filed and the reason.
    pub rejected: Vec<(String, Reason)>,
    /// Entries per folder of the layout (`inbox`, `archive/done`, …), the
    /// target folder's own as `the target folder`.
    pub counts: Vec<(String, usize)>,
    /// How many entries a `sweep` with the default ages would remove now.
    pub prunable: usize,
    /// When a plain `sweep` (markers after a day) will have taken every
    /// marker it keeps now whose job no longer waits: the latest such
    /// marker's time plus the day.
    pub markers_due: Option<OffsetDateTime>,
    /// Conflict copies found: the path under the target folder and the
    /// engine whose naming it follows.
    pub conflicts: Vec<(String, Engine)>,
}

/// Its age at `now`; negative when dated in the future.
fn age_secs(ts: &str, now: OffsetDateTime) -> Option<i64> {
    clock::parse(ts).map(|t| (now - t).whole_seconds())
}

fn human_secs(s: i64) -> String {
    clock::human(Duration::from_secs(s.unsigned_abs()))
}

/// The clock difference between the listener and the clock that stamped
/// its heartbeat file, in seconds (positive: the listener's clock is
/// ahead): the heartbeat's `heartbeatAt` against the file's modification
/// time, or, when larger, how far `heartbeatAt` lies after `now`.
///
/// Engines that carry a file's modification time with it (Syncthing,
/// OneDrive) hand over the listener's own stamp, which hides the skew from
/// the first estimate; a file server (SMB) or an engine that stamps a file
/// as it arrives shows it. A heartbeat dated after `now` is skew whatever
/// the engine. A listener's clock running behind ours cannot be told from
/// sync delay when the stamp travels, so that side goes unseen there.
pub fn skew_secs(
    heartbeat_at: &str,
    modified: Option<OffsetDateTime>,
    now: OffsetDateTime,
) -> Option<i64> {
    let at = clock::parse(heartbeat_at)?;
    let by_file = modified.map(|m| (at - m).whole_seconds());
    let ahead = (at - now).whole_seconds();
    match by_file {
        Some(f) if f.abs() >= ahead => Some(f),
        _ if ahead > 0 => Some(ahead),
        other => other,
    }
}

/// The checks of one target: its listener, clock, key, queue, cancels,
/// rejections, file counts and conflict copies. `ours` is this machine's
/// key fingerprint when its key loads.
pub fn judge_target(
    t: &TargetFacts,
    ours: Option<&str>,
    now: OffsetDateTime,
    limit: usize,
) -> Vec<Check> {
    let name = t.name.as_str();
    let mut checks = judge_listener(t, ours, now);
    if let Some(s) = &t.status {
        checks.push(judge_queue(name, s, now));
        checks.push(judge_cancels(name, s, t.markers_due));
    }
    checks.push(judge_rejected(name, &t.rejected, ours));
    checks.push(judge_counts(name, &t.counts, t.prunable, limit));
    checks.push(judge_conflicts(name, &t.conflicts));
    checks.into_iter().map(|c| c.on(name)).collect()
}

pub(super) fn judge_listener(
    t: &TargetFacts,
    ours: Option<&str>,
    now: OffsetDateTime,
) -> Vec<Check> {
    let name = t.name.as_str();
    let start = format!("start `fleet-dispatch listen` on {name} (contrib/ has service recipes)");
    let (beat, modified) = match &t.beat {
        BeatFile::Missing => {
            return vec![Check::warn(
                "heartbeat",
                "no listener has run here yet (no listener.json)",
                start,
            )];
        }
        BeatFile::Unreadable => {
            return vec![Check::warn(
                "heartbeat",
                "listener.json does not parse",
                format!("{start}; it writes the file afresh within 30 s"),
            )];
        }
        BeatFile::Beat(b, m) => (b, *m),
    };
    let host = if beat.host.is_empty() {
        "an unnamed host"
    } else {
        &beat.host
    };
    let who = format!(
        "{host}, instance {}, pid {}",
        if beat.instance.is_empty() {
            "unknown"
        } else {
            &beat.instance
        },
        beat.pid
    );
    let age = age_secs(&beat.heartbeat_at, now);
    let since = |a: Option<i64>| {
        a.and_then(|a| u64::try_from(a).ok())
            .map(Duration::from_secs)
    };
    let changed = modified.map(|m| (now - m).whole_seconds());
    let by_time = heartbeat::alive(&beat.state, since(age));
    let alive = heartbeat::seen_alive(&beat.state, since(age), since(changed));
    let mut checks = vec![match age {
        None => Check::warn(
            "heartbeat",
            format!("heartbeatAt {:?} is not a time ({who})", beat.heartbeat_at),
            start.clone(),
        ),
        // A stepped clock dates the beat off, while its file keeps changing.
        Some(_) if alive && !by_time => Check::ok(
            "heartbeat",
            format!(
                "{}, its file written {} ago, though it is dated {:?} by the listener's clock (see the clock check) ({who})",
                beat.state,
                human_secs(changed.unwrap_or(0)),
                beat.heartbeat_at
            ),
        ),
        Some(a) if a < 0 => Check::warn(
            "heartbeat",
            format!(
                "the heartbeat is dated {} in the future ({who})",
                human_secs(a)
            ),
            format!("set {host}'s clock (or this machine's) to network time"),
        ),
        Some(a) if beat.state == "stopped" => Check::warn(
            "heartbeat",
            format!("the listener stopped {} ago ({who})", human_secs(a)),
            start.clone(),
        ),
        Some(a) if !alive => Check::warn(
            "heartbeat",
            format!(
                "stale: the last heartbeat is {} old ({who}); a live listener writes one every {}s",
                human_secs(a),
                heartbeat::EVERY.as_secs()
            ),
            format!("is the listener running on {host}, and is the folder syncing? {start}"),
        ),
        Some(a) => Check::ok(
            "heartbeat",
            format!("{}, {} ago ({who})", beat.state, human_secs(a)),
        ),
    }];
    let theirs = Some(beat.key_fingerprint.as_str()).filter(|t| !t.is_empty());
    checks.push(match trust::compare(ours, theirs) {
        KeyIds::Unreported => Check::ok(
            "listener key",
            "the listener does not report its key fingerprint (an older version)",
        ),
        KeyIds::NoneHere(theirs) => Check::ok(
            "listener key",
            format!("fingerprint {theirs}; this machine has no key to compare"),
        ),
        KeyIds::Same(theirs) => {
            Check::ok("listener key", format!("fingerprint {theirs}, the same as ours"))
        }
        KeyIds::Differ { mine, theirs } => Check::warn(
            "listener key",
            format!(
                "the listener's key has fingerprint {theirs}, this machine's {mine}: jobs sent from here are rejected"
            ),
            "copy one key file to every machine (out of band), then restart the listener",
        ),
    });
    checks.push(match skew_secs(&beat.heartbeat_at, modified, now) {
        None => Check::ok("clock", "no estimate (the heartbeat's time does not parse)"),
        Some(s) if s.unsigned_abs() > SKEW_LIMIT.as_secs() => Check::warn(
            "clock",
            format!(
                "{host}'s clock is about {} {} (heartbeatAt against the file's modification time); the job age window and heartbeat ages depend on clocks",
                human_secs(s),
                if s > 0 { "ahead" } else { "behind" }
            ),
            format!("set both clocks to network time (Windows: `w32tm /resync`; Linux: enable timesyncd or chrony) on {host} and here"),
        ),
        Some(s) => Check::ok("clock", format!("within a minute (about {s}s)")),
    });
    match t.beat_verified {
        Some(true) => checks.push(Check::ok(
            "heartbeat signature",
            "signed with the fleet key",
        )),
        Some(false) => checks.push(Check::warn(
            "heartbeat signature",
            "listener.json is not signed with this machine's key: it is not trusted (a listener of an older version, one with another key, or a folder writer wrote it)",
            "upgrade the listener and give every machine one key; if that is so already, find who writes the folder",
        )),
        None => {}
    }
    checks
}

fn judge_queue(name: &str, s: &TargetStatus, now: OffsetDateTime) -> Check {
    let oldest = s
        .queued
        .iter()
        .filter_map(|q| age_secs(&q.created_at, now))
        .max();
    let mut msg = format!("{} queued", s.queued_count);
    if let Some(a) = oldest {
        msg.push_str(&format!(", the oldest signed {} ago", human_secs(a)));
    }
    if !s.running.is_empty() {
        msg.push_str(&format!(", {} running", s.running.len()));
    }
    if s.invalid_in_inbox > 0 {
        return Check::warn(
            "queue",
            format!(
                "{msg}; {} inbox file(s) are not valid jobs and will be rejected",
                s.invalid_in_inbox
            ),
            format!(
                "`fleet-dispatch status --target {name}` and archive/rejected/ say why, once the listener has judged them"
            ),
        );
    }
    // Jobs dated too far ahead wait for this clock (docs/protocol.md §6.3).
    if let Some(ahead) = s.queued.iter().filter_map(|q| q.ahead_sec).max() {
        let n = s.queued.iter().filter(|q| q.ahead_sec.is_some()).count();
        return Check::warn(
            "queue",
            format!(
                "{msg}; {n} deferred, the furthest {}",
                crate::protocol::accept::ahead_reason(Duration::from_secs(ahead))
            ),
            format!(
                "set the senders' clocks and {name}'s to network time (Windows: `w32tm /resync`; Linux: enable timesyncd or chrony); nothing is lost meanwhile"
            ),
        );
    }
    match oldest {
        Some(a) if a > OLD_QUEUED.as_secs() as i64 => Check::warn(
            "queue",
            msg,
            format!(
                "the queue is not moving: is {name}'s listener running? Jobs older than `listen --max-job-age` (7d by default) are refused"
            ),
        ),
        _ => Check::ok("queue", msg),
    }
}

fn judge_cancels(name: &str, s: &TargetStatus, due: Option<OffsetDateTime>) -> Check {
    if s.cancel_pending.is_empty() {
        return Check::ok("cancels", "none pending");
    }
    let list: Vec<String> = s
        .cancel_pending
        .iter()
        .map(|c| format!("{} ({})", c.job_id, c.job))
        .collect();
    let msg = format!("{} pending: {}", list.len(), list.join(", "));
    let forged: Vec<&str> = s
        .cancel_pending
        .iter()
        .filter_map(|c| c.ignored_result.as_deref())
        .collect();
    if !forged.is_empty() {
        return Check::warn(
            "cancels",
            format!("{msg}; ignored: {}", forged.join("; ")),
            format!(
                "a result that does not verify counts for nothing: the job is still to come, and {name}'s listener moves the file aside when it places the genuine result; find who writes the folder"
            ),
        );
    }
    if s.cancel_pending.iter().any(|c| c.job == "finished") {
        return Check::warn(
            "cancels",
            msg,
            format!(
                "markers for finished jobs are left over: `fleet-dispatch sweep --max-age 0 --target {name}` removes them now (it never takes the marker of a job still queued or running){}",
                due.map(|at| format!(
                    "; a plain daily `sweep` takes them from {}",
                    clock::format(at)
                ))
                .unwrap_or_default()
            ),
        );
    }
    Check::ok("cancels", msg)
}

fn judge_rejected(name: &str, rejected: &[(String, Reason)], ours: Option<&str>) -> Check {
    if rejected.is_empty() {
        return Check::ok("rejected", "none in the last day");
    }
    // Reasons by verdict, in the order first seen, with one message each.
    let mut by: Vec<(&str, usize, &str)> = Vec::new();
    for (_, r) in rejected {
        match by.iter_mut().find(|(v, _, _)| *v == r.verdict) {
            Some(e) => e.1 += 1,
            None => by.push((&r.verdict, 1, &r.message)),
        }
    }
    let reasons: Vec<String> = by
        .iter()
        .map(|(v, n, m)| format!("{v} ×{n} ({m})"))
        .collect();
    let other_key = rejected.iter().find_map(|(_, r)| {
        match trust::compare(ours, r.key_fingerprint.as_deref()) {
            KeyIds::Differ { theirs, .. } => Some(theirs),
            _ => None,
        }
    });
    let hint = match other_key {
        Some(theirs) => format!(
            "{name}'s listener judged with a key of fingerprint {theirs}, not ours: {COPY_ONE_KEY}"
        ),
        None => format!(
            "`fleet-dispatch status --target {name}` lists them; each has a .reason.json in archive/rejected/"
        ),
    };
    // Nothing removes a rejection's record before the retention: the check
    // says when it falls out of its window instead.
    let clears = rejected
        .iter()
        .filter_map(|(_, r)| clock::parse(&r.rejected_at))
        .max()
        .map(|at| {
            format!(
                "; once the cause is fixed, this check clears a day after the last rejection, at {}",
                clock::format(at + REJECTED_WINDOW)
            )
        })
        .unwrap_or_default();
    Check::warn(
        "rejected",
        format!(
            "{} file(s) rejected in the last day: {}",
            rejected.len(),
            reasons.join("; ")
        ),
        format!("{hint}{clears}"),
    )
}

fn judge_counts(name: &str, counts: &[(String, usize)], prunable: usize, limit: usize) -> Check {
    let total: usize = counts.iter().map(|(_, n)| n).sum();
    let mut over: Vec<String> = counts
        .iter()
        .filter(|(_, n)| *n >= limit)
        .map(|(f, n)| format!("{f} holds {n}"))
        .collect();
    if over.is_empty() && total >= limit {
        over.push(format!("{total} in all"));
    }
    let busiest = counts
        .iter()
        .max_by_key(|(_, n)| *n)
        .map(|(f, n)| format!(", most in {f} ({n})"))
        .unwrap_or_default();
    let freed = if prunable > 0 {
        format!("; `sweep` would free {prunable}")
    } else {
        String::new()
    };
    if over.is_empty() {
        return Check::ok("files", format!("{total} in all{busiest}{freed}"));
    }
    Check::warn(
        "files",
        format!(
            "{}: sync engines slow down past {limit} files in a folder{freed}",
            over.join(", ")
        ),
        format!(
            "run `fleet-dispatch sweep --target {name}` (daily from cron or Task Scheduler; a shorter --retention frees more)"
        ),
    )
}

fn judge_conflicts(name: &str, found: &[(String, Engine)]) -> Check {
    if found.is_empty() {
        return Check::ok("conflicts", "no conflict copies");
    }
    let shown: Vec<String> = found
        .iter()
        .take(5)
        .map(|(p, e)| format!("{p} ({})", e.name()))
        .collect();
    let more = if found.len() > 5 {
        format!(" and {} more", found.len() - 5)
    } else {
        String::new()
    };
    Check::warn(
        "conflicts",
        format!(
            "{} conflict copies: {}{more}",
            found.len(),
            shown.join(", ")
        ),
        format!(
            "two machines wrote one name: is a second listener serving {name}, or a machine's clock or sync stuck? Readers ignore the copies; delete them once the original is right"
        ),
    )
}

/// The engine whose conflict-copy naming `name` follows, if any:
/// Syncthing's `.sync-conflict-`, Dropbox's `conflicted copy` and `(Case
/// Conflict)`, OneDrive's `<stem>-<HOST>.<ext>` (the Linux client's
/// `-<host>-safeBackup-<n>`), where `HOST` is one of `hosts`, the fleet's
/// machine names (any case). A job id that happens to end in a machine
/// name (`--job-id build-PC`) reads as OneDrive's copy too; the check
/// says "conflict copies", and the listener treats both alike.
pub fn conflict_copy(name: &str, hosts: &[String]) -> Option<Engine> {
    if name.contains(".sync-conflict-") {
        return Some(Engine::Syncthing);
    }
    if name.contains("conflicted copy") || name.contains("(Case Conflict)") {
        return Some(Engine::Dropbox);
    }
    if name.contains("-safeBackup-") {
        return Some(Engine::OneDrive);
    }
    let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
    let (before, host) = stem.rsplit_once('-')?;
    (!before.is_empty() && hosts.iter().any(|h| h.eq_ignore_ascii_case(host)))
        .then_some(Engine::OneDrive)
}

// ---------------------------------------------------------------------------
// Local state
// ---------------------------------------------------------------------------
