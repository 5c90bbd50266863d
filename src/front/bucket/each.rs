//! `result` and `enqueue --wait` over a target list (`A,B`, `all`) on a
//! bucket, as on a folder: one answer per target, in the order given (its
//! result's line, or why it has none), and the worst exit status of them
//! ([`exit::worst`]). A wait waits for each target in turn, all within the
//! one `--wait-timeout`.

use std::time::{Duration, Instant};

use serde_json::json;

use super::Lane;
use crate::base::error::Code;
use crate::base::exit;
use crate::base::names::JobId;
use crate::requests::lane::{self, Seen};
use crate::store::port::Shelves;
use crate::store::port::bucket::BucketTarget;
use crate::view::result::{self, Answer};

/// What became of `id` on each of `targets`: looked at once (`wait` is
/// `None`), or waited for within the one limit (`Some(None)`: no limit).
pub fn results(
    lane: &Lane,
    targets: &[BucketTarget],
    id: &JobId,
    wait: Option<Option<Duration>>,
) -> Vec<Answer> {
    let start = Instant::now();
    targets
        .iter()
        .map(|t| {
            let seen = match wait {
                None => lane::look(t, id, &lane.key),
                Some(limit) => {
                    let left = limit.map(|l| l.saturating_sub(start.elapsed()));
                    super::wait::for_result(t, id, &lane.key, left, None)
                }
            };
            match seen {
                Ok(seen) => answer(t, id, seen, wait.is_some()),
                Err(e) => Answer::failed_on(t.target().as_str(), &e),
            }
        })
        .collect()
}

/// The answer `seen` makes for `id` on `t`; `waited`: a wait that ended
/// without a result ran out.
fn answer(t: &BucketTarget, id: &JobId, seen: Seen, waited: bool) -> Answer {
    let target = t.target().as_str();
    let state = match seen {
        Seen::Done(o) => {
            let line = result::text(&o)
                .lines()
                .next()
                .unwrap_or_default()
                .to_string();
            return Answer {
                status: o.wait_exit_status(),
                json: result::json(&o),
                line,
            };
        }
        Seen::Forged(why) => return Answer::failed_on(target, &super::unverified(t, id, &why)),
        Seen::Nothing if !waited => {
            return Answer {
                status: exit::of(Code::NotFound),
                json: json!({"jobId": id.as_str(), "target": target, "state": "not seen"}),
                line: format!(
                    "{target}: no job {id} (inbox, archive or results of {})",
                    t.shown()
                ),
            };
        }
        Seen::Nothing => "not seen",
        Seen::Queued => "queued",
        Seen::Taken => "running",
    };
    let mut json = json!({"jobId": id.as_str(), "target": target, "state": state});
    let mut line = format!("{target}: {id} has no result yet: it is {state}");
    if waited {
        json["timedOut"] = json!(true);
        line.push_str(" (timed out waiting)");
    }
    Answer {
        status: exit::UNFINISHED,
        json,
        line,
    }
}
