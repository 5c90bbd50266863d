//! The roster lane (`--auth roster`, docs/identities.md) through the real
//! binary: machines join without any secret travelling, documents are
//! signed by the machine they name with Ed25519 and judged against the
//! admin's signed, versioned, expiring roster, with the verdicts
//! `unknown-signer`, `key-not-valid`, `not-permitted` and
//! `alg-not-allowed`. Each machine has its own home (identity, admin key)
//! and state directory (pin, versions seen) beside one shared root, and no
//! fleet key file anywhere.

use std::time::Duration;

use serde_json::Value;

use crate::util::machines::*;
use crate::util::*;

/// A world with no fleet key file at all, and `PC`'s folder.
fn keyless() -> World {
    let w = World::new();
    std::fs::remove_file(&w.key).unwrap();
    w.make_target("PC");
    w
}

/// `PC` is the admin: its identity, the roster, itself on it. Returns the
/// admin public key.
fn admin(w: &World, expires: Option<&str>) -> String {
    let line = last_line(&ok(w, "PC", &["identity", "init"]));
    let mut args = vec!["roster", "init"];
    if let Some(e) = expires {
        args.extend(["--expires", e]);
    }
    let key = last_line(&ok(w, "PC", &args));
    ok(w, "PC", &["roster", "add", "PC", "--identity", &line]);
    key
}

/// Machine `name` joins as the requirement says: `identity init` on it,
/// its line pasted into `roster add` on the admin's machine (`extra`
/// flags, e.g. `--may-send`), and the admin key pinned on it. Returns its
/// identity line.
fn join(w: &World, name: &str, admin_key: &str, extra: &[&str]) -> String {
    let line = last_line(&ok(w, name, &["identity", "init"]));
    let mut args = vec!["roster", "add", name, "--identity", &line];
    args.extend_from_slice(extra);
    ok(w, "PC", &args);
    ok(w, name, &["roster", "pin", admin_key]);
    line
}

/// `enqueue --target PC` from `from` of a job running `jobkit STEPS…` (no
/// step: it exits 0 at once, on Windows too): the job id.
fn enqueue(w: &World, from: &str, steps: &[&str]) -> String {
    let argv = kit(steps);
    let mut args = vec!["enqueue", "--target", "PC", "--"];
    args.extend(argv.iter().map(String::as_str));
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

/// The key id of `name`'s identity.
fn key_id(w: &World, name: &str) -> String {
    let v: Value = serde_json::from_str(&ok(w, name, &["--json", "identity", "show"])).unwrap();
    v["keyId"].as_str().unwrap().to_string()
}

/// Stops PC's held listener `l` as a service manager would, on every
/// platform: `listen --drain` (its running job finishes first), then
/// waits for it; returns its (status, stdout, stderr).
fn stop(w: &World, l: ListenerGuard) -> (i32, String, String) {
    ok(w, "PC", &["listen", "--drain"]);
    l.wait(Duration::from_secs(10))
}

#[test]
fn three_machines_join_without_a_secret_and_run_jobs_signed_by_their_origin() {
    let w = keyless();
    let key = admin(&w, None);
    join(&w, "LAPTOP", &key, &[]);
    join(&w, "NAS", &key, &[]);
    let a = enqueue(&w, "LAPTOP", &[]);
    let b = enqueue(&w, "NAS", &[]);
    let job: Value = serde_json::from_str(&std::fs::read_to_string(w.inbox(&a)).unwrap()).unwrap();
    assert_eq!(job["alg"], "ed25519", "{job}");
    assert_eq!(job["keyId"], key_id(&w, "LAPTOP").as_str(), "{job}");
    assert_eq!(job["sig"].as_str().unwrap().len(), 128, "{job}");
    let c = listen_once(&w);
    assert_eq!(c["done"], 2, "{c}");
    // The result is PC's, signed with PC's key, and says so.
    let pc = key_id(&w, "PC");
    for (from, id) in [("LAPTOP", &a), ("NAS", &b)] {
        let doc = w.result(id);
        assert_eq!(doc["alg"], "ed25519");
        assert_eq!(doc["keyId"], pc.as_str());
        let (code, v) = result(&w, from, id);
        assert_eq!(code, 0, "{v}");
        assert_eq!(v["signedBy"]["machine"], "PC", "{v}");
        assert_eq!(v["signedBy"]["keyId"], pc.as_str(), "{v}");
        let out = ok(&w, from, &["result", "--target", "PC", "--job-id", id]);
        assert!(out.contains(&format!("signed by PC key {pc}")), "{out}");
    }
    let status = ok(&w, "LAPTOP", &["status", "--target", "PC"]);
    assert!(
        status.contains(&format!("signed by PC key {pc}")),
        "{status}"
    );
    // The heartbeat is signed by PC's identity too, and verifies.
    let beat: Value =
        serde_json::from_str(&std::fs::read_to_string(w.pc().join("listener.json")).unwrap())
            .unwrap();
    assert_eq!(beat["alg"], "ed25519", "{beat}");
    // No key, identity or admin key file anywhere in the shared root.
    for f in all_files(&w.root) {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            !name.ends_with(".key") && !name.ends_with(".identity"),
            "{}",
            f.display()
        );
        let text = String::from_utf8_lossy(&std::fs::read(&f).unwrap()).to_string();
        assert!(
            !text.contains("ed25519-seed") && !text.contains("x25519-secret"),
            "a secret in {}",
            f.display()
        );
    }
    // No fleet key file on any machine.
    assert!(
        all_files(w.dir.path())
            .iter()
            .all(|f| f.file_name().unwrap() != "fleet.key"
                && f.file_name().unwrap() != "fleet-dispatch.key"),
        "no fleet key file"
    );
}

