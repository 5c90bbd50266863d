//! A job's captured output, `logs/<jobId>.stdout.log` and `.stderr.log`
//! (docs/protocol.md §3.1): read whole, or followed as it grows while the
//! job runs. The listener writes the logs (capped at [`LOG_CAP`] a stream,
//! with [`truncation_line`] saying so); this side only reads, through the
//! held `logs/` folder, never through a link.
//!
//! A log is unsigned, and a folder writer can put a file under its name
//! before the job first writes (the listener then removes it and makes its
//! own). So a follower shows nothing while the job is queued; when the file
//! under the name is replaced it says that what it showed was not the
//! job's output and shows the new file from its start; and at the end it
//! holds what it showed against the job's verified result ([`judge`]).
//! A finished job's logs are judged before they are shown.

use std::collections::VecDeque;
use std::io::Write;

use crate::base::names::JobId;
use crate::places::observe::Observed;
use crate::protocol::doc::Outcome;
use crate::protocol::doc::report::TAIL_BYTES;
use crate::store::fsops::FileId;
use crate::store::layout::{self, Place, TargetDirs};

/// Bytes of each stream kept in the log file; the rest is counted, not kept.
pub const LOG_CAP: u64 = 10 * 1024 * 1024;

/// The line a log ends with when its stream went past [`LOG_CAP`].
pub fn truncation_line() -> String {
    format!("\n[fleet-dispatch: output truncated at {LOG_CAP} bytes]\n")
}

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

/// How one stream's log compares with what the job's verified result says
/// of that stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It holds what the job wrote (or the result cannot tell: an older
    /// listener's).
    Matches,
    /// It holds less: it may still be arriving (sync lags), so nothing can
    /// be said of it yet. The bytes it holds and those it should.
    Short(u64, u64),
    /// It is not the job's output, and why.
    NotTheJobs(String),
}

/// What a result says its job wrote to a stream of which it gives `bytes`
/// and `tail`: `None` when it cannot tell (a result recovered after a
/// crash, which counted nothing though the job may have written; an older
/// listener's, which gave a tail without counts). A result that counted
/// nothing and never ran the job (cancelled before its start, a failed
/// dependency) says it wrote none.
pub fn wrote(bytes: Option<u64>, tail: Option<&str>, recovered: bool) -> Option<u64> {
    match bytes {
        Some(n) => Some(n),
        None if recovered || tail.is_some_and(|t| !t.is_empty()) => None,
        None => Some(0),
    }
}

/// Judges a log of `len` bytes ending with `end` (`None`: no log) against
/// what a verified result says the job wrote to that stream: `wrote` bytes
/// in all ([`wrote`]; `None`: it cannot tell), of which the log holds
/// `logged` when writing it failed, ending with `tail`.
pub fn judge(
    wrote: Option<u64>,
    logged: Option<u64>,
    tail: Option<&str>,
    len: Option<u64>,
    end: &[u8],
) -> Verdict {
    let tail = tail.unwrap_or_default();
    let Some(wrote) = wrote else {
        return Verdict::Matches;
    };
    // The lengths the listener's log can have, and whether it holds the
    // whole stream (then its end is the result's tail).
    let (lengths, whole) = match logged {
        Some(k) => (vec![k], false),
        None if wrote > LOG_CAP => (
            vec![LOG_CAP, LOG_CAP + truncation_line().len() as u64],
            false,
        ),
        None => (vec![wrote], true),
    };
    let len = len.unwrap_or(0);
    let least = lengths.iter().copied().min().unwrap_or(0);
    let most = lengths.iter().copied().max().unwrap_or(0);
    if len > most {
        return Verdict::NotTheJobs(format!("it holds {len} bytes; the job wrote {wrote}"));
    }
    if len < least {
        return Verdict::Short(len, least);
    }
    if !lengths.contains(&len) {
        return Verdict::NotTheJobs(format!(
            "it holds {len} bytes; the job's log holds {least} or {most}"
        ));
    }
    let n = end.len().min(TAIL_BYTES).min(len as usize);
    if whole && String::from_utf8_lossy(&end[end.len() - n..]) != tail {
        return Verdict::NotTheJobs("its end is not the end of the job's output".to_string());
    }
    Verdict::Matches
}

