//! A queued job's cancel check (docs/protocol.md §7.4): a valid marker ends
//! it before anything is spawned; a file in the marker's place that is not
//! one is moved aside (once settled, if it does not parse or cannot be
//! read) so it cannot
//! hold the place a genuine marker needs.

use super::{Candidate, Listener};
use crate::accept::{self, Verdict};
use crate::clock;
use crate::doc::{self, Marker, detail};
use crate::error::Result;
use crate::layout::Folders;
use crate::names::JobId;
use crate::rejected::Kind;

impl Listener {
    /// The valid cancel marker for `id`, if one is there. An invalid one is
    /// moved to `archive/rejected/` (once settled), so it cannot block the
    /// slot a genuine marker needs.
    pub(super) fn valid_marker(&mut self, f: &Folders, id: &JobId) -> Option<Marker> {
        let name = id.file_name();
        if !self.markers.may_hold(f.cancel(), &name, self.settings.poll) {
            return None;
        }
        let read = f.cancel().read_limited(&name, doc::marker::MAX_BYTES);
        match accept::marker(&name, read, self.dirs.target().as_str(), &self.key) {
            Ok(m) => Some(m),
            Err(r) if r.verdict == Verdict::Missing => None,
            // One that cannot be read (held open, or mode 000) or does not
            // parse may still be arriving: moved aside once settled, by a
            // rename, which needs no read permission.
            Err(r)
                if matches!(r.verdict, Verdict::Malformed | Verdict::Unreadable)
                    && !self
                        .inbox
                        .settled(&format!("cancel/{name}"), f.cancel(), &name) =>
            {
                None
            }
            Err(r) => {
                self.say(format!(
                    "rejected marker cancel/{name}: {} ({})",
                    r.verdict.as_str(),
                    r.message
                ));
                if let Err(e) = self.reject(f, f.cancel(), &name, &r, Kind::Marker) {
                    self.say(format!("could not move the marker aside: {e}"));
                }
                None
            }
        }
    }

    pub(super) fn cancel_before_start(&mut self, c: &Candidate, marker: &Marker) -> Result<()> {
        let finished_at = clock::format(clock::now());
        let outcome = detail::cancelled_before_start(&self.key, &c.job, marker, &finished_at);
        self.counters.cancelled += 1;
        self.say(format!(
            "cancelled {} before start (marker from {})",
            c.job.id, marker.origin
        ));
        self.finish(&c.job.id, &outcome, true)
    }
}
