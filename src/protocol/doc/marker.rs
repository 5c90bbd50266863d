//! Cancel markers (docs/protocol.md §5.1): `cancel/<jobId>.json`, at most 16 KiB.

use serde::Serialize;

use crate::base::names::{JobId, Machine};
use crate::trust::Key;

/// Largest marker file accepted, checked before reading.
pub const MAX_BYTES: u64 = 16 * 1024;

/// A cancel marker whose fields have been validated.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Marker {
    /// The job to stop.
    pub job_id: String,
    /// The machine that runs it.
    pub target: String,
    /// When the marker was made (RFC 3339, as signed).
    pub created_at: String,
    /// The machine that asked.
    pub origin: String,
    /// `ed25519` in the roster lane; absent for the fleet key's HMAC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alg: Option<String>,
    /// The signing key's id on the roster; absent for the fleet key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    /// The origin's signature over [`canonical`], in hex.
    pub sig: String,
}

/// `cancel|{jobId}|{target}|{createdAt}|{origin}`.
pub fn canonical(job_id: &str, target: &str, created_at: &str, origin: &str) -> String {
    format!("cancel|{job_id}|{target}|{created_at}|{origin}")
}

impl Marker {
    /// A newly signed marker asking `target` to stop `job_id`.
    pub fn sign(
        key: &Key,
        job_id: &JobId,
        target: &Machine,
        origin: &Machine,
        created_at: &str,
    ) -> Marker {
        let signed = key.sign_document(&canonical(
            job_id.as_str(),
            target.as_str(),
            created_at,
            origin.as_str(),
        ));
        Marker {
            job_id: job_id.to_string(),
            target: target.to_string(),
            created_at: created_at.to_string(),
            origin: origin.to_string(),
            alg: signed.alg,
            key_id: signed.key_id,
            sig: signed.sig,
        }
    }

    /// This marker's canonical string.
    pub fn canonical(&self) -> String {
        canonical(&self.job_id, &self.target, &self.created_at, &self.origin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_marker_matches_the_reference_canonical_string() {
        let key = Key::from_file_text(
            b"3f6c2a9e1b7d4c58a0e9f2b6d1c7e4a89b3d5f7a1c2e4b6d8f0a1b3c5d7e9f21\n",
        )
        .unwrap();
        let m = Marker::sign(
            &key,
            &JobId::parse("20261129-193000-9f2c4e1ab37d5c08").unwrap(),
            &Machine::parse("PC", "target").unwrap(),
            &Machine::parse("LAPTOP", "origin").unwrap(),
            "2026-11-29T19:31:00.000Z",
        );
        assert_eq!(
            m.canonical(),
            "cancel|20261129-193000-9f2c4e1ab37d5c08|PC|2026-11-29T19:31:00.000Z|LAPTOP"
        );
        assert_eq!(
            m.sig,
            "89a21273331b6358c233244cb4930216fd055b44fe13f755be9a48434225c528"
        );
    }
}
