//! Shared test helpers: a scratch world (root, key, state) per test, a
//! command with a scrubbed environment, waiting, and (in [`sign`]) every
//! signed document a test writes.
//!
//! The binary runs through `assert_cmd`: [`World::cmd`] gives an
//! `assert_cmd::Command` for a command that runs to completion, and
//! [`World::bg_cmd`] a `std::process::Command` for one the test holds while
//! it runs (see there why).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub mod engine;
pub mod machines;
pub mod sign;
pub use sign::*;

/// Path of the built binary, for a job or a script that runs it itself.
pub fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin!("fleet-dispatch").to_path_buf()
}

/// The reference vectors, copied unchanged from the specification.
pub fn vectors() -> Value {
    serde_json::from_str(include_str!("../data/signing.json")).unwrap()
}

/// The current time as the protocol writes it.
pub fn now_text() -> String {
    ts(std::time::SystemTime::now())
}

/// A timestamp `secs` seconds from now (negative: in the past).
pub fn ts_offset(secs: i64) -> String {
    let now = std::time::SystemTime::now();
    let t = if secs >= 0 {
        now + Duration::from_secs(secs as u64)
    } else {
        now - Duration::from_secs((-secs) as u64)
    };
    ts(t)
}

fn ts(t: std::time::SystemTime) -> String {
    let d = t.duration_since(std::time::UNIX_EPOCH).unwrap();
    let secs = d.as_secs() as i64;
    let ms = d.subsec_millis();
    let days = secs.div_euclid(86400);
    let rem = secs.rem_euclid(86400);
    // Civil-from-days (Howard Hinnant), so tests do not share the crate's clock code.
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// [`ts`] read back: `YYYY-MM-DDTHH:MM:SS.mmmZ` as a time.
fn parse_ts(s: &str) -> Option<std::time::SystemTime> {
    let b = s.as_bytes();
    if b.len() != 24 || b[23] != b'Z' {
        return None;
    }
    let n = |from: usize, to: usize| s.get(from..to)?.parse::<i64>().ok();
    let (y, m, d) = (n(0, 4)?, n(5, 7)?, n(8, 10)?);
    let (hh, mm, ss, ms) = (n(11, 13)?, n(14, 16)?, n(17, 19)?, n(20, 23)?);
    // Days-from-civil (Howard Hinnant), the inverse of `ts`.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    let ms = ((days * 86400 + hh * 3600 + mm * 60 + ss) * 1000 + ms)
        .try_into()
        .ok()?;
    Some(std::time::UNIX_EPOCH + Duration::from_millis(ms))
}

/// A scratch world: a dispatch root, a key file (the vector key, mode 600)
/// and a state directory, all in one temp dir. The machine is `PC`.
pub struct World {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
    pub key: PathBuf,
    pub state: PathBuf,
    pub home: PathBuf,
}

impl World {
    pub fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let state = dir.path().join("state");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        let key = dir.path().join("keys").join("fleet.key");
        std::fs::create_dir_all(key.parent().unwrap()).unwrap();
        write_private(&key, VECTOR_KEY);
        World {
            dir,
            root,
            key,
            state,
            home,
        }
    }

    /// A world whose target `PC` folder already exists (as after a first listen).
    pub fn with_target() -> World {
        let w = World::new();
        w.make_target("PC");
        w
    }

    pub fn make_target(&self, name: &str) {
        for d in [
            "inbox",
            "cancel",
            "running",
            "results",
            "logs",
            "archive/done",
            "archive/consumed",
            "archive/rejected",
        ] {
            std::fs::create_dir_all(self.root.join(name).join(d)).unwrap();
        }
    }

    /// `fleet-dispatch` with a scrubbed environment pointing at this world,
    /// as machine `PC`, to run to completion ([`output`]). Its
    /// stdin is a pipe closed at once: a read sees end of file, as from
    /// `/dev/null`.
    pub fn cmd(&self) -> assert_cmd::Command {
        self.cmd_as("PC")
    }

    /// The same, as another machine.
    pub fn cmd_as(&self, machine: &str) -> assert_cmd::Command {
        assert_cmd::Command::from_std(self.bg_cmd_as(machine))
    }

    /// The same as a plain `std::process::Command`, for a process the test
    /// holds while it runs: a listener, a waiting command, one to signal,
    /// kill or race against another. `assert_cmd::Command` only runs a
    /// command to its end and never hands back the running `Child`.
    ///
    /// The path is `assert_cmd`'s `cargo_bin!` (what cargo built), not
    /// `CommandCargoExt::cargo_bin`: that one prefixes the
    /// `CARGO_TARGET_<triple>_RUNNER`, which `ci/windows` sets to Wine, so
    /// inside the Windows tests it would start the binary through a second
    /// Wine and the pid, the kill and the Job Object would be the wrapper's.
    pub fn bg_cmd(&self) -> std::process::Command {
        self.bg_cmd_as("PC")
    }

    /// The same, as another machine.
    pub fn bg_cmd_as(&self, machine: &str) -> std::process::Command {
        let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin!("fleet-dispatch"));
        c.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("USERPROFILE", &self.home)
            .env("FLEET_DISPATCH_ROOT", &self.root)
            .env("FLEET_DISPATCH_KEY_FILE", &self.key)
            .env("FLEET_DISPATCH_STATE_DIR", &self.state)
            .env("FLEET_DISPATCH_MACHINE", machine)
            .stdin(Stdio::null());
        c
    }

    /// Runs the command and returns (status, stdout, stderr).
    pub fn run(&self, args: &[&str]) -> (i32, String, String) {
        output(self.cmd().args(args))
    }

    /// `enqueue --target PC EXTRA… -- ARGV…`, returning the id.
    pub fn enqueue<S: AsRef<str>>(&self, extra: &[&str], argv: &[S]) -> String {
        let mut args = vec!["enqueue", "--target", "PC"];
        args.extend_from_slice(extra);
        args.push("--");
        args.extend(argv.iter().map(AsRef::as_ref));
        let (code, out, err) = self.run(&args);
        assert_eq!(code, 0, "enqueue failed: {out}{err}");
        out.trim().lines().next().unwrap().to_string()
    }

    /// `listen --once` (JSON); returns the counters.
    pub fn listen_once(&self, extra: &[&str]) -> Value {
        self.listen_once_as("PC", extra)
    }

    /// `listen --once` as `machine`, the listener of that target (JSON);
    /// returns the counters.
    pub fn listen_once_as(&self, machine: &str, extra: &[&str]) -> Value {
        let mut args = vec!["--json", "listen", "--once", "--poll-interval", "100ms"];
        args.extend_from_slice(extra);
        let (code, out, err) = output(self.cmd_as(machine).args(&args));
        assert_eq!(code, 0, "listen --once as {machine} failed: {out}{err}");
        let v: Value =
            serde_json::from_str(out.trim()).unwrap_or_else(|_| panic!("not JSON: {out}"));
        v["counters"].clone()
    }

    /// Starts a listener in loop mode (killed when the guard drops) and
    /// waits for its heartbeat.
    pub fn spawn_listener(&self, extra: &[&str]) -> ListenerGuard {
        let mut args = vec!["listen", "--poll-interval", "100ms", "--settle", "2s"];
        args.extend_from_slice(extra);
        let hb = self.pc().join("listener.json");
        let _ = std::fs::remove_file(&hb);
        let g = ListenerGuard::spawn(self.bg_cmd().args(&args));
        wait_until(Duration::from_secs(10), || hb.exists());
        g
    }

    pub fn pc(&self) -> PathBuf {
        self.root.join("PC")
    }
    pub fn inbox(&self, id: &str) -> PathBuf {
        self.pc().join("inbox").join(format!("{id}.json"))
    }
    pub fn marker(&self, id: &str) -> PathBuf {
        self.pc().join("cancel").join(format!("{id}.json"))
    }
    pub fn result_path(&self, id: &str) -> PathBuf {
        self.pc().join("results").join(format!("{id}.json"))
    }
    pub fn done(&self, id: &str) -> PathBuf {
        self.pc()
            .join("archive")
            .join("done")
            .join(format!("{id}.json"))
    }
    pub fn running(&self, id: &str) -> PathBuf {
        self.pc().join("running").join(format!("{id}.json"))
    }
    pub fn rejected(&self, name: &str) -> PathBuf {
        self.pc().join("archive").join("rejected").join(name)
    }
    pub fn consumed(&self, id: &str) -> PathBuf {
        self.pc()
            .join("archive")
            .join("consumed")
            .join(format!("{id}.cancel.json"))
    }

    /// The result document for `id`, parsed.
    pub fn result(&self, id: &str) -> Value {
        let text = std::fs::read_to_string(self.result_path(id))
            .unwrap_or_else(|_| panic!("no result for {id}"));
        serde_json::from_str(&text).unwrap()
    }

    /// The reason filed beside the rejected file `name`, parsed.
    pub fn reason(&self, name: &str) -> Value {
        let text = std::fs::read_to_string(self.rejected(&format!("{name}.reason.json")))
            .unwrap_or_else(|_| panic!("no reason filed for {name}"));
        serde_json::from_str(&text).unwrap()
    }

    /// The result's detail object, parsed.
    pub fn detail(&self, id: &str) -> Value {
        serde_json::from_str(self.result(id)["detail"].as_str().unwrap()).unwrap()
    }

    /// Waits for `id`'s result and for its job file to leave the inbox.
    pub fn wait_result(&self, id: &str, limit: Duration) -> Value {
        wait_until(limit, || self.result_path(id).exists());
        wait_until(Duration::from_secs(5), || !self.inbox(id).exists());
        self.result(id)
    }

    /// Writes a job file from `LAPTOP` signed with the fleet key.
    pub fn write_job(
        &self,
        dir_target: &str,
        id: &str,
        body_target: &str,
        created_at: &str,
        spec: &Value,
    ) -> PathBuf {
        let body = job_doc(
            id,
            body_target,
            created_at,
            "LAPTOP",
            &spec.to_string(),
            Signer::Fleet,
        );
        let path = self
            .root
            .join(dir_target)
            .join("inbox")
            .join(format!("{id}.json"));
        std::fs::write(&path, body.to_string()).unwrap();
        path
    }

    /// Writes a marker from `LAPTOP` signed with the fleet key.
    pub fn write_marker(&self, dir_target: &str, id: &str, body_target: &str) -> PathBuf {
        let body = marker_doc(id, body_target, &now_text(), "LAPTOP", Signer::Fleet);
        let path = self
            .root
            .join(dir_target)
            .join("cancel")
            .join(format!("{id}.json"));
        std::fs::write(&path, body.to_string()).unwrap();
        path
    }
}

