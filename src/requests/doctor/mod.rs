//! `doctor`: what stands between this machine and a working lane, one
//! check a line, each failure with what to do about it. The key file, the
//! dispatch root (its layout, the sync engine that owns it, whether its
//! files stay on this device), every target's listener as its heartbeat
//! tells (age, identity, key fingerprint, clock), its queue, pending
//! cancels, recent rejections, file counts and conflict copies, and the
//! local state (ledger, lock, where the settings came from).
//!
//! `gather` reads the facts, through held folder handles as every reader
//! of the root does; the judgements below are plain functions over those
//! facts and a given `now`, unit-tested without a disk. A target's queue
//! and heartbeat are read as `status` reads them ([`crate::places::observe`],
//! [`crate::places::heartbeat`]): doctor judges that document, it does not read
//! the folder a second way.
//!
//! The checks, by what they look at: `key.rs`, `roster.rs` (the `--auth`
//! mode, the identity, the pin and the roster), `root.rs`, `target.rs`
//! (each target's listener and queue), `local.rs` (this machine's state),
//! `service.rs` (an installed service entry), `store.rs` (a root on an
//! object store, docs/object-store.md). This file holds what they
//! share: a [`Check`], its [`Status`], the [`Report`] and the limits.

mod gather;
mod key;
mod local;
mod root;
pub mod roster;
mod service;
mod store;
mod target;

pub use key::{KeyFacts, KeyFile, judge_key};
pub use local::{LocalFacts, LocalTarget, LockHolder, judge_local};
pub use root::{
    Engine, RootFacts, RootState, Shape, check_layout, engine, holds_layout, judge_root,
    layout_names, too_deep,
};

pub use service::{ServiceFacts, judge_service};
pub use store::examine_store;
pub use target::{BeatFile, TargetFacts, conflict_copy, judge_target};

use std::time::Duration;

use serde::Serialize;
use time::OffsetDateTime;

use crate::base::clock;
use crate::places::heartbeat::{self, Beat};
use crate::places::observe::TargetStatus;
use crate::places::rejected::Reason;

pub use gather::{Inputs, examine, listener_warnings, running_governor};

/// The number of files in one folder past which a sync engine slows down:
/// OneDrive documents degraded syncing beyond about 300,000 items, and
/// Dropbox gives the same figure. Checked per folder of a target's layout
/// and for each target folder as a whole.
pub const FILE_LIMIT: usize = 300_000;

/// A clock difference beyond which the job age window (`listen
/// --max-job-age`, a job's `createdAt` judged by the listener's clock)
/// and heartbeat ages stop meaning what they say.
pub const SKEW_LIMIT: Duration = Duration::from_secs(60);

/// How far back rejected files are reported.
pub const REJECTED_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// A queued job signed longer ago than this is worth a look: the queue is
/// not moving, and at `listen --max-job-age` (7 days unless set) the job
/// is refused as stale.
pub const OLD_QUEUED: Duration = Duration::from_secs(24 * 3600);

/// How a check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Nothing to do.
    Ok,
    /// Something to fix; the check carries a hint.
    Warn,
}

/// One check's line.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    /// What was checked: `key`, `heartbeat`, `files`, …
    pub check: &'static str,
    /// The target it concerns, for per-target checks.
    pub target: Option<String>,
    /// How it came out.
    pub status: Status,
    /// What was found.
    pub message: String,
    /// What to do, on a warning.
    pub hint: Option<String>,
}

impl Check {
    fn ok(check: &'static str, message: impl Into<String>) -> Check {
        Check {
            check,
            target: None,
            status: Status::Ok,
            message: message.into(),
            hint: None,
        }
    }

    fn warn(check: &'static str, message: impl Into<String>, hint: impl Into<String>) -> Check {
        Check {
            check,
            target: None,
            status: Status::Warn,
            message: message.into(),
            hint: Some(hint.into()),
        }
    }

    fn on(mut self, target: &str) -> Check {
        self.target = Some(target.to_string());
        self
    }
}

/// Every check, the failing ones first (otherwise in the order made).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// True when every check passed.
    pub ok: bool,
    /// This machine's key fingerprint, when the key loads.
    pub key_fingerprint: Option<String>,
    /// The checks.
    pub checks: Vec<Check>,
}

impl Report {
    /// The report of `checks`, failures moved first.
    pub fn new(mut checks: Vec<Check>, key_fingerprint: Option<String>) -> Report {
        checks.sort_by_key(|c| c.status != Status::Warn);
        Report {
            ok: checks.iter().all(|c| c.status == Status::Ok),
            key_fingerprint,
            checks,
        }
    }

    /// This report with `more` checks, failures moved first again.
    pub fn with(mut self, more: Vec<Check>) -> Report {
        let mut checks = std::mem::take(&mut self.checks);
        checks.extend(more);
        Report::new(checks, self.key_fingerprint)
    }
}

#[cfg(test)]
mod tests;
