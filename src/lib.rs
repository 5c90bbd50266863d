//! fleet-dispatch: signed jobs handed between the machines of a fleet through
//! a folder they already share.
//!
//! The protocol, in brief (the whole of it is `docs/protocol.md`, which
//! module docs cite by section): a sender signs a job and publishes it at
//! `<root>/<TARGET>/inbox/<id>.json`; the target's listener accepts it by the
//! rules in [`protocol::accept`], runs it with [`engine::runner`], writes a signed result to
//! `results/<id>.json` and archives the job so it never runs twice. A signed
//! marker at `cancel/<id>.json` stops it, running or queued. Every state is a
//! place ([`store::layout`]) and every transition a no-replace move ([`store::fsops`]).
//!
//! The source is one folder per layer, each importing only from its own
//! folder or those above it in this list, and no module anywhere imports in
//! a circle (a test reads this list and holds the code to it):
//!
//! 1. [`base`]: names, times, errors, exit statuses, bounded reads, output
//! 2. [`platform`]: the operating system, one leaf file per system
//! 3. [`store`]: the storage port (the folder), the places in it, change events
//! 4. [`trust`]: the keys, loaded once from their files, and every signature
//! 5. [`protocol`]: the documents and the pure rules that judge them
//! 6. [`local`]: this machine's own state: the ledger, the lock, the governor, what it sent
//! 7. [`places`]: what the shared folder says, read through the judges
//! 8. [`requests`]: submit, cancel, wait, doctor
//! 9. [`engine`]: the listener, the runner, the watcher, the publisher
//! 10. [`view`]: text, JSON and HTML renderers over the models above
//! 11. [`front`]: the command line, config, sender, HTTP intake, MCP server
//!
//! Foundations name things and wrap the operating system; the store places
//! bytes without ever replacing; trust holds every signature; the protocol
//! is pure verdicts over values; local state and places read what this
//! machine and the folder say; requests are what a sender asks of a
//! target; the engine runs and stops jobs; views word, colour and escape
//! the models the layers above compute, deciding nothing; front ends
//! parse, call and print. `docs/architecture.md` has a paragraph per folder
//! and one job's path from `enqueue` to `result` through the files.

#![deny(missing_docs)]
// The library is documented for the people who change it: `.ci/run` builds
// its pages with the private items, where links to them resolve.
#![allow(rustdoc::private_intra_doc_links)]
#![deny(unsafe_code)]

pub mod base;
pub mod engine;
pub mod front;
pub mod local;
pub mod places;
#[allow(unsafe_code)]
pub mod platform;
pub mod protocol;
pub mod requests;
pub mod store;
pub mod trust;
pub mod view;
