//! The test modules, one per area.

mod cancel;
mod cli;
mod config;
mod generated;
mod listen;
mod manners;
mod status;
mod sweep_verify;
mod vectors;
