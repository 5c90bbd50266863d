//! Output manners: lines to stdout that end the program quietly when the
//! reader has gone (`| head`), notes to stderr that never fail, and
//! whether colour is on: only on a terminal and never when `NO_COLOR` is
//! set or `TERM` is `dumb` (the colours themselves are the view's,
//! [`crate::view::Tone`]).

use std::io::{IsTerminal, Write};

/// True when stdout is a terminal that takes escape codes (not
/// `TERM=dumb`) and `NO_COLOR` is unset or empty.
pub fn colour() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::io::stdout().is_terminal()
        && !crate::base::screen::dumb_terminal()
}

/// Prints one line to stdout. A closed pipe ends the program quietly with
/// status 0: the reader asked for no more.
pub fn line(text: &str) {
    write_line(&crate::base::screen::screened(text));
}

/// Prints one JSON document on a line of its own, as [`line()`] does.
pub fn json(doc: &serde_json::Value) {
    write_line(&json_text(doc));
}

/// `doc` as one line of JSON with every control character a JSON escape:
/// serde leaves DEL and the C1 controls as they are, and [`line()`]'s
/// screening would make them text that is not JSON; `\u009b` is the same
/// string, and drives no terminal.
pub fn json_text(doc: &serde_json::Value) -> String {
    let text = doc.to_string();
    if !text.chars().any(char::is_control) {
        return text;
    }
    let mut escaped = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if c.is_control() {
            escaped.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            escaped.push(c);
        }
    }
    escaped
}

/// Writes one line to stderr as `eprintln!` would, except that a stderr
/// that cannot be written (a closed pipe, a service manager's log gone) is
/// ignored: `eprintln!` panics there, and a panic in the signal handler's
/// thread would leave a listener no SIGTERM can stop.
pub fn note(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{text}");
}

/// [`note`] with `format!` arguments: the crate's `eprintln!`, which
/// `tests/suite/layers.rs` keeps the only one.
#[macro_export]
macro_rules! note {
    () => {
        $crate::base::out::note("")
    };
    ($($arg:tt)*) => {
        $crate::base::out::note(&format!($($arg)*))
    };
}

fn write_line(text: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{text}").and_then(|_| out.flush())
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(i32::from(crate::base::exit::SUCCESS));
    }
}
