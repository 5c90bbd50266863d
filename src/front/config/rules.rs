//! The rule each setting's value must meet, one function per setting. The
//! config file is checked against them when it is read, and a flag or its
//! variable when its value is used, so a flag and a file key can never
//! accept different values; only how a refusal names its source differs
//! ([`super::Context`] names the flag, [`super::file`] the file and key).
//!
//! Each returns the value or what is wrong with it, without saying where
//! the value came from.

use std::time::Duration;

use crate::base::names::Machine;

/// A duration as the settings write it ([`crate::base::clock::parse_duration`]).
fn duration(text: &str) -> Result<Duration, String> {
    crate::base::clock::parse_duration(text).map_err(|e| e.message)
}

/// A duration that must be more than 0, `zero` saying why.
fn positive(text: &str, zero: &str) -> Result<Duration, String> {
    match duration(text)? {
        d if d.is_zero() => Err(format!("{text:?} {zero}: give more than 0")),
        d => Ok(d),
    }
}

/// The listener's poll interval: a duration over 0 (0 would rescan the
/// inbox in a busy loop).
pub fn poll_interval(text: &str) -> Result<Duration, String> {
    positive(text, "would rescan the inbox without a pause")
}

/// The most grace a stopped listener gives its running job; 0 is allowed
/// (the job is killed at once).
pub fn stop_grace(text: &str) -> Result<Duration, String> {
    duration(text)
}

/// `sweep`'s retention; its floor depends on the job max age, so it is
/// checked where both are known ([`super::Context::retention`]).
pub fn retention(text: &str) -> Result<Duration, String> {
    duration(text)
}

/// The job max age: a duration over 0 (0 would refuse every job as stale).
pub fn max_job_age(text: &str) -> Result<Duration, String> {
    positive(text, "would refuse every job as stale")
}

/// The slot count: a whole number from 1 to [`super::MAX_SLOTS`].
pub fn slots(text: &str) -> Result<usize, String> {
    match text.trim().parse::<u64>() {
        Ok(n @ 1..=super::MAX_SLOTS) => Ok(n as usize),
        _ => Err(format!(
            "{text:?} is not a slot count: give a whole number from 1 to {}",
            super::MAX_SLOTS
        )),
    }
}

/// This machine's name ([`Machine::parse`]).
pub fn machine(name: &str) -> Result<Machine, String> {
    Machine::parse(name, "machine name").map_err(|e| e.message)
}

/// A fleet member's name ([`Machine::parse`]).
pub fn fleet_member(name: &str) -> Result<Machine, String> {
    Machine::parse(name, "fleet member").map_err(|e| e.message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_that_must_be_more_than_zero_refuse_zero() {
        for zero in ["0", "0s", "0ms", "0d"] {
            assert!(poll_interval(zero).is_err(), "{zero}");
            let e = max_job_age(zero).unwrap_err();
            assert!(e.contains("every job as stale"), "{e}");
        }
        assert_eq!(poll_interval("1ms"), Ok(Duration::from_millis(1)));
        assert_eq!(max_job_age("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(stop_grace("0s"), Ok(Duration::ZERO), "no grace is a choice");
        assert!(
            poll_interval("soon")
                .unwrap_err()
                .contains("invalid duration")
        );
    }

    #[test]
    fn a_slot_count_is_one_to_max_slots() {
        assert_eq!(slots("1"), Ok(1));
        assert_eq!(slots(&super::super::MAX_SLOTS.to_string()), Ok(64));
        for bad in ["0", "65", "-1", "two", ""] {
            assert!(slots(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn machine_and_fleet_names_follow_the_name_rule() {
        assert!(machine("PC").is_ok());
        assert!(machine("con").unwrap_err().contains("reserved"));
        assert!(fleet_member("-X").unwrap_err().contains("fleet member"));
    }
}
