//! `listen`: run this machine's listener, once or until Ctrl-C / SIGTERM.
//! The first signal stops the running job gracefully and exits 130; a second
//! one kills the job's process group at once. With `--http ADDR` the HTTP
//! intake ([`crate::http`]) runs beside it, feeding the same listener.

use serde_json::json;

use crate::cli::ListenArgs;
use crate::config::Context;
use crate::error::{Error, Result};
use crate::exit;
use crate::listener::{Listener, Settings};
use crate::shutdown;

/// Runs `listen`.
pub fn run(ctx: &Context, args: ListenArgs) -> Result<u8> {
    let settings = Settings {
        once: args.once,
        poll: ctx.poll_interval(args.poll_interval.as_deref())?,
        settle: crate::clock::parse_duration(&args.settle)
            .map_err(|e| Error::validation(format!("--settle: {}", e.message)))?,
        max_age: crate::clock::parse_duration(&args.max_job_age)
            .map_err(|e| Error::validation(format!("--max-job-age: {}", e.message)))?,
        governor: args.governor_file.clone(),
        verbose: !ctx.json(),
        durability: ctx.durability(),
    };
    if settings.poll.is_zero() {
        return Err(Error::validation("--poll-interval must be more than 0"));
    }
    let http = args
        .http
        .as_deref()
        .map(crate::http::bind_addr)
        .transpose()?;
    let root = ctx.root()?;
    let machine = ctx.machine()?;
    let key = ctx.key(Some(&root))?;
    let key_path = ctx.key_path()?;
    let state = ctx.state(&root, &machine)?;
    // This machine's own folder keeps the spelling it already has.
    let dirs = match crate::layout::find_target(&root, &machine)? {
        Some(existing) => crate::layout::TargetDirs::new(
            &root,
            &crate::names::Machine::parse(&existing, "target")?,
        ),
        None => crate::layout::TargetDirs::new(&root, &machine),
    };
    let shutdown = shutdown::install()?;
    let verbose = settings.verbose;
    let listener = Listener::start(root, dirs, state, key, key_path, settings, shutdown)?;
    // After the lock: a second listener must say BUSY, not "address in use".
    let _intake = match http {
        Some(addr) => {
            let server = crate::http::serve(addr, listener.handle(), verbose)?;
            if verbose {
                let bound = server.local_addr();
                let note = if bound.ip().is_loopback() {
                    ""
                } else {
                    " (plain HTTP: across networks use a VPN or an SSH tunnel)"
                };
                crate::out::line(&format!(
                    "{} HTTP intake on http://{bound}{note}",
                    crate::clock::format(crate::clock::now())
                ));
            }
            Some(server)
        }
        None => None,
    };
    let summary = listener.run()?;
    let c = &summary.counters;
    super::emit(
        ctx,
        &json!({"counters": c, "interrupted": summary.interrupted}),
        &format!(
            "done {}, failed {}, cancelled {}, deferred {}, rejected {}, skipped {}, repaired {}{}",
            c.done,
            c.failed,
            c.cancelled,
            c.deferred,
            c.rejected,
            c.skipped,
            c.repaired,
            if summary.interrupted {
                " (interrupted)"
            } else {
                ""
            }
        ),
    );
    Ok(if summary.interrupted {
        exit::INTERRUPTED
    } else {
        exit::SUCCESS
    })
}
