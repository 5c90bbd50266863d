//! A synchronous S3 client with exactly the operations the protocol needs:
//! create-only PUT (`If-None-Match: *`), GET, HEAD, PUT and DELETE with
//! `If-Match`, ListObjectsV2 by prefix from a `start-after`, and a
//! create-only COPY. `rusty-s3` signs each request (SigV4, as a presigned
//! URL whose signed headers include the conditional ones) and `ureq` sends
//! it; every answer becomes an [`Answer`].
//!
//! A retryable answer (409 `ConditionalRequestConflict`, 429, 5xx, a
//! timeout or a dropped connection) is tried again with backoff, a few
//! times. Such an answer may still have taken effect, so a retried
//! conditional write that then meets 412 reads the object back: our own
//! bytes there mean our earlier attempt won ([`Answer::Done`]), anything
//! else means another writer did ([`Answer::Precondition`]). That check
//! relies on rival writers writing different bytes, which every protocol
//! document does (it names its writer).

use std::io::Read;
use std::time::Duration;

use rusty_s3::actions::{ListObjectsV2, S3Action};
use rusty_s3::{Bucket, Credentials, UrlStyle};

use super::settings::Settings;
use crate::base::error::{Error, Result};

/// How long a signed request stays valid: long enough for a slow upload,
/// short enough that a leaked URL is soon useless.
const SIGNED_FOR: Duration = Duration::from_secs(15 * 60);

/// The metadata header [`Client::create_only_marked`] writes.
const MARK: &str = "x-amz-meta-claim";

/// The largest object or listing page read back.
const MAX_BODY: u64 = 64 << 20;

/// A store's answer to one operation, after retries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// 2xx: created, replaced, deleted, copied or read.
    Done(Reply),
    /// 412: a create-only write found the key taken, or an `If-Match`
    /// found another version.
    Precondition,
    /// 409 still, after every retry (a conditional write racing another).
    Conflict,
    /// 404: no such key (or bucket).
    NotFound,
    /// 401 or 403: the credentials or the bucket policy refuse.
    Denied(String),
    /// Any other status, with the store's error code and message.
    Other(u16, String),
    /// No answer: the connection failed or timed out, after every retry.
    Unreachable(String),
}

impl Answer {
    /// The answer in a few words, for a message: `200`, `412`, `no answer
    /// (…)`.
    pub fn describe(&self) -> String {
        match self {
            Answer::Done(r) => r.status.to_string(),
            Answer::Precondition => "412 (precondition failed)".into(),
            Answer::Conflict => "409 (conflict), after retries".into(),
            Answer::NotFound => "404 (not found)".into(),
            Answer::Denied(t) => format!("access denied ({t})"),
            Answer::Other(s, t) => format!("{s} ({t})"),
            Answer::Unreachable(t) => format!("no answer ({t})"),
        }
    }

    /// What the store did, for "the store …": `answered 412 (…)`, or
    /// `did not answer (…)`.
    pub fn said(&self) -> String {
        match self {
            Answer::Unreachable(t) => format!("did not answer ({t})"),
            a => format!("answered {}", a.describe()),
        }
    }
}

/// What a 2xx answer carried.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The object's `ETag`, quotes kept, when the store sent one.
    pub etag: Option<String>,
    /// The body (a GET's object; empty otherwise).
    pub body: Vec<u8>,
    /// The object's `x-amz-meta-claim`, when the store sent one
    /// ([`Client::create_only_marked`]).
    pub mark: Option<String>,
}

/// One key of a listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The full key.
    pub key: String,
    /// Its `ETag`, when listed.
    pub etag: Option<String>,
    /// Its size in bytes.
    pub size: u64,
    /// When it was last written (`LastModified`), when listed and valid
    /// RFC 3339: what `sweep` ages an object by.
    pub modified: Option<std::time::SystemTime>,
}

