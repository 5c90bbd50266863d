//! `logs` on an object-store root. A job's output is kept as numbered
//! chunk objects, `PREFIX/TARGET/logs/<id>.<stream>.<n>` (`stdout` or
//! `stderr`, `n` = 0, 1, 2, … in decimal): chunk `n` holds the stream's
//! next bytes after chunks `0..n`, together what a folder's
//! `logs/<id>.<stream>.log` holds (the same cap and truncation line).
//! Each chunk is written once, create-only, and all of a job's chunks
//! before its result; a sealed job has none. So the logs are the chunks
//! read from 0 until one is missing; `--follow` looks again every
//! [`crate::requests::wait::POLL`] and ends once the result is there and
//! the next chunk is still missing after it was seen. The flags, output,
//! verdicts and exit statuses are those of `logs` on a folder
//! ([`crate::front::cmd`]'s `logs`): a finished job's logs are held against
//! its verified result ([`output::judge_stream`]) before they are shown.

use std::collections::VecDeque;
use std::io::Write;

use serde_json::{Value, json};

use super::Lane;
use crate::base::error::{Code, Error, Result};
use crate::base::exit;
use crate::base::names::JobId;
use crate::base::read::FileRead;
use crate::front::cli::{LogsArgs, StreamArg};
use crate::front::config::Context;
use crate::places::output::{self, LOG_CAP, Streams, Verdict};
use crate::protocol::doc::Outcome;
use crate::protocol::doc::report::TAIL_BYTES;
use crate::requests::lane::{self, Seen};
use crate::store::layout::Place;
use crate::store::port::Shelves;
use crate::store::port::bucket::BucketTarget;
use crate::view;

/// The two streams, in the order of a [`Chunks`]' slots.
const STREAMS: [&str; 2] = ["stdout", "stderr"];

/// The name of chunk `n` of `id`'s `stream`.
pub fn chunk_name(id: &JobId, stream: &str, n: u64) -> String {
    format!("{id}.{stream}.{n}")
}

/// The stream and number of `name` when it is a chunk of `id`'s logs
/// (`<id>.stdout.<n>`, `n` without leading zeros), else `None`.
pub fn chunk_of(id: &JobId, name: &str) -> Option<(&'static str, u64)> {
    let rest = name.strip_prefix(id.as_str())?.strip_prefix('.')?;
    let (stream, n) = rest.split_once('.')?;
    let stream = STREAMS.into_iter().find(|s| *s == stream)?;
    let canonical =
        !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && (n == "0" || !n.starts_with('0'));
    canonical.then(|| n.parse().ok().map(|n| (stream, n)))?
}

/// The most a chunk can hold: a whole log, the truncation line included.
fn chunk_limit() -> u64 {
    LOG_CAP + output::truncation_line().len() as u64
}

/// One stream as read so far.
#[derive(Default)]
struct Read {
    /// The next chunk to read.
    next: u64,
    /// Bytes read in all.
    len: u64,
    /// The last bytes read (for [`output::judge_stream`]).
    end: VecDeque<u8>,
    /// Bytes read but not yet written as JSON: a character cut between two
    /// chunks waits for its end.
    pending: Vec<u8>,
}

/// Where a job's chunks have been read up to, stream by stream.
struct Chunks<'a> {
    t: &'a BucketTarget,
    id: &'a JobId,
    streams: Streams,
    each: [Read; 2],
    /// Write JSON lines (`{"stream", "text"}`) rather than the bytes.
    json: bool,
}

