//! A job's captured output, `logs/<jobId>.stdout.log` and `.stderr.log`
//! (docs/protocol.md §3.1): read whole, or followed as it grows while the
//! job runs. The listener writes the logs (capped at 10 MiB a stream, with
//! a line saying so); this side only reads, through the held `logs/`
//! folder, never through a link.

use std::io::Write;

use crate::layout::{self, Place, TargetDirs};
use crate::names::JobId;

/// Which of a job's streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Streams {
    /// Standard output only.
    Stdout,
    /// Standard error only.
    Stderr,
    /// Both, each to its own stream here.
    Both,
}

/// The most read from a log at one go.
const CHUNK: u64 = 1 << 20;

/// Where a job's output has been read up to.
pub struct Follower {
    dirs: TargetDirs,
    id: JobId,
    streams: Streams,
    /// Bytes already copied, stdout then stderr.
    offsets: [u64; 2],
}

impl Follower {
    /// Reads `id`'s logs on `dirs`' target from their start.
    pub fn new(dirs: &TargetDirs, id: &JobId, streams: Streams) -> Follower {
        Follower {
            dirs: dirs.clone(),
            id: id.clone(),
            streams,
            offsets: [0, 0],
        }
    }

    /// True when a log of the chosen streams exists.
    pub fn any(&self) -> bool {
        let Some(logs) = self.dirs.open(Place::Logs).ok().flatten() else {
            return false;
        };
        self.wanted()
            .iter()
            .any(|(_, word)| logs.exists(&layout::log_name(&self.id, word)))
    }

    fn wanted(&self) -> Vec<(usize, &'static str)> {
        match self.streams {
            Streams::Stdout => vec![(0, "stdout")],
            Streams::Stderr => vec![(1, "stderr")],
            Streams::Both => vec![(0, "stdout"), (1, "stderr")],
        }
    }

    /// Copies what the logs gained since the last call: stdout's to `out`,
    /// stderr's to `err`. Missing logs are simply not there yet.
    pub fn pump(&mut self, out: &mut dyn Write, err: &mut dyn Write) -> std::io::Result<()> {
        let Some(logs) = self.dirs.open(Place::Logs).ok().flatten() else {
            return Ok(());
        };
        for (i, word) in self.wanted() {
            let name = layout::log_name(&self.id, word);
            loop {
                let chunk = match logs.read_from(&name, self.offsets[i], CHUNK) {
                    Ok(c) => c,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                    Err(e) => return Err(e),
                };
                if chunk.is_empty() {
                    break;
                }
                self.offsets[i] += chunk.len() as u64;
                let sink: &mut dyn Write = if i == 0 { &mut *out } else { &mut *err };
                sink.write_all(&chunk)?;
                sink.flush()?;
            }
        }
        Ok(())
    }
}
