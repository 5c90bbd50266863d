//! The fleet report ([`crate::places::report::Fleet`]) as one self-contained HTML
//! page: inline CSS and inline SVG, no script and nothing fetched, so it
//! can be mailed, opened from a synced folder or served as a file. Its
//! content security policy forbids every script and every fetch, so even
//! markup that slipped through could neither run nor call out.
//!
//! Every text from the shared folder — labels, commands, output tails,
//! refusal notes, file names — reaches the page through one function, `text` (element
//! text and quoted attributes alike, [`super::escape`]): one door,
//! so nothing drawn here is markup but the page's own.
//!
//! The page: the facts of the report, a legend, one swimlane per machine
//! (`lanes.rs`), the queue depth, the totals per machine and the jobs that
//! did not end well (`tables.rs`).

mod lanes;
mod tables;

use std::borrow::Cow;
use std::fmt::Write;

use crate::places::report::Fleet;
use crate::protocol::doc::outcome::Ending;

/// The colour groups of the page's bars, in legend order: the class
/// suffix (`o-…`) and the word shown.
pub const GROUPS: [(&str, &str); 6] = [
    ("done", "done"),
    ("failed", "failed"),
    ("cancelled", "cancelled"),
    ("timeout", "timed out"),
    ("interrupted", "interrupted"),
    ("rejected", "rejected"),
];

/// The colour group of an ending: a clean exit is done; an exit by
/// itself or a failed start failed; a stop someone asked for, or a
/// dependency's, cancelled.
pub fn group(e: Ending) -> &'static str {
    match e {
        Ending::Done => "done",
        Ending::Failed | Ending::SpawnFailed => "failed",
        Ending::Cancelled | Ending::CancelledBeforeStart | Ending::DependencyFailed => "cancelled",
        Ending::Timeout => "timeout",
        Ending::Interrupted => "interrupted",
    }
}

/// The group of an ending's word (`rejected` is its own).
fn group_of_word(word: &str) -> &'static str {
    Ending::ALL
        .into_iter()
        .find(|e| e.as_str() == word)
        .map_or("rejected", group)
}

/// `s`, from anywhere, as page text or a quoted attribute value: its
/// control characters but line breaks written out (a page may go to a
/// terminal with `--out -`, and HTML has no place for most of them), then
/// its markup characters as entities.
fn text(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c.is_control() && c != '\n') {
        return super::escape::html(s);
    }
    let lines: Vec<Cow<'_, str>> = s.split('\n').map(super::escape::terminal).collect();
    Cow::Owned(super::escape::html(&lines.join("\n")).into_owned())
}

/// The most bytes of a free text (a label, a reason) the page shows; the
/// whole is in `--json`. It keeps a page of many jobs small.
const SHOWN_BYTES: usize = 160;

/// `s` cut to [`SHOWN_BYTES`], then as [`text`] makes it.
fn short(s: &str) -> String {
    text(&crate::protocol::doc::detail::clip(s, SHOWN_BYTES)).into_owned()
}

/// A time in milliseconds as `YYYY-MM-DD HH:MM:SSZ`.
fn when(ms: i64) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let s = crate::base::clock::format(t);
    format!("{} {}Z", &s[..10], &s[11..19])
}

/// A run time in milliseconds, for people.
fn run_time(ms: u64) -> String {
    crate::base::clock::human(std::time::Duration::from_millis(ms))
}