/// How a test stops a loop listener politely, per platform: on Unix a
/// signal (SIGINT as Ctrl-C, SIGTERM as a service manager), which exits 130
/// with "(interrupted)"; on Windows `listen
/// --drain`, which exits 0 with "(drained)", because there is no signal to
/// one process there and Wine 8 cannot deliver the console's CTRL_C_EVENT.
/// A drain lets a running job finish first, so tests stop the listener
/// between jobs.
pub mod polite_stop {
    /// The listener's exit status after [`ask`].
    pub const EXIT: i32 = if cfg!(windows) { 0 } else { 130 };
    /// What its summary line ends with after [`ask`].
    pub const SUMMARY_MARK: &str = if cfg!(windows) {
        "(drained)"
    } else {
        "(interrupted)"
    };

    /// Asks the listener `child` of `w`'s machine `PC` to stop: `signal`
    /// on Unix, a drain on Windows, which returns once it has stopped.
    pub fn ask(w: &super::World, child: &std::process::Child, signal: i32) {
        #[cfg(unix)]
        {
            let _ = w;
            // SAFETY: kill(2) on our own child.
            unsafe {
                libc::kill(child.id() as i32, signal);
            }
        }
        #[cfg(windows)]
        {
            let _ = (child, signal);
            let (code, out, err) = w.run(&["listen", "--drain"]);
            assert_eq!(code, 0, "listen --drain: {out}{err}");
            assert!(out.contains("drained and stopped"), "{out}{err}");
        }
    }
}

