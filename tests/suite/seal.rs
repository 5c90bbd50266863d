//! Sealed jobs (`enqueue --seal`, docs/identities.md "Sealed jobs")
//! through the real binary, three machines in the roster lane with no
//! fleet key: the payload sealed to the target, the result's detail and
//! output tails sealed back to the origin, nothing of either anywhere in
//! the shared root; `seal-required` judged at the sender and at the
//! target, `bad-seal` for an envelope moved into another job.

use serde_json::Value;

use crate::util::machines::*;
use crate::util::*;

/// `enqueue --target PC` from `from` with `flags`: the job id.
fn enqueue(w: &World, from: &str, flags: &[&str], argv: &[&str]) -> String {
    let mut args = vec!["enqueue", "--target", "PC"];
    args.extend_from_slice(flags);
    args.push("--");
    args.extend_from_slice(argv);
    last_line(ok(w, from, &args).trim())
}

/// `listen --once` on PC: its counters.
fn listen_once(w: &World) -> Value {
    let out = ok(
        w,
        "PC",
        &["--json", "listen", "--once", "--poll-interval", "100ms"],
    );
    serde_json::from_str::<Value>(out.trim()).unwrap()["counters"].clone()
}

/// `result --json` of `id` on PC, asked by `from`: (status, document).
fn result(w: &World, from: &str, id: &str) -> (i32, Value) {
    let (code, out, err) = run(
        w,
        from,
        &["--json", "result", "--target", "PC", "--job-id", id],
    );
    let v = serde_json::from_str(out.trim()).unwrap_or_else(|_| panic!("{out}{err}"));
    (code, v)
}

/// Panics naming the file when any of `markers` is in a file under the
/// root.
fn assert_root_free_of(w: &World, markers: &[&str]) {
    let files = all_files(&w.root);
    assert!(!files.is_empty());
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        for m in markers {
            assert!(
                !bytes.windows(m.len()).any(|win| win == m.as_bytes()),
                "{m} is in {}",
                f.display()
            );
        }
    }
}

const ARGV_MARK: &str = "ARGV_MARK_7731";
const ENV_NAME: &str = "SEAL_ENV_NAME_3318";
const ENV_MARK: &str = "ENV_MARK_5521";
const LABEL_MARK: &str = "LABEL_MARK_9902";
/// Printed by the job from two halves (one in its argv, one in its
/// environment), so only its output holds it whole.
const OUTPUT_MARK: &str = "OUTPUT_ZEBRA_4417";

