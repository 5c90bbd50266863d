//! Fuzzes `accept::marker` (docs/protocol.md §5.1, §6): no input panics it, a `valid`
//! marker's own fields verify independently, and a re-signed marker is never
//! refused for its signature.

#![no_main]

use fleet_dispatch::base::read::FileRead;
use fleet_dispatch::protocol::accept::{self, Verdict};
use fleet_dispatch::protocol::doc::marker;
use fleet_dispatch_fuzz::{file_name, folder, key, object, text, verifies};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let k = key();
    let (bytes, doc, resigned) = if mode & 1 == 0 {
        (rest.to_vec(), object(rest), false)
    } else {
        let Some(mut doc) = object(rest) else { return };
        let canonical = marker::canonical(
            text(&doc, "jobId"),
            text(&doc, "target"),
            text(&doc, "createdAt"),
            text(&doc, "origin"),
        );
        doc.insert("sig".into(), k.sign(&canonical).into());
        (serde_json::to_vec(&doc).unwrap(), Some(doc), true)
    };
    let name = file_name(doc.as_ref(), resigned || mode & 2 == 0);
    let target = folder(doc.as_ref(), resigned || mode & 4 == 0);
    match accept::marker(&name, FileRead::Bytes(bytes), &target, &k) {
        Ok(m) => {
            let doc = doc.expect("a valid marker is a JSON object");
            let canonical = format!(
                "cancel|{}|{}|{}|{}",
                text(&doc, "jobId"),
                text(&doc, "target"),
                text(&doc, "createdAt"),
                text(&doc, "origin")
            );
            assert!(
                verifies(&doc, &canonical),
                "valid but not verified: {doc:?}"
            );
            assert_eq!(m.job_id, text(&doc, "jobId"));
            assert_eq!(name, format!("{}.json", m.job_id));
            assert!(m.target.eq_ignore_ascii_case(&target));
        }
        Err(r) => assert!(
            !(resigned && r.verdict == Verdict::BadSignature),
            "a re-signed marker was refused for its signature: {r:?}"
        ),
    }
});
