//! The report's rules over what was read, as plain functions: how deep the
//! queue was, where a listener gave no sign of life, the median run time,
//! and how bars are counted per slice once a lane holds too many to draw.

use std::collections::BTreeMap;

use super::{Bar, Gap};

/// Past this many finished jobs on one lane, its bars are counted per
/// slice instead of drawn one by one: a page stays small and quick to
/// open whatever the folder holds.
pub const BAR_LIMIT: usize = 1500;

/// Past this many bars on the whole page, the lanes with the most are
/// counted per slice too, so a fleet of many busy lanes stays one page.
pub const FLEET_BAR_LIMIT: usize = 3000;

/// How many slices the span is cut into for queue depth and aggregated bars.
pub const SLICES: usize = 240;

/// How many jobs that did not end well the table lists.
pub const NOT_WELL_ROWS: usize = 200;

/// The slice of `[from, to)` cut into `n` that `t` falls in, clamped.
pub fn slice_of(t: i64, from: i64, to: i64, n: usize) -> usize {
    let span = (to - from).max(1) as i128;
    let at = ((t - from).max(0) as i128 * n as i128 / span) as usize;
    at.min(n.saturating_sub(1))
}

/// The most jobs waiting at once in each of `n` slices of `[from, to)`,
/// given when each job entered the queue and when it left it (its start,
/// or its end when it never started).
pub fn depth_per_slice(waits: &[(i64, i64)], from: i64, to: i64, n: usize) -> Vec<usize> {
    let mut out = vec![0; n];
    if n == 0 {
        return out;
    }
    let mut events: Vec<(i64, i32)> = Vec::with_capacity(waits.len() * 2);
    for &(enter, leave) in waits {
        if leave > enter {
            events.push((enter, 1));
            events.push((leave, -1));
        }
    }
    // A leave before an enter at the same instant: a job started as the
    // next arrived never makes two.
    events.sort_unstable();
    let mut depth: i64 = 0;
    let mut i = 0;
    while i < events.len() && events[i].0 <= from {
        depth += i64::from(events[i].1);
        i += 1;
    }
    for (s, slot) in out.iter_mut().enumerate() {
        let end = from + ((to - from) as i128 * (s as i128 + 1) / n as i128) as i64;
        let mut most = depth;
        while i < events.len() && (events[i].0 < end || s + 1 == n) {
            depth += i64::from(events[i].1);
            most = most.max(depth);
            i += 1;
        }
        *slot = most.max(0) as usize;
    }
    out
}

/// The spans without a sign of life before each listener start in
/// `restarts`: from the last activity seen before it (`activity`: every
/// job's start and end) to the start itself.
pub fn gaps(activity: &mut [i64], restarts: &[i64], what: &str) -> Vec<Gap> {
    activity.sort_unstable();
    let mut out: Vec<Gap> = restarts
        .iter()
        .filter_map(|&r| {
            let before = activity.partition_point(|&a| a < r);
            let last = *activity.get(before.checked_sub(1)?)?;
            (r > last).then(|| Gap {
                from_ms: last,
                to_ms: r,
                what: what.to_string(),
            })
        })
        .collect();
    out.sort_by_key(|g| (g.from_ms, g.to_ms));
    out.dedup();
    out
}

/// Which lanes, holding `counts` bars each, are drawn bar by bar: each
/// within [`BAR_LIMIT`], the smallest first while the page stays within
/// [`FLEET_BAR_LIMIT`]; the others are counted per slice.
pub fn drawn(counts: &[usize]) -> Vec<bool> {
    let mut order: Vec<usize> = (0..counts.len()).collect();
    order.sort_by_key(|&i| counts[i]);
    let mut out = vec![false; counts.len()];
    let mut total = 0;
    for i in order {
        if counts[i] <= BAR_LIMIT && total + counts[i] <= FLEET_BAR_LIMIT {
            total += counts[i];
            out[i] = true;
        }
    }
    out
}

/// The median of `values` (the lower middle one of an even count).
pub fn median(mut values: Vec<u64>) -> Option<u64> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable();
    Some(values[(values.len() - 1) / 2])
}

/// How many of `jobs` ended each way in each of `n` slices of `[from, to)`,
/// by their end, and how many files were refused (`refused`: when each).
pub fn per_slice(
    jobs: &[Bar],
    refused: &[i64],
    from: i64,
    to: i64,
    n: usize,
) -> Vec<BTreeMap<&'static str, usize>> {
    let mut out = vec![BTreeMap::new(); n];
    for j in jobs {
        let s = slice_of(j.finished_ms, from, to, n);
        *out[s].entry(j.outcome.as_str()).or_insert(0) += 1;
    }
    for &at in refused {
        *out[slice_of(at, from, to, n)]
            .entry("rejected")
            .or_insert(0) += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_depth_is_the_most_waiting_at_once_in_each_slice() {
        // A wait that began before the span counts; a job that leaves as
        // another enters at the same instant does not make one more.
        let waits = [(0, 15), (5, 12), (12, 25), (-10, 3)];
        assert_eq!(depth_per_slice(&waits, 0, 40, 4), vec![2, 2, 1, 0]);
        assert_eq!(depth_per_slice(&[], 0, 40, 2), vec![0, 0]);
        // A job that never waited adds nothing.
        assert_eq!(depth_per_slice(&[(5, 5)], 0, 10, 1), vec![0]);
    }

    #[test]
    fn a_gap_runs_from_the_last_activity_to_the_restart() {
        let mut activity = vec![100, 10, 50, 400];
        let g = gaps(&mut activity, &[300, 10], "x");
        assert_eq!(g.len(), 1);
        assert_eq!((g[0].from_ms, g[0].to_ms), (100, 300));
        // Nothing before the restart: no gap can be told.
        assert!(gaps(&mut [500], &[300], "x").is_empty());
    }

    #[test]
    fn bars_are_drawn_for_the_smallest_lanes_while_the_page_has_room() {
        assert_eq!(drawn(&[10, BAR_LIMIT + 1, 20]), [true, false, true]);
        let big = FLEET_BAR_LIMIT / 2;
        // Two fill the page; the third, largest, is counted per slice.
        assert_eq!(drawn(&[big, big + 1, big]), [true, false, true]);
        assert_eq!(drawn(&[]), Vec::<bool>::new());
    }

    #[test]
    fn the_median_is_the_middle_run_time() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![5, 1, 9]), Some(5));
        assert_eq!(median(vec![4, 1, 9, 7]), Some(4));
    }

    #[test]
    fn a_time_falls_in_one_slice_of_the_span() {
        assert_eq!(slice_of(0, 0, 100, 10), 0);
        assert_eq!(slice_of(99, 0, 100, 10), 9);
        assert_eq!(slice_of(500, 0, 100, 10), 9);
        assert_eq!(slice_of(-5, 0, 100, 10), 0);
    }
}
