//! The endpoints of the HTTP intake, each a thin door onto the library
//! functions the folder path uses: a job is judged by [`accept::job`] and
//! the replay guard, then published into `inbox/` like any other; a marker
//! is judged by [`accept::marker`] and placed by [`crate::requests::cancel::place_marker`];
//! the GETs answer from [`observe::job`] and [`observe::target`].
//!
//! Routing and the verdict-to-status table are pure functions; the
//! handlers are the effects.

use std::io::Write;
use std::time::Duration;

use serde_json::{Value, json};

use crate::base::clock;
use crate::base::error::{Code, Error};
use crate::base::names::JobId;
use crate::base::read::FileRead;
use crate::engine::bucket::Door;
use crate::engine::listener::Handle;
use crate::engine::runner::Control;
use crate::places::observe::{self, NoResult, Observed, Unseen};
use crate::protocol::accept::{self, Verdict};
use crate::protocol::doc::{job, marker};
use crate::requests::cancel::{self, CancelStatus};
use crate::requests::submit;
use crate::store::fsops;
use crate::store::port::Shelves;

use super::auth;
use super::server::{Handler, Request, Response};

/// Every refused signature (a forged document, a bad or replayed GET
/// signature) is answered only after this long, so guessing is slow.
pub const REFUSAL_DELAY: Duration = Duration::from_millis(200);

/// What a request line asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Route<'a> {
    /// `POST /v1/jobs`.
    SubmitJob,
    /// `POST /v1/jobs/{id}/cancel`.
    Cancel(&'a str),
    /// `GET /v1/jobs/{id}`.
    JobState(&'a str),
    /// `GET /v1/status`.
    Status,
    /// Anything else.
    Unknown,
}

/// Where jobs are posted.
pub const JOBS_PATH: &str = "/v1/jobs";

/// Routes a request line (the path without its query).
pub fn route<'a>(method: &str, path: &'a str) -> Route<'a> {
    let job = path
        .strip_prefix("/v1/jobs/")
        .filter(|s| !s.is_empty() && !s.contains('/'));
    let cancel = path
        .strip_prefix("/v1/jobs/")
        .and_then(|s| s.strip_suffix("/cancel"))
        .filter(|s| !s.is_empty() && !s.contains('/'));
    match (method, path) {
        ("POST", JOBS_PATH) => Route::SubmitJob,
        ("GET", "/v1/status") => Route::Status,
        ("POST", _) if cancel.is_some() => Route::Cancel(cancel.unwrap_or_default()),
        ("GET", _) if job.is_some() => Route::JobState(job.unwrap_or_default()),
        _ => Route::Unknown,
    }
}

/// The HTTP status and error code for an acceptance verdict: a signature or
/// target refusal is 403, a document that does not parse 400, one over its
/// size 413, and every other refusal (names, spec, replay, age) 422.
pub fn verdict_answer(v: Verdict) -> (u16, Code) {
    match v {
        Verdict::BadSignature
        | Verdict::TargetMismatch
        | Verdict::WrongTarget
        | Verdict::UnknownSigner
        | Verdict::KeyNotValid
        | Verdict::NotPermitted
        | Verdict::SealRequired
        | Verdict::BadSeal
        | Verdict::AlgNotAllowed => (403, Code::Forbidden),
        Verdict::Malformed => (400, Code::BadRequest),
        Verdict::TooLarge => (413, Code::BadRequest),
        Verdict::InvalidJobId
        | Verdict::InvalidTarget
        | Verdict::InvalidOrigin
        | Verdict::InvalidCreatedAt
        | Verdict::JobIdMismatch
        | Verdict::UnsupportedSpec
        | Verdict::AlreadyProcessed
        | Verdict::Stale => (422, Code::Validation),
        // A body in hand is never these; if one shows up it is our fault.
        Verdict::Valid | Verdict::NotAFile | Verdict::Unreadable | Verdict::Missing => {
            (500, Code::Internal)
        }
    }
}

