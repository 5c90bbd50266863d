//! fleet-dispatch: signed jobs handed between the machines of a fleet through
//! a folder they already share.
//!
//! The protocol, in brief (the full contract is SPEC.md, mirrored in the
//! README): a sender signs a job and publishes it at
//! `<root>/<TARGET>/inbox/<id>.json`; the target's listener accepts it by the
//! rules in [`accept`], runs it with [`runner`], writes a signed result to
//! `results/<id>.json` and archives the job so it never runs twice. A signed
//! marker at `cancel/<id>.json` stops it, running or queued. Every state is a
//! place ([`layout`]) and every transition a no-replace move ([`fsops`]).
//!
//! Modules, from the rules outwards:
//! - [`names`], [`clock`]: ids, machine names, timestamps, durations;
//! - [`key`]: the fleet key and HMAC signatures;
//! - [`doc`]: the three signed document kinds and their canonical strings;
//! - [`accept`]: the acceptance verdicts; [`replay`]: the replay guard;
//!   [`governor`], [`retention`]: the other pure rules;
//! - [`layout`], [`fsops`], [`state`], [`observe`], [`rejected`]: the folder
//!   and local state;
//! - [`runner`], [`watcher`], [`listener`], [`publisher`], [`shutdown`]:
//!   running and stopping jobs, and placing their results; [`jobenv`]: the
//!   environment a job is given;
//! - [`http`]: the HTTP intake, a second door into the same listener;
//! - [`cli`], [`config`], [`cmd`], [`wait`], [`out`]: the command line.

#![deny(missing_docs)]
#![deny(unsafe_code)]

pub mod accept;
pub mod cancel;
pub mod cli;
pub mod clock;
pub mod cmd;
pub mod config;
pub mod doc;
pub mod error;
pub mod exit;
pub mod fsops;
pub mod governor;
pub mod heartbeat;
pub mod http;
pub mod jobenv;
pub mod key;
pub mod layout;
pub mod listener;
pub mod names;
pub mod observe;
pub mod out;
#[allow(unsafe_code)]
pub mod platform;
pub mod publisher;
pub mod random;
pub mod read;
pub mod rejected;
pub mod replay;
pub mod retention;
pub mod runner;
pub mod shutdown;
pub mod state;
pub mod submit;
pub mod wait;
pub mod watcher;
