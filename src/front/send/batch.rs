//! Many jobs from one `--batch` file (`-`: stdin), one per line: each line
//! checked by the same [`request`] as the flags, all checked (fields,
//! targets, ids unused and not repeated, no cycle of `after` among them)
//! before any is published; then each target's jobs published together,
//! with one flush of its inbox at `full` durability. With `--seal`, each
//! line's job is sealed to each of its targets as one job is.

use std::collections::BTreeMap;

use super::Sender;
use super::request::{Fields, Origin, Request, Resolver, checked, request, roster_refusal};
use super::seal::sign_job;
use crate::base::clock;
use crate::base::error::{Error, Result};
use crate::front::cli::EnqueueArgs;
use crate::front::config::Context;
use crate::protocol::dependency::{self, Node};
use crate::protocol::doc::Job;
use crate::requests::doctor::Check;
use crate::requests::submit;
use crate::store::layout::TargetDirs;

/// A batch sent.
pub struct Sent {
    /// Each line's job, in the order of the lines: its line number, its
    /// request, and the targets it was published to.
    pub lines: Vec<(usize, Request, Vec<TargetDirs>)>,
    /// What `doctor` warns of the targets' listeners.
    pub warnings: Vec<Check>,
}

/// Sends the jobs of the batch `file`, each line's fields not given taken
/// from `args` (the flags are defaults for the lines).
pub fn send(ctx: &Context, args: &EnqueueArgs, file: &std::path::Path) -> Result<Sent> {
    let (shown, lines) = requests(ctx, args, file)?;
    let at = |n: usize| at(&shown, n);
    let s = Sender::load(ctx)?;
    let (root, key) = (&s.root, &s.key);
    let guard = s.guard(ctx)?;
    // Each target list is resolved once; jobs are grouped by target in the
    // order targets first appear.
    let mut resolved: BTreeMap<String, Vec<TargetDirs>> = BTreeMap::new();
    let mut groups: Vec<Group> = Vec::new();
    let mut first_line: BTreeMap<(String, String), usize> = BTreeMap::new();
    let created = clock::now();
    let mut names = Resolver::new(ctx, root, key);
    let mut waits: Vec<(usize, String)> = Vec::new();
    let mut nodes: Vec<(Node, Vec<Node>)> = Vec::new();
    // Every line's job is known on its targets before any `after` is
    // named: a line may wait for another's, which then wins as an exact
    // id over any job already there that it is the start of. A target
    // list that does not resolve is refused below, at its line.
    for (_, req) in &lines {
        if !resolved.contains_key(&req.targets)
            && let Ok(t) = ctx.targets(root, &req.targets)
        {
            resolved.insert(req.targets.clone(), t);
        }
        for dirs in resolved.get(&req.targets).into_iter().flatten() {
            names.add_own(dirs.target(), &req.id);
        }
    }
    for (n, req) in &lines {
        if !resolved.contains_key(&req.targets) {
            let t = ctx.targets(root, &req.targets).map_err(at(*n))?;
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
            submit::check_free(dirs, &groups[g].held, &req.id, key).map_err(at(*n))?;
            let spec = req.spec_for(&mut names, dirs.target()).map_err(at(*n))?;
            let job = sign_job(
                key,
                args.seal,
                (req.id.clone(), dirs.target().as_str(), s.origin.as_str()),
                created,
                spec,
            )
            .map_err(at(*n))?;
            let (job, bytes) = checked(job, Origin::Line).map_err(at(*n))?;
            roster_refusal(&job, &bytes, key).map_err(at(*n))?;
            waits.push((*n, format!("{}:{}", dirs.target(), job.id)));
            nodes.push(node_of(dirs.target().as_str(), &job));
            groups[g].jobs.push((job, bytes));
        }
    }
    refuse_cycle(&shown, &waits, &nodes)?;
    let flush = ctx.durability().enqueue_flush();
    for (g, Group { dirs, jobs, .. }) in groups.iter().enumerate() {
        let failed = match submit::publish_all(dirs, jobs, key, flush) {
            Err(e) => Some(e),
            Ok(each) => each.into_iter().find_map(|r| r.err()),
        };
        if let Some(e) = failed {
            let done: Vec<&str> = groups[..g]
                .iter()
                .map(|g| g.dirs.target().as_str())
                .collect();
            return Err(partly(&shown, &done, dirs.target().as_str(), e));
        }
    }
    let sent: Vec<(&[TargetDirs], &crate::base::names::JobId)> = lines
        .iter()
        .map(|(_, r)| (resolved[&r.targets].as_slice(), &r.id))
        .collect();
    crate::places::jobref::record_sent_on(ctx.state_dir(root), &sent[..sent.len() - 1]);
    if let Some((_, last)) = lines.last() {
        let each: Vec<_> = resolved[&last.targets]
            .iter()
            .map(TargetDirs::target)
            .collect();
        crate::places::jobref::remember_on(ctx.state_dir(root), &each, &last.id);
    }
    let lines = lines
        .into_iter()
        .map(|(n, r)| {
            let t = resolved[&r.targets].clone();
            (n, r, t)
        })
        .collect();
    // A listener that will not run them is said now, as for one job.
    let warnings = groups
        .iter()
        .flat_map(|g| crate::requests::doctor::listener_warnings(&g.dirs, key))
        .collect();
    Ok(Sent { lines, warnings })
}

