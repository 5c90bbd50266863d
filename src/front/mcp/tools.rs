//! The tools the server offers: their names, descriptions and input
//! schemas ([`list`]), the reading of a call's arguments ([`Args`]), and
//! the routing of a call to [`super::calls`] with its answer shaped as a
//! tool result ([`call`]). Unknown argument fields are ignored: a tool
//! reads only the fields it names, so no field can set the caller, the
//! stop's reason or its grace.

use std::sync::atomic::AtomicBool;

use serde_json::{Map, Value, json};

use super::calls::{self, Caller};
use crate::base::error::{Error, Result};
use crate::front::config::Context;

/// The server's `instructions`: the choosing table in two lines.
pub const INSTRUCTIONS: &str = "Run commands on the fleet's machines with dispatch_job; follow them with job_status, job_result (wait_seconds to wait) and job_logs.\n\
To change a job's course: information that can wait -> message_job (queued); replace the current approach now -> message_job with delivery_mode \"interrupt\"; nothing should replace it -> stop_job.";

/// Which tool changes a job's course, for the descriptions of the two
/// that do: agents rarely pick the interrupt unless it is put before them.
const CHOOSING: &str = "Choose by what should happen to the job:\n\
- the information can wait until the job ends -> message_job with delivery_mode \"queued\" (the default);\n\
- the current approach should be replaced now -> message_job with delivery_mode \"interrupt\" (the job is stopped and the new one runs first);\n\
- nothing should replace the job -> stop_job.";

/// What a tool call came to.
pub enum Answer {
    /// A tool result (a failure is one too, with `isError`).
    Done(Value),
    /// Not a call of a tool this server has: a JSON-RPC error.
    Unknown(String),
    /// The client cancelled the call: no answer is sent.
    Cancelled,
}

/// How a call that waits reports: whether the client cancelled it, and a
/// progress note (seconds waited, the limit, a sentence), sent only when
/// the client asked for progress.
pub struct Waiting<'a> {
    /// Set when the client sends `notifications/cancelled` for the call.
    pub cancelled: &'a AtomicBool,
    /// Sends a progress notification.
    pub progress: &'a (dyn Fn(f64, f64, &str) + Sync),
}

/// The `tools/list` result.
pub fn list() -> Value {
    let s = |d: &str| json!({"type": "string", "description": d});
    let target = s("The machine (target) that runs or ran the job");
    let job_id = s("The job's id, as dispatch_job returned it");
    let job = || {
        json!({
            "argv": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                     "description": "The program and its arguments, run on the target without a shell"},
            "cwd": s("Working directory on the target (an absolute path)"),
            "env": {"type": "object", "additionalProperties": {"type": "string"},
                    "description": "Environment variables for the job"},
            "timeout": {"type": ["string", "number"],
                        "description": "Stop the job after this long: \"30m\", \"2h\", or seconds"},
            "label": s("A short description shown by status and results"),
            "priority": {"type": "string", "enum": ["normal", "high"]},
            "after": {"type": "array", "items": {"type": "string"},
                      "description": "Start only once these jobs ([TARGET:]ID) have succeeded"},
            "seal": {"type": "boolean", "default": false,
                     "description": "Seal argv, cwd, env and label to the target's key, as enqueue --seal does (--auth roster only): the job file shows only its header, and only this machine opens its result's detail"},
        })
    };
    let with = |mut base: Value, more: Value| {
        if let (Some(b), Value::Object(m)) = (base.as_object_mut(), more) {
            b.extend(m);
        }
        base
    };
    let tools = [
        tool(
            "dispatch_job",
            "Queue a command on a machine of the fleet; returns its job_id at once. Follow it with job_status, job_result or job_logs. From inside a job, the new job is recorded as the caller's child.",
            with(job(), json!({"target": target})),
            &["target", "argv"],
        ),
        tool(
            "job_status",
            "Where a job stands: queued (and what it waits for), running, finished with its outcome, or rejected with the verdict.",
            json!({"target": target, "job_id": job_id}),
            &["target", "job_id"],
        ),
        tool(
            "job_result",
            "A job's verified result: ok, exit code, how it ended and the tails of its output. With wait_seconds, waits up to that long for the job to end (progress is reported when asked for; cancelling the call ends the wait). A job not finished yet answers finished: false.",
            json!({"target": target, "job_id": job_id,
                   "wait_seconds": {"type": "number", "minimum": 0, "description": "How long to wait for the result [default: 0, look once]"}}),
            &["target", "job_id"],
        ),
        tool(
            "job_logs",
            "The end of a job's stdout and stderr, as written so far.",
            json!({"target": target, "job_id": job_id,
                   "max_bytes": {"type": "integer", "minimum": 1, "description": "At most this many bytes of each stream, the last ones [default: 16384]"}}),
            &["target", "job_id"],
        ),
        tool(
            "stop_job",
            &format!(
                "Stop a job: no prompt is sent and nothing replaces it. The job gets its grace to end, then its process tree is stopped. Answers \"stopped\" once the stop is accepted (the process may still be ending) and \"not_running\" for a job that already ended; asking again is harmless. From inside a job, only the caller's own direct children may be stopped.\n\n{CHOOSING}"
            ),
            json!({"target": target, "job_id": job_id}),
            &["target", "job_id"],
        ),
        tool(
            "message_job",
            &format!(
                "Send a job new instructions as a new job (argv) that continues its work. delivery_mode \"interrupt\": the job is stopped now and the new job runs first (delivery \"sent\"); if the stop cannot land, the new job stays queued and the reason is given. delivery_mode \"queued\": the new job runs after the job ends, however it ends (delivery \"queued\"). From inside a job, only the caller's own direct children may be messaged.\n\n{CHOOSING}"
            ),
            with(
                job(),
                json!({"target": target,
                       "job_id": s("The job to message"),
                       "delivery_mode": {"type": "string", "enum": ["queued", "interrupt"],
                                         "description": "\"interrupt\" replaces the current approach now; \"queued\" (the default) waits for the job to end"}}),
            ),
            &["target", "job_id", "argv"],
        ),
        tool(
            "list_jobs",
            "What runs, waits, is being stopped and recently finished, per target: the document of `fleet-dispatch status --json`.",
            json!({"target": s("Only this target [default: every target]")}),
            &[],
        ),
    ];
    json!({"tools": tools})
}

