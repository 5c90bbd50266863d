//! `service install` / `service uninstall` and doctor's service check,
//! through the real binary with HOME (and LOCALAPPDATA) in a temp folder.
//! Each entry is read back the way its manager reads it: the systemd unit
//! as sections of keys (and by `systemd-analyze verify`, in a test ignored
//! where it is not installed), the launchd agent as a plist (and by
//! `plutil -lint` on macOS),
//! the Task Scheduler task as UTF-16 XML whose arguments split as Windows
//! splits them. The unit's and the task's command then run, `--once`, and
//! drain the inbox of the root they name: the entry works, not only parses.
//! The root's name holds what each format must escape.

use std::path::{Path, PathBuf};
use std::process::Command;

use roxmltree::{Document, ParsingOptions};
use serde_json::Value;

use crate::util::*;

/// A root name with what each format must quote: spaces, `%`, `$`, `&`,
/// `<`, quotes (not on Windows, whose file names cannot hold some).
fn hostile_name() -> &'static str {
    if cfg!(windows) {
        "shared 100% & co"
    } else {
        "shared 100% $HOME & <x> \"q\" 'a'"
    }
}

/// A world whose root has the hostile name (and its PC folder).
fn hostile_world() -> (World, PathBuf) {
    let w = World::with_target();
    let root = w.dir.path().join(hostile_name());
    std::fs::create_dir_all(&root).unwrap();
    (w, root)
}

fn service(w: &World, root: &Path, args: &[&str]) -> (i32, String, String) {
    let mut c = w.cmd();
    c.env("FLEET_DISPATCH_ROOT", root).arg("service").args(args);
    output(&mut c)
}

fn unit_path(w: &World) -> PathBuf {
    w.home.join(".config/systemd/user/fleet-dispatch.service")
}

/// A systemd unit's `(section, key, value)` lines, comments skipped.
#[cfg(unix)]
fn unit_keys(text: &str) -> Vec<(String, String, String)> {
    let mut section = String::new();
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(s) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = s.to_string();
            continue;
        }
        let (k, v) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("not key=value: {line}"));
        assert!(!section.is_empty(), "{line} before any section");
        out.push((section.clone(), k.to_string(), v.to_string()));
    }
    out
}

/// systemd's words of a value: double-quoted words with C escapes, `%%`
/// for `%` and, with `dollar`, `$$` for `$` (in `ExecStart=`).
#[cfg(unix)]
fn systemd_words(value: &str, dollar: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = value.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c == ' ' {
            chars.next();
            continue;
        }
        let mut word = String::new();
        let quoted = c == '"';
        if quoted {
            chars.next();
        }
        while let Some(c) = chars.next() {
            match c {
                '"' if quoted => break,
                ' ' if !quoted => break,
                '\\' => word.push(chars.next().unwrap()),
                '%' | '$' if c == '%' || dollar => {
                    assert_eq!(chars.next(), Some(c), "a lone {c} in {value}");
                    word.push(c);
                }
                c => word.push(c),
            }
        }
        out.push(word);
    }
    out
}

/// The variables and the command line a unit gives its process.
#[cfg(unix)]
fn unit_command(text: &str) -> (Vec<(String, String)>, Vec<String>) {
    let keys = unit_keys(text);
    let env = keys
        .iter()
        .filter(|(s, k, _)| s == "Service" && k == "Environment")
        .flat_map(|(_, _, v)| systemd_words(v, false))
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k.to_string(), v.to_string())
        })
        .collect();
    let exec: Vec<_> = keys
        .iter()
        .filter(|(s, k, _)| s == "Service" && k == "ExecStart")
        .collect();
    assert_eq!(exec.len(), 1, "{text}");
    (env, systemd_words(&exec[0].2, true))
}

