//! Fuzzes `clock::parse_duration` (SPEC §8 durations): no text panics it,
//! what it reads is exactly what an independent reading of `<digits><unit>`
//! says (never a wrapped product), and it formats back to the same duration.

#![no_main]

use std::time::Duration;

use fleet_dispatch::clock::{format_duration, parse_duration};
use libfuzzer_sys::fuzz_target;

/// The same grammar read again: up to 12 digits and a unit, in milliseconds;
/// `None` for anything else, or for more milliseconds than a u64 holds.
fn independent(s: &str) -> Option<u64> {
    let s = s.trim();
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 12 {
        return None;
    }
    let n: u64 = s[..digits].parse().ok()?;
    let per = match &s[digits..] {
        "ms" => 1,
        "" | "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return None,
    };
    n.checked_mul(per)
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
