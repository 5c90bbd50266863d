//! The view layer: one model per output, rendered as text for a terminal
//! or as JSON, and the fleet report as an HTML page ([`report`]). The models are the
//! library's — a verified result ([`crate::protocol::doc::Outcome`]), a target's
//! status ([`crate::places::observe::TargetStatus`]), doctor's report
//! ([`crate::requests::doctor::Report`]) — and a view never decides a state: it
//! only words, colours and escapes what it is given. Printing is the
//! front end's ([`crate::base::out`]).
//!
//! What each sink needs is kept here: a [`Tone`] is an ANSI colour on a
//! terminal and a CSS class on a page, and text read from the shared
//! folder is escaped for the sink it goes to ([`escape`]).

pub mod doctor;
pub mod escape;
pub mod logs;
pub mod report;
pub mod result;
pub mod status;

use crate::protocol::doc::outcome::Ending;

/// How a word is meant to strike its reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    /// Success.
    Good,
    /// Failure or refusal.
    Bad,
    /// Stopped, waiting, or worth a look.
    Warn,
}

impl Tone {
    /// Its colour on a terminal: the SGR parameter of `ESC [ … m`.
    pub fn ansi(self) -> &'static str {
        match self {
            Tone::Good => "32",
            Tone::Bad => "31",
            Tone::Warn => "33",
        }
    }

    /// Its class on a page: the CSS class an HTML renderer puts on the
    /// word's element, so the page's style sheet, not the view, colours it.
    pub fn css_class(self) -> &'static str {
        match self {
            Tone::Good => "tone-good",
            Tone::Bad => "tone-bad",
            Tone::Warn => "tone-warn",
        }
    }

    /// The tone of how a job ended: a clean exit is good, an end by
    /// itself or its listener bad, a stop someone asked for (or a
    /// dependency's) worth a look.
    pub fn of_ending(e: Ending) -> Tone {
        match e {
            Ending::Done => Tone::Good,
            Ending::Failed | Ending::SpawnFailed | Ending::Timeout | Ending::Interrupted => {
                Tone::Bad
            }
            Ending::Cancelled | Ending::CancelledBeforeStart | Ending::DependencyFailed => {
                Tone::Warn
            }
        }
    }

    /// The tone of a file's verdict ([`crate::protocol::accept::Verdict`]'s word):
    /// good only when it is valid.
    pub fn of_verdict(verdict: &str) -> Tone {
        if verdict == crate::protocol::accept::Verdict::Valid.as_str() {
            Tone::Good
        } else {
            Tone::Warn
        }
    }
}

/// `word` for a terminal, in its tone's colour when colour is on
/// ([`crate::base::out::colour`]).
pub fn paint(word: &str, tone: Tone) -> String {
    paint_if(crate::base::out::colour(), word, tone)
}

/// `word` in its tone's colour when `colour`, else as it is.
fn paint_if(colour: bool, word: &str, tone: Tone) -> String {
    if colour {
        format!("\x1b[{}m{word}\x1b[0m", tone.ansi())
    } else {
        word.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tone_is_an_ansi_colour_on_a_terminal_and_a_css_class_on_a_page() {
        assert_eq!(paint_if(true, "done", Tone::Good), "\x1b[32mdone\x1b[0m");
        assert_eq!(paint_if(true, "failed", Tone::Bad), "\x1b[31mfailed\x1b[0m");
        assert_eq!(
            paint_if(true, "cancelled", Tone::Warn),
            "\x1b[33mcancelled\x1b[0m"
        );
        assert_eq!(paint_if(false, "done", Tone::Good), "done");
        assert_eq!(Tone::Good.css_class(), "tone-good");
        assert_eq!(Tone::Bad.css_class(), "tone-bad");
        assert_eq!(Tone::Warn.css_class(), "tone-warn");
        // A class is a bare CSS identifier: nothing to escape in a page.
        for t in [Tone::Good, Tone::Bad, Tone::Warn] {
            let class = t.css_class();
            assert!(class.chars().all(|c| c.is_ascii_lowercase() || c == '-'));
            assert_eq!(escape::html(class), class);
        }
    }

    #[test]
    fn every_ending_and_verdict_has_the_tone_it_always_had() {
        let tones: Vec<(&str, Tone)> = Ending::ALL
            .iter()
            .map(|e| (e.as_str(), Tone::of_ending(*e)))
            .collect();
        assert_eq!(
            tones,
            [
                ("done", Tone::Good),
                ("failed", Tone::Bad),
                ("cancelled", Tone::Warn),
                ("cancelled-before-start", Tone::Warn),
                ("timeout", Tone::Bad),
                ("interrupted", Tone::Bad),
                ("spawn-failed", Tone::Bad),
                ("dependency-failed", Tone::Warn),
            ]
        );
        assert_eq!(Tone::of_verdict("valid"), Tone::Good);
        assert_eq!(Tone::of_verdict("bad-signature"), Tone::Warn);
    }
}
