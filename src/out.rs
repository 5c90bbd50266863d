//! Output manners: lines to stdout that end the program quietly when the
//! reader has gone (`| head`), and colour only on a terminal and never when
//! `NO_COLOR` is set or `TERM` is `dumb`.

use std::io::{IsTerminal, Write};

/// A tone for a status word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    /// Success.
    Good,
    /// Failure or refusal.
    Bad,
    /// Stopped, waiting, or worth a look.
    Warn,
}

/// True when stdout is a terminal that takes escape codes (not
/// `TERM=dumb`) and `NO_COLOR` is unset or empty.
pub fn colour() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::io::stdout().is_terminal()
        && !crate::screen::dumb_terminal()
}

/// `word` in its tone's colour when colour is on.
pub fn paint(word: &str, tone: Tone) -> String {
    if !colour() {
        return word.to_string();
    }
    let code = match tone {
        Tone::Good => "32",
        Tone::Bad => "31",
        Tone::Warn => "33",
    };
    format!("\x1b[{code}m{word}\x1b[0m")
}

/// The tone of an outcome word (`done`, `failed`, `cancelled`, …).
pub fn outcome_tone(word: &str) -> Tone {
    match word {
        "done" | "valid" | "requested" => Tone::Good,
        "failed" | "spawn-failed" | "timeout" | "interrupted" => Tone::Bad,
        _ => Tone::Warn,
    }
}

/// Prints one line to stdout. A closed pipe ends the program quietly with
/// status 0: the reader asked for no more.
pub fn line(text: &str) {
    write_line(&crate::screen::screened(text));
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

fn write_line(text: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{text}").and_then(|_| out.flush())
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(i32::from(crate::exit::SUCCESS));
    }
}
