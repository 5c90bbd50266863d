//! The dependency rule (docs/protocol.md §7.13): may a job whose signed spec
//! names jobs it waits for (`after`) start now, wait, or end without
//! running?
//!
//! A pure verdict over what the listener found of each job waited for; the
//! finding itself (verified results, rejections, in this target's folder
//! or another's) is the listener's. Only a result that verifies counts as
//! an ending, so a folder writer without the key cannot make a job start
//! early: a forged or garbled result reads as "not there", and the job
//! waits (until its age runs out, when it goes `stale` like any job).

use std::collections::BTreeMap;

use crate::base::error::{Error, Result};
use crate::base::names::{JobId, Machine};
use crate::protocol::doc::detail::DependencySeen;
use crate::protocol::doc::job::{After, MAX_AFTER};
use crate::protocol::doc::{Outcome, Termination};

/// An `--after` value, `[TARGET:]ID`, checked; the target is `None` when
/// the job's own is meant.
pub type Named = (Option<Machine>, JobId);

/// Parses `after` values (`[TARGET:]ID`), at most [`MAX_AFTER`], given as
/// `field` (`--after`, or a batch line's `"after"`); `VALIDATION_ERROR`
/// names the field and the bad value.
pub fn parse(texts: &[String], field: &str) -> Result<Vec<Named>> {
    if texts.len() > MAX_AFTER {
        return Err(Error::validation(format!(
            "{field} names {} jobs; a job waits for at most {MAX_AFTER} jobs",
            texts.len()
        )));
    }
    texts
        .iter()
        .map(|text| {
            let bad = |why: String| {
                Error::validation(format!("{field} {text:?}: {why}"))
                    .hint("write the job id, or TARGET:ID for a job of another target")
            };
            let (target, id) = match text.split_once(':') {
                Some((t, id)) => (
                    Some(
                        Machine::parse(t, "target")
                            .map_err(|_| bad(format!("{t:?} is not a valid target name")))?,
                    ),
                    id,
                ),
                None => (None, text.as_str()),
            };
            let id = JobId::parse(id).map_err(|_| {
                bad(format!(
                    "{id:?} is not a valid job id (1 to 64 letters, digits or '-')"
                ))
            })?;
            Ok((target, id))
        })
        .collect()
}

/// The `after` list of job `id` on `target` from checked values given as
/// `field`: a value without a target names `target`, so each copy of a
/// fanned-out job waits for the job of that id on its own target. A job
/// named twice, or the job itself, is `VALIDATION_ERROR` naming `field`.
pub fn bind(named: &[Named], target: &Machine, id: &JobId, field: &str) -> Result<Vec<After>> {
    let mut out: Vec<After> = Vec::with_capacity(named.len());
    for (t, job_id) in named {
        let after = After {
            target: t.clone().unwrap_or_else(|| target.clone()),
            job_id: job_id.clone(),
        };
        if after.names(target.as_str(), id.as_str()) {
            return Err(Error::validation(format!(
                "{field} {after}: a job cannot wait for itself"
            )));
        }
        if out
            .iter()
            .any(|a| a.names(after.target.as_str(), after.job_id.as_str()))
        {
            return Err(Error::validation(format!("{field} {after} is given twice")));
        }
        out.push(after);
    }
    Ok(out)
}

/// A job as [`cycle`] compares them: its target (without case, as target
/// folders are) and its id.
pub type Node = (String, String);

/// The [`Node`] of job `id` on `target`.
pub fn node(target: &str, id: &str) -> Node {
    (target.to_ascii_lowercase(), id.to_string())
}

/// A cycle of `after` among `jobs` (each job and the jobs it waits for),
/// which could never start: the indices into `jobs` in the order each
/// waits for the next, the first repeated at the end; `None` when there is
/// none. A job outside `jobs` closes no cycle. Iterative depth-first
/// search, linear in jobs and `after` entries.
pub fn cycle(jobs: &[(Node, Vec<Node>)]) -> Option<Vec<usize>> {
    let index: BTreeMap<&Node, usize> = jobs.iter().enumerate().map(|(i, j)| (&j.0, i)).collect();
    let edges: Vec<Vec<usize>> = jobs
        .iter()
        .map(|(_, after)| after.iter().filter_map(|a| index.get(a).copied()).collect())
        .collect();
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    let mut mark = vec![Mark::New; jobs.len()];
    for start in 0..jobs.len() {
        if mark[start] != Mark::New {
            continue;
        }
        // Each job on the path with the next of its edges to follow.
        let mut path = vec![(start, 0)];
        mark[start] = Mark::OnPath;
        while let Some((v, next)) = path.last_mut() {
            let v = *v;
            let Some(&w) = edges[v].get(*next) else {
                mark[v] = Mark::Done;
                path.pop();
                continue;
            };
            *next += 1;
            match mark[w] {
                Mark::New => {
                    mark[w] = Mark::OnPath;
                    path.push((w, 0));
                }
                Mark::OnPath => {
                    let from = path.iter().position(|(u, _)| *u == w)?;
                    let mut ring: Vec<usize> = path[from..].iter().map(|(u, _)| *u).collect();
                    ring.push(w);
                    return Some(ring);
                }
                Mark::Done => {}
            }
        }
    }
    None
}