/// How often and how patiently a retryable answer is tried again.
#[derive(Clone, Copy, Debug)]
pub struct Retry {
    /// Attempts in all, the first included.
    pub attempts: u32,
    /// The pause after the first failure, doubled after each (with up to
    /// half again at random, so rivals do not retry in step), at most 5 s.
    pub first_pause: Duration,
    /// The limit on one request, answer included.
    pub timeout: Duration,
}

impl Default for Retry {
    fn default() -> Retry {
        Retry {
            attempts: 6,
            first_pause: Duration::from_millis(100),
            timeout: Duration::from_secs(30),
        }
    }
}

/// One request's outcome before retries.
enum Attempt {
    Answered {
        status: u16,
        etag: Option<String>,
        body: Vec<u8>,
        mark: Option<String>,
    },
    Failed(String),
}

impl Attempt {
    fn retryable(&self) -> bool {
        match self {
            Attempt::Answered { status, .. } => *status == 409 || *status == 429 || *status >= 500,
            Attempt::Failed(_) => true,
        }
    }
}

/// The method of a request.
#[derive(Clone, Copy)]
enum Verb {
    Get,
    Head,
    Put,
    Delete,
}

/// How a conditional write knows the object it finds is its own.
#[derive(Clone, Copy)]
enum Own<'a> {
    /// It holds this write's bytes.
    Bytes,
    /// It carries this mark (`x-amz-meta-claim`): for bytes any writer
    /// would write alike.
    Mark(&'a str),
}

/// A client of one bucket.
pub struct Client {
    agent: ureq::Agent,
    bucket: Bucket,
    creds: Option<Credentials>,
    retry: Retry,
}

impl Client {
    /// A client of `bucket` at the settings' endpoint. `CONFIG` when the
    /// bucket cannot be addressed that way (a virtual-host URL over an IP
    /// address).
    pub fn new(settings: &Settings, bucket: &str) -> Result<Client> {
        let style = if settings.path_style {
            UrlStyle::Path
        } else {
            UrlStyle::VirtualHost
        };
        let b = Bucket::new(
            settings.endpoint.clone(),
            style,
            bucket.to_string(),
            settings.region.clone(),
        )
        .map_err(|e| {
            Error::config(format!(
                "bucket {bucket:?} at {}: {e:?}; set {}=1 for path-style URLs",
                settings.endpoint,
                super::settings::PATH_STYLE_VAR
            ))
        })?;
        let creds = settings.creds.as_ref().map(|c| match &c.token {
            Some(t) => Credentials::new_with_token(c.key.clone(), c.secret.clone(), t.clone()),
            None => Credentials::new(c.key.clone(), c.secret.clone()),
        });
        Ok(Client {
            agent: agent(Retry::default()),
            bucket: b,
            creds,
            retry: Retry::default(),
        })
    }

    /// The same client with another retry policy.
    pub fn with_retry(mut self, retry: Retry) -> Client {
        self.agent = agent(retry);
        self.retry = retry;
        self
    }

    /// Creates `key` holding `body` unless it exists (`If-None-Match: *`):
    /// [`Answer::Done`] when this call created it, [`Answer::Precondition`]
    /// when the key was already there.
    pub fn create_only(&self, key: &str, body: &[u8]) -> Answer {
        self.write(key, body, &[("if-none-match", "*")], Own::Bytes)
    }

    /// Creates `key` holding `body` unless it exists, as
    /// [`Client::create_only`], the object marked with `mark` (its
    /// `x-amz-meta-claim`). For bytes any writer would write alike: after a
    /// retry whose first answer was lost, the key is this call's only when
    /// it carries `mark`, since its bytes cannot tell.
    pub fn create_only_marked(&self, key: &str, body: &[u8], mark: &str) -> Answer {
        let headers = [("if-none-match", "*"), (MARK, mark)];
        self.write(key, body, &headers, Own::Mark(mark))
    }

    /// Replaces `key` with `body` only while its `ETag` is `etag`.
    pub fn put_if_match(&self, key: &str, body: &[u8], etag: &str) -> Answer {
        self.write(key, body, &[("if-match", etag)], Own::Bytes)
    }

