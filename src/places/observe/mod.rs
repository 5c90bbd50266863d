//! What the folder says about one job, as seen from any machine: done (a
//! verified result), running, queued, rejected by the target's listener, or
//! not seen yet (sync may lag). The
//! one answer to "what state is this job in?", for `result`, `cancel`,
//! `enqueue --interrupt`, the waiting loop, `status` and the HTTP intake;
//! for a job still waiting, what holds it ([`hold`]) and whether a cancel
//! of it is pending ([`cancel_pending`]); [`target()`] looks at a whole
//! target the same way.

mod target;

pub use target::{
    GovernorHold, History, ListenerState, RecentResult, TargetStatus, killed_with_listener, target,
};

use crate::base::names::JobId;
use crate::places::rejected::{self, Reason};
use crate::protocol::accept;
use crate::protocol::dependency::Found;
use crate::protocol::doc::job::After;
use crate::protocol::doc::{Job, Marker, Outcome};
use crate::store::fsops::Dir;
use crate::store::layout::{Place, TargetDirs};
use crate::trust::{self, COPY_ONE_KEY, Key, KeyIds};

/// A job's state as observed in the folder.
#[derive(Clone, Debug, PartialEq)]
pub enum Observed {
    /// A result that verifies.
    Done(Box<Outcome>),
    /// A result file that does not verify (forged or damaged), and nothing
    /// else of the job: it is neither queued, running nor rejected.
    ForgedResult(Box<Forged>),
    /// The listener runs it now.
    Running,
    /// It waits in the inbox.
    Queued,
    /// The target's listener refused a file by its name, and why.
    Rejected(Box<Reason>),
    /// Nothing of it here yet.
    NotSeen,
}

impl Observed {
    /// The word used in output.
    pub fn word(&self) -> &'static str {
        match self {
            Observed::Done(_) => "done",
            Observed::ForgedResult(_) => "result does not verify",
            Observed::Running => "running",
            Observed::Queued => "queued",
            Observed::Rejected(_) => "rejected",
            Observed::NotSeen => "not seen yet",
        }
    }
}

/// What a job not seen yet is to whoever asks about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unseen {
    /// Not there: `NOT_FOUND` (a command that looks once).
    Missing,
    /// Not there yet, as sync may lag: unfinished (a wait, the HTTP intake).
    Pending,
}

/// A job without a result to show, as [`Observed::answer`] finds it; `W`
/// is what is known of an unfinished job (its state, or more).
#[derive(Debug)]
pub enum NoResult<W = Observed> {
    /// Its target's listener rejected it.
    Rejected(Box<Reason>),
    /// Still queued or running, or not seen where sync may lag.
    Unfinished(W),
}

impl<W> NoResult<W> {
    /// The exit status that says so: [`crate::base::exit::REJECTED`] or
    /// [`crate::base::exit::UNFINISHED`].
    pub fn exit_status(&self) -> u8 {
        match self {
            NoResult::Rejected(_) => crate::base::exit::REJECTED,
            NoResult::Unfinished(_) => crate::base::exit::UNFINISHED,
        }
    }

    /// The same, with what is known of an unfinished job replaced by `f`'s.
    pub fn map<V>(self, f: impl FnOnce(W) -> V) -> NoResult<V> {
        match self {
            NoResult::Rejected(r) => NoResult::Rejected(r),
            NoResult::Unfinished(w) => NoResult::Unfinished(f(w)),
        }
    }
}

/// A job's verified result, or why it has none: what [`Observed::answer`]
/// makes of a state that is no refusal.
pub type Answered<W = Observed> = Result<Box<Outcome>, NoResult<W>>;

