//! Reading a document from the shared folder and judging it: one door per
//! document kind, so every reader of a kind gets the same verdict for the
//! same file. The rules themselves are [`accept`]'s, over what was read;
//! this module only does the read, with the kind's size limit. The
//! heartbeat's door is [`crate::places::heartbeat::judged`], beside the document
//! it judges.

use crate::base::names::JobId;
use crate::base::read::FileRead;
use crate::protocol::accept::{self, Rejection};
use crate::protocol::doc::{Job, Marker, Outcome, job, marker, outcome};
use crate::store::fsops::Dir;
use crate::trust::{Key, Unchecked};

/// The result of `id` of `target` in `results` (held open), judged: the
/// verified result, or the verdict on the file ([`accept::Verdict::Missing`]
/// when there is none).
///
/// # Errors
///
/// The [`Rejection`] of [`accept::outcome`]: a result that is missing, not
/// a file, unreadable, malformed or forged.
pub fn result(results: &Dir, id: &JobId, target: &str, key: &Key) -> Result<Outcome, Rejection> {
    let read = results.read_limited(&id.file_name(), outcome::MAX_BYTES);
    accept::outcome(id.as_str(), read, target, key)
}

/// The job `id` of `target` in `dir` (held open: an inbox, or
/// `archive/done/`), judged by acceptance steps 1 to 8: the verified job, or
/// the verdict on the file ([`accept::Verdict::Missing`] when there is
/// none). The age and replay rules are the drain's, not asked here.
///
/// # Errors
///
/// The [`Rejection`] of [`accept::job`].
pub fn job(dir: &Dir, id: &JobId, target: &str, key: &Key) -> Result<Job, Rejection> {
    let name = id.file_name();
    job_read(&name, dir.read_limited(&name, job::MAX_BYTES), target, key)
}

/// A job already read, as `read`, from the file `name` (which need not be
/// a job id's: a name that is not is refused), judged as [`job()`] judges
/// one: the drain reads many files at once with what `lstat` said of each,
/// and the HTTP intake has a body, not a file.
///
/// # Errors
///
/// The [`Rejection`] of [`accept::job`].
pub fn job_read(name: &str, read: FileRead, target: &str, key: &Key) -> Result<Job, Rejection> {
    accept::job(name, read, target, key)
}

/// [`job_read`], with an Ed25519 signature's curve check returned unmade
/// when every other rule holds ([`accept::job_later`]): a listener that
/// lists many new jobs at once checks each at its turn, or ahead of it on
/// another thread.
///
/// # Errors
///
/// The [`Rejection`] [`job_read`] would give.
pub fn job_read_later(
    name: &str,
    read: FileRead,
    target: &str,
    key: &Key,
) -> Result<(Job, Option<Unchecked>), Rejection> {
    accept::job_later(name, read, target, key)
}

/// The cancel marker of `id` in `cancel` (held open) of `target`, judged:
/// the verified marker, or the verdict on the file
/// ([`accept::Verdict::Missing`] when there is none).
///
/// # Errors
///
/// The [`Rejection`] of [`accept::marker`].
pub fn marker(cancel: &Dir, id: &JobId, target: &str, key: &Key) -> Result<Marker, Rejection> {
    let name = id.file_name();
    marker_as(cancel, &name, &name, target, key)
}