/// The HTTP status of an error code (docs/protocol.md §9 vocabulary).
pub fn code_status(code: Code) -> u16 {
    match code {
        Code::Validation => 422,
        Code::BadRequest => 400,
        Code::NotFound => 404,
        Code::Forbidden => 403,
        Code::Busy => 503,
        Code::Internal | Code::Config => 500,
    }
}

/// `POST` path of a job's cancel.
pub fn cancel_path(id: &JobId) -> String {
    format!("/v1/jobs/{id}/cancel")
}

/// The endpoints, bound to one listener.
pub struct Routes {
    behind: Behind,
    verbose: bool,
}

/// The listener the intake feeds: on a folder root, or on a bucket.
pub enum Behind {
    /// A folder root's listener.
    Folder(Handle),
    /// A bucket's listener.
    Bucket(Door),
}

pub(super) type Answer = Result<(u16, Value), Response>;

fn refused(status: u16, err: Error) -> Response {
    Response::error(status, &err)
}

pub(super) fn from_error(err: Error) -> Response {
    refused(code_status(err.code), err)
}

pub(super) fn from_rejection(what: &str, r: &accept::Rejection) -> Response {
    let (status, code) = verdict_answer(r.verdict);
    refused(
        status,
        Error::new(
            code,
            format!(
                "{what}: {}: {}; nothing was written",
                r.verdict.as_str(),
                r.message
            ),
        ),
    )
}

impl Routes {
    /// The endpoints feeding the listener behind `handle`.
    pub fn new(behind: Behind, verbose: bool) -> Routes {
        Routes { behind, verbose }
    }

    fn say(&self, line: &str) {
        if self.verbose {
            // As the listener's own lines: a closed stdout never stops it.
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{} http: {line}", clock::format(clock::now()));
            let _ = out.flush();
        }
    }

    fn target(&self) -> &str {
        match &self.behind {
            Behind::Folder(h) => h.dirs.target().as_str(),
            Behind::Bucket(d) => d.t.target().as_str(),
        }
    }

    fn key(&self) -> &crate::trust::Key {
        match &self.behind {
            Behind::Folder(h) => &h.key,
            Behind::Bucket(d) => &d.key,
        }
    }

    /// The folder root's listener, or (`Err`) the bucket's door.
    fn folder(&self) -> Result<&Handle, &Door> {
        match &self.behind {
            Behind::Folder(h) => Ok(h),
            Behind::Bucket(d) => Err(d),
        }
    }

    /// `POST /v1/jobs`: acceptance → replay guard → age → publish into the
    /// inbox (never replacing) → wake the listener.
    fn submit(&self, body: &[u8]) -> Answer {
        let h = match self.folder() {
            Ok(h) => h,
            Err(d) => return super::bucket::submit(d, body),
        };
        let job = submit::admit(h.dirs.target().as_str(), &h.key, body, h.max_age, |id| {
            h.processed_where(id)
        })
        .map_err(|r| from_rejection(&r.what, &r.rejection))?;
        submit::publish(&h.dirs, &job, &h.key, fsops::Flush::DataAndName).map_err(from_error)?;
        h.control.send(Control::Wake);
        Ok((
            202,
            json!({"jobId": job.id.as_str(), "target": self.target(), "status": "queued"}),
        ))
    }

    /// `POST /v1/jobs/{id}/cancel`: acceptance (the path's id is the file
    /// name) → the folder path's marker rule → a direct word to the runner,
    /// so a running job stops without waiting for the watcher's poll.
    fn cancel(&self, raw_id: &str, body: &[u8]) -> Answer {
        let h = match self.folder() {
            Ok(h) => h,
            Err(d) => return super::bucket::cancel(d, raw_id, body),
        };
        let id = JobId::parse(raw_id).map_err(from_error)?;
        let m = accept::marker(
            &id.file_name(),
            FileRead::Bytes(body.to_vec()),
            self.target(),
            &h.key,
        )
        .map_err(|r| from_rejection(&format!("marker for {id}"), &r))?;
        let status = cancel::place_marker(&h.dirs, &id, &h.key, &m).map_err(from_error)?;
        let mut out = status.to_json(&id);
        out["target"] = json!(self.target());
        match &status {
            CancelStatus::Requested { existing, .. } => {
                let acting = existing.clone().unwrap_or(m);
                if let Some(e) = existing {
                    out["marker"] = json!(e);
                }
                // A runner busy with another job ignores this; an idle
                // listener takes it as a wake-up and cancels before start.
                h.control.send(Control::Cancel(id, Box::new(acting)));
                Ok((202, out))
            }
            CancelStatus::NotRunning(o) => {
                out["result"] = json!(o);
                Ok((202, out))
            }
            CancelStatus::Blocked(_) => Ok((409, out)),
        }
    }

