//! Configuration precedence: flag, then FLEET_DISPATCH_* variable, then
//! config file, then default, for the root, machine, fleet list and poll
//! interval; `config` shows the result and where each setting came from,
//! creating nothing.

use assert_cmd::Command;
use serde_json::Value;

use crate::util::*;

/// A command with only the config file as configuration (no FLEET_DISPATCH_*).
fn bare(w: &World) -> Command {
    let mut c = assert_cmd::cargo::cargo_bin_cmd!("fleet-dispatch");
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &w.home)
        .env("USERPROFILE", &w.home) // the home on Windows
        .env("XDG_CONFIG_HOME", w.home.join("cfg"))
        .env("APPDATA", w.home.join("cfg")); // the same folder on Windows
    c
}

fn write_config(w: &World, body: &str) -> std::path::PathBuf {
    let dir = w.home.join("cfg").join("fleet-dispatch");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("config.toml");
    std::fs::write(&p, body).unwrap();
    p
}

fn base_config(w: &World, extra: &str) -> String {
    format!(
        "root = {:?}\nkey_file = {:?}\nstate_dir = {:?}\nmachine = \"PC\"\n{extra}",
        w.root.display().to_string(),
        w.key.display().to_string(),
        w.state.display().to_string()
    )
}

fn heartbeat_poll_ms(w: &World) -> u64 {
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(w.pc().join("listener.json")).unwrap())
            .unwrap();
    v["pollIntervalMs"].as_u64().unwrap()
}

