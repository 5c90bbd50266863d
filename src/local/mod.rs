//! Machine-local state that never syncs, in the state directory: the
//! one-listener lock, the ledger of processed jobs and the roots this
//! machine knows ([`state`]), the governor file that gates what runs
//! ([`governor`]), and what this machine sent ([`sent`]: `last-enqueued`
//! and `sent`). Key and identity files are loaded by [`crate::trust`].

pub(crate) mod governor;
pub(crate) mod sent;
pub(crate) mod state;
