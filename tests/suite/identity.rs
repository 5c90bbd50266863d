//! Machine identities and the roster (docs/identities.md): `identity init`
//! and `show`, and the roster's commands through the real binary. Each
//! machine of a test has its own home (identity, admin key) and state
//! directory (pin, versions seen) beside one shared root, and a fleet key
//! setting that names no file: no roster command needs one.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::util::machines::*;
use crate::util::*;

/// `fleet-dispatch` as machine `name` of world `w`, with its own home and
/// state and no fleet key file.
fn on(w: &World, name: &str) -> assert_cmd::Command {
    let mut c = w.cmd_as(name);
    c.env("HOME", home(w, name))
        .env("USERPROFILE", home(w, name))
        .env(
            "FLEET_DISPATCH_STATE_DIR",
            w.dir.path().join(name).join("state"),
        )
        .env("FLEET_DISPATCH_KEY_FILE", w.dir.path().join("no-such.key"));
    c
}

fn home(w: &World, name: &str) -> PathBuf {
    w.dir.path().join(name).join("home")
}

fn identity_file(w: &World, name: &str) -> PathBuf {
    home(w, name)
        .join(".claude")
        .join("fleet-dispatch.identity")
}

/// Runs `args` as `name`; (status, stdout, stderr).
fn run(w: &World, name: &str, args: &[&str]) -> (i32, String, String) {
    output(on(w, name).args(args))
}

/// Runs `args` as `name`, which must succeed; its stdout.
fn ok(w: &World, name: &str, args: &[&str]) -> String {
    let (code, out, err) = run(w, name, args);
    assert_eq!(code, 0, "{args:?} as {name}: {out}{err}");
    out
}

/// `identity init` as `name`: its identity line.
fn init(w: &World, name: &str) -> String {
    last_line(&ok(w, name, &["identity", "init"]))
}

/// `roster show --json` as `name`.
fn roster(w: &World, name: &str) -> Value {
    serde_json::from_str(&ok(w, name, &["--json", "roster", "show"])).unwrap()
}

/// An admin `PC` with a roster listing itself; the admin public key.
fn admin_world(w: &World, extra: &[&str]) -> String {
    let line = init(w, "PC");
    let mut args = vec!["roster", "init"];
    args.extend_from_slice(extra);
    let key = last_line(&ok(w, "PC", &args));
    ok(w, "PC", &["roster", "add", "PC", "--identity", &line]);
    key
}

/// `roster verify` as `name`: (status, output).
fn verify(w: &World, name: &str) -> (i32, String) {
    let (code, out, err) = run(w, name, &["roster", "verify"]);
    (code, format!("{out}{err}"))
}

