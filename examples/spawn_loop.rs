//! The limits for the benchmark's drain row (`bench/run`): spawn a program N
//! times, one after the other, each waited for before the next.
//!
//! ```sh
//! cargo run --release --example spawn_loop -- 1000 true
//! cargo run --release --example spawn_loop -- --durable /tmp/floor 1000 true
//! ```
//!
//! Plain, it is the physical limit: nothing around the spawns. With
//! `--durable DIR` it also does, per run, the least disk work the SPEC's
//! crash guarantees need and nothing else: a journal record flushed before the
//! spawn (at most once), a result published durably (temp file flushed,
//! renamed, directory flushed) after the wait, and a ledger line flushed. That
//! is the floor a durable lane cannot go under on this disk.

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

fn usage() -> ExitCode {
    eprintln!("usage: spawn_loop [--durable DIR] N PROGRAM [ARG]...");
    ExitCode::from(2)
}

/// The durable bookkeeping of one lane, reduced to its flushes.
struct Durable {
    journal: File,
    ledger: File,
    results: PathBuf,
}

impl Durable {
    fn open(dir: &Path) -> std::io::Result<Durable> {
        let results = dir.join("results");
        std::fs::create_dir_all(&results)?;
        let journal = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join("journal"))?;
        let ledger = OpenOptions::new()
            .append(true)
            .create(true)
            .open(dir.join("ledger"))?;
        Ok(Durable {
            journal,
            ledger,
            results,
        })
    }

    /// "Run i is starting", on disk before the spawn.
    fn started(&mut self, i: u64) -> std::io::Result<()> {
        let record = format!("{{\"run\":{i:>20}}}\n");
        self.journal.seek(SeekFrom::Start(0))?;
        self.journal.write_all(record.as_bytes())?;
        self.journal.sync_data()
    }

    /// The result (flushed, moved into place, its directory flushed), then
    /// the ledger line (flushed).
    fn finished(&mut self, i: u64, code: i32) -> std::io::Result<()> {
        let body = format!("{{\"run\":{i},\"exitCode\":{code}}}\n");
        let tmp = self.results.join(format!(".{i}.json.tmp"));
        let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(body.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, self.results.join(format!("{i}.json")))?;
        File::open(&self.results)?.sync_all()?;
        self.ledger.write_all(format!("{i}\n").as_bytes())?;
        self.ledger.sync_data()
    }
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1).peekable();
    let mut durable = None;
    if args.peek().map(String::as_str) == Some("--durable") {
        args.next();
        let Some(dir) = args.next() else {
            return usage();
        };
        match Durable::open(Path::new(&dir)) {
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
            eprintln!("spawn_loop: journal: {e}");
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
        if let Some(d) = &mut durable
            && let Err(e) = d.finished(i, code)
        {
            eprintln!("spawn_loop: result: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