/// One tool's entry in `tools/list`.
fn tool(name: &str, description: &str, properties: Value, required: &[&str]) -> Value {
    json!({
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties, "required": required},
    })
}

/// Calls the tool `params` names, as `caller`.
pub fn call(ctx: &Context, caller: &Caller, params: &Value, wait: &Waiting) -> Answer {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return Answer::Unknown("tools/call needs the tool's \"name\"".into());
    };
    let empty = Map::new();
    let args = match params.get("arguments") {
        None | Some(Value::Null) => Args(&empty),
        Some(Value::Object(m)) => Args(m),
        Some(_) => {
            return Answer::Done(failed(&Error::validation(
                "\"arguments\" must be an object",
            )));
        }
    };
    let done = match name {
        "dispatch_job" => calls::dispatch(ctx, &args),
        "job_status" => calls::status(ctx, &args),
        "job_result" => match calls::result(ctx, &args, wait) {
            Ok(None) => return Answer::Cancelled,
            Ok(Some(r)) => Ok(r),
            Err(e) => Err(e),
        },
        "job_logs" => calls::logs(ctx, &args),
        "stop_job" => calls::stop(ctx, &args),
        "message_job" => calls::message(ctx, caller, &args),
        "list_jobs" => calls::list(ctx, &args),
        other => return Answer::Unknown(format!("no tool {other:?}; tools/list names them")),
    };
    Answer::Done(match done {
        Ok((value, text)) => json!({
            "content": [{"type": "text", "text": text}],
            "structuredContent": value,
            "isError": false,
        }),
        Err(e) => failed(&e),
    })
}

/// A failed call as a tool result: the CLI's error code and message.
fn failed(e: &Error) -> Value {
    json!({
        "content": [{"type": "text", "text": e.to_string()}],
        "structuredContent": e.to_json(),
        "isError": true,
    })
}

/// A call's arguments, read field by field; any other field is ignored.
pub struct Args<'a>(pub &'a Map<String, Value>);

impl Args<'_> {
    /// The field `key`; `null` counts as not given.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key).filter(|v| !v.is_null())
    }

    /// A string field, if given.
    pub fn text(&self, key: &str) -> Result<Option<String>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(Error::validation(format!(
                "argument {key:?} must be a string"
            ))),
        }
    }

    /// A string field that must be given.
    pub fn need(&self, key: &str) -> Result<String> {
        self.text(key)?
            .ok_or_else(|| Error::validation(format!("argument {key:?} is required")))
    }

    /// A number field, if given (not below 0).
    pub fn number(&self, key: &str) -> Result<Option<f64>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .filter(|n| *n >= 0.0 && n.is_finite())
                .map(Some)
                .ok_or_else(|| {
                    Error::validation(format!("argument {key:?} must be a number, 0 or more"))
                }),
        }
    }

    /// A boolean field, false when not given.
    pub fn flag(&self, key: &str) -> Result<bool> {
        match self.get(key) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(Error::validation(format!(
                "argument {key:?} must be true or false"
            ))),
        }
    }

    /// The fields of a job (`dispatch_job`'s, `message_job`'s) as a
    /// `--batch` line's object, for [`crate::front::send::request::Fields::from_line`]
    /// to check as it checks a line; only the fields a job has are taken.
    pub fn job_line(&self) -> Value {
        let mut line = Map::new();
        for (key, as_line) in [
            ("target", "target"),
            ("argv", "argv"),
            ("cwd", "cwd"),
            ("env", "env"),
            ("timeout", "timeout"),
            ("label", "label"),
            ("priority", "priority"),
            ("after", "after"),
        ] {
            if let Some(v) = self.get(key) {
                line.insert(as_line.to_string(), v.clone());
            }
        }
        Value::Object(line)
    }
}
