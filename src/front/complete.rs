//! Shell completion, answered by the binary itself: the scripts in
//! `completions/` only hand the words typed so far to
//! `FLEET_DISPATCH_COMPLETE=<shell> fleet-dispatch -- <words>`, and this
//! module answers from the one clap definition in [`crate::front::cli`]. So
//! subcommands, options and fixed values (every value enum) complete exactly
//! as the binary parses them, a new subcommand or flag completes with no
//! extra work, and values that live in the shared folder complete too:
//!
//! - an option with the id `target` (`--target` of any command): the target
//!   folders under the root; after a comma (`--target PC,`), the targets
//!   the list does not name yet, each after the list typed so far;
//! - an option with the id `job_id` or `interrupt`: the job ids on the
//!   target typed on the same line (or on every target when none is typed
//!   yet), newest first (the scripts keep the order): queued and running
//!   ones only where a finished job has nothing to stop (`cancel`,
//!   `--interrupt`), finished ones too elsewhere; there, the names that
//!   are no id come first (`running` for `--interrupt`, and `last`).
//!
//! The root, config file and variables are read as the command being typed
//! would read them (a `--root` already on the line counts). Completion never
//! creates, locks or changes anything; a root that cannot be read completes
//! nothing.

use std::ffi::OsString;
use std::path::Path;
use std::time::SystemTime;

use clap::{CommandFactory, FromArgMatches};
use clap_complete::engine::{ArgValueCandidates, CompletionCandidate};

use crate::base::names::{JobId, Machine};
use crate::front::cli::{Cli, Global};
use crate::front::config::Context;
use crate::store::layout::{self, Place, TargetDirs};

/// The variable a completion script sets to ask for completions (and, set
/// to a shell's name alone, to print that shell's script).
pub const VAR: &str = "FLEET_DISPATCH_COMPLETE";

/// Arguments, by id, whose values are target names.
const TARGET_ARGS: &[&str] = &["target"];
/// Arguments, by id, whose values are job ids.
const JOB_ARGS: &[&str] = &["job_id", "interrupt"];
/// Arguments, as (subcommand, id), whose job stops: a finished job is no
/// answer there. Each with the names it takes beside ids, offered first.
const STOP_ARGS: &[(&str, &str, &[&str])] = &[
    ("cancel", "job_id", &["last"]),
    ("enqueue", "interrupt", &["running", "last"]),
];

/// When a shell asks (`FLEET_DISPATCH_COMPLETE` is set), prints the answer
/// and exits; otherwise returns at once. Call it first thing in `main`.
pub fn respond() {
    clap_complete::CompleteEnv::with_factory(command)
        .var(VAR)
        .complete();
}

/// The command line definition with the completers of shared-folder values
/// attached to every argument that takes one, in every subcommand.
pub fn command() -> clap::Command {
    attach(Cli::command())
}

fn attach(cmd: clap::Command) -> clap::Command {
    let ids: Vec<String> = cmd
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect();
    let mut cmd = cmd;
    for id in ids {
        if TARGET_ARGS.contains(&id.as_str()) {
            cmd = cmd.mut_arg(id, |a| a.add(ArgValueCandidates::new(targets)));
        } else if let Some(&(_, _, names)) = STOP_ARGS
            .iter()
            .find(|(c, a, _)| *c == cmd.get_name() && *a == id)
        {
            let stop = move || {
                let mut all: Vec<CompletionCandidate> =
                    names.iter().map(|n| CompletionCandidate::new(*n)).collect();
                all.extend(job_ids(false));
                all
            };
            cmd = cmd.mut_arg(id, |a| a.add(ArgValueCandidates::new(stop)));
        } else if JOB_ARGS.contains(&id.as_str()) {
            cmd = cmd.mut_arg(id, |a| a.add(ArgValueCandidates::new(|| job_ids(true))));
        }
    }
    cmd.mut_subcommands(attach)
}

/// The words of the line typed so far: those after the script's `--`,
/// the last one the word being completed.
fn words() -> Vec<OsString> {
    std::env::args_os()
        .skip_while(|a| a != "--")
        .skip(1)
        .collect()
}

/// What the line typed so far says: its global options and the `--target`
/// it names, if any; the word being completed is left out.
fn typed_line() -> (Global, Option<String>) {
    let mut words = words();
    words.pop();
    let matches = Cli::command()
        .ignore_errors(true)
        .try_get_matches_from(words)
        .ok();
    let global = matches
        .as_ref()
        .and_then(|m| Global::from_arg_matches(m).ok());
    let target = matches.as_ref().and_then(|m| {
        let (_, sub) = m.subcommand()?;
        sub.try_get_one::<String>("target").ok().flatten().cloned()
    });
    let global = global.unwrap_or_else(|| {
        // Nothing parsed: the variables alone, as clap reads them.
        let m = Cli::command()
            .ignore_errors(true)
            .try_get_matches_from(["fleet-dispatch"])
            .unwrap_or_default();
        Global::from_arg_matches(&m).expect("global options always parse")
    });
    (global, target)
}