impl<'a> Chunks<'a> {
    fn new(t: &'a BucketTarget, id: &'a JobId, streams: Streams, json: bool) -> Chunks<'a> {
        Chunks {
            t,
            id,
            streams,
            each: Default::default(),
            json,
        }
    }

    fn wanted(&self) -> Vec<usize> {
        match self.streams {
            Streams::Stdout => vec![0],
            Streams::Stderr => vec![1],
            Streams::Both => vec![0, 1],
        }
    }

    /// Where the first chunk of the first chosen stream is, as people read it.
    fn first_shown(&self) -> String {
        let i = self.wanted()[0];
        self.t
            .shelf(Place::Logs)
            .shown(&chunk_name(self.id, STREAMS[i], 0))
    }

    /// Whether any chunk of a chosen stream has been read.
    fn any(&self) -> bool {
        self.wanted().iter().any(|i| self.each[*i].next > 0)
    }

    /// Reads each chosen stream's chunks from the next one until one is
    /// missing, writing stdout's to `out` and stderr's to `err` (as JSON
    /// lines, both to `out`). A chunk that cannot be read is an error
    /// naming its key; one larger than a log can be is not the job's.
    fn pump(&mut self, out: &mut dyn Write, err: &mut dyn Write) -> Result<()> {
        let shelf = self.t.shelf(Place::Logs);
        for i in self.wanted() {
            loop {
                let s = &mut self.each[i];
                let name = chunk_name(self.id, STREAMS[i], s.next);
                let bytes = match shelf.read(&name, chunk_limit()) {
                    FileRead::Bytes(b) => b,
                    FileRead::Missing => break,
                    FileRead::TooLarge(n) => {
                        return Err(Error::forbidden(format!(
                            "{} holds {n} bytes, more than a log can: it is not {}'s output; it is not shown",
                            shelf.shown(&name),
                            self.id
                        )));
                    }
                    FileRead::Unreadable(why) => return Err(Error::new(Code::Internal, why)),
                    FileRead::NotAFile(what) => {
                        return Err(Error::new(
                            Code::Internal,
                            format!("{} is {what}", shelf.shown(&name)),
                        ));
                    }
                };
                s.next += 1;
                s.len += bytes.len() as u64;
                s.end.extend(&bytes);
                let excess = s.end.len().saturating_sub(TAIL_BYTES);
                s.end.drain(..excess);
                let written = if self.json {
                    s.pending.extend_from_slice(&bytes);
                    output::json_piece(STREAMS[i], &mut s.pending, out, false)
                } else {
                    let sink: &mut dyn Write = if i == 0 { &mut *out } else { &mut *err };
                    sink.write_all(&bytes).and_then(|()| sink.flush())
                };
                if let Err(e) = written {
                    return Err(write_error(self.id, &e));
                }
            }
        }
        Ok(())
    }

    /// Writes, as JSON lines, the start of a character whose end never came.
    fn end_json(&mut self, out: &mut dyn Write) {
        for i in self.wanted() {
            let _ = output::json_piece(STREAMS[i], &mut self.each[i].pending, out, true);
        }
    }

    /// What was read of each chosen stream, judged against `o`, the job's
    /// verified result: the first chunk's key, and the verdict.
    fn judged(&self, o: &Outcome) -> Vec<(String, Verdict)> {
        let shelf = self.t.shelf(Place::Logs);
        self.wanted()
            .into_iter()
            .map(|i| {
                let s = &self.each[i];
                let end: Vec<u8> = s.end.iter().copied().collect();
                let len = (s.len > 0).then_some(s.len);
                let shown = shelf.shown(&chunk_name(self.id, STREAMS[i], 0));
                (shown, output::judge_stream(o, i == 0, len, &end))
            })
            .collect()
    }
}

/// A write to this side's stdout or stderr that failed.
fn write_error(id: &JobId, e: &std::io::Error) -> Error {
    Error::new(Code::Internal, format!("writing the logs of {id}: {e}"))
}

/// How `logs` prints, as on a folder: the bytes; one document with
/// `--json`; JSON lines with `--json --follow`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    Bytes,
    Document,
    Lines,
}

/// Runs `logs` on the root `root`.
pub fn run(ctx: &Context, root: &str, args: &LogsArgs) -> Result<u8> {
    if crate::store::layout::is_target_list(&args.target) {
        return Err(Error::validation(format!(
            "logs reads one target's output; --target {} names several",
            args.target
        ))
        .hint("run logs once per target, or see every copy's outcome with result --target A,B"));
    }
    super::jobref::checked(&args.job_id)?;
    let lane = Lane::load(ctx, root)?;
    let t = lane.target(ctx, &args.target)?;
    let id = super::jobref::resolve(ctx, &lane, &t, &args.job_id)?;
    let key = &lane.key;
    let streams = match args.stream {
        StreamArg::Stdout => Streams::Stdout,
        StreamArg::Stderr => Streams::Stderr,
        StreamArg::Both => Streams::Both,
    };
    let form = match (ctx.json(), args.follow) {
        (false, _) => Form::Bytes,
        (true, false) => Form::Document,
        (true, true) => Form::Lines,
    };
    let mut chunks = Chunks::new(&t, &id, streams, form == Form::Lines);
    let out = json!({"jobId": id.as_str(), "target": t.target().as_str()});
    let seen = lane::look(&t, &id, key)?;
    if let Seen::Done(o) = &seen {
        return finished(&mut chunks, o, form, out);
    }
    forged(&t, &id, &seen)?;
    if !args.follow {
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        chunks.pump(&mut stdout, &mut stderr)?;
        if !chunks.any() && matches!(seen, Seen::Nothing) {
            return Err(Error::not_found(format!(
                "no job {id} on {} (no log at {}, not queued, running or finished)",
                t.target(),
                chunks.first_shown()
            ))
            .hint("a store may list late; --follow waits for it"));
        }
        if form == Form::Bytes {
            print(&id, stdout, stderr)?;
            return Ok(exit::SUCCESS);
        }
        let mut out = out;
        out["state"] = json!(match seen {
            Seen::Queued => "queued",
            Seen::Taken => "running",
            _ => "not seen yet",
        });
        view::logs::document(&mut out, streams, &stdout, &stderr);
        crate::base::out::json(&out);
        return Ok(exit::SUCCESS);
    }
    follow(&mut chunks, key, form, out)
}

