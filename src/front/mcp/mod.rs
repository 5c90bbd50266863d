//! `fleet-dispatch mcp`: a Model Context Protocol server on stdin and
//! stdout, so an agent dispatches, follows, stops and steers jobs as
//! tools. Synchronous like the rest: [`serve`] reads one JSON-RPC message
//! a line ([`protocol`]) and answers each tool call from a thread of its
//! own ([`tools`], which calls [`calls`]), so a call that waits
//! (`job_result` with `wait_seconds`) never holds up the next message, and
//! `notifications/cancelled` can end it. Only protocol messages go to
//! stdout; anything else is said on stderr.

pub mod calls;
pub mod protocol;
pub mod tools;

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::json;

use crate::base::error::Result;
use crate::front::config::Context;
use protocol::Message;
use tools::{Answer, Waiting};

/// Where the server's lines go: whole lines, one at a time, from any
/// thread. A client gone (a write fails) is noticed by the reader loop,
/// which ends when stdin closes.
struct Out(Mutex<Box<dyn Write + Send>>);

impl Out {
    fn line(&self, text: &str) {
        let mut w = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = writeln!(w, "{text}").and_then(|_| w.flush());
    }
}

/// The calls in flight, by request id, each with the flag that cancels it.
type InFlight = Mutex<HashMap<String, Arc<AtomicBool>>>;

/// Serves `ctx`'s fleet to the client on `input` and `output` until
/// `input` ends; a call still waiting then is ended.
///
/// # Errors
///
/// The caller's identity cannot be read (`FLEET_DISPATCH_JOB_ID` is not a
/// job id); nothing is read or written then.
pub fn serve(
    ctx: &Context,
    input: impl BufRead,
    output: impl Write + Send + 'static,
) -> Result<()> {
    let caller = calls::Caller::of(ctx)?;
    let out = Out(Mutex::new(Box::new(output)));
    let in_flight: InFlight = Mutex::new(HashMap::new());
    std::thread::scope(|scope| {
        for line in input.lines() {
            let line = match line {
                Ok(l) => l,
                Err(e) => {
                    crate::note!("fleet-dispatch: mcp: reading stdin: {e}");
                    break;
                }
            };
            if line.trim().is_empty() {
                continue;
            }
            match protocol::parse(&line) {
                Message::Invalid { id, code, message } => {
                    out.line(&protocol::error(&id, code, &message));
                }
                Message::Response => {}
                Message::Notification { method, params } => {
                    if method == "notifications/cancelled"
                        && let Some(id) = params.get("requestId")
                        && let Some(flag) = lock(&in_flight).get(&protocol::id_key(id))
                    {
                        flag.store(true, Ordering::SeqCst);
                    }
                }
                Message::Request { id, method, params } => match method.as_str() {
                    "initialize" => out.line(&protocol::result(
                        &id,
                        protocol::initialized(&params, tools::INSTRUCTIONS),
                    )),
                    "ping" => out.line(&protocol::result(&id, json!({}))),
                    "tools/list" => out.line(&protocol::result(&id, tools::list())),
                    "tools/call" => {
                        let flag = Arc::new(AtomicBool::new(false));
                        lock(&in_flight).insert(protocol::id_key(&id), flag.clone());
                        let (out, in_flight, caller) = (&out, &in_flight, &caller);
                        scope.spawn(move || {
                            let token = params.pointer("/_meta/progressToken").cloned();
                            let progress = |done: f64, total: f64, message: &str| {
                                if let Some(token) = &token {
                                    out.line(&protocol::notification(
                                        "notifications/progress",
                                        json!({"progressToken": token, "progress": done, "total": total, "message": message}),
                                    ));
                                }
                            };
                            let wait = Waiting {
                                cancelled: &flag,
                                progress: &progress,
                            };
                            let answer = tools::call(ctx, caller, &params, &wait);
                            lock(in_flight).remove(&protocol::id_key(&id));
                            match answer {
                                Answer::Done(v) => out.line(&protocol::result(&id, v)),
                                Answer::Unknown(why) => out.line(&protocol::error(
                                    &id,
                                    protocol::INVALID_PARAMS,
                                    &why,
                                )),
                                // A cancelled request is not answered.
                                Answer::Cancelled => {}
                            }
                        });
                    }
                    other => out.line(&protocol::error(
                        &id,
                        protocol::METHOD_NOT_FOUND,
                        &format!("no method {other:?}"),
                    )),
                },
            }
        }
        // The client is gone: end the waits, so the scope can close.
        for flag in lock(&in_flight).values() {
            flag.store(true, Ordering::SeqCst);
        }
    });
    Ok(())
}

/// The map of calls in flight, even after a call's thread panicked.
fn lock(m: &InFlight) -> std::sync::MutexGuard<'_, HashMap<String, Arc<AtomicBool>>> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
