//! A queued job's cancel check (docs/protocol.md §7.4): a valid marker ends
//! it before anything is spawned; a file in the marker's place that is not
//! one is moved aside (once settled, if it does not parse or cannot be
//! read) so it cannot
//! hold the place a genuine marker needs.

use super::{Candidate, Listener};
use crate::accept::{self, BadMarker};
use crate::cancel::set_marker_aside;
use crate::clock;
use crate::doc::{Marker, detail};
use crate::error::Result;
use crate::layout::Folders;
use crate::names::JobId;

impl Listener {
    /// The valid cancel marker for `id`, if one is there. An invalid one is
    /// moved to `archive/rejected/` (once settled), so it cannot block the
    /// slot a genuine marker needs.
    pub(super) fn valid_marker(&mut self, f: &Folders, id: &JobId) -> Option<Marker> {
        let name = id.file_name();
        if !self.markers.may_hold(f.cancel(), &name, self.settings.poll) {
            return None;
        }
        let r = match crate::judge::marker(f.cancel(), id, self.dirs.target().as_str(), &self.key) {
            Ok(m) => return Some(m),
            Err(r) => r,
        };
        // One that may still be arriving is moved aside once settled by
        // the drain's rule, by a rename, which needs no read permission.
        let settled = || {
            self.inbox
                .settled(&format!("cancel/{name}"), f.cancel(), &name)
        };
        match accept::bad_marker(r.verdict, settled) {
            BadMarker::Gone | BadMarker::Wait => None,
            BadMarker::SetAside => {
                self.say(format!(
                    "rejected marker cancel/{name}: {} ({})",
                    r.verdict.as_str(),
                    r.message
                ));
                let target = self.dirs.target().as_str();
                let moved =
                    set_marker_aside(f.rejected(), f.cancel(), &name, &r, target, &self.key);
                if let Err(e) = moved {
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
