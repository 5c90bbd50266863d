//! The job the integration tests run, on every platform: a chain of small
//! steps instead of an `sh -c` script, so one suite runs on Linux and, under
//! Wine, on Windows.
//!
//! ```sh
//! jobkit pid "$F" append "$LOG" x sleep 2 exit 3
//! jobkit ignore-stop spawn [ sleep 30 ] last-pid sleep 30
//! ```
//!
//! It is an example, not a `[[bin]]`: `cargo test` builds examples for the
//! host and for `--target`, next to the test binary, and `cargo install`
//! never installs one. `tests/util/mod.rs` (`jobkit()`) finds it there.
//!
//! Steps run left to right; the program exits 0 after the last one, and
//! 101 at the first step that fails. Each `$NAME` in an argument is
//! replaced by the environment variable `NAME` (so a job gets its paths
//! with `--env`, as the `sh` scripts did), and `$$` by `$`. Steps:
//!
//! | step | does |
//! | --- | --- |
//! | `out TEXT`, `err TEXT` | a line on stdout, on stderr |
//! | `env NAME` | the variable's value on stdout (empty when unset) |
//! | `env-all` | every variable as `NAME=VALUE` lines on stdout |
//! | `cwd LABEL` | LABEL and the working directory, resolved (`pwd -P`), on stdout |
//! | `cat` | copies stdin to stdout until end of file |
//! | `fill BYTES TEXT` | BYTES bytes of `TEXT` lines on stdout, the last one cut (`yes TEXT \| head -c BYTES`) |
//! | `sleep SECS` | sleeps (fractions allowed) |
//! | `exit CODE` | exits with CODE at once |
//! | `pid FILE` | writes its own pid to FILE |
//! | `append FILE TEXT` | appends the line TEXT to FILE |
//! | `write FILE TEXT` | replaces FILE with the line TEXT |
//! | `touch FILE` | creates FILE (empty) if it is missing |
//! | `move FROM TO` | renames FROM to TO |
//! | `wait-for FILE` | polls every 50 ms until FILE exists |
//! | `ignore-stop` | the stop signals no longer end it (Unix: SIGTERM and SIGINT ignored; Windows: CTRL_BREAK and CTRL_C handled and ignored) |
//! | `exit-on-stop CODE` | a stop signal makes it exit with CODE |
//! | `spawn [ STEPS ]` | starts `jobkit STEPS` in the background, in the job's group |
//! | `escape [ STEPS ]` | the same, but trying to leave the job's group: Unix `setsid`; Windows a detached process in a new process group, asking to break away from the Job Object (the listener's job forbids that, so it stays inside the Job Object, out of reach of CTRL_BREAK only) |
//! | `run-to FILE [ PROGRAM ARGS ]` | runs PROGRAM with its stdout in FILE; fails unless it exits 0 |
//! | `last-pid` | the pid of the last started child on stdout |
//!
//! Brackets nest: `escape [ spawn [ sleep 30 ] last-pid sleep 30 ]`.

use std::io::Write;
use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::Duration;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).map(expand).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("jobkit: {e}");
            ExitCode::from(101)
        }
    }
}

/// Each `$NAME` in a word → the variable's value; `$$` → `$`.
fn expand(word: String) -> String {
    let mut out = String::new();
    let mut rest = word.as_str();
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        rest = &rest[at + 1..];
        if let Some(after) = rest.strip_prefix('$') {
            out.push('$');
            rest = after;
            continue;
        }
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if len == 0 {
            out.push('$');
            continue;
        }
        let name = &rest[..len];
        out.push_str(&std::env::var(name).unwrap_or_else(|_| {
            eprintln!("jobkit: ${name} is not set");
            std::process::exit(101)
        }));
        rest = &rest[len..];
    }
    out.push_str(rest);
    out
}