#[test]
fn a_sealed_job_leaves_no_byte_of_its_payload_or_output_in_the_root() {
    let w = fleet(&[]);
    let env = format!("{ENV_NAME}={ENV_MARK}");
    let err = format!("${ENV_NAME}");
    let kit = jobkit().display().to_string();
    let id = enqueue(
        &w,
        "LAPTOP",
        &[
            "--seal",
            "--label",
            LABEL_MARK,
            "--env",
            &env,
            "--env",
            "HALF=ZEBRA_4417",
        ],
        &[&kit, "out", "OUTPUT_$HALF", "err", &err, "out", ARGV_MARK],
    );
    // The job file shows the header and the envelope only.
    let job: Value = serde_json::from_str(&std::fs::read_to_string(w.inbox(&id)).unwrap()).unwrap();
    let spec: Value = serde_json::from_str(job["spec"].as_str().unwrap()).unwrap();
    assert!(
        spec.get("argv").is_none() && spec.get("label").is_none(),
        "{spec}"
    );
    assert_eq!(
        spec["sealed"]["alg"], "x25519-hkdf-sha256-chacha20poly1305",
        "{spec}"
    );
    let c = listen_once(&w);
    assert_eq!(c["done"], 1, "{c}");
    let markers = [ARGV_MARK, ENV_NAME, ENV_MARK, LABEL_MARK, OUTPUT_MARK];
    assert_root_free_of(&w, &markers);
    // The origin opens the result: its label and both tails.
    let (code, v) = result(&w, "LAPTOP", &id);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["detail"]["label"], LABEL_MARK, "{v}");
    assert!(
        v["detail"]["stdoutTail"]
            .as_str()
            .unwrap()
            .contains(OUTPUT_MARK),
        "{v}"
    );
    assert!(
        v["detail"]["stderrTail"]
            .as_str()
            .unwrap()
            .contains(ENV_MARK),
        "{v}"
    );
    let human = ok(&w, "LAPTOP", &["result", "--target", "PC", "--job-id", &id]);
    assert!(human.contains(OUTPUT_MARK), "{human}");
    // `logs` on the origin shows the ends its sealed result carries.
    let (code, out, err) = run(&w, "LAPTOP", &["logs", "--target", "PC", "--job-id", &id]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(OUTPUT_MARK) && err.contains("sealed"),
        "{out}{err}"
    );
    // Another machine of the fleet sees that it is sealed, and nothing of it.
    let (code, v) = result(&w, "NAS", &id);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["detail"], "sealed", "{v}");
    let human = ok(&w, "NAS", &["result", "--target", "PC", "--job-id", &id]);
    assert!(human.contains("detail: sealed"), "{human}");
    for m in markers {
        assert!(!human.contains(m), "{human}");
    }
    let (code, out, err) = run(&w, "NAS", &["logs", "--target", "PC", "--job-id", &id]);
    assert_eq!(code, 77, "{out}{err}");
    assert!(err.contains("sealed"), "{err}");
    assert!(!out.contains(OUTPUT_MARK), "{out}");
    // Nothing the commands above did wrote any of it to the root either.
    assert_root_free_of(&w, &markers);
}

#[cfg(unix)]
#[test]
fn a_running_sealed_job_shows_nothing_of_itself_in_running_or_the_heartbeat() {
    let w = fleet(&[]);
    let id = enqueue(
        &w,
        "LAPTOP",
        &["--seal", "--label", LABEL_MARK],
        &[
            &jobkit().display().to_string(),
            "out",
            ARGV_MARK,
            "sleep",
            "2",
        ],
    );
    let l = ListenerGuard::spawn(bg(&w, "PC").args(["listen", "--poll-interval", "100ms"]));
    wait_until(std::time::Duration::from_secs(10), || {
        w.running(&id).exists()
    });
    let shown: Value =
        serde_json::from_str(&std::fs::read_to_string(w.running(&id)).unwrap()).unwrap();
    assert_eq!(shown["sealed"], true, "{shown}");
    assert_root_free_of(&w, &[LABEL_MARK, ARGV_MARK]);
    let out = ok(&w, "NAS", &["status", "--target", "PC"]);
    assert!(out.contains("running") && out.contains("sealed"), "{out}");
    assert!(
        !out.contains(LABEL_MARK) && !out.contains(ARGV_MARK),
        "{out}"
    );
    wait_until(std::time::Duration::from_secs(15), || {
        w.result_path(&id).exists()
    });
    l.stop(&w, libc::SIGTERM, std::time::Duration::from_secs(10));
    assert_root_free_of(&w, &[LABEL_MARK, ARGV_MARK]);
    let (code, v) = result(&w, "LAPTOP", &id);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["detail"]["label"], LABEL_MARK, "{v}");
}

#[test]
fn status_shows_a_sealed_job_without_its_label_or_command() {
    let w = fleet(&[]);
    let id = enqueue(
        &w,
        "LAPTOP",
        &["--seal", "--label", LABEL_MARK],
        &["true", ARGV_MARK],
    );
    for from in ["LAPTOP", "NAS"] {
        let out = ok(&w, from, &["status", "--target", "PC"]);
        assert!(out.contains(&id) && out.contains("sealed"), "{out}");
        assert!(
            !out.contains(LABEL_MARK) && !out.contains(ARGV_MARK),
            "{out}"
        );
        let v: Value =
            serde_json::from_str(&ok(&w, from, &["--json", "status", "--target", "PC"])).unwrap();
        assert!(!v.to_string().contains(LABEL_MARK), "{v}");
        assert!(v.to_string().contains("\"sealed\":true"), "{v}");
    }
    assert_root_free_of(&w, &[LABEL_MARK, ARGV_MARK]);
}