/// Kills the listener when dropped; can also stop it politely.
pub struct ListenerGuard {
    pub child: Option<Child>,
}

impl ListenerGuard {
    /// Starts `c` with stdout and stderr piped, to read back in [`Self::wait`].
    pub fn spawn(c: &mut std::process::Command) -> ListenerGuard {
        let child = spawn(c.stdout(Stdio::piped()).stderr(Stdio::piped()));
        ListenerGuard { child: Some(child) }
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().unwrap().id() as i32
    }

    /// Sends `sig` to the listener.
    #[cfg(unix)]
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child.
        unsafe {
            libc::kill(self.pid(), sig);
        }
    }

    /// Stops it politely ([`polite_stop`]: `signal` on Unix) and waits for
    /// it to exit.
    pub fn stop(self, w: &World, signal: i32, limit: Duration) -> (i32, String, String) {
        polite_stop::ask(w, self.child.as_ref().unwrap(), signal);
        self.wait(limit)
    }

    /// Waits for the listener to exit; returns (status, stdout, stderr).
    pub fn wait(mut self, limit: Duration) -> (i32, String, String) {
        let mut child = self.child.take().unwrap();
        let until = Instant::now() + limit;
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > until {
                let _ = child.kill();
                panic!("listener did not exit within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

impl Drop for ListenerGuard {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Wine's process creation under load now and then fails with
/// ERROR_INTERNAL_ERROR (1359) although nothing is wrong with the program;
/// a second try starts it. Only the test harness retries: the listener
/// reports its own spawn failures as `spawn_failed`, as it should.
const WINE_SPAWN_FLAKE: i32 = 1359;

/// The other face of the same: the process is made but dies in its DLL
/// initialisation (STATUS_DLL_INIT_FAILED), before any of its code runs.
const WINE_DLL_INIT_FLAKE: i32 = 0xC000_0142_u32 as i32;

/// The message of the error [`never_ran`] turns that exit into.
const NEVER_RAN: &str = "the process died in its DLL initialisation";

/// An output whose process never ran (above) as an error to retry.
fn never_ran(out: std::process::Output) -> std::io::Result<std::process::Output> {
    if cfg!(windows)
        && out.status.code() == Some(WINE_DLL_INIT_FLAKE)
        && out.stdout.is_empty()
        && out.stderr.is_empty()
    {
        return Err(std::io::Error::other(NEVER_RAN));
    }
    Ok(out)
}

/// A listener's result for a job whose process Wine made but which died in
/// its DLL initialisation (above), before any of its code ran: `failed`
/// with that exit status and no output. On real Windows the same status
/// means the desktop heap ran out, and the listener reports it as it does
/// here: an honest failure, so only tests forgive it, and only under Wine.
pub fn wine_never_ran(result: &serde_json::Value) -> bool {
    cfg!(windows)
        && result["exitCode"].as_i64() == Some(i64::from(WINE_DLL_INIT_FLAKE))
        && result["error"] == ""
        && result["stdoutTail"] == ""
        && result["stderrTail"] == ""
}

fn retried<T>(what: &dyn std::fmt::Debug, mut go: impl FnMut() -> std::io::Result<T>) -> T {
    let mut tries = 0;
    loop {
        match go() {
            Ok(v) => return v,
            Err(e)
                if cfg!(windows)
                    && (e.raw_os_error() == Some(WINE_SPAWN_FLAKE)
                        || e.to_string() == NEVER_RAN)
                    && tries < 4 =>
            {
                tries += 1;
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => panic!("cannot start {what:?}: {e}"),
        }
    }
}

/// Everything `child` writes on its piped stderr, to its end.
pub fn stderr_text(child: &mut std::process::Child) -> String {
    use std::io::Read;
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut err).unwrap();
    }
    err
}

/// Spawns `c`, retrying only Wine's transient failure.
pub fn spawn(c: &mut std::process::Command) -> Child {
    let what = format!("{c:?}");
    retried(&what, || c.spawn())
}

/// `.start()` on a `std::process::Command`: [`spawn`] as a method.
pub trait Start {
    fn start(&mut self) -> Child;
}

impl Start for std::process::Command {
    fn start(&mut self) -> Child {
        spawn(self)
    }
}

/// Runs a command to its end; returns (status, stdout, stderr), the status
/// -1 when a signal ended it.
pub fn output(c: &mut assert_cmd::Command) -> (i32, String, String) {
    let what = format!("{c:?}");
    parts(&retried(&what, || c.output().and_then(never_ran)))
}

/// Runs a command that must end by itself within `limit`; returns (status,
/// stdout, stderr). At the limit `assert_cmd` kills it and the test fails.
pub fn output_within(c: &mut assert_cmd::Command, limit: Duration) -> (i32, String, String) {
    let started = Instant::now();
    let what = format!("{c:?}");
    let c = c.timeout(limit);
    let got = parts(&retried(&what, || c.output().and_then(never_ran)));
    assert!(
        started.elapsed() < limit,
        "command did not finish within {limit:?}: {c:?}\n{}{}",
        got.1,
        got.2
    );
    got
}

fn parts(out: &std::process::Output) -> (i32, String, String) {
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Polls `cond` every 20 ms; panics after `limit`.
pub fn wait_until(limit: Duration, cond: impl FnMut() -> bool) {
    poll_until(limit, Duration::from_millis(20), "the condition", cond);
}

/// Polls `cond` every `every`; panics after `limit`, naming `what`.
pub fn poll_until(limit: Duration, every: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let until = Instant::now() + limit;
    while !cond() {
        if Instant::now() > until {
            panic!("{what} not met within {limit:?}");
        }
        std::thread::sleep(every);
    }
}

/// Writes a file only its owner may read: mode 600 on Unix, the crate's own
/// owner-only DACL on Windows (a plain write would inherit the folder's).
pub fn write_private(p: &Path, text: &str) {
    #[cfg(unix)]
    {
        std::fs::write(p, text).unwrap();
        set_mode(p, 0o600);
    }
    #[cfg(windows)]
    {
        use std::io::Write;
        // A new file: the access list is set when it is created.
        let _ = std::fs::remove_file(p);
        let mut f = fleet_dispatch::platform::create_private(p).unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }
}

#[cfg(unix)]
pub fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// True while a process with this pid exists and has not exited.
#[cfg(windows)]
pub fn alive(pid: i32) -> bool {
    use windows_sys::Win32::Foundation::{CloseHandle, WAIT_TIMEOUT};
    use windows_sys::Win32::System::Threading::{
        OpenProcess, PROCESS_SYNCHRONIZE, WaitForSingleObject,
    };
    // SAFETY: OpenProcess gives a handle we own or null; it is closed here.
    unsafe {
        let h = OpenProcess(PROCESS_SYNCHRONIZE, 0, pid as u32);
        if h.is_null() {
            return false;
        }
        let running = WaitForSingleObject(h, 0) == WAIT_TIMEOUT;
        CloseHandle(h);
        running
    }
}

/// Ends process `pid` at once: SIGKILL on Unix, `TerminateProcess` on
/// Windows.
pub fn kill_hard(pid: i32) {
    #[cfg(unix)]
    // SAFETY: kill(2) touches no memory of ours.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
    #[cfg(windows)]
    {
        use windows_sys::Win32::Foundation::CloseHandle;
        use windows_sys::Win32::System::Threading::{
            OpenProcess, PROCESS_TERMINATE, TerminateProcess,
        };
        // SAFETY: OpenProcess gives a handle we own or null; it is closed here.
        unsafe {
            let h = OpenProcess(PROCESS_TERMINATE, 0, pid as u32);
            if !h.is_null() {
                TerminateProcess(h, 1);
                CloseHandle(h);
            }
        }
    }
}

/// True while a process with this pid exists and is not a zombie.
#[cfg(unix)]
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rfind(')')
            .and_then(|i| s.get(i + 2..i + 3))
            .is_some_and(|st| st != "Z"),
        Err(_) => false,
    }
}

/// Every file under `dir`, relative, sorted, with `/` between names on
/// every platform.
pub fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|e| !e.file_type().is_dir())
        .map(|e| {
            let rel = e.path().strip_prefix(dir).unwrap();
            rel.iter()
                .map(|c| c.to_string_lossy())
                .collect::<Vec<_>>()
                .join("/")
        })
        .collect();
    v.sort();
    v
}

