//! A root on an object store (docs/object-store.md): the `s3://` address
//! and settings refused by name through the binary, other commands
//! refusing such a root, and the conditional-write probe against a tiny
//! stand-in S3 server on loopback, one that overwrites (refused, the
//! answer named) and one that honours `If-None-Match: *`; and the client's
//! retries against a stand-in that answers 503: bounded, and a create
//! whose answer was lost counted won only when the key holds its bytes.
//! The sender's commands on a bucket: what they cannot do yet refused by
//! name, bad input by its code, the `s3_*` keys of the config file, and
//! (against the engine) `enqueue`, `status`, `result` and `cancel`.
//!
//! The tests marked `needs an S3 engine` run against a real store that
//! `ci/engine-s3` starts (SeaweedFS), reading where it is from
//! `FLEET_DISPATCH_TEST_S3_ENDPOINT`, `…_BUCKET`, `…_ACCESS_KEY` and
//! `…_SECRET_KEY`; run with `--ignored` but without them, they fail.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Barrier, Mutex};
use std::time::Instant;

use fleet_dispatch::store::objstore::{Answer, Client, Retry, S3Root, Settings};

use crate::util::engine::*;
use crate::util::*;

const CONFIG: i32 = 78;

/// `doctor` with `root` and the variables `vars`, as machine PC.
fn doctor(w: &World, root: &str, vars: &[(&str, &str)]) -> (i32, String, String) {
    let mut c = w.cmd();
    c.args(["--root", root, "doctor"]);
    for (k, v) in vars {
        c.env(k, v);
    }
    output(&mut c)
}

#[test]
fn bad_s3_addresses_are_refused_by_name() {
    let w = World::new();
    for (root, why) in [
        ("s3://", "the bucket name is empty"),
        ("s3://Jobs", "lowercase"),
        ("s3://jobs?versionId=1", "'?'"),
        ("s3://jobs/a//b", "empty"),
        ("s3://j", "3 to 63"),
    ] {
        let (code, out, err) = doctor(&w, root, &[]);
        assert_eq!(code, CONFIG, "{root}: {out}{err}");
        assert!(err.contains(&format!("{root:?}")), "{root}: {err}");
        assert!(err.contains(why), "{root}: {err}");
    }
}

#[test]
fn bad_s3_settings_are_refused_by_name() {
    let w = World::new();
    let root = "s3://jobs/fleet";
    let (code, _, err) = doctor(
        &w,
        root,
        &[("FLEET_DISPATCH_S3_ENDPOINT", "http://store.example:9000")],
    );
    assert_eq!(code, CONFIG, "{err}");
    assert!(err.contains("http://store.example:9000"), "{err}");
    assert!(err.contains("FLEET_DISPATCH_S3_ALLOW_HTTP"), "{err}");

    let (code, _, err) = doctor(&w, root, &[("FLEET_DISPATCH_S3_PATH_STYLE", "maybe")]);
    assert_eq!(code, CONFIG, "{err}");
    assert!(err.contains("FLEET_DISPATCH_S3_PATH_STYLE"), "{err}");

    let (code, _, err) = doctor(&w, root, &[("AWS_ACCESS_KEY_ID", "AKIDONLY")]);
    assert_eq!(code, CONFIG, "{err}");
    assert!(err.contains("AWS_SECRET_ACCESS_KEY"), "{err}");

    std::fs::create_dir_all(w.home.join(".aws")).unwrap();
    std::fs::write(
        w.home.join(".aws/credentials"),
        "[default]\naws_access_key_id = A\naws_secret_access_key = S3CRET\n",
    )
    .unwrap();
    let (code, _, err) = doctor(&w, root, &[("AWS_PROFILE", "prod")]);
    assert_eq!(code, CONFIG, "{err}");
    assert!(err.contains("prod") && err.contains(".aws"), "{err}");
}

#[test]
fn other_commands_refuse_an_s3_root_naming_it_and_what_works() {
    let w = World::with_target();
    for args in [vec!["report"], vec!["report", "--out", "x.html"]] {
        let mut c = w.cmd();
        c.args(["--root", "s3://jobs/fleet"]).args(&args);
        let (code, out, err) = output(&mut c);
        assert_eq!(code, CONFIG, "{args:?}: {out}{err}");
        assert!(err.contains("s3://jobs/fleet"), "{args:?}: {err}");
        assert!(
            err.contains(
                "only `doctor`, `enqueue`, `status`, `result`, `cancel`, `logs`, `verify-marker`, `sweep`, `listen` and `roster` work"
            ),
            "{args:?}: {err}"
        );
    }
    // `roster` works on a bucket: with no pin here, it says what to run
    // before the store is asked.
    let mut c = w.cmd();
    c.args(["--root", "s3://jobs/fleet", "roster", "show"]);
    let (code, out, err) = output(&mut c);
    assert_eq!(code, CONFIG, "{out}{err}");
    assert!(err.contains("roster pin"), "{err}");
    let mut c = w.cmd();
    c.args(["--root", "s3://jobs/fleet", "config"]);
    let (code, out, err) = output(&mut c);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("s3://jobs/fleet") && out.contains("an object store"),
        "{out}"
    );
}

