//! Folders swapped under a running listener (docs/protocol.md §3.5): anyone
//! who can write the shared folder can replace a folder of the layout with
//! a link to a folder elsewhere on the machine, and back, at any moment.
//! Nothing outside the root may then be read into the root, written,
//! replaced or removed, no job may run twice, and the listener goes on.
//!
//! Each test swaps one folder for a link to a decoy folder outside the root,
//! and back, in a bounded loop, while a loop listener drains a flood of jobs
//! (with unparseable jobs and markers, so rejection and cancel paths run)
//! and while `sweep` runs over and over. The decoy tree (names, kinds,
//! bytes, inodes and times) must be the same afterwards, and no file under
//! the root may hold decoy bytes.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use crate::util::*;

/// How long one folder is swapped back and forth.
const SWAPPING: Duration = Duration::from_millis(2500);

/// Jobs queued before the swapping starts (each takes a moment to run).
const JOBS: usize = 24;

/// What every decoy file holds, so its bytes are recognised anywhere.
const DECOY: &str = "DECOY-BYTES";

/// One entry of a tree, as seen without following links.
#[derive(Debug, PartialEq, Eq, Clone)]
struct Seen {
    kind: &'static str,
    bytes: Vec<u8>,
    link: Option<PathBuf>,
    ino: u64,
    mtime: (i64, i64),
}

/// Every entry under `dir` (itself included), never following a link.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Seen)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(p) = todo.pop() {
        let m = std::fs::symlink_metadata(&p).unwrap();
        let t = m.file_type();
        let (kind, bytes, link) = if t.is_symlink() {
            ("link", Vec::new(), std::fs::read_link(&p).ok())
        } else if t.is_dir() {
            for e in std::fs::read_dir(&p).unwrap() {
                todo.push(e.unwrap().path());
            }
            ("dir", Vec::new(), None)
        } else {
            ("file", std::fs::read(&p).unwrap(), None)
        };
        let seen = Seen {
            kind,
            bytes,
            link,
            ino: m.ino(),
            mtime: (m.mtime(), m.mtime_nsec()),
        };
        out.push((p, seen));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn set_age(p: &Path, age: Duration) {
    std::fs::File::options()
        .write(true)
        .open(p)
        .unwrap()
        .set_modified(SystemTime::now() - age)
        .unwrap();
}

/// A decoy folder outside the root holding what the listener and `sweep`
/// would take for their own: job and marker names of the flood, logs, a
/// consumed marker, old markers and old temp files, and a sub-folder.
fn decoy(w: &World, ids: &[String]) -> PathBuf {
    let d = w.dir.path().join("decoy");
    std::fs::create_dir_all(d.join("sub")).unwrap();
    let mut names = vec![
        "precious.txt".to_string(),
        "garbage-1.json".to_string(),
        "old-marker.json".to_string(),
        ".a.json.0123456789ab.tmp".to_string(),
        "sub/inner.json".to_string(),
    ];
    for id in ids.iter().take(6) {
        names.push(format!("{id}.json"));
        names.push(format!("{id}.stdout.log"));
        names.push(format!("{id}.cancel.json"));
    }
    for n in &names {
        let p = d.join(n);
        std::fs::write(&p, format!("{DECOY} {n}\n")).unwrap();
        set_age(&p, Duration::from_secs(3 * 86400));
    }
    d
}

/// The regular files under the root that hold decoy bytes.
fn decoy_bytes_in(root: &Path) -> Vec<PathBuf> {
    snapshot(root)
        .into_iter()
        .filter(|(_, s)| {
            s.kind == "file" && s.bytes.windows(DECOY.len()).any(|w| w == DECOY.as_bytes())
        })
        .map(|(p, _)| p)
        .collect()
}

/// A tiny xorshift for pauses that vary without a crate.
struct Rng(u64);
impl Rng {
    fn pause(&mut self) -> Duration {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        Duration::from_micros(self.0 % 3000)
    }
}

/// Puts the real folder back at `real` from `aside`. When the listener
/// made a fresh folder there meanwhile, the entries are moved into it.
fn restore(real: &Path, aside: &Path) {
    if std::fs::symlink_metadata(real).is_ok_and(|m| m.file_type().is_symlink()) {
        let _ = std::fs::remove_file(real);
    }
    if std::fs::rename(aside, real).is_ok() {
        return;
    }
    merge(aside, real);
}

/// Moves the entries of `from` into `into`, merging folders both hold
/// (`archive/` comes back with its own `done/`, … made afresh), then
/// removes `from`.
fn merge(from: &Path, into: &Path) {
    if let Ok(entries) = std::fs::read_dir(from) {
        for e in entries.flatten() {
            let to = into.join(e.file_name());
            let both_dirs = e.file_type().is_ok_and(|t| t.is_dir())
                && std::fs::symlink_metadata(&to).is_ok_and(|m| m.is_dir());
            if both_dirs {
                merge(&e.path(), &to);
            } else if std::fs::symlink_metadata(&to).is_err() {
                let _ = std::fs::rename(e.path(), to);
            }
        }
    }
    let _ = std::fs::remove_dir(from);
}

