//! The conditional-write probe: a store that overwrites on `If-None-Match:
//! *` would let two machines both claim one job, and its answer (200) looks
//! like success, so the only way to know is to try. The probe creates a
//! fresh random key twice, create-only; the second PUT must be refused
//! with 412. Anything else refuses the store, naming its answer.

use super::address::S3Root;
use super::client::{Answer, Client};
use crate::base::error::{Error, Result};

/// The folder of probe keys under the root's prefix.
pub const PROBE_DIR: &str = ".probe/";

/// What a passed probe saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probed {
    /// The key tried.
    pub key: String,
    /// The first PUT's status (2xx).
    pub first: u16,
}

/// Probes the store at `root`: `Ok` when a second create-only PUT of a new
/// key is refused with 412, else `CONFIG` naming the store's answer. The
/// probe key is removed afterwards when the store allows it.
pub fn probe(client: &Client, root: &S3Root) -> Result<Probed> {
    let mut id = [0u8; 16];
    crate::base::random::fill(&mut id);
    let key = root.key(&format!("{PROBE_DIR}{}", hex::encode(id)));
    let refuse = |what: String| {
        Error::config(format!("object store {root}: {what}")).hint(
            "a root needs a store that refuses a second create-only PUT; see docs/object-store.md",
        )
    };
    let first = match client.create_only(&key, b"fleet-dispatch probe 1\n") {
        Answer::Done(r) => r.status,
        other => {
            return Err(refuse(format!(
                "the store {} to a create-only PUT of {key}",
                other.said()
            )));
        }
    };
    let second = client.create_only(&key, b"fleet-dispatch probe 2\n");
    // Best effort: the probe key is litter either way, not a danger.
    if let Answer::Done(h) = client.head(&key)
        && let Some(etag) = h.etag
    {
        let _ = client.delete_if_match(&key, &etag);
    }
    match second {
        Answer::Precondition => Ok(Probed { key, first }),
        Answer::Done(r) => Err(refuse(format!(
            "the store answered {} to a second create-only PUT of {key}: it overwrites, so two machines could both claim one job",
            r.status
        ))),
        other => Err(refuse(format!(
            "the store {} to a second create-only PUT of {key}, where 412 was due",
            other.said()
        ))),
    }
}
