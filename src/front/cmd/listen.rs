//! `listen`: run this machine's listener, once or until Ctrl-C / SIGTERM.
//! The first signal stops the running job gracefully and exits 130; a second
//! one kills the job's process group at once ([`crate::engine::shutdown`]). With
//! `--http ADDR` the HTTP intake ([`crate::front::http`]) runs beside it, feeding
//! the same listener. `listen --drain` asks the running listener to finish
//! its job, start no new one and exit, and waits until it has.

use std::time::Duration;

use serde_json::json;

use crate::base::error::{Error, Result};
use crate::base::exit;
use crate::engine::listener::{Listener, Settings};
use crate::engine::shutdown;
use crate::front::cli::ListenArgs;
use crate::front::config::Context;
use crate::local::state::Lock;
use crate::store::fsops;

/// How often `--drain` looks whether the listener has gone.
const DRAIN_POLL: Duration = Duration::from_millis(200);

/// `listen --drain`: asks this machine's listener for its target to stop
/// between jobs, and waits until its lock is free.
fn drain(ctx: &Context) -> Result<u8> {
    let machine = ctx.machine()?;
    let state = match ctx.s3_root() {
        Some(root) => crate::front::bucket::listen::state(ctx, &root, &machine)?,
        None => ctx.state(&ctx.root()?, &machine)?,
    };
    let target = machine.as_str();
    if Lock::acquire(&state, target).is_ok() {
        super::emit(
            ctx,
            &json!({"drained": false, "running": false}),
            &format!("no listener for {target} runs on this machine; nothing to drain"),
        );
        return Ok(exit::SUCCESS);
    }
    fsops::replace(&state.drain_request(), b"drain\n", fsops::Flush::Nothing)?;
    if !ctx.json() {
        crate::note!(
            "fleet-dispatch: asked the listener for {target} to drain: it finishes the job it runs, starts no new one and stops"
        );
    }
    while Lock::acquire(&state, target).is_err() {
        std::thread::sleep(DRAIN_POLL);
    }
    super::emit(
        ctx,
        &json!({"drained": true, "running": false}),
        &format!("the listener for {target} has drained and stopped"),
    );
    Ok(exit::SUCCESS)
}

/// The root's identity (docs/protocol.md §3.6). A root that is not the
/// one this machine knew (its mount went away, leaving a folder) is waited
/// for, said once on stderr, with nothing made there; `--once` refuses.
/// `None` when stopped while waiting.
fn root_identity(
    ctx: &Context,
    root: &std::path::Path,
    key: &crate::trust::Key,
    settings: &Settings,
    shutdown: &shutdown::Shutdown,
) -> Result<Option<crate::store::layout::RootGuard>> {
    let state = ctx.state_dir(root)?;
    let mut said = false;
    loop {
        match crate::local::state::identify_root(root, Some(&state), key) {
            Ok(guard) => {
                if said {
                    crate::note!(
                        "fleet-dispatch: the dispatch root {} is back",
                        root.display()
                    );
                }
                return Ok(Some(guard));
            }
            Err(e) if e.code == crate::base::error::Code::Config && !settings.once => {
                if !said {
                    crate::note!(
                        "fleet-dispatch: {}; waiting for it (looking every {})",
                        e.message,
                        crate::base::clock::format_duration(settings.poll)
                    );
                    said = true;
                }
                std::thread::sleep(settings.poll);
                if shutdown.requested() {
                    return Ok(None);
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// Runs `listen`.
pub fn run(ctx: &Context, args: ListenArgs) -> Result<u8> {
    if args.drain {
        return drain(ctx);
    }
    let settings = Settings {
        once: args.once,
        poll: ctx.poll_interval(args.poll_interval.as_deref())?,
        watch: !args.no_watch && ctx.watch(),
        settle: crate::base::clock::parse_duration(&args.settle)
            .map_err(|e| Error::validation(format!("--settle: {}", e.message)))?,
        max_age: ctx.max_job_age(args.max_job_age.as_deref())?,
        stop_grace: ctx.stop_grace(args.stop_grace.as_deref())?,
        governor: args.governor_file.clone(),
        verbose: !ctx.json(),
        durability: ctx.durability(),
        slots: ctx.slots(args.slots.map(|n| n.to_string()).as_deref())?,
    };
    if let Some(root) = ctx.s3_root() {
        let summary = crate::front::bucket::listen::run(ctx, &root, &args, settings)?;
        return summarise(ctx, &summary);
    }
    let http = args
        .http
        .as_deref()
        .map(crate::front::http::bind_addr)
        .transpose()?;
    let root = ctx.root()?;
    let machine = ctx.machine()?;
    crate::store::layout::check_addressable(&machine)?;
    let key = ctx.key(Some(&root))?;
    // In `roster` mode a listener with no good roster would refuse every
    // job: it refuses to start instead, saying why.
    key.roster_ready()?;
    let key_path = ctx.key_path()?;
    let state = ctx.state(&root, &machine)?;
    let shutdown = shutdown::install()?;
    let Some(guard) = root_identity(ctx, &root, &key, &settings, &shutdown)? else {
        return Ok(exit::INTERRUPTED);
    };
    // This machine's own folder keeps the spelling it already has.
    let dirs = match crate::store::layout::find_target(&root, &machine)? {
        Some(existing) => crate::store::layout::TargetDirs::new(
            &root,
            &crate::base::names::Machine::parse(&existing, "target")?,
        ),
        None => crate::store::layout::TargetDirs::new(&root, &machine),
    }
    .guarded(&guard);
    let verbose = settings.verbose;
    let listener = Listener::start(root, dirs, state, key, key_path, settings, shutdown)?;
    // After the lock: a second listener must say BUSY, not "address in use".
    let _intake = match http {
        Some(addr) => {
            let server = crate::front::http::serve(addr, listener.handle(), verbose)?;
            if verbose {
                let bound = server.local_addr();
                let note = if bound.ip().is_loopback() {
                    ""
                } else {
                    " (plain HTTP: across networks use a VPN or an SSH tunnel)"
                };
                crate::base::out::line(&format!(
                    "{} HTTP intake on http://{bound}{note}",
                    crate::base::clock::format(crate::base::clock::now())
                ));
            }
            Some(server)
        }
        None => None,
    };
    let summary = listener.run()?;
    summarise(ctx, &summary)
}

/// Says how a listener run ended; its exit status.
fn summarise(ctx: &Context, summary: &crate::engine::listener::Summary) -> Result<u8> {
    let (c, how) = (
        &summary.counters,
        match (summary.interrupted, summary.drained) {
            (true, _) => " (interrupted)",
            (false, true) => " (drained)",
            _ => "",
        },
    );
    super::emit(
        ctx,
        &json!({"counters": c, "interrupted": summary.interrupted, "drained": summary.drained}),
        &format!(
            "done {}, failed {}, cancelled {}, deferred {}, rejected {}, skipped {}, repaired {}{how}",
            c.done, c.failed, c.cancelled, c.deferred, c.rejected, c.skipped, c.repaired,
        ),
    );
    Ok(if summary.interrupted {
        exit::INTERRUPTED
    } else {
        exit::SUCCESS
    })
}