/// What a bucket cannot do yet is refused by name before the store is
/// asked (the endpoint here answers nothing); bad input keeps its code.
#[test]
fn the_bucket_lane_refuses_what_it_cannot_do_yet_and_bad_input_by_its_code() {
    let w = World::new();
    let dead = [("FLEET_DISPATCH_S3_ENDPOINT", "http://127.0.0.1:9")];
    let run = |args: &[&str]| {
        let mut c = w.cmd();
        c.args(["--root", "s3://jobs/fleet"]).args(args);
        for (k, v) in dead {
            c.env(k, v);
        }
        output(&mut c)
    };
    let (code, out, err) = run(&["cancel", "--target", "PC,B", "--job-id", "last"]);
    assert_eq!(code, CONFIG, "{out}{err}");
    assert!(
        err.contains("`last` in --after or over a target list") && err.contains("s3://jobs/fleet"),
        "{err}"
    );
    // The roster lane works on a bucket; what it needs here is named first.
    for (args, named) in [
        (vec!["--auth", "roster", "status"], "identity"),
        (
            vec!["enqueue", "--target", "PC", "--seal", "--", "true"],
            "sealing needs --auth roster",
        ),
    ] {
        let (code, out, err) = run(&args);
        assert_eq!(code, CONFIG, "{args:?}: {out}{err}");
        assert!(err.contains(named), "{args:?}: {err}");
    }
    for args in [
        vec![
            "enqueue", "--target", "PC", "--job-id", "../x", "--", "true",
        ],
        vec!["result", "--target", "PC", "--job-id", "a/b"],
        vec!["cancel", "--target", "PC", "--job-id", "a b"],
    ] {
        let (code, out, err) = run(&args);
        assert_eq!(code, 64, "{args:?}: {out}{err}");
        assert!(err.contains("VALIDATION_ERROR"), "{args:?}: {err}");
    }
    // A store that does not answer: an error naming the key's prefix.
    let (code, _, err) = run(&["status"]);
    assert_ne!(code, 0);
    assert!(err.contains("s3://jobs/fleet/"), "{err}");
}

/// The `s3_*` keys of the config file: shown by `config` with their
/// source, a variable winning over the file, and a bad value refused
/// naming the file's key.
#[test]
fn the_config_file_gives_the_store_settings_and_a_variable_wins() {
    let w = World::new();
    let file = w.dir.path().join("config.toml");
    std::fs::write(
        &file,
        "s3_endpoint = \"http://127.0.0.1:9\"\ns3_region = \"eu-west-3\"\ns3_path_style = false\ns3_allow_http = true\n",
    )
    .unwrap();
    let config = |vars: &[(&str, &str)]| {
        let mut c = w.cmd();
        c.env("FLEET_DISPATCH_CONFIG", &file).args([
            "--root",
            "s3://jobs/fleet",
            "--json",
            "config",
        ]);
        for (k, v) in vars {
            c.env(k, v);
        }
        let (code, out, err) = output(&mut c);
        assert_eq!(code, 0, "{out}{err}");
        serde_json::from_str::<serde_json::Value>(&out).unwrap()
    };
    let shown = config(&[]);
    let get = |v: &serde_json::Value, k: &str| {
        let s = v.to_string();
        (
            s.clone(),
            v.get(k).cloned().unwrap_or_else(|| panic!("{k} in {s}")),
        )
    };
    let (all, endpoint) = get(&shown, "s3Endpoint");
    assert!(
        endpoint.to_string().contains("http://127.0.0.1:9")
            && endpoint.to_string().contains("file"),
        "{all}"
    );
    let (all, region) = get(&shown, "s3Region");
    assert!(region.to_string().contains("eu-west-3"), "{all}");
    let (all, style) = get(&shown, "s3PathStyle");
    assert!(style.to_string().contains("\"0\""), "{all}");
    let (all, http) = get(&shown, "s3AllowHttp");
    assert!(http.to_string().contains("\"1\""), "{all}");
    let shown = config(&[("FLEET_DISPATCH_S3_REGION", "ap-south-1")]);
    let (all, region) = get(&shown, "s3Region");
    assert!(
        region.to_string().contains("ap-south-1") && region.to_string().contains("variable"),
        "{all}"
    );
    // A bad endpoint in the file is named as the file's key.
    std::fs::write(&file, "s3_endpoint = \"ftp://store\"\n").unwrap();
    let mut c = w.cmd();
    c.env("FLEET_DISPATCH_CONFIG", &file)
        .args(["--root", "s3://jobs/fleet", "status"]);
    let (code, out, err) = output(&mut c);
    assert_eq!(code, CONFIG, "{out}{err}");
    assert!(
        err.contains("s3_endpoint") && err.contains("config.toml"),
        "{err}"
    );
    let (code, _, err) = doctor(
        &w,
        "s3://jobs/fleet",
        &[("FLEET_DISPATCH_CONFIG", file.to_str().unwrap())],
    );
    assert_eq!(code, CONFIG, "{err}");
    assert!(err.contains("s3_endpoint"), "{err}");
}

/// An endpoint on a port nothing listens on: bound, then released.
fn silent_endpoint() -> String {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("http://127.0.0.1:{port}")
}

