//! The sender's side of the lane on a bucket, through the binary, against
//! the engine `ci/engine-s3` starts: `enqueue` publishes the job at
//! `PREFIX/TARGET/inbox/<id>.json` (the same signed document as on a
//! folder), `status` and `result` show it queued, an id already there is
//! refused with nothing overwritten, of two racing `enqueue`s of one id
//! exactly one wins, `cancel` publishes a signed marker create-only, and
//! `result` verifies a result object. Every test here needs the engine
//! (the module's name keeps them among `objstore::engine_`, which `.ci/run`
//! counts out of the plain `--ignored` step).

use serde_json::{Value, json};

use super::{Engine, hex};
use crate::util::*;

/// `fleet-dispatch` on the engine's bucket under a fresh prefix, as
/// machine `me`, with `PC` a fleet member.
fn cmd(e: &Engine, w: &World) -> std::process::Command {
    let mut c = w.bg_cmd_as("me");
    c.env("FLEET_DISPATCH_ROOT", root(e))
        .env("FLEET_DISPATCH_FLEET", "PC");
    for (k, v) in &e.vars {
        c.env(k, v);
    }
    c
}

fn root(e: &Engine) -> String {
    format!("s3://{}/{}", e.bucket, e.prefix)
}

fn run(e: &Engine, w: &World, args: &[&str]) -> (i32, String, String) {
    output(&mut assert_cmd::Command::from_std({
        let mut c = cmd(e, w);
        c.args(args);
        c
    }))
}

/// The object at `name` under the prefix: its bytes, or `None`.
fn object(e: &Engine, name: &str) -> Option<Vec<u8>> {
    match e.client().get(&e.key(name)) {
        fleet_dispatch::store::objstore::Answer::Done(r) => Some(r.body),
        fleet_dispatch::store::objstore::Answer::NotFound => None,
        other => panic!("GET {name}: {other:?}"),
    }
}

