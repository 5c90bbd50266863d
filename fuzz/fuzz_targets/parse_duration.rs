//! Fuzzes `clock::parse_duration` (docs/protocol.md §2.5 durations): no text
//! panics it, what it reads is exactly what an independent reading of the
//! grammar says (never a wrapped product), and it formats back to the same
//! duration.

#![no_main]

use std::time::Duration;

use fleet_dispatch::base::clock::{format_duration, parse_duration};
use libfuzzer_sys::fuzz_target;

/// The same grammar read again, in milliseconds: a bare number of at most
/// 12 digits is seconds; otherwise parts of at most 12 digits and a unit,
/// the units falling (`1h30m`), each at most once. `None` for anything else,
/// or for more milliseconds than a u64 holds.
fn independent(s: &str) -> Option<u64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    if s.bytes().all(|b| b.is_ascii_digit()) {
        return if s.len() > 12 {
            None
        } else {
            s.parse::<u64>().ok()?.checked_mul(1000)
        };
    }
    const UNITS: [(&str, u64); 5] = [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1000),
        ("ms", 1),
    ];
    let (mut rest, mut total, mut lowest) = (s, 0u64, 0usize);
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 12 {
            return None;
        }
        let n: u64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let letters = rest.bytes().take_while(|b| !b.is_ascii_digit()).count();
        let rank = UNITS.iter().position(|(u, _)| *u == &rest[..letters])?;
        rest = &rest[letters..];
        if rank < lowest {
            return None;
        }
        lowest = rank + 1;
        total = total.checked_add(n.checked_mul(UNITS[rank].1)?)?;
    }
    Some(total)
}

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let got = parse_duration(s).ok();
    assert_eq!(
        got,
        independent(s).map(Duration::from_millis),
        "{s:?} read as {got:?}"
    );
    if let Some(d) = got {
        let text = format_duration(d);
        // The parser takes at most 12 digits; the formatter may need more.
        if let Ok(again) = parse_duration(&text) {
            assert_eq!(again, d, "{s:?} read as {d:?}, written {text:?}");
        }
    }
});