/// The marker file `file` in `dir`, judged as if it were named `judged_as`
/// in `cancel/` (a consumed marker keeps another name in the archive).
///
/// # Errors
///
/// The [`Rejection`] of [`accept::marker`].
pub fn marker_as(
    dir: &Dir,
    file: &str,
    judged_as: &str,
    target: &str,
    key: &Key,
) -> Result<Marker, Rejection> {
    let read = dir.read_limited(file, marker::MAX_BYTES);
    accept::marker(judged_as, read, target, key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::accept::Verdict;
    use crate::protocol::doc::outcome::Termination;
    use crate::protocol::doc::{Detail, to_file_bytes};
    use crate::store::fsops::Flush;

    const ID: &str = "20261129-193000-9f2c4e1ab37d5c08";

    fn signed(key: &Key) -> Outcome {
        let detail = Detail::default();
        let at = "2026-11-29T19:30:05.000Z";
        Outcome::unsigned(
            ID,
            "PC",
            Termination::Exited,
            Some(0),
            Some(at),
            at,
            &detail,
        )
        .signed(key)
    }

    fn judged(bytes: Option<&[u8]>) -> Result<Outcome, Rejection> {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_trusted(tmp.path()).unwrap();
        let id = JobId::parse(ID).unwrap();
        if let Some(b) = bytes {
            assert!(dir.publish(&id.file_name(), b, Flush::Nothing).unwrap());
        }
        result(&dir, &id, "PC", &Key::from_bytes(&[7u8; 32]).unwrap())
    }

    #[test]
    fn a_result_is_verified_forged_or_missing() {
        let key = Key::from_bytes(&[7u8; 32]).unwrap();
        let genuine = signed(&key);
        assert_eq!(judged(Some(&to_file_bytes(&genuine))), Ok(genuine));
        let other = signed(&Key::from_bytes(&[8u8; 32]).unwrap());
        let forged = judged(Some(&to_file_bytes(&other))).unwrap_err();
        assert_eq!(forged.verdict, Verdict::BadSignature);
        assert_eq!(judged(None).unwrap_err().verdict, Verdict::Missing);
        assert_eq!(judged(Some(b"{")).unwrap_err().verdict, Verdict::Malformed);
    }

    #[test]
    fn a_marker_is_judged_under_its_name_in_cancel() {
        use crate::base::names::Machine;
        let key = Key::from_bytes(&[7u8; 32]).unwrap();
        let id = JobId::parse(ID).unwrap();
        let pc = Machine::parse("PC", "target").unwrap();
        let laptop = Machine::parse("LAPTOP", "origin").unwrap();
        let m = Marker::sign(&key, &id, &pc, &laptop, "2026-11-29T19:30:02.000Z");
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_trusted(tmp.path()).unwrap();
        assert_eq!(
            marker(&dir, &id, "PC", &key).unwrap_err().verdict,
            Verdict::Missing
        );
        let consumed = format!("{ID}.cancel.json");
        assert!(
            dir.publish(&consumed, &to_file_bytes(&m), Flush::Nothing)
                .unwrap()
        );
        assert_eq!(
            marker_as(&dir, &consumed, &id.file_name(), "PC", &key),
            Ok(m.clone())
        );
        // Under its archive name it names another job's file.
        let r = marker_as(&dir, &consumed, &consumed, "PC", &key).unwrap_err();
        assert_ne!(r.verdict, Verdict::Valid);
        assert!(
            dir.publish(&id.file_name(), &to_file_bytes(&m), Flush::Nothing)
                .unwrap()
        );
        assert_eq!(marker(&dir, &id, "PC", &key), Ok(m));
        assert_eq!(
            marker(&dir, &id, "NAS", &key).unwrap_err().verdict,
            Verdict::TargetMismatch
        );
    }

    #[test]
    fn a_job_is_verified_or_refused_by_its_verdict() {
        let key = Key::from_bytes(&[7u8; 32]).unwrap();
        let id = JobId::parse(ID).unwrap();
        let created = crate::base::clock::parse("2026-11-29T19:30:00.000Z").unwrap();
        let spec = crate::protocol::doc::Spec::of(vec!["true".into()]);
        let signed = Job::sign(&key, id.clone(), "PC", "LAPTOP", created, spec);
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_trusted(tmp.path()).unwrap();
        assert_eq!(
            job(&dir, &id, "PC", &key).unwrap_err().verdict,
            Verdict::Missing
        );
        assert!(
            dir.publish(&id.file_name(), &signed.to_file_bytes(), Flush::Nothing)
                .unwrap()
        );
        assert_eq!(job(&dir, &id, "PC", &key).unwrap().sig, signed.sig);
        assert_eq!(
            job(&dir, &id, "NAS", &key).unwrap_err().verdict,
            Verdict::WrongTarget
        );
        let other = Key::from_bytes(&[8u8; 32]).unwrap();
        assert_eq!(
            job(&dir, &id, "PC", &other).unwrap_err().verdict,
            Verdict::BadSignature
        );
    }
}
