//! `fleet-dispatch mcp` driven with raw JSON-RPC lines through the real
//! binary: the handshake and its revision, the tools listed, a job
//! dispatched and its result waited for with a real listener, a stop that
//! says `stopped` then `not_running`, a message in both delivery modes, a
//! malformed line answered and passed over, a closed stdin, no settings,
//! the parent rule of a server running inside a job, and a sealed
//! dispatch in the roster lane.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::*;

const LIMIT: Duration = Duration::from_secs(30);

/// A server and the lines it writes, read on a thread of their own.
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next: u64,
}

impl Client {
    fn start(mut c: std::process::Command) -> Client {
        let mut child = spawn(
            c.arg("mcp")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        );
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Client {
            child,
            stdin,
            lines,
            next: 1,
        }
    }

    fn of(w: &World) -> Client {
        Client::start(w.bg_cmd())
    }

    fn raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// The next line, as JSON; every line the server writes must be one.
    fn read(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(LIMIT)
            .expect("the server answered within the limit");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON-RPC: {line:?}: {e}"))
    }

    /// Sends a request; returns its answer (notifications before it are
    /// passed over).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.raw(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        loop {
            let v = self.read();
            assert_eq!(v["jsonrpc"], "2.0", "{v}");
            if v["id"] == id {
                return v;
            }
        }
    }

    fn initialize(&mut self, revision: &str) -> Value {
        let v = self.request(
            "initialize",
            json!({"protocolVersion": revision, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        );
        self.raw(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        v["result"].clone()
    }

    /// Calls a tool; returns its result (`isError` included).
    fn call(&mut self, name: &str, arguments: Value) -> Value {
        let v = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        assert!(v.get("error").is_none(), "{v}");
        v["result"].clone()
    }

    /// Calls a tool that must succeed; returns its structured content.
    fn ok(&mut self, name: &str, arguments: Value) -> Value {
        let r = self.call(name, arguments);
        assert_eq!(r["isError"], false, "{name}: {r}");
        assert!(r["content"][0]["text"].is_string(), "{r}");
        r["structuredContent"].clone()
    }

    /// Calls a tool that must fail; returns its error code.
    fn refused(&mut self, name: &str, arguments: Value) -> String {
        let r = self.call(name, arguments);
        assert_eq!(r["isError"], true, "{name}: {r}");
        r["structuredContent"]["error"]["code"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Closes stdin; returns the exit status and stderr.
    fn close(mut self) -> (i32, String) {
        drop(self.stdin.take());
        let until = Instant::now() + LIMIT;
        while self.child.try_wait().unwrap().is_none() {
            assert!(
                Instant::now() < until,
                "the server did not exit after stdin closed"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let code = self.child.wait().unwrap().code().unwrap_or(-1);
        (code, stderr_text(&mut self.child))
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The signed spec of job `id` (queued or done), parsed.
fn spec_of(w: &World, id: &str) -> Value {
    let path = if w.inbox(id).exists() {
        w.inbox(id)
    } else {
        w.done(id)
    };
    let job: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    serde_json::from_str(job["spec"].as_str().unwrap()).unwrap()
}

#[test]
fn initialize_negotiates_the_revision_and_lists_the_tools() {
    let w = World::with_target();
    let mut c = Client::of(&w);
    let init = c.initialize("2025-03-26");
    assert_eq!(init["protocolVersion"], "2025-03-26");
    assert_eq!(init["serverInfo"]["name"], "fleet-dispatch");
    assert!(init["capabilities"]["tools"].is_object(), "{init}");
    let instructions = init["instructions"].as_str().unwrap();
    assert!(instructions.contains("interrupt") && instructions.contains("stop_job"));
    let newest = c.request(
        "initialize",
        json!({"protocolVersion": "2099-01-01", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    assert_eq!(newest["result"]["protocolVersion"], "2025-11-25");
    let tools = c.request("tools/list", json!({}))["result"]["tools"].clone();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "dispatch_job",
            "job_status",
            "job_result",
            "job_logs",
            "stop_job",
            "message_job",
            "list_jobs"
        ]
    );
    for t in [0, 5] {
        let seal = &tools[t]["inputSchema"]["properties"]["seal"];
        assert_eq!(
            seal,
            &json!({"type": "boolean", "default": false, "description": seal["description"]}),
            "{}",
            tools[t]
        );
    }
    for t in tools.as_array().unwrap() {
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
        let d = t["description"].as_str().unwrap();
        if t["name"] == "stop_job" || t["name"] == "message_job" {
            assert!(
                d.contains("delivery_mode \"interrupt\"") && d.contains("-> stop_job"),
                "{d}"
            );
        }
    }
    let unknown = c.request("tools/call", json!({"name": "rm_rf", "arguments": {}}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let (code, err) = c.close();
    assert_eq!(code, 0, "{err}");
}

#[test]
fn a_job_is_dispatched_and_its_result_waited_for() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let _l = w.spawn_listener(&[]);
    let mut c = Client::of(&w);
    c.initialize("2025-11-25");
    // Fields a tool does not name are ignored: none sets the parent.
    let sent = c.ok(
        "dispatch_job",
        json!({"target": "PC", "argv": kit(&["append", p(&side), "ran"]), "label": "t",
               "parent_job_id": "20261129-193000-9f2c4e1ab37d5c08", "parentJobId": "x", "caller": "y"}),
    );
    assert_eq!(sent["status"], "queued");
    assert_eq!(sent["target"], "PC");
    let id = sent["job_id"].as_str().unwrap().to_string();
    let got = c.ok(
        "job_result",
        json!({"target": "PC", "job_id": id, "wait_seconds": 25}),
    );
    assert_eq!(got["finished"], true, "{got}");
    assert_eq!(got["ok"], true, "{got}");
    assert_eq!(got["outcome"], "done", "{got}");
    assert_eq!(lines(&side), ["ran"]);
    assert!(spec_of(&w, &id).get("parentJobId").is_none());
    let status = c.ok("job_status", json!({"target": "PC", "job_id": id}));
    assert_eq!(status["state"], "done", "{status}");
    let listed = c.ok("list_jobs", json!({}));
    assert_eq!(listed["targets"][0]["target"], "PC", "{listed}");
    assert_eq!(
        c.refused("job_result", json!({"target": "PC"})),
        "VALIDATION_ERROR"
    );
    assert_eq!(
        c.refused("job_status", json!({"target": "NOPE", "job_id": id})),
        "NOT_FOUND"
    );
}

#[test]
fn stop_job_says_stopped_then_not_running() {
    let w = World::with_target();
    let _l = w.spawn_listener(&[]);
    let mut c = Client::of(&w);
    c.initialize("2025-11-25");
    let id = c.ok(
        "dispatch_job",
        json!({"target": "PC", "argv": kit(&["sleep", "60"])}),
    )["job_id"]
        .as_str()
        .unwrap()
        .to_string();
    wait_until(LIMIT, || w.running(&id).exists());
    let stop = c.ok(
        "stop_job",
        json!({"target": "PC", "job_id": id, "reason": "ignored", "grace": "0s"}),
    );
    assert_eq!(stop["status"], "stopped", "{stop}");
    let got = c.ok(
        "job_result",
        json!({"target": "PC", "job_id": id, "wait_seconds": 25}),
    );
    assert_eq!(got["outcome"], "cancelled", "{got}");
    for _ in 0..2 {
        let again = c.ok("stop_job", json!({"target": "PC", "job_id": id}));
        assert_eq!(again["status"], "not_running", "{again}");
    }
}

#[test]
fn message_job_queues_after_the_job_or_interrupts_it() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let _l = w.spawn_listener(&[]);
    let mut c = Client::of(&w);
    c.initialize("2025-11-25");
    let old = c.ok(
        "dispatch_job",
        json!({"target": "PC", "argv": kit(&["append", p(&side), "old", "sleep", "60"])}),
    )["job_id"]
        .as_str()
        .unwrap()
        .to_string();
    wait_until(LIMIT, || w.running(&old).exists());
    let queued = c.ok(
        "message_job",
        json!({"target": "PC", "job_id": old, "argv": kit(&["append", p(&side), "queued"])}),
    );
    assert_eq!(queued["delivery"], "queued", "{queued}");
    let later = queued["job_id"].as_str().unwrap().to_string();
    let spec = &spec_of(&w, &later);
    assert_eq!(spec["after"][0]["jobId"], old.as_str(), "{spec}");
    assert_eq!(spec["after"][0]["target"], "PC", "{spec}");
    assert_eq!(spec["afterAny"], true, "{spec}");
    let sent = c.ok(
        "message_job",
        json!({"target": "PC", "job_id": old, "delivery_mode": "interrupt",
               "argv": kit(&["append", p(&side), "now"])}),
    );
    assert_eq!(sent["delivery"], "sent", "{sent}");
    let now = sent["job_id"].as_str().unwrap().to_string();
    let got = c.ok(
        "job_result",
        json!({"target": "PC", "job_id": old, "wait_seconds": 25}),
    );
    assert_eq!(got["outcome"], "cancelled", "{got}");
    for id in [&now, &later] {
        let got = c.ok(
            "job_result",
            json!({"target": "PC", "job_id": id, "wait_seconds": 25}),
        );
        assert_eq!(got["ok"], true, "{got}");
    }
    // The interrupt ran first; the queued message once the old job ended,
    // however it ended.
    assert_eq!(lines(&side), ["old", "now", "queued"]);
}

#[test]
fn a_malformed_line_is_a_parse_error_and_the_server_goes_on() {
    let w = World::with_target();
    let mut c = Client::of(&w);
    c.raw("{this is not json");
    let v = c.read();
    assert_eq!(v["error"]["code"], -32700, "{v}");
    assert_eq!(v["id"], Value::Null, "{v}");
    c.raw(r#"{"jsonrpc":"2.0","id":9}"#);
    assert_eq!(c.read()["error"]["code"], -32600);
    let pong = c.request("ping", json!({}));
    assert_eq!(pong["result"], json!({}), "{pong}");
    assert_eq!(c.request("no/such", json!({}))["error"]["code"], -32601);
    let (code, err) = c.close();
    assert_eq!(code, 0, "{err}");
}

#[test]
fn a_wait_ends_when_the_client_cancels_it() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&["sleep", "1"]));
    let mut c = Client::of(&w);
    c.initialize("2025-11-25");
    c.raw(
        &json!({"jsonrpc": "2.0", "id": 50, "method": "tools/call",
                  "params": {"name": "job_result", "_meta": {"progressToken": "tok"},
                             "arguments": {"target": "PC", "job_id": id, "wait_seconds": 600}}})
        .to_string(),
    );
    let progress = c.read();
    assert_eq!(progress["method"], "notifications/progress", "{progress}");
    assert_eq!(progress["params"]["progressToken"], "tok");
    c.raw(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":50}}"#);
    // The cancelled call is not answered; the next one is, at once.
    let pong = c.request("ping", json!({}));
    assert_eq!(pong["result"], json!({}));
    let started = Instant::now();
    let (code, err) = c.close();
    assert_eq!(code, 0, "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn without_settings_it_refuses_to_start_with_config() {
    let w = World::with_target();
    let mut c = w.bg_cmd();
    c.env_remove("FLEET_DISPATCH_KEY_FILE");
    let c = Client::start(c);
    let (code, err) = c.close();
    assert_eq!(code, 78, "{err}");
    assert!(err.contains("CONFIG"), "{err}");
    assert!(inbox_is_empty(&w));
}

/// No job was written by a refused start.
fn inbox_is_empty(w: &World) -> bool {
    files(&w.pc().join("inbox")).is_empty()
}

#[test]
fn inside_a_job_the_caller_acts_only_on_its_direct_children() {
    let w = World::with_target();
    let parent = w.enqueue(&[], &kit(&["sleep", "1"]));
    let other = w.enqueue(&[], &kit(&["sleep", "1"]));
    let mut c = Client::start(inside(&w, &parent, &job_token(&parent, "PC")));
    c.initialize("2025-11-25");
    let child = c.ok(
        "dispatch_job",
        json!({"target": "PC", "argv": kit(&["sleep", "1"])}),
    );
    assert_eq!(child["parent_job_id"], parent.as_str());
    let child = child["job_id"].as_str().unwrap().to_string();
    assert_eq!(spec_of(&w, &child)["parentJobId"], parent.as_str());
    let grandchild = w.enqueue_as_child(&child);
    let before = files(&w.pc().join("inbox"));
    for id in [&parent, &other, &grandchild] {
        assert_eq!(
            c.refused("stop_job", json!({"target": "PC", "job_id": id})),
            "FORBIDDEN",
            "{id}"
        );
        for mode in ["queued", "interrupt"] {
            let asked = json!({"target": "PC", "job_id": id, "delivery_mode": mode, "argv": kit(&["sleep", "1"])});
            assert_eq!(c.refused("message_job", asked), "FORBIDDEN", "{id} {mode}");
        }
    }
    assert_eq!(
        files(&w.pc().join("inbox")),
        before,
        "a refusal wrote a job"
    );
    assert!(
        files(&w.pc().join("cancel")).is_empty(),
        "a refusal wrote a marker"
    );
    let stop = c.ok("stop_job", json!({"target": "PC", "job_id": child}));
    assert_eq!(stop["status"], "stopped", "{stop}");
    assert!(w.marker(&child).exists());
}

/// The server's command as a job's process: its id, target and token.
fn inside(w: &World, job: &str, token: &str) -> std::process::Command {
    let mut c = w.bg_cmd();
    c.env("FLEET_DISPATCH_JOB_ID", job)
        .env("FLEET_DISPATCH_TARGET", "PC")
        .env("FLEET_DISPATCH_JOB_TOKEN", token);
    c
}

#[test]
fn a_job_id_without_its_token_is_refused() {
    let w = World::with_target();
    let job = w.enqueue(&[], &kit(&["sleep", "1"]));
    let sibling = w.enqueue(&[], &kit(&["sleep", "1"]));
    for token in [
        String::new(),
        job_token(&sibling, "PC"),
        job_token(&job, "LAPTOP"),
    ] {
        let mut c = inside(&w, &job, &token);
        if token.is_empty() {
            c.env_remove("FLEET_DISPATCH_JOB_TOKEN");
        }
        let c = Client::start(c);
        let (code, err) = c.close();
        assert_eq!(code, 77, "{err}");
        assert!(
            err.contains("FORBIDDEN") && err.contains("FLEET_DISPATCH_JOB_TOKEN"),
            "{err}"
        );
    }
    assert_eq!(
        files(&w.pc().join("inbox")).len(),
        2,
        "a refused start wrote a job"
    );
}

#[test]
fn the_listener_gives_each_job_its_token() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&["env", "FLEET_DISPATCH_JOB_TOKEN"]));
    w.listen_once(&[]);
    let log =
        std::fs::read_to_string(w.pc().join("logs").join(format!("{id}.stdout.log"))).unwrap();
    assert_eq!(log.trim(), job_token(&id, "PC"));
}

/// In the roster lane a job's token is an HMAC-SHA256 of its token text
/// under a key derived from its machine's identity (HKDF-SHA256, computed
/// here with `ring` from the identity file's seed): the listener gives it,
/// `mcp` run as the job on that machine believes it, and a sibling's token,
/// or one made with another machine's identity, is refused.
#[test]
fn in_the_roster_lane_a_job_token_is_derived_from_the_identity_and_believed() {
    use crate::util::machines;
    let w = machines::fleet(&[]);
    let enqueue = |argv: Vec<String>| {
        let mut args = vec!["enqueue", "--target", "PC", "--"];
        args.extend(argv.iter().map(String::as_str));
        machines::last_line(&machines::ok(&w, "PC", &args))
    };
    let job = enqueue(kit(&["env", "FLEET_DISPATCH_JOB_TOKEN"]));
    let sibling = enqueue(kit(&["sleep", "1"]));
    machines::ok(&w, "PC", &["listen", "--once", "--poll-interval", "100ms"]);
    let given =
        std::fs::read_to_string(w.pc().join("logs").join(format!("{job}.stdout.log"))).unwrap();
    let token_of = |machine: &str, id: &str| {
        let text = machines::identity(&w, machine).to_file_text();
        let seed = text
            .lines()
            .find_map(|l| l.strip_prefix("ed25519-seed "))
            .unwrap();
        let seed = hex::decode(seed).unwrap();
        let key: ring::hmac::Key =
            ring::hkdf::Salt::new(ring::hkdf::HKDF_SHA256, b"fleet-dispatch job token key")
                .extract(&seed)
                .expand(&[b"job-token"], ring::hmac::HMAC_SHA256)
                .unwrap()
                .into();
        let id = fleet_dispatch::base::names::JobId::parse(id).unwrap();
        let text = fleet_dispatch::protocol::jobenv::token_text(&id, "PC");
        hex::encode(ring::hmac::sign(&key, text.as_bytes()).as_ref())
    };
    assert_eq!(given.trim(), token_of("PC", &job));
    let as_job = |token: &str| {
        let mut c = machines::bg(&w, "PC");
        c.env("FLEET_DISPATCH_JOB_ID", &job)
            .env("FLEET_DISPATCH_TARGET", "PC")
            .env("FLEET_DISPATCH_JOB_TOKEN", token);
        Client::start(c)
    };
    let mut c = as_job(given.trim());
    c.initialize("2025-11-25");
    let (code, err) = c.close();
    assert_eq!(code, 0, "{err}");
    for wrong in [token_of("PC", &sibling), token_of("LAPTOP", &job)] {
        let (code, err) = as_job(&wrong).close();
        assert_eq!(code, 77, "{err}");
        assert!(err.contains("FORBIDDEN"), "{err}");
    }
}

trait Children {
    fn enqueue_as_child(&self, parent: &str) -> String;
}

impl Children for World {
    /// A job enqueued from inside `parent` (its child).
    fn enqueue_as_child(&self, parent: &str) -> String {
        let mut c = self.cmd();
        c.env("FLEET_DISPATCH_JOB_ID", parent)
            .args(["enqueue", "--target", "PC", "--"])
            .args(kit(&["sleep", "1"]));
        let (code, out, err) = output(&mut c);
        assert_eq!(code, 0, "{out}{err}");
        out.trim().to_string()
    }
}

/// `dispatch_job` with `seal: true` in the roster lane does what
/// `enqueue --seal` does: its job file holds no argv, label or env, it
/// runs on its target, and only the dispatching machine opens the
/// result's detail. `seal` not a boolean, or outside the roster lane, is
/// refused with nothing written.
#[test]
fn a_sealed_dispatch_runs_and_its_job_file_shows_no_argv() {
    use crate::util::machines;
    const MARK: &str = "MCP_SEAL_ARGV_6614";
    const LABEL: &str = "MCP_SEAL_LABEL_2290";
    let w = machines::fleet(&[]);
    let mut c = Client::start(machines::bg(&w, "LAPTOP"));
    c.initialize("2025-11-25");
    let argv = kit(&["out", MARK]);
    assert_eq!(
        c.refused(
            "dispatch_job",
            json!({"target": "PC", "argv": argv, "seal": "yes"})
        ),
        "VALIDATION_ERROR"
    );
    assert!(inbox_is_empty(&w));
    let id = c.ok(
        "dispatch_job",
        json!({"target": "PC", "argv": argv, "label": LABEL, "env": {"SEAL_MCP_ENV": MARK}, "seal": true}),
    )["job_id"]
        .as_str()
        .unwrap()
        .to_string();
    let text = std::fs::read_to_string(w.inbox(&id)).unwrap();
    assert!(!text.contains(MARK) && !text.contains(LABEL), "{text}");
    let spec = spec_of(&w, &id);
    assert!(
        spec.get("argv").is_none() && spec["sealed"].is_object(),
        "{spec}"
    );
    machines::ok(&w, "PC", &["listen", "--once", "--poll-interval", "100ms"]);
    let got = c.ok(
        "job_result",
        json!({"target": "PC", "job_id": id, "wait_seconds": 10}),
    );
    assert_eq!(got["ok"], true, "{got}");
    assert!(got.to_string().contains(MARK), "{got}");
    for f in machines::all_files(&w.root) {
        let bytes = std::fs::read(&f).unwrap();
        for m in [MARK, LABEL] {
            assert!(
                !bytes.windows(m.len()).any(|b| b == m.as_bytes()),
                "{m} is in {}",
                f.display()
            );
        }
    }
    // message_job takes it as well.
    let next = c.ok(
        "message_job",
        json!({"target": "PC", "job_id": id, "argv": argv, "seal": true}),
    )["job_id"]
        .as_str()
        .unwrap()
        .to_string();
    let spec = spec_of(&w, &next);
    assert!(
        spec.get("argv").is_none() && spec["sealed"].is_object(),
        "{spec}"
    );
    drop(c);
    // Outside the roster lane, as enqueue --seal.
    let w = World::with_target();
    let mut c = Client::of(&w);
    c.initialize("2025-11-25");
    assert_eq!(
        c.refused(
            "dispatch_job",
            json!({"target": "PC", "argv": ["true"], "seal": true})
        ),
        "CONFIG"
    );
    assert!(inbox_is_empty(&w));
}
