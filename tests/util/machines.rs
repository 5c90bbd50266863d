//! Several machines of one world in the roster lane (`--auth roster`,
//! docs/identities.md): each with its own home (identity, admin key) and
//! state directory (pin, versions seen) beside the one shared root, and a
//! fleet key setting that names no file. Shared by the `roster`, `seal`
//! and `mcp` suites ([`fleet`]: a keyless fleet of three); `last_line`
//! and `all_files` by every suite that reads output or scans the root.

use std::path::{Path, PathBuf};

use super::{World, output};

/// Machine `name`'s home in `w`.
pub fn home(w: &World, name: &str) -> PathBuf {
    w.dir.path().join(name).join("home")
}

/// Machine `name`'s state directory in `w`.
pub fn state(w: &World, name: &str) -> PathBuf {
    w.dir.path().join(name).join("state")
}

/// `fleet-dispatch --auth roster` as machine `name`, as a process to hold
/// while it runs.
pub fn bg(w: &World, name: &str) -> std::process::Command {
    let mut c = w.bg_cmd_as(name);
    c.env("HOME", home(w, name))
        .env("USERPROFILE", home(w, name))
        .env("FLEET_DISPATCH_STATE_DIR", state(w, name))
        .env("FLEET_DISPATCH_KEY_FILE", w.dir.path().join("no-such.key"))
        .env("FLEET_DISPATCH_AUTH", "roster");
    c
}

/// A keyless world: `PC` is the admin and on the roster (with `pc_flags`,
/// e.g. `--require-seal`), `LAPTOP` and `NAS` joined and pinned.
pub fn fleet(pc_flags: &[&str]) -> World {
    let w = World::new();
    std::fs::remove_file(&w.key).unwrap();
    w.make_target("PC");
    let line = last_line(&ok(&w, "PC", &["identity", "init"]));
    let admin = last_line(&ok(&w, "PC", &["roster", "init"]));
    let mut args = vec!["roster", "add", "PC", "--identity", &line];
    args.extend_from_slice(pc_flags);
    ok(&w, "PC", &args);
    for name in ["LAPTOP", "NAS"] {
        let line = last_line(&ok(&w, name, &["identity", "init"]));
        ok(&w, "PC", &["roster", "add", name, "--identity", &line]);
        ok(&w, name, &["roster", "pin", &admin]);
    }
    w
}

/// The same, to run to its end.
pub fn on(w: &World, name: &str) -> assert_cmd::Command {
    assert_cmd::Command::from_std(bg(w, name))
}

/// Runs `args` as `name`: (status, stdout, stderr).
pub fn run(w: &World, name: &str, args: &[&str]) -> (i32, String, String) {
    output(on(w, name).args(args))
}

/// Runs `args` as `name`, which must succeed: its stdout.
pub fn ok(w: &World, name: &str, args: &[&str]) -> String {
    let (code, out, err) = run(w, name, args);
    assert_eq!(code, 0, "{args:?} as {name}: {out}{err}");
    out
}

/// The identity of machine `name`, read from its home.
pub fn identity(w: &World, name: &str) -> fleet_dispatch::trust::identity::Identity {
    let text = all_files(&home(w, name))
        .into_iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .find(|t| t.starts_with("fleet-dispatch identity 1"))
        .expect("an identity file");
    fleet_dispatch::trust::identity::Identity::from_file_text(&text).unwrap()
}

/// The last line of what a command printed.
pub fn last_line(out: &str) -> String {
    out.trim_end().lines().last().unwrap_or("").to_string()
}

/// Every file under `dir`, recursively.
pub fn all_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(all_files(&p));
        } else {
            out.push(p);
        }
    }
    out
}
