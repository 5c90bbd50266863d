//! `enqueue --batch`: many jobs from one file, each line checked by the
//! same [`request`] as the flags, all checked before any is published, and
//! each target's jobs published with one flush of its inbox.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::de::{MapAccess, SeqAccess, Visitor};
use serde_json::{Value, json};

use super::{Fields, Origin, Resolver, check_acceptable, priority_word, request};
use crate::cli::EnqueueArgs;
use crate::cmd::emit;
use crate::config::Context;
use crate::doc::Job;
use crate::error::{Error, Result};
use crate::exit;
use crate::layout::TargetDirs;
use crate::{clock, submit};

/// Runs `enqueue --batch`: one job per line of `file` (`-`: stdin). Every line
/// is checked (fields, targets, ids unused and not repeated) before any
/// job is published; then each target's jobs are published together, with
/// one flush of its inbox at `full` durability. Prints the ids in the
/// order of the lines.
pub(super) fn run(ctx: &Context, args: &EnqueueArgs, file: &std::path::Path) -> Result<u8> {
    // The flags that name one job, or act on one, have no meaning for many.
    for (given, flag) in [
        (!args.argv.is_empty(), "a program after `--`"),
        (args.job_id.is_some(), "--job-id"),
        (args.interrupt.is_some(), "--interrupt"),
        (args.waiting.wait, "--wait"),
        (args.via.is_some(), "--via"),
    ] {
        if given {
            return Err(Error::validation(format!(
                "--batch takes its jobs from {}: {flag} cannot be given with it",
                file.display()
            ))
            .hint("put per-job values in each line; --target, --priority, --label, --cwd, --env, --timeout, --grace, --after and --after-any are defaults for the lines"));
        }
    }
    let defaults = Fields::from_flags(args)?;
    let parent = ctx.enclosing_job()?;
    let (shown, text) = read_batch(file)?;
    // A byte-order mark (as Windows editors write) is not part of line 1.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let at = |n: usize| {
        let shown = shown.clone();
        move |e: Error| Error {
            message: format!("{shown} line {n}: {}", e.message),
            // A line names its id in a field, not with the flag.
            hint: e
                .hint
                .map(|h| h.replace("omit --job-id", "leave out \"jobId\"")),
            ..e
        }
    };
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let f = Fields::from_line(line).map_err(at(i + 1))?;
        let req =
            request(&f.or(&defaults), Origin::Line, parent.as_ref(), false).map_err(at(i + 1))?;
        lines.push((i + 1, req));
    }
    if lines.is_empty() {
        return Err(Error::validation(format!("{shown} holds no job")));
    }
    let root = ctx.root()?;
    let key = ctx.key(Some(&root))?;
    let origin = ctx.machine()?;
    let guard = crate::cmd::known_root(ctx, &root, &key)?;
    // Each target list is resolved once; jobs are grouped by target in the
    // order targets first appear.
    let mut resolved: BTreeMap<String, Vec<TargetDirs>> = BTreeMap::new();
    let mut groups: Vec<Group> = Vec::new();
    let mut first_line: BTreeMap<(String, String), usize> = BTreeMap::new();
    let created = clock::now();
    let mut names = Resolver::new(ctx, &root, &key);
    let mut waits: Vec<Waiting> = Vec::new();
    // Every line's job is known on its targets before any `after` is
    // named: a line may wait for another's, which then wins as an exact
    // id over any job already there that it is the start of. A target
    // list that does not resolve is refused below, at its line.
    for (_, req) in &lines {
        if !resolved.contains_key(&req.targets)
            && let Ok(t) = ctx.targets(&root, &req.targets)
        {
            resolved.insert(req.targets.clone(), t);
        }
        for dirs in resolved.get(&req.targets).into_iter().flatten() {
            names.add_own(dirs.target(), &req.id);
        }
    }
    for (n, req) in &lines {
        if !resolved.contains_key(&req.targets) {
            let t = ctx.targets(&root, &req.targets).map_err(at(*n))?;
            let t = t.into_iter().map(|d| d.guarded(&guard)).collect();
            resolved.insert(req.targets.clone(), t);
        }
        for dirs in &resolved[&req.targets] {
            let g = match groups.iter().position(|g| g.dirs.target() == dirs.target()) {
                Some(g) => g,
                None => {
                    let held = submit::check_target(dirs).map_err(at(*n))?;
                    groups.push(Group {
                        dirs: dirs.clone(),
                        held,
                        jobs: Vec::new(),
                    });
                    groups.len() - 1
                }
            };
            let seen = (dirs.target().to_string(), req.id.to_string());
            if let Some(first) = first_line.insert(seen, *n) {
                return Err(Error::validation(format!(
                    "{shown} line {n}: job id {} is also on line {first} for {}",
                    req.id,
                    dirs.target()
                ))
                .hint("job ids are single-use; leave out \"jobId\" to get a fresh one"));
            }
            submit::check_free(dirs, &groups[g].held, &req.id, &key).map_err(at(*n))?;
            let spec = req.spec_for(&mut names, dirs.target()).map_err(at(*n))?;
            let job = Job::sign(
                &key,
                req.id.clone(),
                dirs.target().as_str(),
                origin.as_str(),
                created,
                spec,
            );
            check_acceptable(&job, Origin::Line).map_err(at(*n))?;
            waits.push(Waiting {
                line: *n,
                shown: format!("{}:{}", dirs.target(), job.id),
                job: node(dirs.target().as_str(), job.id.as_str()),
                after: job
                    .header()
                    .after
                    .iter()
                    .map(|a| node(a.target.as_str(), a.job_id.as_str()))
                    .collect(),
            });
            groups[g].jobs.push(job);
        }
    }
    if let Some(ring) = cycle(&waits) {
        let step = |i: &usize| format!("line {} ({})", waits[*i].line, waits[*i].shown);
        let rest: Vec<String> = ring[1..].iter().map(step).collect();
        return Err(Error::validation(format!(
            "{shown} line {}: \"after\" makes a cycle: {} waits for {}; none of them could ever start",
            waits[ring[0]].line,
            step(&ring[0]),
            rest.join(", which waits for ")
        ))
        .hint("a job may wait only for jobs that do not wait for it"));
    }
    let flush = ctx.durability().enqueue_flush();
    for (g, Group { dirs, jobs, .. }) in groups.iter().enumerate() {
        let failed = match submit::publish_all(dirs, jobs, &key, flush) {
            Err(e) => Some(e),
            Ok(each) => each.into_iter().find_map(|r| r.err()),
        };
        if let Some(e) = failed {
            let done: Vec<&TargetDirs> = groups[..g].iter().map(|g| &g.dirs).collect();
            return Err(batch_partly(&shown, &done, dirs, e));
        }
    }
    let sent: Vec<(&[TargetDirs], &crate::names::JobId)> = lines
        .iter()
        .map(|(_, r)| (resolved[&r.targets].as_slice(), &r.id))
        .collect();
    crate::jobref::record_sent_on(ctx.state_dir(&root), &sent[..sent.len() - 1]);
    if let Some((_, last)) = lines.last() {
        let each: Vec<&TargetDirs> = resolved[&last.targets].iter().collect();
        crate::jobref::remember_on(ctx.state_dir(&root), &each, &last.id);
    }
    let jobs: Vec<Value> = lines
        .iter()
        .map(|(n, r)| {
            json!({
                "line": n,
                "jobId": r.id.as_str(),
                "targets": resolved[&r.targets].iter().map(|d| d.target().as_str()).collect::<Vec<_>>(),
                "priority": priority_word(r.spec.header.priority),
            })
        })
        .collect();
    let ids: Vec<&str> = lines.iter().map(|(_, r)| r.id.as_str()).collect();
    let mut out = json!({"jobs": jobs});
    // A listener that will not run them is said now, as for one job.
    let warnings: Vec<_> = groups
        .iter()
        .flat_map(|g| crate::doctor::listener_warnings(&g.dirs, &key))
        .collect();
    super::warn(ctx, &mut out, &warnings);
    emit(ctx, &out, &ids.join("\n"));
    Ok(exit::SUCCESS)
}