#[test]
fn config_shows_the_mode_and_shared_key_stays_the_default() {
    let w = World::new();
    let v: Value = serde_json::from_str(&w.run(&["--json", "config"]).1).unwrap();
    assert_eq!(v["auth"]["value"], "shared-key", "{v}");
    assert_eq!(v["auth"]["source"], "default", "{v}");
    let v: Value =
        serde_json::from_str(&output(on(&w, "PC").args(["--json", "config"])).1).unwrap();
    assert_eq!(v["auth"]["value"], "roster", "{v}");
    assert_eq!(v["auth"]["source"], "variable", "{v}");
    let note = v["keyFile"]["note"].as_str().unwrap_or("");
    assert!(note.contains("not needed"), "{v}");
    // A shared-key job carries neither alg nor keyId.
    w.make_target("PC");
    let id = w.enqueue(&[], &["true"]);
    let job: Value = serde_json::from_str(&std::fs::read_to_string(w.inbox(&id)).unwrap()).unwrap();
    assert!(
        job.get("alg").is_none() && job.get("keyId").is_none(),
        "{job}"
    );
}

#[test]
fn a_listener_without_a_pin_or_a_good_roster_refuses_to_start() {
    let w = keyless();
    last_line(&ok(&w, "LAPTOP", &["identity", "init"]));
    let (code, out, err) = run(&w, "LAPTOP", &["listen", "--once"]);
    assert_eq!(code, 78, "{out}{err}");
    assert!(
        err.contains("no admin key is pinned") && err.contains("roster pin"),
        "{err}"
    );
    // Expired: refused at start, naming when.
    let w = keyless();
    admin(&w, Some("2s"));
    std::thread::sleep(Duration::from_millis(2500));
    let (code, out, err) = run(&w, "PC", &["listen", "--once"]);
    assert_eq!(code, 78, "{out}{err}");
    assert!(err.contains("expired at"), "{err}");
    assert!(err.contains("roster renew"), "{err}");
    let (code, _, _) = run(&w, "PC", &["roster", "verify"]);
    assert_eq!(code, 1);
}