impl Observed {
    /// The one mapping from what was observed of `id` on `dirs`' target to
    /// what a command or the HTTP intake answers: the verified result
    /// (whose exit status is [`Outcome::wait_exit_status`]), or why there
    /// is none ([`NoResult::exit_status`]).
    ///
    /// # Errors
    ///
    /// `FORBIDDEN` for a result that does not verify with nothing else of
    /// the job there ([`Forged::refusal`]); `NOT_FOUND` for a job not seen
    /// when `unseen` is [`Unseen::Missing`]. Their exit statuses follow
    /// from the code ([`crate::base::exit::of`]).
    pub fn answer(
        self,
        dirs: &TargetDirs,
        id: &JobId,
        unseen: Unseen,
    ) -> crate::base::error::Result<Answered> {
        match self {
            Observed::Done(o) => Ok(Ok(o)),
            Observed::ForgedResult(forged) => Err(forged.refusal(id)),
            Observed::Rejected(r) => Ok(Err(NoResult::Rejected(r))),
            Observed::NotSeen if unseen == Unseen::Missing => Err(crate::base::error::Error::not_found(
                format!(
                    "no job {id} on {} yet (not in its inbox, running or results)",
                    dirs.target()
                ),
            )
            .hint("sync may lag: add --wait to wait for it; a job older than the retention (30 days by default) may have been pruned by `sweep`")),
            seen => Ok(Err(NoResult::Unfinished(seen))),
        }
    }
}

/// A result file that does not verify: whose it is, and why it fails.
#[derive(Clone, Debug, PartialEq)]
pub struct Forged {
    /// The file, as shown to a reader.
    pub file: String,
    /// Its verdict and the reason.
    pub why: String,
}

impl Forged {
    /// The result file shown to a reader as `file`, refused with `r`.
    pub fn new(file: impl Into<String>, r: &accept::Rejection) -> Forged {
        Forged {
            file: file.into(),
            why: format!("{}: {}", r.verdict.as_str(), r.message),
        }
    }

    /// The warning for this file of `id`'s, ignored because the job is
    /// still `seen`.
    pub fn note(&self, id: &JobId, seen: &Observed) -> String {
        format!(
            "warning: {self}; it is ignored: {id} is {} (a folder writer's file, or a damaged one)",
            seen.word()
        )
    }

    /// The refusal when this file is all there is of `id`: it is never
    /// shown as a result.
    pub fn refusal(&self, id: &JobId) -> crate::base::error::Error {
        Forged::refused(format!("the result for {id}, {self}; it is not shown"))
    }

    /// The refusal when `url` answers that `id` already finished with this
    /// result (its file named as the one "it sent").
    pub fn refusal_sent_by(
        &self,
        url: &dyn std::fmt::Display,
        id: &JobId,
    ) -> crate::base::error::Error {
        Forged::refused(format!("{url} says {id} already finished, but {self}"))
    }

    /// The one answer to a result that does not verify: `FORBIDDEN`, whose
    /// exit status ([`crate::base::exit::of`]) and HTTP status follow from the code.
    fn refused(message: String) -> crate::base::error::Error {
        crate::base::error::Error::forbidden(message)
    }
}

impl std::fmt::Display for Forged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} does not verify ({})", self.file, self.why)
    }
}

/// What a look at one job saw: its state, and a result file that does not
/// verify which the state was not taken from.
#[derive(Clone, Debug, PartialEq)]
pub struct Look {
    /// The job's state.
    pub state: Observed,
    /// A forged or damaged result of a job that is still queued, running
    /// or rejected: reported, and otherwise ignored (docs/protocol.md
    /// §6.4), so a folder writer can neither end a wait nor make a view
    /// call the job finished.
    pub ignored: Option<Forged>,
}

/// Looks at `id` under `dirs`: [`look`]'s state.
///
/// # Errors
///
/// As [`look`].
pub fn job(dirs: &TargetDirs, id: &JobId, key: &Key) -> crate::base::error::Result<Observed> {
    Ok(look(dirs, id, key)?.state)
}

