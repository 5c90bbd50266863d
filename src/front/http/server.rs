//! A small HTTP/1.1 server on `std::net`, written here rather than borrowed
//! because the intake must bound what a hostile client can hold: an
//! acceptor thread hands connections to a fixed pool of workers through a
//! bounded queue and answers `503` at once when the queue is full; each
//! request has a deadline counted from its accept, an idle timeout per read,
//! a 16 KiB cap on its head, and a body cap checked against `Content-Length`
//! before any body byte is read. One request per connection, always
//! `Connection: close`. A panic in a handler becomes a `500`; nothing a
//! client sends can stop the acceptor or a worker.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::base::error::{Code, Error};

/// What one server may spend on its clients.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Worker threads: requests handled at the same time.
    pub workers: usize,
    /// Accepted connections waiting for a worker; one more is answered `503`.
    pub queue: usize,
    /// Largest request line plus headers.
    pub head_bytes: usize,
    /// From accept to the end of the head.
    pub head_time: Duration,
    /// From accept to the end of the body.
    pub body_time: Duration,
    /// Longest wait for the next bytes from the client.
    pub idle: Duration,
    /// Longest wait to hand the answer to the client.
    pub write: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            workers: 4,
            queue: 8,
            head_bytes: 16 * 1024,
            head_time: Duration::from_secs(5),
            body_time: Duration::from_secs(30),
            idle: Duration::from_secs(5),
            write: Duration::from_secs(5),
        }
    }
}

/// A whole request, head and body.
#[derive(Debug)]
pub struct Request {
    /// `GET`, `POST`, … as sent.
    pub method: String,
    /// The request target's path, without any `?query`.
    pub path: String,
    /// Header names (lowercased) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body, exactly `Content-Length` bytes.
    pub body: Vec<u8>,
    /// Who sent it.
    pub peer: SocketAddr,
}

impl Request {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// An answer: a status and a JSON body.
#[derive(Debug, Clone)]
pub struct Response {
    /// The HTTP status.
    pub status: u16,
    /// The JSON body.
    pub body: Value,
}

impl Response {
    /// An answer with `body`.
    pub fn json(status: u16, body: Value) -> Response {
        Response { status, body }
    }

    /// An error answer: `{"error": {"code", "message"}}`.
    pub fn error(status: u16, err: &Error) -> Response {
        Response::json(status, err.to_json())
    }

    fn bytes(&self) -> Vec<u8> {
        let mut body = self.body.to_string().into_bytes();
        body.push(b'\n');
        let mut out = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
            self.status,
            reason(self.status),
            body.len()
        )
        .into_bytes();
        out.extend(body);
        out
    }
}

/// The endpoints behind a server.
pub trait Handler: Send + Sync + 'static {
    /// The largest body `method path` takes, or `None` when it takes none
    /// (its body, if any, is never read). Asked before any body byte is read.
    fn body_limit(&self, method: &str, path: &str) -> Option<u64>;
    /// Answers a whole request.
    fn handle(&self, req: &Request) -> Response;
}

/// A running server; dropping it stops accepting (requests in hand finish).
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl Server {
    /// Binds `addr` and starts the acceptor and the workers.
    pub fn start(
        addr: SocketAddr,
        limits: Limits,
        handler: Arc<dyn Handler>,
    ) -> std::io::Result<Server> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::sync_channel::<Conn>(limits.queue);
        let rx = Arc::new(Mutex::new(rx));
        for _ in 0..limits.workers.max(1) {
            let (rx, limits, handler) = (Arc::clone(&rx), limits.clone(), Arc::clone(&handler));
            std::thread::Builder::new()
                .name("http-worker".into())
                .spawn(move || work(&rx, &limits, handler.as_ref()))?;
        }
        let flag = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("http-acceptor".into())
            .spawn(move || accept(&listener, &tx, &flag))?;
        Ok(Server { addr, stop })
    }

    /// The address bound (with the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // accept() only returns for a connection: make one.
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        let _ = TcpStream::connect_timeout(&wake, Duration::from_secs(1));
    }
}