#[test]
fn doctor_warns_when_the_store_does_not_answer_and_skips_the_probe() {
    let w = World::new();
    let endpoint = silent_endpoint();
    let (code, out, err) = doctor(&w, "s3://jobs/fleet", &stand_in_vars(&endpoint));
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("reach: a listing of s3://jobs/fleet/ got no answer"),
        "{out}"
    );
    assert!(out.contains("probe did not run"), "{out}");
}

/// A bucket root's state directory kept under its earlier name
/// (`s3-<bucket>-<prefix>`, which two roots could share) is taken over
/// under the new one: the admin key pinned there stays pinned.
#[test]
fn a_state_directory_under_its_earlier_name_is_taken_over_with_its_pin() {
    let w = World::new();
    let endpoint = silent_endpoint();
    let mut vars = stand_in_vars(&endpoint);
    vars.push(("FLEET_DISPATCH_AUTH", "roster"));
    let admin = format!("ed25519:{}", "ab".repeat(32));
    let mut c = w.cmd();
    c.args(["--root", "s3://jobs/fleet", "roster", "pin", &admin]);
    for (k, v) in &vars {
        c.env(k, v);
    }
    let got = output(&mut c);
    assert_eq!(got.0, 0, "{got:?}");
    let now = w.state.join("s3-jobs__fleet_2f");
    let earlier = w.state.join("s3-jobs-fleet_");
    assert!(now.join("roster.pin").exists());
    std::fs::rename(&now, &earlier).unwrap();
    let (_, out, err) = doctor(&w, "s3://jobs/fleet", &vars);
    assert!(
        out.contains(&format!("ok    pin: admin key {admin}")),
        "{out}{err}"
    );
    assert!(now.join("roster.pin").exists());
    assert!(!earlier.exists());
}

/// A stand-in S3 server on loopback: PUT stores (refusing a create-only
/// PUT of a taken key with 412 only when `honours`), GET and HEAD read,
/// DELETE removes, a listing is always empty. One request a connection.
/// Returns its endpoint and the count of PUTs it answered.
fn stand_in(honours: bool) -> (String, Arc<Mutex<usize>>) {
    flaky_stand_in(honours, 0)
}

/// The same, but the first `fail` PUTs, though stored (or refused) as
/// usual, are answered 503: a write that took effect while its answer
/// said otherwise.
fn flaky_stand_in(honours: bool, fail: usize) -> (String, Arc<Mutex<usize>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let puts = Arc::new(Mutex::new(0));
    let counted = Arc::clone(&puts);
    std::thread::spawn(move || {
        let mut objects: HashMap<String, (Vec<u8>, Option<String>)> = HashMap::new();
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let mut r = BufReader::new(stream);
            let mut line = String::new();
            if r.read_line(&mut line).is_err() {
                continue;
            }
            let mut parts = line.split_whitespace();
            let method = parts.next().unwrap_or("").to_string();
            let target = parts.next().unwrap_or("").to_string();
            let (path, query) = target.split_once('?').unwrap_or((&target, ""));
            let mut headers = HashMap::new();
            loop {
                let mut h = String::new();
                if r.read_line(&mut h).is_err() || h.trim().is_empty() {
                    break;
                }
                if let Some((k, v)) = h.split_once(':') {
                    headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
                }
            }
            let len = headers
                .get("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let mut body = vec![0; len];
            let _ = r.read_exact(&mut body);
            let mut mark = None;
            let (status, out, etag): (u16, Vec<u8>, Option<String>) = match method.as_str() {
                "PUT" => {
                    let n = {
                        let mut c = counted.lock().unwrap();
                        *c += 1;
                        *c
                    };
                    let refused = honours
                        && headers.contains_key("if-none-match")
                        && objects.contains_key(path);
                    if !refused {
                        let mark = headers.get("x-amz-meta-claim").cloned();
                        objects.insert(path.to_string(), (body.clone(), mark));
                    }
                    if n <= fail {
                        (503, b"<Error><Code>SlowDown</Code></Error>".to_vec(), None)
                    } else if refused
                        && headers.contains_key("if-none-match")
                        && objects.contains_key(path)
                    {
                        (412, b"<Error><Code>PreconditionFailed</Code></Error>".to_vec(), None)
                    } else {
                        (200, Vec::new(), Some(format!("\"{}\"", body.len())))
                    }
                }
                "GET" if query.contains("list-type=2") => (
                    200,
                    b"<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>jobs</Name><Prefix></Prefix><KeyCount>0</KeyCount><MaxKeys>1</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>".to_vec(),
                    None,
                ),
                "GET" | "HEAD" => match objects.get(path) {
                    Some((b, m)) => {
                        mark.clone_from(m);
                        (200, b.clone(), Some(format!("\"{}\"", b.len())))
                    }
                    None => (404, Vec::new(), None),
                },
                "DELETE" => {
                    objects.remove(path);
                    (204, Vec::new(), None)
                }
                _ => (400, Vec::new(), None),
            };
            let mut head = format!(
                "HTTP/1.1 {status} X\r\nConnection: close\r\nContent-Length: {}\r\n",
                if method == "HEAD" { 0 } else { out.len() }
            );
            if let Some(t) = etag {
                head.push_str(&format!("ETag: {t}\r\n"));
            }
            if let Some(m) = mark {
                head.push_str(&format!("x-amz-meta-claim: {m}\r\n"));
            }
            head.push_str("\r\n");
            let mut s = r.into_inner();
            let _ = s.write_all(head.as_bytes());
            if method != "HEAD" {
                let _ = s.write_all(&out);
            }
        }
    });
    (endpoint, puts)
}