/// A job id unique on this machine: crash recovery finds orphans by job id
/// across the whole process table, so tests running in parallel must never
/// share one.
pub fn uid(tag: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "{tag}-{:x}-{nanos:x}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

/// A file in the world's temp dir, outside the root.
pub fn scratch(w: &World, name: &str) -> PathBuf {
    w.dir.path().join(name)
}

/// The job program of every test that runs one: `examples/jobkit.rs`, a
/// chain of steps (`out`, `sleep`, `exit`, `pid`, `append`, `spawn`,
/// `escape`, `ignore-stop`…; see there) that does what the `sh -c` scripts
/// did, on Unix and on Windows alike.
///
/// An example rather than a `[[bin]]`, so `cargo install` never installs
/// it: `cargo test` builds the examples for the host or the `--target`, in
/// `examples/` beside the `deps/` folder holding this test binary. A
/// filtered run (`cargo test NAME`, `--test tests`) builds no example; then
/// build it first with `cargo build --example jobkit` (`ci/windows` does),
/// and this says so rather than run a missing or stale copy.
pub fn jobkit() -> PathBuf {
    static PATH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        let kit = exe
            .parent()
            .and_then(Path::parent)
            .unwrap()
            .join("examples")
            .join(format!("jobkit{}", std::env::consts::EXE_SUFFIX));
        let built = std::fs::metadata(&kit).and_then(|m| m.modified());
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/jobkit.rs");
        let stale = match (built, std::fs::metadata(source).and_then(|m| m.modified())) {
            (Err(_), _) => true,
            (Ok(built), Ok(source)) => built < source,
            // The source is out of reach (a Windows path under Wine): trust it.
            (Ok(_), Err(_)) => false,
        };
        assert!(
            !stale,
            "{} is missing or older than examples/jobkit.rs: run `cargo test` \
             (which builds examples), or `cargo build --example jobkit` first",
            kit.display()
        );
        kit
    })
    .clone()
}

