//! The HTTP intake: `listen --http`, its four endpoints, the error
//! mapping, hostile clients, and `enqueue`/`cancel --via` — against a real
//! listener on loopback, with raw `TcpStream` requests signed independently
//! and the real CLI. A job taken over HTTP goes through the inbox, so each
//! test here checks what the folder shows as well as what the server says.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::util::*;

/// Long enough for any result in this module.
const RESULT_LIMIT: Duration = Duration::from_secs(20);

/// The server's worker pool and queue (src/front/http/server.rs `Limits`).
const WORKERS_AND_QUEUE: usize = 4 + 8;

/// A listener with its HTTP intake, killed when dropped.
struct Intake {
    _guard: ListenerGuard,
    addr: SocketAddr,
}

impl Intake {
    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// A port nobody listens on right now (bound, then released).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts `listen --http 127.0.0.1:<free port>` and waits until the intake
/// answers a signed status request naming this world's root: the port was
/// free a moment ago, so another process may take it first; then retry.
fn intake(w: &World, poll: &str, extra: &[&str]) -> Intake {
    intake_at(w, poll, extra, |addr| addr.to_string())
}

/// [`intake`] with `--http` written by `spell` from the loopback address.
fn intake_at(
    w: &World,
    poll: &str,
    extra: &[&str],
    spell: impl Fn(SocketAddr) -> String,
) -> Intake {
    for _ in 0..5 {
        let addr: SocketAddr = ([127, 0, 0, 1], free_port()).into();
        let log = std::fs::File::create(w.dir.path().join("listener.log")).unwrap();
        let child = w
            .bg_cmd()
            .args(["listen", "--poll-interval", poll, "--settle", "2s"])
            .args(["--http", &spell(addr)])
            .args(extra)
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .start();
        let mut guard = ListenerGuard { child: Some(child) };
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if guard.child.as_mut().unwrap().try_wait().unwrap().is_some() {
                break;
            }
            // Another test may hold the port (its intake is then not ours,
            // and may be busy or going away): never trust, never panic.
            let ours = json!(w.root.display().to_string());
            if probe(addr).is_some_and(|(status, body)| status == 200 && body["root"] == ours) {
                return Intake {
                    _guard: guard,
                    addr,
                };
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    panic!(
        "no HTTP intake came up: {}",
        std::fs::read_to_string(w.dir.path().join("listener.log")).unwrap_or_default()
    );
}

/// A signed status request with short timeouts; `None` for no answer.
fn probe(addr: SocketAddr) -> Option<(u16, Value)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    s.write_all(&get_request("/v1/status", now_unix())).ok()?;
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let text = String::from_utf8(buf).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, serde_json::from_str(body).ok()?))
}

fn now_unix() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Sends `raw` on a fresh connection and reads the whole answer.
fn exchange(addr: SocketAddr, raw: &[u8]) -> (u16, Value) {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    exchange_on(&mut s, raw)
}

fn exchange_on(s: &mut TcpStream, raw: &[u8]) -> (u16, Value) {
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(raw).unwrap();
    read_answer(s)
}

/// Status and JSON body of whatever the server sends before it closes.
fn read_answer(s: &mut TcpStream) -> (u16, Value) {
    let mut buf = Vec::new();
    // A reset after the answer still leaves the answer in `buf`.
    let _ = s.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("not an HTTP answer: {text:?}"));
    assert!(head.contains("\r\nConnection: close"), "{head}");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

