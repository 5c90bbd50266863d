//! One listener per target across the fleet (docs/protocol.md §7.1): a
//! running listener that sees another instance's fresh heartbeat in the
//! target folder stops starting jobs until one of the two is stopped.
//! Start-up refuses outright (`Listener::start`); this is for a second
//! listener that appears later, through a sync engine that no lock spans.

use std::time::Instant;

use super::Listener;

impl Listener {
    /// True while another listener serves this target: then no job is
    /// started, and that is said on every poll until one of the two stops.
    /// Looked at once per poll interval. The other's heartbeat and ours
    /// take turns in one file, so once seen, it counts until it says
    /// `stopped` or grows stale.
    pub(super) fn rival_serves(&mut self) -> bool {
        if self
            .rival_checked
            .is_some_and(|t| t.elapsed() < self.settings.poll)
        {
            return self.rival.is_some();
        }
        self.rival_checked = Some(Instant::now());
        // Read once: whose beat is there now decides both cases below.
        let now_there = self.beat.judged().ok();
        let fresh = now_there.clone().filter(|b| self.beat.is_rival(b));
        let seen = match (fresh, self.rival.take()) {
            (Some(fresh), _) => Some(fresh),
            // Our own beat may have covered theirs since: keep the last
            // one seen while it would still count as alive, unless that
            // listener has since said, signed, that it stopped (a forged
            // "stopped" must not let two listeners start jobs).
            (None, Some(old)) => {
                let stopped = now_there
                    .as_ref()
                    .is_some_and(|b| b.instance == old.instance && !b.alive());
                (!stopped && old.alive()).then_some(old)
            }
            (None, None) => None,
        };
        match &seen {
            Some(b) => self.say(format!(
                "not starting jobs: another listener serves {}: {}; stop one of them",
                self.dirs.target(),
                b.who_beside(self.beat.instance())
            )),
            None if self.rival_was_said => {
                self.say("the other listener is gone; starting jobs again");
            }
            None => {}
        }
        self.rival_was_said = seen.is_some();
        self.rival = seen;
        self.rival.is_some()
    }
}