/// [`judge`] of a log of stdout (`stdout`) or stderr of `len` bytes
/// (`None`: no log) ending with `end`, against `o`, its job's verified
/// result.
pub fn judge_stream(o: &Outcome, stdout: bool, len: Option<u64>, end: &[u8]) -> Verdict {
    let d = o.detail();
    let (bytes, logged, tail) = if stdout {
        (d.stdout_bytes, d.stdout_log_bytes, d.stdout_tail.as_deref())
    } else {
        (d.stderr_bytes, d.stderr_log_bytes, d.stderr_tail.as_deref())
    };
    let wrote = wrote(bytes, tail, d.recovered == Some(true));
    judge(wrote, logged, tail, len, end)
}

/// One stream as followed.
#[derive(Default)]
struct Stream {
    /// Bytes of the current file copied.
    offset: u64,
    /// The file they came from, where that can be told.
    file: Option<FileId>,
    /// The last bytes copied from the current file (for [`judge`]).
    end: VecDeque<u8>,
    /// Bytes copied but not yet written as JSON: a character cut between
    /// two reads waits for its end.
    pending: Vec<u8>,
}

/// Where a job's output has been read up to.
pub struct Follower {
    dirs: TargetDirs,
    id: JobId,
    streams: Streams,
    /// Stdout, then stderr.
    each: [Stream; 2],
    /// The job has been seen running or ended: its logs may be its own.
    started: bool,
    /// [`Self::saw`] was called: a follower, not a one-off read.
    looked: bool,
    /// What to say on this side's stderr (a file replaced while followed).
    notes: Vec<String>,
    /// Write JSON lines ([`Self::json_lines`]) rather than the bytes.
    json: bool,
}

impl Follower {
    /// Reads `id`'s logs on `dirs`' target from their start.
    pub fn new(dirs: &TargetDirs, id: &JobId, streams: Streams) -> Follower {
        Follower {
            dirs: dirs.clone(),
            id: id.clone(),
            streams,
            each: Default::default(),
            started: true,
            looked: false,
            notes: Vec::new(),
            json: false,
        }
    }

    /// This follower writing JSON lines (`--json`): each piece of output as
    /// `{"stream": "stdout", "text": …}` on the first sink, whichever its
    /// stream, the text as UTF-8 (a byte that is not is replaced with
    /// U+FFFD). [`Self::end_json`] writes what is left.
    pub fn json_lines(mut self) -> Follower {
        self.json = true;
        self
    }

    /// Writes, as JSON lines, what [`Self::pump`] held back: the start of a
    /// character whose end never came.
    pub fn end_json(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        for (i, word) in self.wanted() {
            json_piece(word, &mut self.each[i].pending, out, true)?;
        }
        Ok(())
    }

    /// Notes the job's state, looked at just before a [`Self::pump`]: no
    /// file under a log's name is the job's output while it is queued.
    pub fn saw(&mut self, seen: &Observed) {
        let early = matches!(seen, Observed::Queued | Observed::NotSeen);
        // Once started, always: a look that flaps back (sync) hides nothing.
        self.started = !early || (self.looked && self.started);
        self.looked = true;
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

    /// What to say on this side's stderr since the last call.
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
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
                let s = &mut self.each[i];
                let piece = match logs.read_from(&name, s.offset, CHUNK) {
                    Ok(c) => c,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                    Err(e) => return Err(e),
                };
                if !self.started {
                    break;
                }
                let other = piece.file.is_some() && s.file.is_some() && piece.file != s.file;
                if other || piece.len < s.offset {
                    // Another file under the name: the listener's, made
                    // over one put there before; show it from its start.
                    if s.offset > 0 {
                        self.notes.push(format!(
                            "warning: {} was replaced while it was shown: the {} bytes shown before were not {}'s output; its own follow from its start",
                            logs.shown(&name).display(),
                            s.offset,
                            self.id
                        ));
                    }
                    *s = Stream::default();
                    continue;
                }
                s.file = piece.file;
                if piece.bytes.is_empty() {
                    break;
                }
                s.offset += piece.bytes.len() as u64;
                s.end.extend(&piece.bytes);
                let excess = s.end.len().saturating_sub(TAIL_BYTES);
                s.end.drain(..excess);
                if self.json {
                    s.pending.extend_from_slice(&piece.bytes);
                    json_piece(word, &mut s.pending, out, false)?;
                    continue;
                }
                let sink: &mut dyn Write = if i == 0 { &mut *out } else { &mut *err };
                sink.write_all(&piece.bytes)?;
                sink.flush()?;
            }
        }
        Ok(())
    }

    /// What was shown of each chosen stream, judged against `o`, the job's
    /// verified result ([`judge`]): the log's file as shown, and the verdict.
    pub fn judged(&self, o: &Outcome) -> Vec<(String, Verdict)> {
        self.wanted()
            .into_iter()
            .map(|(i, word)| {
                let s = &self.each[i];
                let end: Vec<u8> = s.end.iter().copied().collect();
                let shown = (s.offset > 0).then_some(s.offset);
                let file = self.dirs.log_file(&self.id, word).display().to_string();
                (file, judge_stream(o, i == 0, shown, &end))
            })
            .collect()
    }
}