fn post_request(path: &str, body: &str) -> Vec<u8> {
    format!(
        "POST {path} HTTP/1.1\r\nHost: pc\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A GET to PC's listener signed with the fleet key.
fn get_request(path: &str, t: i64) -> Vec<u8> {
    get_with_header(path, &request_header("PC", path, t, Signer::Fleet))
}

fn get_with_header(path: &str, header: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: pc\r\nX-Fleet-Signature: {header}\r\n\r\n").into_bytes()
}

fn post(i: &Intake, path: &str, body: &str) -> (u16, Value) {
    exchange(i.addr, &post_request(path, body))
}

fn get(i: &Intake, path: &str) -> (u16, Value) {
    exchange(i.addr, &get_request(path, now_unix()))
}

/// A job body signed with the fleet key, origin `LAPTOP`.
fn job_text(id: &str, target: &str, created: &str, spec: &Value) -> String {
    job_doc(
        id,
        target,
        created,
        "LAPTOP",
        &spec.to_string(),
        Signer::Fleet,
    )
    .to_string()
}

fn job_for_pc<S: AsRef<str>>(id: &str, argv: &[S]) -> String {
    let argv: Vec<&str> = argv.iter().map(AsRef::as_ref).collect();
    job_text(id, "PC", &now_text(), &json!({"argv": argv}))
}

fn marker_text(id: &str, target: &str) -> String {
    marker_doc(id, target, &now_text(), "LAPTOP", Signer::Fleet).to_string()
}

fn cancel_path(id: &str) -> String {
    format!("/v1/jobs/{id}/cancel")
}

fn assert_error(answer: &(u16, Value), status: u16, code: &str) {
    assert_eq!(answer.0, status, "answer: {answer:?}");
    assert_eq!(answer.1["error"]["code"], code, "answer: {answer:?}");
    assert!(
        answer.1["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "answer: {answer:?}"
    );
}

/// A job that records its pid, then sleeps.
fn sleeper(pidfile: &Path) -> Vec<String> {
    kit(&["pid", p(pidfile), "sleep", "30"])
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn governor(w: &World, tier: &str) -> PathBuf {
    let g = scratch(w, "governor");
    std::fs::write(&g, tier).unwrap();
    g
}

// ---------------------------------------------------------------------------
// the endpoints

#[test]
fn a_job_posted_over_http_goes_through_the_inbox_and_runs() {
    let w = World::with_target();
    let i = intake(&w, "100ms", &[]);
    let out = scratch(&w, "out");
    let argv = kit(&["write", p(&out), "ran"]);
    let answer = post(&i, "/v1/jobs", &job_for_pc("http-runs", &argv));
    assert_eq!(answer.0, 202, "{answer:?}");
    assert_eq!(
        answer.1,
        json!({"jobId": "http-runs", "target": "PC", "status": "queued"})
    );
    let r = w.wait_result("http-runs", RESULT_LIMIT);
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "ran\n");
    // The inbox path's archive, as for any folder job.
    let archived: Value =
        serde_json::from_str(&std::fs::read_to_string(w.done("http-runs")).unwrap()).unwrap();
    assert_eq!(archived["jobId"], "http-runs");
    assert_eq!(archived["origin"], "LAPTOP");
}

#[test]
fn a_job_posted_over_http_starts_at_once_not_at_the_next_poll() {
    let w = World::with_target();
    let i = intake(&w, "5s", &[]);
    // Let the listener settle into its 5 s idle wait.
    std::thread::sleep(Duration::from_millis(300));
    let pidfile = scratch(&w, "pid");
    let argv = sleeper(&pidfile);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let started = Instant::now();
    let answer = post(&i, "/v1/jobs", &job_for_pc("http-fast", &argv));
    assert_eq!(answer.0, 202, "{answer:?}");
    read_pid(&pidfile, Duration::from_secs(10));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the job waited for the poll: {:?}",
        started.elapsed()
    );
    assert_eq!(
        post(
            &i,
            &cancel_path("http-fast"),
            &marker_text("http-fast", "PC")
        )
        .0,
        202
    );
    w.wait_result("http-fast", RESULT_LIMIT);
}

#[test]
fn get_job_says_queued_running_done_rejected_and_unknown() {
    let w = World::with_target();
    let gov = governor(&w, "RED");
    let i = intake(&w, "100ms", &["--governor-file", gov.to_str().unwrap()]);
    let pidfile = scratch(&w, "pid");
    let argv = sleeper(&pidfile);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();

    assert_eq!(post(&i, "/v1/jobs", &job_for_pc("g-job", &argv)).0, 202);
    let (status, body) = get(&i, "/v1/jobs/g-job");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["state"], "queued", "{body}");
    assert!(body.get("result").is_none(), "{body}");
    assert!(body.get("waitsFor").is_none(), "{body}");
    // A job held by a dependency is queued, and says what it waits for.
    let mut spec = json!({ "argv": argv });
    spec["after"] = json!([{"target": "PC", "jobId": "g-never"}]);
    let held = job_text("g-held", "PC", &now_text(), &spec);
    assert_eq!(post(&i, "/v1/jobs", &held).0, 202);
    let (status, body) = get(&i, "/v1/jobs/g-held");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["state"], "queued", "{body}");
    assert_eq!(body["waitsFor"], json!(["PC:g-never"]), "{body}");

    std::fs::write(&gov, "GREEN").unwrap();
    read_pid(&pidfile, Duration::from_secs(10));
    wait_until(Duration::from_secs(5), || {
        get(&i, "/v1/jobs/g-job").1["state"] == "running"
    });

    assert_eq!(
        post(&i, &cancel_path("g-job"), &marker_text("g-job", "PC")).0,
        202
    );
    w.wait_result("g-job", RESULT_LIMIT);
    let (status, body) = get(&i, "/v1/jobs/g-job");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["state"], "done");
    // The signed result as stored, which verifies independently.
    assert_eq!(body["result"], w.result("g-job"));
    let r = &body["result"];
    assert!(result_sig_ok(r), "{r}");

    // A job file refused by the listener (dropped into the folder, forged).
    std::fs::write(w.inbox("g-forged"), foreign_job_text("g-forged")).unwrap();
    wait_until(Duration::from_secs(5), || {
        w.rejected("g-forged.json").exists()
    });
    let (status, body) = get(&i, "/v1/jobs/g-forged");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["state"], "rejected", "{body}");
    assert_eq!(body["reason"]["verdict"], "bad-signature", "{body}");

    let (status, body) = get(&i, "/v1/jobs/never-seen");
    assert_eq!((status, &body["state"]), (200, &json!("unknown")), "{body}");
}

