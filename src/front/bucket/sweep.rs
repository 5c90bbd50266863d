//! `sweep` on an object-store root: the rules of a folder's sweep
//! ([`crate::base::retention`], docs/protocol.md §8.3) over the objects of
//! each target, aged by their `LastModified`. A cancel marker goes once
//! older than `--max-age`, never while its job is in `inbox/` or
//! `running/`; a processed job's objects (`archive/done/`, `results/`,
//! its log chunks `logs/<id>.<stream>.<n>`, `archive/consumed/`) go
//! together once all are older than the retention, and a rejected object
//! with its reason likewise; nothing of a job that waits, or that a queued
//! job waits for, ever goes. Each object is removed by
//! [`crate::store::port::Shelf::remove`] (only the version looked at). A
//! bucket holds no temp files.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::SystemTime;

use crate::base::error::Result;
use crate::base::names::{JobId, Machine};
use crate::base::read::FileRead;
use crate::front::cli::SweepArgs;
use crate::front::config::Context;
use crate::places::prune::{self, Ages, KeptMarker, MARKER, Past, Swept};
use crate::protocol::doc;
use crate::store::layout::{self, Place};
use crate::store::objstore::{Client, S3Root};
use crate::store::port::Shelves;
use crate::store::port::bucket::{Bucket, BucketTarget};

/// Sweeps the targets `args` names on the root `root` (or lists, with
/// `--dry-run`, what would go): what was removed, what failed and the
/// markers kept, and how many targets were swept.
pub fn run(ctx: &Context, root: &str, args: &SweepArgs, ages: Ages) -> Result<(Swept, usize)> {
    let parsed = S3Root::parse(root)?;
    let bucket = Bucket::new(Client::new(&ctx.s3_settings()?, &parsed.bucket)?, parsed);
    let all = bucket.targets()?;
    let targets: Vec<BucketTarget> = if args.all {
        all.iter()
            .map(|n| Ok(bucket.target(&Machine::parse(n, "target")?)))
            .collect::<Result<_>>()?
    } else {
        let name = match &args.target {
            Some(t) => t.clone(),
            None => ctx.machine()?.to_string(),
        };
        let shown = bucket.root().to_string();
        let m = layout::resolve_among(&shown, all.clone(), &name, &ctx.fleet())?;
        vec![bucket.target(&m)]
    };
    let awaited = awaited(&bucket, &all);
    let mut swept = Swept::default();
    for t in &targets {
        let (doomed, kept) = match plan(t, ages, &awaited) {
            Ok(p) => p,
            Err(e) => {
                swept.failed.push((t.shown(), e.message));
                continue;
            }
        };
        let target = t.target().to_string();
        swept
            .kept
            .extend(kept.into_iter().map(|k| (target.clone(), k)));
        for (place, name, kind) in doomed {
            let shelf = t.shelf(place);
            let shown = shelf.shown(&name);
            if !args.dry_run
                && let Err(e) = shelf.remove(&name)
            {
                swept.failed.push((shown, e.message));
                continue;
            }
            swept
                .removed
                .push((target.clone(), PathBuf::from(shown), kind));
        }
    }
    Ok((swept, targets.len()))
}

/// The jobs a job queued in any inbox of the bucket waits for (its spec's
/// `after`), by target in lowercase, as file names. The job files are not
/// verified (sweep needs no key): a forged one only keeps objects longer.
/// An inbox or a job that cannot be read waits for nothing.
fn awaited(bucket: &Bucket, names: &[String]) -> HashMap<String, HashSet<String>> {
    let mut by_target: HashMap<String, HashSet<String>> = HashMap::new();
    for n in names {
        let Ok(m) = Machine::parse(n, "target") else {
            continue;
        };
        let t = bucket.target(&m);
        let inbox = t.shelf(Place::Inbox);
        for name in inbox.list().unwrap_or_default() {
            if JobId::from_file_name(&name).is_none() {
                continue;
            }
            let FileRead::Bytes(b) = inbox.read(&name, doc::job::MAX_BYTES) else {
                continue;
            };
            for a in doc::job::peek(&b).map(|h| h.after).unwrap_or_default() {
                by_target
                    .entry(a.target.as_str().to_ascii_lowercase())
                    .or_default()
                    .insert(a.job_id.file_name());
            }
        }
    }
    by_target
}