/// An accepted connection waiting for a worker.
struct Conn {
    stream: TcpStream,
    peer: SocketAddr,
    accepted: Instant,
}

fn accept(listener: &TcpListener, tx: &SyncSender<Conn>, stop: &AtomicBool) {
    loop {
        let accepted = listener.accept();
        if stop.load(Ordering::SeqCst) {
            return;
        }
        match accepted {
            Ok((stream, peer)) => {
                let conn = Conn {
                    stream,
                    peer,
                    accepted: Instant::now(),
                };
                match tx.try_send(conn) {
                    Ok(()) => {}
                    Err(TrySendError::Full(c)) => busy(c.stream),
                    Err(TrySendError::Disconnected(_)) => return,
                }
            }
            // Out of file descriptors, or a connection reset before it was
            // taken: pause a moment rather than spin, and keep serving.
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Answers `503` on the acceptor's own thread, without reading the request:
/// a full queue must cost the acceptor almost nothing.
fn busy(mut stream: TcpStream) {
    let err = Error::new(
        Code::Busy,
        "the HTTP intake is busy (every worker and queue slot is taken); retry shortly, or use the shared folder",
    );
    let _ = stream.set_write_timeout(Some(Duration::from_millis(200)));
    let _ = stream.write_all(&Response::error(503, &err).bytes());
    close(stream, Duration::from_millis(20), 1 << 20);
}

fn work(rx: &Mutex<Receiver<Conn>>, limits: &Limits, handler: &dyn Handler) {
    loop {
        let next = rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
        let Ok(conn) = next else { return };
        // A bug anywhere below costs this connection, never the worker.
        let _ = catch_unwind(AssertUnwindSafe(|| serve_conn(conn, limits, handler)));
    }
}

fn serve_conn(conn: Conn, limits: &Limits, handler: &dyn Handler) {
    let Conn {
        mut stream,
        peer,
        accepted,
    } = conn;
    let _ = stream.set_write_timeout(Some(limits.write));
    let answer = match read_request(&mut stream, peer, accepted, limits, handler) {
        Ok(req) => catch_unwind(AssertUnwindSafe(|| handler.handle(&req))).unwrap_or_else(|_| {
            let err = Error::new(
                Code::Internal,
                "the request could not be handled (an internal fault); nothing was changed by it",
            );
            Response::error(500, &err)
        }),
        Err(Refused::Answer(r)) => r,
        Err(Refused::TooLarge(r, length)) => {
            // The client may be sending the whole body before it reads:
            // take it (up to a bound) so the 413 is read, not reset away.
            let _ = stream.write_all(&r.bytes());
            let bound = usize::try_from(length)
                .unwrap_or(usize::MAX)
                .min(TOO_LARGE_DRAIN);
            close(stream, TOO_LARGE_LINGER, bound);
            return;
        }
        Err(Refused::Gone) => return,
    };
    let _ = stream.write_all(&answer.bytes());
    close(stream, Duration::from_millis(500), 1 << 20);
}

/// How much of a body over its limit is read and dropped after the 413.
const TOO_LARGE_DRAIN: usize = 64 << 20;
/// How long that may take at most.
const TOO_LARGE_LINGER: Duration = Duration::from_secs(5);

/// Ends a connection so the answer arrives: closing with unread request
/// bytes would send a reset, which can destroy the answer in flight. So:
/// send FIN, then read and drop what the client still sends (up to
/// `bound` bytes), for at most `linger`.
fn close(mut stream: TcpStream, linger: Duration, bound: usize) {
    let _ = stream.shutdown(Shutdown::Write);
    let until = Instant::now() + linger;
    let mut sink = [0u8; 8192];
    let mut drained = 0usize;
    while drained < bound {
        // A client that stops sending is let go at once: only one that is
        // still sending may keep the worker, and only until `linger`.
        let left = until.saturating_duration_since(Instant::now()).min(IDLE);
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            break;
        }
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(n) => drained += n,
        }
    }
}

/// How long a closing connection may stay silent before it is dropped.
const IDLE: Duration = Duration::from_millis(500);

enum Refused {
    /// Answer this, then close.
    Answer(Response),
    /// A 413 for a body of this many bytes: answer, and read the body away.
    TooLarge(Response, u64),
    /// The client left or stopped talking: just close.
    Gone,
}

fn refuse(status: u16, code: Code, message: impl Into<String>) -> Refused {
    Refused::Answer(Response::error(status, &Error::new(code, message)))
}

/// Reads up to `want` more bytes into `buf` before `deadline`, one read.
fn read_some(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    want: usize,
    deadline: Instant,
    idle: Duration,
) -> Result<(), Refused> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(timed_out());
    }
    stream
        .set_read_timeout(Some(left.min(idle)))
        .map_err(|_| Refused::Gone)?;
    let mut chunk = [0u8; 8192];
    let want = want.min(chunk.len());
    match stream.read(&mut chunk[..want]) {
        Ok(0) => Err(Refused::Gone),
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            Ok(())
        }
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            Err(timed_out())
        }
        Err(e) if e.kind() == ErrorKind::Interrupted => Ok(()),
        Err(_) => Err(Refused::Gone),
    }
}