/// Looks at `id` under `dirs`. A verified result is the job's end; a
/// result that does not verify counts only when nothing else of the job
/// is there ([`Observed::ForgedResult`]): beside a job still queued,
/// running or rejected it is set apart in [`Look::ignored`].
///
/// # Errors
///
/// `FORBIDDEN` when `results/`, `running/` or `inbox/` is a link or a
/// file: a job whose state is behind a link no command follows must not be
/// called "not seen yet" (docs/protocol.md §3.5: commands refuse a link
/// where a folder belongs).
pub fn look(dirs: &TargetDirs, id: &JobId, key: &Key) -> crate::base::error::Result<Look> {
    let forged = match result(dirs, id, key)? {
        Some(Ok(o)) => return Ok(Look::of(Observed::Done(o))),
        Some(Err(f)) => f,
        None => return Ok(Look::of(pending(dirs, id)?)),
    };
    Ok(match pending(dirs, id)? {
        // The job may have ended between the two looks: the listener
        // places its result before its file leaves the inbox, so a second
        // read finds the genuine one if there is one.
        Observed::NotSeen => Look::of(match result(dirs, id, key)? {
            Some(Ok(o)) => Observed::Done(o),
            Some(Err(f)) => Observed::ForgedResult(Box::new(f)),
            None => Observed::NotSeen,
        }),
        state => Look {
            state,
            ignored: Some(forged),
        },
    })
}

impl Look {
    fn of(state: Observed) -> Look {
        Look {
            state,
            ignored: None,
        }
    }
}

/// `results/<id>.json`, judged ([`crate::protocol::judge::result`]): `None` when
/// there is none.
fn result(
    dirs: &TargetDirs,
    id: &JobId,
    key: &Key,
) -> crate::base::error::Result<Option<std::result::Result<Box<Outcome>, Forged>>> {
    let Some(results) = dirs.open(Place::Results)? else {
        return Ok(None);
    };
    Ok(
        match crate::protocol::judge::result(&results, id, dirs.target().as_str(), key) {
            Err(r) if r.verdict == accept::Verdict::Missing => None,
            judged => Some(
                judged
                    .map(Box::new)
                    .map_err(|r| Forged::new(dirs.result_file(id).display().to_string(), &r)),
            ),
        },
    )
}

/// The job's state apart from its result: running, queued, rejected or
/// not seen.
fn pending(dirs: &TargetDirs, id: &JobId) -> crate::base::error::Result<Observed> {
    let name = id.file_name();
    let there = |p: Place| -> crate::base::error::Result<bool> {
        Ok(dirs.open(p)?.is_some_and(|d| d.exists(&name)))
    };
    Ok(if there(Place::Running)? {
        Observed::Running
    } else if there(Place::Inbox)? {
        Observed::Queued
    } else if let Some(reason) = rejected::find_job_rejection(dirs, id) {
        Observed::Rejected(Box::new(reason))
    } else {
        Observed::NotSeen
    })
}

/// What became of the job `a` names, which a job of `dirs`' target waits
/// for ([`crate::protocol::dependency`]): only a verified result is an ending, and a
/// refusal by its target (other than as a replay, whose first run's result
/// decides) once it is no longer queued there. Another target's folder is
/// found in the same root ([`TargetDirs::sibling`]) and only read.
pub fn dependency(dirs: &TargetDirs, a: &After, key: &Key) -> Found {
    let other;
    let dirs = if a.target.same(dirs.target().as_str()) {
        dirs
    } else {
        match dirs.sibling(&a.target) {
            Ok(Some(d)) => {
                other = d;
                &other
            }
            _ => return Found::Unseen,
        }
    };
    // A folder that is a link holds nothing that counts (§7.13).
    match job(dirs, &a.job_id, key) {
        Ok(Observed::Done(o)) => Found::ended(&o),
        Ok(Observed::Rejected(r)) if r.verdict != accept::Verdict::AlreadyProcessed.as_str() => {
            Found::Rejected(r.verdict)
        }
        _ => Found::Unseen,
    }
}