#[test]
fn a_forged_a_foreign_and_a_rolled_back_roster_are_refused_by_name() {
    let w = keyless();
    let key = admin(&w, None);
    join(&w, "LAPTOP", &key, &[]);
    let roster = w.root.join("roster.json");
    let good = std::fs::read_to_string(&roster).unwrap();
    // Forged: edited after signing.
    std::fs::write(&roster, good.replace("\"*\"", "\"NAS\"")).unwrap();
    let (code, out, err) = run(&w, "LAPTOP", &["listen", "--once"]);
    assert_eq!(code, 78, "{out}{err}");
    assert!(err.contains("bad signature"), "{err}");
    // Signed by another admin key: EVE's roster in a root of its own.
    let other = w.dir.path().join("other-root");
    std::fs::create_dir_all(&other).unwrap();
    ok(
        &w,
        "EVE",
        &["--root", other.to_str().unwrap(), "roster", "init"],
    );
    std::fs::copy(other.join("roster.json"), &roster).unwrap();
    let (code, out, err) = run(&w, "LAPTOP", &["listen", "--once"]);
    assert_eq!(code, 78, "{out}{err}");
    assert!(err.contains("another admin key"), "{err}");
    // Rolled back: version 3 seen here, version 2 put back.
    std::fs::write(&roster, &good).unwrap();
    ok(&w, "PC", &["roster", "renew"]);
    ok(&w, "LAPTOP", &["roster", "verify"]);
    std::fs::write(&roster, &good).unwrap();
    let (code, out, err) = run(&w, "LAPTOP", &["listen", "--once"]);
    assert_eq!(code, 78, "{out}{err}");
    assert!(err.contains("rolled back: version 3"), "{err}");
}

#[test]
fn a_running_listener_keeps_its_last_good_roster_and_says_why_it_refused_another() {
    let w = keyless();
    let key = admin(&w, None);
    join(&w, "LAPTOP", &key, &[]);
    let roster = w.root.join("roster.json");
    let l = ListenerGuard::spawn(bg(&w, "PC").args(["listen", "--poll-interval", "100ms"]));
    wait_until(Duration::from_secs(10), || {
        w.pc().join("listener.json").exists()
    });
    let good = std::fs::read_to_string(&roster).unwrap();
    std::fs::write(&roster, good.replace("\"*\"", "\"NAS\"")).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let id = enqueue(&w, "LAPTOP", &[]);
    let v = w.wait_result(&id, Duration::from_secs(10));
    assert_eq!(v["ok"], true, "{v}");
    let (_, _, err) = stop(&w, l);
    assert!(
        err.contains("bad signature") && err.contains("still using version 3"),
        "{err}"
    );
}

#[test]
fn a_job_edited_to_name_another_origin_is_refused() {
    let w = keyless();
    let key = admin(&w, None);
    join(&w, "LAPTOP", &key, &[]);
    join(&w, "NAS", &key, &[]);
    let id = enqueue(&w, "LAPTOP", &[]);
    let text = std::fs::read_to_string(w.inbox(&id)).unwrap();
    std::fs::write(w.inbox(&id), text.replace("\"LAPTOP\"", "\"NAS\"")).unwrap();
    let c = listen_once(&w);
    assert_eq!(c["rejected"], 1, "{c}");
    let reason = w.reason(&format!("{id}.json"));
    assert_eq!(reason["verdict"], "unknown-signer", "{reason}");
    // Its key id named too: then the signature does not verify.
    let id = enqueue(&w, "LAPTOP", &[]);
    let text = std::fs::read_to_string(w.inbox(&id)).unwrap();
    let nas = key_id(&w, "NAS");
    let laptop = key_id(&w, "LAPTOP");
    std::fs::write(
        w.inbox(&id),
        text.replace("\"LAPTOP\"", "\"NAS\"").replace(&laptop, &nas),
    )
    .unwrap();
    listen_once(&w);
    let reason = w.reason(&format!("{id}.json"));
    assert_eq!(reason["verdict"], "bad-signature", "{reason}");
}

