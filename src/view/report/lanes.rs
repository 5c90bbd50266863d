//! The swimlanes and the queue depth chart, as inline SVG. The drawing
//! is 1000 units wide and stretched to the page's width, so it reads the
//! same at any width; times and names are HTML around it, never SVG text.
//! Each job is a group with a `<title>` (shown on hover, and read as its
//! name by screen readers), and each lane also lists its jobs as text.

use std::fmt::Write;

use crate::places::report::{Bar, Fleet, Lane};

use super::{GROUPS, group, group_of_word, run_time, short, text, when};

/// The drawing's width in SVG units.
const W: f64 = 1000.0;
/// How many rows a lane's overlapping jobs spread over.
const ROWS: usize = 4;
/// A row's height, and a bar's within it.
const ROW: f64 = 12.0;
const BAR: f64 = 10.0;
/// The liveness strip's height under the rows.
const LIVE: f64 = 6.0;
/// The narrowest a bar is drawn, so a short job stays visible.
const MIN_W: f64 = 0.8;

struct Scale {
    from: i64,
    to: i64,
}

impl Scale {
    fn x(&self, t: i64) -> f64 {
        let span = (self.to - self.from).max(1) as f64;
        ((t - self.from) as f64 / span * W).clamp(0.0, W)
    }
}

/// The time axis under a drawing: start, middle, end.
fn axis(out: &mut String, f: &Fleet) {
    let mid = f.from_ms + (f.to_ms - f.from_ms) / 2;
    let _ = write!(
        out,
        "<div class=\"axis\" aria-hidden=\"true\"><span>{}</span><span>{}</span><span>{}</span></div>",
        when(f.from_ms),
        when(mid),
        when(f.to_ms)
    );
}

/// One section per machine.
pub fn timeline(out: &mut String, f: &Fleet) {
    out.push_str("<section id=\"timeline\"><h2>Timeline per machine</h2>\n");
    let s = Scale {
        from: f.from_ms,
        to: f.to_ms,
    };
    for lane in &f.lanes {
        one_lane(out, f, lane, &s);
    }
    if f.lanes.is_empty() {
        out.push_str("<p class=\"note\">No target folder under the root.</p>");
    }
    out.push_str("</section>\n");
}

/// Rows for `jobs` (sorted by start): each job in the first row free at
/// its queue entry, else in the row that frees first.
fn rows(jobs: &[Bar], s: &Scale) -> Vec<usize> {
    let mut ends = [f64::MIN; ROWS];
    jobs.iter()
        .map(|j| {
            let start = s.x(j.created_ms.or(j.started_ms).unwrap_or(j.finished_ms));
            let end = s.x(j.finished_ms).max(start + MIN_W);
            let row = (0..ROWS).find(|&r| ends[r] <= start).unwrap_or_else(|| {
                (0..ROWS)
                    .min_by(|&a, &b| ends[a].total_cmp(&ends[b]))
                    .unwrap_or(0)
            });
            ends[row] = end;
            row
        })
        .collect()
}

fn one_lane(out: &mut String, f: &Fleet, lane: &Lane, s: &Scale) {
    let name = text(&lane.target);
    let height = ROWS as f64 * ROW + LIVE + 2.0;
    let beat = lane.listener.beat.as_ref().map_or_else(
        || "no verified heartbeat".to_string(),
        |b| {
            format!(
                "listener {} ({}), last heartbeat {}",
                if b.alive { "alive" } else { "not seen lately" },
                text(&b.state),
                text(&b.heartbeat_at)
            )
        },
    );
    let _ = write!(
        out,
        "<section class=\"lane\" data-lane=\"{name}\" aria-labelledby=\"lane-{name}\">\
<h3 id=\"lane-{name}\">{name}</h3><p class=\"sub\">{} finished, {} queued now, median run {}; {beat}</p>\
<svg viewBox=\"0 0 {W} {height}\" preserveAspectRatio=\"none\" height=\"{}\" role=\"group\" aria-label=\"Jobs on {name} over time\">",
        lane.finished,
        lane.queued_now,
        lane.median_run_ms.map_or("-".to_string(), run_time),
        (height * 1.6).round(),
    );
    if lane.aggregated {
        slices(out, f, lane, s);
    } else {
        bars(out, lane, s);
    }
    refusals(out, lane, s);
    liveness(out, lane, s);
    out.push_str("</svg>");
    axis(out, f);
    as_text(out, lane);
    out.push_str("</section>\n");
}

