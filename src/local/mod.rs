//! Machine-local state that never syncs: the one-listener lock and the
//! ledger of processed jobs ([`state`]), and the governor file that gates
//! what runs ([`governor`]). The files this machine keeps of what it sent
//! live with the references that read them, in
//! [`crate::places::jobref`].

pub(crate) mod governor;
pub(crate) mod state;