/// The argv of a job running `jobkit STEPS…`.
pub fn kit(steps: &[&str]) -> Vec<String> {
    std::iter::once(jobkit().to_str().unwrap().to_string())
        .chain(steps.iter().map(|s| s.to_string()))
        .collect()
}

/// A spec whose argv is `jobkit STEPS…`.
pub fn kit_spec(steps: &[&str]) -> Value {
    json!({ "argv": kit(steps) })
}

/// A path as a jobkit step's argument.
pub fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A spec whose job appends the line `word` to `file`.
pub fn appends(file: &Path, word: &str) -> Value {
    kit_spec(&["append", p(file), word])
}

/// The lines of a side-effect file; none when it does not exist.
pub fn lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .map(|t| t.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Target `PC`'s ledger (local state).
pub fn ledger_path(w: &World) -> PathBuf {
    w.state.join("pc").join("ledger.jsonl")
}

/// The job the ledger says is running for target `PC` (a start line and no
/// result line yet), with its pid (0 until the listener noted it); the
/// last started, when slots run several.
pub fn open_job(w: &World) -> Option<(String, i64)> {
    open_jobs(w).pop()
}

/// Every job the ledger says is running for target `PC`, in start order,
/// each with its pid (0 until the listener noted it).
pub fn open_jobs(w: &World) -> Vec<(String, i64)> {
    let text = std::fs::read_to_string(ledger_path(w)).unwrap_or_default();
    let mut open: Vec<(String, i64)> = Vec::new();
    for v in text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    {
        let Some(id) = v["jobId"].as_str() else {
            continue;
        };
        if v["run"] == true || v["kind"] == "start" {
            open.push((id.to_string(), 0));
        }
        if let Some(pid) = v["pid"].as_i64()
            && let Some(o) = open.iter_mut().find(|o| o.0 == id)
        {
            o.1 = pid;
        }
        if v.get("result").is_some() {
            open.retain(|o| o.0 != id);
        }
    }
    open
}

/// True when target `PC`'s ledger holds a result for `id` (recorded, maybe
/// not yet published).
pub fn result_recorded(w: &World, id: &str) -> bool {
    let text = std::fs::read_to_string(ledger_path(w)).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .any(|v| v["jobId"] == id && v.get("result").is_some())
}

/// Waits until target `PC`'s ledger shows `id` running with its pid noted,
/// and returns the pid.
pub fn wait_open_pid(w: &World, id: &str) -> i32 {
    let mut pid = 0;
    wait_until(Duration::from_secs(5), || {
        pid = match open_job(w) {
            Some((open, p)) if open == id => p as i32,
            _ => 0,
        };
        pid > 0
    });
    pid
}

/// Waits up to `limit` for a job to write its pid to `path`; returns it.
pub fn read_pid(path: &Path, limit: Duration) -> i32 {
    let mut pid = 0;
    wait_until(limit, || {
        pid = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        pid > 0
    });
    assert!(pid > 0, "no pid in {} after {limit:?}", path.display());
    pid
}

/// Every key the config file parser accepts, read from the refusal of an
/// unknown one (serde lists the fields of the struct it fills), so a key
/// added to the parser shows up here without being named twice.
pub fn config_file_keys() -> Vec<String> {
    let err = fleet_dispatch::front::config::parse_config("no_such_key = 1", Path::new("/c.toml"))
        .expect_err("an unknown key is refused")
        .message;
    let (_, list) = err
        .split_once("expected one of ")
        .unwrap_or_else(|| panic!("the refusal lists no keys: {err}"));
    let keys: Vec<String> = list
        .split(", ")
        .map(|k| k.trim().trim_matches('`').to_string())
        .collect();
    assert!(
        keys.iter().all(|k| !k.is_empty() && !k.contains(' ')),
        "{err}"
    );
    keys
}

/// Target `PC`'s heartbeat (`listener.json`) as a listener writes it
/// (src/places/heartbeat/mod.rs), for a test that plants one: the one place that
/// knows the document's fields, so a change to it (a signature, say) is
/// made here and nowhere else.
pub struct Beat {
    /// `listening`, `running` or `stopped`.
    pub state: &'static str,
    /// When it was written.
    pub heartbeat_at: String,
    /// The listener's host.
    pub host: String,
    /// Its instance id.
    pub instance: String,
    /// The id of its run (one per start).
    pub run: String,
    /// Its key's fingerprint; absent as from versions before it was written.
    pub key_fingerprint: Option<String>,
}

impl Beat {
    /// A beat in `state`, written `age_secs` ago by another instance on `OTHER`.
    pub fn aged(state: &'static str, age_secs: i64) -> Beat {
        Beat {
            state,
            heartbeat_at: ts_offset(-age_secs),
            host: "OTHER".to_string(),
            instance: "00112233aabbccdd".to_string(),
            run: "0a0b0c0d0e0f1011".to_string(),
            key_fingerprint: None,
        }
    }

    /// Its fields, unsigned, as a folder writer without the key could
    /// write them.
    pub fn fields(&self) -> Value {
        let mut beat = json!({
            "target": "PC", "pid": 4242, "state": self.state, "running": null,
            "startedAt": self.heartbeat_at, "heartbeatAt": self.heartbeat_at,
            "pollIntervalMs": 2000, "version": "0.1.0", "host": self.host,
            "instance": self.instance, "run": self.run,
        });
        if let Some(fp) = &self.key_fingerprint {
            beat["keyFingerprint"] = json!(fp);
        }
        beat
    }

    /// The document, signed with the fleet key as a listener signs it.
    pub fn doc(&self) -> Value {
        signed_beat(self.fields())
    }

    /// Writes it as `PC/listener.json`, dated as a listener would have
    /// written it: the file's modification time is its `heartbeatAt`
    /// (readers judge liveness by either). Returns the path.
    pub fn write(&self, w: &World) -> PathBuf {
        let path = w.pc().join("listener.json");
        std::fs::write(&path, self.doc().to_string()).unwrap();
        if let Some(at) = parse_ts(&self.heartbeat_at) {
            std::fs::File::options()
                .write(true)
                .open(&path)
                .and_then(|f| f.set_modified(at))
                .unwrap();
        }
        path
    }
}

/// `script` (util-linux) with the world's settings and an `xterm`
/// terminal, in a clean environment: the pseudo-terminal every terminal
/// test runs the binary under; the caller adds the arguments.
#[cfg(unix)]
pub fn script_command(w: &World) -> std::process::Command {
    let mut c = std::process::Command::new("script");
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &w.home)
        .env("FLEET_DISPATCH_ROOT", &w.root)
        .env("FLEET_DISPATCH_KEY_FILE", &w.key)
        .env("FLEET_DISPATCH_STATE_DIR", &w.state)
        .env("FLEET_DISPATCH_MACHINE", "PC")
        .env("TERM", "xterm");
    c
}

