//! The roster lane (`--auth roster`, docs/identities.md) on a bucket root,
//! through the binary against the S3 engine `ci/engine-s3` starts: the
//! roster is the object `PREFIX/roster.json`, published and edited by the
//! admin's `roster` commands; machines join without a secret travelling;
//! a listener on the bucket runs the jobs the roster lets in, refuses a
//! removed machine's queued job by name, and opens a sealed job whose
//! object the store only ever holds encrypted. Each machine has its own
//! home and state directory, and no fleet key file exists anywhere.

use serde_json::Value;

use crate::util::engine::*;
use crate::util::machines::{all_files, bg, last_line};
use crate::util::*;

/// `fleet-dispatch --auth roster` as machine `name` on the engine's bucket.
fn on_bucket(e: &Engine, w: &World, name: &str, args: &[&str]) -> (i32, String, String) {
    on_bucket_with(e, w, name, &[], args)
}

/// The same with the variables `vars` set too.
fn on_bucket_with(
    e: &Engine,
    w: &World,
    name: &str,
    vars: &[(&str, &str)],
    args: &[&str],
) -> (i32, String, String) {
    let mut c = bg(w, name);
    c.envs(vars.iter().copied());
    c.env("FLEET_DISPATCH_ROOT", lane_root(e))
        .env("FLEET_DISPATCH_FLEET", "PC");
    for (k, v) in &e.vars {
        c.env(k, v);
    }
    c.args(args);
    output(&mut assert_cmd::Command::from_std(c))
}

/// The same, which must succeed: its stdout.
fn ok(e: &Engine, w: &World, name: &str, args: &[&str]) -> String {
    let (code, out, err) = on_bucket(e, w, name, args);
    assert_eq!(code, 0, "{args:?} as {name}: {out}{err}");
    out
}

/// A keyless world on the bucket: PC the admin and on the roster, LAPTOP
/// joined as the requirement says (`identity init` on it, its line pasted
/// into `roster add` on PC, the admin key pinned on it).
fn fleet(e: &Engine) -> World {
    let w = with_roster(e);
    std::fs::remove_file(&w.key).unwrap();
    w
}

/// The same, the world's fleet key file kept (for a migration's `both`).
fn with_roster(e: &Engine) -> World {
    let w = World::new();
    let line = last_line(&ok(e, &w, "PC", &["identity", "init"]));
    let admin = last_line(&ok(e, &w, "PC", &["roster", "init"]));
    ok(e, &w, "PC", &["roster", "add", "PC", "--identity", &line]);
    let line = last_line(&ok(e, &w, "LAPTOP", &["identity", "init"]));
    ok(
        e,
        &w,
        "PC",
        &["roster", "add", "LAPTOP", "--identity", &line],
    );
    ok(e, &w, "LAPTOP", &["roster", "pin", &admin]);
    w
}

/// NAS put on the roster by PC (`identity init` on it, its line added),
/// and not pinned.
fn add_nas(e: &Engine, w: &World) {
    let line = last_line(&ok(e, w, "NAS", &["identity", "init"]));
    ok(e, w, "PC", &["roster", "add", "NAS", "--identity", &line]);
}

/// `enqueue --target PC` from LAPTOP of `jobkit STEPS…` (`extra` flags
/// first): the job id.
fn enqueue(e: &Engine, w: &World, extra: &[&str], steps: &[&str]) -> String {
    let argv = kit(steps);
    let mut args = vec!["enqueue", "--target", "PC"];
    args.extend_from_slice(extra);
    args.push("--");
    args.extend(argv.iter().map(String::as_str));
    last_line(ok(e, w, "LAPTOP", &args).trim())
}

/// `listen --once` on PC: its counters.
fn listen_once(e: &Engine, w: &World) -> Value {
    let out = ok(e, w, "PC", &["--json", "listen", "--once"]);
    serde_json::from_str::<Value>(out.trim()).unwrap()["counters"].clone()
}