/// The hover and screen-reader text of one job.
fn describe(j: &Bar) -> String {
    let (label, argv) = if j.sealed {
        ("sealed".to_string(), "sealed".to_string())
    } else {
        (
            j.label.as_deref().map_or_else(
                || "(no label)".into(),
                |l| crate::protocol::doc::detail::clip(l, super::SHOWN_BYTES),
            ),
            j.argv.clone().unwrap_or_else(|| "(job file gone)".into()),
        )
    };
    let mut d = format!(
        "{} · {} · {} · {label} · {argv}",
        j.job_id, j.outcome, j.exit
    );
    if let Some(c) = j.created_ms {
        let _ = write!(d, " · queued {}", when(c));
    }
    match j.started_ms {
        Some(st) => {
            let _ = write!(d, " · started {}", when(st));
        }
        None => d.push_str(" · never started"),
    }
    let _ = write!(d, " · ended {}", when(j.finished_ms));
    if let Some(ms) = j.duration_ms {
        let _ = write!(d, " · ran {}", run_time(ms));
    }
    d
}

fn bars(out: &mut String, lane: &Lane, s: &Scale) {
    for (j, row) in lane.jobs.iter().zip(rows(&lane.jobs, s)) {
        let g = group(j.outcome);
        let y = row as f64 * ROW + 1.0;
        let start = j.started_ms.unwrap_or(j.finished_ms);
        let _ = write!(
            out,
            "<g class=\"job\" data-outcome=\"{g}\"><title>{}</title>",
            text(&describe(j))
        );
        if let Some(c) = j.created_ms.filter(|&c| c < start) {
            let (x0, x1) = (s.x(c), s.x(start));
            let _ = write!(
                out,
                "<rect class=\"wait o-{g}\" x=\"{x0:.2}\" y=\"{y}\" width=\"{:.2}\" height=\"{BAR}\"/>",
                (x1 - x0).max(0.0)
            );
        }
        let x = s.x(start);
        let w = (s.x(j.finished_ms) - x).max(MIN_W);
        let _ = write!(
            out,
            "<rect class=\"bar o-{g}\" x=\"{x:.2}\" y=\"{y}\" width=\"{w:.2}\" height=\"{BAR}\"/></g>"
        );
    }
}

/// An aggregated lane: per slice, a column stacked by outcome.
fn slices(out: &mut String, f: &Fleet, lane: &Lane, s: &Scale) {
    let most = lane
        .slices
        .iter()
        .map(|c| c.values().sum::<usize>())
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let n = lane.slices.len().max(1) as f64;
    let full = ROWS as f64 * ROW;
    let span = (f.to_ms - f.from_ms) as f64 / n;
    for (i, counts) in lane.slices.iter().enumerate() {
        if counts.is_empty() {
            continue;
        }
        let x = s.x(f.from_ms + (span * i as f64) as i64);
        let w = (W / n).max(MIN_W);
        let words: Vec<String> = counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
        let _ = write!(
            out,
            "<g class=\"slice\"><title>from {}: {}</title>",
            when(f.from_ms + (span * i as f64) as i64),
            text(&words.join(", "))
        );
        let mut y = full + 1.0;
        for (class, _) in GROUPS {
            let c: usize = counts
                .iter()
                .filter(|(k, _)| group_of_word(k) == class)
                .map(|(_, v)| v)
                .sum();
            if c == 0 {
                continue;
            }
            let h = c as f64 / most * full;
            y -= h;
            let _ = write!(
                out,
                "<rect class=\"o-{class}\" data-outcome=\"{class}\" data-count=\"{c}\" x=\"{x:.2}\" y=\"{y:.2}\" width=\"{w:.2}\" height=\"{h:.2}\"/>"
            );
        }
        out.push_str("</g>");
    }
}

fn refusals(out: &mut String, lane: &Lane, s: &Scale) {
    let h = ROWS as f64 * ROW;
    for r in &lane.rejected {
        let _ = write!(
            out,
            "<g class=\"job\" data-outcome=\"rejected\"><title>{} · rejected {} · {}: {}</title>\
<rect class=\"bar o-rejected\" x=\"{:.2}\" y=\"1\" width=\"{MIN_W}\" height=\"{h}\"/></g>",
            short(&r.name),
            when(r.at_ms),
            short(&r.verdict),
            short(&r.message),
            s.x(r.at_ms)
        );
    }
}

