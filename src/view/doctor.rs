//! Doctor's report rendered ([`crate::requests::doctor::Report`]): one check a line,
//! its hint under it, and a closing count ([`text`]); or the report as
//! one JSON document ([`json()`]). The judging is [`crate::requests::doctor`]'s.

use serde_json::Value;

use crate::requests::doctor::{Check, Report, Status};

use super::{Tone, paint};

/// The tone of a check's outcome.
pub fn tone(s: Status) -> Tone {
    match s {
        Status::Ok => Tone::Good,
        Status::Warn => Tone::Bad,
    }
}

/// One check for a terminal: `ok  ` or `warn`, what was checked (on which
/// target), what was found, and the hint on a line of its own.
pub fn line(c: &Check) -> String {
    let word = match c.status {
        Status::Ok => "ok  ",
        Status::Warn => "warn",
    };
    let subject = match &c.target {
        Some(t) => format!("{t} {}", c.check),
        None => c.check.to_string(),
    };
    let mut s = format!("{}  {subject}: {}", paint(word, tone(c.status)), c.message);
    if let Some(h) = &c.hint {
        s.push_str(&format!("\n      hint: {h}"));
    }
    s
}

/// The whole report for a terminal: each check, then how many warn.
pub fn text(report: &Report) -> String {
    let warned = report
        .checks
        .iter()
        .filter(|c| c.status == Status::Warn)
        .count();
    let mut lines: Vec<String> = report.checks.iter().map(line).collect();
    lines.push(if warned == 0 {
        format!("all {} checks pass", report.checks.len())
    } else {
        format!("{warned} of {} checks warn", report.checks.len())
    });
    lines.join("\n")
}

/// `doctor --json`: the report as it is.
pub fn json(report: &Report) -> Value {
    serde_json::json!(report)
}