fn run(args: &[String]) -> Result<(), String> {
    let mut last_child: Option<u32> = None;
    let mut i = 0;
    let next = |i: &mut usize, what: &str| -> Result<String, String> {
        let v = args
            .get(*i)
            .cloned()
            .ok_or_else(|| format!("{what} needs an argument"))?;
        *i += 1;
        Ok(v)
    };
    while i < args.len() {
        let step = args[i].clone();
        i += 1;
        match step.as_str() {
            "out" => println!("{}", next(&mut i, "out")?),
            "err" => eprintln!("{}", next(&mut i, "err")?),
            "env" => println!(
                "{}",
                std::env::var(next(&mut i, "env")?).unwrap_or_default()
            ),
            "env-all" => {
                for (k, v) in std::env::vars_os() {
                    println!("{}={}", k.to_string_lossy(), v.to_string_lossy());
                }
            }
            "cwd" => {
                let label = next(&mut i, "cwd")?;
                let dir = std::env::current_dir().and_then(std::fs::canonicalize);
                println!("{label}{}", dir.map_err(|e| format!("cwd: {e}"))?.display());
            }
            "cat" => {
                std::io::copy(&mut std::io::stdin().lock(), &mut std::io::stdout().lock())
                    .map_err(|e| format!("cat: {e}"))?;
            }
            "fill" => {
                let n = next(&mut i, "fill")?;
                let n: usize = n.parse().map_err(|_| format!("fill: bad size {n:?}"))?;
                let line = format!("{}\n", next(&mut i, "fill")?);
                let mut out = std::io::BufWriter::new(std::io::stdout().lock());
                let mut left = n;
                while left > 0 {
                    let part = &line.as_bytes()[..line.len().min(left)];
                    out.write_all(part).map_err(|e| format!("fill: {e}"))?;
                    left -= part.len();
                }
                out.flush().map_err(|e| format!("fill: {e}"))?;
            }
            "sleep" => {
                let s = next(&mut i, "sleep")?;
                let secs: f64 = s.parse().map_err(|_| format!("sleep: bad seconds {s:?}"))?;
                std::io::stdout().flush().ok();
                std::thread::sleep(Duration::from_secs_f64(secs));
            }
            "exit" => {
                let s = next(&mut i, "exit")?;
                let code: i32 = s.parse().map_err(|_| format!("exit: bad code {s:?}"))?;
                std::io::stdout().flush().ok();
                std::process::exit(code);
            }
            "pid" => {
                let f = next(&mut i, "pid")?;
                std::fs::write(&f, format!("{}\n", std::process::id()))
                    .map_err(|e| format!("pid: {f}: {e}"))?;
            }
            "append" => {
                let f = next(&mut i, "append")?;
                let text = next(&mut i, "append")?;
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&f)
                    // One write: lines appended by jobs running at once
                    // never interleave.
                    .and_then(|mut file| file.write_all(format!("{text}\n").as_bytes()))
                    .map_err(|e| format!("append: {f}: {e}"))?;
            }
            "write" => {
                let f = next(&mut i, "write")?;
                let text = next(&mut i, "write")?;
                std::fs::write(&f, format!("{text}\n")).map_err(|e| format!("write: {f}: {e}"))?;
            }
            "touch" => {
                let f = next(&mut i, "touch")?;
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&f)
                    .map_err(|e| format!("touch: {f}: {e}"))?;
            }
            "move" => {
                let from = next(&mut i, "move")?;
                let to = next(&mut i, "move")?;
                std::fs::rename(&from, &to).map_err(|e| format!("move: {from} -> {to}: {e}"))?;
            }
            "wait-for" => {
                let f = next(&mut i, "wait-for")?;
                while !Path::new(&f).exists() {
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
            "ignore-stop" => stop::ignore(),
            "exit-on-stop" => {
                let s = next(&mut i, "exit-on-stop")?;
                stop::exit_with(
                    s.parse()
                        .map_err(|_| format!("exit-on-stop: bad code {s:?}"))?,
                );
            }
            "spawn" | "escape" => {
                let inner = bracketed(args, &mut i)?;
                let mut c = Command::new(std::env::current_exe().map_err(|e| e.to_string())?);
                c.args(inner);
                if step == "escape" {
                    escape::prepare(&mut c);
                }
                let child = escape::spawn(&mut c, step == "escape")
                    .map_err(|e| format!("{step}: cannot start: {e}"))?;
                last_child = Some(child.id());
                // Not waited for: the child runs on its own, as `cmd &`.
                std::mem::forget(child);
            }
            "run-to" => {
                let f = next(&mut i, "run-to")?;
                let argv = bracketed(args, &mut i)?;
                let (program, rest) = argv.split_first().ok_or("run-to: [ ] is empty")?;
                let file = std::fs::File::create(&f).map_err(|e| format!("run-to: {f}: {e}"))?;
                let status = Command::new(program)
                    .args(rest)
                    .stdout(file)
                    .status()
                    .map_err(|e| format!("run-to: cannot start {program}: {e}"))?;
                if !status.success() {
                    return Err(format!("run-to: {program} ended with {status}"));
                }
            }
            "last-pid" => match last_child {
                Some(pid) => println!("{pid}"),
                None => return Err("last-pid: no child was started".into()),
            },
            other => return Err(format!("unknown step {other:?}")),
        }
        std::io::stdout().flush().ok();
    }
    Ok(())
}

