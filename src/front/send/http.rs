//! The HTTP route of the sender (`--via http://HOST:PORT`): one POST over a
//! plain `TcpStream`, with a connect timeout and a read timeout, to the
//! intake of [`crate::front::http`], and the rule for falling back to the folder
//! ([`job`], [`marker`]).
//!
//! Only a target that cannot be reached at all (no address, connection
//! refused or timed out) falls back to the shared folder, because then
//! nothing can have arrived. An answer, even an error, is the target's word
//! and is reported as it is, never retried through the folder; a connection
//! lost mid-request is reported too, since the request may have landed.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use serde_json::Value;

use crate::base::error::{Code, Error, Result};
use crate::base::names::JobId;
use crate::base::read::FileRead;
use crate::front::http::routes;
use crate::places::observe::{Forged, Observed};
use crate::protocol::accept;
use crate::protocol::doc::{self, Job, Marker};
use crate::requests::cancel::CancelStatus;
use crate::trust::Key;

/// How long to try to connect to each address of the target.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long to wait for the answer (the target flushes the file to disk).
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest answer read.
const MAX_ANSWER: u64 = 4 * 1024 * 1024;

/// A `--via` address: `http://HOST[:PORT][/PREFIX]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Url {
    host: String,
    port: u16,
    prefix: String,
    text: String,
}

impl std::fmt::Display for Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl Url {
    /// Parses `--via`; `VALIDATION_ERROR` for anything but plain `http://`.
    pub fn parse(s: &str) -> Result<Url> {
        let bad = |why: &str| Error::validation(format!("--via {s:?}: {why}"));
        if s.len() >= 8 && s[..8].eq_ignore_ascii_case("https://") {
            return Err(bad("https is not supported")
                .hint("reach the target through a VPN (WireGuard, Tailscale) or `ssh -L 7070:localhost:7070 PC`, then use http://"));
        }
        let rest = match s.get(..7) {
            Some(scheme) if scheme.eq_ignore_ascii_case("http://") => &s[7..],
            _ => return Err(bad("write http://HOST:PORT")),
        };
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        if path.contains(['?', '#'])
            || authority.contains('@')
            || path.contains(char::is_whitespace)
        {
            return Err(bad(
                "write http://HOST:PORT, with no user, query or fragment",
            ));
        }
        let port_of = |p: &str| {
            p.parse::<u16>()
                .map_err(|_| bad("the port is not a number from 1 to 65535"))
        };
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            match v6.split_once(']') {
                Some((h, "")) => (h, 80),
                Some((h, p)) if p.starts_with(':') => (h, port_of(&p[1..])?),
                _ => return Err(bad("write http://[ADDRESS]:PORT for IPv6")),
            }
        } else {
            match authority.split_once(':') {
                Some((h, p)) => (h, port_of(p)?),
                None => (authority, 80),
            }
        };
        if host.is_empty() || port == 0 {
            return Err(bad("write http://HOST:PORT"));
        }
        // A name or an address: anything else could never be reached, and
        // would only send the job into the folder instead.
        let v6 = authority.starts_with('[');
        let fits = |c: char| {
            c.is_ascii_alphanumeric() || c == '.' || c == '-' || (v6 && (c == ':' || c == '%'))
        };
        if !host.chars().all(fits) {
            return Err(bad("the host is not a name or an address"));
        }
        Ok(Url {
            host: host.to_string(),
            port,
            prefix: path.trim_end_matches('/').to_string(),
            text: s.trim_end_matches('/').to_string(),
        })
    }
}

/// What a POST came to.
#[derive(Debug)]
pub enum Sent {
    /// The target answered (any status).
    Answer {
        /// The HTTP status.
        status: u16,
        /// The JSON body (`Null` when it was not JSON).
        body: Value,
    },
    /// The target could not be reached: nothing was sent.
    Unreachable(String),
}

/// POSTs a signed job (its file bytes) to `url`.
pub fn post_job(url: &Url, job: &[u8]) -> Result<Sent> {
    post(url, routes::JOBS_PATH, job)
}

/// POSTs a signed cancel marker for `id` (its file bytes) to `url`.
pub fn post_cancel(url: &Url, id: &JobId, marker: &[u8]) -> Result<Sent> {
    post(url, &routes::cancel_path(id), marker)
}