#[test]
fn identity_init_writes_a_private_file_and_prints_the_line_last() {
    let w = World::new();
    let line = init(&w, "PC");
    let words: Vec<&str> = line.split(' ').collect();
    assert_eq!(words.len(), 3, "{line}");
    assert_eq!(words[0], "PC");
    assert!(
        words[1].starts_with("ed25519:") && words[1].len() == 8 + 64,
        "{line}"
    );
    assert!(
        words[2].starts_with("x25519:") && words[2].len() == 7 + 64,
        "{line}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(identity_file(&w, "PC"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let shown: Value =
        serde_json::from_str(&ok(&w, "PC", &["--json", "identity", "show"])).unwrap();
    assert_eq!(shown["line"], line.as_str());
    assert_eq!(shown["name"], "PC");
    assert_eq!(shown["ed25519"], words[1]);
    assert_eq!(shown["x25519"], words[2]);
    assert_eq!(shown["keyId"].as_str().unwrap().len(), 12, "{shown}");
    assert_eq!(last_line(&ok(&w, "PC", &["identity", "show"])), line);
}

#[test]
fn identity_init_refuses_to_replace_without_force() {
    let w = World::new();
    let line = init(&w, "PC");
    let before = std::fs::read(identity_file(&w, "PC")).unwrap();
    let (code, out, err) = run(&w, "PC", &["identity", "init"]);
    assert_eq!(code, 64, "{out}{err}");
    assert!(
        err.contains("already exists") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(std::fs::read(identity_file(&w, "PC")).unwrap(), before);
    let forced = last_line(&ok(&w, "PC", &["identity", "init", "--force"]));
    assert_ne!(forced, line);
    assert_eq!(last_line(&ok(&w, "PC", &["identity", "show"])), forced);
}

#[cfg(unix)]
#[test]
fn an_identity_file_others_may_read_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let w = World::new();
    init(&w, "PC");
    let path = identity_file(&w, "PC");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (code, out, err) = run(&w, "PC", &["identity", "show"]);
    assert_eq!(code, 78, "{out}{err}");
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(out.is_empty(), "{out}");
}

#[test]
fn the_identity_file_is_where_the_flag_the_variable_or_the_config_file_says() {
    let w = World::new();
    let by_var = w.dir.path().join("var.identity");
    let line = last_line(
        &output(
            on(&w, "PC")
                .env("FLEET_DISPATCH_IDENTITY_FILE", &by_var)
                .args(["identity", "init"]),
        )
        .1,
    );
    assert!(by_var.exists() && !identity_file(&w, "PC").exists());
    let by_flag = w.dir.path().join("flag.identity");
    ok(
        &w,
        "PC",
        &["--identity-file", p(&by_flag), "identity", "init"],
    );
    assert!(by_flag.exists());
    let config = w.dir.path().join("config.toml");
    std::fs::write(&config, format!("identity_file = {:?}\n", p(&by_var))).unwrap();
    let (code, out, err) = output(
        on(&w, "PC")
            .env("FLEET_DISPATCH_CONFIG", &config)
            .args(["identity", "show"]),
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(last_line(&out), line);
}

#[test]
fn three_machines_join_with_no_secret_travelling() {
    let w = World::new();
    let machines = ["PC", "LAPTOP", "BUILD"];
    let lines: Vec<String> = machines.iter().map(|m| init(&w, m)).collect();
    let admin = last_line(&ok(&w, "PC", &["roster", "init"]));
    assert!(admin.starts_with("ed25519:"), "{admin}");
    for (m, line) in machines.iter().zip(&lines) {
        ok(&w, "PC", &["roster", "add", m, "--identity", line]);
    }
    for m in &machines[1..] {
        ok(&w, m, &["roster", "pin", &admin]);
    }
    for m in machines {
        let (code, out) = verify(&w, m);
        assert_eq!(code, 0, "{m}: {out}");
        assert!(out.contains("valid: version 4"), "{out}");
        let r = roster(&w, m);
        let names: Vec<&str> = r["machines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, machines);
    }
    let shown: Value =
        serde_json::from_str(&ok(&w, "LAPTOP", &["--json", "identity", "show"])).unwrap();
    assert_eq!(
        roster(&w, "BUILD")["machines"][1]["keys"][0]["keyId"],
        shown["keyId"]
    );
    assert!(!w.dir.path().join("no-such.key").exists());
    // The root holds the roster and nothing secret.
    let files: Vec<PathBuf> = walk(&w.root);
    assert_eq!(files, [w.root.join("roster.json")]);
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(!text.contains("seed") && !text.contains("secret"), "{text}");
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn a_roster_edited_after_signing_is_refused() {
    let w = World::new();
    admin_world(&w, &[]);
    let path = w.root.join("roster.json");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace(
            "\"maySend\": [\n        \"*\"",
            "\"maySend\": [\n        \"X\"",
        ),
    )
    .unwrap();
    assert_ne!(std::fs::read_to_string(&path).unwrap(), text);
    let (code, out) = verify(&w, "PC");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("bad signature: version 2"), "{out}");
}

#[test]
fn a_rolled_back_roster_is_refused() {
    let w = World::new();
    let admin = admin_world(&w, &[]);
    ok(&w, "LAPTOP", &["roster", "pin", &admin]);
    let path = w.root.join("roster.json");
    let v2 = std::fs::read(&path).unwrap();
    ok(&w, "PC", &["roster", "renew"]);
    assert_eq!(verify(&w, "LAPTOP").0, 0);
    std::fs::write(&path, &v2).unwrap();
    let (code, out) = verify(&w, "LAPTOP");
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("rolled back: version 2 is lower than version 3"),
        "{out}"
    );
    // The admin will not edit it either.
    let (code, _, err) = run(&w, "PC", &["roster", "renew"]);
    assert_eq!(code, 78, "{err}");
    assert!(err.contains("rolled back"), "{err}");
}

#[test]
fn an_expired_roster_is_refused_until_renewed() {
    let w = World::new();
    admin_world(&w, &["--expires", "3s"]);
    assert_eq!(verify(&w, "PC").0, 0);
    std::thread::sleep(Duration::from_millis(3500));
    let (code, out) = verify(&w, "PC");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("expired: version 2 expired at"), "{out}");
    let (code, _, err) = run(&w, "PC", &["roster", "show"]);
    assert_eq!(code, 78, "{err}");
    ok(&w, "PC", &["roster", "renew"]);
    let (code, out) = verify(&w, "PC");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("version 3"), "{out}");
}