/// The words between `[` at `*i` and its matching `]`; `*i` moves past it.
fn bracketed<'a>(args: &'a [String], i: &mut usize) -> Result<&'a [String], String> {
    if args.get(*i).map(String::as_str) != Some("[") {
        return Err("spawn and escape take [ STEPS ]".into());
    }
    let start = *i + 1;
    let mut depth = 0;
    for (j, w) in args.iter().enumerate().skip(*i) {
        match w.as_str() {
            "[" => depth += 1,
            "]" => {
                depth -= 1;
                if depth == 0 {
                    *i = j + 1;
                    return Ok(&args[start..j]);
                }
            }
            _ => {}
        }
    }
    Err("unbalanced [".into())
}

#[cfg(unix)]
mod stop {
    use std::sync::atomic::{AtomicI32, Ordering};

    static CODE: AtomicI32 = AtomicI32::new(0);

    extern "C" fn on_term(_: libc::c_int) {
        // SAFETY: `_exit` is async-signal-safe.
        unsafe { libc::_exit(CODE.load(Ordering::SeqCst)) }
    }

    pub fn ignore() {
        // SAFETY: ignoring a signal touches no memory of ours.
        unsafe {
            libc::signal(libc::SIGTERM, libc::SIG_IGN);
            libc::signal(libc::SIGINT, libc::SIG_IGN);
        }
    }

    pub fn exit_with(code: i32) {
        CODE.store(code, Ordering::SeqCst);
        // SAFETY: the handler only calls `_exit`, which is async-signal-safe.
        unsafe {
            libc::signal(libc::SIGTERM, on_term as *const () as libc::sighandler_t);
            libc::signal(libc::SIGINT, on_term as *const () as libc::sighandler_t);
        }
    }
}

#[cfg(windows)]
mod stop {
    use std::sync::atomic::{AtomicI32, Ordering};
    use windows_sys::Win32::System::Console::SetConsoleCtrlHandler;
    use windows_sys::core::BOOL;

    /// The exit code for a stop; `i32::MIN` while stops are ignored.
    static CODE: AtomicI32 = AtomicI32::new(i32::MIN);

    unsafe extern "system" fn on_ctrl(_event: u32) -> BOOL {
        let code = CODE.load(Ordering::SeqCst);
        if code != i32::MIN {
            std::process::exit(code);
        }
        1 // handled: the default handler (which exits) does not run
    }

    pub fn ignore() {
        // SAFETY: registers a handler that lives as long as the program.
        unsafe {
            SetConsoleCtrlHandler(Some(on_ctrl), 1);
        }
    }

    pub fn exit_with(code: i32) {
        CODE.store(code, Ordering::SeqCst);
        ignore();
    }
}

#[cfg(unix)]
mod escape {
    use std::os::unix::process::CommandExt;
    use std::process::{Child, Command};

    pub fn prepare(c: &mut Command) {
        // SAFETY: `setsid` is async-signal-safe and touches no memory.
        unsafe {
            c.pre_exec(|| {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }

    pub fn spawn(c: &mut Command, _escape: bool) -> std::io::Result<Child> {
        c.spawn()
    }
}

#[cfg(windows)]
mod escape {
    use std::os::windows::process::CommandExt;
    use std::process::{Child, Command};
    use windows_sys::Win32::System::Threading::{
        CREATE_BREAKAWAY_FROM_JOB, CREATE_NEW_PROCESS_GROUP, DETACHED_PROCESS,
    };

    pub fn prepare(_c: &mut Command) {}

    /// An escaping child first asks to break away from the Job Object; a
    /// job that forbids it (the listener's) refuses with access denied, and
    /// the child then starts detached, in a new process group, inside it.
    pub fn spawn(c: &mut Command, escape: bool) -> std::io::Result<Child> {
        if !escape {
            return c.spawn();
        }
        let detached = DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP;
        c.creation_flags(detached | CREATE_BREAKAWAY_FROM_JOB);
        match c.spawn() {
            Ok(child) => Ok(child),
            Err(e) => {
                eprintln!("jobkit: breakaway refused ({e}); starting detached");
                c.creation_flags(detached);
                c.spawn()
            }
        }
    }
}