/// An object to remove: its place, its name there, and what it is (one
/// of [`prune::KINDS`]).
type Doomed = (Place, String, &'static str);

/// What to remove of `t` and the markers kept.
fn plan(
    t: &dyn Shelves,
    ages: Ages,
    awaited: &HashMap<String, HashSet<String>>,
) -> Result<(Vec<Doomed>, Vec<KeptMarker>)> {
    let mut waiting: HashSet<String> = HashSet::new();
    for p in [Place::Inbox, Place::Running] {
        waiting.extend(t.shelf(p).list()?);
    }
    let lower = t.target().as_str().to_ascii_lowercase();
    waiting.extend(awaited.get(&lower).into_iter().flatten().cloned());
    let age = |m: Option<SystemTime>| m.and_then(|m| ages.now.duration_since(m).ok());
    let mut out = Vec::new();
    let mut kept = Vec::new();
    for (name, modified) in t.shelf(Place::Cancel).list_aged()? {
        match prune::marker_fate(&name, modified, ages, &waiting) {
            Some(Ok(())) => out.push((Place::Cancel, name, MARKER)),
            Some(Err(k)) => kept.push(k),
            None => {}
        }
    }
    kept.sort_by(|a, b| a.job_id.cmp(&b.job_id));
    // A processed job's objects, and a rejected one with its reason,
    // by the folder's rule; a job's log on a bucket is its chunks.
    let mut past = Vec::new();
    for place in [
        Place::Done,
        Place::Results,
        Place::Logs,
        Place::Consumed,
        Place::Rejected,
    ] {
        for (name, modified) in t.shelf(place).list_aged()? {
            past.push(Past {
                place,
                name,
                age: age(modified),
                folder: false,
            });
        }
    }
    let is_log = |id: &JobId, name: &str| super::logs::chunk_of(id, name).is_some();
    for (i, kind) in prune::past_to_prune(&past, &waiting, ages.retention, &is_log) {
        out.push((past[i].place, past[i].name.clone(), kind));
    }
    out.sort_by(|a, b| (a.0.shown(), &a.1).cmp(&(b.0.shown(), &b.1)));
    Ok((out, kept))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::places::prune::{LOG, RESULT};
    use crate::store::port::Shelf;

    /// A target held in memory: each place's names with their times.
    struct Held(Machine, HashMap<Place, Vec<(String, SystemTime)>>);

    struct HeldShelf<'a>(&'a [(String, SystemTime)]);

    impl Shelf for HeldShelf<'_> {
        fn list(&self) -> Result<Vec<String>> {
            Ok(self.0.iter().map(|(n, _)| n.clone()).collect())
        }
        fn read(&self, _: &str, _: u64) -> FileRead {
            FileRead::Missing
        }
        fn publish(&self, _: &str, _: &[u8]) -> Result<bool> {
            Ok(false)
        }
        fn exists(&self, name: &str) -> Result<bool> {
            Ok(self.0.iter().any(|(n, _)| n == name))
        }
        fn remove(&self, _: &str) -> Result<()> {
            Ok(())
        }
        fn shown(&self, name: &str) -> String {
            name.to_string()
        }
        fn list_aged(&self) -> Result<Vec<(String, Option<SystemTime>)>> {
            Ok(self.0.iter().map(|(n, t)| (n.clone(), Some(*t))).collect())
        }
    }

    impl Shelves for Held {
        fn target(&self) -> &Machine {
            &self.0
        }
        fn shelf(&self, place: Place) -> Box<dyn Shelf + '_> {
            Box::new(HeldShelf(self.1.get(&place).map_or(&[][..], Vec::as_slice)))
        }
        fn shown(&self) -> String {
            "s3://jobs/PC/".into()
        }
    }

    #[test]
    fn a_processed_job_goes_whole_once_all_of_it_is_older_than_the_retention() {
        const DAY: Duration = Duration::from_secs(86400);
        let now = SystemTime::now();
        let ago = |days: u64| now - DAY * days as u32;
        let ids: Vec<JobId> = ["a", "b", "c", "d"]
            .iter()
            .map(|s| JobId::parse(&format!("20261129-193000-{s}")).unwrap())
            .collect();
        let [old, young, queued, waited] = &ids[..] else {
            unreachable!()
        };
        let mut places: HashMap<Place, Vec<(String, SystemTime)>> = HashMap::new();
        let mut add = |p: Place, name: String, at: SystemTime| {
            places.entry(p).or_default().push((name, at));
        };
        for id in [old, young, queued, waited] {
            add(Place::Results, id.file_name(), ago(40));
            add(Place::Logs, format!("{id}.stdout.0"), ago(40));
            add(Place::Logs, format!("{id}.stdout.1"), ago(40));
        }
        // One chunk of `young` is recent: none of it goes.
        add(Place::Logs, format!("{young}.stderr.0"), ago(1));
        add(Place::Inbox, queued.file_name(), ago(40));
        add(Place::Cancel, old.file_name(), ago(2));
        add(Place::Cancel, queued.file_name(), ago(2));
        // Not a chunk's name: never pruned.
        add(Place::Logs, "notes.txt".into(), ago(40));
        add(Place::Logs, format!("{old}.stdout.log"), ago(40));
        add(Place::Logs, format!("{old}.stdout.01"), ago(40));
        let t = Held(Machine::parse("PC", "target").unwrap(), places);
        let ages = Ages {
            now,
            marker: DAY,
            retention: DAY * 30,
        };
        let awaited = HashMap::from([("pc".to_string(), HashSet::from([waited.file_name()]))]);
        let (doomed, kept) = plan(&t, ages, &awaited).unwrap();
        let mut names: Vec<(String, &str)> = doomed.into_iter().map(|(_, n, k)| (n, k)).collect();
        names.sort();
        let mut want = vec![
            (old.file_name(), MARKER),
            (old.file_name(), RESULT),
            (format!("{old}.stdout.0"), LOG),
            (format!("{old}.stdout.1"), LOG),
        ];
        want.sort();
        assert_eq!(names, want);
        assert_eq!(kept.len(), 1, "the queued job's marker stays");
        assert_eq!(kept[0].job_id, queued.to_string());
    }
}