#[test]
fn a_roster_signed_by_another_admin_key_is_refused() {
    let w = World::new();
    admin_world(&w, &[]);
    // Another admin makes a roster of its own in another root and puts it here.
    let other_root = w.dir.path().join("other-root");
    std::fs::create_dir_all(&other_root).unwrap();
    let (code, out, err) = output(
        on(&w, "EVE")
            .env("FLEET_DISPATCH_ROOT", &other_root)
            .args(["roster", "init"]),
    );
    assert_eq!(code, 0, "{out}{err}");
    std::fs::copy(other_root.join("roster.json"), w.root.join("roster.json")).unwrap();
    let (code, out) = verify(&w, "PC");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("signed by another admin key"), "{out}");
    // Given as a file, the same verdict.
    let (code, out, _) = run(
        &w,
        "PC",
        &["roster", "verify", p(&other_root.join("roster.json"))],
    );
    assert_eq!(code, 1, "{out}");
}

#[test]
fn rotate_keeps_the_old_key_for_the_overlap_and_remove_takes_keys_away() {
    let w = World::new();
    admin_world(&w, &[]);
    let old: Value = serde_json::from_str(&ok(&w, "PC", &["--json", "identity", "show"])).unwrap();
    let new = last_line(&ok(&w, "PC", &["identity", "init", "--force"]));
    let before = now_text();
    ok(
        &w,
        "PC",
        &[
            "roster",
            "rotate",
            "PC",
            "--identity",
            &new,
            "--overlap",
            "1h",
        ],
    );
    let r = roster(&w, "PC");
    assert_eq!(r["version"], 3);
    let keys = r["machines"][0]["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 2, "{r}");
    assert_eq!(keys[0]["keyId"], old["keyId"]);
    let until = keys[0]["validUntil"].as_str().unwrap();
    assert!(
        until > ts_offset(3590).as_str() && until < ts_offset(3610).as_str(),
        "{until} vs {before}"
    );
    assert!(keys[1]["validUntil"].is_null(), "{r}");
    // The old key alone, then the machine.
    ok(
        &w,
        "PC",
        &[
            "roster",
            "remove",
            "PC",
            "--key",
            old["keyId"].as_str().unwrap(),
        ],
    );
    let r = roster(&w, "PC");
    assert_eq!(r["machines"][0]["keys"].as_array().unwrap().len(), 1, "{r}");
    ok(&w, "PC", &["roster", "remove", "PC"]);
    let r = roster(&w, "PC");
    assert_eq!(r["machines"], serde_json::json!([]));
    assert_eq!(r["version"], 5);
    let (code, _, err) = run(&w, "PC", &["roster", "remove", "PC"]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("PC is not on the roster"), "{err}");
}

#[test]
fn roster_add_refuses_a_line_for_another_name_or_a_malformed_one() {
    let w = World::new();
    admin_world(&w, &[]);
    let line = init(&w, "LAPTOP");
    let (code, _, err) = run(&w, "PC", &["roster", "add", "BUILD", "--identity", &line]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("names LAPTOP, not BUILD"), "{err}");
    let (code, _, err) = run(
        &w,
        "PC",
        &[
            "roster",
            "add",
            "LAPTOP",
            "--identity",
            &line[..line.len() - 2],
        ],
    );
    assert_eq!(code, 64, "{err}");
    assert_eq!(roster(&w, "PC")["version"], 2, "nothing was published");
}
