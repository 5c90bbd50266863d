//! `listen` on an object-store root: this machine's listener for its own
//! target on the bucket ([`crate::engine::bucket`]), polling (a bucket
//! sends no events), with the HTTP intake beside it when asked
//! (`--http`).

use super::Lane;
use crate::base::error::Result;
use crate::base::names::Machine;
use crate::engine::bucket::BucketListener;
use crate::engine::listener::{Settings, Summary};
use crate::engine::shutdown;
use crate::front::cli::ListenArgs;
use crate::front::config::Context;
use crate::store::layout::StateDirs;

/// Runs `listen` on the root `root`, with `settings` from the command
/// line, until it stops: how it went.
pub fn run(ctx: &Context, root: &str, args: &ListenArgs, settings: Settings) -> Result<Summary> {
    let http = args
        .http
        .as_deref()
        .map(crate::front::http::bind_addr)
        .transpose()?;
    let lane = Lane::load(ctx, root)?;
    // In `roster` mode a listener with no good roster would refuse every
    // job: it refuses to start instead, saying why.
    lane.key.roster_ready()?;
    let machine = ctx.machine()?;
    crate::store::layout::check_addressable(&machine)?;
    // This machine's own target keeps the spelling it already has there.
    let existing = lane.bucket.targets()?;
    let name = existing
        .iter()
        .find(|n| machine.same(n))
        .map_or(Ok(machine.clone()), |n| Machine::parse(n, "target"))?;
    let t = lane.bucket.target(&name);
    let state = state(ctx, root, &machine)?;
    let key_path = ctx.key_path()?;
    let shutdown = shutdown::install()?;
    let verbose = settings.verbose;
    let listener = BucketListener::start(t, &state, lane.key, key_path, settings, shutdown)?;
    // After the lock: a second listener must say BUSY, not "address in use".
    let _intake = match http {
        Some(addr) => {
            let server = crate::front::http::serve_bucket(addr, listener.door(), verbose)?;
            if verbose {
                crate::base::out::line(&format!(
                    "{} HTTP intake on http://{}",
                    crate::base::clock::format(crate::base::clock::now()),
                    server.local_addr()
                ));
            }
            Some(server)
        }
        None => None,
    };
    listener.run()
}

/// The local state of `machine`'s listener of the bucket root `root`: apart
/// from any folder root's, one per bucket and prefix.
pub fn state(ctx: &Context, root: &str, machine: &Machine) -> Result<StateDirs> {
    let base = ctx.bucket_state(root)?;
    Ok(StateDirs::new(&base, machine))
}