fn timed_out() -> Refused {
    refuse(
        408,
        Code::BadRequest,
        "the request did not arrive in time; nothing was changed",
    )
}

fn head_too_long(limits: &Limits) -> Refused {
    refuse(
        431,
        Code::BadRequest,
        format!(
            "the request line and headers exceed {} bytes",
            limits.head_bytes
        ),
    )
}

fn read_request(
    stream: &mut TcpStream,
    peer: SocketAddr,
    accepted: Instant,
    limits: &Limits,
    handler: &dyn Handler,
) -> Result<Request, Refused> {
    let mut buf = Vec::with_capacity(1024);
    let head_deadline = accepted + limits.head_time;
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() >= limits.head_bytes {
            return Err(head_too_long(limits));
        }
        // Never read far past the cap: a head that long is refused anyway.
        let want = limits.head_bytes + 4 - buf.len();
        read_some(stream, &mut buf, want, head_deadline, limits.idle)?;
    };
    if head_end > limits.head_bytes + 4 {
        return Err(head_too_long(limits));
    }
    let head = parse_head(&buf[..head_end - 4]).map_err(|m| refuse(400, Code::BadRequest, m))?;
    let mut req = Request {
        method: head.method,
        path: head.path,
        headers: head.headers,
        body: Vec::new(),
        peer,
    };
    let Some(limit) = handler.body_limit(&req.method, &req.path) else {
        return Ok(req);
    };
    if req.header("transfer-encoding").is_some() {
        return Err(refuse(
            411,
            Code::BadRequest,
            "Transfer-Encoding is not supported: send the body with a Content-Length",
        ));
    }
    let length = content_length(&req.headers).map_err(|m| refuse(400, Code::BadRequest, m))?;
    let Some(length) = length else {
        return Err(refuse(
            411,
            Code::BadRequest,
            format!("{} {} needs a Content-Length", req.method, req.path),
        ));
    };
    if length > limit {
        let err = Error::new(
            Code::BadRequest,
            format!(
                "the body is {length} bytes, over the limit of {limit} for {} {}; nothing was read or changed",
                req.method, req.path
            ),
        );
        return Err(Refused::TooLarge(Response::error(413, &err), length));
    }
    if req
        .header("expect")
        .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
    {
        let _ = stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
    }
    let length = length as usize;
    let mut body = buf.split_off(head_end);
    body.truncate(length);
    let body_deadline = accepted + limits.body_time;
    while body.len() < length {
        let want = length - body.len();
        read_some(stream, &mut body, want, body_deadline, limits.idle)?;
    }
    req.body = body;
    Ok(req)
}

/// The parts of a request head.
#[derive(Debug, PartialEq)]
struct Head {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
}

