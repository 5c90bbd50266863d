//! What the shared folder says: heartbeats, rejections, a target observed
//! as a whole, job references, output files, retention's sweep and the
//! replay guard. Each reads (and some write) places in the root, judging
//! every document through [`crate::protocol::judge`].

pub mod heartbeat;
pub(crate) mod jobref;
pub(crate) mod observe;
pub(crate) mod output;
pub(crate) mod prune;
pub(crate) mod rejected;
pub(crate) mod replay;
pub mod report;