/// POSTs `body` to `path` under `url`. `Err` when the connection broke after
/// the request started, since it may have landed.
fn post(url: &Url, path: &str, body: &[u8]) -> Result<Sent> {
    let addrs: Vec<SocketAddr> = match (url.host.as_str(), url.port).to_socket_addrs() {
        Ok(a) => a.collect(),
        Err(e) => {
            return Ok(Sent::Unreachable(format!(
                "cannot resolve {}: {e}",
                url.host
            )));
        }
    };
    let mut last = format!("{} has no address", url.host);
    let mut stream = None;
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = format!("{addr}: {e}"),
        }
    }
    let Some(mut stream) = stream else {
        return Ok(Sent::Unreachable(last));
    };
    let host = if url.host.contains(':') {
        format!("[{}]:{}", url.host, url.port)
    } else {
        format!("{}:{}", url.host, url.port)
    };
    let mut request = format!(
        "POST {}{path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: fleet-dispatch/{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        url.prefix,
        env!("CARGO_PKG_VERSION"),
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    let _ = stream.set_write_timeout(Some(ANSWER_TIMEOUT));
    let _ = stream.set_read_timeout(Some(ANSWER_TIMEOUT));
    let sent = stream.write_all(&request);
    // A server that refused early (413, 503) may have closed before taking
    // the whole body: its answer is still there to read.
    let mut raw = Vec::new();
    let read = (&mut stream).take(MAX_ANSWER).read_to_end(&mut raw);
    match (parse_answer(&raw), sent.and(read)) {
        (Some((status, body)), _) => Ok(Sent::Answer { status, body }),
        (None, Err(e)) => Err(lost(url, &e.to_string())),
        (None, Ok(_)) => Err(lost(url, "the answer is not HTTP")),
    }
}

fn lost(url: &Url, why: &str) -> Error {
    Error::new(
        Code::Internal,
        format!("{url} was reached but no answer came back ({why}); the request may or may not have landed"),
    )
    .hint("check with `fleet-dispatch status --target T`; resending the same document is safe")
}

/// The status and JSON body of a whole answer.
fn parse_answer(raw: &[u8]) -> Option<(u16, Value)> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..end]).ok()?;
    let mut words = head.split("\r\n").next()?.split(' ');
    let version = words.next()?;
    if !version.starts_with("HTTP/1.") {
        return None;
    }
    let status: u16 = words.next()?.parse().ok()?;
    if status == 100 {
        // An interim "continue": the real answer follows.
        return parse_answer(&raw[end + 4..]);
    }
    let body = serde_json::from_slice(&raw[end + 4..]).unwrap_or(Value::Null);
    Some((status, body))
}

/// The error for an answer that is not a success: the target's own code
/// and message when it sent them.
pub fn refusal(url: &Url, status: u16, body: &Value) -> Error {
    let sent = body["error"]["code"].as_str();
    let code = Code::ALL
        .into_iter()
        .find(|c| Some(c.as_str()) == sent)
        .unwrap_or(match status {
            400 | 408 | 411 | 413 | 431 => Code::BadRequest,
            403 => Code::Forbidden,
            404 => Code::NotFound,
            422 => Code::Validation,
            503 => Code::Busy,
            _ => Code::Internal,
        });
    // Whoever answers the URL wrote it: one line, no control characters.
    let message = body["error"]["message"].as_str().map_or_else(
        || format!("an unexpected answer {body}"),
        |m| crate::base::screen::tame(m).into_owned(),
    );
    Error::new(code, format!("{url} answered {status}: {message}"))
}

/// Says on stderr that the folder was used instead (`wrote`: a file was
/// written there; otherwise the folder answered alone).
pub fn say_fallback(url: &Url, why: &str, wrote: bool) {
    let did = if wrote {
        "wrote to the shared folder instead"
    } else {
        "used the shared folder instead"
    };
    crate::note!("fleet-dispatch: could not reach {url} ({why}); {did}");
}

/// Delivers a signed job (`bytes`, its file) over HTTP to `url`, or by
/// `fallback` (into the root) when the target cannot be reached (then
/// said on stderr).
pub fn job(
    url: &Url,
    job: &Job,
    bytes: &[u8],
    fallback: &mut dyn FnMut() -> Result<()>,
) -> Result<()> {
    match post_job(url, bytes)? {
        // Only the intake's own answer for this job means it is queued:
        // anything else at that address (a proxy, another service) that
        // says 202 has queued nothing.
        Sent::Answer { status: 202, body }
            if body["jobId"] == job.id.as_str() && body["status"] == "queued" =>
        {
            Ok(())
        }
        Sent::Answer { status: 202, body } => Err(Error::new(
            Code::Internal,
            format!(
                "{url} answered 202 without saying it queued {}: {}; nothing is known to be queued",
                job.id,
                crate::base::screen::tame(&body.to_string())
            ),
        )
        .hint("check that --via names a listener's HTTP intake (listen --http)")),
        Sent::Answer { status, body } => Err(refusal(url, status, &body)),
        Sent::Unreachable(why) => {
            fallback()?;
            say_fallback(url, &why, true);
            Ok(())
        }
    }
}

