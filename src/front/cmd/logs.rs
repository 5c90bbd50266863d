//! `logs`: print a job's captured output ([`crate::places::output`]); `--follow`
//! keeps printing as the job writes, until its result appears, and then
//! exits as `result` does. A job its target rejected is said to be, with
//! the rejection's status, with or without `--follow`. A finished job's
//! logs are held against its verified result before they are shown
//! ([`crate::places::output::judge`]). `--json` prints one document with each
//! stream's text, and `--json --follow` JSON lines ([`Form`]).

use crate::base::error::{Error, Result};
use crate::base::exit;
use crate::base::names::JobId;
use crate::front::cli::{LogsArgs, StreamArg};
use crate::front::config::Context;
use crate::places::observe::{self, Observed};
use crate::places::output::{Follower, Streams, Verdict};
use crate::protocol::doc::Outcome;
use crate::requests::wait;
use crate::view;

/// Runs `logs`.
pub fn run(ctx: &Context, args: LogsArgs) -> Result<u8> {
    if let Some(root) = ctx.s3_root() {
        return crate::front::bucket::logs::run(ctx, &root, &args);
    }
    // Two jobs' output interleaved would be nobody's log.
    if crate::store::layout::is_target_list(&args.target) {
        return Err(Error::validation(format!(
            "logs reads one target's output; --target {} names several",
            args.target
        ))
        .hint("run logs once per target, or see every copy's outcome with result --target A,B"));
    }
    let root = ctx.root()?;
    let key = ctx.key(Some(&root))?;
    let dirs = ctx.target(&root, &args.target)?;
    let id = super::job_ref(ctx, &root, &dirs, &key, &args.job_id)?;
    let streams = match args.stream {
        StreamArg::Stdout => Streams::Stdout,
        StreamArg::Stderr => Streams::Stderr,
        StreamArg::Both => Streams::Both,
    };
    let mut follower = Follower::new(&dirs, &id, streams);
    let mut out = serde_json::json!({"jobId": id.as_str(), "target": dirs.target().as_str()});
    let form = match (ctx.json(), args.follow) {
        (false, _) => Form::Bytes,
        (true, false) => Form::Document,
        (true, true) => Form::Lines,
    };
    if form == Form::Lines {
        follower = follower.json_lines();
    }
    if !args.follow {
        let seen = observe::job(&dirs, &id, &key)?;
        if !follower.any() && matches!(seen, Observed::NotSeen) {
            return Err(Error::not_found(format!(
                "no job {id} on {} (no log, not queued, running or finished)",
                dirs.target()
            ))
            .hint("sync may lag; --follow waits for it"));
        }
        if let Observed::Done(o) = &seen {
            return finished(&mut follower, &id, o, streams, form, out);
        }
        // A rejected job has no output to show: say why, as `result` does,
        // rather than print nothing and exit 0.
        if let Observed::Rejected(r) = seen {
            if form == Form::Bytes {
                wait::pump(&mut follower);
            }
            let no = super::NoResult::Rejected(r);
            return Ok(super::no_result(ctx, &dirs, &id, &key, out, no));
        }
        if form == Form::Bytes {
            wait::pump(&mut follower);
            return Ok(exit::SUCCESS);
        }
        let (stdout, stderr) = read_all(&mut follower, &id)?;
        out["state"] = serde_json::json!(seen.word());
        view::logs::document(&mut out, streams, &stdout, &stderr);
        crate::base::out::json(&out);
        return Ok(exit::SUCCESS);
    }
    // A finished job's logs are judged before they are shown, as above.
    if let Observed::Done(o) = observe::job(&dirs, &id, &key)? {
        return finished(&mut follower, &id, &o, streams, form, out);
    }
    // The job's output is copied as it is written (with `--json`, as JSON
    // lines); the end (the result, a rejection) is reported in the chosen
    // form.
    let waited = wait::for_result(&dirs, &id, &key, None, true, Some(&mut follower))?;
    if form == Form::Lines {
        let _ = follower.end_json(&mut std::io::stdout());
    }
    Ok(
        match super::with_result(ctx, &dirs, &id, &key, &out, waited, None) {
            Ok(o) => {
                if form == Form::Lines {
                    crate::base::out::json(&view::logs::with_result(out, &o));
                }
                o.wait_exit_status()
            }
            Err(status) => status,
        },
    )
}

/// How `logs` prints: the output's bytes as they are; with `--json`, one
/// document holding each stream's text; with `--json --follow`, JSON lines
/// (`{"stream", "text"}` as the output comes, then one line with the job's
/// `result`, or why there is none).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    Bytes,
    Document,
    Lines,
}

/// Everything `follower` can read of the logs now: stdout's, stderr's.
fn read_all(follower: &mut Follower, id: &JobId) -> Result<(Vec<u8>, Vec<u8>)> {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    follower.pump(&mut out, &mut err).map_err(|e| {
        Error::new(
            crate::base::error::Code::Internal,
            format!("reading the logs of {id}: {e}"),
        )
    })?;
    Ok((out, err))
}

/// Prints the logs of the finished job `id`, whose verified result is `o`,
/// once they are held against it ([`crate::places::output::judge`]): a log that is
/// not the job's output (a file put under its name by a folder writer) is
/// never printed as if it were, and is `FORBIDDEN`.
fn finished(
    follower: &mut Follower,
    id: &JobId,
    o: &Outcome,
    streams: Streams,
    form: Form,
    json: serde_json::Value,
) -> Result<u8> {
    let sealed = o.sealed_here() || o.opened.is_some();
    let (mut out, err) = match sealed {
        true => view::logs::sealed(id, o, streams)?,
        false => read_all(follower, id)?,
    };
    if form == Form::Lines {
        let _ = follower.end_json(&mut out);
    }
    for (file, verdict) in follower.judged(o).into_iter().filter(|_| !sealed) {
        if let Verdict::NotTheJobs(why) = verdict {
            return Err(Error::forbidden(format!(
                "{file} is not {id}'s output ({why}); it is not shown"
            ))
            .hint(format!(
                "`fleet-dispatch result --target {} --job-id {id}` shows the end of its own output, signed; find who writes the folder",
                o.target
            )));
        }
    }
    if form == Form::Document {
        let mut json = view::logs::with_result(json, o);
        view::logs::document(&mut json, streams, &out, &err);
        crate::base::out::json(&json);
        short_log_note(o, streams);
        return Ok(exit::SUCCESS);
    }
    if form == Form::Lines {
        // The JSON lines are all in `out`, each stream's.
        out.extend_from_slice(
            format!(
                "{}\n",
                crate::base::out::json_text(&view::logs::with_result(json, o))
            )
            .as_bytes(),
        );
    }
    if !crate::front::bucket::logs::print(id, out, err)? {
        return Ok(exit::SUCCESS);
    }
    short_log_note(o, streams);
    Ok(exit::SUCCESS)
}

/// Says on stderr when a log printed holds less than its job wrote.
fn short_log_note(o: &Outcome, streams: Streams) {
    for note in view::logs::short_log_notes(o, streams) {
        crate::note!("fleet-dispatch: {note}");
    }
}
