//! fleet-dispatch: signed jobs handed between the machines of a fleet through
//! a folder they already share.
//!
//! The protocol, in brief (the whole of it is `docs/protocol.md`, which
//! module docs cite by section): a sender signs a job and publishes it at
//! `<root>/<TARGET>/inbox/<id>.json`; the target's listener accepts it by the
//! rules in [`accept`], runs it with [`runner`], writes a signed result to
//! `results/<id>.json` and archives the job so it never runs twice. A signed
//! marker at `cancel/<id>.json` stops it, running or queued. Every state is a
//! place ([`layout`]) and every transition a no-replace move ([`fsops`]).
//!
//! The modules in layers, each importing only from its own layer or those
//! above it in this list (a test reads this list and holds the code to it):
//!
//! 1. foundations: [`error`], [`exit`], [`random`], [`read`], [`clock`], [`names`], [`platform`], [`out`], [`screen`], [`retention`]
//! 2. files: [`fsops`], [`layout`], [`events`], [`listing`]
//! 3. trust: [`trust`]
//! 4. documents and rules: [`doc`], [`accept`], [`judge`], [`governor`], [`replay`], [`jobenv`], [`settle`], [`dependency`], [`service`]
//! 5. places and state: [`state`], [`heartbeat`], [`rejected`], [`observe`], [`jobref`], [`output`], [`prune`], [`doctor`], [`report`]
//! 6. requests: [`submit`], [`cancel`], [`wait`]
//! 7. the engine: [`shutdown`], [`watcher`], [`publisher`], [`runner`], [`listener`]
//! 8. views: [`view`]
//! 9. front ends: [`http`], [`cli`], [`config`], [`complete`], [`send`], [`mcp`], [`demo`], [`cmd`]
//!
//! Foundations name things (ids, times, exit statuses) and wrap the
//! operating system; files place bytes without ever replacing; trust holds
//! the keys, loaded once from their files, and every signature; documents
//! and rules are pure verdicts over values; places and state read what the
//! folder and the ledger say; requests are what a sender asks of a target;
//! the engine runs and stops jobs; views word, colour and escape the
//! models the layers above compute, deciding nothing; front ends parse,
//! call and print, the sender ([`send`]) building and delivering what
//! `enqueue` and `cancel` ask, for [`cmd`] to print and for [`mcp`] to
//! answer an agent with.

#![deny(missing_docs)]
#![deny(unsafe_code)]

pub mod accept;
pub mod cancel;
pub mod cli;
pub mod clock;
pub mod cmd;
pub mod complete;
pub mod config;
pub mod demo;
pub mod dependency;
pub mod doc;
pub mod doctor;
pub mod error;
pub mod events;
pub mod exit;
pub mod fsops;
pub mod governor;
pub mod heartbeat;
pub mod http;
pub mod jobenv;
pub mod jobref;
pub mod judge;
pub mod layout;
pub mod listener;
pub mod listing;
pub mod mcp;
pub mod names;
pub mod observe;
pub mod out;
pub mod output;
#[allow(unsafe_code)]
pub mod platform;
pub mod prune;
pub mod publisher;
pub mod random;
pub mod read;
pub mod rejected;
pub mod replay;
pub mod report;
pub mod retention;
pub mod runner;
pub mod screen;
pub mod send;
pub mod service;
pub mod settle;
pub mod shutdown;
pub mod state;
pub mod submit;
pub mod trust;
pub mod view;
pub mod wait;
pub mod watcher;
