//! Waiting for a job's result on an object-store root (`enqueue --wait`,
//! `result --wait`, `cancel --wait`): what became of the job is looked at
//! over the seam ([`lane::look`]), soon at first and then every [`POLL`]
//! ([`Pace`]), until it has a result, its result does not verify, or the
//! wait runs out; then answered as on a folder.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::base::clock;
use crate::base::error::{Error, Result};
use crate::base::exit;
use crate::base::names::JobId;
use crate::front::config::Context;
use crate::requests::lane::{self, Seen};
use crate::store::port::Shelves;
use crate::trust::Key;

use super::logs::Follower;

/// How often a wait looks again at most: each look is a GET and up to two
/// HEADs.
pub const POLL: Duration = Duration::from_secs(1);

/// A wait's first pause: it doubles after each look up to [`POLL`], so a
/// quick job is answered within a tenth of a second or so, and a long one
/// costs a look a second.
const FIRST_PAUSE: Duration = Duration::from_millis(100);

/// The pauses between a wait's looks: [`FIRST_PAUSE`], doubling to [`POLL`].
pub struct Pace(Duration);

impl Pace {
    /// A wait's first pause.
    pub fn start() -> Pace {
        Pace(FIRST_PAUSE)
    }

    /// The next pause, never past `left` of the wait.
    pub fn next(&mut self, left: Option<Duration>) -> Duration {
        let pause = self.0;
        self.0 = (self.0 * 2).min(POLL);
        left.map_or(pause, |l| l.min(pause))
    }
}

/// The `--wait-timeout` `text`, parsed (`None`: no limit); a bad one is
/// `VALIDATION_ERROR`, naming the flag.
pub fn limit(text: Option<&str>) -> Result<Option<Duration>> {
    text.map(|s| {
        clock::parse_duration(s)
            .map_err(|e| Error::validation(format!("--wait-timeout: {}", e.message)))
    })
    .transpose()
}

/// Waits for `id`'s result on `t`, at most `limit` (`None`: no limit):
/// what was seen last. A job not seen at all is waited for too (a store
/// that lists late, or a listener moving it).
/// With `follow`, the job's output is streamed as it comes, and held
/// against its result at the end ([`Follower::saw`]).
pub fn for_result(
    t: &dyn Shelves,
    id: &JobId,
    key: &Key,
    limit: Option<Duration>,
    mut follow: Option<&mut Follower>,
) -> Result<Seen> {
    let start = Instant::now();
    let mut pace = Pace::start();
    loop {
        let seen = lane::look(t, id, key)?;
        if let Some(f) = follow.as_deref_mut() {
            f.saw(&seen)?;
        }
        let waiting = matches!(seen, Seen::Queued | Seen::Taken | Seen::Nothing);
        if !waiting || limit.is_some_and(|l| start.elapsed() >= l) {
            return Ok(seen);
        }
        let left = limit.map(|l| l.saturating_sub(start.elapsed()));
        std::thread::sleep(pace.next(left));
    }
}

/// Answers a wait for `id` on `t` that came to `seen`, `out` being the
/// command's answer so far: the result (printed as `enqueue --wait` prints
/// it on a folder, `followed` or not, exit as the job's), or why there is
/// none. `limit` is
/// the wait's; a wait that ran out exits `UNFINISHED`.
pub fn answer(
    ctx: &Context,
    t: &dyn Shelves,
    id: &JobId,
    mut out: Value,
    seen: Seen,
    limit: Option<Duration>,
    followed: bool,
) -> Result<u8> {
    let state = match seen {
        Seen::Done(o) => {
            if ctx.json() {
                out["result"] = crate::view::result::json(&o);
                crate::base::out::line(&out.to_string());
            } else if followed {
                crate::base::out::line(&crate::view::result::followed(&o));
            } else {
                crate::base::out::line(&crate::view::result::text(&o));
            }
            return Ok(o.wait_exit_status());
        }
        Seen::Forged(why) => {
            return Err(super::unverified(t, id, &why));
        }
        Seen::Queued => "queued",
        Seen::Taken => "running",
        Seen::Nothing => "not seen",
    };
    out["state"] = json!(state);
    out["timedOut"] = json!(true);
    let human = format!(
        "gave up waiting for {id} after {}: it is still {state} on {}",
        clock::format_duration(limit.unwrap_or_default()),
        t.target()
    );
    if ctx.json() {
        crate::base::out::json(&out);
    } else {
        crate::note!("fleet-dispatch: {human}");
    }
    Ok(exit::UNFINISHED)
}