const STYLE: &str = "
:root{--done:#2e7d32;--failed:#c62828;--cancelled:#ef8f00;--timeout:#6a1b9a;--interrupted:#ad1457;--rejected:#37474f;--ink:#1b1b1b;--muted:#5f6368;--line:#d0d4d9}
*{box-sizing:border-box}
body{margin:0;padding:1rem;font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:var(--ink);background:#fff;max-width:1400px}
h1{font-size:1.5rem;margin:.2rem 0 .6rem}h2{font-size:1.15rem;margin:1.6rem 0 .5rem}h3{font-size:1rem;margin:.8rem 0 .2rem}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem;margin:0}dl.facts dt{color:var(--muted)}dl.facts dd{margin:0;overflow-wrap:anywhere}
.legend{display:flex;flex-wrap:wrap;gap:.4rem 1rem;padding:0;margin:.5rem 0;list-style:none}.legend li{display:flex;align-items:center;gap:.35rem}
.sw{display:inline-block;width:.9rem;height:.9rem;border-radius:2px}
.o-done{fill:var(--done);background:var(--done)}.o-failed{fill:var(--failed);background:var(--failed)}.o-cancelled{fill:var(--cancelled);background:var(--cancelled)}
.o-timeout{fill:var(--timeout);background:var(--timeout)}.o-interrupted{fill:var(--interrupted);background:var(--interrupted)}.o-rejected{fill:var(--rejected);background:var(--rejected)}
.sw.wait{background:var(--done);opacity:.3}rect.wait{opacity:.3}
.lane{border-top:1px solid var(--line);padding:.3rem 0}.lane svg,.chart svg{display:block;width:100%;background:#fafbfc;border:1px solid var(--line)}
.lane .sub{color:var(--muted);font-size:.85rem;margin:0 0 .25rem}
.axis{display:flex;justify-content:space-between;color:var(--muted);font-size:.78rem;gap:.5rem}
.live{fill:#9e9e9e}.gap{fill:#c62828;opacity:.55}.restart{fill:#1565c0}.beat{fill:#2e7d32}
.series{fill:none;stroke-width:1.5}.s0{stroke:#1565c0;background:#1565c0}.s1{stroke:#ef6c00;background:#ef6c00}.s2{stroke:#2e7d32;background:#2e7d32}.s3{stroke:#6a1b9a;background:#6a1b9a}.s4{stroke:#00838f;background:#00838f}.s5{stroke:#5d4037;background:#5d4037}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:.88rem;min-width:100%}th,td{border-bottom:1px solid var(--line);padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f3f4f6;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
td code,li code{font-size:.8rem;white-space:pre-wrap;overflow-wrap:anywhere}td code.id{white-space:nowrap;overflow-wrap:normal}#failures td{max-width:22rem;overflow-wrap:anywhere}
.tone-good{color:#1b5e20}.tone-bad{color:#b71c1c}.tone-warn{color:#8a5300}
details{margin:.3rem 0}summary{cursor:pointer;color:var(--muted);font-size:.85rem}
details ol{font-size:.82rem;padding-left:1.4rem;max-height:24rem;overflow:auto}
.note{color:var(--muted);font-size:.85rem}
@media (max-width:600px){body{padding:.5rem;font-size:14px}dl.facts{grid-template-columns:1fr}dl.facts dd{margin-bottom:.3rem}}
";

/// The page for `fleet`.
pub fn html(fleet: &Fleet) -> String {
    let mut out = String::with_capacity(64 * 1024);
    out.push_str(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\
<title>Fleet report</title><style>",
    );
    out.push_str(STYLE);
    out.push_str("</style></head><body>\n");
    facts(&mut out, fleet);
    legend(&mut out);
    lanes::timeline(&mut out, fleet);
    lanes::queue(&mut out, fleet);
    tables::totals(&mut out, fleet);
    tables::not_well(&mut out, fleet);
    out.push_str("</body></html>\n");
    out
}

/// What the documents were verified with: the fleet key's fingerprint,
/// the roster's version, or both (in `both` mode).
fn verified_with(f: &Fleet) -> String {
    let mut out = String::new();
    if !f.key_fingerprint.is_empty() {
        let _ = write!(
            out,
            "<dt>Key fingerprint</dt><dd id=\"key\"><code>{}</code></dd>",
            text(&f.key_fingerprint)
        );
    }
    if let Some(v) = f.roster_version {
        let _ = write!(out, "<dt>Roster version</dt><dd id=\"roster\">{v}</dd>");
    }
    out
}

fn facts(out: &mut String, f: &Fleet) {
    let jobs: usize = f.lanes.iter().map(|l| l.finished).sum();
    let _ = write!(
        out,
        "<header><h1>Fleet report</h1><dl class=\"facts\">\
<dt>Span</dt><dd id=\"span\">{} – {}{}</dd>\
<dt>Made</dt><dd id=\"made\">{}</dd>\
{}\
<dt>Machines</dt><dd id=\"machines\">{}</dd>\
<dt>Jobs finished</dt><dd id=\"jobs\">{jobs}</dd>\
<dt>Unverified files</dt><dd id=\"unverified\">{} (not drawn: they do not verify with this key)</dd>\
</dl>",
        when(f.from_ms),
        when(f.to_ms),
        if f.since { " (from --since)" } else { "" },
        text(&f.made_at),
        verified_with(f),
        f.lanes.len(),
        f.unverified_files,
    );
    let _ = writeln!(
        out,
        "<p class=\"note\" id=\"density\">A lane with more than {} jobs in the span, or the busiest \
lanes once the page holds {} bars, is drawn as counts per slice of time ({} slices), not one bar per \
job.</p></header>",
        f.bar_limit, f.fleet_bar_limit, f.slices
    );
}

fn legend(out: &mut String) {
    out.push_str("<ul class=\"legend\" aria-label=\"Legend\">");
    for (class, word) in GROUPS {
        let _ = write!(out, "<li><span class=\"sw o-{class}\"></span>{word}</li>");
    }
    out.push_str(
        "<li><span class=\"sw wait\"></span>queue wait (lighter, before the start)</li>\
<li><span class=\"sw\" style=\"background:#c62828;opacity:.55\"></span>listener gap</li>\
<li><span class=\"sw\" style=\"background:#1565c0\"></span>listener start</li>\
<li><span class=\"sw\" style=\"background:#2e7d32\"></span>last heartbeat</li></ul>\n",
    );
}

#[cfg(test)]
mod tests;