    /// Reads `key`: [`Answer::Done`] with its body and `ETag`.
    pub fn get(&self, key: &str) -> Answer {
        let a = self.retried(|| {
            let mut act = self.bucket.get_object(self.creds.as_ref(), key);
            self.send(Verb::Get, &mut act, &[], &[])
        });
        self.answer(a)
    }

    /// `key`'s `ETag` without its body.
    pub fn head(&self, key: &str) -> Answer {
        let a = self.retried(|| {
            let mut act = self.bucket.head_object(self.creds.as_ref(), key);
            self.send(Verb::Head, &mut act, &[], &[])
        });
        self.answer(a)
    }

    /// Deletes `key` only while its `ETag` is `etag`. After a retry, a
    /// [`Answer::NotFound`] may be this call's own earlier delete.
    pub fn delete_if_match(&self, key: &str, etag: &str) -> Answer {
        let a = self.retried(|| {
            let mut act = self.bucket.delete_object(self.creds.as_ref(), key);
            self.send(Verb::Delete, &mut act, &[("if-match", etag)], &[])
        });
        self.answer(a)
    }

    /// Copies `from` to a new key `to` unless `to` exists (a server-side
    /// CopyObject with `If-None-Match: *`): [`Answer::Done`] or
    /// [`Answer::Precondition`], as [`Client::create_only`].
    pub fn copy_create_only(&self, from: &str, to: &str) -> Answer {
        let source = format!("/{}/{}", self.bucket.name(), encode_key(from));
        let headers = [
            ("x-amz-copy-source", source.as_str()),
            ("if-none-match", "*"),
        ];
        let mut ambiguous = false;
        let a = self.retried_noting(&mut ambiguous, || {
            let mut act = self.bucket.put_object(self.creds.as_ref(), to);
            self.send(Verb::Put, &mut act, &headers, &[])
        });
        if ambiguous && matches!(a, Attempt::Answered { status: 412, .. }) {
            // Ours if the copy holds the source's bytes.
            return match (self.get(from), self.get(to)) {
                (Answer::Done(s), Answer::Done(t)) if s.body == t.body => Answer::Done(t),
                _ => Answer::Precondition,
            };
        }
        self.answer(a)
    }

    /// Every key under `prefix` after `start_after` (all of them when
    /// `None`), in key order, fetched `page` keys a request (S3 gives at
    /// most 1,000). An answer other than 2xx is the `Err`.
    pub fn list(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        page: usize,
    ) -> std::result::Result<Vec<Entry>, Answer> {
        self.listing(prefix, start_after, page, false)
            .map(|(keys, _)| keys)
    }

    /// The "folders" right under `prefix`: each distinct `prefix` + text up
    /// to the next `/` that some key starts with (a listing with the
    /// delimiter `/`), whole, in key order.
    pub fn folders(&self, prefix: &str) -> std::result::Result<Vec<String>, Answer> {
        self.listing(prefix, None, 1000, true)
            .map(|(_, folders)| folders)
    }

