//! What one machine asks of the fleet: submit a job, cancel one, wait for
//! an answer, and check its own setup ([`doctor`]).

pub(crate) mod cancel;
pub(crate) mod doctor;
pub(crate) mod lane;
pub(crate) mod submit;
pub(crate) mod wait;
