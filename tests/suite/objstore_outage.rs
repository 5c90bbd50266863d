//! A store that goes away under a listener on a bucket (docs/object-store.md,
//! "When the store does not answer"), through the binary against the S3
//! engine `ci/engine-s3` starts, reached through a gate on loopback that
//! the test shuts: every connection through it is cut, and new ones are
//! closed at once, as a store that restarts or a network that drops looks
//! to a client. A job that ends while the store is away keeps its true
//! result (never `interrupted`), and no job starts until that result is
//! placed; the listener rides the outage out, idle or not; one stopped
//! during it places the kept result at its next start.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::util::engine::*;
use crate::util::*;

/// A TCP gate in front of the engine: open, it passes bytes both ways;
/// shut, it cuts every connection through it and closes new ones.
struct Gate {
    endpoint: String,
    open: Arc<AtomicBool>,
    through: Arc<Mutex<Vec<TcpStream>>>,
}

impl Gate {
    fn new(upstream: &str) -> Gate {
        let to = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let open = Arc::new(AtomicBool::new(true));
        let through: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (o, t) = (Arc::clone(&open), Arc::clone(&through));
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if !o.load(Ordering::SeqCst) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(&to) else {
                    continue;
                };
                {
                    let mut held = t.lock().unwrap();
                    held.push(client.try_clone().unwrap());
                    held.push(server.try_clone().unwrap());
                }
                pipe(client.try_clone().unwrap(), server.try_clone().unwrap());
                pipe(server, client);
            }
        });
        Gate {
            endpoint,
            open,
            through,
        }
    }

    fn shut(&self) {
        self.open.store(false, Ordering::SeqCst);
        for s in self.through.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    fn reopen(&self) {
        self.open.store(true, Ordering::SeqCst);
    }
}

/// Copies `from` to `to` in a thread until either end closes.
fn pipe(mut from: TcpStream, mut to: TcpStream) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(Shutdown::Both);
        let _ = from.shutdown(Shutdown::Both);
    });
}

/// `fleet-dispatch` as PC on the engine's bucket through `gate`.
fn through(e: &Engine, w: &World, gate: &Gate) -> std::process::Command {
    let mut c = w.bg_cmd_as("PC");
    c.env("FLEET_DISPATCH_ROOT", lane_root(e))
        .env("FLEET_DISPATCH_FLEET", "PC")
        .env("FLEET_DISPATCH_STATE_DIR", w.home.join("state-PC"));
    for (k, v) in &e.vars {
        c.env(k, v);
    }
    c.env("FLEET_DISPATCH_S3_ENDPOINT", &gate.endpoint);
    c
}

/// A listener of PC through `gate`, polling fast (killed if the test
/// fails).
fn listener(e: &Engine, w: &World, gate: &Gate) -> ListenerGuard {
    let mut c = through(e, w, gate);
    c.args(["listen", "--poll-interval", "200ms"]);
    ListenerGuard::spawn(&mut c)
}

/// True while `l` runs.
fn alive(l: &mut ListenerGuard) -> bool {
    l.child.as_mut().unwrap().try_wait().unwrap().is_none()
}

/// Sends `argv` to PC straight to the engine; its id.
fn send(e: &Engine, w: &World, argv: &[String]) -> String {
    let mut args = vec!["enqueue", "--target", "PC", "--"];
    args.extend(argv.iter().map(String::as_str));
    let got = lane_run(e, w, &args);
    assert_eq!(got.0, 0, "{got:?}");
    got.1.trim().to_string()
}

fn result_of(e: &Engine, id: &str) -> Option<serde_json::Value> {
    lane_object(e, &format!("PC/results/{id}.json")).map(|b| lane_json(&b))
}