/// The jobs `job` (queued on `dirs`' target) still waits for; empty when
/// it waits for none, or may start or end now.
pub fn waits_for(dirs: &TargetDirs, job: &Job, key: &Key) -> Vec<After> {
    if job.header().after.is_empty() {
        return Vec::new();
    }
    let found: Vec<(After, Found)> = job
        .header()
        .after
        .iter()
        .map(|a| (a.clone(), dependency(dirs, a, key)))
        .collect();
    match crate::protocol::dependency::decide(job.header().after_any, &found) {
        crate::protocol::dependency::Verdict::Hold(waiting) => waiting,
        _ => Vec::new(),
    }
}

/// What the queued job `id` of `dirs`' target still waits for ([`waits_for`]);
/// empty when its file is not there or not a valid job.
pub fn held_on(dirs: &TargetDirs, id: &JobId, key: &Key) -> Vec<After> {
    let Some(inbox) = open(dirs, Place::Inbox) else {
        return Vec::new();
    };
    match crate::protocol::judge::job(&inbox, id, dirs.target().as_str(), key) {
        Ok(job) => waits_for(dirs, &job, key),
        Err(_) => Vec::new(),
    }
}

/// The verified cancel marker for `id` in `dirs`' `cancel/`, if there is
/// one: while the job has no result, a cancel its listener has not acted
/// on yet. A file there that does not verify asks nothing.
pub fn cancel_pending(dirs: &TargetDirs, id: &JobId, key: &Key) -> Option<Marker> {
    let cancel = open(dirs, Place::Cancel)?;
    crate::protocol::judge::marker(&cancel, id, dirs.target().as_str(), key).ok()
}

/// What keeps a queued job from starting, as this machine sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum Hold {
    /// It waits for these jobs to end (docs/protocol.md §7.13).
    After(Vec<After>),
    /// It is dated this far ahead of this machine's clock, beyond the skew
    /// allowed ([`accept::MAX_AHEAD`]): deferred until the clock catches up.
    Deferred(std::time::Duration),
    /// It may start, after the jobs running now and those queued before it
    /// that may start too.
    Behind {
        /// Jobs running now.
        running: usize,
        /// Jobs queued before it in drain order, neither held nor deferred.
        queued: usize,
    },
}

/// What holds the queued job `id` of `dirs`' target ([`Hold`]); `None`
/// when its file is not in the inbox or is not a valid job. Costs a read
/// of every queued job, as `status` does.
pub fn hold(dirs: &TargetDirs, id: &JobId, key: &Key) -> Option<Hold> {
    let inbox = open(dirs, Place::Inbox)?;
    let job = crate::protocol::judge::job(&inbox, id, dirs.target().as_str(), key).ok()?;
    let after = waits_for(dirs, &job, key);
    if !after.is_empty() {
        return Some(Hold::After(after));
    }
    if let Some(ahead) = accept::ahead(job.created, crate::base::clock::now()) {
        return Some(Hold::Deferred(ahead));
    }
    let (running, queued) = target::ahead_of(dirs, key, &job);
    Some(Hold::Behind { running, queued })
}

/// The folder of `place`, opened without following links; `None` when it
/// is missing, or a link or a file (which the listener moves aside).
fn open(dirs: &TargetDirs, place: Place) -> Option<Dir> {
    dirs.open(place).ok().flatten()
}

