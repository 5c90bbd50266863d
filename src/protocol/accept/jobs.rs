//! A job's acceptance, steps 1 to 8 (docs/protocol.md §6.1), whole or with
//! its Ed25519 curve check left for later ([`job_later`]): the verdict is
//! the same either way, only when the costly check is made differs.

use super::{Envelope, Rejection, Verdict, Verdicted, refused, sealed};
use crate::base::names::JobId;
use crate::base::read::FileRead;
use crate::protocol::doc::{Job, Spec, job};
use crate::trust::{Key, Unchecked};

/// Judges a job named `file_name` found in `listener_target`'s inbox
/// (steps 1 to 8; replay and age are [`super::replay`] and
/// [`super::freshness`]).
///
/// # Errors
///
/// The first rule the file breaks, as its [`Rejection`].
pub fn job(file_name: &str, read: FileRead, listener_target: &str, key: &Key) -> Verdicted<Job> {
    judged(file_name, read, listener_target, key, false).map(|(job, _)| job)
}

/// [`job()`], but an Ed25519 signature's curve check is returned unmade
/// when every other rule holds ([`Key::judge_later`]); [`checked`] gives
/// its verdict. A file refused here gets [`job()`]'s verdict: a forged one
/// that breaks a later rule too is refused as forged.
///
/// # Errors
///
/// As [`job()`].
pub fn job_later(
    file_name: &str,
    read: FileRead,
    listener_target: &str,
    key: &Key,
) -> Verdicted<(Job, Option<Unchecked>)> {
    judged(file_name, read, listener_target, key, true)
}

/// The verdict of a curve check [`job_later`] left: `bad-signature` when
/// the signature does not verify.
///
/// # Errors
///
/// That refusal.
pub fn checked(unchecked: &Unchecked) -> Verdicted<()> {
    unchecked
        .verdict()
        .map_err(|why| Rejection::new(refused(&why), why.to_string()))
}

fn judged(
    file_name: &str,
    read: FileRead,
    listener_target: &str,
    key: &Key,
    later: bool,
) -> Verdicted<(Job, Option<Unchecked>)> {
    let env = Envelope::open(
        read,
        job::MAX_BYTES,
        &["jobId", "target", "createdAt", "origin", "spec"],
    )?;
    let created = env.names()?;
    env.file_name(file_name)?;
    env.target(listener_target, Verdict::WrongTarget)?;
    let canonical = job::canonical(
        env.str("jobId"),
        env.str("target"),
        env.str("createdAt"),
        env.str("origin"),
        env.str("spec"),
    );
    let (alg, key_id, sig, unchecked) = env.signature_with(
        key,
        env.str("origin"),
        &canonical,
        Some(created),
        Some(env.str("target")),
        later,
    )?;
    // A later rule's refusal of a job whose check was left is given once
    // the check is made: the signature's step comes first.
    let first = |r: Rejection| match unchecked.as_ref().map(checked) {
        Some(Err(forged)) => forged,
        _ => r,
    };
    let mut spec = Spec::parse(env.str("spec"))
        .map_err(|m| first(Rejection::new(Verdict::UnsupportedSpec, m)))?;
    let opened = sealed::unseal(&mut spec, &|f| env.str(f), key).map_err(first)?;
    if spec
        .header
        .after
        .iter()
        .any(|a| a.names(env.str("target"), env.str("jobId")))
    {
        return Err(first(Rejection::new(
            Verdict::UnsupportedSpec,
            format!("spec after names the job {} itself", env.str("jobId")),
        )));
    }
    let job = Job {
        id: JobId::parse(env.str("jobId")).expect("checked in step 4"),
        target: env.str("target").to_string(),
        created_at: env.str("createdAt").to_string(),
        created,
        origin: env.str("origin").to_string(),
        spec_text: env.str("spec").to_string(),
        spec,
        alg,
        key_id,
        sig,
        opened,
    };
    Ok((job, unchecked))
}
