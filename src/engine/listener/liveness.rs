//! The listener's signs of life and its watch for another (docs/protocol.md
//! §7.1): its signed heartbeat in the target folder, and one listener per
//! target across the fleet. Start-up refuses outright when another serves
//! the target ([`Liveness::start`]); a running listener that sees another
//! instance's fresh heartbeat later, through a sync engine that no lock
//! spans, stops starting jobs until one of the two is stopped
//! ([`Liveness::rival_serves`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::site::Site;
use crate::base::error::{Code, Error, Result};
use crate::base::names::JobId;
use crate::local::state;
use crate::places::heartbeat::{self, Beat, Heartbeat};
use crate::places::rejected;
use crate::platform;
use crate::protocol::accept;
use crate::store::fsops;
use crate::store::layout::{FOLDER_LOCK, Place, StateDirs, TargetDirs};
use crate::trust::Key;

/// The heartbeat and what was seen of another listener.
pub(super) struct Liveness {
    beat: Heartbeat,
    last_heartbeat: Instant,
    /// Another listener seen serving this target, and when we last looked.
    rival: Option<Beat>,
    rival_checked: Option<Instant>,
    rival_was_said: bool,
}

/// The answer when `listener.lock` in the target folder is held but no
/// verified heartbeat of another listener backs it. Still `BUSY`: the
/// holder may be a genuine listener that has not written its first
/// heartbeat yet, and on one file system the lock is what keeps two
/// listeners started at one instant from both starting a job (SECURITY.md
/// states the residual risk). Said plainly, so a squatter is
/// found rather than waited for.
fn held_unbacked(dirs: &TargetDirs) -> Error {
    Error::new(
        Code::Busy,
        format!(
            "{} is held by another process, but no heartbeat signed with the fleet key backs it: a listener still starting, a listener with another key, or a process without the key squatting the lock",
            dirs.folder_lock().display()
        ),
    )
    .hint("try again in a few seconds; if it stays, find the process holding the file (`fuser`/`lsof` where the folder lives, Open Files in Computer Management for an SMB share) and stop it")
}

impl Liveness {
    /// This listener's heartbeat, and the target folder's lock: refused
    /// (`BUSY`) when another listener serves the target, by its fresh
    /// heartbeat or by the lock.
    pub fn start(
        dirs: &TargetDirs,
        state: &StateDirs,
        key: &Arc<Key>,
        poll: Duration,
    ) -> Result<(Liveness, fsops::FileLock)> {
        let instance = state::instance_id(state)?;
        let host = platform::hostname().unwrap_or_default();
        let who = heartbeat::Identity {
            host,
            instance,
            key_fingerprint: key.key_id(),
        };
        let beat = Heartbeat::new(
            dirs.clone(),
            state,
            dirs.target().as_str(),
            &who,
            Arc::clone(key),
            poll,
        );
        let folder_lock = take_folder_lock(dirs)?;
        if let Some(other) = beat.rival() {
            let whence = if folder_lock.is_some() {
                String::new()
            } else {
                format!(
                    " (from this file system: it holds {})",
                    dirs.folder_lock().display()
                )
            };
            if other.instance == who.instance {
                return Err(Error::new(
                    Code::Busy,
                    format!(
                        "another listener serves {}: {}{whence}",
                        dirs.target(),
                        other.who_beside(&who.instance)
                    ),
                )
                .hint(format!(
                    "two listeners would run every job twice: stop the copy's, remove its {} (a new instance id is made at its next start) or give it its own state directory, then start them again",
                    state.instance().display()
                )));
            }
            return Err(Error::new(
                Code::Busy,
                format!("another listener serves {}: {}{whence}", dirs.target(), other.who()),
            )
            .hint(if folder_lock.is_some() {
                "one listener per target in the whole fleet: two would run every job twice; stop the other, or start this one once its heartbeat is over 90 s old"
            } else {
                "one listener per target in the whole fleet: two would run every job twice; stop the other first (it holds the folder lock, which a stale heartbeat does not release)"
            }));
        }
        let Some(folder_lock) = folder_lock else {
            return Err(held_unbacked(dirs));
        };
        let live = Liveness {
            beat,
            last_heartbeat: Instant::now(),
            rival: None,
            rival_checked: None,
            rival_was_said: false,
        };
        Ok((live, folder_lock))
    }