    /// `GET /v1/jobs/{id}`.
    fn job_state(&self, raw_id: &str) -> Answer {
        let h = match self.folder() {
            Ok(h) => h,
            Err(d) => return super::bucket::job_state(d, raw_id),
        };
        let id = JobId::parse(raw_id).map_err(from_error)?;
        let mut out = json!({"jobId": id.as_str(), "target": self.target()});
        let seen = observe::job(&h.dirs, &id, &h.key).map_err(from_error)?;
        let answer = judged(seen, h.is_running(&id))
            .answer(&h.dirs, &id, Unseen::Pending)
            .map_err(from_error)?;
        let state = match answer {
            Ok(o) => {
                out["result"] = json!(o);
                "done"
            }
            Err(NoResult::Unfinished(Observed::Running)) => "running",
            Err(NoResult::Unfinished(Observed::Queued)) => {
                let held = observe::held_on(&h.dirs, &id, &h.key);
                if !held.is_empty() {
                    let names: Vec<String> = held.iter().map(ToString::to_string).collect();
                    out["waitsFor"] = json!(names);
                }
                "queued"
            }
            Err(NoResult::Rejected(r)) => {
                out["reason"] = json!({"verdict": r.verdict, "message": r.message, "rejectedAt": r.rejected_at});
                "rejected"
            }
            Err(NoResult::Unfinished(_)) => "unknown",
        };
        out["state"] = json!(state);
        Ok((200, out))
    }

    fn status(&self) -> Answer {
        let h = match self.folder() {
            Ok(h) => h,
            Err(d) => return super::bucket::status(d),
        };
        Ok((
            200,
            json!({
                "root": h.root.display().to_string(),
                "targets": [observe::target(&h.dirs, &h.key, &observe::History::default())],
            }),
        ))
    }

    fn answer(&self, req: &Request) -> Answer {
        let route = route(&req.method, &req.path);
        if matches!(route, Route::JobState(_) | Route::Status) {
            let now = clock::now().unix_timestamp();
            auth::check(
                req.header(auth::HEADER),
                self.target(),
                &req.path,
                now,
                self.key(),
            )
            .map_err(|m| from_error(Error::forbidden(format!("{m}; nothing is shown"))))?;
        }
        match route {
            Route::SubmitJob => self.submit(&req.body),
            Route::Cancel(id) => self.cancel(id, &req.body),
            Route::JobState(id) => self.job_state(id),
            Route::Status => self.status(),
            Route::Unknown => Err(refused(
                404,
                Error::not_found(format!(
                    "no endpoint {} {}: POST /v1/jobs, POST /v1/jobs/ID/cancel, GET /v1/jobs/ID, GET /v1/status",
                    req.method, req.path
                )),
            )),
        }
    }
}

impl Handler for Routes {
    fn body_limit(&self, method: &str, path: &str) -> Option<u64> {
        match route(method, path) {
            Route::SubmitJob => Some(job::MAX_BYTES),
            Route::Cancel(_) => Some(marker::MAX_BYTES),
            _ => None,
        }
    }

    fn handle(&self, req: &Request) -> Response {
        let answer = match self.answer(req) {
            Ok((status, body)) => Response::json(status, body),
            Err(r) => r,
        };
        if answer.status == 403 {
            std::thread::sleep(REFUSAL_DELAY);
        }
        if req.method != "GET" || answer.status >= 300 {
            let word = answer.body["status"]
                .as_str()
                .or(answer.body["state"].as_str())
                .or(answer.body["error"]["message"].as_str())
                .unwrap_or("");
            self.say(&format!(
                "{} {} {} from {}: {word}",
                answer.status, req.method, req.path, req.peer
            ));
        }
        answer
    }
}

