//! The environment a job is given (docs/protocol.md §7.5): who it is, where it came
//! from, and how to reach the fleet, so a job can report on itself or
//! enqueue child jobs. One table of names, read by whoever needs one.

use crate::doc::Job;
use crate::names::JobId;

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

/// Every name a job is given, in the order they are set.
pub const ALL: [&str; 6] = [JOB_ID, TARGET, ORIGIN, ROOT, MACHINE, KEY_FILE];

/// The variables for `job`, run on `machine` under `root` with the key at
/// `key_file`, followed by the job's own `env` (which acceptance keeps from
/// naming ours).
pub fn for_job(job: &Job, root: &str, machine: &str, key_file: &str) -> Vec<(String, String)> {
    let ours = [
        job.id.to_string(),
        job.target.clone(),
        job.origin.clone(),
        root.to_string(),
        machine.to_string(),
        key_file.to_string(),
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
    use crate::doc::Spec;
    use crate::trust::Key;

    #[test]
    fn ours_come_first_then_the_jobs_own() {
        let mut spec = Spec::of(vec!["true".into()]);
        spec.payload.env = [("MINE".to_string(), "1".to_string())].into();
        let id = JobId::parse("20261129-193000-9f2c4e1ab37d5c08").unwrap();
        let key = Key::from_bytes(&[1u8; 32]).unwrap();
        let job = Job::sign(&key, id, "pc", "LAPTOP", crate::clock::now(), spec);
        let env = for_job(&job, "/r", "PC", "/k");
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
                ("MINE", "1"),
            ]
        );
    }
}
