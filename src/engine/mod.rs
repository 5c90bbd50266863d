//! The engine: the listener that drains an inbox and runs each job
//! ([`listener`], [`runner`], talking through a [`mailbox`]), the watcher that polls for cancels while a
//! job runs, the publisher of results, and the shutdown that stops it all;
//! [`bucket`], the listener on an object-store root.

pub(crate) mod bucket;
pub(crate) mod listener;
pub(crate) mod mailbox;
pub(crate) mod publisher;
pub(crate) mod runner;
pub(crate) mod shutdown;
pub(crate) mod watcher;