/// What `fleet-dispatch ARGS` printed under a pseudo-terminal (util-linux
/// `script`) with `env` added (`TERM` is `xterm` unless set there). A
/// missing `script` fails the test: the tests that call this are ignored
/// for it, and `.ci/run` installs it and runs them.
#[cfg(unix)]
pub fn on_a_terminal(w: &World, args: &str, env: &[(&str, &str)]) -> String {
    let mut c = script_command(w);
    c.envs(env.iter().copied());
    let line = format!("{} {args}", bin().display());
    let o = c
        .args(["-q", "-e", "-c", &line, "/dev/null"])
        .output()
        .unwrap_or_else(|e| panic!("util-linux `script` cannot run ({e}): install it"));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `c` run so that a mode-000 file is unreadable to it: as it is for a
/// user other than root; as root (which reads anything) through `setpriv`
/// without the two capabilities that let root read past permissions
/// (root with no `setpriv` fails the test: util-linux ships it).
#[cfg(unix)]
pub fn without_read_override(c: std::process::Command) -> std::process::Command {
    let uid = std::process::Command::new("id").arg("-u").output();
    let root = uid.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !root {
        return c;
    }
    let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("running as root, which reads a mode-000 file, and no setpriv (util-linux) to drop that");
    through(
        setpriv,
        &["--bounding-set=-dac_override,-dac_read_search"],
        &c,
    )
}

/// `c` started by `wrapper` (given `first`, then `c`'s program and
/// arguments), with `c`'s environment, folder and a null stdin.
#[cfg(unix)]
pub fn through(wrapper: &str, first: &[&str], c: &std::process::Command) -> std::process::Command {
    let mut w = std::process::Command::new(wrapper);
    w.args(first)
        .arg(c.get_program())
        .args(c.get_args())
        .env_clear();
    for (k, v) in c.get_envs() {
        if let Some(v) = v {
            w.env(k, v);
        }
    }
    if let Some(d) = c.get_current_dir() {
        w.current_dir(d);
    }
    w.stdin(Stdio::null());
    w
}

/// A tmpfs mounted over a folder for as long as it lives (Linux, as root).
#[cfg(target_os = "linux")]
pub struct Tmpfs {
    dir: std::path::PathBuf,
}

#[cfg(target_os = "linux")]
impl Tmpfs {
    /// Mounts one of `size`; fails the test where none can be mounted
    /// here (not root, or no `mount`): its tests are ignored for that.
    pub fn over(dir: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "no tmpfs can be mounted here (not root, or no mount)");
        Tmpfs {
            dir: dir.to_path_buf(),
        }
    }

    /// Fills it to the last byte.
    pub fn fill(&self) {
        self.fill_but(0);
    }

    /// Fills it until about `left` bytes are free.
    pub fn fill_but(&self, left: u64) {
        use std::io::Write;
        // SAFETY: statvfs on a path we own, into a zeroed struct.
        let free = unsafe {
            let mut st: libc::statvfs = std::mem::zeroed();
            let path = std::ffi::CString::new(self.dir.as_os_str().as_encoded_bytes()).unwrap();
            assert_eq!(libc::statvfs(path.as_ptr(), &mut st), 0);
            st.f_bavail as u64 * st.f_frsize as u64
        };
        let mut f = std::fs::File::create(self.dir.join("filler")).unwrap();
        let chunk = vec![0u8; 4096];
        let mut want = free.saturating_sub(left);
        while want > 0 && f.write_all(&chunk[..want.min(4096) as usize]).is_ok() {
            want = want.saturating_sub(4096);
        }
        if left == 0 {
            while f.write_all(&chunk).is_ok() {}
            let _ = f.write_all(&[0]);
        }
    }

    pub fn free(&self) {
        std::fs::remove_file(self.dir.join("filler")).unwrap();
    }
}