#[test]
fn seal_needs_the_roster_lane() {
    let w = World::with_target();
    let (code, out, err) = w.run(&["enqueue", "--seal", "--target", "PC", "--", "true"]);
    assert_eq!(code, 78, "{out}{err}");
    assert!(
        err.contains("--seal") && err.contains("--auth roster"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(w.pc().join("inbox")).unwrap().count(), 0);
}

/// Runs `f` while machine `name` holds no good roster, so it signs without
/// judging its own job first, as a machine with a stale roster would.
fn blindly<T>(w: &World, name: &str, f: impl FnOnce() -> T) -> T {
    let path = w.root.join("roster.json");
    let good = std::fs::read(&path).unwrap();
    std::fs::write(&path, "not a roster").unwrap();
    let _ = std::fs::remove_file(state(w, name).join("roster.good.json"));
    let out = f();
    std::fs::write(&path, good).unwrap();
    out
}

#[test]
fn a_target_that_requires_seal_refuses_a_clear_job_at_the_sender_and_itself() {
    let w = fleet(&["--require-seal"]);
    // The sender refuses at once, naming the verdict; nothing is written.
    let (code, out, err) = run(&w, "LAPTOP", &["enqueue", "--target", "PC", "--", "true"]);
    assert_eq!(code, 77, "{out}{err}");
    assert!(
        err.contains("seal-required") && err.contains("--seal"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(w.pc().join("inbox")).unwrap().count(), 0);
    // Sent anyway, by a sender that could not judge it, the target refuses it.
    let done = kit(&[]);
    let done: Vec<&str> = done.iter().map(String::as_str).collect();
    let clear = blindly(&w, "LAPTOP", || enqueue(&w, "LAPTOP", &[], &done));
    let sealed = enqueue(&w, "LAPTOP", &["--seal"], &done);
    let c = listen_once(&w);
    assert_eq!(c["done"], 1, "{c}");
    let reason = w.reason(&format!("{clear}.json"));
    assert_eq!(reason["verdict"], "seal-required", "{reason}");
    let (code, v) = result(&w, "LAPTOP", &clear);
    assert_ne!(code, 0, "{v}");
    assert!(v.to_string().contains("seal-required"), "{v}");
    let (code, v) = result(&w, "LAPTOP", &sealed);
    assert_eq!(code, 0, "{v}");
}

#[test]
fn an_envelope_moved_into_another_job_does_not_open() {
    let w = fleet(&[]);
    let done = kit(&[]);
    let done: Vec<&str> = done.iter().map(String::as_str).collect();
    let first = enqueue(&w, "LAPTOP", &["--seal"], &done);
    let job: Value =
        serde_json::from_str(&std::fs::read_to_string(w.inbox(&first)).unwrap()).unwrap();
    // NAS, on the roster and allowed to send to PC, signs a job of its own
    // around LAPTOP's envelope.
    let nas = identity(&w, "NAS");
    let id = "20260101T000000Z-0000000000000001";
    let created = now_text();
    let spec = job["spec"].as_str().unwrap();
    let canonical = format!("job|{id}|PC|{created}|NAS|{spec}");
    let doc = serde_json::json!({
        "v": 1, "jobId": id, "target": "PC", "createdAt": created, "origin": "NAS",
        "spec": spec, "alg": "ed25519", "keyId": nas.line().ed25519.key_id(),
        "sig": hex::encode(nas.sign(canonical.as_bytes())),
    });
    std::fs::write(w.inbox(id), doc.to_string()).unwrap();
    let c = listen_once(&w);
    assert_eq!(c["done"], 1, "{c}");
    let reason = w.reason(&format!("{id}.json"));
    assert_eq!(reason["verdict"], "bad-seal", "{reason}");
    assert!(reason.to_string().contains("does not open"), "{reason}");
}

/// A stolen identity (NAS's) against another machine's work: it cannot
/// forge PC's result of LAPTOP's job, and cannot open LAPTOP's sealed
/// job; the genuine result then reaches LAPTOP.
#[test]
fn a_stolen_identity_cannot_forge_another_machine_s_result_or_open_its_sealed_job() {
    let w = fleet(&[]);
    let done = kit(&["out", "genuine-output"]);
    let done: Vec<&str> = done.iter().map(String::as_str).collect();
    let id = enqueue(&w, "LAPTOP", &["--seal"], &done);

    // NAS signs a result that claims PC ran the job.
    let nas = identity(&w, "NAS");
    let at = now_text();
    let detail = r#"{"label":"forged"}"#;
    let canonical =
        fleet_dispatch::protocol::doc::outcome::canonical(&id, "PC", true, 0, "", &at, &at, detail);
    let forged = serde_json::json!({
        "v": 1, "jobId": id, "target": "PC", "ok": true, "exitCode": 0, "error": "",
        "startedAt": at, "finishedAt": at, "detail": detail,
        "alg": "ed25519", "keyId": nas.line().ed25519.key_id(),
        "sig": hex::encode(nas.sign(canonical.as_bytes())),
    });
    std::fs::write(w.result_path(&id), forged.to_string()).unwrap();
    // Not taken: the job still reads as queued, no result.
    let (code, v) = result(&w, "LAPTOP", &id);
    assert_ne!(code, 0, "a result PC did not sign was taken: {v}");
    assert!(v.get("ok").is_none() && v["state"] == "queued", "{v}");

    // NAS cannot open what LAPTOP sealed to PC.
    let job: Value = serde_json::from_str(&std::fs::read_to_string(w.inbox(&id)).unwrap()).unwrap();
    let spec: Value = serde_json::from_str(job["spec"].as_str().unwrap()).unwrap();
    let sealed = fleet_dispatch::trust::seal::Sealed::from_json(&spec["sealed"]).unwrap();
    let context = format!("job|{id}|PC|LAPTOP");
    assert!(fleet_dispatch::trust::seal::open(&nas, &sealed, context.as_bytes()).is_err());

    // PC runs it; the forged file is set aside and the genuine result,
    // sealed back to LAPTOP, opens there.
    let c = listen_once(&w);
    assert_eq!(c["done"], 1, "{c}");
    let (code, v) = result(&w, "LAPTOP", &id);
    assert_eq!(code, 0, "{v}");
    assert!(v.to_string().contains("genuine-output"), "{v}");
    assert!(!v.to_string().contains("forged"), "{v}");
}

/// Writes `lines` as a `--batch` file in the world: its path.
fn batch_file(w: &World, lines: &[Value]) -> String {
    let path = w.dir.path().join(format!("{}.jsonl", uid("batch")));
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(&path, text.join("\n")).unwrap();
    path.to_str().unwrap().to_string()
}

/// `--json listen --once` as machine `name`: its counters.
fn listen_once_on(w: &World, name: &str) -> Value {
    let out = ok(
        w,
        name,
        &["--json", "listen", "--once", "--poll-interval", "100ms"],
    );
    serde_json::from_str::<Value>(out.trim()).unwrap()["counters"].clone()
}

/// `enqueue --batch --seal`: each line's job sealed to each of its
/// targets (a fan-out line to both), run there, its result opened on the
/// origin, and nothing of any payload or output in the root.
#[test]
fn a_sealed_batch_seals_every_line_to_each_of_its_targets() {
    let w = fleet(&[]);
    w.make_target("NAS");
    let kit = jobkit().display().to_string();
    let second_label = format!("{LABEL_MARK}_SECOND");
    let file = batch_file(
        &w,
        &[
            serde_json::json!({
                "argv": [&kit, "out", "OUTPUT_$HALF", "out", ARGV_MARK],
                "env": {"HALF": "ZEBRA_4417", ENV_NAME: ENV_MARK},
                "label": LABEL_MARK,
            }),
            serde_json::json!({
                "target": "PC,NAS",
                "argv": [&kit, "out", "OUTPUT_$HALF"],
                "env": {"HALF": "ZEBRA_4417"},
                "label": &second_label,
            }),
        ],
    );
    let out = ok(
        &w,
        "LAPTOP",
        &["enqueue", "--batch", &file, "--seal", "--target", "PC"],
    );
    let ids: Vec<&str> = out.lines().collect();
    assert_eq!(ids.len(), 2, "{out}");
    for (target, id) in [("PC", ids[0]), ("PC", ids[1]), ("NAS", ids[1])] {
        let path = w.root.join(target).join("inbox").join(format!("{id}.json"));
        let job: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let spec: Value = serde_json::from_str(job["spec"].as_str().unwrap()).unwrap();
        assert!(
            spec.get("argv").is_none() && spec.get("sealed").is_some(),
            "{target}: {spec}"
        );
    }
    let markers = [ARGV_MARK, ENV_NAME, ENV_MARK, LABEL_MARK, OUTPUT_MARK];
    assert_root_free_of(&w, &markers);
    assert_eq!(listen_once(&w)["done"], 2);
    assert_eq!(listen_once_on(&w, "NAS")["done"], 1);
    assert_root_free_of(&w, &markers);
    for (target, id, label) in [
        ("PC", ids[0], LABEL_MARK),
        ("PC", ids[1], second_label.as_str()),
        ("NAS", ids[1], second_label.as_str()),
    ] {
        let (code, out, err) = run(
            &w,
            "LAPTOP",
            &["--json", "result", "--target", target, "--job-id", id],
        );
        assert_eq!(code, 0, "{target} {id}: {out}{err}");
        let v: Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(v["detail"]["label"], label, "{v}");
        let human = ok(
            &w,
            "LAPTOP",
            &["result", "--target", target, "--job-id", id],
        );
        assert!(human.contains(OUTPUT_MARK), "{human}");
    }
    // Another machine sees only that they are sealed.
    let (code, v) = result(&w, "NAS", ids[0]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["detail"], "sealed", "{v}");
    assert_root_free_of(&w, &markers);
}

/// A batch's local refusals are a single job's: `--seal` outside the
/// roster lane (`CONFIG`), a target with no key to seal to, and a clear
/// batch to a target that requires sealed jobs (`seal-required`); each
/// before anything is published.
#[test]
fn a_batch_is_refused_sealing_where_a_single_job_is() {
    let kit = jobkit().display().to_string();
    let line = [serde_json::json!({"argv": [&kit, "out", ARGV_MARK]})];
    // The shared-key lane: the same CONFIG refusal as one job.
    let w = World::with_target();
    let file = batch_file(&w, &line);
    let (code, out, err) = w.run(&["enqueue", "--batch", &file, "--seal", "--target", "PC"]);
    assert_eq!(code, 78, "{out}{err}");
    assert!(
        err.contains("--seal") && err.contains("--auth roster"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(w.pc().join("inbox")).unwrap().count(), 0);

    let w = fleet(&["--require-seal"]);
    let file = batch_file(&w, &line);
    // A target folder not on the roster: no key to seal to, as for one job.
    w.make_target("STRAY");
    let (code_one, _, err_one) = run(
        &w,
        "LAPTOP",
        &["enqueue", "--seal", "--target", "STRAY", "--", "true"],
    );
    let (code, out, err) = run(
        &w,
        "LAPTOP",
        &[
            "enqueue", "--batch", &file, "--seal", "--target", "PC,STRAY",
        ],
    );
    assert_eq!(code, code_one, "{out}{err}");
    assert_eq!(code, 77, "{out}{err}");
    assert!(err.contains("no key to seal to"), "{err}");
    let why = |e: &str| e.split("no key to seal to").nth(1).unwrap().to_string();
    assert_eq!(why(&err), why(&err_one));
    // A clear batch to a target that requires sealed jobs.
    let (code, out, err) = run(
        &w,
        "LAPTOP",
        &["enqueue", "--batch", &file, "--target", "PC"],
    );
    assert_eq!(code, 77, "{out}{err}");
    assert!(
        err.contains("seal-required") && err.contains("--seal"),
        "{err}"
    );
    for t in ["PC", "STRAY"] {
        let inbox = w.root.join(t).join("inbox");
        assert_eq!(std::fs::read_dir(inbox).unwrap().count(), 0, "{t}");
    }
    // Sealed, the same batch is taken and run.
    let out = ok(
        &w,
        "LAPTOP",
        &["enqueue", "--batch", &file, "--seal", "--target", "PC"],
    );
    assert_eq!(listen_once(&w)["done"], 1, "{out}");
    assert_root_free_of(&w, &[ARGV_MARK]);
}

/// A listener in `both` mode on a machine whose identity file is gone (the
/// roster still lists its key, so a sender seals to it) cannot open a
/// sealed job: it refuses it `bad-seal`, saying why, runs nothing of it,
/// and goes on with the next job; the sender sees the verdict through
/// `result`.
#[cfg(unix)]
#[test]
fn a_both_listener_without_an_identity_refuses_a_sealed_job_and_goes_on() {
    let w = fleet(&[]);
    write_private(&w.key, VECTOR_KEY);
    let pc_identity = all_files(&home(&w, "PC"))
        .into_iter()
        .find(|f| {
            std::fs::read_to_string(f).is_ok_and(|t| t.starts_with("fleet-dispatch identity 1"))
        })
        .expect("PC's identity file");
    std::fs::remove_file(pc_identity).unwrap();
    let side = scratch(&w, "side");
    let sealed_argv = kit(&["append", p(&side), "sealed"]);
    let sealed_argv: Vec<&str> = sealed_argv.iter().map(String::as_str).collect();
    let sealed = enqueue(&w, "LAPTOP", &["--seal"], &sealed_argv);
    let l = ListenerGuard::spawn(
        bg(&w, "PC")
            .env("FLEET_DISPATCH_AUTH", "both")
            .env("FLEET_DISPATCH_KEY_FILE", &w.key)
            .args(["listen", "--poll-interval", "100ms"]),
    );
    wait_until(std::time::Duration::from_secs(10), || {
        w.rejected(&format!("{sealed}.json.reason.json")).exists()
    });
    let reason = w.reason(&format!("{sealed}.json"));
    assert_eq!(reason["verdict"], "bad-seal", "{reason}");
    assert!(
        reason["message"].as_str().unwrap().contains("identity"),
        "{reason}"
    );
    let (code, v) = result(&w, "LAPTOP", &sealed);
    assert_eq!(code, 76, "{v}");
    assert!(v.to_string().contains("bad-seal"), "{v}");
    let (code, out, err) = run(
        &w,
        "LAPTOP",
        &["result", "--target", "PC", "--job-id", &sealed],
    );
    assert_eq!(code, 76, "{out}{err}");
    assert!(
        err.contains("bad-seal") && err.contains("identity"),
        "{out}{err}"
    );
    assert!(err.contains("PC's listener has no identity"), "{err}");
    // The listener goes on: a clear job after it runs.
    let clear_argv = kit(&["append", p(&side), "clear"]);
    let clear_argv: Vec<&str> = clear_argv.iter().map(String::as_str).collect();
    let clear = enqueue(&w, "LAPTOP", &[], &clear_argv);
    let v = w.wait_result(&clear, std::time::Duration::from_secs(15));
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(lines(&side), ["clear"], "the sealed job never ran");
    let (code, out, err) = l.stop(&w, libc::SIGTERM, std::time::Duration::from_secs(10));
    assert_eq!(code, polite_stop::EXIT, "{out}{err}");
    assert!(!err.contains("INTERNAL"), "{err}");
}