    /// The heartbeat's writer, shared with a running job's watch and the
    /// last words of a killed listener.
    pub fn beat(&self) -> &Heartbeat {
        &self.beat
    }

    /// Writes the heartbeat now: running `job`, or not, in `state`.
    pub fn heartbeat(&mut self, job: Option<&JobId>, state: &str) {
        self.last_heartbeat = Instant::now();
        self.beat.write(job.map(JobId::as_str), state);
    }

    /// True when an idle listener's heartbeat is due again.
    pub fn due(&self) -> bool {
        self.last_heartbeat.elapsed() >= heartbeat::EVERY
    }

    /// Notes that job `id` runs in a slot, or (`false`) no longer does.
    pub fn slot(&self, id: &JobId, runs: bool) {
        self.beat.slot(id.as_str(), runs);
    }

    /// True while another listener serves this target: then no job is
    /// started, and that is said on every poll until one of the two stops.
    /// Looked at once per poll interval. The other's heartbeat and ours
    /// take turns in one file, so once seen, it counts until it says
    /// `stopped` or grows stale.
    pub fn rival_serves(&mut self, site: &Site) -> bool {
        if self
            .rival_checked
            .is_some_and(|t| t.elapsed() < site.settings.poll)
        {
            return self.rival.is_some();
        }
        self.rival_checked = Some(Instant::now());
        // Read once: whose beat is there now decides both cases below.
        let now_there = self.beat.judged().ok();
        let fresh = now_there.clone().filter(|b| self.beat.is_rival(b));
        let seen = match (fresh, self.rival.take()) {
            (Some(fresh), _) => Some(fresh),
            // Our own beat may have covered theirs since: keep the last
            // one seen while it would still count as alive, unless that
            // listener has since said, signed, that it stopped (a forged
            // "stopped" must not let two listeners start jobs).
            (None, Some(old)) => {
                let stopped = now_there
                    .as_ref()
                    .is_some_and(|b| b.instance == old.instance && !b.alive());
                (!stopped && old.alive()).then_some(old)
            }
            (None, None) => None,
        };
        match &seen {
            Some(b) => site.say(format!(
                "not starting jobs: another listener serves {}: {}; stop one of them",
                site.dirs.target(),
                b.who_beside(self.beat.instance())
            )),
            None if self.rival_was_said => {
                site.say("the other listener is gone; starting jobs again");
            }
            None => {}
        }
        self.rival_was_said = seen.is_some();
        self.rival = seen;
        self.rival.is_some()
    }
}

/// Takes the lock in the target folder itself (`listener.lock`), or
/// answers `None` when another process holds it: a listener with another
/// state directory serving the target from this file system, or a process
/// without the key squatting it (the caller tells them apart by the
/// heartbeat). The file is opened without following a link; anything but a
/// regular file there is moved to `archive/rejected/` and the file made
/// again, so a folder writer cannot keep the listener from starting that
/// way.
fn take_folder_lock(dirs: &TargetDirs) -> Result<Option<fsops::FileLock>> {
    let path = dirs.folder_lock();
    let base = dirs
        .open_base()?
        .ok_or_else(|| Error::not_found(format!("{} vanished", dirs.base().display())))?;
    let mut moved = false;
    loop {
        match base.lock_file(FOLDER_LOCK) {
            Ok(fsops::Locking::Held(held)) => return Ok(Some(held)),
            Ok(fsops::Locking::Busy) => return Ok(None),
            Ok(fsops::Locking::NotAFile) if !moved => {
                let r = accept::Rejection::new(
                    accept::Verdict::NotAFile,
                    "the listener's lock must be a regular file",
                );
                let reason =
                    rejected::Reason::new(&r, rejected::Kind::Layout, dirs.target().as_str());
                rejected::file(
                    &dirs.open_made(Place::Rejected)?,
                    &base,
                    FOLDER_LOCK,
                    &reason,
                )?;
                moved = true;
            }
            Ok(fsops::Locking::NotAFile) => {
                return Err(fsops::not_a_folder(&path, "file that is not a regular one"));
            }
            Err(e) => return Err(Error::io("lock", &path, &e)),
        }
    }
}