    /// [`Client::list`], and with `grouped` the common prefixes up to the
    /// next `/` instead of the keys below them.
    fn listing(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        page: usize,
        grouped: bool,
    ) -> std::result::Result<(Vec<Entry>, Vec<String>), Answer> {
        let mut out: Vec<Entry> = Vec::new();
        let mut folders: Vec<String> = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let a = self.retried(|| {
                let mut act = ListObjectsV2::new(&self.bucket, self.creds.as_ref());
                act.with_prefix(prefix);
                if grouped {
                    act.with_delimiter("/");
                }
                act.with_max_keys(page.clamp(1, 1000));
                match (&token, start_after) {
                    (Some(t), _) => act.with_continuation_token(t.as_str()),
                    (None, Some(s)) => act.with_start_after(s),
                    (None, None) => {}
                }
                self.send(Verb::Get, &mut act, &[], &[])
            });
            let body = match a {
                // S3 lists a prefix nothing is under as empty; SeaweedFS
                // has been seen to answer 404 for one instead, even with
                // the code `NoSuchBucket` while the bucket served every
                // other request. A bucket that is really missing fails the
                // first write, naming it, and `doctor` checks it.
                Attempt::Answered { status: 404, .. } => return Ok((out, folders)),
                a => match self.answer(a) {
                    Answer::Done(r) => r.body,
                    other => return Err(other),
                },
            };
            let text = String::from_utf8_lossy(&body);
            let parsed = ListObjectsV2::parse_response(&text)
                .map_err(|e| Answer::Other(200, format!("a listing that does not parse: {e}")))?;
            out.extend(parsed.contents.into_iter().map(|c| {
                Entry {
                    key: c.key,
                    etag: c.etag,
                    size: c.size.unwrap_or(0),
                    modified: c
                        .last_modified
                        .as_deref()
                        .and_then(crate::base::clock::parse)
                        .map(std::time::SystemTime::from),
                }
            }));
            folders.extend(parsed.common_prefixes.into_iter().map(|c| c.prefix));
            match parsed.next_continuation_token {
                Some(t) if token.as_deref() != Some(t.as_str()) => token = Some(t),
                _ => return Ok((out, folders)),
            }
        }
    }

    /// A conditional PUT, with the read-back check after an ambiguous
    /// attempt (see the module doc).
    /// A conditional `PUT`. A 412 after a retry whose first answer was
    /// lost may be this call's own write: it is when the object is `own`.
    fn write(&self, key: &str, body: &[u8], headers: &[(&str, &str)], own: Own) -> Answer {
        let mut ambiguous = false;
        let a = self.retried_noting(&mut ambiguous, || {
            let mut act = self.bucket.put_object(self.creds.as_ref(), key);
            self.send(Verb::Put, &mut act, headers, body)
        });
        if !(ambiguous && matches!(a, Attempt::Answered { status: 412, .. })) {
            return self.answer(a);
        }
        match own {
            Own::Bytes => match self.get(key) {
                Answer::Done(r) if r.body == body => Answer::Done(r),
                _ => Answer::Precondition,
            },
            Own::Mark(mark) => match self.head(key) {
                Answer::Done(r) if r.mark.as_deref() == Some(mark) => Answer::Done(r),
                _ => Answer::Precondition,
            },
        }
    }

    fn retried(&self, attempt: impl FnMut() -> Attempt) -> Attempt {
        self.retried_noting(&mut false, attempt)
    }

    /// Runs `attempt` until it is not retryable or the attempts run out;
    /// `ambiguous` is set when a retried attempt may have taken effect.
    fn retried_noting(
        &self,
        ambiguous: &mut bool,
        mut attempt: impl FnMut() -> Attempt,
    ) -> Attempt {
        let mut pause = self.retry.first_pause;
        let mut n = 1;
        loop {
            let a = attempt();
            if !a.retryable() || n >= self.retry.attempts {
                return a;
            }
            // A 409 refuses before writing; a 5xx or a lost answer may not.
            *ambiguous |= !matches!(a, Attempt::Answered { status: 409, .. });
            std::thread::sleep(pause + jitter(pause));
            pause = (pause * 2).min(Duration::from_secs(5));
            n += 1;
        }
    }

    fn send<'a>(
        &self,
        verb: Verb,
        act: &mut impl S3Action<'a>,
        headers: &[(&'a str, &'a str)],
        body: &[u8],
    ) -> Attempt {
        for (k, v) in headers {
            act.headers_mut().insert(*k, *v);
        }
        let url = act.sign(SIGNED_FOR);
        let url = url.as_str();
        let sent = match verb {
            Verb::Get => with(self.agent.get(url), headers).call(),
            Verb::Head => with(self.agent.head(url), headers).call(),
            Verb::Delete => with(self.agent.delete(url), headers).call(),
            Verb::Put => with(self.agent.put(url), headers).send(body),
        };
        match sent {
            Ok(mut resp) => {
                let status = resp.status().as_u16();
                let etag = resp
                    .headers()
                    .get("etag")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string);
                let mark = resp
                    .headers()
                    .get(MARK)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string);
                let mut body = Vec::new();
                if !matches!(verb, Verb::Head)
                    && let Err(e) = resp
                        .body_mut()
                        .as_reader()
                        .take(MAX_BODY)
                        .read_to_end(&mut body)
                {
                    return Attempt::Failed(format!("reading the answer: {e}"));
                }
                // CopyObject may answer 200 and then report a failure in
                // the body.
                if status == 200 && body.starts_with(b"<?xml") && error_code(&body).is_some() {
                    return Attempt::Answered {
                        status: 500,
                        etag,
                        body,
                        mark,
                    };
                }
                Attempt::Answered {
                    status,
                    etag,
                    body,
                    mark,
                }
            }
            Err(e) => Attempt::Failed(e.to_string()),
        }
    }

    fn answer(&self, a: Attempt) -> Answer {
        match a {
            Attempt::Failed(why) => Answer::Unreachable(why),
            Attempt::Answered {
                status,
                etag,
                body,
                mark,
            } => match status {
                200..=299 => Answer::Done(Reply {
                    status,
                    etag,
                    body,
                    mark,
                }),
                412 => Answer::Precondition,
                409 => Answer::Conflict,
                404 => Answer::NotFound,
                401 | 403 => Answer::Denied(error_text(status, &body)),
                _ => Answer::Other(status, error_text(status, &body)),
            },
        }
    }
}