#[cfg(target_os = "linux")]
impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.dir)
            .status();
    }
}

/// Makes a FIFO at `p`, mode 600 (a key file's mode, so only its kind is
/// wrong).
#[cfg(unix)]
pub fn make_fifo(p: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(rc, 0, "mkfifo {}", p.display());
}

/// Starts `c` with at most `n` open files (`RLIMIT_NOFILE`, soft and hard),
/// for that process alone: launchd's default soft limit is 256.
#[cfg(unix)]
pub fn limit_open_files(c: &mut std::process::Command, n: u64) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit is async-signal-safe and touches only the child.
    unsafe {
        c.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: n as libc::rlim_t,
                rlim_max: n as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        })
    }
}

/// The CPU time `pid` used so far (user and system), from `/proc`.
#[cfg(target_os = "linux")]
pub fn cpu_seconds(pid: i32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    // SAFETY: sysconf has no preconditions.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

/// The `after` list signed into queued job `id`'s spec, as `TARGET:ID`
/// texts.
pub fn signed_after(w: &World, id: &str) -> Vec<String> {
    let job: Value = serde_json::from_str(&std::fs::read_to_string(w.inbox(id)).unwrap()).unwrap();
    let spec: Value = serde_json::from_str(job["spec"].as_str().unwrap()).unwrap();
    spec["after"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            format!(
                "{}:{}",
                a["target"].as_str().unwrap(),
                a["jobId"].as_str().unwrap()
            )
        })
        .collect()
}