/// What the listener found of one job waited for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// No verified result and no rejection: not run yet, not synced yet, or
    /// never sent. The job waits.
    Unseen,
    /// A verified result: how it ended.
    Ended {
        /// Its `ok`.
        ok: bool,
        /// Its `error` word.
        how: Termination,
        /// Its `exitCode`.
        exit_code: i64,
    },
    /// Its target refused its job file, with this verdict word; it will
    /// never run.
    Rejected(String),
}

impl Found {
    /// The ending a verified result `o` tells.
    pub fn ended(o: &Outcome) -> Found {
        Found::Ended {
            ok: o.ok,
            how: o.termination(),
            exit_code: o.exit_code,
        }
    }

    /// How it ended, in the words of a `dependency-failed` detail; `None`
    /// while it has not.
    pub fn ending(&self) -> Option<String> {
        match self {
            Found::Unseen => None,
            Found::Ended {
                how: Termination::Exited,
                ok,
                exit_code,
            } => Some(if *ok {
                "done".to_string()
            } else if *exit_code >= 0 {
                format!("failed (exit {exit_code})")
            } else {
                "failed".to_string()
            }),
            Found::Ended { how, .. } => Some(how.as_str().to_string()),
            Found::Rejected(verdict) => Some(format!("rejected ({verdict})")),
        }
    }
}

/// The rule's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every job waited for ended as required: start it.
    Run,
    /// These have not ended yet: leave it queued (jobs behind it may run).
    Hold(Vec<After>),
    /// This one ended otherwise: end it, unstarted, with `dependency-failed`.
    Fail(DependencySeen),
}