#[test]
fn get_status_answers_the_status_document() {
    let w = World::with_target();
    let gov = governor(&w, "RED");
    let i = intake(&w, "100ms", &["--governor-file", gov.to_str().unwrap()]);
    assert_eq!(
        post(&i, "/v1/jobs", &job_for_pc("s-queued", &kit(&[]))).0,
        202
    );
    let (status, body) = get(&i, "/v1/status");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["root"], json!(w.root.display().to_string()));
    let t = &body["targets"][0];
    assert_eq!(t["target"], "PC", "{body}");
    assert_eq!(t["listener"]["alive"], true, "{body}");
    assert_eq!(t["queuedCount"], 1, "{body}");
    assert_eq!(t["queued"][0]["jobId"], "s-queued", "{body}");
}

#[test]
fn a_cancel_over_http_stops_a_running_job_long_before_the_poll() {
    let w = World::with_target();
    let i = intake(&w, "5s", &[]);
    let pidfile = scratch(&w, "pid");
    // A short grace: where no graceful stop reaches the job (Wine 8 cannot
    // deliver CTRL_BREAK), the forced one follows within it, still far
    // sooner than the poll.
    let spec = json!({"argv": sleeper(&pidfile), "graceSec": 0.5});
    let job = job_text("c-run", "PC", &now_text(), &spec);
    assert_eq!(post(&i, "/v1/jobs", &job).0, 202);
    let pid = read_pid(&pidfile, Duration::from_secs(10));
    // Past the watcher's first look at the marker, which is at job start.
    std::thread::sleep(Duration::from_millis(300));

    let sent = Instant::now();
    let (status, body) = post(&i, &cancel_path("c-run"), &marker_text("c-run", "PC"));
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["status"], "requested", "{body}");
    assert_eq!(body["job"], "running", "{body}");
    wait_until(Duration::from_secs(10), || !alive(pid));
    let took = sent.elapsed();
    assert!(
        took < Duration::from_secs(2),
        "the stop waited for the 5 s poll: {took:?}"
    );
    let r = w.wait_result("c-run", RESULT_LIMIT);
    assert_eq!(r["error"], "cancelled", "{r}");
    // The marker went through cancel/ like any other, and was consumed.
    wait_until(Duration::from_secs(5), || w.consumed("c-run").exists());
}

#[test]
fn with_slots_a_cancel_over_http_stops_only_the_job_it_names() {
    let w = World::with_target();
    let i = intake(&w, "5s", &["--slots", "3"]);
    let names = ["slots-a", "slots-b", "slots-c"];
    let mut pids = Vec::new();
    for id in names {
        let pidfile = scratch(&w, &format!("{id}.pid"));
        let spec = json!({"argv": sleeper(&pidfile), "graceSec": 0.5});
        assert_eq!(
            post(&i, "/v1/jobs", &job_text(id, "PC", &now_text(), &spec)).0,
            202
        );
        pids.push(read_pid(&pidfile, Duration::from_secs(10)));
    }
    std::thread::sleep(Duration::from_millis(300));

    let sent = Instant::now();
    let (status, body) = post(&i, &cancel_path("slots-b"), &marker_text("slots-b", "PC"));
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["job"], "running", "{body}");
    wait_until(Duration::from_secs(10), || !alive(pids[1]));
    assert!(
        sent.elapsed() < Duration::from_secs(2),
        "{:?}",
        sent.elapsed()
    );
    let r = w.wait_result("slots-b", RESULT_LIMIT);
    assert_eq!(r["error"], "cancelled", "{r}");
    assert!(
        alive(pids[0]) && alive(pids[2]),
        "a job beside it was stopped"
    );
    assert!(!w.result_path("slots-a").exists() && !w.result_path("slots-c").exists());
    // The listener is killed with the intake: its jobs are not left behind.
    kill_hard(pids[0]);
    kill_hard(pids[2]);
}

#[test]
fn a_squatted_cancel_slot_does_not_block_a_cancel_over_http() {
    let w = World::with_target();
    let i = intake(&w, "5s", &[]);
    let pidfile = scratch(&w, "pid");
    let argv = sleeper(&pidfile);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    assert_eq!(post(&i, "/v1/jobs", &job_for_pc("c-squat", &argv)).0, 202);
    let pid = read_pid(&pidfile, Duration::from_secs(10));
    // A folder writer without the key fills the marker's place.
    std::fs::write(
        w.marker("c-squat"),
        b"{\"jobId\": \"c-squat\", \"sig\": \"00\"}",
    )
    .unwrap();
    let (status, body) = post(&i, &cancel_path("c-squat"), &marker_text("c-squat", "PC"));
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["status"], "requested", "{body}");
    // Generous: under Wine on a loaded machine the stop has taken over 10 s.
    wait_until(Duration::from_secs(30), || !alive(pid));
    let r = w.wait_result("c-squat", RESULT_LIMIT);
    assert_eq!(r["error"], "cancelled", "{r}");
    assert!(w.rejected("c-squat.json.reason.json").exists());
}

