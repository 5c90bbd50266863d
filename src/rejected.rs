//! `archive/rejected/`: where refused inputs go, each with a
//! `<name>.reason.json` saying why (docs/protocol.md §6.6), and how that reason is found
//! again.
//!
//! A name may be refused more than once (a job file resurrected by sync, a
//! marker for the same id), so each refusal takes the first free slot:
//! `<name>`, then `<name>.1`, `<name>.2`, … up to [`SLOTS`]. Because the
//! first free slot is always taken, the slots in use run from 0 without a
//! gap, which lets a lookup stop at the first free one.

use serde::{Deserialize, Serialize};

use crate::accept::Rejection;
use crate::clock;
use crate::error::{Code, Error, Result};
use crate::fsops;
use crate::key::Key;
use crate::layout::TargetDirs;
use crate::names::JobId;
use crate::read::FileRead;

/// How many refusals of one name are kept.
pub const SLOTS: u32 = 1000;

/// Largest reason document read back.
pub const MAX_BYTES: u64 = 64 * 1024;

/// What was refused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A job file from the inbox.
    #[default]
    Job,
    /// A cancel marker.
    Marker,
    /// A result file that does not verify.
    Result,
    /// Something in the place of one of the listener's own files or
    /// folders (a link, a directory).
    Layout,
}

/// A `<name>.reason.json` document. Fields are in alphabetical order, the
/// order earlier versions wrote them in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reason {
    /// The fingerprint ([`Key::fingerprint`]) of the key the refusing side
    /// judged with, so a sender whose key differs can tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_fingerprint: Option<String>,
    /// What was refused (a reason without it is a job's).
    #[serde(default)]
    pub kind: Kind,
    /// Why, naming the offending field or value.
    pub message: String,
    /// When.
    pub rejected_at: String,
    /// The listener's target.
    pub target: String,
    /// The verdict (docs/protocol.md §6.2).
    pub verdict: String,
}

impl Reason {
    /// The reason for refusing an input of `kind` by `r`, on `target`, now.
    pub fn new(r: &Rejection, kind: Kind, target: &str) -> Reason {
        Reason {
            key_fingerprint: None,
            kind,
            message: r.message.clone(),
            rejected_at: clock::format(clock::now()),
            target: target.to_string(),
            verdict: r.verdict.as_str().to_string(),
        }
    }
}

impl Reason {
    /// The same, naming the fingerprint of `key`, which judged the input.
    pub fn judged_with(mut self, key: &Key) -> Reason {
        self.key_fingerprint = Some(key.fingerprint());
        self
    }
}

/// Moves the refused input at `path` (named `name`) to the first free slot
/// of `archive/rejected/`, its reason written beside it first.
///
/// # Errors
///
/// A file error, or `INTERNAL` when every slot is taken.
pub fn file(dirs: &TargetDirs, path: &std::path::Path, name: &str, reason: &Reason) -> Result<()> {
    let body = crate::doc::to_file_bytes(reason);
    for n in 0..SLOTS {
        let (dest, reason_path) = dirs.rejected_files(name, n);
        if std::fs::symlink_metadata(&dest).is_ok()
            || std::fs::symlink_metadata(&reason_path).is_ok()
        {
            continue;
        }
        if !fsops::publish(&reason_path, &body, fsops::Flush::Nothing)? {
            continue;
        }
        if fsops::move_no_replace(path, &dest)? {
            return Ok(());
        }
        fsops::remove(&reason_path)?;
    }
    Err(Error::new(
        Code::Internal,
        format!(
            "cannot find a free name for {name} in {}",
            dirs.rejected().display()
        ),
    ))
}

/// Why a job file named after `id` was refused, if one was. Markers are
/// refused into the same slots; their reasons are passed over.
pub fn find_job_rejection(dirs: &TargetDirs, id: &JobId) -> Option<Reason> {
    let name = id.file_name();
    for n in 0..SLOTS {
        let (dest, reason_path) = dirs.rejected_files(&name, n);
        let FileRead::Bytes(b) = fsops::read_limited(&reason_path, MAX_BYTES) else {
            if std::fs::symlink_metadata(&dest).is_err() {
                // The first free slot: no later one is in use.
                return None;
            }
            continue;
        };
        match serde_json::from_slice::<Reason>(&b) {
            Ok(r) if r.kind == Kind::Job => return Some(r),
            _ => continue,
        }
    }
    None
}

/// The last `n` refused job files, newest first: their names and reasons
/// (for `status`). Markers and other kinds are passed over.
pub fn recent_jobs(dirs: &TargetDirs, n: usize) -> Vec<(String, Reason)> {
    let Ok(rd) = std::fs::read_dir(dirs.rejected()) else {
        return Vec::new();
    };
    let mut found: Vec<(Option<std::time::SystemTime>, String)> = rd
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            name.ends_with(".reason.json").then_some(())?;
            Some((e.metadata().ok().and_then(|m| m.modified().ok()), name))
        })
        .collect();
    found.sort();
    found
        .into_iter()
        .rev()
        .filter_map(|(_, name)| {
            let path = dirs.rejected().join(&name);
            let FileRead::Bytes(b) = fsops::read_limited(&path, MAX_BYTES) else {
                return None;
            };
            let reason: Reason = serde_json::from_slice(&b).ok()?;
            let refused = name.strip_suffix(".reason.json")?.to_string();
            (reason.kind == Kind::Job).then_some((refused, reason))
        })
        .take(n)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reason_document_keeps_its_keys() {
        let r = Reason {
            key_fingerprint: None,
            kind: Kind::Marker,
            message: "m".into(),
            rejected_at: "t".into(),
            target: "PC".into(),
            verdict: "bad-signature".into(),
        };
        let text = String::from_utf8(crate::doc::to_file_bytes(&r)).unwrap();
        let earlier = serde_json::json!({
            "verdict": "bad-signature", "message": "m", "rejectedAt": "t",
            "kind": "marker", "target": "PC",
        });
        assert_eq!(
            text,
            String::from_utf8(crate::doc::to_file_bytes(&earlier)).unwrap()
        );
        assert_eq!(serde_json::from_str::<Reason>(&text).unwrap(), r);
    }

    #[test]
    fn a_reason_without_a_kind_is_a_jobs() {
        let r: Reason = serde_json::from_str(
            r#"{"verdict":"malformed","message":"m","rejectedAt":"t","target":"PC","extra":1}"#,
        )
        .unwrap();
        assert_eq!(r.kind, Kind::Job);
    }
}