#[test]
fn the_config_file_alone_is_enough() {
    let w = World::new();
    write_config(
        &w,
        &base_config(&w, "fleet = [\"LAPTOP\"]\npoll_interval = \"300ms\"\n"),
    );
    let (code, out, err) = output(bare(&w).args(["enqueue", "--target", "laptop", "--", "true"]));
    assert_eq!(code, 0, "fleet list from the file: {out}{err}");
    assert!(
        w.root
            .join("LAPTOP")
            .join("inbox")
            .join(format!("{}.json", out.trim()))
            .exists()
    );
    let (code, _, err) = output(bare(&w).args(["listen", "--once"]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(heartbeat_poll_ms(&w), 300, "poll interval from the file");
    assert!(w.pc().is_dir(), "machine name from the file");
}

#[test]
fn a_variable_wins_over_the_file_and_a_flag_over_the_variable() {
    let w = World::new();
    let elsewhere = w.dir.path().join("other-root");
    std::fs::create_dir_all(&elsewhere).unwrap();
    write_config(&w, &base_config(&w, "poll_interval = \"300ms\"\n"));
    // Variable beats file.
    let (code, _, err) = output(
        bare(&w)
            .env("FLEET_DISPATCH_POLL_INTERVAL", "400ms")
            .args(["listen", "--once"]),
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(heartbeat_poll_ms(&w), 400);
    // Flag beats variable.
    let (code, _, err) = output(bare(&w).env("FLEET_DISPATCH_POLL_INTERVAL", "400ms").args([
        "listen",
        "--once",
        "--poll-interval",
        "500ms",
    ]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(heartbeat_poll_ms(&w), 500);
    // Root: variable beats file, flag beats variable.
    let (code, _, err) = output(
        bare(&w)
            .env("FLEET_DISPATCH_ROOT", &elsewhere)
            .args(["listen", "--once"]),
    );
    assert_eq!(code, 0, "{err}");
    assert!(elsewhere.join("PC").is_dir());
    let third = w.dir.path().join("third-root");
    std::fs::create_dir_all(&third).unwrap();
    let (code, _, err) = output(bare(&w).env("FLEET_DISPATCH_ROOT", &elsewhere).args([
        "--root",
        third.to_str().unwrap(),
        "listen",
        "--once",
    ]));
    assert_eq!(code, 0, "{err}");
    assert!(third.join("PC").is_dir());
    // Machine: variable beats file.
    let (code, _, err) = output(
        bare(&w)
            .env("FLEET_DISPATCH_MACHINE", "BOX")
            .args(["listen", "--once"]),
    );
    assert_eq!(code, 0, "{err}");
    assert!(w.root.join("BOX").is_dir());
}

#[test]
fn defaults_apply_without_any_configuration() {
    let w = World::new();
    write_config(&w, &base_config(&w, ""));
    let (code, _, err) = output(bare(&w).args(["listen", "--once"]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(heartbeat_poll_ms(&w), 2000, "the default poll interval");
}

#[test]
fn a_bad_config_file_is_config_naming_the_file() {
    let w = World::new();
    let p = write_config(&w, "rooot = \"/x\"\n");
    let (code, _, err) = output(bare(&w).args(["status"]));
    assert_eq!(code, 78, "{err}");
    assert!(err.contains(&p.display().to_string()), "{err}");
    write_config(&w, &base_config(&w, "poll_interval = \"soon\"\n"));
    let (code, _, err) = output(bare(&w).args(["status"]));
    assert_eq!(code, 78, "{err}");
    let missing = w.dir.path().join("nope.toml");
    let (code, _, err) = output(
        bare(&w)
            .env("FLEET_DISPATCH_CONFIG", &missing)
            .args(["status"]),
    );
    assert_eq!(code, 78, "an explicitly named file must exist: {err}");
    assert!(err.contains("nope.toml"), "{err}");
}

#[test]
fn fleet_dispatch_config_names_another_file() {
    let w = World::new();
    let p = w.dir.path().join("custom.toml");
    std::fs::write(&p, base_config(&w, "")).unwrap();
    let (code, _, err) = output(
        bare(&w)
            .env("FLEET_DISPATCH_CONFIG", &p)
            .args(["listen", "--once"]),
    );
    assert_eq!(code, 0, "{err}");
    assert!(w.pc().is_dir());
}

/// Every file and folder under `dir`, for "created nothing".
fn tree(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out: Vec<_> = walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .collect();
    out.sort();
    out
}

fn config_json(c: &mut Command) -> Value {
    let (code, out, err) = output(c.args(["config", "--json"]));
    assert_eq!(code, 0, "{out}{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[test]
fn config_says_where_each_setting_came_from() {
    let w = World::new();
    let file = write_config(
        &w,
        &format!(
            "root = {:?}\nmachine = \"PC\"\nfleet = [\"PC\", \"LAPTOP\"]\nkey_file = \"/from/the/file\"\n",
            w.root.display().to_string()
        ),
    );
    let v = config_json(
        bare(&w)
            .env("FLEET_DISPATCH_KEY_FILE", &w.key)
            .env("FLEET_DISPATCH_POLL_INTERVAL", "750ms")
            .args(["--state-dir", w.state.to_str().unwrap()]),
    );
    let is = |k: &str, value: Value, source: &str| {
        assert_eq!(v[k]["value"], value, "{k}: {v}");
        assert_eq!(v[k]["source"], source, "{k}: {v}");
    };
    is("root", w.root.display().to_string().into(), "file");
    is("keyFile", w.key.display().to_string().into(), "variable");
    is("stateDir", w.state.display().to_string().into(), "flag");
    is("machine", "PC".into(), "file");
    is("durability", "full".into(), "default");
    is("pollInterval", "750ms".into(), "variable");
    is("fleet", serde_json::json!(["PC", "LAPTOP"]), "file");
    is("configFile", file.display().to_string().into(), "default");
    assert_eq!(v["configFile"]["note"], Value::Null, "the file was read");
    assert_eq!(v["keyFile"]["note"], Value::Null, "the key is there");
    // A flag wins over its variable, and says so.
    let v = config_json(
        bare(&w)
            .env("FLEET_DISPATCH_DURABILITY", "relaxed")
            .env("FLEET_DISPATCH_MACHINE", "BOX")
            .args(["--durability", "full"]),
    );
    assert_eq!(v["durability"]["value"], "full");
    assert_eq!(v["durability"]["source"], "flag");
    assert_eq!(v["machine"]["value"], "BOX");
    assert_eq!(v["machine"]["source"], "variable");
    // The human form names each setting, its value and its source.
    let (code, out, err) = output(bare(&w).arg("config"));
    assert_eq!(code, 0, "{err}");
    for (label, source) in [
        ("root", "(file)"),
        ("key file", "(file)"),
        ("machine", "(file)"),
        ("state dir", "(default)"),
        ("durability", "(default)"),
        ("poll interval", "(default)"),
        ("fleet", "(file)"),
        ("config file", "(default)"),
    ] {
        let line = out
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no {label} line:\n{out}"));
        assert!(line.contains(source), "{line}");
    }
    assert!(out.contains("PC, LAPTOP"), "{out}");
}

#[test]
fn config_creates_nothing_and_does_not_need_the_key() {
    let w = World::new();
    let nowhere = w.dir.path().join("no-root");
    let before = tree(w.dir.path());
    let (code, out, err) = output(
        bare(&w)
            .env("FLEET_DISPATCH_ROOT", &nowhere)
            .env("FLEET_DISPATCH_MACHINE", "PC")
            .arg("config"),
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(tree(w.dir.path()), before, "config created something");
    let key_line = out.lines().find(|l| l.starts_with("key file")).unwrap();
    assert!(key_line.contains("missing"), "{key_line}");
    assert!(key_line.contains("keygen"), "{key_line}");
    let root_line = out.lines().find(|l| l.starts_with("root")).unwrap();
    assert!(root_line.contains("does not exist"), "{root_line}");
    assert!(root_line.contains("(variable)"), "{root_line}");
    let file_line = out.lines().find(|l| l.starts_with("config file")).unwrap();
    assert!(file_line.contains("not present"), "{file_line}");
    let v = config_json(bare(&w).env("FLEET_DISPATCH_ROOT", &nowhere));
    assert!(
        v["keyFile"]["note"].as_str().unwrap().contains("missing"),
        "{v}"
    );
    assert_eq!(
        tree(w.dir.path()),
        before,
        "config --json created something"
    );
}

#[test]
fn config_names_the_file_fleet_dispatch_config_chose() {
    let w = World::new();
    let p = w.dir.path().join("custom.toml");
    std::fs::write(&p, "durability = \"relaxed\"\n").unwrap();
    let v = config_json(bare(&w).env("FLEET_DISPATCH_CONFIG", &p));
    assert_eq!(v["configFile"]["value"], p.display().to_string());
    assert_eq!(v["configFile"]["source"], "variable");
    assert_eq!(v["durability"]["value"], "relaxed");
    assert_eq!(v["durability"]["source"], "file");
}

#[test]
fn config_shows_every_setting_the_file_can_hold() {
    let w = World::new();
    let v = config_json(&mut bare(&w));
    for key in config_file_keys() {
        // The file's snake_case key is the JSON's camelCase one.
        let mut camel = String::new();
        let mut upper = false;
        for c in key.chars() {
            match c {
                '_' => upper = true,
                c if upper => {
                    camel.push(c.to_ascii_uppercase());
                    upper = false;
                }
                c => camel.push(c),
            }
        }
        assert!(
            v[&camel]["source"].is_string(),
            "config does not show {key} (as {camel}): {v}"
        );
    }
    assert_eq!(v["watch"]["value"], true, "{v}");
    assert_eq!(v["watch"]["source"], "default", "{v}");
    write_config(&w, "watch = false\n");
    let v = config_json(&mut bare(&w));
    assert_eq!(v["watch"]["value"], false, "{v}");
    assert_eq!(v["watch"]["source"], "file", "{v}");
    let (code, out, err) = output(bare(&w).arg("config"));
    assert_eq!(code, 0, "{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("watch"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains("false") && line.contains("(file)"), "{line}");
}

/// A `CONFIG` refusal (78) of a value in the config file at `file`: it names
/// the file and `what` (the key, or the line), and no flag the user never gave.
fn refused_naming_the_file(code: i32, err: &str, file: &std::path::Path, what: &str) {
    assert_eq!(code, 78, "{err}");
    assert!(err.contains("CONFIG"), "{err}");
    assert!(err.contains(&file.display().to_string()), "{err}");
    assert!(err.contains(what), "{what}: {err}");
    assert!(
        !err.contains("VALIDATION_ERROR") && !err.contains("--"),
        "{err}"
    );
}

/// Regression: `poll_interval = "0s"` was refused as
/// `VALIDATION_ERROR: --poll-interval must be more than 0`, naming a flag
/// the user never gave.
#[test]
fn a_zero_poll_interval_in_the_file_is_config_naming_the_file_and_key() {
    let w = World::new();
    let p = write_config(&w, &base_config(&w, "poll_interval = \"0s\"\n"));
    let (code, _, err) = output(bare(&w).args(["listen", "--once"]));
    refused_naming_the_file(code, &err, &p, "poll_interval: ");
    // The same rule on the flag names the flag.
    write_config(&w, &base_config(&w, ""));
    let (code, _, err) = output(bare(&w).args(["listen", "--once", "--poll-interval", "0"]));
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("--poll-interval"), "{err}");
}

/// Regression: `machine = "CON"` was a `VALIDATION_ERROR` naming no file.
#[test]
fn a_bad_machine_name_in_the_file_is_config_naming_the_file_and_key() {
    let w = World::new();
    let p = write_config(
        &w,
        &base_config(&w, "").replace("machine = \"PC\"", "machine = \"CON\""),
    );
    for args in [&["listen", "--once"][..], &["status"], &["config"]] {
        let (code, _, err) = output(bare(&w).args(args));
        refused_naming_the_file(code, &err, &p, "machine: ");
        assert!(err.contains("reserved Windows device name"), "{err}");
    }
    // On the command line it stays a VALIDATION_ERROR.
    write_config(&w, &base_config(&w, ""));
    let (code, _, err) = output(bare(&w).args(["--machine", "CON", "listen", "--once"]));
    assert_eq!(code, 64, "{err}");
}

/// Regression: `slots = 0` and a retention under its floor were refused as
/// `CONFIG: slots (config file): …`, without the file's path.
#[test]
fn slots_and_retention_refused_in_the_file_name_its_path() {
    let w = World::new();
    let p = write_config(&w, &base_config(&w, "slots = 0\n"));
    let (code, _, err) = output(bare(&w).args(["listen", "--once"]));
    refused_naming_the_file(code, &err, &p, "slots: ");
    let p = write_config(&w, &base_config(&w, "retention = \"1d\"\n"));
    let (code, _, err) = output(bare(&w).arg("sweep"));
    refused_naming_the_file(code, &err, &p, "retention: ");
    assert!(err.contains("8d"), "the floor: {err}");
}

/// Regression: a TOML syntax error said `invalid basic string, expected
/// '"'` with no line, though the parser was chosen for naming it.
#[test]
fn a_toml_syntax_error_names_the_file_line_and_column() {
    let w = World::new();
    let p = write_config(&w, &base_config(&w, "durability = \"relaxed\nslots = 2\n"));
    let (code, _, err) = output(bare(&w).arg("status"));
    // base_config writes four lines; the broken string is on the fifth.
    refused_naming_the_file(code, &err, &p, "line 5, column 22");
    assert!(err.contains("invalid basic string"), "{err}");
}

/// A job max age of 0 would refuse every job as stale: refused on the
/// flag (of `listen` and of `sweep`) and in the file alike.
#[test]
fn a_zero_max_job_age_is_refused_as_flag_and_in_the_file() {
    let w = World::new();
    write_config(&w, &base_config(&w, ""));
    for args in [
        &["listen", "--once", "--max-job-age", "0"][..],
        &["sweep", "--max-job-age", "0s"],
    ] {
        let (code, _, err) = output(bare(&w).args(args));
        assert_eq!(code, 64, "{args:?}: {err}");
        assert!(
            err.contains("--max-job-age") && err.contains("stale"),
            "{err}"
        );
    }
    let p = write_config(&w, &base_config(&w, "max_job_age = \"0s\"\n"));
    for args in [&["listen", "--once"][..], &["sweep"]] {
        let (code, _, err) = output(bare(&w).args(args));
        refused_naming_the_file(code, &err, &p, "max_job_age: ");
    }
    assert!(!w.pc().exists(), "a refused listener created its folder");
}

/// The configuration promise (README, Configuration), key by key: every key the file accepts, given a bad
/// value, is a `CONFIG` error naming the file and the key (or, for a value
/// of the wrong type, its line), whichever command reads it; never a
/// `VALIDATION_ERROR` naming a flag.
#[test]
fn every_key_s_bad_value_is_config_naming_the_file() {
    let w = World::new();
    let inside = w.root.join("state").display().to_string();
    let nowhere = w.dir.path().join("no-root").display().to_string();
    // (key, the line that replaces or adds it, what the refusal names)
    let cases = [
        ("root", format!("root = {nowhere:?}"), "root in config file"),
        ("key_file", "key_file = 5".into(), "line 4, column 12"),
        (
            "identity_file",
            "identity_file = 5".into(),
            "line 5, column 17",
        ),
        (
            "state_dir",
            format!("state_dir = {inside:?}"),
            "state_dir in config file",
        ),
        ("machine", "machine = \"a b\"".into(), "machine: "),
        ("fleet", "fleet = [\"LAPTOP\", \"CON\"]".into(), "fleet: "),
        (
            "poll_interval",
            "poll_interval = \"0ms\"".into(),
            "poll_interval: ",
        ),
        ("watch", "watch = \"no\"".into(), "line 5, column 9"),
        ("stop_grace", "stop_grace = \"soon\"".into(), "stop_grace: "),
        ("slots", "slots = 65".into(), "slots: "),
        (
            "durability",
            "durability = \"fast\"".into(),
            "line 5, column 14",
        ),
        ("auth", "auth = \"hmac\"".into(), "line 5, column 8"),
        ("retention", "retention = \"3d\"".into(), "retention: "),
        ("max_job_age", "max_job_age = \"0\"".into(), "max_job_age: "),
        (
            "s3_endpoint",
            "s3_endpoint = \"ftp://store\"".into(),
            "s3_endpoint: ",
        ),
        ("s3_region", "s3_region = \" \"".into(), "s3_region: "),
        (
            "s3_path_style",
            "s3_path_style = \"yes\"".into(),
            "line 5, column 17",
        ),
        (
            "s3_allow_http",
            "s3_allow_http = 1".into(),
            "line 5, column 17",
        ),
    ];
    let mut keys = config_file_keys();
    let mut covered: Vec<String> = cases.iter().map(|(k, _, _)| k.to_string()).collect();
    keys.sort();
    covered.sort();
    assert_eq!(
        keys, covered,
        "a key the file accepts has no bad value here"
    );
    for (key, line, names) in &cases {
        // The base lines but the key's own, then the bad line.
        let mut body: String = base_config(&w, "")
            .lines()
            .filter(|l| !l.starts_with(&format!("{key} =")))
            .map(|l| format!("{l}\n"))
            .collect();
        body.push_str(&format!("{line}\n"));
        let p = write_config(&w, &body);
        // `sweep` reads every setting but the poll interval, slots and
        // stop grace, which only `listen` reads.
        let (code, _, err) = output(bare(&w).args(["listen", "--once"]));
        let (code, err) = if code == 0 {
            let (c, _, e) = output(bare(&w).arg("sweep"));
            (c, e)
        } else {
            (code, err)
        };
        refused_naming_the_file(code, &err, &p, names);
    }
}

#[test]
fn an_empty_variable_counts_as_unset() {
    let w = World::with_target();
    // `export FLEET_DISPATCH_RETENTION=$UNSET`: the default applies.
    let (code, out, err) = output(
        w.cmd()
            .env("FLEET_DISPATCH_RETENTION", "")
            .args(["sweep", "--all"]),
    );
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = output(w.cmd().env("FLEET_DISPATCH_SLOTS", "").args(["config"]));
    assert_eq!(code, 0, "{out}{err}");
    let slots = out.lines().find(|l| l.trim_start().starts_with("slots"));
    assert!(slots.is_some_and(|l| l.ends_with("(default)")), "{out}");
    // An empty root is no root, said as such, not as a flag nobody typed.
    let (code, out, err) = output(w.cmd().env("FLEET_DISPATCH_ROOT", "").args(["status"]));
    assert_eq!(code, 78, "{out}{err}");
    assert!(err.contains("CONFIG: no dispatch root"), "{err}");
}

/// A config file refused before the command did anything: `CONFIG`,
/// naming the file and what it is, and no target folder made.
fn refused_before_anything(w: &World, got: &(i32, String, String), file: &str, what: &str) {
    let (code, out, err) = got;
    assert_eq!(*code, 78, "{out}{err}");
    assert!(err.starts_with("fleet-dispatch: error: CONFIG: "), "{err}");
    assert!(err.contains(&format!("config file {file} {what}")), "{err}");
    assert!(!w.pc().exists(), "the listener started: {err}");
    assert!(!w.state.exists(), "state written: {err}");
}

/// Regression: a config file that is a FIFO blocked every command forever,
/// named by `FLEET_DISPATCH_CONFIG` or at the default place.
#[test]
#[cfg(unix)] // FIFOs exist on Unix only
fn a_config_file_that_is_a_fifo_is_config_at_once() {
    let w = World::new();
    let named = w.dir.path().join("fifo.toml");
    make_fifo(&named);
    let got = output_within(
        w.cmd()
            .env("FLEET_DISPATCH_CONFIG", &named)
            .args(["listen", "--once"]),
        std::time::Duration::from_secs(10),
    );
    refused_before_anything(&w, &got, named.to_str().unwrap(), "is a FIFO");
    let default = write_config(&w, "");
    std::fs::remove_file(&default).unwrap();
    make_fifo(&default);
    let got = output_within(
        bare(&w).args(["listen", "--once"]),
        std::time::Duration::from_secs(10),
    );
    refused_before_anything(&w, &got, default.to_str().unwrap(), "is a FIFO");
}

/// Regression: `FLEET_DISPATCH_CONFIG=/dev/zero` read without end.
#[test]
#[cfg(unix)] // /dev/zero
fn a_config_file_that_is_dev_zero_is_config_at_once() {
    let w = World::new();
    let got = output_within(
        w.cmd()
            .env("FLEET_DISPATCH_CONFIG", "/dev/zero")
            .args(["listen", "--once"]),
        std::time::Duration::from_secs(10),
    );
    refused_before_anything(&w, &got, "/dev/zero", "is a character device");
}

/// A config file over 1 MiB is refused before it is read whole.
#[test]
fn a_config_file_over_1_mib_is_config() {
    let w = World::new();
    let p = w.dir.path().join("big.toml");
    let body = base_config(&w, "");
    let padding = "#".repeat((1 << 20) + 1 - body.len());
    std::fs::write(&p, format!("{body}{padding}")).unwrap();
    let got = output(
        w.cmd()
            .env("FLEET_DISPATCH_CONFIG", &p)
            .args(["listen", "--once"]),
    );
    refused_before_anything(
        &w,
        &got,
        p.to_str().unwrap(),
        "holds more than 1048576 bytes",
    );
    std::fs::write(&p, format!("{body}{}", &padding[1..])).unwrap();
    let (code, out, err) = output(
        w.cmd()
            .env("FLEET_DISPATCH_CONFIG", &p)
            .args(["listen", "--once"]),
    );
    assert_eq!(code, 0, "1 MiB is still read: {out}{err}");
}

#[test]
fn config_shows_a_value_a_command_would_refuse_with_why_and_exits_as_it_would() {
    let w = World::new();
    write_config(&w, &base_config(&w, "retention = \"2d\"\n"));
    let (code, out, err) = output(bare(&w).env("FLEET_DISPATCH_SLOTS", "0").args(["config"]));
    assert_eq!(code, 64, "{out}{err}");
    let slots = out
        .lines()
        .find(|l| l.starts_with("slots"))
        .unwrap_or_default();
    assert!(slots.contains("refused: FLEET_DISPATCH_SLOTS"), "{out}");
    let retention = out
        .lines()
        .find(|l| l.starts_with("retention"))
        .unwrap_or_default();
    assert!(retention.contains("refused: config file"), "{out}");
    // The file's refusal alone: CONFIG, as `sweep` would give.
    let (code, out, err) = output(bare(&w).args(["--json", "config"]));
    assert_eq!(code, 78, "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert!(
        v["retention"]["note"]
            .as_str()
            .unwrap()
            .starts_with("refused:"),
        "{v}"
    );
    // Nothing refused: 0.
    write_config(&w, &base_config(&w, ""));
    let (code, out, err) = output(bare(&w).args(["config"]));
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn an_empty_path_in_the_config_file_is_config_naming_its_key() {
    let w = World::new();
    for key in ["root", "key_file", "state_dir"] {
        let body = base_config(&w, "").replace(&format!("{key} = "), &format!("#{key} = "));
        write_config(&w, &format!("{body}{key} = \"\"\n"));
        let (code, out, err) = output(bare(&w).args(["status"]));
        assert_eq!(code, 78, "{key}: {out}{err}");
        assert!(
            err.contains(&format!("{key}: an empty path")),
            "{key}: {err}"
        );
    }
}