/// Delivers a signed cancel marker for `id` of `target` over HTTP to
/// `url`, or by `fallback` (into the root) when the target cannot be
/// reached (then said on stderr).
pub fn marker(
    url: &Url,
    (target, id): (&str, &JobId),
    key: &Key,
    marker: &Marker,
    fallback: &mut dyn FnMut() -> Result<CancelStatus>,
) -> Result<CancelStatus> {
    match post_cancel(url, id, &doc::to_file_bytes(marker))? {
        Sent::Answer { status, body } => cancel_answer(target, id, key, url, status, &body),
        Sent::Unreachable(why) => {
            let status = fallback()?;
            let wrote = matches!(status, CancelStatus::Requested { existing: None, .. });
            say_fallback(url, &why, wrote);
            Ok(status)
        }
    }
}

/// The target's answer to a cancel, as a status. Documents in it (a
/// result, an earlier marker) count only when they verify here.
fn cancel_answer(
    target: &str,
    id: &JobId,
    key: &Key,
    url: &Url,
    status: u16,
    body: &Value,
) -> Result<CancelStatus> {
    let doc = |v: &Value| FileRead::Bytes(v.to_string().into_bytes());
    match (status, body["status"].as_str()) {
        (202, Some("requested")) => Ok(CancelStatus::Requested {
            observed: match body["job"].as_str() {
                Some("running") => Observed::Running,
                Some("queued") => Observed::Queued,
                _ => Observed::NotSeen,
            },
            existing: body
                .get("marker")
                .and_then(|m| accept::marker(&id.file_name(), doc(m), target, key).ok()),
        }),
        (202, Some("not_running")) => {
            accept::outcome(id.as_str(), doc(&body["result"]), target, key)
                .map(|o| CancelStatus::NotRunning(Box::new(o)))
                .map_err(|r| Forged::new("the result it sent", &r).refusal_sent_by(url, id))
        }
        (409, Some("blocked")) => Ok(CancelStatus::Blocked(
            body["reason"].as_str().unwrap_or_default().to_string(),
        )),
        _ => Err(refusal(url, status, body)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_http_urls_and_refuses_the_rest() {
        let u = Url::parse("http://pc.lan:7070").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.prefix.as_str()),
            ("pc.lan", 7070, "")
        );
        let u = Url::parse("http://10.0.0.5/fleet/").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.prefix.as_str()),
            ("10.0.0.5", 80, "/fleet")
        );
        assert_eq!(u.to_string(), "http://10.0.0.5/fleet");
        let u = Url::parse("http://[::1]:7070").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("::1", 7070));
        let e = Url::parse("https://pc:7070").unwrap_err();
        assert_eq!(e.code, Code::Validation);
        assert!(
            e.message.contains("https is not supported"),
            "{}",
            e.message
        );
        for bad in [
            "pc:7070",
            "ftp://pc",
            "http://",
            "http://pc:x",
            "http://pc:0",
            "http://u@pc:1",
            "http://pc:1/?q",
            "http://exa mple:1",
            "http://pc_1:7070",
        ] {
            assert_eq!(Url::parse(bad).unwrap_err().code, Code::Validation, "{bad}");
        }
    }

    #[test]
    fn an_answer_keeps_the_targets_code() {
        let u = Url::parse("http://pc:7070").unwrap();
        let body =
            serde_json::json!({"error": {"code": "FORBIDDEN", "message": "bad-signature: no"}});
        let e = refusal(&u, 403, &body);
        assert_eq!(e.code, Code::Forbidden);
        assert_eq!(e.message, "http://pc:7070 answered 403: bad-signature: no");
        assert_eq!(refusal(&u, 503, &Value::Null).code, Code::Busy);
        // What the server says cannot start a line of its own.
        let lying = serde_json::json!({"error": {"code": "FORBIDDEN", "message": "no\nfleet-dispatch: ok"}});
        let e = refusal(&u, 403, &lying);
        assert!(!e.message.contains('\n'), "{}", e.message);
        assert_eq!(
            parse_answer(b"HTTP/1.1 202 Accepted\r\nA: b\r\n\r\n{\"status\":\"queued\"}\n"),
            Some((202, serde_json::json!({"status": "queued"})))
        );
        assert_eq!(parse_answer(b"garbage"), None);
    }
}