/// Swaps `<PC>/<sub>` for a link to `decoy` and back until `stop`.
fn swapper(pc: PathBuf, sub: &'static str, decoy: PathBuf, stop: Arc<AtomicBool>) -> usize {
    let real = pc.join(sub);
    let aside = real.with_file_name(format!(
        "{}.aside",
        real.file_name().unwrap().to_str().unwrap()
    ));
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ sub.len() as u64);
    let mut swaps = 0;
    while !stop.load(Ordering::Relaxed) {
        let is_dir = std::fs::symlink_metadata(&real).is_ok_and(|m| m.is_dir());
        if !is_dir || std::fs::rename(&real, &aside).is_err() {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        let _ = std::os::unix::fs::symlink(&decoy, &real);
        swaps += 1;
        std::thread::sleep(rng.pause());
        restore(&real, &aside);
        std::thread::sleep(rng.pause());
    }
    swaps
}

/// Runs `sweep` over and over until `stop`.
fn sweeper(w: &World, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let (_, out, err) = output(w.cmd().args(["sweep", "--max-age", "1s"]));
        assert!(!format!("{out}{err}").contains("panicked"), "{out}{err}");
    }
}

fn swapped_while_draining(sub: &'static str) {
    let w = World::with_target();
    let side = w.dir.path().join("side");
    let ids: Vec<String> = (0..JOBS).map(|n| uid(&format!("swap{n}"))).collect();
    let decoy = decoy(&w, &ids);
    let before = snapshot(&decoy);

    // The flood is queued before the swapping starts: the test's own
    // writes must not go through a link either.
    for (n, id) in ids.iter().enumerate() {
        let spec = kit_spec(&["append", p(&side), id, "sleep", "0.03"]);
        w.write_job("PC", id, "PC", &now_text(), &spec);
        match n % 6 {
            1 => {
                w.write_marker("PC", id, "PC");
            }
            3 => std::fs::write(w.marker(id), b"{not a marker").unwrap(),
            _ => {}
        }
    }
    for n in 0..4 {
        std::fs::write(
            w.pc().join("inbox").join(format!("garbage-{n}.json")),
            b"\xff{",
        )
        .unwrap();
    }
    let mut l = ListenerGuard::spawn(w.bg_cmd().args([
        "listen",
        "--poll-interval",
        "50ms",
        "--settle",
        "0s",
    ]));

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = std::thread::spawn({
        let (pc, decoy, stop) = (w.pc(), decoy.clone(), Arc::clone(&stop));
        move || swapper(pc, sub, decoy, stop)
    });
    let started = Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| sweeper(&w, &stop));
        std::thread::sleep(SWAPPING);
        stop.store(true, Ordering::Relaxed);
    });
    let swaps = swaps.join().unwrap();
    assert!(swaps > 10, "only {swaps} swaps in {:?}", started.elapsed());
    if l.child.as_mut().unwrap().try_wait().unwrap().is_some() {
        let (code, out, err) = l.wait(Duration::from_secs(1));
        panic!("the listener stopped while {sub} was swapped (exit {code}): {out}{err}");
    }

    // Let the listener finish what is left, then stop it.
    wait_until(Duration::from_secs(10), || {
        files(&w.pc().join("inbox"))
            .iter()
            .all(|n| !n.ends_with(".json"))
    });
    l.signal(libc::SIGTERM);
    let (code, out, err) = l.wait(Duration::from_secs(10));
    assert_eq!(code, 130, "{out}{err}");
    assert!(!err.contains("panicked"), "{err}");

    let after = snapshot(&decoy);
    let changed: Vec<String> = before
        .iter()
        .filter(|b| !after.contains(b))
        .map(|(p, _)| format!("changed or gone: {}", p.display()))
        .chain(
            after
                .iter()
                .filter(|a| !before.iter().any(|b| b.0 == a.0))
                .map(|(p, _)| format!("new: {}", p.display())),
        )
        .collect();
    assert!(
        changed.is_empty(),
        "{sub}: the decoy changed:\n{}",
        changed.join("\n")
    );
    let leaked = decoy_bytes_in(&w.root);
    assert!(
        leaked.is_empty(),
        "{sub}: decoy bytes read into the root: {leaked:?}"
    );
    let mut ran = lines(&side);
    let all = ran.len();
    ran.sort();
    ran.dedup();
    assert_eq!(ran.len(), all, "{sub}: a job ran twice: {:?}", lines(&side));
}

#[test]
fn inbox_swapped_for_a_link_reaches_nothing_outside() {
    swapped_while_draining("inbox");
}

#[test]
fn cancel_swapped_for_a_link_reaches_nothing_outside() {
    swapped_while_draining("cancel");
}

