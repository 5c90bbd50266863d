//! Fuzzes the id and name rules (docs/protocol.md §2): no text panics them, the parsers
//! agree with the predicates, and a name taken from a directory entry is
//! exactly `<valid job id>.json`.

#![no_main]

use fleet_dispatch::base::names::{JobId, Machine, is_job_id, is_machine};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    assert_eq!(JobId::parse(s).is_ok(), is_job_id(s), "{s:?}");
    assert_eq!(Machine::parse(s, "target").is_ok(), is_machine(s), "{s:?}");
    if let Some(id) = JobId::from_file_name(s) {
        assert_eq!(id.file_name(), s);
        assert!(is_job_id(id.as_str()));
    }
    // Both rules exclude every separator a path or a canonical string uses.
    if is_job_id(s) || is_machine(s) {
        assert!(
            !s.contains(['/', '\\', '|', '.', '\0']) && !s.is_empty(),
            "{s:?}"
        );
    }
});
