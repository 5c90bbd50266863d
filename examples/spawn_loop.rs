//! The limits for the benchmark's drain rows (`bench/run`): spawn a program N
//! times, one after the other, each waited for before the next.
//!
//! ```sh
//! cargo run --release --example spawn_loop -- 1000 true
//! cargo run --release --example spawn_loop -- --durable /tmp/floor 1000 true
//! cargo run --release --example spawn_loop -- --durable-in-place /tmp/floor 1000 true
//! cargo run --release --example spawn_loop -- --parallel 4 1000 sleep 0.01
//! ```
//!
//! With `--parallel P` it keeps P runs going at once (P threads, each
//! spawning and waiting for the next run as soon as its last one ended):
//! the limit of the slots row (`listen --slots P`).
//!
//! Plain, it is the physical limit: nothing around the spawns. With
//! `--durable DIR` it also does, per run, the least disk work a lane that
//! never runs a job twice, even across a power loss, needs: one line
//! appended to a log and flushed (`fdatasync`) before each spawn, carrying
//! that run's start and the previous run's result. That is the floor a
//! durable lane cannot go under on this disk. With `--durable-in-place DIR`
//! the line is written over zeroes the log already has (64 KiB of them
//! written ahead at a time), as the listener's ledger does: a flush then
//! writes no new file length, which makes it cheaper on most file systems.

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

fn usage() -> ExitCode {
    eprintln!(
        "usage: spawn_loop [--durable DIR | --durable-in-place DIR | --parallel P] N PROGRAM [ARG]..."
    );
    ExitCode::from(2)
}

/// The durable bookkeeping of one lane, reduced to its one flush per run.
struct Durable {
    log: File,
    last: Option<(u64, i32)>,
    /// Written in place: where the next line goes, and where the zeroes
    /// written ahead end.
    in_place: Option<(u64, u64)>,
}

/// Zeroes written ahead of the lines at a time, in place.
const AHEAD: u64 = 64 << 10;

impl Durable {
    fn open(dir: &Path, in_place: bool) -> std::io::Result<Durable> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("log");
        let log = if in_place {
            let _ = std::fs::remove_file(&path);
            OpenOptions::new().write(true).create_new(true).open(path)?
        } else {
            OpenOptions::new().append(true).create(true).open(path)?
        };
        Ok(Durable {
            log,
            last: None,
            in_place: in_place.then_some((0, 0)),
        })
    }

    /// "Run i is starting" (with the previous run's result), on disk before
    /// the spawn.
    fn started(&mut self, i: u64) -> std::io::Result<()> {
        let mut line = String::new();
        if let Some((run, code)) = self.last.take() {
            line.push_str(&format!("{{\"run\":{run},\"exitCode\":{code}}}\n"));
        }
        line.push_str(&format!("{{\"start\":{i}}}\n"));
        if let Some((end, room)) = &mut self.in_place {
            let next = *end + line.len() as u64;
            if next > *room {
                self.log.seek(SeekFrom::Start(*room))?;
                self.log
                    .write_all(&vec![0; (next + AHEAD - *room) as usize])?;
                self.log.seek(SeekFrom::Start(*end))?;
                *room = next + AHEAD;
            }
            *end = next;
        }
        self.log.write_all(line.as_bytes())?;
        self.log.sync_data()
    }

    /// The result, flushed with the next start.
    fn finished(&mut self, i: u64, code: i32) {
        self.last = Some((i, code));
    }
}

/// Runs `program` `n` times from `parallel` threads at once; false at the
/// first run that fails (the others finish their current run).
fn run_parallel(parallel: u64, n: u64, program: &str, rest: &[String]) -> bool {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let next = AtomicU64::new(0);
    let failed = AtomicBool::new(false);
    std::thread::scope(|s| {
        for _ in 0..parallel {
            s.spawn(|| {
                while !failed.load(Ordering::Relaxed) && next.fetch_add(1, Ordering::Relaxed) < n {
                    let status = Command::new(program)
                        .args(rest)
                        .stdin(Stdio::null())
                        .status();
                    if !status.as_ref().is_ok_and(|s| s.success()) {
                        eprintln!("spawn_loop: a run of {program:?} failed: {status:?}");
                        failed.store(true, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    !failed.load(Ordering::Relaxed)
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1).peekable();
    let mut durable = None;
    if args.peek().map(String::as_str) == Some("--parallel") {
        args.next();
        let Some(parallel) = args.next().and_then(|p| p.parse::<u64>().ok()) else {
            return usage();
        };
        let (Some(n), Some(program)) = (args.next().and_then(|n| n.parse().ok()), args.next())
        else {
            return usage();
        };
        let rest: Vec<String> = args.collect();
        return if run_parallel(parallel.max(1), n, &program, &rest) {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    let in_place = args.peek().map(String::as_str) == Some("--durable-in-place");
    if in_place || args.peek().map(String::as_str) == Some("--durable") {
        args.next();
        let Some(dir) = args.next() else {
            return usage();
        };
        match Durable::open(Path::new(&dir), in_place) {
            Ok(d) => durable = Some(d),
            Err(e) => {
                eprintln!("spawn_loop: cannot prepare {dir}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let (Some(n), Some(program)) = (args.next(), args.next()) else {
        return usage();
    };
    let Ok(n) = n.parse::<u64>() else {
        eprintln!("spawn_loop: N must be a whole number, not {n:?}");
        return ExitCode::from(2);
    };
    let rest: Vec<String> = args.collect();
    for i in 0..n {
        if let Some(d) = &mut durable
            && let Err(e) = d.started(i)
        {
            eprintln!("spawn_loop: log: {e}");
            return ExitCode::FAILURE;
        }
        let status = Command::new(&program)
            .args(&rest)
            .stdin(Stdio::null())
            .status();
        let code = match status {
            Ok(s) if s.success() => 0,
            Ok(s) => {
                eprintln!("spawn_loop: run {i} of {program:?} ended with {s}");
                return ExitCode::FAILURE;
            }
            Err(e) => {
                eprintln!("spawn_loop: cannot start {program:?}: {e}");
                return ExitCode::FAILURE;
            }
        };
        if let Some(d) = &mut durable {
            d.finished(i, code);
        }
    }
    ExitCode::SUCCESS
}
