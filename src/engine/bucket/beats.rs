//! The heartbeat of a listener on a bucket: the signed document of
//! docs/protocol.md §7.11 (the folder's `listener.json`) at
//! `PREFIX/TARGET/listener.json`, replaced as it changes; `status` reads it,
//! and a starting listener refuses to run beside a live one.

use std::sync::Arc;
use std::time::Duration;

use super::objects::Replaced;
use crate::base::clock;
use crate::places::heartbeat::Beat;
use crate::protocol::doc;
use crate::store::port::bucket::BucketTarget;
use crate::trust::Key;

/// The heartbeat of a listener on a bucket: the signed document of
/// docs/protocol.md §7.11 at `PREFIX/TARGET/listener.json`, replaced.
pub struct Beats {
    pub(super) object: Replaced,
    pub(super) key: Arc<Key>,
    pub(super) target: String,
    pub(super) host: String,
    pub(super) instance: String,
    pub(super) run: String,
    pub(super) started_at: String,
    pub(super) poll: Duration,
}

impl Beats {
    /// Writes the heartbeat now; a store that does not answer is said by
    /// the next write that works (a heartbeat is informational).
    pub fn write(&mut self, t: &BucketTarget, running: &[String], state: &str) {
        let beat = Beat {
            target: self.target.clone(),
            pid: std::process::id(),
            state: state.to_string(),
            running: running.first().cloned(),
            running_jobs: running.to_vec(),
            started_at: self.started_at.clone(),
            heartbeat_at: clock::format(clock::now()),
            poll_interval_ms: self.poll.as_millis() as u64,
            version: env!("CARGO_PKG_VERSION").to_string(),
            host: self.host.clone(),
            instance: self.instance.clone(),
            key_fingerprint: self.key.key_id(),
            run: self.run.clone(),
            alg: None,
            key_id: None,
            sig: String::new(),
        };
        let signed = self.key.sign_document(&beat.canonical());
        let beat = Beat {
            alg: signed.alg,
            key_id: signed.key_id,
            sig: signed.sig,
            ..beat
        };
        let _ = self.object.write(t, &doc::to_file_bytes(&beat));
    }
}