/// Every object under the test's prefix: (key, bytes).
fn everything(e: &Engine) -> Vec<(String, Vec<u8>)> {
    let c = e.client();
    c.list(&e.prefix, None, 1000)
        .unwrap()
        .into_iter()
        .map(|x| {
            let body = lane_object(e, x.key.strip_prefix(&e.prefix).unwrap()).unwrap_or_default();
            (x.key, body)
        })
        .collect()
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_machines_join_a_roster_on_the_bucket_and_run_jobs_signed_by_their_origin() {
    let e = Engine::new();
    let w = fleet(&e);
    // The roster is an object beside the targets, and verifies here.
    let roster = lane_json(&lane_object(&e, "roster.json").expect("PREFIX/roster.json"));
    assert_eq!(roster["version"], 3, "{roster}");
    let shown = ok(&e, &w, "LAPTOP", &["roster", "verify"]);
    assert!(shown.contains("valid: version 3"), "{shown}");
    assert!(shown.contains("roster.json"), "{shown}");
    // `doctor` on the bucket judges the roster object as a listener would.
    let (_, out, err) = on_bucket(&e, &w, "LAPTOP", &["--json", "doctor"]);
    let v: Value = serde_json::from_str(out.trim()).unwrap_or_else(|_| panic!("{out}{err}"));
    let roster = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "roster")
        .unwrap_or_else(|| panic!("no roster check: {v}"))
        .clone();
    assert_eq!(roster["status"], "ok", "{v}");
    let m = roster["message"].as_str().unwrap();
    assert!(m.contains("version 3") && m.contains("expires at"), "{m}");
    let id = enqueue(&e, &w, &[], &["out", "hello-from-laptop"]);
    let job = lane_json(&lane_object(&e, &format!("PC/inbox/{id}.json")).unwrap());
    assert_eq!(job["alg"], "ed25519", "{job}");
    let c = listen_once(&e, &w);
    assert_eq!(c["done"], 1, "{c}");
    let (code, out, err) = on_bucket(
        &e,
        &w,
        "LAPTOP",
        &["--json", "result", "--target", "PC", "--job-id", &id],
    );
    assert_eq!(code, 0, "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["signedBy"]["machine"], "PC", "{v}");
    // No key, identity or admin key, nor any secret, on the bucket.
    for (key, body) in everything(&e) {
        assert!(
            !key.ends_with(".key") && !key.ends_with(".identity"),
            "{key}"
        );
        let text = String::from_utf8_lossy(&body);
        assert!(
            !text.contains("ed25519-seed") && !text.contains("x25519-secret"),
            "a secret in {key}"
        );
    }
    assert!(
        all_files(w.dir.path())
            .iter()
            .all(|f| f.file_name().unwrap() != "fleet-dispatch.key"),
        "no fleet key file"
    );
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_a_removed_machine_s_queued_job_is_refused_by_a_listener_on_the_bucket() {
    let e = Engine::new();
    let w = fleet(&e);
    let id = enqueue(&e, &w, &[], &[]);
    ok(&e, &w, "PC", &["roster", "remove", "LAPTOP"]);
    let c = listen_once(&e, &w);
    assert_eq!(c["done"], 0, "{c}");
    assert_eq!(c["rejected"], 1, "{c}");
    let reason = lane_json(
        &lane_object(&e, &format!("PC/archive/rejected/{id}.json.reason.json"))
            .expect("the refusal's reason"),
    );
    assert_eq!(reason["verdict"], "unknown-signer", "{reason}");
    assert!(lane_object(&e, &format!("PC/results/{id}.json")).is_none());
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_a_sealed_job_is_never_in_the_clear_on_the_bucket_and_runs() {
    let e = Engine::new();
    let w = fleet(&e);
    let id = enqueue(&e, &w, &["--seal"], &["exit", "7"]);
    let body = lane_object(&e, &format!("PC/inbox/{id}.json")).unwrap();
    let job = lane_json(&body);
    assert!(
        job["spec"].as_str().unwrap().contains("\"sealed\""),
        "{job}"
    );
    assert!(!String::from_utf8_lossy(&body).contains("jobkit"), "{job}");
    let c = listen_once(&e, &w);
    assert_eq!(c["failed"], 1, "{c}");
    let (code, out, err) = on_bucket(
        &e,
        &w,
        "LAPTOP",
        &["result", "--target", "PC", "--job-id", &id],
    );
    assert_eq!(code, 7, "{out}{err}");
    for (key, body) in everything(&e) {
        assert!(!String::from_utf8_lossy(&body).contains("jobkit"), "{key}");
    }
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_a_listener_on_the_bucket_with_no_pin_refuses_to_start() {
    let e = Engine::new();
    let w = fleet(&e);
    add_nas(&e, &w);
    let (code, out, err) = on_bucket(&e, &w, "NAS", &["listen", "--once"]);
    assert_eq!(code, 78, "{out}{err}");
    assert!(err.contains("roster pin"), "{err}");
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_an_edit_of_a_roster_replaced_since_it_was_read_is_refused_and_loses_nothing() {
    use fleet_dispatch::store::objstore::S3Root;
    use fleet_dispatch::trust::store::RosterAt;
    let e = Engine::new();
    let w = fleet(&e);
    let at = RosterAt::on_bucket(e.client(), S3Root::parse(&lane_root(&e)).unwrap());
    let stale = at.read().unwrap();
    // Another admin's edit lands between this read and its write.
    add_nas(&e, &w);
    let err = at.replace(&stale, &stale.bytes).unwrap_err();
    assert!(
        err.message.contains("changed while it was edited"),
        "{}",
        err.message
    );
    let now = lane_json(&lane_object(&e, "roster.json").unwrap());
    assert_eq!(now["version"], 4, "{now}");
    let shown = ok(&e, &w, "PC", &["roster", "show"]);
    assert!(shown.contains("NAS: may send to"), "{shown}");
    // And `roster init` never replaces one that is there.
    let (code, out, err) = on_bucket(&e, &w, "PC", &["roster", "init"]);
    assert_eq!(code, 64, "{out}{err}");
    assert!(err.contains("already exists"), "{err}");
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_a_both_listener_on_the_bucket_runs_fleet_key_and_roster_jobs() {
    let e = Engine::new();
    let w = with_roster(&e);
    let key = w.key.display().to_string();
    let both = [
        ("FLEET_DISPATCH_AUTH", "both"),
        ("FLEET_DISPATCH_KEY_FILE", key.as_str()),
    ];
    // A machine still on the fleet key, and LAPTOP on the roster.
    let (code, out, err) = lane_run(&e, &w, &["enqueue", "--target", "PC", "--", "true"]);
    assert_eq!(code, 0, "{out}{err}");
    let shared = out.trim().to_string();
    let signed = enqueue(&e, &w, &[], &[]);
    let (code, out, err) = on_bucket_with(&e, &w, "PC", &both, &["--json", "listen", "--once"]);
    assert_eq!(code, 0, "{out}{err}");
    let c = serde_json::from_str::<Value>(out.trim()).unwrap()["counters"].clone();
    assert_eq!(c["done"], 2, "{c}");
    for id in [&shared, &signed] {
        let r = lane_json(&lane_object(&e, &format!("PC/results/{id}.json")).unwrap());
        assert_eq!(r["ok"], true, "{r}");
    }
    // In `roster` mode the same listener refuses the fleet key's job.
    let (code, out, err) = lane_run(&e, &w, &["enqueue", "--target", "PC", "--", "true"]);
    assert_eq!(code, 0, "{out}{err}");
    let refused = out.trim().to_string();
    let c = listen_once(&e, &w);
    assert_eq!(c["rejected"], 1, "{c}");
    let reason = lane_json(
        &lane_object(
            &e,
            &format!("PC/archive/rejected/{refused}.json.reason.json"),
        )
        .unwrap(),
    );
    assert_eq!(reason["verdict"], "alg-not-allowed", "{reason}");
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_a_bucket_writer_cannot_forge_or_roll_back_the_roster_object() {
    let e = Engine::new();
    let w = fleet(&e);
    let key = e.key("roster.json");
    let put = |bytes: &[u8]| {
        let c = e.client();
        let etag = match c.head(&key) {
            fleet_dispatch::store::objstore::Answer::Done(r) => r.etag.unwrap(),
            other => panic!("HEAD roster.json: {other:?}"),
        };
        assert!(matches!(
            c.put_if_match(&key, bytes, &etag),
            fleet_dispatch::store::objstore::Answer::Done(_)
        ));
    };
    let good = lane_object(&e, "roster.json").unwrap();
    let text = String::from_utf8(good.clone()).unwrap();
    // Forged: edited after signing, put in its place by a bucket writer.
    put(text.replace("\"*\"", "\"NAS\"").as_bytes());
    let (code, out, err) = on_bucket(&e, &w, "LAPTOP", &["listen", "--once"]);
    assert_eq!(code, 78, "{out}{err}");
    assert!(err.contains("bad signature"), "{err}");
    // Rolled back: version 4 seen on LAPTOP, version 3 put back.
    put(&good);
    ok(&e, &w, "PC", &["roster", "renew"]);
    ok(&e, &w, "LAPTOP", &["roster", "verify"]);
    put(&good);
    let (code, out, err) = on_bucket(&e, &w, "LAPTOP", &["roster", "verify"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("rolled back: version 3 is lower than version 4"),
        "{out}"
    );
}