fn stand_in_vars(endpoint: &str) -> Vec<(&str, &str)> {
    vec![
        ("FLEET_DISPATCH_S3_ENDPOINT", endpoint),
        ("AWS_ACCESS_KEY_ID", "AKIDSTANDIN"),
        ("AWS_SECRET_ACCESS_KEY", "standin-secret"),
    ]
}

#[test]
fn doctor_refuses_a_store_that_overwrites_naming_its_answer() {
    let w = World::new();
    let (endpoint, puts) = stand_in(false);
    let (code, out, err) = doctor(&w, "s3://jobs/fleet", &stand_in_vars(&endpoint));
    assert_eq!(code, CONFIG, "{out}{err}");
    assert!(
        err.contains("answered 200 to a second create-only PUT of fleet/.probe/"),
        "{err}"
    );
    assert!(err.contains("it overwrites"), "{err}");
    assert!(err.contains("docs/object-store.md"), "{err}");
    assert_eq!(*puts.lock().unwrap(), 2);
    assert!(!format!("{out}{err}").contains("standin-secret"));
}

#[test]
fn doctor_passes_a_store_that_refuses_a_second_create() {
    let w = World::new();
    let (endpoint, _) = stand_in(true);
    let (code, out, err) = doctor(&w, "s3://jobs/fleet", &stand_in_vars(&endpoint));
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("a second one 412"), "{out}");
    assert!(out.contains("credentials from AWS_ACCESS_KEY_ID"), "{out}");
    assert!(!out.contains("standin-secret"), "{out}");
}

/// A listener refuses to start on a store that overwrites (two listeners
/// could both claim a job), naming its answer, having written nothing but
/// the probe; on one that refuses the second create it drains (nothing
/// here) and exits 0.
#[test]
fn listen_refuses_a_store_that_overwrites_and_runs_on_one_that_does_not() {
    let w = World::new();
    let listen = |endpoint: &str| {
        let mut c = w.cmd();
        c.args(["--root", "s3://jobs/fleet", "listen", "--once"]);
        for (k, v) in stand_in_vars(endpoint) {
            c.env(k, v);
        }
        output(&mut c)
    };
    let (endpoint, puts) = stand_in(false);
    let (code, out, err) = listen(&endpoint);
    assert_eq!(code, CONFIG, "{out}{err}");
    assert!(
        err.contains("answered 200 to a second create-only PUT of fleet/.probe/")
            && err.contains("it overwrites"),
        "{err}"
    );
    assert_eq!(*puts.lock().unwrap(), 2, "only the probe's two PUTs");
    let (endpoint, puts) = stand_in(true);
    let (code, out, err) = listen(&endpoint);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("done 0, failed 0"), "{out}");
    // The probe's two, then the heartbeat: listening, then stopped.
    assert!(*puts.lock().unwrap() >= 3, "{out}");
}

#[test]
fn the_probe_refuses_an_overwriting_store_through_the_library() {
    let (endpoint, _) = stand_in(false);
    let vars: HashMap<String, String> = stand_in_vars(&endpoint)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let settings = Settings::resolve(&|k| vars.get(k).cloned(), &|_| None).unwrap();
    let root = S3Root::parse("s3://jobs").unwrap();
    let client = Client::new(&settings, &root.bucket).unwrap();
    let e = fleet_dispatch::store::objstore::probe(&client, &root).unwrap_err();
    assert_eq!(e.code, fleet_dispatch::base::error::Code::Config);
    assert!(e.message.contains("answered 200"), "{}", e.message);
}

fn stand_in_client(endpoint: &str, attempts: u32) -> Client {
    let vars: HashMap<String, String> = stand_in_vars(endpoint)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let settings = Settings::resolve(&|k| vars.get(k).cloned(), &|_| None).unwrap();
    Client::new(&settings, "jobs").unwrap().with_retry(Retry {
        attempts,
        first_pause: std::time::Duration::from_millis(1),
        timeout: std::time::Duration::from_secs(10),
    })
}

#[test]
fn a_create_whose_answer_was_lost_is_won_only_when_the_store_holds_its_bytes() {
    // The first PUT is stored but answered 503; the retry meets 412. The
    // client reads the key back: its own bytes, so it won.
    let (endpoint, puts) = flaky_stand_in(true, 1);
    let c = stand_in_client(&endpoint, 4);
    assert!(matches!(c.create_only("fleet/a", b"mine"), Answer::Done(_)));
    assert_eq!(*puts.lock().unwrap(), 2);
    // A rival's bytes there: it lost, though its first answer was also 503.
    let (endpoint, _) = flaky_stand_in(true, 2);
    let rival = stand_in_client(&endpoint, 1);
    assert!(matches!(
        rival.create_only("fleet/b", b"theirs"),
        Answer::Other(503, _)
    ));
    let c = stand_in_client(&endpoint, 4);
    assert_eq!(c.create_only("fleet/b", b"mine"), Answer::Precondition);
}