fn lines(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The kept copy of `id`'s result under the listener's state directory.
fn kept(w: &World, id: &str) -> Option<std::path::PathBuf> {
    walkdir::WalkDir::new(w.home.join("state-PC"))
        .into_iter()
        .flatten()
        .map(|e| e.into_path())
        .find(|p| p.ends_with(format!("unplaced-results/{id}.json")))
}

/// Starts a listener through `gate`, sends `first` (a job of two seconds
/// noting its start and its end in `runs`) and `second` (noting its run),
/// and shuts the gate once `first` started: the store goes away while it
/// runs. Returns once `first` ended and its result is kept.
fn a_job_ends_while_the_store_is_away(
    e: &Engine,
    w: &World,
    gate: &Gate,
    runs: &std::path::Path,
) -> (ListenerGuard, String, String) {
    let l = listener(e, w, gate);
    let first = send(
        e,
        w,
        &kit(&[
            "append",
            p(runs),
            "first started",
            "sleep",
            "2",
            "append",
            p(runs),
            "first ended",
        ]),
    );
    let second = send(e, w, &kit(&["append", p(runs), "second ran"]));
    until(Duration::from_secs(30), "the first job to start", || {
        lines(runs).contains(&"first started".to_string())
    });
    gate.shut();
    until(Duration::from_secs(30), "the first job to end", || {
        lines(runs).contains(&"first ended".to_string())
    });
    until(Duration::from_secs(30), "the result to be kept", || {
        kept(w, &first).is_some()
    });
    (l, first, second)
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_a_store_that_goes_away_loses_no_result_and_nothing_starts_until_it_is_back() {
    let (e, w) = (Engine::new(), World::new());
    let gate = Gate::new(&e.vars["FLEET_DISPATCH_S3_ENDPOINT"]);
    let runs = w.home.join("runs");
    let (mut l, first, second) = a_job_ends_while_the_store_is_away(&e, &w, &gate, &runs);

    // Well past the client's own retries (about 3 s): the listener is
    // still there, its result kept on this machine, and nothing started.
    std::thread::sleep(Duration::from_secs(5));
    assert!(alive(&mut l), "the listener stopped");
    assert!(!lines(&runs).contains(&"second ran".to_string()));
    assert!(result_of(&e, &first).is_none());

    gate.reopen();
    until(Duration::from_secs(60), "the second job's result", || {
        result_of(&e, &second).is_some()
    });
    let r = result_of(&e, &first).unwrap();
    assert_eq!(r["error"], "", "{r}");
    assert_eq!(r["ok"], true, "{r}");
    assert!(kept(&w, &first).is_none(), "the kept copy stayed");
    assert_eq!(
        lines(&runs),
        ["first started", "first ended", "second ran"],
        "each job ran once, in order"
    );

    // Idle now: an outage of several polls is ridden out, and a job sent
    // once it is over runs.
    gate.shut();
    std::thread::sleep(Duration::from_secs(6));
    assert!(alive(&mut l), "the idle listener stopped");
    gate.reopen();
    let third = send(&e, &w, &kit(&["append", p(&runs), "third ran"]));
    until(Duration::from_secs(60), "the third job's result", || {
        result_of(&e, &third).is_some()
    });
    assert_eq!(result_of(&e, &third).unwrap()["error"], "");

    let (_, _, err) = l.stop(&w, libc::SIGTERM, Duration::from_secs(20));
    assert!(
        err.contains(&format!("the store did not take the result of {first}")),
        "{err}"
    );
    assert!(err.contains("no job starts meanwhile"), "{err}");
    assert!(
        err.contains(&format!("placed the result of {first}")),
        "{err}"
    );
    assert!(err.contains("trying again at each poll"), "{err}");
    assert!(err.contains("the store did not answer"), "{err}");
    assert!(err.contains("answers again"), "{err}");
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_a_listener_stopped_while_the_store_is_away_places_the_kept_result_at_its_next_start() {
    let (e, w) = (Engine::new(), World::new());
    let gate = Gate::new(&e.vars["FLEET_DISPATCH_S3_ENDPOINT"]);
    let runs = w.home.join("runs");
    let (l, first, second) = a_job_ends_while_the_store_is_away(&e, &w, &gate, &runs);
    let (_, _, err) = l.stop(&w, libc::SIGTERM, Duration::from_secs(20));
    assert!(err.contains("placed at the next start"), "{err}");
    assert!(
        kept(&w, &first).is_some(),
        "the kept copy went with the stop"
    );
    assert!(result_of(&e, &first).is_none());

    // Back: the next start places the kept result first, so the job keeps
    // its true end, and the job behind it runs once.
    gate.reopen();
    let mut c = through(&e, &w, &gate);
    c.args(["listen", "--once"]);
    let got = output(&mut assert_cmd::Command::from_std(c));
    assert_eq!(got.0, 0, "{got:?}");
    let r = result_of(&e, &first).unwrap();
    assert_eq!(r["error"], "", "{r}");
    assert_eq!(r["ok"], true, "{r}");
    assert!(kept(&w, &first).is_none(), "the kept copy stayed");
    assert_eq!(result_of(&e, &second).unwrap()["error"], "");
    assert_eq!(
        lines(&runs),
        ["first started", "first ended", "second ran"],
        "each job ran once, in order"
    );
}