/// Writes the text at the start of `pending` as one JSON line of `stream`,
/// keeping back the start of a character cut short at its end unless
/// `all`; control characters are JSON escapes, so none reaches a terminal.
pub fn json_piece(
    stream: &str,
    pending: &mut Vec<u8>,
    out: &mut dyn Write,
    all: bool,
) -> std::io::Result<()> {
    let upto = match std::str::from_utf8(pending) {
        Err(e) if !all && e.error_len().is_none() => e.valid_up_to(),
        _ => pending.len(),
    };
    if upto == 0 {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&pending[..upto]).into_owned();
    let line = crate::base::out::json_text(&serde_json::json!({"stream": stream, "text": text}));
    pending.drain(..upto);
    writeln!(out, "{line}")?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_is_judged_by_the_length_and_end_the_result_gives() {
        let m = Verdict::Matches;
        assert_eq!(judge(Some(0), None, Some(""), None, b""), m);
        assert_eq!(judge(Some(3), None, Some("ok\n"), Some(3), b"ok\n"), m);
        assert!(matches!(
            judge(Some(3), None, Some("ok\n"), Some(3), b"no\n"),
            Verdict::NotTheJobs(_)
        ));
        // Nothing written, yet a file there: someone else's.
        assert!(matches!(
            judge(Some(0), None, Some(""), Some(7), b"planted"),
            Verdict::NotTheJobs(_)
        ));
        assert_eq!(
            judge(Some(9), None, Some("123456789"), Some(4), b"1234"),
            Verdict::Short(4, 9)
        );
        // A log cut at the cap ends with the line saying so, not the tail.
        let cut = LOG_CAP + truncation_line().len() as u64;
        assert_eq!(
            judge(Some(LOG_CAP + 5), None, Some("x"), Some(cut), b"."),
            m
        );
        assert_eq!(judge(Some(10), Some(4), Some("x"), Some(4), b"."), m);
        // A result that cannot tell: recovered after a crash, or an older
        // listener's with a tail but no counts.
        assert_eq!(judge(None, None, Some("x"), Some(99), b"."), m);
        assert_eq!(wrote(None, None, true), None);
        assert_eq!(wrote(None, Some("x"), false), None);
        assert_eq!(wrote(None, None, false), Some(0));
        assert_eq!(wrote(Some(3), None, true), Some(3));
    }

    #[test]
    fn a_json_piece_keeps_a_cut_character_for_the_next_and_escapes_controls() {
        let mut out = Vec::new();
        let mut pending = "é\u{9b}x".as_bytes().to_vec();
        pending.extend_from_slice(&"€".as_bytes()[..2]);
        json_piece("stdout", &mut pending, &mut out, false).unwrap();
        assert_eq!(pending, "€".as_bytes()[..2]);
        pending.extend_from_slice(&"€".as_bytes()[2..]);
        json_piece("stdout", &mut pending, &mut out, false).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains('\u{9b}'), "{text}");
        let texts: Vec<String> = text
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["text"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(texts, ["é\u{9b}x", "€"]);
    }
}
