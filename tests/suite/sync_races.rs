//! Sync races (docs/protocol.md §1, §3, §6, §7): what sync engines do to
//! a folder queue, simulated on a real root with the real listener running.
//! Each test is one engine behaviour from `notes/sync-engines.md`: conflict
//! copies and temp files beside ours, files that arrive in pieces, a move
//! delivered as a copy and a delete in either order, deleted files and swept
//! markers that come back, modification times from another machine's clock,
//! a folder a scanner holds for a while, and a name that is already taken.
//!
//! Every job appends to a side-effect file outside the root, so "ran once"
//! and "never ran" are counted, not assumed.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
#[cfg(target_os = "linux")]
use std::process::Command;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};

use crate::util::*;

// ---------------------------------------------------------------- helpers

const HOUR: u64 = 3600;

/// A spec whose job appends `word`, then waits for `release` to exist.
fn appends_then_waits(file: &Path, word: &str, release: &Path) -> Value {
    json!({
        "argv": kit(&["append", p(file), word, "wait-for", p(release)]),
        "timeoutSec": 60,
    })
}

/// A job envelope for PC from LAPTOP signed with the fleet key.
fn job_bytes(id: &str, created_at: &str, spec: &Value) -> Vec<u8> {
    job_doc(
        id,
        "PC",
        created_at,
        "LAPTOP",
        &spec.to_string(),
        Signer::Fleet,
    )
    .to_string()
    .into_bytes()
}

/// A cancel marker for `id` on PC signed with the fleet key, with this createdAt.
fn marker_bytes(id: &str, created_at: &str) -> Vec<u8> {
    marker_doc(id, "PC", created_at, "LAPTOP", Signer::Fleet)
        .to_string()
        .into_bytes()
}

fn read(f: &Path) -> Vec<u8> {
    std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()))
}

fn exists(f: &Path) -> bool {
    std::fs::symlink_metadata(f).is_ok()
}