fn agent(retry: Retry) -> ureq::Agent {
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_global(Some(retry.timeout))
        .timeout_connect(Some(retry.timeout.min(Duration::from_secs(10))))
        .build();
    ureq::Agent::with_parts(
        config,
        ureq::unversioned::transport::DefaultConnector::new(),
        super::resolve::Kept::<ureq::unversioned::resolver::DefaultResolver>::default(),
    )
}

fn with<B>(mut req: ureq::RequestBuilder<B>, headers: &[(&str, &str)]) -> ureq::RequestBuilder<B> {
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req
}

/// Up to half of `pause`, at random.
fn jitter(pause: Duration) -> Duration {
    let mut b = [0u8; 2];
    crate::base::random::fill(&mut b);
    pause.mul_f64(f64::from(u16::from_le_bytes(b)) / f64::from(u16::MAX) / 2.0)
}

/// A key as `x-amz-copy-source` wants it: each byte outside the unreserved
/// set percent-encoded, `/` kept.
fn encode_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for b in key.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The `<Code>` of an S3 error body.
fn error_code(body: &[u8]) -> Option<String> {
    tag(body, "Code")
}

fn tag(body: &[u8], name: &str) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?;
    let start = text.find(&format!("<{name}>"))? + name.len() + 2;
    let end = text[start..].find(&format!("</{name}>"))? + start;
    Some(text[start..end].chars().take(200).collect())
}

/// The store's error code and message, or the status's reason.
fn error_text(status: u16, body: &[u8]) -> String {
    match (error_code(body), tag(body, "Message")) {
        (Some(c), Some(m)) => format!("{c}: {m}"),
        (Some(c), None) => c,
        _ => match status {
            401 => "unauthorized".into(),
            403 => "forbidden".into(),
            _ => "no error code in the answer".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_sources_are_percent_encoded_but_for_slashes() {
        assert_eq!(encode_key("a/b c+d.json"), "a/b%20c%2Bd.json");
    }

    #[test]
    fn error_bodies_give_their_code_and_message() {
        let body =
            b"<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code><Message>no</Message></Error>";
        assert_eq!(error_text(403, body), "AccessDenied: no");
        assert_eq!(error_text(403, b""), "forbidden");
    }
}
