//! The storage port and its local-folder implementation: [`fsops::Dir`]
//! places bytes without ever replacing, [`layout`] names every place in the
//! root and on this machine, [`events`] and [`listing`] see what arrived.
//! [`objstore`] is a root on an S3-compatible object store: its address,
//! settings, client and the conditional-write probe (docs/object-store.md).
//! [`port`] is the seam over both: the places of one target, on a folder
//! or on a bucket.

pub(crate) mod events;
pub mod fsops;
pub(crate) mod layout;
pub(crate) mod listing;
pub mod objstore;
pub(crate) mod port;