/// Sets a file's modification time (the writer's clock, as engines carry it).
fn set_mtime(f: &Path, t: SystemTime) {
    File::options()
        .write(true)
        .open(f)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

fn hours_ago(h: u64) -> SystemTime {
    SystemTime::now() - Duration::from_secs(h * HOUR)
}

fn hours_ahead(h: u64) -> SystemTime {
    SystemTime::now() + Duration::from_secs(h * HOUR)
}

fn ledger(w: &World) -> String {
    std::fs::read_to_string(w.state.join("pc").join("ledger.jsonl")).unwrap_or_default()
}

/// The `.reason.json` beside a rejected input.
fn reason(w: &World, name: &str) -> Value {
    let f = w.rejected(&format!("{name}.reason.json"));
    let text =
        std::fs::read_to_string(&f).unwrap_or_else(|_| panic!("no reason file {}", f.display()));
    serde_json::from_str(&text).unwrap()
}

/// Waits until `name` is in archive/rejected with its reason, and checks the
/// reason names `verdict`.
fn wait_rejected(w: &World, name: &str, verdict: &str) -> Value {
    wait_until(Duration::from_secs(15), || {
        exists(&w.rejected(name)) && exists(&w.rejected(&format!("{name}.reason.json")))
    });
    let r = reason(w, name);
    assert_eq!(r["verdict"], verdict, "{name}: {r}");
    for k in ["message", "rejectedAt"] {
        assert!(r[k].as_str().is_some_and(|s| !s.is_empty()), "{k} in {r}");
    }
    r
}

fn rejected_names(w: &World) -> Vec<String> {
    files(&w.pc().join("archive").join("rejected"))
}

/// A loop listener whose output goes to files (never a pipe that could
/// fill up), killed on drop.
struct Listener {
    child: Option<Child>,
    out: PathBuf,
    err: PathBuf,
}

impl Listener {
    /// `listen --poll-interval 100ms --settle SETTLE`, waiting for its heartbeat.
    fn start(w: &World, settle: &str) -> Listener {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::SeqCst);
        let out = scratch(w, &format!("listener-{n}.out"));
        let err = scratch(w, &format!("listener-{n}.err"));
        let hb = w.pc().join("listener.json");
        let _ = std::fs::remove_file(&hb);
        let child = w
            .bg_cmd()
            .args(["listen", "--poll-interval", "100ms", "--settle", settle])
            .stdout(File::create(&out).unwrap())
            .stderr(File::create(&err).unwrap())
            .start();
        let mut l = Listener {
            child: Some(child),
            out,
            err,
        };
        wait_until(Duration::from_secs(10), || {
            assert!(l.running(), "the listener exited: {}", l.output());
            exists(&hb)
        });
        l
    }

    fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().unwrap().is_none())
    }

    /// What it printed so far, stdout then stderr.
    fn output(&self) -> String {
        let o = std::fs::read_to_string(&self.out).unwrap_or_default();
        let e = std::fs::read_to_string(&self.err).unwrap_or_default();
        format!("{o}{e}")
    }

    /// Waits for it to exit by itself; returns its status.
    fn wait_exit(&mut self, limit: Duration) -> i32 {
        let mut c = self.child.take().unwrap();
        let until = Instant::now() + limit;
        loop {
            if let Some(s) = c.try_wait().unwrap() {
                return s.code().unwrap_or(-1);
            }
            if Instant::now() > until {
                let _ = c.kill();
                let _ = c.wait();
                panic!("the listener did not exit within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops it politely (Ctrl-C on Unix, `listen --drain` on Windows, see
    /// [`polite_stop`]), then its status and output; the summary must say
    /// no panic.
    fn stop(mut self, w: &World) -> (i32, String) {
        polite_stop::ask(w, self.child.as_ref().unwrap(), libc::SIGINT);
        let code = self.wait_exit(Duration::from_secs(15));
        let text = self.output();
        assert!(!text.contains("panicked"), "the listener panicked: {text}");
        (code, text)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Stops a listener politely and checks its human summary line.
fn stop_with_summary(w: &World, l: Listener, summary: &str) {
    let (code, text) = l.stop(w);
    assert_eq!(code, polite_stop::EXIT, "{text}");
    assert!(text.contains(summary), "expected {summary:?} in: {text}");
    assert!(text.contains(polite_stop::SUMMARY_MARK), "{text}");
}

/// A job processed by a loop listener: its id and its job file's bytes.
fn processed(w: &World, l: &mut Listener, side: &Path) -> (String, Vec<u8>) {
    let id = uid("done");
    let f = w.write_job("PC", &id, "PC", &now_text(), &appends(side, "ran"));
    let bytes = read(&f);
    let r = w.wait_result(&id, Duration::from_secs(15));
    assert_eq!(r["ok"], true, "{r}");
    wait_until(Duration::from_secs(5), || {
        exists(&w.done(&id)) && ledger(w).contains(&id) && open_job(w).is_none()
    });
    assert!(l.running());
    assert_eq!(lines(side), ["ran"]);
    (id, bytes)
}

/// The names sync engines put beside `<id>.json` that are not job ids.
fn engine_names(id: &str) -> Vec<String> {
    vec![
        format!("{id}.sync-conflict-20261129-193000-ABCDEFG.json"),
        format!(".syncthing.{id}.json.tmp"),
        format!("~syncthing~{id}.json.tmp"),
        format!("~${id}.json"),
        format!("{id} (PC's conflicted copy 2026-11-29).json"),
        format!("{id} (Case Conflict).json"),
        format!("{id}.json.partial"),
    ]
}

/// Conflict copies whose names do match the id pattern.
fn id_shaped_copies(id: &str) -> Vec<String> {
    vec![
        format!("{id}-PC.json"),
        format!("{id}-PC-safeBackup-0001.json"),
    ]
}

/// Writes every engine name (and a `.dropbox.cache/<id>.json`) into `dir`
/// holding `body`; returns the relative paths written.
fn drop_engine_files(dir: &Path, id: &str, body: &[u8]) -> Vec<String> {
    let mut names = engine_names(id);
    for n in &names {
        std::fs::write(dir.join(n), body).unwrap();
    }
    std::fs::create_dir_all(dir.join(".dropbox.cache")).unwrap();
    let cached = format!(".dropbox.cache/{id}.json");
    std::fs::write(dir.join(&cached), body).unwrap();
    names.push(cached);
    names
}

fn assert_untouched(dir: &Path, names: &[String], body: &[u8]) {
    for n in names {
        let f = dir.join(n);
        assert!(exists(&f), "{n} was moved or deleted");
        assert_eq!(read(&f), body, "{n} was changed");
    }
}

// ------------------------------------------------ conflict copies and temps

#[test]
fn engine_temp_files_and_conflict_copies_in_the_inbox_never_run_and_are_never_moved() {
    let w = World::with_target();
    let id = uid("conflict");
    let side = scratch(&w, "side");
    let inbox = w.pc().join("inbox");
    // Each copy holds a genuine job for `id` whose run would say "copy".
    let copy = job_bytes(&id, &now_text(), &appends(&side, "copy"));
    let ignored = drop_engine_files(&inbox, &id, &copy);
    let shaped = id_shaped_copies(&id);
    for n in &shaped {
        std::fs::write(inbox.join(n), &copy).unwrap();
    }
    let l = Listener::start(&w, "2s");
    w.write_job("PC", &id, "PC", &now_text(), &appends(&side, "ran"));
    let r = w.wait_result(&id, Duration::from_secs(15));
    assert_eq!(r["ok"], true, "{r}");
    for n in &shaped {
        wait_rejected(&w, n, "job-id-mismatch");
        assert_eq!(read(&w.rejected(n)), copy, "{n} changed on its way");
    }
    // Longer than the settle time: nothing left is waiting to be judged.
    std::thread::sleep(Duration::from_millis(2500));
    stop_with_summary(
        &w,
        l,
        "done 1, failed 0, cancelled 0, deferred 0, rejected 2",
    );
    assert_eq!(lines(&side), ["ran"], "a copy ran");
    assert_untouched(&inbox, &ignored, &copy);
    let mut rest = files(&inbox);
    rest.sort();
    let mut want = ignored.clone();
    want.sort();
    assert_eq!(rest, want);
}

#[test]
fn engine_temp_files_and_conflict_copies_in_cancel_never_act_as_markers() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let release = scratch(&w, "release");
    let running = uid("runs");
    let queued = uid("waits");
    let cancel = w.pc().join("cancel");
    let mut ignored = Vec::new();
    let mut shaped = Vec::new();
    for id in [&running, &queued] {
        // A genuine marker for the job, under every name but the real one.
        let m = marker_bytes(id, &now_text());
        ignored.push((drop_engine_files(&cancel, id, &m), m.clone()));
        for n in id_shaped_copies(id) {
            std::fs::write(cancel.join(&n), &m).unwrap();
            shaped.push((n, m.clone()));
        }
    }
    w.write_job(
        "PC",
        &running,
        "PC",
        &ts_offset(-2),
        &appends_then_waits(&side, "started", &release),
    );
    w.write_job(
        "PC",
        &queued,
        "PC",
        &ts_offset(-1),
        &appends(&side, "queued"),
    );
    let l = Listener::start(&w, "2s");
    wait_until(Duration::from_secs(10), || lines(&side) == ["started"]);
    // Many watcher polls (100 ms) while the job runs.
    std::thread::sleep(Duration::from_millis(1500));
    std::fs::write(&release, b"").unwrap();
    for id in [&running, &queued] {
        let r = w.wait_result(id, Duration::from_secs(15));
        assert_eq!(
            (r["ok"].clone(), r["error"].clone()),
            (json!(true), json!(""))
        );
    }
    stop_with_summary(&w, l, "done 2, failed 0, cancelled 0");
    assert_eq!(lines(&side), ["started", "queued"]);
    for (names, body) in &ignored {
        assert_untouched(&cancel, names, body);
    }
    // An id-shaped copy is either never looked at, or refused as a
    // renamed marker; it never vanishes unexplained.
    for (n, body) in &shaped {
        if exists(&cancel.join(n)) {
            assert_eq!(&read(&cancel.join(n)), body);
        } else {
            assert_eq!(reason(&w, n)["verdict"], "job-id-mismatch");
        }
    }
    assert!(files(&w.pc().join("archive").join("consumed")).is_empty());
}

#[test]
fn sweep_never_removes_engine_temp_files_or_conflict_copies_however_old() {
    let w = World::with_target();
    let id = uid("sweepme");
    let body = marker_bytes(&id, &ts_offset(-48 * 3600));
    let mut kept = Vec::new();
    for dir in ["inbox", "cancel"] {
        let d = w.pc().join(dir);
        for n in drop_engine_files(&d, &id, &body) {
            set_mtime(&d.join(&n), hours_ago(48));
            kept.push(d.join(n));
        }
    }
    // Controls sweep must remove, so the test sees it at work: a marker
    // two days old whose job is gone, and our own temp file two hours old.
    let stale = w.marker(&uid("gone"));
    std::fs::write(&stale, &body).unwrap();
    set_mtime(&stale, hours_ago(48));
    let ours = w
        .pc()
        .join("cancel")
        .join(format!(".{id}.json.0123456789ab.tmp"));
    std::fs::write(&ours, b"{").unwrap();
    set_mtime(&ours, hours_ago(2));

    let (code, out, err) = w.run(&["--json", "sweep"]);
    assert_eq!(code, 0, "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let mut removed: Vec<String> = v["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["path"].as_str().unwrap().to_string())
        .collect();
    removed.sort();
    let mut want = vec![p(&stale).to_string(), p(&ours).to_string()];
    want.sort();
    assert_eq!(removed, want, "{out}");
    for f in &kept {
        assert!(exists(f), "sweep removed {}", f.display());
        assert_eq!(read(f), body);
    }
}

// ------------------------------------------------ files arriving in pieces

#[test]
fn a_job_file_written_in_two_halves_300ms_apart_runs_once_and_nothing_is_rejected() {
    let w = World::with_target();
    let id = uid("halves");
    let side = scratch(&w, "side");
    let body = job_bytes(&id, &now_text(), &appends(&side, "ran"));
    let l = Listener::start(&w, "2s");
    // A writer without temp-then-rename, as another machine's engine may be.
    let mut f = File::create(w.inbox(&id)).unwrap();
    f.write_all(&body[..body.len() / 2]).unwrap();
    f.flush().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(exists(&w.inbox(&id)), "the half-written file was taken");
    assert!(!exists(&w.result_path(&id)), "half a job ran");
    f.write_all(&body[body.len() / 2..]).unwrap();
    drop(f);
    let r = w.wait_result(&id, Duration::from_secs(15));
    assert_eq!(r["ok"], true, "{r}");
    // Past the settle time: a late rejection of the half would show now.
    std::thread::sleep(Duration::from_millis(2200));
    stop_with_summary(
        &w,
        l,
        "done 1, failed 0, cancelled 0, deferred 0, rejected 0",
    );
    assert_eq!(lines(&side), ["ran"]);
    assert!(rejected_names(&w).is_empty(), "{:?}", rejected_names(&w));
}

#[test]
fn a_zero_byte_job_file_filled_2s_later_is_never_rejected_while_settling_and_runs_once() {
    let w = World::with_target();
    let id = uid("empty");
    let side = scratch(&w, "side");
    // A settle time longer than the gap: an engine that creates the name
    // first and the content 2 s later must not lose the job.
    let l = Listener::start(&w, "4s");
    std::fs::write(w.inbox(&id), b"").unwrap();
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(2) {
        assert!(exists(&w.inbox(&id)), "the empty file was taken");
        assert!(rejected_names(&w).is_empty(), "rejected while settling");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::write(
        w.inbox(&id),
        job_bytes(&id, &now_text(), &appends(&side, "ran")),
    )
    .unwrap();
    let r = w.wait_result(&id, Duration::from_secs(15));
    assert_eq!(r["ok"], true, "{r}");
    std::thread::sleep(Duration::from_millis(500));
    stop_with_summary(
        &w,
        l,
        "done 1, failed 0, cancelled 0, deferred 0, rejected 0",
    );
    assert_eq!(lines(&side), ["ran"]);
    assert!(rejected_names(&w).is_empty(), "{:?}", rejected_names(&w));
}

// ------------------------------------------------ a move as copy + delete

#[test]
fn a_move_to_archive_arriving_as_copy_then_delete_with_a_restart_in_the_gap_never_runs_twice() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let mut l = Listener::start(&w, "2s");
    let (id, bytes) = processed(&w, &mut l, &side);
    let result = read(&w.result_path(&id));
    let archived = read(&w.done(&id));
    stop_with_summary(&w, l, "done 1");
    // The copy lands (the job file is back in the inbox beside its archived
    // copy) and the listener restarts before the delete lands.
    std::fs::write(w.inbox(&id), &bytes).unwrap();
    let l = Listener::start(&w, "2s");
    let r = wait_rejected(&w, &format!("{id}.json"), "already-processed");
    assert!(!exists(&w.inbox(&id)));
    // The delete lands: nothing left to delete, nothing happens.
    let _ = std::fs::remove_file(w.inbox(&id));
    std::thread::sleep(Duration::from_millis(500));
    stop_with_summary(
        &w,
        l,
        "done 0, failed 0, cancelled 0, deferred 0, rejected 0, skipped 1",
    );
    assert_eq!(lines(&side), ["ran"], "the job ran a second time: {r}");
    assert_eq!(read(&w.result_path(&id)), result, "the result changed");
    assert_eq!(read(&w.done(&id)), archived, "the archived copy changed");
}

#[test]
fn a_move_to_archive_arriving_as_delete_then_copy_with_a_restart_in_the_gap_never_runs_twice() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let mut l = Listener::start(&w, "2s");
    let (id, bytes) = processed(&w, &mut l, &side);
    let result = read(&w.result_path(&id));
    let archived = read(&w.done(&id));
    stop_with_summary(&w, l, "done 1");
    // The delete lands first: the archived copy is missing for a while.
    std::fs::remove_file(w.done(&id)).unwrap();
    let l = Listener::start(&w, "2s");
    std::thread::sleep(Duration::from_millis(300));
    // The job file comes back while the archive is still missing.
    std::fs::write(w.inbox(&id), &bytes).unwrap();
    wait_rejected(&w, &format!("{id}.json"), "already-processed");
    // Then the copy lands in archive/done.
    std::fs::write(w.done(&id), &archived).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    stop_with_summary(
        &w,
        l,
        "done 0, failed 0, cancelled 0, deferred 0, rejected 0, skipped 1",
    );
    // Restart once more with everything in place: still nothing to do.
    let l = Listener::start(&w, "2s");
    std::thread::sleep(Duration::from_millis(500));
    stop_with_summary(
        &w,
        l,
        "done 0, failed 0, cancelled 0, deferred 0, rejected 0, skipped 0",
    );
    assert_eq!(lines(&side), ["ran"], "the job ran a second time");
    assert_eq!(read(&w.result_path(&id)), result, "the result changed");
}

// ------------------------------------------------ resurrection

#[derive(Clone, Copy, PartialEq)]
enum Guard {
    Results,
    Archive,
    Ledger,
}

/// A finished job's file comes back into the inbox after a restart, with
/// only `keep` of the three replay guards left; it must be refused by that
/// one alone, and no result may be written for it.
fn resurrection_is_refused_by(keep: Guard, place: &str) {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let mut l = Listener::start(&w, "2s");
    let (id, bytes) = processed(&w, &mut l, &side);
    let result = read(&w.result_path(&id));
    stop_with_summary(&w, l, "done 1");
    if keep != Guard::Results {
        std::fs::remove_file(w.result_path(&id)).unwrap();
    }
    if keep != Guard::Archive {
        std::fs::remove_file(w.done(&id)).unwrap();
    }
    if keep != Guard::Ledger {
        std::fs::remove_file(w.state.join("pc").join("ledger.jsonl")).unwrap();
    }
    let l = Listener::start(&w, "2s");
    std::fs::write(w.inbox(&id), &bytes).unwrap();
    let r = wait_rejected(&w, &format!("{id}.json"), "already-processed");
    assert!(
        r["message"].as_str().unwrap().contains(place),
        "refused, but not by {place}: {r}"
    );
    std::thread::sleep(Duration::from_millis(300));
    stop_with_summary(
        &w,
        l,
        "done 0, failed 0, cancelled 0, deferred 0, rejected 0, skipped 1",
    );
    assert_eq!(lines(&side), ["ran"], "the resurrected job ran again");
    if keep == Guard::Results {
        assert_eq!(read(&w.result_path(&id)), result, "the result changed");
    } else {
        assert!(!exists(&w.result_path(&id)), "a refusal wrote a result");
    }
}

#[test]
fn a_resurrected_job_file_is_refused_by_its_result_alone() {
    resurrection_is_refused_by(Guard::Results, "results/");
}

#[test]
fn a_resurrected_job_file_is_refused_by_its_archived_copy_alone() {
    resurrection_is_refused_by(Guard::Archive, "archive/done/");
}

#[test]
fn a_resurrected_job_file_is_refused_by_the_ledger_alone() {
    resurrection_is_refused_by(Guard::Ledger, "ledger");
}

#[test]
fn a_swept_marker_that_comes_back_after_its_job_finished_acts_on_nothing() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let mut l = Listener::start(&w, "2s");
    let (id, job) = processed(&w, &mut l, &side);
    let result = read(&w.result_path(&id));
    // A cancel that arrived after the finish, a day old by now: swept.
    let marker = marker_bytes(&id, &ts_offset(-25 * 3600));
    std::fs::write(w.marker(&id), &marker).unwrap();
    set_mtime(&w.marker(&id), hours_ago(25));
    let (code, out, err) = w.run(&["sweep"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        !exists(&w.marker(&id)),
        "sweep kept the stale marker: {out}"
    );
    // The engine brings it back (with its old mtime), and the job file too.
    std::fs::write(w.marker(&id), &marker).unwrap();
    set_mtime(&w.marker(&id), hours_ago(25));
    std::fs::write(w.inbox(&id), &job).unwrap();
    wait_rejected(&w, &format!("{id}.json"), "already-processed");
    // A later job with another id is unaffected.
    let later = uid("later");
    w.write_job("PC", &later, "PC", &now_text(), &appends(&side, "later"));
    let r = w.wait_result(&later, Duration::from_secs(15));
    assert_eq!(
        (r["ok"].clone(), r["error"].clone()),
        (json!(true), json!(""))
    );
    stop_with_summary(
        &w,
        l,
        "done 2, failed 0, cancelled 0, deferred 0, rejected 0, skipped 1",
    );
    assert_eq!(lines(&side), ["ran", "later"]);
    assert_eq!(read(&w.result_path(&id)), result, "the old result changed");
    assert!(!exists(&w.consumed(&later)));
}

// ------------------------------------------------ other machines' clocks

#[test]
fn a_marker_25h_old_by_mtime_for_a_queued_job_is_kept_by_sweep_and_still_honoured() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    // The target was offline for a day: its job waits, its cancel with it.
    let id = uid("offline");
    w.write_job(
        "PC",
        &id,
        "PC",
        &ts_offset(-26 * 3600),
        &appends(&side, "ran"),
    );
    let created = ts_offset(-25 * 3600);
    std::fs::write(w.marker(&id), marker_bytes(&id, &created)).unwrap();
    set_mtime(&w.marker(&id), hours_ago(25));
    // Control: the same age for a job that is not waiting is swept.
    let other = uid("nojob");
    std::fs::write(w.marker(&other), marker_bytes(&other, &created)).unwrap();
    set_mtime(&w.marker(&other), hours_ago(25));
    let (code, out, err) = w.run(&["sweep"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!exists(&w.marker(&other)), "the control was kept: {out}");
    assert!(
        exists(&w.marker(&id)),
        "sweep removed a queued job's marker"
    );

    let l = Listener::start(&w, "2s");
    let r = w.wait_result(&id, Duration::from_secs(15));
    assert_eq!(r["error"], "cancelled-before-start", "{r}");
    assert_eq!(w.detail(&id)["marker"]["createdAt"], created.as_str());
    stop_with_summary(&w, l, "done 0, failed 0, cancelled 1");
    assert!(lines(&side).is_empty(), "the cancelled job ran");
    assert!(exists(&w.consumed(&id)) && !exists(&w.marker(&id)));
}

#[test]
fn jobs_and_markers_with_mtimes_in_the_future_are_processed_normally() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    // A marker from a clock two hours ahead, for a job not queued: kept.
    let early = uid("ahead");
    std::fs::write(w.marker(&early), marker_bytes(&early, &now_text())).unwrap();
    set_mtime(&w.marker(&early), hours_ahead(2));
    // Control: an hour old is past this max age, and goes.
    let old = uid("old");
    std::fs::write(w.marker(&old), marker_bytes(&old, &now_text())).unwrap();
    set_mtime(&w.marker(&old), hours_ago(1));
    let (code, out, err) = w.run(&["sweep", "--max-age", "1s"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!exists(&w.marker(&old)), "the control was kept: {out}");
    assert!(exists(&w.marker(&early)), "sweep removed a future marker");

    let l = Listener::start(&w, "1s");
    // A job from that clock runs.
    let job = uid("future");
    let f = w.inbox(&job);
    std::fs::write(&f, job_bytes(&job, &now_text(), &appends(&side, "ran"))).unwrap();
    set_mtime(&f, hours_ahead(2));
    let r = w.wait_result(&job, Duration::from_secs(15));
    assert_eq!(
        (r["ok"].clone(), r["error"].clone()),
        (json!(true), json!(""))
    );
    // A job queued behind a future-mtime marker is cancelled before start.
    let cancelled = uid("stopped");
    std::fs::write(w.marker(&cancelled), marker_bytes(&cancelled, &now_text())).unwrap();
    set_mtime(&w.marker(&cancelled), hours_ahead(2));
    let f = w.write_job("PC", &cancelled, "PC", &now_text(), &appends(&side, "no"));
    set_mtime(&f, hours_ahead(2));
    let r = w.wait_result(&cancelled, Duration::from_secs(15));
    assert_eq!(r["error"], "cancelled-before-start", "{r}");
    // Garbage from that clock still settles (by the listener's own watch).
    let junk = uid("junk");
    std::fs::write(w.inbox(&junk), b"{\"jobId\": \"half").unwrap();
    set_mtime(&w.inbox(&junk), hours_ahead(2));
    wait_rejected(&w, &format!("{junk}.json"), "malformed");
    stop_with_summary(
        &w,
        l,
        "done 1, failed 0, cancelled 1, deferred 0, rejected 1",
    );
    assert_eq!(lines(&side), ["ran"]);
    assert!(exists(&w.marker(&early)));
}

// ------------------------------------------------ a folder held for a while

#[cfg(target_os = "linux")]
/// `chattr +i` on a directory, undone on drop (even when a test fails), so
/// renames and unlinks there fail with EPERM, even for root.
struct Immutable(PathBuf);

#[cfg(target_os = "linux")]
impl Immutable {
    fn set(dir: &Path) -> Result<Immutable, String> {
        let out = Command::new("chattr")
            .arg("+i")
            .arg(dir)
            .output()
            .map_err(|e| format!("chattr cannot run: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "chattr +i failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Immutable(dir.to_path_buf()))
    }
}

#[cfg(target_os = "linux")]
fn clear_immutable(dir: &Path) {
    let _ = Command::new("chattr")
        .arg("-i")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

#[cfg(target_os = "linux")]
impl Drop for Immutable {
    fn drop(&mut self) {
        clear_immutable(&self.0);
    }
}

/// Makes `dir` immutable from just before a job ends until two seconds
/// later, and checks that the bookkeeping waits (bounded retries) and then
/// completes, with one run.
#[cfg(target_os = "linux")]
fn held_for_two_seconds(dir: impl Fn(&World) -> PathBuf) {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let release = scratch(&w, "release");
    let l = Listener::start(&w, "2s");
    let id = uid("held");
    w.write_job(
        "PC",
        &id,
        "PC",
        &now_text(),
        &appends_then_waits(&side, "ran", &release),
    );
    wait_until(Duration::from_secs(10), || lines(&side) == ["ran"]);
    let lock = Immutable::set(&dir(&w)).unwrap_or_else(|why| panic!("{why}"));
    let locked_at = Instant::now();
    std::fs::write(&release, b"").unwrap();
    // While the folder is held the result is written but the job file
    // cannot leave the inbox.
    wait_until(Duration::from_secs(10), || exists(&w.result_path(&id)));
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        exists(&w.inbox(&id)) && !exists(&w.done(&id)),
        "the move went through a held folder"
    );
    std::thread::sleep(Duration::from_secs(2).saturating_sub(locked_at.elapsed()));
    let held = locked_at.elapsed();
    assert!(
        held < Duration::from_millis(4500),
        "held {held:?}: too slow to stay within the retry bound"
    );
    drop(lock);
    wait_until(Duration::from_secs(5), || {
        exists(&w.done(&id)) && !exists(&w.inbox(&id)) && open_job(&w).is_none()
    });
    assert!(ledger(&w).contains(&id), "the ledger lacks {id}");
    // Still listening, and healthy: a second job runs.
    let next = uid("next");
    w.write_job("PC", &next, "PC", &now_text(), &appends(&side, "next"));
    let r = w.wait_result(&next, Duration::from_secs(15));
    assert_eq!(r["ok"], true, "{r}");
    stop_with_summary(
        &w,
        l,
        "done 2, failed 0, cancelled 0, deferred 0, rejected 0, skipped 0",
    );
    assert_eq!(lines(&side), ["ran", "next"]);
    assert_eq!(w.result(&id)["ok"], true);
}

#[test]
#[cfg(target_os = "linux")] // `chattr +i` holds the folder; Windows: sharing violations, see `windows`
#[ignore = "needs root: makes a folder immutable with `chattr +i`"]
fn archive_done_refusing_renames_for_2s_delays_the_bookkeeping_which_then_completes_once() {
    held_for_two_seconds(|w| w.pc().join("archive").join("done"));
}

#[test]
#[cfg(target_os = "linux")] // `chattr +i` holds the folder; Windows: sharing violations, see `windows`
#[ignore = "needs root: makes a folder immutable with `chattr +i`"]
fn an_inbox_refusing_renames_for_2s_delays_the_bookkeeping_which_then_completes_once() {
    held_for_two_seconds(|w| w.pc().join("inbox"));
}

#[test]
#[cfg(target_os = "linux")] // `chattr +i` holds the folder; Windows: sharing violations, see `windows`
#[ignore = "needs root: makes a folder immutable with `chattr +i`"]
fn a_folder_held_past_the_retry_bound_is_a_clear_error_naming_it_and_a_restart_never_reruns() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let release = scratch(&w, "release");
    let mut l = Listener::start(&w, "2s");
    let id = uid("stuck");
    w.write_job(
        "PC",
        &id,
        "PC",
        &now_text(),
        &appends_then_waits(&side, "ran", &release),
    );
    wait_until(Duration::from_secs(10), || lines(&side) == ["ran"]);
    let done_dir = w.pc().join("archive").join("done");
    let lock = Immutable::set(&done_dir).unwrap_or_else(|why| panic!("{why}"));
    std::fs::write(&release, b"").unwrap();
    wait_until(Duration::from_secs(5), || exists(&w.result_path(&id)));
    let failing_since = Instant::now();
    let result = read(&w.result_path(&id));
    // The retry bound is 5 s: the listener gives up, saying where. Whether
    // it exits or carries on, the message must name the path.
    let named = p(&w.done(&id)).to_string();
    let until = Instant::now() + Duration::from_secs(20);
    while l.running() && !l.output().contains(&named) {
        assert!(
            Instant::now() < until,
            "no error within 20 s: {}",
            l.output()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let gave_up = failing_since.elapsed();
    assert!(
        gave_up >= Duration::from_millis(4000),
        "gave up after {gave_up:?}, before the retry bound"
    );
    assert!(
        gave_up <= Duration::from_secs(15),
        "retried for {gave_up:?}: unbounded"
    );
    if !l.running() {
        let code = l.wait_exit(Duration::from_secs(1));
        assert_eq!(code, 70, "{}", l.output());
    }
    let said = l.output();
    assert!(
        said.contains(&named),
        "the error does not name {named}: {said}"
    );
    assert!(!said.contains("panicked"), "{said}");
    drop(l);
    assert!(exists(&w.inbox(&id)) && !exists(&w.done(&id)));

    // The folder becomes writable again; the listener is restarted.
    drop(lock);
    let l = Listener::start(&w, "2s");
    wait_until(Duration::from_secs(10), || {
        exists(&w.done(&id)) && !exists(&w.inbox(&id)) && open_job(&w).is_none()
    });
    assert!(ledger(&w).contains(&id), "the ledger lacks {id}");
    let next = uid("next");
    w.write_job("PC", &next, "PC", &now_text(), &appends(&side, "next"));
    assert_eq!(w.wait_result(&next, Duration::from_secs(15))["ok"], true);
    stop_with_summary(
        &w,
        l,
        "done 1, failed 0, cancelled 0, deferred 0, rejected 0, skipped 0",
    );
    assert_eq!(lines(&side), ["ran", "next"], "the held job ran twice");
    assert_eq!(
        read(&w.result_path(&id)),
        result,
        "the result was rewritten"
    );
}

// ------------------------------------------------ a name already taken

fn enqueue_with_id(w: &World, id: &str, word: &str, side: &Path) -> (i32, String, String) {
    w.run(&[
        "enqueue",
        "--target",
        "PC",
        "--job-id",
        id,
        "--",
        p(&jobkit()),
        "append",
        p(side),
        word,
    ])
}

/// Only `<id>.json` itself may be in the inbox: no temp file left behind.
fn assert_inbox_holds_only(w: &World, names: &[String]) {
    assert_eq!(files(&w.pc().join("inbox")), names);
}

#[test]
fn enqueue_of_an_id_already_queued_is_refused_and_the_queued_file_is_untouched() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let id = uid("twice");
    let (code, out, err) = enqueue_with_id(&w, &id, "first", &side);
    assert_eq!(code, 0, "{out}{err}");
    let first = read(&w.inbox(&id));
    let (code, out, err) = enqueue_with_id(&w, &id, "second", &side);
    assert_eq!(code, 64, "{out}{err}");
    assert!(
        err.contains(&id) && err.contains("VALIDATION_ERROR"),
        "{err}"
    );
    assert!(
        !out.contains(&id),
        "a refusal printed the id as queued: {out}"
    );
    assert_eq!(read(&w.inbox(&id)), first, "the queued job was overwritten");
    assert_inbox_holds_only(&w, &[format!("{id}.json")]);
    assert_eq!(w.listen_once(&[])["done"], 1);
    assert_eq!(lines(&side), ["first"]);
}

#[test]
fn enqueue_of_an_id_found_in_archive_done_or_results_is_refused_and_writes_nothing() {
    for place in ["archive/done", "results"] {
        let w = World::with_target();
        let side = scratch(&w, "side");
        let id = uid("used");
        w.write_job("PC", &id, "PC", &now_text(), &appends(&side, "ran"));
        assert_eq!(w.listen_once(&[])["done"], 1);
        // Only one trace of the id is left.
        if place == "results" {
            std::fs::remove_file(w.done(&id)).unwrap();
        } else {
            std::fs::remove_file(w.result_path(&id)).unwrap();
        }
        let trace = w.pc().join(place).join(format!("{id}.json"));
        let before = read(&trace);
        let (code, out, err) = enqueue_with_id(&w, &id, "again", &side);
        assert_eq!(code, 64, "{place}: {out}{err}");
        assert!(err.contains(&id) && err.contains(place), "{place}: {err}");
        assert_eq!(read(&trace), before, "{place} changed");
        assert_inbox_holds_only(&w, &[]);
        assert_eq!(lines(&side), ["ran"]);
    }
}

#[test]
fn enqueue_never_overwrites_a_foreign_file_holding_the_id() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let id = uid("taken");
    // Whatever another writer put there, valid or not, stays as it is.
    std::fs::write(w.inbox(&id), b"{\"not\": \"ours\"").unwrap();
    let (code, out, err) = enqueue_with_id(&w, &id, "mine", &side);
    assert_eq!(code, 64, "{out}{err}");
    assert!(err.contains(&id), "{err}");
    assert_eq!(read(&w.inbox(&id)), b"{\"not\": \"ours\"");
    assert_inbox_holds_only(&w, &[format!("{id}.json")]);
}

#[test]
fn concurrent_enqueues_of_one_id_publish_exactly_one() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    for round in 0..5 {
        let id = uid("race");
        let children: Vec<Child> = (0..4)
            .map(|n| {
                w.bg_cmd()
                    .args(["enqueue", "--target", "PC", "--job-id", &id, "--"])
                    .args(kit(&["append", p(&side), &n.to_string()]))
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .start()
            })
            .collect();
        let codes: Vec<i32> = children
            .into_iter()
            .map(|c| c.wait_with_output().unwrap().status.code().unwrap_or(-1))
            .collect();
        assert_eq!(
            codes.iter().filter(|&&c| c == 0).count(),
            1,
            "round {round}: {codes:?}"
        );
        assert!(codes.iter().all(|&c| c == 0 || c == 64), "{codes:?}");
        assert_inbox_holds_only(&w, &[format!("{id}.json")]);
        let body: Value = serde_json::from_slice(&read(&w.inbox(&id))).unwrap();
        assert_eq!(
            body["sig"].as_str(),
            Some(independent_sig(&job_canonical_of(&body)).as_str()),
            "a torn file: {body}"
        );
        std::fs::remove_file(w.inbox(&id)).unwrap();
    }
}

#[test]
#[cfg(target_os = "linux")] // `chattr +i` makes the folder unwritable even for root
#[ignore = "needs root: makes a folder immutable with `chattr +i`"]
fn a_listener_that_cannot_write_its_results_folder_starts_no_job() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let id = uid("unplaceable");
    w.write_job("PC", &id, "PC", &now_text(), &appends(&side, "ran"));
    let results = w.pc().join("results");
    let held = Immutable::set(&results).unwrap_or_else(|why| panic!("{why}"));
    let (code, out, err) = w.run(&["listen", "--once"]);
    assert_eq!(code, 70, "{out}{err}");
    assert!(
        err.contains(&p(&results).to_string()),
        "the error names results/: {err}"
    );
    assert!(
        lines(&side).is_empty(),
        "a job ran whose result could not be placed"
    );
    assert!(w.inbox(&id).exists(), "the job is still queued");
    drop(held);
    assert_eq!(w.listen_once(&[])["done"], 1);
    assert_eq!(lines(&side), ["ran"]);
}