#[test]
fn running_swapped_for_a_link_reaches_nothing_outside() {
    swapped_while_draining("running");
}

#[test]
fn results_swapped_for_a_link_reaches_nothing_outside() {
    swapped_while_draining("results");
}

#[test]
fn logs_swapped_for_a_link_reaches_nothing_outside() {
    swapped_while_draining("logs");
}

#[test]
fn archive_swapped_for_a_link_reaches_nothing_outside() {
    swapped_while_draining("archive");
}

#[test]
fn done_swapped_for_a_link_reaches_nothing_outside() {
    swapped_while_draining("archive/done");
}

#[test]
fn consumed_swapped_for_a_link_reaches_nothing_outside() {
    swapped_while_draining("archive/consumed");
}

#[test]
fn rejected_swapped_for_a_link_reaches_nothing_outside() {
    swapped_while_draining("archive/rejected");
}

/// Runs `swap` on `<root>/PC/logs` while the first of two jobs of one
/// `listen --once` drain runs; returns the drain's counters and the ids.
/// (The job's output logs are created through the folders of its pass;
/// results are placed by the publisher, which opens its own.)
fn swapped_between_two_jobs(
    w: &World,
    swap: impl FnOnce(&Path),
) -> (serde_json::Value, [String; 2]) {
    let started = w.dir.path().join("first-started");
    let gate = w.dir.path().join("gate");
    let first = w.enqueue(&[], &kit(&["touch", p(&started), "wait-for", p(&gate)]));
    let second = w.enqueue(&[], &kit(&["out", "second"]));
    let listener = w
        .bg_cmd()
        .args(["--json", "listen", "--once", "--settle", "0s"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_until(Duration::from_secs(10), || started.exists());
    swap(&w.pc().join("logs"));
    // The first job runs past the 10 ms within which a pass keeps the
    // folders unlooked at (docs/protocol.md §3.5).
    std::thread::sleep(Duration::from_millis(50));
    std::fs::write(&gate, "").unwrap();
    let out = listener.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last().unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(last).unwrap_or_default();
    (v["counters"].clone(), [first, second])
}

#[test]
fn a_folder_replaced_between_two_jobs_of_one_drain_is_opened_again() {
    // A real folder put in the place of logs/: the second job's pass sees
    // the name lead elsewhere and writes its output log in the new one.
    let w = World::with_target();
    let (counters, [_, second]) = swapped_between_two_jobs(&w, |logs| {
        std::fs::rename(logs, logs.with_file_name("logs-before")).unwrap();
        std::fs::create_dir(logs).unwrap();
    });
    assert_eq!(counters["done"], 2, "{counters}");
    let new = w.pc().join("logs");
    let log = new.join(format!("{second}.stdout.log"));
    assert_eq!(
        std::fs::read_to_string(&log).unwrap_or_default().trim(),
        "second",
        "{:?}",
        files(&new)
    );
}

#[test]
fn a_folder_swapped_for_a_link_between_two_jobs_of_one_drain_is_moved_aside() {
    let w = World::with_target();
    let decoy = decoy(&w, &[]);
    let before = snapshot(&decoy);
    let (counters, [_, second]) = swapped_between_two_jobs(&w, |logs| {
        std::fs::rename(logs, logs.with_file_name("logs-before")).unwrap();
        std::os::unix::fs::symlink(&decoy, logs).unwrap();
    });
    assert_eq!(counters["done"], 2, "{counters}");
    assert_eq!(
        counters["repaired"], 1,
        "the link was moved aside: {counters}"
    );
    let logs = w.pc().join("logs");
    assert!(std::fs::symlink_metadata(&logs).unwrap().is_dir());
    assert!(
        logs.join(format!("{second}.stdout.log")).exists(),
        "{:?}",
        files(&logs)
    );
    assert_eq!(snapshot(&decoy), before, "nothing reached the decoy");
}

#[test]
fn result_logs_and_cancel_refuse_a_results_folder_that_is_a_link() {
    let w = World::with_target();
    let id = uid("linked");
    w.write_job("PC", &id, "PC", &now_text(), &kit_spec(&[]));
    w.listen_once(&[]);
    assert!(w.result_path(&id).is_file());
    // results/ moved and replaced by a link to it: the result is behind a
    // link no command follows, so none may answer "not seen yet".
    let results = w.pc().join("results");
    let real = w.pc().join("results.real");
    std::fs::rename(&results, &real).unwrap();
    std::os::unix::fs::symlink(&real, &results).unwrap();
    for args in [
        vec!["result", "--target", "PC", "--job-id", &id],
        vec!["logs", "--target", "PC", "--job-id", &id],
        vec!["cancel", "--target", "PC", "--job-id", &id],
    ] {
        let (code, out, err) = w.run(&args);
        assert_eq!(code, 77, "{args:?}: {out}{err}");
        assert!(err.contains("results"), "{args:?}: {err}");
    }
    assert!(!w.marker(&id).exists(), "cancel wrote a marker");
}