/// A listing of many new jobs leaves each one's curve check to its turn
/// (or to a thread ahead of the drain): a job forged among them is still
/// refused `bad-signature` before anything of it runs, also one that
/// breaks a later rule too, and every genuine one runs once.
#[test]
fn forged_jobs_among_many_queued_at_once_are_refused_before_they_run() {
    let w = keyless();
    let key = admin(&w, None);
    join(&w, "LAPTOP", &key, &[]);
    let side = w.dir.path().join("ran.log");
    let mut genuine = Vec::new();
    let mut forged = Vec::new();
    for i in 0..24 {
        let tag = format!("job{i}");
        let id = enqueue(&w, "LAPTOP", &["append", side.to_str().unwrap(), &tag]);
        let text = std::fs::read_to_string(w.inbox(&id)).unwrap();
        let edited = match i % 8 {
            // Its argv edited: the signature no longer verifies.
            3 => text.replace(&tag, "evil"),
            // Edited and its spec made one this version does not run: the
            // signature's step comes first.
            5 => text
                .replace(&tag, "evil")
                .replace("\\\"argv\\\"", "\\\"argz\\\""),
            _ => {
                genuine.push(tag);
                continue;
            }
        };
        assert_ne!(edited, text, "the edit took");
        std::fs::write(w.inbox(&id), edited).unwrap();
        forged.push(id);
    }
    let c = listen_once(&w);
    assert_eq!(c["done"], genuine.len(), "{c}");
    assert_eq!(c["rejected"], forged.len(), "{c}");
    for id in &forged {
        let reason = w.reason(&format!("{id}.json"));
        assert_eq!(reason["verdict"], "bad-signature", "{id}: {reason}");
    }
    let ran = std::fs::read_to_string(&side).unwrap();
    let mut lines: Vec<&str> = ran.lines().collect();
    lines.sort();
    let mut want: Vec<&str> = genuine.iter().map(String::as_str).collect();
    want.sort();
    assert_eq!(lines, want, "each genuine job once, no forged one");
}

/// Runs `f` while machine `name` holds no good roster (the root's is
/// garbage for the moment, and its kept copy gone), so it signs without
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
fn a_machine_not_on_the_roster_is_an_unknown_signer_and_its_sender_sees_why() {
    let w = keyless();
    let key = admin(&w, None);
    ok(&w, "EVE", &["identity", "init"]);
    ok(&w, "EVE", &["roster", "pin", &key]);
    // The sender refuses at once what the target would refuse.
    let (code, out, err) = run(&w, "EVE", &["enqueue", "--target", "PC", "--", "true"]);
    assert_eq!(code, 77, "{out}{err}");
    assert!(
        err.contains("PC would refuse this job as unknown-signer"),
        "{err}"
    );
    assert!(
        files(&w.pc().join("inbox")).is_empty(),
        "nothing was written"
    );
    // A job EVE signed anyway (its roster stale, say) is refused by PC,
    // and EVE sees why through `result`.
    let eve = w.dir.path().join("EVE").join("state");
    std::fs::remove_file(eve.join("roster.pin")).unwrap();
    let (code, out, err) = run(&w, "EVE", &["enqueue", "--target", "PC", "--", "true"]);
    assert_eq!(code, 78, "no pin, no roster mode: {out}{err}");
    ok(&w, "EVE", &["roster", "pin", &key]);
    let id = blindly(&w, "EVE", || enqueue(&w, "EVE", &[]));
    let c = listen_once(&w);
    assert_eq!(c["rejected"], 1, "{c}");
    assert_eq!(w.reason(&format!("{id}.json"))["verdict"], "unknown-signer");
    let (code, v) = result(&w, "EVE", &id);
    assert_eq!(code, 76, "{v}");
    assert!(v.to_string().contains("unknown-signer"), "{v}");
}