/// A job of the batch or one it waits for, as the cycle check compares
/// them: its target (without case, as target folders are) and its id.
type Node = (String, String);

fn node(target: &str, id: &str) -> Node {
    (target.to_ascii_lowercase(), id.to_string())
}

/// One job of the batch as [`cycle`] sees it.
struct Waiting {
    /// Its line.
    line: usize,
    /// `TARGET:ID`, for messages.
    shown: String,
    job: Node,
    /// The jobs its `after` names, bound to their targets.
    after: Vec<Node>,
}

/// A cycle of `after` among the batch's own jobs, which could never start:
/// the indices into `jobs` in the order each waits for the next, the first
/// repeated at the end; `None` when there is none. A job outside the batch
/// closes no cycle (one across commands is not seen here). Iterative
/// depth-first search, linear in jobs and `after` entries.
fn cycle(jobs: &[Waiting]) -> Option<Vec<usize>> {
    let index: BTreeMap<&Node, usize> = jobs.iter().enumerate().map(|(i, j)| (&j.job, i)).collect();
    let edges: Vec<Vec<usize>> = jobs
        .iter()
        .map(|j| {
            j.after
                .iter()
                .filter_map(|a| index.get(a).copied())
                .collect()
        })
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

/// The first key given twice in one object of the JSON `text`, at any
/// depth, after the keys of the objects around it (outermost first):
/// serde_json would keep the last silently. `None` too for text that is
/// not JSON, which the parse proper refuses; serde_json bounds the depth.
pub(super) fn duplicate_key(text: &str) -> Option<Vec<String>> {
    serde_json::from_str::<Dup>(text).ok()?.0
}

/// What [`duplicate_key`] found in one JSON value.
struct Dup(Option<Vec<String>>);

impl<'de> serde::Deserialize<'de> for Dup {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Dup, D::Error> {
        d.deserialize_any(DupVisitor)
    }
}

struct DupVisitor;

impl<'de> Visitor<'de> for DupVisitor {
    type Value = Dup;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> std::result::Result<Dup, E> {
        Ok(Dup(None))
    }

    fn visit_i64<E>(self, _: i64) -> std::result::Result<Dup, E> {
        Ok(Dup(None))
    }

    fn visit_u64<E>(self, _: u64) -> std::result::Result<Dup, E> {
        Ok(Dup(None))
    }

    fn visit_f64<E>(self, _: f64) -> std::result::Result<Dup, E> {
        Ok(Dup(None))
    }

    fn visit_str<E>(self, _: &str) -> std::result::Result<Dup, E> {
        Ok(Dup(None))
    }

    fn visit_unit<E>(self) -> std::result::Result<Dup, E> {
        Ok(Dup(None))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Dup, A::Error> {
        let mut found = None;
        while let Some(Dup(inner)) = seq.next_element()? {
            found = found.or(inner);
        }
        Ok(Dup(found))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Dup, A::Error> {
        let mut seen = BTreeSet::new();
        let mut found = None;
        while let Some(key) = map.next_key::<String>()? {
            let Dup(inner) = map.next_value()?;
            if found.is_some() {
                continue;
            }
            if seen.contains(&key) {
                found = Some(vec![key]);
            } else if let Some(mut path) = inner {
                path.insert(0, key);
                found = Some(path);
            } else {
                seen.insert(key);
            }
        }
        Ok(Dup(found))
    }
}

/// A batch's jobs for one target: its inbox as checked before publishing
/// (`None`: not made yet), and its jobs in the order of the lines.
struct Group {
    dirs: TargetDirs,
    /// Its folders the checks look in, opened once for the batch.
    held: submit::Checked,
    jobs: Vec<Job>,
}

/// The error of a batch whose publishing into `failed`'s inbox stopped on
/// `e`: every job for the targets in `done` is queued there, those for
/// `failed` may be in part, the rest nowhere.
fn batch_partly(shown: &str, done: &[&TargetDirs], failed: &TargetDirs, e: Error) -> Error {
    let have = if done.is_empty() {
        "no target has them".to_string()
    } else {
        let names: Vec<&str> = done.iter().map(|d| d.target().as_str()).collect();
        format!("every job for {} is queued", names.join(","))
    };
    Error::new(
        e.code,
        format!(
            "{shown}: publishing into {}'s inbox failed ({}); {have}, those for {} may be queued in part, and no later target was written to",
            failed.target(),
            e.message,
            failed.target()
        ),
    )
    .hint("see what is queued with: fleet-dispatch status --all")
}

/// The text of the batch `file` (`-`: stdin) and how messages name it.
fn read_batch(file: &std::path::Path) -> Result<(String, String)> {
    use std::io::Read;
    if file.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| Error::validation(format!("--batch -: cannot read stdin: {e}")))?;
        return Ok(("stdin".to_string(), text));
    }
    let shown = file.display().to_string();
    if file.is_dir() {
        return Err(Error::validation(format!(
            "--batch {shown}: a folder, not a file of job lines"
        )));
    }
    match std::fs::read(file) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(|t| (shown.clone(), t))
            .map_err(|e| {
                // The line the first bad byte is on, counted as the lines are.
                let at = e.as_bytes()[..e.utf8_error().valid_up_to()]
                    .iter()
                    .filter(|&&b| b == b'\n')
                    .count()
                    + 1;
                Error::validation(format!("--batch {shown} line {at}: not UTF-8 text"))
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(Error::not_found(format!("--batch {shown}: no such file")))
        }
        Err(e) => Err(Error::io("read", file, &e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(line: usize, job: &str, after: &[&str]) -> Waiting {
        Waiting {
            line,
            shown: format!("PC:{job}"),
            job: node("PC", job),
            after: after.iter().map(|a| node("pc", a)).collect(),
        }
    }

    #[test]
    fn cycles_among_the_batch_are_found_and_chains_are_not() {
        let chain = [
            w(1, "a", &[]),
            w(2, "b", &["a"]),
            w(3, "c", &["b", "a", "x"]),
        ];
        assert_eq!(cycle(&chain), None);
        let ring = [w(1, "a", &["c"]), w(2, "b", &["a"]), w(3, "c", &["b"])];
        let found = cycle(&ring).unwrap();
        assert_eq!(found.len(), 4);
        assert_eq!(found.first(), found.last());
        let pair = [w(1, "x", &[]), w(2, "c1", &["c2"]), w(3, "c2", &["c1"])];
        assert_eq!(cycle(&pair), Some(vec![1, 2, 1]));
    }

    #[test]
    fn duplicate_keys_are_found_at_any_depth() {
        let found = |t: &str| duplicate_key(t);
        assert_eq!(found(r#"{"argv":["a"],"label":"x"}"#), None);
        assert_eq!(
            found(r#"{"argv":["true"],"argv":["false"]}"#),
            Some(vec!["argv".to_string()])
        );
        assert_eq!(
            found(r#"{"argv":["a"],"env":{"A":"1","A":"2"}}"#),
            Some(vec!["env".to_string(), "A".to_string()])
        );
        assert_eq!(found(r#"[{"a":1},{"a":2}]"#), None);
        assert_eq!(found("not json"), None);
    }
}