/// The verdict for a job waiting for `deps` (in its `after` order, each with
/// what was found of it). By default each must have succeeded (`ok`), and
/// the first that did not decides at once, even while others still run;
/// with `after_any` any signed ending will do. A refusal never releases a
/// job, even with `after_any`: it is read from a reason file, which is
/// unsigned, so a folder writer could forge one for a job that has not run
/// (or is still on its way); it ends the job `dependency-failed`, a denial
/// such a writer could cause by deleting the job file anyway.
pub fn decide(after_any: bool, deps: &[(After, Found)]) -> Verdict {
    let mut waiting = Vec::new();
    for (after, found) in deps {
        match found {
            Found::Unseen => waiting.push(after.clone()),
            Found::Ended { ok: true, .. } => {}
            Found::Ended { .. } if after_any => {}
            other => {
                return Verdict::Fail(DependencySeen {
                    ended: other.ending().unwrap_or_default(),
                    job_id: after.job_id.to_string(),
                    target: after.target.to_string(),
                });
            }
        }
    }
    if waiting.is_empty() {
        Verdict::Run
    } else {
        Verdict::Hold(waiting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::names::{JobId, Machine};

    fn w(job: &str, after: &[&str]) -> (Node, Vec<Node>) {
        (
            node("PC", job),
            after.iter().map(|a| node("pc", a)).collect(),
        )
    }

    #[test]
    fn cycles_among_the_batch_are_found_and_chains_are_not() {
        let chain = [w("a", &[]), w("b", &["a"]), w("c", &["b", "a", "x"])];
        assert_eq!(cycle(&chain), None);
        let ring = [w("a", &["c"]), w("b", &["a"]), w("c", &["b"])];
        let found = cycle(&ring).unwrap();
        assert_eq!(found.len(), 4);
        assert_eq!(found.first(), found.last());
        let pair = [w("x", &[]), w("c1", &["c2"]), w("c2", &["c1"])];
        assert_eq!(cycle(&pair), Some(vec![1, 2, 1]));
    }

    fn dep(target: &str, id: &str) -> After {
        After {
            target: Machine::parse(target, "target").unwrap(),
            job_id: JobId::parse(id).unwrap(),
        }
    }

    fn ended(ok: bool, how: Termination, exit_code: i64) -> Found {
        Found::Ended { ok, how, exit_code }
    }

    const DONE: Found = Found::Ended {
        ok: true,
        how: Termination::Exited,
        exit_code: 0,
    };

    #[test]
    fn flags_take_an_id_or_target_and_id() {
        let named = parse(&["a-1".into(), "BUILD:b-2".into()], "--after").unwrap();
        let pc = Machine::parse("PC", "target").unwrap();
        let me = JobId::parse("me").unwrap();
        let list = bind(&named, &pc, &me, "--after").unwrap();
        assert_eq!(list, [dep("PC", "a-1"), dep("BUILD", "b-2")]);
        for bad in ["", "../x", "BUILD:", ":x", "a/b:x", "CON:x", "A:B:C"] {
            let e = parse(&[bad.to_string()], "\"after\"").unwrap_err();
            assert_eq!(e.code, crate::base::error::Code::Validation, "{bad}");
            let said = e.to_string();
            assert!(said.contains(&format!("\"after\" {bad:?}")), "{bad}: {e}");
        }
        let many: Vec<String> = (0..=MAX_AFTER).map(|i| format!("j-{i}")).collect();
        assert!(parse(&many, "--after").is_err());
        let itself = parse(&["pc:me".into()], "--after").unwrap();
        assert!(bind(&itself, &pc, &me, "--after").is_err());
        let twice = parse(&["x".into(), "PC:x".into()], "--after").unwrap();
        assert!(bind(&twice, &pc, &me, "--after").is_err());
    }

    #[test]
    fn a_bare_id_binds_to_each_copys_own_target_and_a_named_one_to_its_own() {
        let named = parse(&["tests".into(), "BUILD:b".into()], "--after").unwrap();
        let me = JobId::parse("me").unwrap();
        for t in ["A", "B"] {
            let target = Machine::parse(t, "target").unwrap();
            let list = bind(&named, &target, &me, "--after").unwrap();
            assert_eq!(list, [dep(t, "tests"), dep("BUILD", "b")]);
        }
        // On BUILD itself the bare id and BUILD:me would be the job itself.
        let build = Machine::parse("BUILD", "target").unwrap();
        let itself = parse(&["BUILD:me".into()], "--after").unwrap();
        let e = bind(&itself, &build, &me, "--after").unwrap_err();
        assert!(e.to_string().contains("--after BUILD:me"), "{e}");
    }

    #[test]
    fn no_dependencies_run() {
        assert_eq!(decide(false, &[]), Verdict::Run);
        assert_eq!(decide(true, &[]), Verdict::Run);
    }

    #[test]
    fn every_success_runs_and_an_unseen_one_holds() {
        let a = dep("BUILD", "a");
        let b = dep("PC", "b");
        assert_eq!(
            decide(false, &[(a.clone(), DONE), (b.clone(), DONE)]),
            Verdict::Run
        );
        assert_eq!(
            decide(false, &[(a.clone(), DONE), (b.clone(), Found::Unseen)]),
            Verdict::Hold(vec![b.clone()])
        );
        assert_eq!(
            decide(
                true,
                &[(a.clone(), Found::Unseen), (b.clone(), Found::Unseen)]
            ),
            Verdict::Hold(vec![a, b])
        );
    }

    #[test]
    fn a_failure_fails_at_once_naming_it_and_how() {
        let a = dep("BUILD", "a");
        let b = dep("PC", "b");
        let cases = [
            (ended(false, Termination::Exited, 3), "failed (exit 3)"),
            (ended(false, Termination::Exited, -1), "failed"),
            (ended(false, Termination::Cancelled, -1), "cancelled"),
            (
                ended(false, Termination::CancelledBeforeStart, -1),
                "cancelled-before-start",
            ),
            (ended(false, Termination::Timeout, -1), "timeout"),
            (ended(false, Termination::Interrupted, -1), "interrupted"),
            (
                ended(false, Termination::DependencyFailed, -1),
                "dependency-failed",
            ),
            (Found::Rejected("stale".into()), "rejected (stale)"),
        ];
        for (found, word) in cases {
            // Decided even while another dependency has not ended.
            let v = decide(false, &[(a.clone(), Found::Unseen), (b.clone(), found)]);
            assert_eq!(
                v,
                Verdict::Fail(DependencySeen {
                    ended: word.into(),
                    job_id: "b".into(),
                    target: "PC".into(),
                }),
                "{word}"
            );
        }
    }

    #[test]
    fn after_any_takes_any_signed_ending_but_still_waits_for_each() {
        let a = dep("BUILD", "a");
        let b = dep("PC", "b");
        let failed = ended(false, Termination::Exited, 1);
        let cancelled = ended(false, Termination::Cancelled, -1);
        assert_eq!(
            decide(true, &[(a.clone(), failed.clone()), (b.clone(), cancelled)]),
            Verdict::Run
        );
        // A refusal is an unsigned file's word: it fails the job, never
        // releases it.
        let rejected = Found::Rejected("stale".into());
        assert_eq!(
            decide(true, &[(a.clone(), failed.clone()), (b.clone(), rejected)]),
            Verdict::Fail(DependencySeen {
                ended: "rejected (stale)".into(),
                job_id: "b".into(),
                target: "PC".into(),
            })
        );
        assert_eq!(
            decide(true, &[(a, failed), (b.clone(), Found::Unseen)]),
            Verdict::Hold(vec![b])
        );
    }
}