#[test]
fn a_machine_may_send_only_where_the_roster_permits() {
    let w = keyless();
    let key = admin(&w, None);
    w.make_target("LAPTOP");
    join(&w, "NAS", &key, &["--may-send", "LAPTOP"]);
    let id = blindly(&w, "NAS", || enqueue(&w, "NAS", &[]));
    listen_once(&w);
    let reason = w.reason(&format!("{id}.json"));
    assert_eq!(reason["verdict"], "not-permitted", "{reason}");
    assert!(
        reason.to_string().contains("may not send to PC"),
        "{reason}"
    );
    // Now NAS itself refuses to send there, naming the verdict.
    let (code, out, err) = run(&w, "NAS", &["enqueue", "--target", "PC", "--", "true"]);
    assert_eq!(code, 77, "{out}{err}");
    assert!(err.contains("not-permitted"), "{err}");
    let (code, out, err) = run(&w, "NAS", &["enqueue", "--target", "LAPTOP", "--", "true"]);
    assert_eq!(code, 0, "{out}{err}");
    // A cancel marker is judged by the same rule: NAS may not cancel on PC.
    let id = enqueue(&w, "PC", &[]);
    ok(&w, "NAS", &["cancel", "--target", "PC", "--job-id", &id]);
    let (code, out, err) = run(
        &w,
        "PC",
        &["verify-marker", w.marker(&id).to_str().unwrap()],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        format!("{out}{err}").contains("not-permitted"),
        "{out}{err}"
    );
}

#[test]
fn a_rotated_key_signs_during_the_overlap_and_is_refused_after_it() {
    let w = keyless();
    let key = admin(&w, None);
    join(&w, "LAPTOP", &key, &[]);
    let during = enqueue(&w, "LAPTOP", &[]);
    let late = enqueue(&w, "LAPTOP", &[]);
    // LAPTOP gets a new key; the old one ends 2 seconds from now.
    let line = last_line(&ok(&w, "LAPTOP", &["identity", "init", "--force"]));
    ok(
        &w,
        "PC",
        &[
            "roster",
            "rotate",
            "LAPTOP",
            "--identity",
            &line,
            "--overlap",
            "2s",
        ],
    );
    // Within the overlap the old key's job runs.
    let late_job = std::fs::read(w.inbox(&late)).unwrap();
    std::fs::remove_file(w.inbox(&late)).unwrap();
    let c = listen_once(&w);
    assert_eq!(c["done"], 1, "{c}");
    assert_eq!(w.result(&during)["ok"], true);
    // After it, a job signed with the old key is refused, and the new
    // key's job runs.
    std::thread::sleep(Duration::from_millis(2200));
    std::fs::write(w.inbox(&late), late_job).unwrap();
    let fresh = enqueue(&w, "LAPTOP", &[]);
    let c = listen_once(&w);
    assert_eq!(c["done"], 1, "{c}");
    assert_eq!(w.result(&fresh)["ok"], true);
    let reason = w.reason(&format!("{late}.json"));
    assert_eq!(reason["verdict"], "key-not-valid", "{reason}");
}