/// Refuses a job whose result does not verify, as `result` does.
fn forged(t: &BucketTarget, id: &JobId, seen: &Seen) -> Result<()> {
    if let Seen::Forged(why) = seen {
        return Err(super::unverified(t, id, why));
    }
    Ok(())
}

/// `--follow` of a job not finished when asked: its chunks printed as they
/// come, until its result is there and no chunk follows; then the end as
/// on a folder (with `--json`, the result as the last line), exiting as
/// `result` does.
fn follow(chunks: &mut Chunks, key: &crate::trust::Key, form: Form, out: Value) -> Result<u8> {
    let (t, id) = (chunks.t, chunks.id);
    // As on a folder, nothing under a log's name is the job's output while
    // it waits in the inbox: its chunks are shown once it was taken.
    let mut started = false;
    let o = loop {
        // Looked at before the chunks are read: every chunk is written
        // before the result, so once the result was seen, a chunk still
        // missing after it is the end.
        let seen = lane::look(t, id, key)?;
        forged(t, id, &seen)?;
        started |= matches!(seen, Seen::Taken | Seen::Done(_));
        if started {
            chunks.pump(&mut std::io::stdout(), &mut std::io::stderr())?;
        }
        if let Seen::Done(o) = seen {
            break o;
        }
        std::thread::sleep(crate::requests::wait::POLL);
    };
    // A sealed job logs nothing: the end of its output its result
    // carries is shown on its origin, as for a job finished when asked.
    if o.sealed_here() || o.opened.is_some() {
        finished(chunks, &o, form, out)?;
        return Ok(o.wait_exit_status());
    }
    if form == Form::Lines {
        chunks.end_json(&mut std::io::stdout());
    }
    for (key, verdict) in chunks.judged(&o) {
        if let Verdict::NotTheJobs(why) = verdict {
            return Err(not_the_jobs(&key, id, &why, &o));
        }
    }
    if form == Form::Lines {
        crate::base::out::json(&view::logs::with_result(out, &o));
    }
    Ok(o.wait_exit_status())
}

/// Prints the logs of the finished job whose verified result is `o` once
/// they are held against it: chunks that are not the job's output are
/// never printed as if they were, and are `FORBIDDEN`. A sealed job's
/// output is the end its result carries, on its origin only.
fn finished(chunks: &mut Chunks, o: &Outcome, form: Form, json: Value) -> Result<u8> {
    let (id, streams) = (chunks.id, chunks.streams);
    let sealed = o.sealed_here() || o.opened.is_some();
    let (mut out, err) = if sealed {
        view::logs::sealed(id, o, streams)?
    } else {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        chunks.pump(&mut out, &mut err)?;
        (out, err)
    };
    if !sealed {
        for (key, verdict) in chunks.judged(o) {
            if let Verdict::NotTheJobs(why) = verdict {
                return Err(Error::forbidden(format!(
                    "{key} is not {id}'s output ({why}); it is not shown"
                ))
                .hint(format!(
                    "`fleet-dispatch result --target {} --job-id {id}` shows the end of its own output, signed; find who writes the bucket",
                    o.target
                )));
            }
        }
    }
    match form {
        Form::Document => {
            let mut json = view::logs::with_result(json, o);
            view::logs::document(&mut json, streams, &out, &err);
            crate::base::out::json(&json);
            short_log_note(o, streams);
            return Ok(exit::SUCCESS);
        }
        Form::Lines => {
            chunks.end_json(&mut out);
            out.extend_from_slice(
                format!(
                    "{}\n",
                    crate::base::out::json_text(&view::logs::with_result(json, o))
                )
                .as_bytes(),
            );
        }
        Form::Bytes => {}
    }
    if print(id, out, err)? {
        short_log_note(o, streams);
    }
    Ok(exit::SUCCESS)
}

