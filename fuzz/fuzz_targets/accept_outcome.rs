//! Fuzzes `accept::outcome` (docs/protocol.md §5.3): no input panics it, a `valid`
//! result's own fields verify independently, and a re-signed result is never
//! refused for its signature.

#![no_main]

use fleet_dispatch::base::read::FileRead;
use fleet_dispatch::protocol::accept::{self, Verdict};
use fleet_dispatch::protocol::doc::outcome;
use fleet_dispatch_fuzz::{folder, key, object, text, verifies};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};

fn ok_and_code(doc: &Map<String, Value>) -> (bool, i64) {
    (
        doc.get("ok").and_then(Value::as_bool).unwrap_or(false),
        doc.get("exitCode").and_then(Value::as_i64).unwrap_or(0),
    )
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let k = key();
    let (bytes, doc, resigned) = if mode & 1 == 0 {
        (rest.to_vec(), object(rest), false)
    } else {
        let Some(mut doc) = object(rest) else { return };
        let (ok, code) = ok_and_code(&doc);
        let canonical = outcome::canonical(
            text(&doc, "jobId"),
            text(&doc, "target"),
            ok,
            code,
            text(&doc, "error"),
            text(&doc, "startedAt"),
            text(&doc, "finishedAt"),
            text(&doc, "detail"),
        );
        doc.insert("sig".into(), k.sign(&canonical).into());
        (serde_json::to_vec(&doc).unwrap(), Some(doc), true)
    };
    let job_id = match &doc {
        Some(d) if resigned || mode & 2 == 0 => text(d, "jobId").to_string(),
        _ => "fuzz-1".to_string(),
    };
    let target = folder(doc.as_ref(), resigned || mode & 4 == 0);
    match accept::outcome(&job_id, FileRead::Bytes(bytes), &target, &k) {
        Ok(o) => {
            let doc = doc.expect("a valid result is a JSON object");
            let (ok, code) = ok_and_code(&doc);
            let canonical = format!(
                "result|{}|{}|{ok}|{code}|{}|{}|{}|{}",
                text(&doc, "jobId"),
                text(&doc, "target"),
                text(&doc, "error"),
                text(&doc, "startedAt"),
                text(&doc, "finishedAt"),
                text(&doc, "detail")
            );
            assert!(
                verifies(&doc, &canonical),
                "valid but not verified: {doc:?}"
            );
            assert_eq!(o.job_id, job_id);
            assert_eq!((o.ok, o.exit_code), (ok, code));
            assert!(o.target.eq_ignore_ascii_case(&target));
        }
        Err(r) => assert!(
            !(resigned && r.verdict == Verdict::BadSignature),
            "a re-signed result was refused for its signature: {r:?}"
        ),
    }
});
