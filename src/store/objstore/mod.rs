//! A root on an S3-compatible object store, `s3://BUCKET[/PREFIX]`: its
//! address ([`S3Root`]), where the store is and the credentials
//! ([`Settings`]), a synchronous client with the few operations the
//! protocol needs ([`Client`]), and the probe that refuses a store which
//! does not honour create-only writes ([`probe()`]). What works on such a
//! root, and which stores pass, is docs/object-store.md.
//!
//! On a shared folder a no-replace rename makes one machine the owner of
//! a job; on an object store a PUT with `If-None-Match: *` does, provided
//! the store answers the loser with 412. Some stores accept the header and
//! overwrite anyway, so [`probe()`] tries before anything relies on it.

mod address;
mod client;
mod probe;
mod resolve;
mod settings;

pub use address::{S3Root, SCHEME, is_s3};
pub use client::{Answer, Client, Entry, Reply, Retry};
pub use probe::{PROBE_DIR, Probed, probe};
pub use settings::{
    ALLOW_HTTP_VAR, Creds, DEFAULT_REGION, ENDPOINT_VAR, PATH_STYLE_VAR, REGION_VAR, Settings,
    endpoint_rule, is_loopback, profile_fields,
};

/// The settings from this process's environment and the shared
/// credentials file.
pub fn settings_from_env() -> crate::base::error::Result<Settings> {
    Settings::resolve(&|k| std::env::var(k).ok(), &|p| {
        std::fs::read_to_string(p).ok()
    })
}