/// What `enqueue --wait --follow` and `result --wait --follow` stream of a
/// job on a bucket while they wait ([`super::wait::for_result`]): its
/// chunks as they come once it was taken, both streams (JSON lines with
/// `--json`), as a folder's waits stream its logs.
pub struct Follower<'a>(Chunks<'a>);

impl<'a> Follower<'a> {
    /// Follows `id`'s output on `t`; `json`: as JSON lines.
    pub fn new(t: &'a BucketTarget, id: &'a JobId, json: bool) -> Follower<'a> {
        Follower(Chunks::new(t, id, Streams::Both, json))
    }

    /// Prints the chunks written since the last look, once `seen` (what
    /// the wait's look found, made before this) says the job was taken:
    /// every chunk is written before the result, so after a look that
    /// found the result nothing is left unread, and the end is made.
    pub fn saw(&mut self, seen: &Seen) -> Result<()> {
        if matches!(seen, Seen::Taken | Seen::Done(_)) {
            self.0
                .pump(&mut std::io::stdout(), &mut std::io::stderr())?;
        }
        match seen {
            Seen::Done(o) => self.end(o),
            _ => Ok(()),
        }
    }

    /// The end, once the result `o` is there: the start of a character
    /// whose end never came (JSON lines), a sealed job's output from its
    /// result, and what was shown held against the result: output that
    /// was not the job's is `FORBIDDEN`, as on a folder.
    fn end(&mut self, o: &Outcome) -> Result<()> {
        let chunks = &mut self.0;
        let id = chunks.id;
        if o.sealed_here() || o.opened.is_some() {
            let (out, err) = view::logs::sealed(id, o, Streams::Both)?;
            print(id, out, err)?;
            return Ok(());
        }
        if chunks.json {
            chunks.end_json(&mut std::io::stdout());
        }
        for (key, verdict) in chunks.judged(o) {
            if let Verdict::NotTheJobs(why) = verdict {
                return Err(not_the_jobs(&key, id, &why, o));
            }
        }
        Ok(())
    }
}

/// The refusal of output shown from `key` that was not `id`'s, once its
/// result `o` said so.
fn not_the_jobs(key: &str, id: &JobId, why: &str, o: &Outcome) -> Error {
    Error::forbidden(format!(
        "what was shown from {key} is not {id}'s output ({why}); {id} ended {} (exit {})",
        o.termination().describe(o.ok),
        o.exit_code
    ))
    .hint(format!(
        "`fleet-dispatch result --target {} --job-id {id}` shows the end of its own output, signed; find who writes the bucket",
        o.target
    ))
}

/// Writes `out` to stdout and `err` to stderr, the logs of `id` (on any
/// root): false when a reader went away (a closed pipe), which ends the
/// command quietly.
pub fn print(id: &JobId, out: Vec<u8>, err: Vec<u8>) -> Result<bool> {
    for (sink, bytes) in [
        (&mut std::io::stdout() as &mut dyn Write, out),
        (&mut std::io::stderr(), err),
    ] {
        if let Err(e) = sink.write_all(&bytes).and_then(|()| sink.flush()) {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                return Ok(false);
            }
            return Err(write_error(id, &e));
        }
    }
    Ok(true)
}

/// Says on stderr when a log printed holds less than its job wrote.
fn short_log_note(o: &Outcome, streams: Streams) {
    for note in view::logs::short_log_notes(o, streams) {
        crate::note!("fleet-dispatch: {note}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_is_named_by_its_job_stream_and_plain_number() {
        let id = JobId::parse("20261129-193000-9f2c4e1ab37d5c08").unwrap();
        assert_eq!(chunk_name(&id, "stdout", 12), format!("{id}.stdout.12"));
        assert_eq!(
            chunk_of(&id, &format!("{id}.stdout.0")),
            Some(("stdout", 0))
        );
        assert_eq!(
            chunk_of(&id, &format!("{id}.stderr.10")),
            Some(("stderr", 10))
        );
        for bad in [
            ".stdout.01",
            ".stdout.",
            ".stdout.log",
            ".stdin.0",
            ".stdout.-1",
            ".stdout.1.2",
        ] {
            assert_eq!(chunk_of(&id, &format!("{id}{bad}")), None, "{bad}");
        }
        assert_eq!(chunk_of(&id, "other.stdout.0"), None);
    }
}