/// Runs `argv` with only `env` (and what a process needs to start), plus
/// `--once`, as the service manager would; returns its status and output.
fn run_entry(argv: &[String], env: &[(String, String)], home: &Path) -> (i32, String) {
    let mut c = Command::new(&argv[0]);
    c.args(&argv[1..])
        .arg("--once")
        .env_clear()
        .env("HOME", home);
    c.env("USERPROFILE", home);
    if cfg!(windows) {
        for k in ["SYSTEMROOT", "WINDIR", "TEMP", "TMP"] {
            if let Some(v) = std::env::var_os(k) {
                c.env(k, v);
            }
        }
    }
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// Makes PC's folder under `root`, as its first listener would.
fn make_target_in(root: &Path) {
    for d in [
        "inbox",
        "cancel",
        "running",
        "results",
        "logs",
        "archive/done",
    ] {
        std::fs::create_dir_all(root.join("PC").join(d)).unwrap();
    }
}

/// Enqueues a job for PC on `root` and returns its id.
fn queued(w: &World, root: &Path) -> String {
    let mut c = w.cmd();
    c.env("FLEET_DISPATCH_ROOT", root)
        .args(["enqueue", "--target", "PC", "--"])
        .args(JOBKIT_EXIT0);
    let (code, out, err) = output(&mut c);
    assert_eq!(code, 0, "{out}{err}");
    out.trim().to_string()
}

/// A job that exits 0 on every platform the suite runs on.
const JOBKIT_EXIT0: &[&str] = if cfg!(windows) {
    &["cmd", "/c", "exit 0"]
} else {
    &["true"]
};

fn same_file(a: &Path, b: &Path) -> bool {
    std::fs::canonicalize(a).unwrap() == std::fs::canonicalize(b).unwrap()
}

// A systemd unit or launchd agent holding Windows paths is no entry any
// machine runs: Unix only (the task is checked under Wine as Windows).
#[cfg(unix)]
#[test]
fn install_writes_a_unit_that_parses_and_runs_the_listener() {
    let (w, root) = hostile_world();
    let (code, out, err) = service(&w, &root, &["install", "--platform", "linux"]);
    assert_eq!(code, 0, "{out}{err}");
    let path = unit_path(&w);
    assert!(out.contains(&path.display().to_string()), "{out}");
    assert!(
        out.contains(
            "systemctl --user daemon-reload && systemctl --user enable --now fleet-dispatch"
        ),
        "{out}"
    );
    assert!(
        out.contains("journalctl --user -u fleet-dispatch -f"),
        "{out}"
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let (env, argv) = unit_command(&text);
    assert!(same_file(Path::new(&argv[0]), &bin()), "{argv:?}");
    assert_eq!(argv[1..], ["listen"]);
    let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    assert_eq!(get("FLEET_DISPATCH_ROOT").as_deref(), root.to_str());
    assert_eq!(get("FLEET_DISPATCH_MACHINE").as_deref(), Some("PC"));
    assert_eq!(get("FLEET_DISPATCH_KEY_FILE").as_deref(), w.key.to_str());
    assert_eq!(get("FLEET_DISPATCH_STATE_DIR").as_deref(), w.state.to_str());
    assert_eq!(
        get("PATH"),
        std::env::var("PATH").ok(),
        "jobs get the installing shell's PATH"
    );
    assert_eq!(get("FLEET_DISPATCH_STOP_GRACE").as_deref(), Some("20s"));
    let keys = unit_keys(&text);
    let has = |s: &str, k: &str, v: &str| keys.iter().any(|x| x == &(s.into(), k.into(), v.into()));
    assert!(has("Service", "TimeoutStopSec", "30s"), "{text}");
    assert!(has("Service", "Restart", "on-failure"), "{text}");
    assert!(has("Install", "WantedBy", "default.target"), "{text}");

    // What the unit runs works: it drains the hostile root's PC inbox.
    make_target_in(&root);
    let id = queued(&w, &root);
    let (code, said) = run_entry(&argv, &env, &w.home);
    assert_eq!(code, 0, "{said}");
    assert!(
        root.join("PC/results").join(format!("{id}.json")).exists(),
        "the unit's listener ran nothing: {said}"
    );
}

#[cfg(unix)] // as above: a unit holding Windows paths is no entry to verify
#[test]
#[ignore = "needs systemd-analyze (systemd)"]
fn systemd_analyze_verify_accepts_the_installed_unit() {
    let (w, root) = hostile_world();
    let (code, out, err) = service(&w, &root, &["install", "--platform", "linux"]);
    assert_eq!(code, 0, "{out}{err}");
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(unit_path(&w))
        .output()
        .unwrap_or_else(|e| panic!("systemd-analyze cannot run ({e}): install systemd"));
    assert!(
        out.status.success(),
        "systemd-analyze verify refused the unit:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

// A systemd unit or launchd agent holding Windows paths is no entry any
// machine runs: Unix only (the task is checked under Wine as Windows).
#[cfg(unix)]
#[test]
fn a_second_install_changes_nothing_and_a_different_one_needs_force() {
    let w = World::with_target();
    let path = unit_path(&w);
    let root = w.root.clone();
    let (code, out, err) = service(&w, &root, &["install", "--platform", "linux"]);
    assert_eq!(code, 0, "{out}{err}");
    let first = std::fs::read(&path).unwrap();
    let (code, out, err) = service(&w, &root, &["install", "--platform", "linux"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("already installed, unchanged"), "{out}");
    assert_eq!(std::fs::read(&path).unwrap(), first);

    let mut c = w.cmd_as("LAPTOP");
    c.args(["service", "install", "--platform", "linux"]);
    let (code, out, err) = output(&mut c);
    assert_eq!(code, 64, "{out}{err}");
    assert!(err.contains("VALIDATION_ERROR"), "{err}");
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(err.contains("--force"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), first, "nothing written");

    let mut c = w.cmd_as("LAPTOP");
    c.args(["service", "install", "--platform", "linux", "--force"]);
    let (code, out, err) = output(&mut c);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("wrote"), "{out}");
    assert!(
        out.contains("systemctl --user restart fleet-dispatch"),
        "{out}"
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("FLEET_DISPATCH_MACHINE=LAPTOP"), "{text}");
}

// A systemd unit or launchd agent holding Windows paths is no entry any
// machine runs: Unix only (the task is checked under Wine as Windows).
#[cfg(unix)]
#[test]
fn print_shows_the_entry_and_writes_nothing() {
    let w = World::with_target();
    let root = w.root.clone();
    for platform in ["linux", "macos", "windows"] {
        let mut c = w.cmd();
        c.env("LOCALAPPDATA", w.dir.path().join("local"));
        c.args(["service", "install", "--print", "--platform", platform]);
        let (code, out, err) = output(&mut c);
        assert_eq!(code, 0, "{platform}: {out}{err}");
        assert!(out.contains(root.to_str().unwrap()), "{platform}: {out}");
        assert!(out.contains("listen"), "{platform}: {out}");
    }
    assert_eq!(
        std::fs::read_dir(&w.home).unwrap().count(),
        0,
        "--print made something under HOME"
    );
    assert!(!w.dir.path().join("local").exists());
}

#[test]
fn uninstall_removes_the_entry_and_its_enable_link_and_says_when_there_is_none() {
    let w = World::with_target();
    let root = w.root.clone();
    let (code, out, err) = service(&w, &root, &["install", "--platform", "linux"]);
    assert_eq!(code, 0, "{out}{err}");
    let path = unit_path(&w);
    // What `systemctl --user enable` leaves.
    let wants = path.parent().unwrap().join("default.target.wants");
    std::fs::create_dir_all(&wants).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&path, wants.join("fleet-dispatch.service")).unwrap();

    let (code, out, err) = service(&w, &root, &["uninstall", "--platform", "linux"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("removed"), "{out}");
    assert!(
        out.contains("systemctl --user stop fleet-dispatch"),
        "{out}"
    );
    assert!(!path.exists());
    assert!(!wants.join("fleet-dispatch.service").is_symlink());

    let (code, out, err) = service(&w, &root, &["uninstall", "--platform", "linux"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("nothing to remove"), "{out}");

    // A unit of one's own at that path is not ours to remove.
    std::fs::write(&path, "[Service]\nExecStart=/bin/true\n").unwrap();
    let (code, out, err) = service(&w, &root, &["uninstall", "--platform", "linux"]);
    assert_eq!(code, 64, "{out}{err}");
    assert!(path.exists());
    let (code, out, err) = service(&w, &root, &["uninstall", "--platform", "linux", "--force"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!path.exists());
}

#[test]
fn an_incomplete_configuration_is_refused_as_config_and_nothing_is_written() {
    let w = World::with_target();
    // No root: nothing names one (no flag, variable, file or OneDrive).
    let mut c = w.cmd();
    c.env_remove("FLEET_DISPATCH_ROOT")
        .args(["service", "install", "--platform", "linux"]);
    let (code, out, err) = output(&mut c);
    assert_eq!(code, 78, "{out}{err}");
    assert!(err.contains("CONFIG") && err.contains("root"), "{err}");
    // No key file.
    let missing = w.dir.path().join("nokey");
    let mut c = w.cmd();
    c.env("FLEET_DISPATCH_KEY_FILE", &missing)
        .args(["service", "install", "--platform", "linux"]);
    let (code, out, err) = output(&mut c);
    assert_eq!(code, 78, "{out}{err}");
    assert!(err.contains(&missing.display().to_string()), "{err}");
    assert_eq!(std::fs::read_dir(&w.home).unwrap().count(), 0);
}

#[test]
fn the_launchd_agent_is_a_plist_that_runs_the_binary_with_each_setting() {
    let (w, root) = hostile_world();
    let (code, out, err) = service(&w, &root, &["install", "--platform", "macos"]);
    assert_eq!(code, 0, "{out}{err}");
    let path = w
        .home
        .join("Library/LaunchAgents/net.fleet-dispatch.listen.plist");
    assert!(out.contains("launchctl bootstrap gui/$(id -u)"), "{out}");
    let text = std::fs::read_to_string(&path).unwrap();
    let opts = ParsingOptions {
        allow_dtd: true,
        ..ParsingOptions::default()
    };
    let doc = Document::parse_with_options(&text, opts).expect("a well-formed plist");
    let dict = doc
        .root_element()
        .children()
        .find(|n| n.has_tag_name("dict"))
        .unwrap();
    // A dict's children alternate <key> and its value.
    let entries: Vec<_> = dict.children().filter(|n| n.is_element()).collect();
    let value = |key: &str| {
        entries
            .chunks(2)
            .find(|p| p[0].has_tag_name("key") && p[0].text() == Some(key))
            .map(|p| p[1])
            .unwrap_or_else(|| panic!("no {key}"))
    };
    let strings = |n: roxmltree::Node| -> Vec<String> {
        n.children()
            .filter(|c| c.has_tag_name("string"))
            .map(|c| c.text().unwrap_or("").to_string())
            .collect()
    };
    let args = strings(value("ProgramArguments"));
    assert!(same_file(Path::new(&args[0]), &bin()), "{args:?}");
    assert_eq!(args[1..], ["listen"]);
    let env: Vec<_> = value("EnvironmentVariables")
        .children()
        .filter(|n| n.is_element())
        .map(|n| n.text().unwrap_or("").to_string())
        .collect();
    let pos = env.iter().position(|k| k == "FLEET_DISPATCH_ROOT").unwrap();
    assert_eq!(env[pos + 1], root.to_str().unwrap());
    let pos = env.iter().position(|k| k == "PATH").unwrap();
    assert_eq!(
        Some(env[pos + 1].as_str()),
        std::env::var("PATH").ok().as_deref()
    );
    let log = value("StandardOutPath").text().unwrap().to_string();
    assert!(
        Path::new(&log).starts_with(&w.home) && log.ends_with(".log"),
        "{log}"
    );
    assert_eq!(value("Label").text(), Some("net.fleet-dispatch.listen"));
    // Every macOS has plutil; elsewhere the plist is parsed as XML only.
    #[cfg(target_os = "macos")]
    {
        let ok = Command::new("plutil")
            .arg("-lint")
            .arg(&path)
            .status()
            .unwrap();
        assert!(ok.success(), "plutil -lint refused {}", path.display());
    }
}

/// Splits a command line as `CommandLineToArgvW` does (for arguments).
fn windows_split(line: &str) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        while i < chars.len() && chars[i] == ' ' {
            i += 1;
        }
        if i == chars.len() {
            break;
        }
        let (mut word, mut quoted) = (String::new(), false);
        while i < chars.len() && (quoted || chars[i] != ' ') {
            let mut n = 0;
            while i < chars.len() && chars[i] == '\\' {
                n += 1;
                i += 1;
            }
            if i < chars.len() && chars[i] == '"' {
                word.push_str(&"\\".repeat(n / 2));
                if n % 2 == 1 {
                    word.push('"');
                } else {
                    quoted = !quoted;
                }
                i += 1;
            } else {
                word.push_str(&"\\".repeat(n));
                if i < chars.len() && (quoted || chars[i] != ' ') {
                    word.push(chars[i]);
                    i += 1;
                }
            }
        }
        out.push(word);
    }
    out
}

#[test]
#[cfg_attr(
    windows,
    ignore = "on Windows install registers the task with schtasks, not wanted from a test"
)]
fn the_task_is_utf16_xml_whose_command_runs_the_listener_with_each_setting() {
    let (w, root) = hostile_world();
    let local = w.dir.path().join("local");
    let mut c = w.cmd();
    c.env("FLEET_DISPATCH_ROOT", &root)
        .env("LOCALAPPDATA", &local)
        .env("USERDOMAIN", "DOM")
        .env("USERNAME", "you")
        .args(["service", "install", "--platform", "windows"]);
    let (code, out, err) = output(&mut c);
    assert_eq!(code, 0, "{out}{err}");
    let path = local.join("fleet-dispatch/fleet-dispatch-listen.xml");
    assert!(
        out.contains("schtasks /Create /F /TN fleet-dispatch-listen /XML"),
        "{out}"
    );
    assert!(
        out.contains("schtasks /Run /TN fleet-dispatch-listen"),
        "{out}"
    );
    assert!(
        err.contains("PATH"),
        "the PATH a task cannot carry is said: {err}"
    );
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(&bytes[..2], &[0xFF, 0xFE], "UTF-16 with a byte order mark");
    let units: Vec<u16> = bytes[2..]
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    let text = String::from_utf16(&units).unwrap();
    let doc = Document::parse(&text).expect("well-formed XML");
    let ns = "http://schemas.microsoft.com/windows/2004/02/mit/task";
    let find = |name: &str| {
        doc.descendants()
            .filter(|n| n.has_tag_name((ns, name)))
            .map(|n| n.text().unwrap_or("").to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(find("UserId"), ["DOM\\you", "DOM\\you"]);
    let command = find("Command").remove(0);
    assert!(same_file(Path::new(&command), &bin()), "{command}");
    let args = windows_split(&find("Arguments").remove(0));
    let flag = |f: &str| {
        let i = args
            .iter()
            .position(|a| a == f)
            .unwrap_or_else(|| panic!("no {f}: {args:?}"));
        args[i + 1].clone()
    };
    assert_eq!(args[0], "listen");
    assert_eq!(flag("--root"), root.to_str().unwrap());
    assert_eq!(flag("--machine"), "PC");
    assert_eq!(flag("--key-file"), w.key.to_str().unwrap());
    assert_eq!(flag("--stop-grace"), "20s");
    // The task's command works: it drains the hostile root's PC inbox.
    make_target_in(&root);
    let id = queued(&w, &root);
    let mut argv = vec![command];
    argv.extend(args);
    let path_var = std::env::var("PATH").unwrap_or_default();
    let (code, said) = run_entry(&argv, &[("PATH".into(), path_var)], &w.home);
    assert_eq!(code, 0, "{said}");
    assert!(
        root.join("PC/results").join(format!("{id}.json")).exists(),
        "the task's listener ran nothing: {said}"
    );
}

fn service_check(w: &World) -> Value {
    let (_, out, err) = w.run(&["--json", "doctor"]);
    let v: Value = serde_json::from_str(out.trim()).unwrap_or_else(|_| panic!("{out}{err}"));
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "service")
        .cloned()
        .unwrap_or_else(|| panic!("no service check: {out}"))
}

#[test]
#[cfg_attr(
    windows,
    ignore = "on Windows install registers the task with schtasks, not wanted from a test"
)]
fn doctor_hints_at_a_missing_entry_and_checks_an_installed_one() {
    let w = World::with_target();
    let c = service_check(&w);
    assert_eq!(c["status"], "ok", "no entry is no failure: {c}");
    assert!(
        c["hint"]
            .as_str()
            .unwrap()
            .contains("fleet-dispatch service install"),
        "{c}"
    );

    let (code, out, err) = w.run(&["service", "install"]);
    assert_eq!(code, 0, "{out}{err}");
    let c = service_check(&w);
    assert_eq!(c["status"], "ok", "{c}");
    assert!(
        c["message"].as_str().unwrap().contains("current settings"),
        "{c}"
    );

    // The settings moved on (another machine name): the entry is stale.
    let (_, out, _) = output(w.cmd_as("LAPTOP").args(["--json", "doctor"]));
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let c = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "service")
        .unwrap();
    assert_eq!(c["status"], "warn", "{c}");
    assert!(c["message"].as_str().unwrap().contains("MACHINE=PC"), "{c}");
    assert!(c["hint"].as_str().unwrap().contains("--force"), "{c}");
}
