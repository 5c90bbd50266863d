//! The sender: what `enqueue` and `cancel` ask of a target, built,
//! checked and delivered, and a report of what happened, for the front end
//! to render (it prints nothing but the fallback note of [`http`]).
//!
//! - [`request`]: the flags of `enqueue` and each `--batch` line become
//!   one checked [`request::Request`]; once signed, [`request::checked`]
//!   refuses what a target would.
//! - [`job`]: one job, to one target or, the same id, to a target list (a
//!   fan-out), with `--interrupt`'s cancel after it.
//! - [`batch`]: many jobs from one file, all checked (a cycle of `after`
//!   too, [`crate::protocol::dependency::cycle`]) before any is published.
//! - [`seal`]: `--seal`, the payload sealed to the target before signing.
//! - [`cancel`]: a signed marker for one target's job, or each target's
//!   copy.
//!
//! Every document goes one of two routes ([`Route`]): into the shared
//! folder ([`crate::requests::submit`], [`crate::requests::cancel`], the rules both doors
//! share), or over HTTP to the target's intake ([`http`]), which falls
//! back to the folder when the target cannot be reached.

pub mod batch;
pub mod cancel;
pub mod http;
pub mod job;
pub mod request;
mod resolver;
pub mod seal;
mod strict_json;

use std::path::{Path, PathBuf};

use crate::base::error::Result;
use crate::base::names::{JobId, Machine};
use crate::front::config::Context;
use crate::protocol::doc::{Job, Marker};
use crate::requests::cancel::{self as marker, CancelStatus};
use crate::store::fsops::Flush;
use crate::store::layout::{RootGuard, TargetDirs};
use crate::trust::Key;
use http::Url;

/// How a document reaches its target.
#[derive(Clone, Debug)]
pub enum Route {
    /// Written into the target's folder under the shared root.
    Folder,
    /// POSTed to the target's HTTP intake (`--via`), or written into the
    /// folder when the target cannot be reached.
    Http(Url),
}

impl Route {
    /// The route `--via` names: HTTP to its URL; the folder when none.
    pub fn via(text: Option<&str>) -> Result<Route> {
        Ok(match text {
            Some(t) => Route::Http(Url::parse(t)?),
            None => Route::Folder,
        })
    }

    /// Delivers a signed job whose file is `bytes`.
    pub fn job(
        &self,
        dirs: &TargetDirs,
        job: &Job,
        bytes: &[u8],
        key: &Key,
        flush: Flush,
    ) -> Result<()> {
        match self {
            Route::Folder => crate::requests::submit::publish_bytes(dirs, job, bytes, key, flush),
            Route::Http(url) => http::job(url, job, bytes, &mut || {
                crate::requests::submit::publish_bytes(dirs, job, bytes, key, flush)
            }),
        }
    }

    /// Delivers a signed cancel marker for `id`.
    pub fn marker(
        &self,
        dirs: &TargetDirs,
        id: &JobId,
        key: &Key,
        m: &Marker,
    ) -> Result<CancelStatus> {
        match self {
            Route::Folder => marker::place_marker(dirs, id, key, m),
            Route::Http(url) => {
                http::marker(url, (dirs.target().as_str(), id), key, m, &mut || {
                    marker::place_marker(dirs, id, key, m)
                })
            }
        }
    }
}

/// What every request is sent with, loaded before any target folder is
/// looked at: a refusal must not leave a fleet member's folder behind.
pub struct Sender {
    /// The shared root.
    pub root: PathBuf,
    /// The fleet key.
    pub key: Key,
    /// This machine, the documents' origin.
    pub origin: Machine,
}

impl Sender {
    /// The root, the key and this machine's name, in that order.
    pub fn load(ctx: &Context) -> Result<Sender> {
        let root = ctx.root()?;
        let key = ctx.key(Some(&root))?;
        let origin = ctx.machine()?;
        Ok(Sender { root, key, origin })
    }

    /// The folders of the one target `name`, reached by `route`: through
    /// the folder, a root that went away is not built again
    /// ([`known_root`]).
    pub fn target(&self, ctx: &Context, name: &str, route: &Route) -> Result<TargetDirs> {
        let guard = match route {
            Route::Folder => Some(self.guard(ctx)?),
            Route::Http(_) => None,
        };
        let dirs = ctx.target(&self.root, name)?;
        Ok(match &guard {
            Some(g) => dirs.guarded(g),
            None => dirs,
        })
    }

    /// The folders of each target of the list `list`, guarded.
    pub fn targets(&self, ctx: &Context, list: &str) -> Result<Vec<TargetDirs>> {
        let guard = self.guard(ctx)?;
        Ok(ctx
            .targets(&self.root, list)?
            .into_iter()
            .map(|d| d.guarded(&guard))
            .collect())
    }

    /// [`known_root`] of this root.
    pub fn guard(&self, ctx: &Context) -> Result<RootGuard> {
        known_root(ctx, &self.root, &self.key)
    }
}

/// The root's identity (docs/protocol.md §3.6), for a command about to
/// write into the root: one whose mount went away, leaving a folder, is
/// refused (`CONFIG`) rather than built again there, and so is a root one
/// level too deep or too high (`doctor`'s layout rule,
/// [`crate::requests::doctor::check_layout`]), where a target folder made now would
/// never be read.
pub fn known_root(ctx: &Context, root: &Path, key: &Key) -> Result<RootGuard> {
    let mut fleet = ctx.fleet();
    fleet.extend(ctx.machine().ok().map(|m| m.as_str().to_string()));
    crate::requests::doctor::check_layout(root, &fleet)?;
    crate::local::state::identify_root(root, ctx.state_dir(root).ok().as_deref(), key)
}
