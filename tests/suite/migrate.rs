//! The migration guide (docs/identities.md, "Moving a fleet from the
//! shared key to the roster") followed step by step through the real
//! binary: three machines, each with its own home and state directory and
//! its own copy of the fleet key, go from `shared-key` through `both` to
//! `roster` while a long job runs on `PC` across the switches, and every
//! job sent at each step runs once and its result verifies at its origin.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::machines::*;
use crate::util::*;

const MACHINES: [&str; 3] = ["PC", "LAPTOP", "NAS"];

/// The fleet under migration: each machine's mode, and `PC`'s listener.
struct Fleet {
    w: World,
    mode: std::collections::HashMap<&'static str, &'static str>,
    log: PathBuf,
    /// Every job sent: (origin, target, id, word it appends).
    sent: Vec<(&'static str, &'static str, String, String)>,
}

impl Fleet {
    fn dir(&self, name: &str) -> PathBuf {
        self.w.dir.path().join(name)
    }

    fn key_file(&self, name: &str) -> PathBuf {
        self.dir(name).join("home").join("fleet.key")
    }

    /// `fleet-dispatch` as machine `name` in its current mode.
    fn bg(&self, name: &str) -> std::process::Command {
        let mut c = self.w.bg_cmd_as(name);
        let home = self.dir(name).join("home");
        c.env("HOME", &home)
            .env("USERPROFILE", &home)
            .env("FLEET_DISPATCH_STATE_DIR", self.dir(name).join("state"))
            .env("FLEET_DISPATCH_KEY_FILE", self.key_file(name))
            .env("FLEET_DISPATCH_AUTH", self.mode[name]);
        c
    }

    fn run(&self, name: &str, args: &[&str]) -> (i32, String, String) {
        output(assert_cmd::Command::from_std(self.bg(name)).args(args))
    }

    fn ok(&self, name: &str, args: &[&str]) -> String {
        let (code, out, err) = self.run(name, args);
        assert_eq!(
            code, 0,
            "{args:?} as {name} ({}): {out}{err}",
            self.mode[name]
        );
        out
    }

    /// `PC`'s listener, held, in PC's current mode.
    fn start_pc(&self) -> ListenerGuard {
        let beat = self.w.pc().join("listener.json");
        let _ = std::fs::remove_file(&beat);
        // Two slots: the ring's job to PC runs beside the long one.
        let l = ListenerGuard::spawn(self.bg("PC").args([
            "listen",
            "--poll-interval",
            "100ms",
            "--slots",
            "2",
        ]));
        wait_until(Duration::from_secs(15), || beat.exists());
        l
    }

    /// The guide's restart: `listen --drain` (the running job, if any,
    /// finishes first), then a start in the machine's new mode.
    fn restart_pc(&mut self, l: ListenerGuard, mode: &'static str) -> ListenerGuard {
        let out = self.ok("PC", &["listen", "--drain"]);
        assert!(out.contains("drained and stopped"), "{out}");
        let (_, _, err) = l.wait(Duration::from_secs(30));
        assert!(!err.contains("refus"), "{err}");
        self.mode.insert("PC", mode);
        self.start_pc()
    }

    /// `from` sends `to` a job appending a word of its own to the log.
    fn send(&mut self, from: &'static str, to: &'static str, step: &str) -> String {
        let word = format!("{step}-{from}-{to}");
        let mut args = vec!["enqueue", "--target", to, "--"];
        let argv = kit(&["append", p(&self.log), &word]);
        args.extend(argv.iter().map(String::as_str));
        let id = self
            .ok(from, &args)
            .trim()
            .lines()
            .last()
            .unwrap()
            .to_string();
        self.sent.push((from, to, id.clone(), word));
        id
    }

    /// One job around the ring, run by every machine (LAPTOP and NAS with
    /// `listen --once`, PC by its held listener), each result verified at
    /// its origin with `result`, signed as `alg` says (`None`: the fleet key).
    fn ring(&mut self, step: &str, alg: Option<&str>) {
        let ids = [
            ("PC", self.send("PC", "LAPTOP", step)),
            ("LAPTOP", self.send("LAPTOP", "NAS", step)),
            ("NAS", self.send("NAS", "PC", step)),
        ];
        for m in ["LAPTOP", "NAS"] {
            self.ok(m, &["listen", "--once", "--poll-interval", "100ms"]);
        }
        let pc = self
            .w
            .root
            .join("PC")
            .join("results")
            .join(format!("{}.json", ids[2].1));
        wait_until(Duration::from_secs(20), || pc.exists());
        for ((from, id), to) in ids.iter().zip(["LAPTOP", "NAS", "PC"]) {
            self.verified(from, to, id, alg);
        }
    }

