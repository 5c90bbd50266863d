//! The environment a job is given (docs/protocol.md §7.5): who it is, where it came
//! from, and how to reach the fleet, so a job can report on itself or
//! enqueue child jobs. One table of names, read by whoever needs one; and
//! the job's token ([`token`]), by which a process shows it is the job its
//! listener started, not one that set [`JOB_ID`] itself.

use crate::base::names::JobId;
use crate::protocol::doc::Job;
use crate::trust::Key;

/// The job's id.
pub const JOB_ID: &str = "FLEET_DISPATCH_JOB_ID";
/// The machine the job was sent to (as the job names it).
pub const TARGET: &str = "FLEET_DISPATCH_TARGET";
/// The machine that sent the job.
pub const ORIGIN: &str = "FLEET_DISPATCH_ORIGIN";
/// The dispatch root the listener serves.
pub const ROOT: &str = "FLEET_DISPATCH_ROOT";
/// The machine running the job (its folder's spelling).
pub const MACHINE: &str = "FLEET_DISPATCH_MACHINE";
/// The path of the fleet key file: the path, never the key, so the job can
/// sign child jobs with the key it may already read.
pub const KEY_FILE: &str = "FLEET_DISPATCH_KEY_FILE";

/// The job's token ([`token`]): what `mcp` must be given beside
/// [`JOB_ID`] to act as the job (its caller identity, task mode).
pub const TOKEN: &str = "FLEET_DISPATCH_JOB_TOKEN";

/// Every name a job is given, in the order they are set.
pub const ALL: [&str; 7] = [JOB_ID, TARGET, ORIGIN, ROOT, MACHINE, KEY_FILE, TOKEN];

/// The variables for `job`, run on `machine` under `root` with the key at
/// `key_file` and its `token`, followed by the job's own `env` (which
/// acceptance keeps from naming ours).
pub fn for_job(
    job: &Job,
    root: &str,
    machine: &str,
    key_file: &str,
    token: &str,
) -> Vec<(String, String)> {
    let ours = [
        job.id.to_string(),
        job.target.clone(),
        job.origin.clone(),
        root.to_string(),
        machine.to_string(),
        key_file.to_string(),
        token.to_string(),
    ];
    ALL.iter()
        .map(|n| n.to_string())
        .zip(ours)
        .chain(
            job.payload()
                .env
                .iter()
                .map(|(k, v)| (k.clone(), v.clone())),
        )
        .collect()
}

/// The text a job's token signs: its own kind (`job-token`), so no
/// document's signature is a token and no token signs a document.
pub fn token_text(id: &JobId, target: &str) -> String {
    format!("job-token|{id}|{target}")
}

/// The token the listener of `target` (the job's own spelling) gives job
/// `id`: [`Key::token`] over [`token_text`], an HMAC under the fleet key, or
/// in `roster` mode under a key derived from this machine's identity (the
/// `mcp` server checking it runs on the same machine with the same
/// identity file). It is never written into the shared folder; a process
/// that holds the key (or identity) file can make one for any job, so it
/// keeps out a process that only sets [`JOB_ID`], not a key holder.
pub fn token(key: &Key, id: &JobId, target: &str) -> String {
    key.token(&token_text(id, target))
}

/// Whether `token` is the one [`token`] gives job `id` on `target`.
pub fn token_holds(key: &Key, id: &JobId, target: &str, token: &str) -> bool {
    key.token_holds(&token_text(id, target), token)
}

/// The entries that mark a process as job `id`'s under `root`, for crash
/// recovery to find what a dead listener's job left running. The target is
/// left out: the job names it in its own spelling, which may differ in case
/// from the folder's.
pub fn identifying(id: &JobId, root: &str) -> Vec<String> {
    vec![format!("{JOB_ID}={id}"), format!("{ROOT}={root}")]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::doc::Spec;

    #[test]
    fn a_token_holds_only_for_its_job_target_and_key() {
        let key = Key::from_bytes(&[1u8; 32]).unwrap();
        let other = Key::from_bytes(&[2u8; 32]).unwrap();
        let id = JobId::parse("20261129-193000-9f2c4e1ab37d5c08").unwrap();
        let sibling = JobId::parse("20261129-193000-9f2c4e1ab37d5c09").unwrap();
        let t = token(&key, &id, "PC");
        assert!(token_holds(&key, &id, "PC", &t));
        assert!(!token_holds(&key, &sibling, "PC", &t));
        assert!(!token_holds(&key, &id, "LAPTOP", &t));
        assert!(!token_holds(&other, &id, "PC", &t));
        assert!(!token_holds(&key, &id, "PC", ""));
    }

    #[test]
    fn ours_come_first_then_the_jobs_own() {
        let mut spec = Spec::of(vec!["true".into()]);
        spec.payload.env = [("MINE".to_string(), "1".to_string())].into();
        let id = JobId::parse("20261129-193000-9f2c4e1ab37d5c08").unwrap();
        let key = Key::from_bytes(&[1u8; 32]).unwrap();
        let job = Job::sign(&key, id, "pc", "LAPTOP", crate::base::clock::now(), spec);
        let env = for_job(&job, "/r", "PC", "/k", "t");
        let got: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            got,
            [
                (JOB_ID, "20261129-193000-9f2c4e1ab37d5c08"),
                (TARGET, "pc"),
                (ORIGIN, "LAPTOP"),
                (ROOT, "/r"),
                (MACHINE, "PC"),
                (KEY_FILE, "/k"),
                (TOKEN, "t"),
                ("MINE", "1"),
            ]
        );
    }
}