#[test]
fn a_squatted_cancel_slot_does_not_block_a_cancel_over_http_of_a_queued_job() {
    let w = World::with_target();
    let gov = governor(&w, "RED");
    let i = intake(&w, "5s", &["--governor-file", gov.to_str().unwrap()]);
    let out = scratch(&w, "out");
    let argv = kit(&["write", p(&out), "ran"]);
    assert_eq!(post(&i, "/v1/jobs", &job_for_pc("q-squat", &argv)).0, 202);
    // A folder writer without the key fills the marker's place.
    std::fs::write(
        w.marker("q-squat"),
        b"{\"jobId\": \"q-squat\", \"sig\": \"00\"}",
    )
    .unwrap();
    let (status, body) = post(&i, &cancel_path("q-squat"), &marker_text("q-squat", "PC"));
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["status"], "requested", "{body}");
    let r = w.wait_result("q-squat", RESULT_LIMIT);
    assert_eq!(r["error"], "cancelled-before-start", "{r}");
    assert!(!out.exists(), "a cancelled job never runs");
    assert!(w.rejected("q-squat.json.reason.json").exists());
}

#[test]
fn a_cancel_over_http_of_a_queued_job_cancels_it_before_start_at_once() {
    let w = World::with_target();
    let gov = governor(&w, "RED");
    let i = intake(&w, "5s", &["--governor-file", gov.to_str().unwrap()]);
    let out = scratch(&w, "out");
    let argv = kit(&["write", p(&out), "ran"]);
    assert_eq!(post(&i, "/v1/jobs", &job_for_pc("c-queued", &argv)).0, 202);
    let sent = Instant::now();
    let (status, body) = post(&i, &cancel_path("c-queued"), &marker_text("c-queued", "PC"));
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["status"], "requested", "{body}");
    let r = w.wait_result("c-queued", RESULT_LIMIT);
    assert!(
        sent.elapsed() < Duration::from_secs(3),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(r["error"], "cancelled-before-start", "{r}");
    assert!(!out.exists(), "a cancelled job never runs");
}

#[test]
fn a_cancel_over_http_of_a_finished_job_is_not_running_and_writes_nothing() {
    let w = World::with_target();
    let i = intake(&w, "100ms", &[]);
    assert_eq!(
        post(&i, "/v1/jobs", &job_for_pc("c-done", &kit(&[]))).0,
        202
    );
    w.wait_result("c-done", RESULT_LIMIT);
    wait_until(Duration::from_secs(5), || w.done("c-done").exists());
    let (status, body) = post(&i, &cancel_path("c-done"), &marker_text("c-done", "PC"));
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["status"], "not_running", "{body}");
    assert_eq!(body["result"], w.result("c-done"), "{body}");
    assert!(entries(&w.pc().join("cancel")).is_empty());
}

#[test]
fn the_same_job_over_http_and_through_the_folder_runs_once() {
    let w = World::with_target();
    let gov = governor(&w, "RED");
    let i = intake(&w, "100ms", &["--governor-file", gov.to_str().unwrap()]);
    let count = scratch(&w, "count");
    let argv = kit(&["append", p(&count), "x"]);
    let body = job_for_pc("once", &argv);

    // Through the folder first, then the same document over HTTP: one job.
    std::fs::write(w.inbox("once"), &body).unwrap();
    let again = post(&i, "/v1/jobs", &body);
    assert_eq!(again.0, 202, "{again:?}");
    assert_eq!(again.1["status"], "queued");
    assert_eq!(entries(&w.pc().join("inbox")), ["once.json"]);

    std::fs::write(&gov, "GREEN").unwrap();
    w.wait_result("once", RESULT_LIMIT);
    wait_until(Duration::from_secs(5), || w.done("once").exists());

    // Afterwards: refused over HTTP with nothing written, and refused from
    // the folder by the replay guard.
    let replay = post(&i, "/v1/jobs", &body);
    assert_error(&replay, 422, "VALIDATION_ERROR");
    assert!(
        replay.1["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already-processed"),
        "{replay:?}"
    );
    assert!(!w.inbox("once").exists());
    std::fs::write(w.inbox("once"), &body).unwrap();
    wait_until(Duration::from_secs(5), || w.rejected("once.json").exists());
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(std::fs::read_to_string(&count).unwrap(), "x\n");
}

#[test]
fn the_same_job_posted_twice_is_queued_once_and_another_with_its_id_is_refused() {
    let w = World::with_target();
    let gov = governor(&w, "RED");
    let i = intake(&w, "100ms", &["--governor-file", gov.to_str().unwrap()]);
    let body = job_for_pc("twice", &["true"]);
    assert_eq!(post(&i, "/v1/jobs", &body).0, 202);
    assert_eq!(post(&i, "/v1/jobs", &body).0, 202);
    let first = std::fs::read(w.inbox("twice")).unwrap();
    let other = job_for_pc("twice", &["false"]);
    assert_error(&post(&i, "/v1/jobs", &other), 422, "VALIDATION_ERROR");
    assert_eq!(
        std::fs::read(w.inbox("twice")).unwrap(),
        first,
        "never replaced"
    );
    assert_eq!(entries(&w.pc().join("inbox")), ["twice.json"]);
}

