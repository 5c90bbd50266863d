//! The report's tables: totals per machine, and the jobs that did not end
//! well with why, their exit code and the start of their stderr tail.

use std::fmt::Write;

use crate::places::report::Fleet;
use crate::protocol::doc::outcome::Ending;
use crate::view::Tone;

use super::{GROUPS, group_of_word, run_time, short, text, when};

/// Per machine: how many jobs ended each way, the median run time, the
/// queue now, its listener and its files that do not verify.
pub fn totals(out: &mut String, f: &Fleet) {
    out.push_str(
        "<section id=\"totals\"><h2>Per machine</h2><div class=\"scroll\"><table><thead><tr><th>Machine</th>",
    );
    for (_, word) in GROUPS {
        let _ = write!(out, "<th>{word}</th>");
    }
    out.push_str(
        "<th>finished</th><th>median run</th><th>queued now</th><th>listener</th><th>unverified files</th></tr></thead><tbody>",
    );
    for lane in &f.lanes {
        let _ = write!(
            out,
            "<tr data-lane=\"{0}\"><th>{0}</th>",
            text(&lane.target)
        );
        for (class, _) in GROUPS {
            let n: usize = lane
                .totals
                .iter()
                .filter(|(k, _)| group_of_word(k) == class)
                .map(|(_, v)| v)
                .sum();
            let _ = write!(out, "<td class=\"num\" data-outcome=\"{class}\">{n}</td>");
        }
        let (word, tone) = match &lane.listener.beat {
            Some(b) if b.alive => (format!("alive ({})", b.state), Tone::Good),
            Some(b) => (format!("silent since {}", when(b.heartbeat_ms)), Tone::Bad),
            None => ("no verified heartbeat".to_string(), Tone::Warn),
        };
        let _ = write!(
            out,
            "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
<td class=\"{}\">{}</td><td class=\"num\">{}</td></tr>",
            lane.finished,
            lane.median_run_ms.map_or("-".to_string(), run_time),
            lane.queued_now,
            tone.css_class(),
            text(&word),
            lane.unverified_files
        );
    }
    out.push_str("</tbody></table></div></section>\n");
}

/// The tone of an outcome's word in the table.
fn tone(word: &str) -> Tone {
    Ending::ALL
        .into_iter()
        .find(|e| e.as_str() == word)
        .map_or(Tone::Bad, Tone::of_ending)
}

/// The jobs that did not end well, newest first.
pub fn not_well(out: &mut String, f: &Fleet) {
    let _ = write!(
        out,
        "<section id=\"failures\"><h2>Jobs that did not end well</h2><p class=\"note\">{} in the span{}.</p>",
        f.not_well_count,
        if f.not_well_count > f.not_well.len() {
            format!("; the newest {} are listed", f.not_well.len())
        } else {
            String::new()
        }
    );
    if f.not_well.is_empty() {
        out.push_str("</section>\n");
        return;
    }
    out.push_str(
        "<div class=\"scroll\"><table><thead><tr><th>When</th><th>Machine</th><th>Job</th><th>Label</th>\
<th>Outcome</th><th>Reason</th><th>Exit code</th><th>Start of stderr</th></tr></thead><tbody>",
    );
    for n in &f.not_well {
        let _ = write!(
            out,
            "<tr data-outcome=\"{}\"><td>{}</td><td>{}</td><td><code class=\"id\">{}</code></td><td>{}</td>\
<td class=\"{}\">{}</td><td>{}</td><td class=\"num\">{}</td><td><code>{}</code></td></tr>",
            group_of_word(&n.outcome),
            when(n.at_ms),
            text(&n.target),
            short(&n.job),
            short(if n.sealed {
                "sealed"
            } else {
                n.label.as_deref().unwrap_or("")
            }),
            tone(&n.outcome).css_class(),
            text(&n.outcome),
            short(&n.reason),
            n.exit_code.map_or("-".to_string(), |c| c.to_string()),
            text(n.stderr.as_deref().unwrap_or("")),
        );
    }
    out.push_str("</tbody></table></div></section>\n");
}