fn json_of(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

fn unique(tag: &str) -> String {
    let mut b = [0u8; 4];
    fleet_dispatch::base::random::fill(&mut b);
    format!("{tag}-{}", hex(&b))
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_enqueue_publishes_the_signed_job_under_its_key_and_it_shows_queued() {
    let (e, w) = (Engine::new(), World::new());
    let id = unique("q");
    let got = run(
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
    let doc = json_of(&object(&e, &format!("PC/inbox/{id}.json")).expect("the job object"));
    assert_eq!(doc["jobId"], json!(id));
    assert_eq!(doc["target"], json!("PC"));
    assert_eq!(doc["origin"], json!("me"));
    assert_eq!(doc["sig"], json!(independent_sig(&job_canonical_of(&doc))));
    let st = run(&e, &w, &["--json", "status"]);
    assert_eq!(st.0, 0, "{st:?}");
    let st: Value = serde_json::from_str(&st.1).unwrap();
    assert_eq!(st["targets"][0]["target"], json!("PC"));
    assert_eq!(st["targets"][0]["queued"], json!([id]));
    let r = run(&e, &w, &["result", "--target", "PC", "--job-id", &id]);
    assert_eq!(r.0, 124, "{r:?}");
    assert!(r.2.contains("queued"), "{}", r.2);
    let r = run(
        &e,
        &w,
        &["--json", "result", "--target", "PC", "--job-id", &id],
    );
    assert_eq!(
        serde_json::from_str::<Value>(&r.1).unwrap()["state"],
        json!("queued")
    );
    // A target that is neither on the bucket nor in the fleet: NOT_FOUND,
    // naming the known ones, and nothing written.
    let got = run(&e, &w, &["enqueue", "--target", "LAPTOP", "--", "true"]);
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
    let id = unique("dup");
    let key = format!("PC/inbox/{id}.json");
    assert_eq!(
        run(
            &e,
            &w,
            &["enqueue", "--target", "PC", "--job-id", &id, "--", "true"]
        )
        .0,
        0
    );
    let before = object(&e, &key).unwrap();
    let got = run(
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
    assert_eq!(object(&e, &key).unwrap(), before);
    // Something else at the name (not a job) blocks the id the same way.
    let other = unique("junk");
    let junk = format!("PC/inbox/{other}.json");
    assert!(matches!(
        e.client().create_only(&e.key(&junk), b"not a job"),
        fleet_dispatch::store::objstore::Answer::Done(_)
    ));
    let got = run(
        &e,
        &w,
        &[
            "enqueue", "--target", "PC", "--job-id", &other, "--", "true",
        ],
    );
    assert_eq!(got.0, 64, "{got:?}");
    assert_eq!(object(&e, &junk).unwrap(), b"not a job");
    // A verified result uses the id up for good.
    let used = unique("used");
    let result = signed_result(json!({
        "jobId": used, "target": "PC", "ok": true, "exitCode": 0, "error": "",
        "startedAt": now_text(), "finishedAt": now_text(), "detail": "{}",
    }));
    e.client().create_only(
        &e.key(&format!("PC/results/{used}.json")),
        result.to_string().as_bytes(),
    );
    let got = run(
        &e,
        &w,
        &["enqueue", "--target", "PC", "--job-id", &used, "--", "true"],
    );
    assert_eq!(got.0, 64, "{got:?}");
    assert!(got.2.contains("results/"), "{}", got.2);
    assert!(object(&e, &format!("PC/inbox/{used}.json")).is_none());
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_of_two_concurrent_enqueues_of_one_id_exactly_one_wins() {
    let (e, w) = (Engine::new(), World::new());
    for round in 0..4 {
        let id = unique(&format!("race{round}"));
        let kids: Vec<_> = (0..2)
            .map(|n| {
                let mut c = cmd(&e, &w);
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
        let doc = json_of(&object(&e, &format!("PC/inbox/{id}.json")).unwrap());
        let spec: Value = serde_json::from_str(doc["spec"].as_str().unwrap()).unwrap();
        assert_eq!(spec["argv"], json!(["echo", format!("racer-{}", won[0])]));
    }
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_cancel_publishes_a_signed_marker_create_only() {
    let (e, w) = (Engine::new(), World::new());
    let id = unique("c");
    let key = format!("PC/cancel/{id}.json");
    // An id nobody sent: NOT_FOUND, nothing written (unless --force).
    let got = run(&e, &w, &["cancel", "--target", "PC", "--job-id", &id]);
    assert_eq!(got.0, 66, "{got:?}");
    assert!(object(&e, &key).is_none());
    assert_eq!(
        run(
            &e,
            &w,
            &[
                "enqueue", "--target", "PC", "--job-id", &id, "--", "sleep", "9"
            ]
        )
        .0,
        0
    );
    let got = run(
        &e,
        &w,
        &["--json", "cancel", "--target", "PC", "--job-id", &id],
    );
    assert_eq!(got.0, 0, "{got:?}");
    assert_eq!(
        serde_json::from_str::<Value>(&got.1).unwrap()["status"],
        json!("requested")
    );
    let bytes = object(&e, &key).expect("the marker object");
    let doc = json_of(&bytes);
    assert_eq!(
        (doc["jobId"].as_str(), doc["target"].as_str()),
        (Some(id.as_str()), Some("PC"))
    );
    assert_eq!(
        doc["sig"],
        json!(independent_sig(&marker_canonical_of(&doc)))
    );
    // Asked again: the marker there is kept as it is.
    let got = run(&e, &w, &["cancel", "--target", "PC", "--job-id", &id]);
    assert_eq!(got.0, 0, "{got:?}");
    assert!(got.1.contains("already requested"), "{}", got.1);
    assert_eq!(object(&e, &key).unwrap(), bytes);
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_result_shows_a_verified_result_and_refuses_a_forged_one() {
    let (e, w) = (Engine::new(), World::new());
    let (good, forged) = (unique("good"), unique("forged"));
    let result = |id: &str, code: i64| {
        signed_result(json!({
            "jobId": id, "target": "PC", "ok": code == 0, "exitCode": code, "error": "",
            "startedAt": now_text(), "finishedAt": now_text(), "detail": "{}",
        }))
    };
    let put = |id: &str, doc: &Value| {
        e.client().create_only(
            &e.key(&format!("PC/results/{id}.json")),
            doc.to_string().as_bytes(),
        );
    };
    put(&good, &result(&good, 3));
    let mut bad = result(&forged, 0);
    bad["exitCode"] = json!(1);
    put(&forged, &bad);
    let got = run(&e, &w, &["result", "--target", "PC", "--job-id", &good]);
    assert_eq!(got.0, 3, "the job's own exit code: {got:?}");
    let got = run(&e, &w, &["result", "--target", "PC", "--job-id", &forged]);
    assert_eq!(got.0, 77, "{got:?}");
    assert!(
        got.2.contains("FORBIDDEN") && got.2.contains(&forged),
        "{}",
        got.2
    );
    let got = run(
        &e,
        &w,
        &["result", "--target", "PC", "--job-id", "no-such-job"],
    );
    assert_eq!(got.0, 66, "{got:?}");
}
