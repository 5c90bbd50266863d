//! The demo's narration: a line of text per step, or with `--json` one
//! JSON event per step, and the end of the demo when its reader goes away.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};

use super::{CLOSED, INTERRUPTED, STOPPED};
use crate::base::error::{Code, Error, Result};

/// Set by `--json`: the narration is JSON lines, one event each
/// ([`event`]), rather than text.
pub(super) static JSON: AtomicBool = AtomicBool::new(false);

/// One line of narration, in text only (with `--json` the same step is an
/// [`event`]). A closed stdout or a Ctrl-C ends the demo through its
/// clean-up, never by a panic or an exit that skips it.
pub(super) fn say(line: impl std::fmt::Display) -> Result<()> {
    if JSON.load(Ordering::SeqCst) {
        return going_on();
    }
    write(&line.to_string())
}

/// One event of the narration with `--json`: an object whose `event` says
/// what it is (`start`, `step`, `command`, `files`, `file`, `note`,
/// `listener`, `end`); nothing in text.
pub(super) fn event(kind: &str, mut fields: Value) -> Result<()> {
    if !JSON.load(Ordering::SeqCst) {
        return going_on();
    }
    fields["event"] = json!(kind);
    write(&crate::base::out::json_text(&fields))
}

/// A line of text ([`say`]) and its event ([`event`]): whichever the form.
pub(super) fn tell(line: impl std::fmt::Display, kind: &str, fields: Value) -> Result<()> {
    say(line)?;
    event(kind, fields)
}

pub(super) fn going_on() -> Result<()> {
    if INTERRUPTED.load(Ordering::SeqCst) {
        return Err(Error::new(Code::Internal, STOPPED));
    }
    Ok(())
}

pub(super) fn write(line: &str) -> Result<()> {
    going_on()?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(|_| Error::new(Code::Internal, CLOSED))
}