// ---------------------------------------------------------------------------
// refusals: each error maps to its status, and nothing is written

#[test]
fn refused_requests_map_to_their_status_and_write_nothing() {
    let w = World::with_target();
    let i = intake(&w, "100ms", &[]);
    let old = ts_offset(-30 * 86400);
    let cases: Vec<(&str, String, String, u16, &str)> = vec![
        (
            "not JSON",
            "/v1/jobs".into(),
            "{not json".into(),
            400,
            "BAD_REQUEST",
        ),
        (
            "missing field",
            "/v1/jobs".into(),
            r#"{"jobId":"a"}"#.into(),
            400,
            "BAD_REQUEST",
        ),
        (
            "invalid id",
            "/v1/jobs".into(),
            job_for_pc("bad!id", &["true"]),
            422,
            "VALIDATION_ERROR",
        ),
        (
            "invalid createdAt",
            "/v1/jobs".into(),
            job_text("r-ts", "PC", "yesterday", &json!({"argv": ["true"]})),
            422,
            "VALIDATION_ERROR",
        ),
        (
            "unknown spec field",
            "/v1/jobs".into(),
            job_text(
                "r-spec",
                "PC",
                &now_text(),
                &json!({"argv": ["true"], "shell": true}),
            ),
            422,
            "VALIDATION_ERROR",
        ),
        (
            "stale",
            "/v1/jobs".into(),
            job_text("r-stale", "PC", &old, &json!({"argv": ["true"]})),
            422,
            "VALIDATION_ERROR",
        ),
        (
            "forged job",
            "/v1/jobs".into(),
            foreign_job_text("r-forged"),
            403,
            "FORBIDDEN",
        ),
        (
            "job for another target",
            "/v1/jobs".into(),
            job_text("r-other", "LAPTOP", &now_text(), &json!({"argv": ["true"]})),
            403,
            "FORBIDDEN",
        ),
        (
            "marker for another id",
            cancel_path("r-a"),
            marker_text("r-b", "PC"),
            422,
            "VALIDATION_ERROR",
        ),
        (
            "marker for another target",
            cancel_path("r-a"),
            marker_text("r-a", "LAPTOP"),
            403,
            "FORBIDDEN",
        ),
        (
            "invalid id in the path",
            cancel_path("bad!id"),
            marker_text("r-a", "PC"),
            422,
            "VALIDATION_ERROR",
        ),
        (
            "unknown endpoint",
            "/v1/jobz".into(),
            "{}".into(),
            404,
            "NOT_FOUND",
        ),
    ];
    for (what, path, body, status, code) in cases {
        let answer = post(&i, &path, &body);
        assert_eq!(answer.0, status, "{what}: {answer:?}");
        assert_eq!(answer.1["error"]["code"], code, "{what}: {answer:?}");
    }
    assert_error(&get(&i, "/v1/jobs/bad!id"), 422, "VALIDATION_ERROR");
    assert_error(&get(&i, "/v1/nothing"), 404, "NOT_FOUND");
    let no_length = b"POST /v1/jobs HTTP/1.1\r\nHost: pc\r\n\r\n";
    assert_error(&exchange(i.addr, no_length), 411, "BAD_REQUEST");
    assert_error(
        &exchange(i.addr, b"BREW /pot HTCPCP/1.0\r\n\r\n"),
        400,
        "BAD_REQUEST",
    );
    for dir in ["inbox", "cancel", "results", "archive/rejected"] {
        assert!(
            entries(&w.pc().join(dir)).is_empty(),
            "{dir}: {:?}",
            entries(&w.pc().join(dir))
        );
    }
}

#[test]
fn a_forged_marker_is_forbidden_and_nothing_is_written_or_stopped() {
    let w = World::with_target();
    let i = intake(&w, "100ms", &[]);
    let pidfile = scratch(&w, "pid");
    let argv = sleeper(&pidfile);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    assert_eq!(post(&i, "/v1/jobs", &job_for_pc("f-run", &argv)).0, 202);
    let pid = read_pid(&pidfile, Duration::from_secs(10));
    let created = now_text();
    let forged = marker_doc("f-run", "PC", &created, "LAPTOP", Signer::Foreign).to_string();
    let sent = Instant::now();
    let answer = post(&i, &cancel_path("f-run"), &forged);
    assert_error(&answer, 403, "FORBIDDEN");
    assert!(
        sent.elapsed() >= Duration::from_millis(200),
        "no delay after a bad signature"
    );
    let unsigned =
        json!({"jobId": "f-run", "target": "PC", "createdAt": created, "origin": "LAPTOP"});
    assert_error(
        &post(&i, &cancel_path("f-run"), &unsigned.to_string()),
        403,
        "FORBIDDEN",
    );
    assert!(entries(&w.pc().join("cancel")).is_empty());
    std::thread::sleep(Duration::from_millis(300));
    assert!(alive(pid), "a forged marker stopped the job");
    assert_eq!(
        post(&i, &cancel_path("f-run"), &marker_text("f-run", "PC")).0,
        202
    );
    w.wait_result("f-run", RESULT_LIMIT);
}

