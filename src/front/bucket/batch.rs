//! `enqueue --batch FILE` on an object-store root: every line read and
//! checked by the folder's rules ([`crate::front::send::batch::requests`]),
//! then every line's job, on each of its targets, checked against what the
//! bucket holds, bound (`after` naming another line's job or a job on the
//! bucket by its full id), signed and checked, and the whole batch checked
//! for a cycle of `after`, before anything is published; then each
//! target's jobs published create-only, in the order of the lines.

use super::Lane;
use crate::base::clock;
use crate::base::error::{Error, Result};
use crate::base::exit;
use crate::front::cli::EnqueueArgs;
use crate::front::config::Context;
use crate::front::send::batch::{at, listing, node_of, partly, refuse_cycle, requests};
use crate::front::send::request::{Origin, checked, roster_refusal};
use crate::front::send::seal::sign_job;
use crate::protocol::doc::Job;
use crate::requests::lane;
use crate::store::port::Shelves;
use crate::store::port::bucket::BucketTarget;

/// A job signed and checked, with its file's bytes.
type Signed = (Job, Vec<u8>);

/// Runs `enqueue --batch FILE` (`-`: stdin) on the root `root`.
pub fn run(ctx: &Context, root: &str, args: &EnqueueArgs, file: &std::path::Path) -> Result<u8> {
    let (shown, lines) = requests(ctx, args, file)?;
    let lane = Lane::load(ctx, root)?;
    let origin = ctx.machine()?;
    let key = &lane.key;
    let created = clock::now();
    // Each target's jobs, in the order the targets first appear.
    let mut groups: Vec<(BucketTarget, Vec<Signed>)> = Vec::new();
    let mut sent: Vec<Vec<String>> = Vec::new();
    let mut first_line: Vec<((String, String), usize)> = Vec::new();
    let mut waits: Vec<(usize, String)> = Vec::new();
    let mut nodes = Vec::new();
    for (n, req) in &lines {
        let at = at(&shown, *n);
        let targets = if crate::store::layout::is_target_list(&req.targets) {
            lane.targets(ctx, &req.targets).map_err(&at)?
        } else {
            vec![lane.target(ctx, &req.targets).map_err(&at)?]
        };
        let mut names = Vec::new();
        for t in targets {
            let name = t.target().to_string();
            let seen = (name.to_ascii_lowercase(), req.id.to_string());
            if let Some((_, first)) = first_line.iter().find(|(s, _)| *s == seen) {
                return Err(Error::validation(format!(
                    "{shown} line {n}: job id {} is also on line {first} for {name}",
                    req.id
                ))
                .hint("job ids are single-use; leave out \"jobId\" to get a fresh one"));
            }
            first_line.push((seen, *n));
            lane::check_free(&t, &req.id, key).map_err(&at)?;
            let spec = req
                .spec_by(t.target(), &mut |on, id| {
                    super::enqueue::after_on(ctx, &lane, on, id)
                })
                .map_err(&at)?;
            let job = sign_job(
                key,
                args.seal,
                (req.id.clone(), t.target().as_str(), origin.as_str()),
                created,
                spec,
            )
            .map_err(&at)?;
            let (job, bytes) = checked(job, Origin::Line).map_err(&at)?;
            roster_refusal(&job, &bytes, key).map_err(&at)?;
            waits.push((*n, format!("{name}:{}", job.id)));
            nodes.push(node_of(t.target().as_str(), &job));
            names.push(name);
            match groups.iter_mut().find(|(g, _)| g.target() == t.target()) {
                Some((_, jobs)) => jobs.push((job, bytes)),
                None => groups.push((t, vec![(job, bytes)])),
            }
        }
        sent.push(names);
    }
    refuse_cycle(&shown, &waits, &nodes)?;
    for (g, (t, jobs)) in groups.iter().enumerate() {
        for (job, bytes) in jobs {
            if let Err(e) = lane::publish(t, job, bytes, key) {
                let done: Vec<&str> = groups[..g]
                    .iter()
                    .map(|(d, _)| d.target().as_str())
                    .collect();
                return Err(partly(&shown, &done, t.target().as_str(), e));
            }
        }
    }
    // The last line's job becomes `last`, on each of its targets.
    if let (Some((_, r)), Some(names)) = (lines.last(), sent.last()) {
        let targets: Vec<crate::base::names::Machine> = names
            .iter()
            .filter_map(|n| crate::base::names::Machine::parse(n, "target").ok())
            .collect();
        let targets: Vec<_> = targets.iter().collect();
        let state = ctx.state_dir(std::path::Path::new(root));
        crate::places::jobref::remember_on(state, &targets, &r.id);
    }
    let each: Vec<_> = lines
        .iter()
        .zip(&sent)
        .map(|((n, r), t)| (*n, r, t.iter().map(String::as_str).collect()))
        .collect();
    let (jobs, ids) = listing(&each);
    super::emit(ctx, &serde_json::json!({ "jobs": jobs }), &ids.join("\n"));
    Ok(exit::SUCCESS)
}