/// Parses a request line and headers (without the final blank line). Strict:
/// anything unusual is refused rather than guessed at.
fn parse_head(raw: &[u8]) -> Result<Head, String> {
    let text = std::str::from_utf8(raw).map_err(|_| "the request head is not UTF-8".to_string())?;
    let mut lines = text.split("\r\n");
    let line = lines.next().unwrap_or("");
    let parts: Vec<&str> = line.split(' ').collect();
    let [method, target, version] = parts[..] else {
        return Err(format!("malformed request line {line:?}"));
    };
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(format!("malformed method {method:?}"));
    }
    if !matches!(version, "HTTP/1.1" | "HTTP/1.0") {
        return Err(format!("unsupported protocol {version:?} (HTTP/1.1 only)"));
    }
    if !target.starts_with('/') {
        return Err(format!(
            "the request target {target:?} must be a path starting with /"
        ));
    }
    let path = target.split(['?', '#']).next().unwrap_or("").to_string();
    let mut headers = Vec::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(format!("malformed header line {line:?}"));
        };
        let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
        if name.is_empty() || !name.bytes().all(token) {
            return Err(format!("malformed header name {name:?}"));
        }
        headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
    }
    Ok(Head {
        method: method.to_string(),
        path,
        headers,
    })
}

/// The `Content-Length`, if any; repeated headers must agree.
fn content_length(headers: &[(String, String)]) -> Result<Option<u64>, String> {
    let mut found: Option<u64> = None;
    for (_, v) in headers.iter().filter(|(n, _)| n == "content-length") {
        if v.is_empty() || v.len() > 19 || !v.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("Content-Length {v:?} is not a number"));
        }
        let n: u64 = v
            .parse()
            .map_err(|_| format!("Content-Length {v:?} is too big"))?;
        if found.is_some_and(|f| f != n) {
            return Err("conflicting Content-Length headers".into());
        }
        found = Some(n);
    }
    Ok(found)
}

/// The reason phrase of the statuses we send.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        422 => "Unprocessable Content",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Internal Server Error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_request_head() {
        let h = parse_head(b"POST /v1/jobs?x=1 HTTP/1.1\r\nHost: pc:7070\r\nContent-Length: 12")
            .unwrap();
        assert_eq!(h.method, "POST");
        assert_eq!(h.path, "/v1/jobs");
        assert_eq!(
            h.headers,
            vec![
                ("host".to_string(), "pc:7070".to_string()),
                ("content-length".to_string(), "12".to_string())
            ]
        );
    }

    #[test]
    fn refuses_malformed_heads() {
        for raw in [
            &b"GET /v1/status"[..],
            b"GET  /v1/status HTTP/1.1",
            b"get /v1/status HTTP/1.1",
            b"GET v1/status HTTP/1.1",
            b"GET /v1/status HTTP/2",
            b"GET /v1/status HTTP/1.1\r\nno colon",
            b"GET /v1/status HTTP/1.1\r\n folded: x",
            b"GET /v1/status HTTP/1.1\r\nBad Name: x",
            b"GET /\xff HTTP/1.1",
        ] {
            assert!(
                parse_head(raw).is_err(),
                "{:?}",
                String::from_utf8_lossy(raw)
            );
        }
    }

    #[test]
    fn content_length_must_be_one_number() {
        let h = |v: &[&str]| {
            v.iter()
                .map(|v| ("content-length".to_string(), v.to_string()))
                .collect::<Vec<_>>()
        };
        assert_eq!(content_length(&[]), Ok(None));
        assert_eq!(content_length(&h(&["10"])), Ok(Some(10)));
        assert_eq!(content_length(&h(&["10", "10"])), Ok(Some(10)));
        assert!(content_length(&h(&["10", "11"])).is_err());
        assert!(content_length(&h(&["-1"])).is_err());
        assert!(content_length(&h(&["1e3"])).is_err());
        assert!(content_length(&h(&["99999999999999999999"])).is_err());
    }
}
