//! Foundations: the names of things (job ids, targets, times, exit statuses
//! and error codes), bounded reads, randomness, and the one writer of what a
//! person sees on standard error. Nothing here knows a folder or a document.

pub mod clock;
pub mod error;
pub mod exit;
pub mod names;
pub(crate) mod out;
pub mod random;
pub mod read;
pub(crate) mod retention;
pub(crate) mod screen;
