//! The HTTP intake (`listen --http ADDR`): a second door into the same
//! listener, for senders that can reach the target directly (LAN, VPN), so
//! a job starts and a cancel lands without waiting for the sync engine.
//!
//! The protocol, JSON in and out, one request per connection:
//!
//! ```text
//! POST /v1/jobs                 body: a signed job (docs/protocol.md §5.2), ≤ 1 MiB
//!   → 202 {"jobId", "target", "status": "queued"}
//! POST /v1/jobs/{id}/cancel     body: a signed marker for {id} (§5.1), ≤ 16 KiB
//!   → 202 {"jobId", "status": "requested", "job": "queued"|"running"|"not seen yet", …}
//!   → 202 {"jobId", "status": "not_running", "result": <signed result>}   (nothing written)
//!   → 409 {"jobId", "status": "blocked", "reason"}   (an invalid file holds cancel/{id}.json)
//! GET  /v1/jobs/{id}            → 200 {"jobId", "state": "queued"|"running"|"done"|"rejected"|"unknown",
//!                                      "result": <signed result, when done>, "reason": <when rejected>,
//!                                      "waitsFor": <["TARGET:ID", …], when queued and held by a dependency>}
//! GET  /v1/status               → 200 the `status --json` document for this target
//!
//! GETs carry X-Fleet-Signature: t=<unix seconds>,sig=<hex signature of "get|<target>|<path>|<t>">
//!   (the fleet key's HMAC-SHA256, or a roster machine's Ed25519: `auth`)
//! errors: {"error": {"code", "message"}} with 400 BAD_REQUEST, 403 FORBIDDEN,
//!   404 NOT_FOUND, 408/411/413/431 BAD_REQUEST, 422 VALIDATION_ERROR, 503 BUSY,
//!   500 INTERNAL_ERROR; no side effect on any error
//! ```
//!
//! Nothing here runs anything: a job taken over HTTP is published into
//! `inbox/` exactly as `enqueue` would, then the listener is woken, so the
//! acceptance rules, the replay guard, the drain order and the cancel check
//! apply to both doors by construction, and one job id runs once whichever
//! door it came through. A marker is placed in `cancel/` as `cancel` would,
//! then handed straight to the runner, which stops the job if it is the one
//! running. No TLS: SECURITY.md says what travels in clear text.
//!
//! This is the intake only; the sending side, which POSTs to it, is
//! [`crate::front::send::http`].

pub mod auth;
mod bucket;
pub mod routes;
pub mod server;

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use crate::base::error::{Code, Error, Result};
use crate::engine::bucket::Door;
use crate::engine::listener::Handle;

pub use server::Server;

/// Parses `--http`: `HOST:PORT`, or a bare port for `127.0.0.1:PORT`.
pub fn bind_addr(s: &str) -> Result<SocketAddr> {
    let bad = || {
        Error::validation(format!(
            "--http {s:?}: write a port (7070, on 127.0.0.1) or HOST:PORT (0.0.0.0:7070)"
        ))
    };
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        let port: u16 = s.parse().map_err(|_| bad())?;
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.to_socket_addrs()
        .map_err(|_| bad())?
        .next()
        .ok_or_else(bad)
}

/// Starts the intake on `addr`, feeding the listener behind `handle`.
pub fn serve(addr: SocketAddr, handle: Handle, verbose: bool) -> Result<Server> {
    start(addr, routes::Behind::Folder(handle), verbose)
}

/// Starts the intake on `addr`, feeding a bucket's listener through `door`.
pub fn serve_bucket(addr: SocketAddr, door: Door, verbose: bool) -> Result<Server> {
    start(addr, routes::Behind::Bucket(door), verbose)
}

fn start(addr: SocketAddr, behind: routes::Behind, verbose: bool) -> Result<Server> {
    let routes = Arc::new(routes::Routes::new(behind, verbose));
    Server::start(addr, server::Limits::default(), routes).map_err(|e| {
        let hint = match e.kind() {
            std::io::ErrorKind::AddrNotAvailable => {
                "this machine has no such address: give one of its own (or 0.0.0.0 for all) with --http"
            }
            std::io::ErrorKind::PermissionDenied => {
                "ports below 1024 need privileges: pick a higher one with --http"
            }
            _ => "pick another port with --http, or stop what holds this one",
        };
        Error::new(Code::Internal, format!("cannot listen on {addr}: {e}")).hint(hint)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_port_means_loopback() {
        assert_eq!(
            bind_addr("7070").unwrap(),
            "127.0.0.1:7070".parse().unwrap()
        );
        assert_eq!(
            bind_addr("0.0.0.0:7070").unwrap(),
            "0.0.0.0:7070".parse().unwrap()
        );
        assert_eq!(
            bind_addr("[::1]:7070").unwrap(),
            "[::1]:7070".parse().unwrap()
        );
        for bad in ["", "70700", "http://x:1", "pc", ":"] {
            assert_eq!(bind_addr(bad).unwrap_err().code, Code::Validation, "{bad}");
        }
    }
}
