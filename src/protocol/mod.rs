//! The documents and the pure rules over them: what a job, marker and
//! result are ([`doc`]), when one is accepted ([`accept`]), the one door that
//! reads and judges each kind ([`judge`]), a job's environment, the settle
//! rule for half-written files and the dependency rules. Verdicts over
//! values: the only file reads are the judges' own.

pub mod accept;
pub(crate) mod dependency;
pub mod doc;
pub mod jobenv;
pub(crate) mod judge;
pub(crate) mod settle;
