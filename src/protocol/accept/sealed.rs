//! The sealing rules of acceptance (docs/protocol.md §6.8): a clear job
//! to a target that requires sealed ones, a sealed one opened by its
//! target, and one its listener cannot open.

use super::{Rejection, Verdict};
use crate::protocol::doc::{Job, Spec, job};
use crate::trust::Key;

/// Step 8 for the sealing rules (docs/identities.md, "Sealed jobs"): a
/// clear job to a target whose roster entry requires sealed ones is
/// `seal-required`; a sealed one is opened when this machine is its
/// target (`bad-seal` when its envelope does not open), its payload then
/// judged by the spec's rules without repeating a value of it. Returns
/// whether the payload is known here.
pub(super) fn unseal<'e>(
    spec: &mut Spec,
    field: &dyn Fn(&'static str) -> &'e str,
    key: &Key,
) -> Result<bool, Rejection> {
    let (target, origin, job_id) = (field("target"), field("origin"), field("jobId"));
    let Some(sealed) = &spec.sealed else {
        if key.requires_seal(target) {
            return Err(Rejection::new(
                Verdict::SealRequired,
                format!(
                    "{target}'s roster entry requires sealed jobs; this one is not sealed (send it with enqueue --seal)"
                ),
            ));
        }
        return Ok(false);
    };
    let Some(me) = key
        .identity()
        .filter(|id| id.name().eq_ignore_ascii_case(target))
    else {
        return Ok(false);
    };
    let context = job::seal_context(job_id, target, origin);
    let plain = crate::trust::seal::open(me, sealed, context.as_bytes()).map_err(|why| {
        Rejection::new(
            Verdict::BadSeal,
            format!("its sealed payload does not open here: {why}"),
        )
    })?;
    *spec = Spec::check_opened(field("spec"), &plain).map_err(|r| {
        // The message would quote the payload's values: name the field only.
        Rejection::new(
            Verdict::UnsupportedSpec,
            format!(
                "its sealed payload is refused by the spec's rules (field {}); its values stay sealed",
                r.field.unwrap_or("spec")
            ),
        )
    })?;
    Ok(true)
}

/// A job its target's listener can run: a sealed one only once opened
/// here. A listener without its own identity (`--auth both` with no
/// identity file) cannot open one and refuses it `bad-seal` rather than
/// run an empty payload; the sender reads the message through `result`,
/// so it names the target.
///
/// # Errors
///
/// `bad-seal` for a sealed job not opened here.
pub fn runnable(job: Job) -> Result<Job, Rejection> {
    if job.is_sealed() && !job.opened {
        return Err(Rejection::new(
            Verdict::BadSeal,
            format!(
                "it is sealed to {t}, and {t}'s listener has no identity of {t} to open it with (the identity file that --auth roster needs and --auth both loads when present); it was not run",
                t = job.target
            ),
        ));
    }
    Ok(job)
}
