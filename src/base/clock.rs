//! Timestamps and durations: the text forms of docs/protocol.md §2 and §8.
//!
//! We emit `YYYY-MM-DDTHH:MM:SS.mmmZ` and accept any RFC 3339 timestamp; we
//! read durations written `250ms`, `2s`, `5m`, `24h`, `7d`, or several in
//! falling order (`1h30m`); a bare number is seconds.

use std::time::Duration;

use time::format_description::well_known::Rfc3339;
use time::{OffsetDateTime, UtcOffset};

use crate::base::error::{Error, Result};

/// The current time in UTC.
pub fn now() -> OffsetDateTime {
    OffsetDateTime::now_utc()
}

/// Formats `t` as `YYYY-MM-DDTHH:MM:SS.mmmZ`. Digits are put in place
/// by hand: a job's run formats about six timestamps, and `format!` spent
/// some 4 µs a job on them.
pub fn format(t: OffsetDateTime) -> String {
    let t = t.to_offset(UtcOffset::UTC);
    // `time` keeps years within ±9999: only a negative one needs the sign.
    let Ok(year) = u16::try_from(t.year()) else {
        return format_any_year(t);
    };
    let mut text = *b"0000-00-00T00:00:00.000Z";
    let mut put = |at: usize, width: usize, mut n: u16| {
        for i in (at..at + width).rev() {
            text[i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
    };
    put(0, 4, year);
    put(5, 2, u8::from(t.month()).into());
    put(8, 2, t.day().into());
    put(11, 2, t.hour().into());
    put(14, 2, t.minute().into());
    put(17, 2, t.second().into());
    put(20, 3, t.millisecond());
    text.iter().map(|&b| char::from(b)).collect()
}

/// [`format()`] for a year before 0 (a sign).
fn format_any_year(t: OffsetDateTime) -> String {
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

/// Parses any valid RFC 3339 timestamp.
pub fn parse(s: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(s, &Rfc3339).ok()
}

/// When something started at `started` (as [`format()`] wrote it) ends after
/// running `elapsed` by the monotonic clock: so a finish is never dated
/// before its start, whatever the wall clock did meanwhile (stepped back
/// by a time sync, or by hand). Now, when `started` does not parse.
pub fn after(started: &str, elapsed: Duration) -> OffsetDateTime {
    parse(started)
        .and_then(|t| t.checked_add(time::Duration::try_from(elapsed).ok()?))
        .unwrap_or_else(now)
}

/// Converts a file modification time to the same clock.
pub fn from_system(t: std::time::SystemTime) -> OffsetDateTime {
    OffsetDateTime::from(t)
}

/// Parses a duration: a whole number with a unit (`250ms`, `2s`, `5m`,
/// `24h`, `7d`), or several in falling order (`1h30m`, `2m30s`); a bare
/// number means seconds. Anything else, or more than `u64` milliseconds, is
/// `VALIDATION_ERROR`.
pub fn parse_duration(s: &str) -> Result<Duration> {
    let bad = || {
        Error::validation(format!(
            "invalid duration {s:?}: write a whole number with a unit (250ms, 2s, 5m, 24h, 7d), several in falling order (1h30m), or a bare number of seconds"
        ))
    };
    // Well formed, but past what a u64 of milliseconds holds.
    let too_long = || {
        Error::validation(format!(
            "duration {s:?} is too long: more than half a billion years"
        ))
    };
    let s = s.trim();
    if !s.is_empty() && s.len() <= 12 && s.bytes().all(|b| b.is_ascii_digit()) {
        let n: u64 = s.parse().map_err(|_| bad())?;
        return n
            .checked_mul(1000)
            .map(Duration::from_millis)
            .ok_or_else(too_long);
    }
    const UNITS: [(&str, u64); 5] = [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1000),
        ("ms", 1),
    ];
    let mut rest = s;
    let mut total: u64 = 0;
    // Units must fall: each part names a smaller unit than the one before.
    let mut next_unit = 0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 || digits > 12 {
            return Err(bad());
        }
        let n: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let i = UNITS[next_unit..]
            .iter()
            .position(|(u, _)| *u == unit)
            .ok_or_else(bad)?
            + next_unit;
        next_unit = i + 1;
        total = n
            .checked_mul(UNITS[i].1)
            .and_then(|ms| total.checked_add(ms))
            .ok_or_else(too_long)?;
    }
    if s.is_empty() {
        return Err(bad());
    }
    Ok(Duration::from_millis(total))
}

/// The shortest of our duration forms that says `d` exactly.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    for (unit, size) in [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1000),
    ] {
        if ms >= size && ms.is_multiple_of(size) {
            return format!("{}{unit}", ms / size);
        }
    }
    format!("{ms}ms")
}

