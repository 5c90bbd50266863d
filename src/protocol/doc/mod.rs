//! The three signed document kinds of docs/protocol.md §5: cancel markers, jobs and
//! results. Each module owns its canonical string, its fields and how it is
//! written; the rules deciding whether a file is accepted live in
//! [`crate::protocol::accept`]. A result's `detail` ([`detail`]) and the run report it
//! is made from ([`report`]) sit beside the result.

pub mod detail;
pub mod job;
pub mod marker;
pub mod outcome;
pub mod report;

pub use detail::Detail;
pub use job::{Job, Priority, Spec};
pub use marker::Marker;
pub use outcome::{Outcome, Termination};

/// Serialises a document for writing: indented JSON (a person reading the
/// shared folder reads it as is) and a trailing newline.
pub fn to_file_bytes<T: serde::Serialize>(doc: &T) -> Vec<u8> {
    // Serialising plain structs of strings and numbers cannot fail.
    let mut out = serde_json::to_vec_pretty(doc).expect("documents serialise");
    out.push(b'\n');
    out
}
