//! `enqueue --seal` (docs/identities.md, "Sealed jobs"): a job's payload
//! sealed to its target's X25519 key on the roster before it is signed,
//! or why it cannot be.

use crate::base::error::{Error, Result};
use crate::base::names::JobId;
use crate::protocol::doc::{Job, Spec};
use crate::trust::Key;

/// Refuses `--seal` for job `id` outside `--auth roster`.
pub fn may_seal(key: &Key, id: &JobId) -> Result<()> {
    if key.auth() == crate::trust::Auth::Roster {
        return Ok(());
    }
    Err(Error::config(format!(
        "--seal for job {id}: sealing needs --auth roster (this machine runs --auth {}): the target's sealing key comes from the roster, and only this machine's identity opens the sealed result",
        key.auth().as_str()
    ))
    .hint("run with --auth roster once this machine has an identity on the roster (docs/identities.md)"))
}

/// A job signed by this machine's `key`, its payload sealed to its
/// target when `seal` (`enqueue --seal`; docs/identities.md, "Sealed
/// jobs"): to the target's X25519 key on this machine's good roster,
/// valid now, with 32 fresh random bytes.
///
/// # Errors
///
/// `CONFIG_ERROR` when `seal` asks for it and this machine is not in
/// `roster` mode (no identity to open the sealed result with, no roster
/// to find the target's key in); `FORBIDDEN` when the roster holds no key
/// of the target valid now.
pub fn sign_job(
    key: &Key,
    seal: bool,
    (id, target, origin): (JobId, &str, &str),
    created: time::OffsetDateTime,
    spec: Spec,
) -> Result<Job> {
    if !seal {
        return Ok(Job::sign(key, id, target, origin, created, spec));
    }
    may_seal(key, &id)?;
    let to = key.sealing_key(target).map_err(|why| {
        Error::forbidden(format!("--seal for job {id}: no key to seal to: {why}"))
    })?;
    let mut random = [0u8; 32];
    crate::base::random::fill(&mut random);
    Ok(Job::sign_sealed(
        key,
        id,
        target,
        origin,
        created,
        spec,
        (&to, random),
    ))
}
