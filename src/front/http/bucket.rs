//! The HTTP intake's endpoints in front of a listener on a bucket
//! ([`Door`]): the same doors onto the library as on a folder, over the
//! storage seam. A posted job is judged by acceptance, the replay guard and
//! its age, then published create-only into the inbox as `enqueue` would
//! ([`lane::publish`]); a marker is judged, then placed as `cancel` would
//! ([`lane::place_marker`]) and handed straight to the runner; the GETs
//! answer from what the bucket holds ([`lane::look`]) and what `status`
//! shows of the target.

use serde_json::json;

use super::routes::{Answer, from_error, from_rejection};
use crate::base::names::JobId;
use crate::base::read::FileRead;
use crate::engine::bucket::Door;
use crate::engine::runner::Control;
use crate::places::rejected::Reason;
use crate::protocol::accept;
use crate::requests::cancel::CancelStatus;
use crate::requests::lane::{self, Seen};
use crate::requests::submit;
use crate::store::layout::Place;
use crate::store::port::Shelves;

/// How many results `GET /v1/status` names, as `status` does by default.
const RESULTS_SHOWN: usize = 5;

/// `POST /v1/jobs`.
pub fn submit(d: &Door, body: &[u8]) -> Answer {
    let target = d.t.target().as_str();
    let job = submit::admit(target, &d.key, body, d.max_age, |id| {
        lane::used(&d.t, id, &d.key)
    })
    .map_err(|r| from_rejection(&r.what, &r.rejection))?;
    lane::publish(&d.t, &job, &job.to_file_bytes(), &d.key).map_err(from_error)?;
    d.control.send(Control::Wake);
    Ok((
        202,
        json!({"jobId": job.id.as_str(), "target": target, "status": "queued"}),
    ))
}

/// `POST /v1/jobs/{id}/cancel`.
pub fn cancel(d: &Door, raw_id: &str, body: &[u8]) -> Answer {
    let target = d.t.target().as_str();
    let id = JobId::parse(raw_id).map_err(from_error)?;
    let m = accept::marker(
        &id.file_name(),
        FileRead::Bytes(body.to_vec()),
        target,
        &d.key,
    )
    .map_err(|r| from_rejection(&format!("marker for {id}"), &r))?;
    let status = lane::place_marker(&d.t, &id, &d.key, &m).map_err(from_error)?;
    let mut out = status.to_json(&id);
    out["target"] = json!(target);
    match &status {
        CancelStatus::Requested { existing, .. } => {
            let acting = existing.clone().unwrap_or(m);
            if let Some(e) = existing {
                out["marker"] = json!(e);
            }
            // The runner stops its job at once; a queued job's marker is
            // met by the listener's next pass.
            d.control.send(Control::Cancel(id, Box::new(acting)));
            Ok((202, out))
        }
        CancelStatus::NotRunning(o) => {
            out["result"] = json!(o);
            Ok((202, out))
        }
        CancelStatus::Blocked(_) => Ok((409, out)),
    }
}

/// `GET /v1/jobs/{id}`: `done` with its verified result, `running` once
/// claimed (or spawned), `queued`, `rejected` with the reason, `unknown`;
/// a result that does not verify is `FORBIDDEN`.
pub fn job_state(d: &Door, raw_id: &str) -> Answer {
    let target = d.t.target().as_str();
    let id = JobId::parse(raw_id).map_err(from_error)?;
    let mut out = json!({"jobId": id.as_str(), "target": target});
    let seen = lane::look(&d.t, &id, &d.key).map_err(from_error)?;
    let runs_now = crate::engine::shutdown::is_running(id.as_str());
    let state = match seen {
        Seen::Done(o) => {
            out["result"] = json!(o);
            "done"
        }
        Seen::Taken => "running",
        Seen::Queued if runs_now => "running",
        Seen::Queued => "queued",
        Seen::Forged(why) => {
            return Err(from_error(crate::base::error::Error::forbidden(format!(
                "the result of {id} does not verify: {why}"
            ))));
        }
        Seen::Nothing => match refused(d, &id) {
            Some(r) => {
                out["reason"] = json!({"verdict": r.verdict, "message": r.message, "rejectedAt": r.rejected_at});
                "rejected"
            }
            None => "unknown",
        },
    };
    out["state"] = json!(state);
    Ok((200, out))
}

/// The reason `id`'s job file was refused with, when it was.
fn refused(d: &Door, id: &JobId) -> Option<Reason> {
    let name = format!("{}.reason.json", id.file_name());
    match d.t.shelf(Place::Rejected).read(&name, 64 * 1024) {
        FileRead::Bytes(b) => serde_json::from_slice(&b).ok(),
        _ => None,
    }
}

/// `GET /v1/status`: what `status` shows of this target.
pub fn status(d: &Door) -> Answer {
    let one = lane::target_seen(&d.t, &d.key)
        .map_err(from_error)?
        .to_json(RESULTS_SHOWN);
    Ok((
        200,
        json!({"root": d.root, "store": "s3", "targets": [one]}),
    ))
}
