//! The one waiting loop behind `enqueue --wait`, `result --wait` and
//! `cancel --wait`: poll the folder until a verified result appears or the
//! wait times out, showing a one-line progress indicator on a terminal.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use crate::clock;
use crate::doc::Outcome;
use crate::error::{Error, Result};
use crate::key::Key;
use crate::layout::TargetDirs;
use crate::names::JobId;
use crate::observe::{self, Observed};

/// How often the folder is looked at while waiting.
const POLL: Duration = Duration::from_millis(200);

/// How a wait ended.
pub enum Waited {
    /// The verified result.
    Done(Box<Outcome>),
    /// Still not finished when the wait ran out; the last state seen.
    TimedOut(Observed),
}

/// Waits for `id`'s result. A result that does not verify is `FORBIDDEN`:
/// it is never reported as genuine.
pub fn for_result(
    dirs: &TargetDirs,
    id: &JobId,
    key: &Key,
    limit: Option<Duration>,
    quiet: bool,
) -> Result<Waited> {
    let start = Instant::now();
    let show = !quiet && std::io::stderr().is_terminal();
    loop {
        let seen = observe::job(dirs, id, key);
        match seen {
            Observed::Done(o) => {
                if show {
                    eprint!("\r\x1b[2K");
                }
                return Ok(Waited::Done(o));
            }
            Observed::ForgedResult(why) => {
                if show {
                    eprint!("\r\x1b[2K");
                }
                return Err(Error::forbidden(format!(
                    "result for {id} does not verify ({why}); it is not shown"
                )));
            }
            _ => {}
        }
        if show {
            eprint!(
                "\r\x1b[2K{id}: {} {}",
                seen.word(),
                clock::human(start.elapsed())
            );
            let _ = std::io::stderr().flush();
        }
        if limit.is_some_and(|l| start.elapsed() >= l) {
            if show {
                eprintln!();
            }
            return Ok(Waited::TimedOut(seen));
        }
        std::thread::sleep(POLL);
    }
}

/// The error printed when a wait ran out.
pub fn timed_out_message(id: &JobId, seen: &Observed, limit: Duration) -> String {
    format!(
        "gave up waiting for {id} after {}: it is still {}",
        clock::format_duration(limit),
        seen.word()
    )
}