#[test]
fn unsigned_forged_and_replayed_gets_are_forbidden() {
    let w = World::with_target();
    let i = intake(&w, "100ms", &[]);
    let now = now_unix();
    let path = "/v1/status";
    let other_key = request_header("PC", path, now, Signer::Foreign);
    let for_other_path = request_header("PC", "/v1/jobs/x", now, Signer::Fleet);
    // Captured on its way to another machine of the fleet.
    let for_other_target = request_header("LAPTOP", path, now, Signer::Fleet);
    // The form before the target was signed: today's without the target.
    let without_target = {
        let today = request_canonical("PC", path, &now.to_string());
        let sig = independent_sig(&today.replacen("|pc|", "|", 1));
        format!("t={now},sig={sig}")
    };
    let requests = [
        (
            "unsigned",
            format!("GET {path} HTTP/1.1\r\nHost: pc\r\n\r\n").into_bytes(),
        ),
        ("another key", get_with_header(path, &other_key)),
        ("another path", get_with_header(path, &for_other_path)),
        ("another target", get_with_header(path, &for_other_target)),
        ("no target signed", get_with_header(path, &without_target)),
        ("replayed (t 10 minutes old)", get_request(path, now - 600)),
        ("t 10 minutes ahead", get_request(path, now + 600)),
        ("garbled", get_with_header(path, "t=now,sig=yes")),
    ];
    for (what, raw) in requests {
        let sent = Instant::now();
        let answer = exchange(i.addr, &raw);
        assert_error(&answer, 403, "FORBIDDEN");
        assert!(
            answer.1.get("targets").is_none(),
            "{what}: disclosed {answer:?}"
        );
        assert!(
            sent.elapsed() >= Duration::from_millis(200),
            "{what}: no delay"
        );
    }
    // Within the window either way is fine.
    assert_eq!(exchange(i.addr, &get_request(path, now - 200)).0, 200);
    assert_eq!(exchange(i.addr, &get_request(path, now + 200)).0, 200);
}

// ---------------------------------------------------------------------------
// hostile clients

#[test]
fn oversize_bodies_are_refused_from_content_length_before_any_is_read() {
    let w = World::with_target();
    let i = intake(&w, "100ms", &[]);
    for (path, limit) in [
        ("/v1/jobs".to_string(), 1 << 20),
        (cancel_path("big"), 16 << 10),
    ] {
        // The head only: a server that waited for the body would time out.
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: pc\r\nContent-Length: {}\r\n\r\n",
            limit + 1
        );
        let sent = Instant::now();
        let answer = exchange(i.addr, head.as_bytes());
        assert_error(&answer, 413, "BAD_REQUEST");
        assert!(
            sent.elapsed() < Duration::from_secs(1),
            "{path}: {:?}",
            sent.elapsed()
        );
        // At the limit it is read (and judged on its content).
        let padded = format!("{{}}{}", " ".repeat(limit - 2));
        assert_error(&post(&i, &path, &padded), 400, "BAD_REQUEST");
    }
    let huge_head = format!(
        "GET /v1/status HTTP/1.1\r\nX-Pad: {}\r\n\r\n",
        "a".repeat(17 * 1024)
    );
    assert_error(&exchange(i.addr, huge_head.as_bytes()), 431, "BAD_REQUEST");
    assert!(entries(&w.pc().join("inbox")).is_empty());
}

#[test]
fn a_slow_client_is_dropped_after_its_timeout_and_never_holds_the_others() {
    let w = World::with_target();
    let i = intake(&w, "100ms", &[]);
    let mut slow = TcpStream::connect(i.addr).unwrap();
    slow.write_all(b"GET /v1/sta").unwrap();
    let since = Instant::now();
    for _ in 0..3 {
        let t = Instant::now();
        assert_eq!(get(&i, "/v1/status").0, 200);
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    }
    slow.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut rest = Vec::new();
    let _ = slow.read_to_end(&mut rest);
    let dropped = since.elapsed();
    assert!(
        dropped < Duration::from_secs(9),
        "the slow client was held for {dropped:?}"
    );
    let text = String::from_utf8_lossy(&rest);
    assert!(
        text.is_empty() || text.starts_with("HTTP/1.1 408"),
        "{text}"
    );
}