/// What to tell the sender of `id` whose job file the listener of `dirs`
/// rejected with `reason`; `key` is the sender's, so a signature refused
/// because the two keys differ says so.
pub fn rejection_sentence(dirs: &TargetDirs, id: &JobId, reason: &Reason, key: &Key) -> String {
    let mut s = format!(
        "{id} was rejected by {} at {}: {} ({})",
        dirs.target(),
        reason.rejected_at,
        reason.verdict,
        reason.message
    );
    let mine = key.key_id();
    if let KeyIds::Differ { mine, theirs } =
        trust::compare(Some(&mine), reason.key_fingerprint.as_deref())
    {
        s.push_str(&format!(
            "; this machine's key has fingerprint {mine}, {}'s has {theirs}: the keys differ, {COPY_ONE_KEY}",
            dirs.target()
        ));
    }
    s.push_str("; it will not run");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::error::Code;
    use crate::protocol::accept::{Rejection, Verdict};

    fn forged(file: &str) -> Forged {
        let r = Rejection::new(Verdict::BadSignature, "edited");
        Forged::new(file, &r)
    }

    #[test]
    fn what_was_observed_is_answered_with_one_code_and_exit_status() {
        use crate::base::exit;
        let dirs = TargetDirs::new(
            std::path::Path::new("/nowhere"),
            &crate::base::names::Machine::parse("PC", "target").unwrap(),
        );
        let id = JobId::parse("20261129-193000-9f2c4e1ab37d5c08").unwrap();
        let key = Key::from_bytes(&[1u8; 32]).unwrap();
        let o = Outcome::unsigned(
            id.as_str(),
            "PC",
            crate::protocol::doc::Termination::Exited,
            Some(3),
            Some("s"),
            "f",
            &crate::protocol::doc::Detail::default(),
        )
        .signed(&key);
        let reason: Reason = serde_json::from_value(serde_json::json!({
            "message": "m", "rejectedAt": "t", "target": "PC", "verdict": "stale"
        }))
        .unwrap();
        let status = |seen: Observed, unseen| match seen.answer(&dirs, &id, unseen) {
            Ok(Ok(o)) => (None, o.wait_exit_status()),
            Ok(Err(no)) => (None, no.exit_status()),
            Err(e) => (Some(e.code), exit::of(e.code)),
        };
        for unseen in [Unseen::Missing, Unseen::Pending] {
            let done = Observed::Done(Box::new(o.clone()));
            assert_eq!(status(done, unseen), (None, 3));
            let forged = Observed::ForgedResult(Box::new(forged("results/x.json")));
            assert_eq!(
                status(forged, unseen),
                (Some(Code::Forbidden), exit::FORBIDDEN)
            );
            let rejected = Observed::Rejected(Box::new(reason.clone()));
            assert_eq!(status(rejected, unseen), (None, exit::REJECTED));
            assert_eq!(status(Observed::Queued, unseen), (None, exit::UNFINISHED));
            assert_eq!(status(Observed::Running, unseen), (None, exit::UNFINISHED));
        }
        // A job not seen is missing to a look, and pending to a wait.
        let e = Observed::NotSeen
            .answer(&dirs, &id, Unseen::Missing)
            .unwrap_err();
        assert_eq!(
            (e.code, exit::of(e.code)),
            (Code::NotFound, exit::NOT_FOUND)
        );
        assert_eq!(
            e.message,
            format!("no job {id} on PC yet (not in its inbox, running or results)")
        );
        assert!(matches!(
            Observed::NotSeen.answer(&dirs, &id, Unseen::Pending),
            Ok(Err(NoResult::Unfinished(Observed::NotSeen)))
        ));
    }

    #[test]
    fn a_result_that_does_not_verify_is_forbidden_naming_the_file_and_why() {
        let id = JobId::parse("20261129-193000-9f2c4e1ab37d5c08").unwrap();
        let e = forged("results/x.json").refusal(&id);
        assert_eq!(e.code, Code::Forbidden);
        assert_eq!(crate::base::exit::of(e.code), crate::base::exit::FORBIDDEN);
        assert_eq!(
            e.message,
            format!(
                "the result for {id}, results/x.json does not verify (bad-signature: edited); it is not shown"
            )
        );
        let e = forged("the result it sent").refusal_sent_by(&"http://pc:7070", &id);
        assert_eq!(e.code, Code::Forbidden);
        assert_eq!(
            e.message,
            format!(
                "http://pc:7070 says {id} already finished, but the result it sent does not verify (bad-signature: edited)"
            )
        );
    }
}