/// A claim writes bytes any rival would write alike (the job's archived
/// copy): after a lost answer it is won only when the key carries its mark.
#[test]
fn a_marked_create_whose_answer_was_lost_is_won_only_by_its_mark() {
    let (endpoint, puts) = flaky_stand_in(true, 1);
    let c = stand_in_client(&endpoint, 4);
    assert!(matches!(
        c.create_only_marked("fleet/a", b"job", "run-1"),
        Answer::Done(_)
    ));
    assert_eq!(*puts.lock().unwrap(), 2);
    // A rival placed the same bytes first, its answer lost too.
    let (endpoint, _) = flaky_stand_in(true, 2);
    let rival = stand_in_client(&endpoint, 1);
    assert!(matches!(
        rival.create_only_marked("fleet/b", b"job", "run-2"),
        Answer::Other(503, _)
    ));
    let c = stand_in_client(&endpoint, 4);
    assert_eq!(
        c.create_only_marked("fleet/b", b"job", "run-1"),
        Answer::Precondition
    );
}

#[test]
fn retries_are_bounded() {
    let (endpoint, puts) = flaky_stand_in(false, usize::MAX);
    let c = stand_in_client(&endpoint, 3);
    assert!(
        matches!(c.create_only("fleet/a", b"x"), Answer::Other(503, t) if t.contains("SlowDown"))
    );
    assert_eq!(*puts.lock().unwrap(), 3);
}

// ---- against a real engine (ci/engine-s3) ----

fn etag(a: &Answer) -> String {
    match a {
        Answer::Done(r) => r.etag.clone().expect("an ETag"),
        other => panic!("expected 2xx, got {other:?}"),
    }
}