/// What `GET /v1/jobs/{id}` makes of a job the folder shows as `seen`,
/// given whether the listener runs it now: the listener's own word first,
/// since it knows from the spawn, and the publisher writes `running/` up to
/// [`crate::engine::publisher::GATHER`] later, or
/// [`crate::engine::publisher::GATHER_BUSY`] on a busy lane (the job file is still in the inbox
/// meanwhile). Anything the folder settled (a result, a rejection) stands.
fn judged(seen: Observed, runs_now: bool) -> Observed {
    match seen {
        Observed::Queued if runs_now => Observed::Running,
        seen => seen,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_the_listener_runs_is_running_before_running_shows_it() {
        // Spawned, and running/ not written yet: the folder says queued.
        assert_eq!(judged(Observed::Queued, true), Observed::Running);
        assert_eq!(judged(Observed::Queued, false), Observed::Queued);
        assert_eq!(judged(Observed::Running, false), Observed::Running);
        assert_eq!(judged(Observed::NotSeen, false), Observed::NotSeen);
    }

    #[test]
    fn routes_the_four_endpoints_and_nothing_else() {
        assert_eq!(route("POST", "/v1/jobs"), Route::SubmitJob);
        assert_eq!(route("POST", "/v1/jobs/abc/cancel"), Route::Cancel("abc"));
        assert_eq!(route("GET", "/v1/jobs/abc"), Route::JobState("abc"));
        assert_eq!(route("GET", "/v1/status"), Route::Status);
        for (m, p) in [
            ("GET", "/v1/jobs"),
            ("POST", "/v1/jobs/abc"),
            ("GET", "/v1/jobs/abc/cancel"),
            ("POST", "/v1/jobs//cancel"),
            ("POST", "/v1/jobs/a/b/cancel"),
            ("GET", "/v1/jobs/"),
            ("GET", "/v1/jobs/a/b"),
            ("DELETE", "/v1/jobs/abc"),
            ("POST", "/v1/status"),
            ("GET", "/"),
        ] {
            assert_eq!(route(m, p), Route::Unknown, "{m} {p}");
        }
    }

    #[test]
    fn verdicts_map_to_http_statuses() {
        let table = [
            (Verdict::BadSignature, 403, Code::Forbidden),
            (Verdict::TargetMismatch, 403, Code::Forbidden),
            (Verdict::WrongTarget, 403, Code::Forbidden),
            (Verdict::Malformed, 400, Code::BadRequest),
            (Verdict::TooLarge, 413, Code::BadRequest),
            (Verdict::InvalidJobId, 422, Code::Validation),
            (Verdict::InvalidTarget, 422, Code::Validation),
            (Verdict::InvalidOrigin, 422, Code::Validation),
            (Verdict::InvalidCreatedAt, 422, Code::Validation),
            (Verdict::JobIdMismatch, 422, Code::Validation),
            (Verdict::UnsupportedSpec, 422, Code::Validation),
            (Verdict::AlreadyProcessed, 422, Code::Validation),
            (Verdict::Stale, 422, Code::Validation),
            (Verdict::NotAFile, 500, Code::Internal),
            (Verdict::Unreadable, 500, Code::Internal),
            (Verdict::Missing, 500, Code::Internal),
            (Verdict::Valid, 500, Code::Internal),
        ];
        for (v, status, code) in table {
            assert_eq!(verdict_answer(v), (status, code), "{}", v.as_str());
        }
    }

    #[test]
    fn codes_map_to_http_statuses() {
        let table = [
            (Code::Validation, 422),
            (Code::BadRequest, 400),
            (Code::NotFound, 404),
            (Code::Forbidden, 403),
            (Code::Busy, 503),
            (Code::Internal, 500),
            (Code::Config, 500),
        ];
        for (c, s) in table {
            assert_eq!(code_status(c), s, "{}", c.as_str());
        }
    }
}