/// A duration as seconds, for the `timeoutSec`/`graceSec` spec fields.
pub fn seconds_value(d: Duration) -> serde_json::Value {
    if d.subsec_millis() == 0 {
        serde_json::Value::from(d.as_secs())
    } else {
        serde_json::Value::from(d.as_secs_f64())
    }
}

/// Human elapsed time: `850ms`, `12.3s`, `4m05s`, `2h03m`.
pub fn human(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", d.as_secs_f64())
    } else if ms < 3_600_000 {
        format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60)
    } else {
        format!("{}h{:02}m", ms / 3_600_000, (ms / 60_000) % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn emits_millisecond_utc() {
        let t = datetime!(2026-11-29 20:31:00.5 +01:00);
        assert_eq!(format(t), "2026-11-29T19:31:00.500Z");
        let t = datetime!(0007-01-02 03:04:05.006 UTC);
        assert_eq!(format(t), "0007-01-02T03:04:05.006Z");
        assert_eq!(
            format(datetime!(9999-12-31 23:59:59.999 UTC)),
            "9999-12-31T23:59:59.999Z"
        );
    }

    #[test]
    fn any_moment_is_formatted_as_the_general_form_would() {
        // Both forms, over moments spread across every year `time` has.
        let mut t = datetime!(-0002-03-04 05:06:07.089 UTC);
        let step = time::Duration::milliseconds(523_987_654_321);
        for _ in 0..600 {
            assert_eq!(format(t), format_any_year(t), "{t}");
            t += step;
        }
        assert!(t.year() > 9900);
    }

    #[test]
    fn accepts_any_rfc3339() {
        assert!(parse("2026-11-29T19:31:00.000Z").is_some());
        assert!(parse("2026-11-29T19:31:00Z").is_some());
        assert!(parse("2026-11-29T20:31:00+01:00").is_some());
        assert!(parse("2026-11-29t19:31:00.123456z").is_some());
        assert!(parse("yesterday").is_none());
        assert!(parse("2026-11-29 19:31:00").is_none());
        assert!(parse("").is_none());
        assert_eq!(
            parse("2026-11-29T20:31:00+01:00"),
            parse("2026-11-29T19:31:00Z")
        );
    }

    #[test]
    fn a_finish_is_its_start_plus_the_monotonic_time() {
        let start = "2026-11-29T19:31:00.000Z";
        assert_eq!(
            format(after(start, Duration::from_millis(2500))),
            "2026-11-29T19:31:02.500Z"
        );
        // A start that does not parse: now.
        assert!((now() - after("soon", Duration::ZERO)).abs() < time::Duration::seconds(5));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("2s").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("24h").unwrap(), Duration::from_secs(86400));
        assert_eq!(parse_duration("7d").unwrap(), Duration::from_secs(604800));
        assert_eq!(parse_duration("3").unwrap(), Duration::from_secs(3));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("2m30s").unwrap(), Duration::from_secs(150));
        assert_eq!(
            parse_duration("1d2h3m4s5ms").unwrap(),
            Duration::from_millis(93_784_005)
        );
        for bad in [
            "",
            "s",
            "-1s",
            "1.5s",
            "2 weeks",
            "1w",
            "99999999999999999d",
            "1s2",
            "30m1h",
            "1h1h",
            "1h 30m",
            "h",
            "1000000000000",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        // Twelve digits fit the grammar: too many days is said as such.
        let e = parse_duration("999999999999d").unwrap_err();
        assert!(e.message.contains("too long"), "{}", e.message);
    }

    #[test]
    fn duration_round_trip() {
        for s in ["250ms", "2s", "5m", "25h", "7d", "90s"] {
            assert_eq!(format_duration(parse_duration(s).unwrap()), s);
        }
    }
}