#[test]
fn roster_mode_refuses_a_fleet_key_job_and_both_accepts_either() {
    let w = keyless();
    let key = admin(&w, None);
    join(&w, "LAPTOP", &key, &[]);
    let hmac = "20261129-193000-9f2c4e1ab37d5c08";
    let spec = kit_spec(&[]);
    w.write_job("PC", hmac, "PC", &now_text(), &spec);
    listen_once(&w);
    assert_eq!(
        w.reason(&format!("{hmac}.json"))["verdict"],
        "alg-not-allowed"
    );
    // `both`, with the fleet key: the HMAC job and the Ed25519 one run.
    write_private(&w.key, VECTOR_KEY);
    let hmac = "20261129-193001-9f2c4e1ab37d5c09";
    w.write_job("PC", hmac, "PC", &now_text(), &spec);
    let ed = enqueue(&w, "LAPTOP", &[]);
    let (code, out, err) = output(
        on(&w, "PC")
            .env("FLEET_DISPATCH_AUTH", "both")
            .env("FLEET_DISPATCH_KEY_FILE", &w.key)
            .args(["--json", "listen", "--once", "--poll-interval", "100ms"]),
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(w.result(hmac)["ok"], true);
    assert_eq!(w.result(&ed)["ok"], true);
    // `both` on a machine the roster lists signs with its identity (the
    // fleet key while it is not listed: migrate::), which a `both` reader
    // checks, and a shared-key one refuses.
    assert_eq!(w.result(&ed)["alg"], "ed25519");
    let (code, out, err) = output(
        on(&w, "LAPTOP")
            .env("FLEET_DISPATCH_AUTH", "both")
            .env("FLEET_DISPATCH_KEY_FILE", &w.key)
            .args(["result", "--target", "PC", "--job-id", &ed]),
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("signed by PC key"), "{out}");
    let (code, out, err) = w.run(&["result", "--target", "PC", "--job-id", &ed]);
    assert_eq!(code, 77, "{out}{err}");
}

#[test]
fn a_revoked_machine_s_queued_job_is_refused_and_its_running_job_is_not_killed() {
    let w = keyless();
    let key = admin(&w, None);
    join(&w, "LAPTOP", &key, &[]);
    // Both are queued, and judged by the listener's first pass, before
    // the revocation.
    let first = enqueue(&w, "LAPTOP", &["sleep", "2"]);
    let queued = enqueue(&w, "LAPTOP", &[]);
    let l = ListenerGuard::spawn(bg(&w, "PC").args(["listen", "--poll-interval", "100ms"]));
    wait_until(Duration::from_secs(10), || w.running(&first).exists());
    ok(&w, "PC", &["roster", "remove", "LAPTOP"]);
    let v = w.wait_result(&first, Duration::from_secs(15));
    assert_eq!(v["ok"], true, "the running job ran to its end: {v}");
    wait_until(Duration::from_secs(10), || {
        w.rejected(&format!("{queued}.json.reason.json")).exists()
    });
    assert_eq!(
        w.reason(&format!("{queued}.json"))["verdict"],
        "unknown-signer"
    );
    let _ = stop(&w, l);
    let (code, v) = result(&w, "LAPTOP", &queued);
    assert_eq!(code, 76, "{v}");
    assert!(v.to_string().contains("unknown-signer"), "{v}");
}

#[test]
fn a_cancel_marker_in_roster_mode_is_signed_by_its_origin_and_honoured() {
    let w = keyless();
    let key = admin(&w, None);
    join(&w, "LAPTOP", &key, &[]);
    let id = enqueue(&w, "LAPTOP", &[]);
    ok(&w, "LAPTOP", &["cancel", "--target", "PC", "--job-id", &id]);
    let marker: Value =
        serde_json::from_str(&std::fs::read_to_string(w.marker(&id)).unwrap()).unwrap();
    assert_eq!(marker["alg"], "ed25519", "{marker}");
    assert_eq!(marker["keyId"], key_id(&w, "LAPTOP").as_str());
    let out = ok(
        &w,
        "PC",
        &["verify-marker", w.marker(&id).to_str().unwrap()],
    );
    assert!(out.starts_with("valid: "), "{out}");
    let c = listen_once(&w);
    assert_eq!(c["cancelled"], 1, "{c}");
    assert_eq!(w.result(&id)["error"], "cancelled-before-start");
}

#[test]
fn doctor_shows_the_mode_identity_pin_and_how_long_the_roster_has_left() {
    let w = keyless();
    let key = admin(&w, None);
    join(&w, "LAPTOP", &key, &[]);
    listen_once(&w);
    let (_, out, err) = run(&w, "PC", &["--json", "doctor"]);
    let v: Value = serde_json::from_str(out.trim()).unwrap_or_else(|_| panic!("{out}{err}"));
    let check = |name: &str| {
        v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["check"] == name)
            .unwrap_or_else(|| panic!("no {name} check: {v}"))
            .clone()
    };
    assert_eq!(check("auth")["status"], "ok", "{v}");
    assert!(
        check("auth")["message"]
            .as_str()
            .unwrap()
            .starts_with("roster")
    );
    assert_eq!(check("identity")["status"], "ok", "{v}");
    assert!(
        check("identity")["message"]
            .as_str()
            .unwrap()
            .contains(&key_id(&w, "PC"))
    );
    assert_eq!(check("pin")["message"], format!("admin key {key}"));
    let roster = check("roster");
    assert_eq!(roster["status"], "ok", "{v}");
    let m = roster["message"].as_str().unwrap();
    assert!(m.contains("version 3") && m.contains("expires at"), "{m}");
    assert!(m.contains("in 89 days") || m.contains("in 90 days"), "{m}");
    // No fleet key is asked for, and PC's heartbeat verifies.
    let checks = v["checks"].as_array().unwrap();
    assert!(checks.iter().all(|c| c["check"] != "key"), "{v}");
    // On a machine with no pin the pin check says what to run.
    ok(&w, "NAS", &["identity", "init"]);
    let (code, out, _) = run(&w, "NAS", &["doctor"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("roster pin"), "{out}");
}

/// PC's listener with its HTTP intake on a free loopback port: the
/// guard, the address and the intake's URL.
fn pc_with_intake(w: &World) -> (ListenerGuard, String, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let l = ListenerGuard::spawn(bg(w, "PC").args([
        "listen",
        "--poll-interval",
        "100ms",
        "--http",
        &addr,
    ]));
    let url = format!("http://{addr}");
    (l, addr, url)
}

#[test]
fn the_http_intake_takes_a_roster_signed_job_and_answers_a_roster_signed_wait() {
    let w = keyless();
    let key = admin(&w, None);
    join(&w, "LAPTOP", &key, &[]);
    let (l, _, url) = pc_with_intake(&w);
    let noop = kit(&[]);
    let mut answer = (0, String::new(), String::new());
    wait_until(Duration::from_secs(10), || {
        answer = run(
            &w,
            "LAPTOP",
            &[
                "enqueue", "--target", "PC", "--via", &url, "--wait", "--", &noop[0],
            ],
        );
        !answer.2.contains("connect")
    });
    let (code, out, err) = answer;
    assert_eq!(code, 0, "{out}{err}");
    let _ = stop(&w, l);
    let id = out.lines().next().unwrap().trim().to_string();
    assert_eq!(w.result(&id)["alg"], "ed25519");
}

#[test]
fn a_result_signed_with_a_rotated_key_stops_verifying_after_the_overlap() {
    let w = keyless();
    let key = admin(&w, None);
    join(&w, "LAPTOP", &key, &[]);
    let id = enqueue(&w, "LAPTOP", &[]);
    listen_once(&w);
    assert_eq!(result(&w, "LAPTOP", &id).0, 0);
    // PC's key is rotated; its old key ends 2 seconds from now.
    let line = last_line(&ok(&w, "PC", &["identity", "init", "--force"]));
    ok(
        &w,
        "PC",
        &[
            "roster",
            "rotate",
            "PC",
            "--identity",
            &line,
            "--overlap",
            "2s",
        ],
    );
    assert_eq!(result(&w, "LAPTOP", &id).0, 0, "within the overlap");
    std::thread::sleep(Duration::from_millis(2200));
    let (code, out, err) = run(&w, "LAPTOP", &["result", "--target", "PC", "--job-id", &id]);
    assert_eq!(code, 77, "{out}{err}");
    assert!(
        format!("{out}{err}").contains("does not verify (key-not-valid"),
        "{out}{err}"
    );
}

/// A `both` machine sends over HTTP (`enqueue --via`, `cancel --via`) to
/// a `roster` listener: once the roster lists its identity, its jobs and
/// cancel markers are signed with it and taken; a `both` machine not on
/// the roster yet signs with the fleet key, which the roster listener
/// refuses by name (`alg-not-allowed`) with nothing queued.
#[test]
fn a_both_sender_reaches_a_roster_listener_over_http() {
    let w = keyless();
    let key = admin(&w, None);
    join(&w, "LAPTOP", &key, &[]);
    write_private(&w.key, VECTOR_KEY);
    ok(&w, "NAS", &["identity", "init"]);
    ok(&w, "NAS", &["roster", "pin", &key]);
    let both = |name: &str, args: &[&str]| {
        output(
            on(&w, name)
                .env("FLEET_DISPATCH_AUTH", "both")
                .env("FLEET_DISPATCH_KEY_FILE", &w.key)
                .args(args),
        )
    };
    let (l, addr, url) = pc_with_intake(&w);
    let noop = kit(&[]);
    wait_until(Duration::from_secs(10), || {
        std::net::TcpStream::connect(&addr).is_ok()
    });
    let answer = both(
        "LAPTOP",
        &[
            "enqueue", "--target", "PC", "--via", &url, "--wait", "--", &noop[0],
        ],
    );
    let (code, out, err) = answer;
    assert_eq!(code, 0, "{out}{err}");
    assert!(!err.contains("shared folder"), "sent over HTTP: {err}");
    let id = out.lines().next().unwrap().trim().to_string();
    assert_eq!(w.result(&id)["ok"], true);
    // A GET's header: signed by a machine on the roster, taken; with the
    // fleet key, refused, saying why.
    let path = format!("/v1/jobs/{id}");
    let (by_laptop, by_fleet) = headers(&w, &path);
    let (code, answer) = get(&addr, &path, &by_laptop);
    assert_eq!(code, 200, "{answer}");
    assert!(answer.contains("\"done\""), "{answer}");
    let (code, answer) = get(&addr, &path, &by_fleet);
    assert_eq!(code, 403, "{answer}");
    assert!(answer.contains("--auth roster"), "{answer}");
    // A long job, then its cancel, both over HTTP.
    let long = kit(&["sleep", "30"]);
    let mut args = vec!["enqueue", "--target", "PC", "--via", &url, "--"];
    args.extend(long.iter().map(String::as_str));
    let (code, out, err) = both("LAPTOP", &args);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!err.contains("shared folder"), "sent over HTTP: {err}");
    let long = last_line(&out);
    wait_until(Duration::from_secs(10), || w.running(&long).exists());
    let (code, out, err) = both(
        "LAPTOP",
        &["cancel", "--target", "PC", "--job-id", &long, "--via", &url],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(!err.contains("shared folder"), "sent over HTTP: {err}");
    let v = w.wait_result(&long, Duration::from_secs(15));
    assert_eq!(v["ok"], false, "{v}");
    assert!(v.to_string().contains("cancel"), "{v}");
    // NAS is not on the roster: it signs with the fleet key, refused.
    let (code, out, err) = both(
        "NAS",
        &["enqueue", "--target", "PC", "--via", &url, "--", &noop[0]],
    );
    assert_eq!(code, 77, "{out}{err}");
    assert!(err.contains("alg-not-allowed"), "{err}");
    let _ = stop(&w, l);
    assert!(files(&w.pc().join("inbox")).is_empty());
    // A `both` listener takes either header.
    let l = ListenerGuard::spawn(
        bg(&w, "PC")
            .env("FLEET_DISPATCH_AUTH", "both")
            .env("FLEET_DISPATCH_KEY_FILE", &w.key)
            .args(["listen", "--poll-interval", "100ms", "--http", &addr]),
    );
    wait_until(Duration::from_secs(10), || {
        std::net::TcpStream::connect(&addr).is_ok()
    });
    let (by_laptop, by_fleet) = headers(&w, &path);
    for header in [by_laptop, by_fleet] {
        let (code, answer) = get(&addr, &path, &header);
        assert_eq!(code, 200, "{header}: {answer}");
    }
    let _ = stop(&w, l);
}

/// `X-Fleet-Signature` headers for a GET of `path` on PC, now: signed with
/// LAPTOP's identity, and with the fleet key.
fn headers(w: &World, path: &str) -> (String, String) {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let canonical = request_canonical("PC", path, &t.to_string());
    let laptop = hex::encode(identity(w, "LAPTOP").sign(canonical.as_bytes()));
    (
        format!("t={t},sig={laptop}"),
        request_header("PC", path, t, Signer::Fleet),
    )
}

/// A GET of `path` at `addr` with `header` as its signature: the status
/// and the whole answer.
fn get(addr: &str, path: &str, header: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: pc\r\nX-Fleet-Signature: {header}\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    let code = answer.split(' ').nth(1).and_then(|c| c.parse().ok());
    (code.unwrap_or(0), answer)
}
