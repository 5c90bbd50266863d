//! `logs`: print a job's captured output ([`crate::output`]); `--follow`
//! keeps printing as the job writes, until its result appears, and then
//! exits as `result` does. A job its target rejected is said to be, with
//! the rejection's status, with or without `--follow`. A finished job's
//! logs are held against its verified result before they are shown
//! ([`crate::output::judge`]).

use std::io::Write;

use crate::cli::{LogsArgs, StreamArg};
use crate::config::Context;
use crate::doc::Outcome;
use crate::error::{Error, Result};
use crate::exit;
use crate::names::JobId;
use crate::observe::{self, Observed};
use crate::output::{Follower, Streams, Verdict};
use crate::wait;

/// Runs `logs`.
pub fn run(ctx: &Context, args: LogsArgs) -> Result<u8> {
    // Two jobs' output interleaved would be nobody's log.
    if crate::layout::is_target_list(&args.target) {
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
    let out = serde_json::json!({"jobId": id.as_str(), "target": dirs.target().as_str()});
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
            return finished(&mut follower, &id, o, streams);
        }
        wait::pump(&mut follower);
        // A rejected job has no output to show: say why, as `result` does,
        // rather than print nothing and exit 0.
        if let Observed::Rejected(r) = seen {
            return Ok(super::no_result(
                ctx,
                &dirs,
                &id,
                &key,
                out,
                super::NoResult::Rejected(r),
            ));
        }
        return Ok(exit::SUCCESS);
    }
    // A finished job's logs are judged before they are shown, as above.
    if let Observed::Done(o) = observe::job(&dirs, &id, &key)? {
        return finished(&mut follower, &id, &o, streams);
    }
    // The job's output is copied as it is, `--json` or not; only the end
    // (a rejection, say) is reported in the chosen form.
    let waited = wait::for_result(&dirs, &id, &key, None, true, Some(&mut follower))?;
    Ok(
        match super::with_result(ctx, &dirs, &id, &key, &out, waited, None) {
            Ok(o) => o.wait_exit_status(),
            Err(status) => status,
        },
    )
}

/// Prints the logs of the finished job `id`, whose verified result is `o`,
/// once they are held against it ([`crate::output::judge`]): a log that is
/// not the job's output (a file put under its name by a folder writer) is
/// never printed as if it were, and is `FORBIDDEN`.
fn finished(follower: &mut Follower, id: &JobId, o: &Outcome, streams: Streams) -> Result<u8> {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    follower.pump(&mut out, &mut err).map_err(|e| {
        Error::new(
            crate::error::Code::Internal,
            format!("reading the logs of {id}: {e}"),
        )
    })?;
    for (file, verdict) in follower.judged(o) {
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
    for (sink, bytes) in [
        (&mut std::io::stdout() as &mut dyn Write, out),
        (&mut std::io::stderr(), err),
    ] {
        if let Err(e) = sink.write_all(&bytes).and_then(|()| sink.flush()) {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                return Ok(exit::SUCCESS);
            }
            return Err(Error::new(
                crate::error::Code::Internal,
                format!("writing the logs of {id}: {e}"),
            ));
        }
    }
    short_log_note(o, streams);
    Ok(exit::SUCCESS)
}

/// Says on stderr when a log printed holds less than its job wrote (its
/// result records it: the log could not be made, or a write failed).
fn short_log_note(o: &crate::doc::Outcome, streams: Streams) {
    let d = o.detail();
    for (name, shown, logged, total) in [
        (
            "stdout",
            streams != Streams::Stderr,
            d.stdout_log_bytes,
            d.stdout_bytes,
        ),
        (
            "stderr",
            streams != Streams::Stdout,
            d.stderr_log_bytes,
            d.stderr_bytes,
        ),
    ] {
        if let (true, Some(k)) = (shown, logged) {
            eprintln!(
                "fleet-dispatch: {name} of {} holds only its first {k} of {} bytes: writing the log failed (a full disk, or something else in its place); its last bytes are in the result",
                o.job_id,
                total.unwrap_or(k)
            );
        }
    }
}