#[test]
fn connections_beyond_the_workers_and_queue_are_answered_busy() {
    let w = World::with_target();
    let i = intake(&w, "100ms", &[]);
    // Idle connections take every worker and queue slot until their
    // timeout; one at a time, so each reaches its worker or queue slot.
    let idle: Vec<TcpStream> = (0..WORKERS_AND_QUEUE)
        .map(|_| {
            let s = TcpStream::connect(i.addr).unwrap();
            std::thread::sleep(Duration::from_millis(30));
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let mut extra = TcpStream::connect(i.addr).unwrap();
    extra
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let sent = Instant::now();
    let answer = read_answer(&mut extra);
    assert_error(&answer, 503, "BUSY");
    assert!(
        sent.elapsed() < Duration::from_secs(1),
        "{:?}",
        sent.elapsed()
    );
    drop(idle);
    // Once they are gone the intake serves again.
    wait_until(Duration::from_secs(15), || get(&i, "/v1/status").0 == 200);
}

#[test]
fn expect_100_continue_is_answered_before_the_body() {
    let w = World::with_target();
    let i = intake(&w, "100ms", &[]);
    let body = job_for_pc("continued", &kit(&[]));
    let mut s = TcpStream::connect(i.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let head = format!(
        "POST /v1/jobs HTTP/1.1\r\nHost: pc\r\nExpect: 100-continue\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    let mut interim = [0u8; 25];
    s.read_exact(&mut interim).unwrap();
    assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    s.write_all(body.as_bytes()).unwrap();
    assert_eq!(read_answer(&mut s).0, 202);
    w.wait_result("continued", RESULT_LIMIT);
}

// ---------------------------------------------------------------------------
// the CLI: enqueue --via, cancel --via

#[test]
fn enqueue_and_cancel_via_http_use_the_intake() {
    let w = World::with_target();
    let i = intake(&w, "5s", &[]);
    let pidfile = scratch(&w, "pid");
    let (code, out, err) = output(w.cmd_as("LAPTOP").args([
        "enqueue",
        "--target",
        "PC",
        "--via",
        &i.url(),
        "--env",
        &format!("PIDFILE={}", pidfile.display()),
        // Short, as above: without a graceful stop the forced one comes soon.
        "--grace",
        "500ms",
        "--",
        p(&jobkit()),
        "pid",
        "$PIDFILE",
        "sleep",
        "30",
    ]));
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(err, "", "no fallback");
    let id = out.trim().to_string();
    let pid = read_pid(&pidfile, Duration::from_secs(3));
    wait_until(Duration::from_secs(5), || w.running(&id).exists());
    let log = std::fs::read_to_string(w.dir.path().join("listener.log")).unwrap();
    assert!(log.contains("http: 202 POST /v1/jobs"), "{log}");

    let sent = Instant::now();
    let (code, out, err) = output(w.cmd_as("LAPTOP").args([
        "cancel",
        "--target",
        "PC",
        "--job-id",
        &id,
        "--via",
        &i.url(),
    ]));
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(err, "", "no fallback");
    assert_eq!(
        out.trim(),
        format!("cancel of {id} requested (job running)")
    );
    wait_until(Duration::from_secs(10), || !alive(pid));
    assert!(
        sent.elapsed() < Duration::from_secs(3),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(w.wait_result(&id, RESULT_LIMIT)["error"], "cancelled");

    let (code, out, err) = output(w.cmd_as("LAPTOP").args([
        "--json",
        "cancel",
        "--target",
        "PC",
        "--job-id",
        &id,
        "--via",
        &i.url(),
    ]));
    assert_eq!(code, 0, "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["status"], "not_running", "{v}");
}

#[test]
fn via_falls_back_to_the_folder_when_nothing_listens() {
    let w = World::with_target();
    let url = format!("http://127.0.0.1:{}", free_port());
    let (code, out, err) = output(
        w.cmd_as("LAPTOP")
            .args(["enqueue", "--target", "PC", "--via", &url, "--", "true"]),
    );
    assert_eq!(code, 0, "{out}{err}");
    let id = out.trim().to_string();
    assert!(
        err.contains(&format!("could not reach {url}"))
            && err.contains("wrote to the shared folder instead"),
        "{err}"
    );
    assert!(w.inbox(&id).exists());

    let (code, out, err) = output(
        w.cmd_as("LAPTOP")
            .args(["cancel", "--target", "PC", "--job-id", &id, "--via", &url]),
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("wrote to the shared folder instead"), "{err}");
    assert!(w.marker(&id).exists());
    // The folder path then carries it as usual.
    let c = w.listen_once(&[]);
    assert_eq!(c["cancelled"], 1, "{c}");
}

#[test]
fn via_reports_a_refusal_with_its_code_and_never_falls_back() {
    let w = World::with_target();
    let i = intake(&w, "100ms", &[]);
    let wrong = w.dir.path().join("keys").join("other.key");
    write_private(&wrong, &format!("{}\n", "ab".repeat(32)));
    let (code, out, err) = output(
        w.cmd_as("LAPTOP")
            .env("FLEET_DISPATCH_KEY_FILE", &wrong)
            .args(["enqueue", "--target", "PC", "--via", &i.url(), "--", "true"]),
    );
    assert_eq!(code, 77, "FORBIDDEN: {out}{err}");
    assert!(
        err.contains("answered 403") && err.contains("bad-signature"),
        "{err}"
    );
    assert!(!err.contains("shared folder"), "{err}");
    assert!(entries(&w.pc().join("inbox")).is_empty());

    let (code, out, err) = output(
        w.cmd_as("LAPTOP")
            .env("FLEET_DISPATCH_KEY_FILE", &wrong)
            .args([
                "cancel",
                "--target",
                "PC",
                "--job-id",
                "some-job",
                "--force",
                "--via",
                &i.url(),
            ]),
    );
    assert_eq!(code, 77, "FORBIDDEN: {out}{err}");
    assert!(entries(&w.pc().join("cancel")).is_empty());
}

#[test]
fn via_https_is_refused_as_a_validation_error() {
    let w = World::with_target();
    let (code, out, err) = output(w.cmd_as("LAPTOP").args([
        "enqueue",
        "--target",
        "PC",
        "--via",
        "https://pc:7070",
        "--",
        "true",
    ]));
    assert_eq!(code, 64, "{out}{err}");
    assert!(err.contains("https is not supported"), "{err}");
    assert!(entries(&w.pc().join("inbox")).is_empty());
}

#[test]
fn listen_http_takes_a_bare_port_and_refuses_once() {
    let w = World::with_target();
    let (code, _, err) = w.run(&["listen", "--once", "--http", "7070"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = w.run(&["listen", "--http", "not-an-address"]);
    assert_eq!(code, 64, "{err}");
    // A bare port binds loopback (the helper waits for a signed status).
    let i = intake_at(&w, "100ms", &[], |addr| addr.port().to_string());
    assert!(i.addr.ip().is_loopback());
}

#[test]
fn a_started_job_is_running_in_get_at_once() {
    let w = World::with_target();
    let i = intake(&w, "100ms", &[]);
    let pidfile = scratch(&w, "pid");
    let argv = sleeper(&pidfile);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    assert_eq!(post(&i, "/v1/jobs", &job_for_pc("g-run", &argv)).0, 202);
    // The job is spawned before it writes its pid: from then on the
    // listener knows it runs, whether or not running/ shows it yet. The
    // publisher writes running/ within ~20 ms, so this end-to-end check
    // cannot tell the listener's word from the folder's; the route's unit
    // test `a_job_the_listener_runs_is_running_before_running_shows_it`
    // pins that the listener's word comes first.
    read_pid(&pidfile, Duration::from_secs(10));
    let (status, body) = get(&i, "/v1/jobs/g-run");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["state"], "running", "{body}");
}

#[test]
fn a_client_that_sends_a_whole_oversized_body_first_still_reads_its_413() {
    let w = World::with_target();
    let i = intake(&w, "100ms", &[]);
    let body = format!("{{\"pad\": \"{}\"}}", "x".repeat(16 << 20));
    let mut s = TcpStream::connect(i.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    // Everything is written before anything is read, as a naive client does.
    let request = post_request("/v1/jobs", &body);
    let writer = {
        let mut s = s.try_clone().unwrap();
        std::thread::spawn(move || s.write_all(&request))
    };
    // The body is taken in full (and dropped): the client's writes never
    // meet a reset.
    let wrote = writer.join().unwrap();
    assert!(wrote.is_ok(), "sending the body failed: {wrote:?}");
    let mut buf = Vec::new();
    let read = s.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    assert!(
        text.starts_with("HTTP/1.1 413"),
        "no 413 (read: {read:?}): {}",
        &text[..text.len().min(200)]
    );
    assert!(entries(&w.pc().join("inbox")).is_empty());
}

#[test]
fn an_address_taken_or_not_this_machines_is_refused_with_a_hint_that_fits() {
    let w = World::with_target();
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = held.local_addr().unwrap().to_string();
    // 192.0.2.1 is set aside for documentation: no machine has it.
    for (addr, hint) in [
        (taken.as_str(), "stop what holds this one"),
        ("192.0.2.1:7070", "this machine has no such address"),
    ] {
        let (code, out, err) = w.run(&["listen", "--http", addr]);
        assert_eq!(code, 70, "{addr}: {out}{err}");
        assert!(err.contains(&format!("cannot listen on {addr}")), "{err}");
        assert!(err.contains(hint), "{addr}: {err}");
    }
}

#[test]
fn a_202_that_is_not_the_intakes_answer_for_the_job_is_no_success() {
    let w = World::with_target();
    // Something else at the address: it answers every request 202.
    let server = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", server.local_addr().unwrap());
    let answering = std::thread::spawn(move || {
        if let Ok((mut s, _)) = server.accept() {
            let mut buf = [0u8; 65536];
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = s.read(&mut buf);
            let _ = s.write_all(b"HTTP/1.1 202 Accepted\r\nContent-Length: 5\r\n\r\nhello");
        }
    });
    let (code, out, err) = w.run(&["enqueue", "--target", "PC", "--via", &url, "--", "true"]);
    answering.join().unwrap();
    assert_ne!(code, 0, "{out}{err}");
    assert!(out.trim().is_empty(), "an id was printed: {out}");
    assert!(err.contains("nothing is known to be queued"), "{err}");
    assert!(entries(&w.pc().join("inbox")).is_empty());
}