    /// `id`'s result, read at its origin `from` in its mode: it verifies,
    /// the job succeeded, and it is signed as `alg` says.
    fn verified(&self, from: &str, to: &str, id: &str, alg: Option<&str>) {
        let (code, out, err) =
            self.run(from, &["--json", "result", "--target", to, "--job-id", id]);
        assert_eq!(
            code, 0,
            "{from} ({}) reads {to}'s {id}: {out}{err}",
            self.mode[from]
        );
        let doc: Value = serde_json::from_str(
            &std::fs::read_to_string(
                self.w
                    .root
                    .join(to)
                    .join("results")
                    .join(format!("{id}.json")),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(doc["alg"].as_str(), alg, "{doc}");
    }

    /// Every machine's mode becomes `mode` (PC's listener restarted).
    fn all_to(&mut self, l: ListenerGuard, mode: &'static str) -> ListenerGuard {
        for m in ["LAPTOP", "NAS"] {
            self.mode.insert(m, mode);
        }
        self.restart_pc(l, mode)
    }
}

/// Lets the long job end however the test ends, so no listener is left
/// waiting on it.
struct Release(PathBuf);

impl Drop for Release {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.0, "");
    }
}

fn is_fleet_key(p: &Path) -> bool {
    std::fs::read(p).is_ok_and(|b| b.starts_with(VECTOR_KEY.trim().as_bytes()))
}

#[test]
fn a_fleet_moves_from_the_shared_key_to_the_roster_without_refusing_a_job() {
    let w = World::new();
    let log = w.dir.path().join("ran.log");
    let mut f = Fleet {
        w,
        mode: MACHINES.iter().map(|m| (*m, "shared-key")).collect(),
        log,
        sent: Vec::new(),
    };
    for m in MACHINES {
        f.w.make_target(m);
        std::fs::create_dir_all(f.dir(m).join("home")).unwrap();
        write_private(&f.key_file(m), VECTOR_KEY);
    }
    // Step 0: the fleet on the shared key.
    let mut pc = f.start_pc();
    f.ring("0-shared", None);

    // Step 1: the admin (PC) makes the roster, every machine pins its key.
    let admin = last_line(&f.ok("PC", &["roster", "init"]));
    for m in ["LAPTOP", "NAS"] {
        f.ok(m, &["roster", "pin", &admin]);
    }
    f.ring("1-pinned", None);

    // Step 2: every machine to `both`; PC's listener restarted between jobs.
    pc = f.all_to(pc, "both");
    f.ring("2-both", None);
    // The long job: sent now, it runs on PC across the next switches.
    let go = f.w.dir.path().join("go");
    let _release = Release(go.clone());
    let long = {
        let argv = kit(&["append", p(&f.log), "long", "wait-for", p(&go)]);
        let mut args = vec!["enqueue", "--target", "PC", "--"];
        args.extend(argv.iter().map(String::as_str));
        last_line(&f.ok("LAPTOP", &args))
    };
    wait_until(Duration::from_secs(15), || f.w.running(&long).exists());

    // Step 3: identities; a `both` machine signs with its identity once the
    // roster lists it, PC's running listener included.
    for m in MACHINES {
        let line = last_line(&f.ok(m, &["identity", "init"]));
        f.ok("PC", &["roster", "add", m, "--identity", &line]);
    }
    for m in MACHINES {
        f.ok(m, &["roster", "verify"]);
    }
    f.ring("3-identities", Some("ed25519"));

    // Step 4: each machine to `roster`; LAPTOP and NAS first, while the
    // long job still runs; then PC, whose drain lets it finish.
    for m in ["LAPTOP", "NAS"] {
        f.mode.insert(m, "roster");
    }
    f.ring("4-two-on-roster", Some("ed25519"));
    assert!(f.w.running(&long).exists(), "the long job still runs");
    assert!(!f.w.result_path(&long).exists());
    std::fs::write(&go, "").unwrap();
    pc = f.restart_pc(pc, "roster");
    f.verified("LAPTOP", "PC", &long, Some("ed25519"));
    f.ring("4-roster", Some("ed25519"));

    // Step 5: the fleet key retired on every machine.
    for m in MACHINES {
        std::fs::remove_file(f.key_file(m)).unwrap();
    }
    f.ring("5-retired", Some("ed25519"));
    // A fleet key document is refused now, by name.
    let hmac = "20261129-193000-9f2c4e1ab37d5c08";
    f.w.write_job(
        "PC",
        hmac,
        "PC",
        &now_text(),
        &json!({"argv": kit(&["append", p(&f.log), "hmac"])}),
    );
    wait_until(Duration::from_secs(15), || {
        f.w.rejected(&format!("{hmac}.json.reason.json")).exists()
    });
    assert_eq!(
        f.w.reason(&format!("{hmac}.json"))["verdict"],
        "alg-not-allowed"
    );
    f.ok("PC", &["listen", "--drain"]);
    let _ = pc.wait(Duration::from_secs(15));

    // Every job ran exactly once; no fleet key file is left on any machine.
    let ran = lines(&f.log);
    for (from, to, id, word) in &f.sent {
        let n = ran.iter().filter(|l| *l == word).count();
        assert_eq!(n, 1, "{from}'s job {id} on {to} ran {n} times: {ran:?}");
    }
    assert_eq!(ran.iter().filter(|l| *l == "long").count(), 1, "{ran:?}");
    assert!(!ran.iter().any(|l| l == "hmac"), "{ran:?}");
    std::fs::remove_file(&f.w.key).unwrap();
    let keys: Vec<_> = all_files(f.w.dir.path())
        .into_iter()
        .filter(|p| is_fleet_key(p))
        .collect();
    assert!(keys.is_empty(), "fleet key files left: {keys:?}");
}