/// The request of each line of `file` that holds one, with its line
/// number, and how messages name the file. Every line is checked before
/// anything is read from the root.
pub fn requests(
    ctx: &Context,
    args: &EnqueueArgs,
    file: &std::path::Path,
) -> Result<(String, Vec<(usize, Request)>)> {
    let defaults = Fields::from_flags(args)?;
    let parent = ctx.enclosing_job()?;
    let (shown, text) = read_batch(file)?;
    // A byte-order mark (as Windows editors write) is not part of line 1.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let f = Fields::from_line(line).map_err(at(&shown, i + 1))?;
        let req = request(&f.or(&defaults), Origin::Line, parent.as_ref(), false)
            .map_err(at(&shown, i + 1))?;
        lines.push((i + 1, req));
    }
    if lines.is_empty() {
        return Err(Error::validation(format!("{shown} holds no job")));
    }
    Ok((shown, lines))
}

/// Names line `n` of the batch `shown` in an error about it.
pub fn at(shown: &str, n: usize) -> impl Fn(Error) -> Error + use<> {
    let shown = shown.to_string();
    move |e: Error| Error {
        message: format!("{shown} line {n}: {}", e.message),
        // A line names its id in a field, not with the flag.
        hint: e
            .hint
            .map(|h| h.replace("omit --job-id", "leave out \"jobId\"")),
        ..e
    }
}

/// A batch's jobs for one target: its inbox as checked before publishing
/// (`None`: not made yet), and its jobs in the order of the lines.
struct Group {
    dirs: TargetDirs,
    /// Its folders the checks look in, opened once for the batch.
    held: submit::Checked,
    jobs: Vec<(Job, Vec<u8>)>,
}

/// The error of a batch whose publishing into the inbox of `failed` stopped on
/// `e`: every job for the targets in `done` is queued there, those for
/// `failed` may be in part, the rest nowhere.
pub fn partly(shown: &str, done: &[&str], failed: &str, e: Error) -> Error {
    let have = if done.is_empty() {
        "no target has them".to_string()
    } else {
        format!("every job for {} is queued", done.join(","))
    };
    Error::new(
        e.code,
        format!(
            "{shown}: publishing into {failed}'s inbox failed ({}); {have}, those for {failed} may be queued in part, and no later target was written to",
            e.message,
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

/// Refuses (`VALIDATION_ERROR`) the flags that name one job, or act on
/// one, given with `--batch FILE`: they mean nothing for many.
pub fn refuse_flags(args: &EnqueueArgs, file: &std::path::Path) -> Result<()> {
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
    Ok(())
}

/// What `enqueue --batch` answers for its `lines` (line number, request,
/// the targets it went to): each line's job for JSON, and the ids in the
/// order of the lines.
pub fn listing(lines: &[(usize, &Request, Vec<&str>)]) -> (Vec<serde_json::Value>, Vec<String>) {
    let jobs = lines
        .iter()
        .map(|(n, r, targets)| {
            let high = r.spec.header.priority == crate::protocol::doc::Priority::High;
            serde_json::json!({
                "line": n,
                "jobId": r.id.as_str(),
                "targets": targets,
                "priority": if high { "high" } else { "normal" },
            })
        })
        .collect();
    let ids = lines.iter().map(|(_, r, _)| r.id.to_string()).collect();
    (jobs, ids)
}

/// Refuses (`VALIDATION_ERROR`, naming the line) a batch whose `after`
/// lists make a cycle among its jobs: `waits[i]` is the line and
/// `TARGET:ID` of the job `nodes[i]` is, with the jobs it waits for.
pub fn refuse_cycle(
    shown: &str,
    waits: &[(usize, String)],
    nodes: &[(Node, Vec<Node>)],
) -> Result<()> {
    let Some(ring) = dependency::cycle(nodes) else {
        return Ok(());
    };
    let step = |i: &usize| format!("line {} ({})", waits[*i].0, waits[*i].1);
    let rest: Vec<String> = ring[1..].iter().map(step).collect();
    Err(Error::validation(format!(
        "{shown} line {}: \"after\" makes a cycle: {} waits for {}; none of them could ever start",
        waits[ring[0]].0,
        step(&ring[0]),
        rest.join(", which waits for ")
    ))
    .hint("a job may wait only for jobs that do not wait for it"))
}

/// The node of `job` (on its target) in the graph of `after`, with the
/// jobs it waits for.
pub fn node_of(target: &str, job: &Job) -> (Node, Vec<Node>) {
    (
        dependency::node(target, job.id.as_str()),
        job.header()
            .after
            .iter()
            .map(|a| dependency::node(a.target.as_str(), a.job_id.as_str()))
            .collect(),
    )
}