/// The root the typed line would use, when it exists.
fn root_of(global: Global) -> Option<(Context, std::path::PathBuf)> {
    let ctx = Context::load(global).ok()?;
    let root = ctx.root().ok()?;
    Some((ctx, root))
}

/// The target folders under the root; after a comma, those the list typed
/// so far does not name, each after that list (`PC,` → `PC,LAPTOP`).
fn targets() -> Vec<CompletionCandidate> {
    let (global, _) = typed_line();
    let Some((_, root)) = root_of(global) else {
        return Vec::new();
    };
    let current = words()
        .pop()
        .and_then(|w| w.into_string().ok())
        .unwrap_or_default();
    let listed = match current.rfind(',') {
        Some(i) => &current[..=i],
        None => "",
    };
    let named: Vec<&str> = listed.split(',').filter(|n| !n.is_empty()).collect();
    layout::existing_targets(&root)
        .unwrap_or_default()
        .into_iter()
        .filter(|t| !named.iter().any(|n| n.eq_ignore_ascii_case(t)))
        .map(|t| CompletionCandidate::new(format!("{listed}{t}")))
        .collect()
}

/// The ids in the typed target's `inbox/` and `running/` (and `results/`
/// when `finished`), or in every target's when the line names none (or one
/// that does not resolve): newest first, by the time of their file.
fn job_ids(finished: bool) -> Vec<CompletionCandidate> {
    let (global, target) = typed_line();
    let Some((_, root)) = root_of(global) else {
        return Vec::new();
    };
    let existing = layout::existing_targets(&root).unwrap_or_default();
    let folders: Vec<String> = match target
        .and_then(|t| Machine::parse(&t, "target").ok())
        .and_then(|t| layout::pick_target(&root, &t, &existing).ok().flatten())
    {
        Some(one) => vec![one],
        None => existing,
    };
    let mut ids: Vec<(Option<SystemTime>, String)> = folders
        .iter()
        .filter_map(|f| Machine::parse(f, "target").ok())
        .flat_map(|t| ids_of(&root, &t, finished))
        .collect();
    newest_first(&mut ids);
    ids.into_iter()
        .map(|(_, id)| CompletionCandidate::new(id))
        .collect()
}

/// Orders `ids` newest first (by their file's time, then by id, so
/// generated ids, which start with their time, order alike without one)
/// and drops repeats.
fn newest_first(ids: &mut Vec<(Option<SystemTime>, String)>) {
    ids.sort_by(|a, b| b.cmp(a));
    let mut seen = std::collections::HashSet::new();
    ids.retain(|(_, id)| seen.insert(id.clone()));
}

/// The job ids one target's folders hold, each with the time of its file:
/// queued and running, and finished when `finished`; without it, a job with
/// a result is left out wherever else its file still is.
fn ids_of(root: &Path, target: &Machine, finished: bool) -> Vec<(Option<SystemTime>, String)> {
    // Each folder held open without following a link, as every reader
    // under the root does: a folder swapped for a link lists nothing.
    let dirs = TargetDirs::new(root, target);
    let list = |p: Place| -> Vec<(Option<SystemTime>, String)> {
        let Some(d) = dirs.open(p).ok().flatten() else {
            return Vec::new();
        };
        d.list()
            .unwrap_or_default()
            .into_iter()
            .filter_map(|n| {
                let id = JobId::from_file_name(&n)?;
                Some((
                    d.entry(&n).ok().and_then(|m| m.modified),
                    id.as_str().to_string(),
                ))
            })
            .collect()
    };
    let results = list(Place::Results);
    let mut ids = list(Place::Inbox);
    ids.extend(list(Place::Running));
    if finished {
        ids.extend(results);
    } else {
        ids.retain(|(_, id)| !results.iter().any(|(_, r)| r == id));
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_and_job_id_argument_gets_a_completer() {
        fn walk(cmd: &clap::Command, seen: &mut usize) {
            for a in cmd.get_arguments() {
                let id = a.get_id().as_str();
                if TARGET_ARGS.contains(&id) || JOB_ARGS.contains(&id) {
                    assert!(
                        a.get::<ArgValueCandidates>().is_some(),
                        "{} --{id}",
                        cmd.get_name()
                    );
                    *seen += 1;
                }
            }
            for s in cmd.get_subcommands() {
                walk(s, seen);
            }
        }
        let mut seen = 0;
        walk(&command(), &mut seen);
        assert!(seen >= 6, "only {seen} arguments take targets or ids");
    }

    #[test]
    fn ids_complete_newest_first_by_file_time_then_id() {
        let t = |s: u64| Some(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(s));
        let mut ids = vec![
            (t(1), "old".to_string()),
            (t(3), "new".to_string()),
            (t(2), "b".to_string()),
            (t(2), "c".to_string()),
            (t(1), "new".to_string()),
        ];
        newest_first(&mut ids);
        let order: Vec<&str> = ids.iter().map(|(_, id)| id.as_str()).collect();
        assert_eq!(order, ["new", "c", "b", "old"]);
    }
}