fn liveness(out: &mut String, lane: &Lane, s: &Scale) {
    let y = ROWS as f64 * ROW + 1.0;
    let _ = write!(
        out,
        "<rect class=\"live\" x=\"0\" y=\"{:.1}\" width=\"{W}\" height=\"1\"/>",
        y + LIVE / 2.0
    );
    for g in &lane.listener.gaps {
        let x = s.x(g.from_ms);
        let _ = write!(
            out,
            "<rect class=\"gap\" x=\"{x:.2}\" y=\"{y}\" width=\"{:.2}\" height=\"{LIVE}\"><title>{} – {}: {}</title></rect>",
            (s.x(g.to_ms) - x).max(MIN_W),
            when(g.from_ms),
            when(g.to_ms),
            text(&g.what)
        );
    }
    for m in &lane.listener.restarts {
        let _ = write!(
            out,
            "<rect class=\"restart\" x=\"{:.2}\" y=\"{y}\" width=\"{MIN_W}\" height=\"{LIVE}\"><title>{}: {}</title></rect>",
            s.x(m.at_ms),
            when(m.at_ms),
            text(&m.what)
        );
    }
    if let Some(b) = &lane.listener.beat {
        let _ = write!(
            out,
            "<rect class=\"beat\" x=\"{:.2}\" y=\"{y}\" width=\"{MIN_W}\" height=\"{LIVE}\"><title>last heartbeat {}: {} on {} (version {})</title></rect>",
            (s.x(b.heartbeat_ms) - MIN_W).max(0.0),
            when(b.heartbeat_ms),
            text(&b.state),
            text(&b.host),
            text(&b.version)
        );
    }
}

/// The lane's jobs as a list, for screen readers and for copying.
fn as_text(out: &mut String, lane: &Lane) {
    let name = text(&lane.target);
    let shown = if lane.aggregated {
        lane.slices.iter().filter(|c| !c.is_empty()).count()
    } else {
        lane.jobs.len() + lane.rejected.len()
    };
    let _ = write!(
        out,
        "<details><summary>{name}: {} as text ({shown})</summary><ol>",
        if lane.aggregated { "slices" } else { "jobs" }
    );
    if lane.aggregated {
        for counts in lane.slices.iter().filter(|c| !c.is_empty()) {
            let words: Vec<String> = counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
            let _ = write!(out, "<li>{}</li>", text(&words.join(", ")));
        }
    } else {
        for j in &lane.jobs {
            let _ = write!(out, "<li>{}</li>", text(&describe(j)));
        }
        for r in &lane.rejected {
            let _ = write!(
                out,
                "<li>{} · rejected {} · {}: {}</li>",
                short(&r.name),
                when(r.at_ms),
                short(&r.verdict),
                short(&r.message)
            );
        }
    }
    out.push_str("</ol></details>");
}

/// The queue depth of every lane over the span, one line each.
pub fn queue(out: &mut String, f: &Fleet) {
    let most = f
        .lanes
        .iter()
        .flat_map(|l| l.queue.iter().copied())
        .max()
        .unwrap_or(0);
    let top = most.max(1) as f64;
    let h = 100.0;
    let _ = write!(
        out,
        "<section id=\"queue\" class=\"chart\"><h2>Queue depth</h2>\
<p class=\"note\">The most jobs waiting at once in each slice of the span; at most {most}.</p>\
<svg viewBox=\"0 0 {W} {h}\" preserveAspectRatio=\"none\" height=\"140\" role=\"img\" aria-label=\"Queue depth per machine over time, at most {most}\">"
    );
    for (i, lane) in f.lanes.iter().enumerate() {
        let n = lane.queue.len().max(1) as f64;
        let mut points = String::new();
        for (k, d) in lane.queue.iter().enumerate() {
            let y = h - 2.0 - (*d as f64 / top * (h - 6.0));
            let _ = write!(
                points,
                "{:.1},{y:.1} {:.1},{y:.1} ",
                k as f64 / n * W,
                (k + 1) as f64 / n * W
            );
        }
        let _ = write!(
            out,
            "<polyline class=\"series s{}\" vector-effect=\"non-scaling-stroke\" points=\"{}\"><title>{}</title></polyline>",
            i % 6,
            points.trim_end(),
            text(&lane.target)
        );
    }
    out.push_str("</svg>");
    axis(out, f);
    out.push_str("<ul class=\"legend\">");
    for (i, lane) in f.lanes.iter().enumerate() {
        let _ = write!(
            out,
            "<li><span class=\"sw s{}\"></span>{} (at most {})</li>",
            i % 6,
            text(&lane.target),
            lane.queue.iter().max().copied().unwrap_or(0)
        );
    }
    out.push_str("</ul></section>\n");
}