/// `rounds` rounds of 16 to 24 writers racing to create one key each
/// round, through `clients`: exactly one wins each round, and the object
/// holds its bytes. Returns the PUTs sent and the answers other than 2xx
/// and 412.
fn race(e: &Engine, clients: &[Client], rounds: usize, tag: &str) -> (usize, Vec<Answer>) {
    let mut writers = 0;
    let mut others = Vec::new();
    for round in 0..rounds {
        let n = 16 + round % 9;
        writers += n;
        let key = e.key(&format!("race-{tag}/{round}"));
        let barrier = Barrier::new(n);
        let answers: Vec<Answer> = std::thread::scope(|s| {
            let handles: Vec<_> = clients[..n]
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let (key, barrier) = (&key, &barrier);
                    s.spawn(move || {
                        barrier.wait();
                        c.create_only(key, format!("writer {i} of round {round}").as_bytes())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let won: Vec<usize> = (0..n)
            .filter(|i| matches!(answers[*i], Answer::Done(_)))
            .collect();
        assert_eq!(won.len(), 1, "round {round}: winners {won:?}: {answers:?}");
        others.extend(
            answers
                .iter()
                .filter(|a| !matches!(a, Answer::Done(_) | Answer::Precondition))
                .cloned(),
        );
        let Answer::Done(r) = clients[0].get(&key) else {
            panic!("round {round}: the winner's object is not there")
        };
        assert_eq!(
            r.body,
            format!("writer {} of round {round}", won[0]).as_bytes()
        );
    }
    (writers, others)
}

fn rounds(default: usize) -> usize {
    std::env::var("FLEET_DISPATCH_TEST_S3_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The engine itself, each PUT sent once: exactly one 2xx a round; every
/// loser is refused (412, or 409 for a write racing another).
#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_exactly_one_of_many_concurrent_create_only_puts_wins() {
    let e = Engine::new();
    let once = Retry {
        attempts: 1,
        ..Retry::default()
    };
    let clients: Vec<Client> = (0..24).map(|_| e.client().with_retry(once)).collect();
    let started = Instant::now();
    let n = rounds(50);
    let (writers, others) = race(&e, &clients, n, "once");
    let conflicts = others.iter().filter(|a| **a == Answer::Conflict).count();
    assert_eq!(others.len(), conflicts, "{others:?}");
    eprintln!(
        "conformance: exactly one winner in each of {n} rounds of 16-24 concurrent create-only PUTs ({writers} PUTs, {conflicts} answered 409, {:.1} s)",
        started.elapsed().as_secs_f64()
    );
}

/// Through the client's retries: a 409 tried again never makes a second
/// winner, and every loser ends with 412.
#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_retried_conflicts_never_make_a_second_winner() {
    let e = Engine::new();
    let clients: Vec<Client> = (0..24).map(|_| e.client()).collect();
    let started = Instant::now();
    let n = rounds(50) / 10;
    let (writers, others) = race(&e, &clients, n, "retried");
    assert!(others.is_empty(), "{others:?}");
    eprintln!(
        "conformance with retries: exactly one winner in each of {n} rounds ({writers} PUTs, {:.1} s)",
        started.elapsed().as_secs_f64()
    );
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_create_get_head_put_and_delete_round_trip() {
    let e = Engine::new();
    let c = e.client();
    let key = e.key("PC/inbox/a.json");
    let first = c.create_only(&key, b"one");
    let tag = etag(&first);
    assert_eq!(c.create_only(&key, b"two"), Answer::Precondition);
    match c.get(&key) {
        Answer::Done(r) => assert_eq!(r.body, b"one"),
        other => panic!("{other:?}"),
    }
    assert_eq!(etag(&c.head(&key)), tag);
    assert_eq!(c.get(&e.key("PC/inbox/none.json")), Answer::NotFound);
    assert_eq!(c.head(&e.key("PC/inbox/none.json")), Answer::NotFound);

    // A replacement and a delete that name a stale ETag are refused.
    let newer = etag(&c.put_if_match(&key, b"three", &tag));
    assert_ne!(newer, tag);
    assert_eq!(c.put_if_match(&key, b"four", &tag), Answer::Precondition);
    assert_eq!(c.delete_if_match(&key, &tag), Answer::Precondition);
    match c.get(&key) {
        Answer::Done(r) => assert_eq!(r.body, b"three"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(c.delete_if_match(&key, &newer), Answer::Done(_)));
    assert_eq!(c.head(&key), Answer::NotFound);
}

/// A listener's claim: the job's bytes, alike for every rival, marked
/// with the claimer. Of many racing claims exactly one wins, and the
/// store keeps and shows the winner's mark (what a claimer whose answer
/// was lost reads back).
#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_a_marked_create_is_create_only_and_keeps_the_winners_mark() {
    let e = Engine::new();
    let key = e.key("PC/archive/done/j.json");
    let won: Vec<String> = std::thread::scope(|s| {
        let racers: Vec<_> = (0..12)
            .map(|i| {
                let (e, key) = (&e, &key);
                s.spawn(move || {
                    let mark = format!("run-{i}");
                    matches!(
                        e.client().create_only_marked(key, b"the job", &mark),
                        Answer::Done(_)
                    )
                    .then_some(mark)
                })
            })
            .collect();
        racers
            .into_iter()
            .filter_map(|h| h.join().unwrap())
            .collect()
    });
    assert_eq!(won.len(), 1, "{won:?}");
    match e.client().head(&key) {
        Answer::Done(r) => assert_eq!(r.mark.as_deref(), Some(won[0].as_str())),
        other => panic!("{other:?}"),
    }
    match e.client().get(&key) {
        Answer::Done(r) => assert_eq!(r.body, b"the job"),
        other => panic!("{other:?}"),
    }
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_copy_is_create_only() {
    let e = Engine::new();
    let c = e.client();
    let (from, other, to) = (
        e.key("inbox/j.json"),
        e.key("inbox/k.json"),
        e.key("done/j.json"),
    );
    etag(&c.create_only(&from, b"job j"));
    etag(&c.create_only(&other, b"job k"));
    etag(&c.copy_create_only(&from, &to));
    assert_eq!(c.copy_create_only(&other, &to), Answer::Precondition);
    match c.get(&to) {
        Answer::Done(r) => assert_eq!(r.body, b"job j"),
        other => panic!("{other:?}"),
    }
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_lists_by_prefix_in_pages_from_a_start_after() {
    let e = Engine::new();
    let c = e.client();
    let names: Vec<String> = (0..25).map(|i| format!("PC/inbox/{i:03}.json")).collect();
    for n in &names {
        etag(&c.create_only(&e.key(n), n.as_bytes()));
    }
    etag(&c.create_only(&e.key("PC/other/x.json"), b"x"));
    let keys = |start: Option<&str>, page| -> Vec<String> {
        c.list(&e.key("PC/inbox/"), start, page)
            .unwrap()
            .into_iter()
            .map(|x| x.key)
            .collect()
    };
    let all: Vec<String> = names.iter().map(|n| e.key(n)).collect();
    assert_eq!(keys(None, 7), all);
    assert_eq!(keys(None, 1000), all);
    let after = e.key("PC/inbox/009.json");
    assert_eq!(keys(Some(&after), 4), all[10..].to_vec());
    assert!(keys(Some(&e.key("PC/inbox/999")), 4).is_empty());
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_doctor_passes_through_the_binary() {
    let e = Engine::new();
    let w = World::new();
    let root = format!("s3://{}/{}", e.bucket, e.prefix);
    let vars: Vec<(&str, &str)> = e
        .vars
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let (code, out, err) = doctor(&w, &root, &vars);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("a second one 412"), "{out}");
    assert!(!out.contains(&e.vars["AWS_SECRET_ACCESS_KEY"]), "{out}");
    // The probe cleans up after itself.
    let left = e.client().list(&e.prefix, None, 100).unwrap();
    assert!(left.is_empty(), "{left:?}");
}

// ---- the sender's side of the lane on a bucket (ci/engine-s3) ----
//
// Through the binary: `enqueue` publishes the job at
// `PREFIX/TARGET/inbox/<id>.json` (the same signed document as on a
// folder), `status` and `result` show it queued, an id already there is
// refused with nothing overwritten, of two racing `enqueue`s of one id
// exactly one wins, `cancel` publishes a signed marker create-only, and
// `result` verifies a result object.

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_enqueue_publishes_the_signed_job_under_its_key_and_it_shows_queued() {
    let (e, w) = (Engine::new(), World::new());
    let id = lane_id("q");
    let got = lane_run(
        &e,
        &w,
        &[
            "enqueue", "--target", "pc", "--job-id", &id, "--", "echo", "hi",
        ],
    );
    assert_eq!(got.0, 0, "{got:?}");
    assert_eq!(got.1.trim(), id);
    // The fleet member's spelling, the folder layout's place, the same
    // signed document a folder would hold.
    let doc = lane_json(&lane_object(&e, &format!("PC/inbox/{id}.json")).expect("the job object"));
    assert_eq!(doc["jobId"], serde_json::json!(id));
    assert_eq!(doc["target"], serde_json::json!("PC"));
    assert_eq!(doc["origin"], serde_json::json!("me"));
    assert_eq!(
        doc["sig"],
        serde_json::json!(independent_sig(&job_canonical_of(&doc)))
    );
    let st = lane_run(&e, &w, &["--json", "status"]);
    assert_eq!(st.0, 0, "{st:?}");
    let st: serde_json::Value = serde_json::from_str(&st.1).unwrap();
    assert_eq!(st["targets"][0]["target"], serde_json::json!("PC"));
    assert_eq!(st["targets"][0]["queued"], serde_json::json!([id]));
    let r = lane_run(&e, &w, &["result", "--target", "PC", "--job-id", &id]);
    assert_eq!(r.0, 124, "{r:?}");
    assert!(r.2.contains("queued"), "{}", r.2);
    let r = lane_run(
        &e,
        &w,
        &["--json", "result", "--target", "PC", "--job-id", &id],
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&r.1).unwrap()["state"],
        serde_json::json!("queued")
    );
    // A target that is neither on the bucket nor in the fleet: NOT_FOUND,
    // naming the known ones, and nothing written.
    let got = lane_run(&e, &w, &["enqueue", "--target", "LAPTOP", "--", "true"]);
    assert_eq!(got.0, 66, "{got:?}");
    assert!(
        got.2.contains("LAPTOP") && got.2.contains("PC"),
        "{}",
        got.2
    );
    let keys = e.client().list(&e.prefix, None, 100).unwrap();
    assert_eq!(keys.len(), 1, "{keys:?}");
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_an_id_already_there_is_refused_and_nothing_is_overwritten() {
    let (e, w) = (Engine::new(), World::new());
    let id = lane_id("dup");
    let key = format!("PC/inbox/{id}.json");
    assert_eq!(
        lane_run(
            &e,
            &w,
            &["enqueue", "--target", "PC", "--job-id", &id, "--", "true"]
        )
        .0,
        0
    );
    let before = lane_object(&e, &key).unwrap();
    let got = lane_run(
        &e,
        &w,
        &["enqueue", "--target", "PC", "--job-id", &id, "--", "false"],
    );
    assert_eq!(got.0, 64, "{got:?}");
    assert!(
        got.2.contains("VALIDATION_ERROR") && got.2.contains(&id),
        "{}",
        got.2
    );
    assert_eq!(lane_object(&e, &key).unwrap(), before);
    // Something else at the name (not a job) blocks the id the same way.
    let other = lane_id("junk");
    let junk = format!("PC/inbox/{other}.json");
    assert!(matches!(
        e.client().create_only(&e.key(&junk), b"not a job"),
        Answer::Done(_)
    ));
    let got = lane_run(
        &e,
        &w,
        &[
            "enqueue", "--target", "PC", "--job-id", &other, "--", "true",
        ],
    );
    assert_eq!(got.0, 64, "{got:?}");
    assert_eq!(lane_object(&e, &junk).unwrap(), b"not a job");
    // A verified result uses the id up for good.
    let used = lane_id("used");
    let result = signed_result(serde_json::json!({
        "jobId": used, "target": "PC", "ok": true, "exitCode": 0, "error": "",
        "startedAt": now_text(), "finishedAt": now_text(), "detail": "{}",
    }));
    e.client().create_only(
        &e.key(&format!("PC/results/{used}.json")),
        result.to_string().as_bytes(),
    );
    let got = lane_run(
        &e,
        &w,
        &["enqueue", "--target", "PC", "--job-id", &used, "--", "true"],
    );
    assert_eq!(got.0, 64, "{got:?}");
    assert!(got.2.contains("results/"), "{}", got.2);
    assert!(lane_object(&e, &format!("PC/inbox/{used}.json")).is_none());
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_of_two_concurrent_enqueues_of_one_id_exactly_one_wins() {
    let (e, w) = (Engine::new(), World::new());
    for round in 0..4 {
        let id = lane_id(&format!("race{round}"));
        let kids: Vec<_> = (0..2)
            .map(|n| {
                let mut c = lane_cmd(&e, &w);
                c.args(["enqueue", "--target", "PC", "--job-id", &id, "--", "echo"])
                    .arg(format!("racer-{n}"))
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped());
                c.spawn().unwrap()
            })
            .collect();
        let outs: Vec<_> = kids
            .into_iter()
            .map(|k| k.wait_with_output().unwrap())
            .collect();
        let won: Vec<usize> = (0..2).filter(|n| outs[*n].status.success()).collect();
        assert_eq!(won.len(), 1, "round {round}: {outs:?}");
        let lost = &outs[1 - won[0]];
        assert_eq!(lost.status.code(), Some(64), "{lost:?}");
        let doc = lane_json(&lane_object(&e, &format!("PC/inbox/{id}.json")).unwrap());
        let spec: serde_json::Value = serde_json::from_str(doc["spec"].as_str().unwrap()).unwrap();
        assert_eq!(
            spec["argv"],
            serde_json::json!(["echo", format!("racer-{}", won[0])])
        );
    }
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_cancel_publishes_a_signed_marker_create_only() {
    let (e, w) = (Engine::new(), World::new());
    let id = lane_id("c");
    let key = format!("PC/cancel/{id}.json");
    // An id nobody sent: NOT_FOUND, nothing written (unless --force).
    let got = lane_run(&e, &w, &["cancel", "--target", "PC", "--job-id", &id]);
    assert_eq!(got.0, 66, "{got:?}");
    assert!(lane_object(&e, &key).is_none());
    assert_eq!(
        lane_run(
            &e,
            &w,
            &[
                "enqueue", "--target", "PC", "--job-id", &id, "--", "sleep", "9"
            ]
        )
        .0,
        0
    );
    let got = lane_run(
        &e,
        &w,
        &["--json", "cancel", "--target", "PC", "--job-id", &id],
    );
    assert_eq!(got.0, 0, "{got:?}");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&got.1).unwrap()["status"],
        serde_json::json!("requested")
    );
    let bytes = lane_object(&e, &key).expect("the marker object");
    let doc = lane_json(&bytes);
    assert_eq!(
        (doc["jobId"].as_str(), doc["target"].as_str()),
        (Some(id.as_str()), Some("PC"))
    );
    assert_eq!(
        doc["sig"],
        serde_json::json!(independent_sig(&marker_canonical_of(&doc)))
    );
    // Asked again: the marker there is kept as it is.
    let got = lane_run(&e, &w, &["cancel", "--target", "PC", "--job-id", &id]);
    assert_eq!(got.0, 0, "{got:?}");
    assert!(got.1.contains("already requested"), "{}", got.1);
    assert_eq!(lane_object(&e, &key).unwrap(), bytes);
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_result_shows_a_verified_result_and_refuses_a_forged_one() {
    let (e, w) = (Engine::new(), World::new());
    let (good, forged) = (lane_id("good"), lane_id("forged"));
    let result = |id: &str, code: i64| {
        signed_result(serde_json::json!({
            "jobId": id, "target": "PC", "ok": code == 0, "exitCode": code, "error": "",
            "startedAt": now_text(), "finishedAt": now_text(), "detail": "{}",
        }))
    };
    let put = |id: &str, doc: &serde_json::Value| {
        e.client().create_only(
            &e.key(&format!("PC/results/{id}.json")),
            doc.to_string().as_bytes(),
        );
    };
    put(&good, &result(&good, 3));
    let mut bad = result(&forged, 0);
    bad["exitCode"] = serde_json::json!(1);
    put(&forged, &bad);
    let got = lane_run(&e, &w, &["result", "--target", "PC", "--job-id", &good]);
    assert_eq!(got.0, 3, "the job's own exit code: {got:?}");
    let got = lane_run(&e, &w, &["result", "--target", "PC", "--job-id", &forged]);
    assert_eq!(got.0, 77, "{got:?}");
    assert!(
        got.2.contains("FORBIDDEN") && got.2.contains(&forged),
        "{}",
        got.2
    );
    let got = lane_run(
        &e,
        &w,
        &["result", "--target", "PC", "--job-id", "no-such-job"],
    );
    assert_eq!(got.0, 66, "{got:?}");
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_a_fan_out_publishes_one_signed_copy_per_target_after_checking_all() {
    let (e, w) = (Engine::new(), World::new());
    let send = |id: &str| {
        let mut c = lane_cmd(&e, &w);
        c.env("FLEET_DISPATCH_FLEET", "PC,LAPTOP").args([
            "--json",
            "enqueue",
            "--target",
            "PC,LAPTOP",
            "--job-id",
            id,
            "--",
            "true",
        ]);
        output(&mut assert_cmd::Command::from_std(c))
    };
    let id = lane_id("fan");
    let got = send(&id);
    assert_eq!(got.0, 0, "{got:?}");
    let answer: serde_json::Value = serde_json::from_str(&got.1).unwrap();
    assert_eq!(answer["targets"], serde_json::json!(["PC", "LAPTOP"]));
    for t in ["PC", "LAPTOP"] {
        let doc = lane_json(&lane_object(&e, &format!("{t}/inbox/{id}.json")).unwrap());
        assert_eq!(doc["target"], serde_json::json!(t));
        assert_eq!(
            doc["sig"],
            serde_json::json!(independent_sig(&job_canonical_of(&doc)))
        );
    }
    // An id already queued on one target: refused before any copy goes out.
    let other = lane_id("half");
    lane_cmd(&e, &w)
        .args([
            "enqueue", "--target", "LAPTOP", "--job-id", &other, "--", "true",
        ])
        .output()
        .unwrap();
    assert!(lane_object(&e, &format!("LAPTOP/inbox/{other}.json")).is_some());
    let got = send(&other);
    assert_eq!(got.0, 64, "{got:?}");
    assert!(lane_object(&e, &format!("PC/inbox/{other}.json")).is_none());
}
