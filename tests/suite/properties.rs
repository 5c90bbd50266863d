//! Property tests of the pure rules a hostile folder can
//! reach: the three acceptance functions of docs/protocol.md §6, the duration parser of
//! docs/protocol.md §8 and the id and name rules of docs/protocol.md §2, called through the library.
//!
//! What they hold the product to:
//! - no input panics them: arbitrary bytes, arbitrary JSON-ish documents;
//! - a `valid` verdict means the document's own fields, joined into the
//!   docs/protocol.md §5 canonical string (by the crate's canonical functions,
//!   which the reference vectors pin) and HMAC'd with `ring` directly (not
//!   with the crate's signer), verify against its `sig`;
//! - any single-byte change to a valid document's signed fields is never
//!   `valid`, even when the attacker also renames the file or picks the
//!   folder to match;
//! - a valid result's fields before `detail` cannot hold a `|`, so its signed
//!   bytes split into fields one way only (docs/protocol.md §5).
//!
//! Each property runs 256 cases (`PROPTEST_CASES=10000` runs more). Failures
//! are not persisted to files: proptest prints the shrunk input, and a bug it
//! finds is pinned by a named regression test below it.

use std::time::Duration;

use fleet_dispatch::base::clock::{format_duration, parse_duration};
use fleet_dispatch::base::names::{JobId, Machine, is_job_id, is_machine};
use fleet_dispatch::base::read::FileRead;
use fleet_dispatch::protocol::accept::{self, Verdict};
use fleet_dispatch::protocol::doc::{job, marker, outcome};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Map, Value, json};

use crate::util::*;

// ---------------------------------------------------------------- set-up

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(256);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

const MARKER_FIELDS: [&str; 4] = ["jobId", "target", "createdAt", "origin"];
const JOB_FIELDS: [&str; 5] = ["jobId", "target", "createdAt", "origin", "spec"];
const RESULT_STRINGS: [&str; 6] = [
    "jobId",
    "target",
    "error",
    "startedAt",
    "finishedAt",
    "detail",
];
const ERROR_WORDS: [&str; 6] = [
    "",
    "cancelled",
    "cancelled-before-start",
    "timeout",
    "interrupted",
    "spawn-failed",
];
const RESERVED: [&str; 22] = [
    "CON", "PRN", "AUX", "NUL", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7", "COM8",
    "COM9", "LPT1", "LPT2", "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9",
];

// ---------------------------------------------------------------- the independent side

/// docs/protocol.md §2's job id rule, written out again rather than borrowed.
fn oracle_job_id(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

/// docs/protocol.md §2's machine rule, written out again rather than borrowed.
fn oracle_machine(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && s.len() <= 63
        && !RESERVED.iter().any(|r| r.eq_ignore_ascii_case(s))
}

fn text<'a>(doc: &'a Map<String, Value>, field: &str) -> &'a str {
    doc.get(field).and_then(Value::as_str).unwrap_or("")
}

/// The document's own fields joined into its canonical string
/// (docs/protocol.md §5.1), a missing field as empty.
fn marker_string(doc: &Map<String, Value>) -> String {
    marker_canonical_of(&Value::Object(doc.clone()))
}

/// The same for a job (docs/protocol.md §5.2).
fn job_string(doc: &Map<String, Value>) -> String {
    job_canonical_of(&Value::Object(doc.clone()))
}

/// The same for a result (docs/protocol.md §5.3; `ok`, `exitCode` as the
/// document holds them).
fn result_string(doc: &Map<String, Value>) -> String {
    result_canonical_of(&Value::Object(doc.clone()))
}

/// The document's `sig` verifies over `canonical`, by `ring` directly.
fn independently_verifies(doc: &Map<String, Value>, canonical: &str) -> bool {
    doc.get("sig")
        .and_then(Value::as_str)
        .is_some_and(|s| s.to_ascii_lowercase() == independent_sig(canonical))
}

/// A JSON string literal holding exactly `bytes`, valid UTF-8 or not, so a
/// test can put any byte into a document.
fn literal(bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![b'"'];
    for &b in bytes {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0..=0x1f => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            _ => out.push(b),
        }
    }
    out.push(b'"');
    out
}

/// A document's bytes, with `field`'s string value replaced by raw `bytes`.
fn render_with(doc: &Map<String, Value>, field: &str, bytes: &[u8]) -> Vec<u8> {
    let mut out = b"{".to_vec();
    for (i, (k, v)) in doc.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend(literal(k.as_bytes()));
        out.push(b':');
        if k == field {
            out.extend(literal(bytes));
        } else {
            out.extend(serde_json::to_vec(v).unwrap());
        }
    }
    out.push(b'}');
    out
}

/// `bytes` with the byte at `at` replaced by a different one.
fn change_byte(bytes: &[u8], at: &Index, to: u8) -> (Vec<u8>, usize) {
    let mut v = bytes.to_vec();
    let i = at.index(v.len());
    v[i] = if to == v[i] { to.wrapping_add(1) } else { to };
    (v, i)
}

fn bytes_of(doc: &Map<String, Value>) -> FileRead {
    FileRead::Bytes(serde_json::to_vec(doc).unwrap())
}

// ---------------------------------------------------------------- strategies

fn job_id() -> impl Strategy<Value = String> {
    "[A-Za-z0-9-]{1,64}"
}

fn machine() -> impl Strategy<Value = String> {
    "[A-Za-z0-9][A-Za-z0-9_-]{0,62}".prop_filter("reserved", |s| {
        !RESERVED.iter().any(|r| r.eq_ignore_ascii_case(s))
    })
}

/// Valid RFC 3339, in and beyond the form we emit.
fn timestamp() -> impl Strategy<Value = String> {
    concat!(
        "20[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])",
        "T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,9})?",
        "(Z|[+-](0[0-9]|1[0-3]):[0-5][0-9])",
    )
}

/// A spec with only known fields (docs/protocol.md §5.2), as the text that gets signed.
fn spec_text() -> impl Strategy<Value = String> {
    (
        prop::collection::vec("[^\\x00]{0,12}", 1..4),
        prop::option::of("[A-Za-z0-9/_.:-]{1,20}"),
        prop::collection::btree_map("[A-Za-z_][A-Za-z0-9_]{0,8}", "[^\\x00]{0,8}", 0..3),
        prop::option::of(0u32..100_000),
        prop::option::of(0.0f64..1000.0),
        prop::option::of(prop_oneof![Just("normal"), Just("high")]),
        prop::option::of(job_id()),
        prop::option::of(any::<String>()),
    )
        .prop_map(
            |(argv, cwd, env, timeout, grace, priority, parent, label)| {
                let mut s = json!({ "argv": argv });
                if let Some(c) = cwd {
                    s["cwd"] = json!(c);
                }
                if !env.is_empty() {
                    s["env"] = json!(env);
                }
                if let Some(t) = timeout {
                    s["timeoutSec"] = json!(t);
                }
                if let Some(g) = grace {
                    s["graceSec"] = json!(g);
                }
                if let Some(p) = priority {
                    s["priority"] = json!(p);
                }
                if let Some(p) = parent {
                    s["parentJobId"] = json!(p);
                }
                if let Some(l) = label {
                    s["label"] = json!(l);
                }
                s.to_string()
            },
        )
}

/// Any JSON value, nested a few levels.
fn jsonish() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        any::<String>().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(field_name(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Field names that matter, and others.
fn field_name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "v",
            "jobId",
            "target",
            "createdAt",
            "origin",
            "spec",
            "sig",
            "ok",
            "exitCode",
            "error",
            "startedAt",
            "finishedAt",
            "detail",
            "argv",
        ])
        .prop_map(str::to_string),
        any::<String>(),
    ]
}

/// A field's value: mostly a plausible string, sometimes absent or any JSON.
fn field(plausible: BoxedStrategy<String>) -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        60 => plausible.prop_map(|s| Some(Value::String(s))),
        1 => Just(None),
        2 => jsonish().prop_map(Some),
    ]
}

fn plausible_id() -> BoxedStrategy<String> {
    prop_oneof![8 => job_id(), 1 => any::<String>(), 1 => "[ -~]{0,70}"].boxed()
}

fn plausible_machine() -> BoxedStrategy<String> {
    prop_oneof![
        8 => machine(),
        1 => prop::sample::select(vec!["PC", "pc", "LAPTOP", "CON", "com1", "-PC", "P|C"])
            .prop_map(str::to_string),
        1 => any::<String>(),
    ]
    .boxed()
}

fn plausible_time() -> BoxedStrategy<String> {
    prop_oneof![8 => timestamp(), 1 => any::<String>(), 1 => Just(String::new())].boxed()
}

fn plausible_spec() -> BoxedStrategy<String> {
    prop_oneof![
        8 => spec_text(),
        1 => jsonish().prop_map(|v| v.to_string()),
        1 => any::<String>(),
    ]
    .boxed()
}

/// How a soup document is signed.
#[derive(Clone, Debug)]
enum SigChoice {
    /// Over the document's own canonical string.
    Right,
    /// The same, in upper-case hex.
    Upper,
    /// Over another string.
    Other(String),
    /// Not a string, or absent.
    Junk(Option<Value>),
}

fn sig_choice() -> impl Strategy<Value = SigChoice> {
    prop_oneof![
        6 => Just(SigChoice::Right),
        1 => Just(SigChoice::Upper),
        1 => any::<String>().prop_map(SigChoice::Other),
        1 => prop::option::of(jsonish()).prop_map(SigChoice::Junk),
    ]
}

/// A JSON-ish document of one kind: the given fields (each maybe missing or
/// of the wrong type), unknown extras, and a signature by `choice`.
fn soup(
    fields: Vec<(&'static str, Option<Value>)>,
    extras: Vec<(String, Value)>,
    choice: SigChoice,
    canonical: fn(&Map<String, Value>) -> String,
) -> Map<String, Value> {
    let mut doc = Map::new();
    for (k, v) in extras {
        doc.insert(k, v);
    }
    for (k, v) in fields {
        match v {
            Some(v) => doc.insert(k.to_string(), v),
            None => doc.remove(k),
        };
    }
    let sig = match choice {
        SigChoice::Right => Some(Value::from(independent_sig(&canonical(&doc)))),
        SigChoice::Upper => Some(Value::from(
            independent_sig(&canonical(&doc)).to_ascii_uppercase(),
        )),
        SigChoice::Other(s) => Some(Value::from(independent_sig(&s))),
        SigChoice::Junk(v) => v,
    };
    match sig {
        Some(s) => doc.insert("sig".into(), s),
        None => doc.remove("sig"),
    };
    doc
}

/// The file name a soup document is found under: its own, or anything.
fn name_for(doc: &Map<String, Value>, own: bool, other: String) -> String {
    if own {
        format!("{}.json", text(doc, "jobId"))
    } else {
        other
    }
}

/// The folder's target: the document's own (maybe in another case), or anything.
fn target_for(doc: &Map<String, Value>, pick: u8, other: String) -> String {
    match pick % 8 {
        0..=3 => text(doc, "target").to_string(),
        4 | 5 => text(doc, "target").to_ascii_lowercase(),
        6 => "PC".to_string(),
        _ => other,
    }
}

// ---------------------------------------------------------------- the checks

/// A `valid` marker: its fields are the document's, its names follow the protocol
/// §2, it sits under its own name in its own target, and the independent
/// canonical string verifies.
fn check_marker(
    doc: &Map<String, Value>,
    name: &str,
    folder: &str,
    verdict: &Result<fleet_dispatch::protocol::doc::Marker, accept::Rejection>,
) -> Result<(), TestCaseError> {
    let Ok(m) = verdict else { return Ok(()) };
    for f in MARKER_FIELDS {
        prop_assert!(doc.get(f).is_some_and(Value::is_string), "{f} in {doc:?}");
    }
    let canonical = marker_string(doc);
    prop_assert!(independently_verifies(doc, &canonical), "{doc:?}");
    prop_assert_eq!(
        marker::canonical(&m.job_id, &m.target, &m.created_at, &m.origin),
        canonical
    );
    prop_assert_eq!(&m.job_id, text(doc, "jobId"));
    prop_assert_eq!(&m.target, text(doc, "target"));
    prop_assert_eq!(&m.created_at, text(doc, "createdAt"));
    prop_assert_eq!(&m.origin, text(doc, "origin"));
    prop_assert!(oracle_job_id(&m.job_id) && oracle_machine(&m.target));
    prop_assert!(oracle_machine(&m.origin));
    prop_assert_eq!(name, format!("{}.json", m.job_id));
    prop_assert!(m.target.eq_ignore_ascii_case(folder));
    Ok(())
}

/// The same for a job, plus the signed spec text.
fn check_job(
    doc: &Map<String, Value>,
    name: &str,
    folder: &str,
    verdict: &Result<fleet_dispatch::protocol::doc::Job, accept::Rejection>,
) -> Result<(), TestCaseError> {
    let Ok(j) = verdict else { return Ok(()) };
    for f in JOB_FIELDS {
        prop_assert!(doc.get(f).is_some_and(Value::is_string), "{f} in {doc:?}");
    }
    let canonical = job_string(doc);
    prop_assert!(independently_verifies(doc, &canonical), "{doc:?}");
    prop_assert_eq!(
        job::canonical(
            j.id.as_str(),
            &j.target,
            &j.created_at,
            &j.origin,
            &j.spec_text
        ),
        canonical
    );
    prop_assert_eq!(j.id.as_str(), text(doc, "jobId"));
    prop_assert_eq!(&j.target, text(doc, "target"));
    prop_assert_eq!(&j.created_at, text(doc, "createdAt"));
    prop_assert_eq!(&j.origin, text(doc, "origin"));
    prop_assert_eq!(&j.spec_text, text(doc, "spec"));
    prop_assert!(oracle_job_id(j.id.as_str()) && oracle_machine(&j.target));
    prop_assert!(oracle_machine(&j.origin));
    prop_assert_eq!(name, format!("{}.json", j.id));
    prop_assert!(j.target.eq_ignore_ascii_case(folder));
    prop_assert!(!j.payload().argv.is_empty());
    Ok(())
}

/// The same for a result, asked for as `job_id` on `folder`.
fn check_result(
    doc: &Map<String, Value>,
    job_id: &str,
    folder: &str,
    verdict: &Result<fleet_dispatch::protocol::doc::Outcome, accept::Rejection>,
) -> Result<(), TestCaseError> {
    let Ok(o) = verdict else { return Ok(()) };
    for f in RESULT_STRINGS {
        prop_assert!(doc.get(f).is_some_and(Value::is_string), "{f} in {doc:?}");
    }
    prop_assert!(doc.get("ok").is_some_and(Value::is_boolean));
    prop_assert!(doc.get("exitCode").and_then(Value::as_i64).is_some());
    let canonical = result_string(doc);
    prop_assert!(independently_verifies(doc, &canonical), "{doc:?}");
    prop_assert_eq!(
        outcome::canonical(
            &o.job_id,
            &o.target,
            o.ok,
            o.exit_code,
            &o.error,
            &o.started_at,
            &o.finished_at,
            &o.detail
        ),
        canonical
    );
    prop_assert_eq!(&o.job_id, job_id);
    prop_assert_eq!(&o.job_id, text(doc, "jobId"));
    prop_assert!(o.target.eq_ignore_ascii_case(folder));
    prop_assert_eq!(&o.error, text(doc, "error"));
    prop_assert_eq!(&o.detail, text(doc, "detail"));
    // Unambiguous: every field before `detail` is one that cannot hold a
    // `|` (docs/protocol.md §5), so the signed bytes split into fields one way only.
    prop_assert!(
        ERROR_WORDS.contains(&o.error.as_str()),
        "error {:?}",
        o.error
    );
    for f in [&o.job_id, &o.target, &o.started_at, &o.finished_at] {
        prop_assert!(!f.contains('|'), "{f:?} in {doc:?}");
    }
    Ok(())
}

// ---------------------------------------------------------------- well-formed documents

fn signed_marker(id: &str, target: &str, created: &str, origin: &str) -> Map<String, Value> {
    let mut doc = Map::new();
    doc.insert("jobId".into(), json!(id));
    doc.insert("target".into(), json!(target));
    doc.insert("createdAt".into(), json!(created));
    doc.insert("origin".into(), json!(origin));
    let sig = independent_sig(&marker_string(&doc));
    doc.insert("sig".into(), json!(sig));
    doc
}

fn signed_job(
    id: &str,
    target: &str,
    created: &str,
    origin: &str,
    spec: &str,
) -> Map<String, Value> {
    let mut doc = Map::new();
    doc.insert("v".into(), json!(1));
    doc.insert("jobId".into(), json!(id));
    doc.insert("target".into(), json!(target));
    doc.insert("createdAt".into(), json!(created));
    doc.insert("origin".into(), json!(origin));
    doc.insert("spec".into(), json!(spec));
    let sig = independent_sig(&job_string(&doc));
    doc.insert("sig".into(), json!(sig));
    doc
}

/// A signed result; `fields` are jobId, target, error, startedAt, finishedAt, detail.
fn signed_result(fields: [&str; 6], ok: bool, exit_code: i64) -> Map<String, Value> {
    let mut doc = Map::new();
    doc.insert("v".into(), json!(1));
    for (k, v) in RESULT_STRINGS.iter().zip(fields) {
        doc.insert(k.to_string(), json!(v));
    }
    doc.insert("ok".into(), json!(ok));
    doc.insert("exitCode".into(), json!(exit_code));
    let sig = independent_sig(&result_string(&doc));
    doc.insert("sig".into(), json!(sig));
    doc
}

fn result_strategy() -> impl Strategy<Value = Map<String, Value>> {
    (
        job_id(),
        machine(),
        prop::sample::select(ERROR_WORDS.to_vec()),
        prop_oneof![timestamp(), Just(String::new())],
        timestamp(),
        jsonish().prop_map(|v| json!({ "x": v }).to_string()),
        any::<bool>(),
        any::<i64>(),
    )
        .prop_map(|(id, target, error, started, finished, detail, ok, code)| {
            signed_result(
                [&id, &target, error, &started, &finished, &detail],
                ok,
                code,
            )
        })
}

/// A sig with one byte changed, never just the case of a hex letter
/// (upper-case hex is accepted on input, docs/protocol.md §5).
fn sig_changed(sig: &str, at: &Index, to: u8) -> Vec<u8> {
    let (mut v, i) = change_byte(sig.as_bytes(), at, to);
    if v[i].eq_ignore_ascii_case(&sig.as_bytes()[i]) {
        v[i] = b'g';
    }
    v
}

proptest! {
    #![proptest_config(config())]

    // ------------------------------------------------------------ no panic

    #[test]
    fn acceptance_never_panics_on_arbitrary_bytes(
        bytes in prop::collection::vec(any::<u8>(), 0..600),
        name in prop_oneof![any::<String>(), job_id().prop_map(|i| format!("{i}.json"))],
        folder in plausible_machine(),
    ) {
        let k = fleet_key();
        let _ = accept::marker(&name, FileRead::Bytes(bytes.clone()), &folder, &k);
        let _ = accept::job(&name, FileRead::Bytes(bytes.clone()), &folder, &k);
        let _ = accept::outcome(&name, FileRead::Bytes(bytes), &folder, &k);
    }

    #[test]
    fn what_the_caller_could_not_read_decides_the_verdict_alone(
        pick in 0u8..4,
        why in any::<String>(),
        size in any::<u64>(),
    ) {
        let read = || match pick {
            0 => FileRead::NotAFile("symbolic link"),
            1 => FileRead::Unreadable(why.clone()),
            2 => FileRead::TooLarge(size),
            _ => FileRead::Missing,
        };
        let want = [Verdict::NotAFile, Verdict::Unreadable, Verdict::TooLarge, Verdict::Missing]
            [pick as usize];
        let k = fleet_key();
        prop_assert_eq!(accept::marker("a.json", read(), "PC", &k).unwrap_err().verdict, want);
        prop_assert_eq!(accept::job("a.json", read(), "PC", &k).unwrap_err().verdict, want);
        prop_assert_eq!(accept::outcome("a", read(), "PC", &k).unwrap_err().verdict, want);
    }

    // ------------------------------------------------------------ valid means verified

    #[test]
    fn a_valid_marker_is_one_whose_independent_canonical_string_verifies(
        id in field(plausible_id()),
        target in field(plausible_machine()),
        created in field(plausible_time()),
        origin in field(plausible_machine()),
        extras in prop::collection::vec((field_name(), jsonish()), 0..3),
        choice in sig_choice(),
        own_name in prop::bool::weighted(0.9),
        other_name in any::<String>(),
        pick in any::<u8>(),
        other_target in any::<String>(),
    ) {
        let doc = soup(
            vec![("jobId", id), ("target", target), ("createdAt", created), ("origin", origin)],
            extras, choice, marker_string,
        );
        let name = name_for(&doc, own_name, other_name);
        let folder = target_for(&doc, pick, other_target);
        let verdict = accept::marker(&name, bytes_of(&doc), &folder, &fleet_key());
        check_marker(&doc, &name, &folder, &verdict)?;
    }

    #[test]
    fn a_valid_job_is_one_whose_independent_canonical_string_verifies(
        id in field(plausible_id()),
        target in field(plausible_machine()),
        created in field(plausible_time()),
        origin in field(plausible_machine()),
        spec in field(plausible_spec()),
        extras in prop::collection::vec((field_name(), jsonish()), 0..3),
        choice in sig_choice(),
        own_name in prop::bool::weighted(0.9),
        other_name in any::<String>(),
        pick in any::<u8>(),
        other_target in any::<String>(),
    ) {
        let doc = soup(
            vec![
                ("jobId", id), ("target", target), ("createdAt", created),
                ("origin", origin), ("spec", spec),
            ],
            extras, choice, job_string,
        );
        let name = name_for(&doc, own_name, other_name);
        let folder = target_for(&doc, pick, other_target);
        let verdict = accept::job(&name, bytes_of(&doc), &folder, &fleet_key());
        check_job(&doc, &name, &folder, &verdict)?;
    }

    #[test]
    fn a_valid_result_is_one_whose_independent_canonical_string_verifies(
        id in field(plausible_id()),
        target in field(plausible_machine()),
        error in field(prop_oneof![
            8 => prop::sample::select(ERROR_WORDS.to_vec()).prop_map(str::to_string),
            1 => any::<String>(),
        ].boxed()),
        started in field(plausible_time()),
        finished in field(plausible_time()),
        detail in field(plausible_spec()),
        ok in prop::option::weighted(0.95, prop_oneof![
            9 => any::<bool>().prop_map(Value::from),
            1 => jsonish(),
        ]),
        code in prop::option::weighted(0.95, prop_oneof![
            9 => any::<i64>().prop_map(Value::from),
            1 => jsonish(),
        ]),
        choice in sig_choice(),
        own_id in prop::bool::weighted(0.9),
        other_id in any::<String>(),
        pick in any::<u8>(),
        other_target in any::<String>(),
    ) {
        let doc = soup(
            vec![
                ("jobId", id), ("target", target), ("error", error), ("startedAt", started),
                ("finishedAt", finished), ("detail", detail), ("ok", ok), ("exitCode", code),
            ],
            Vec::new(), choice, result_string,
        );
        let asked = if own_id { text(&doc, "jobId").to_string() } else { other_id };
        let folder = target_for(&doc, pick, other_target);
        let verdict = accept::outcome(&asked, bytes_of(&doc), &folder, &fleet_key());
        check_result(&doc, &asked, &folder, &verdict)?;
    }

    // ------------------------------------------------------------ well-formed is valid

    #[test]
    fn a_well_formed_marker_signed_by_an_independent_signer_is_valid(
        id in job_id(), target in machine(), created in timestamp(), origin in machine(),
        upper in any::<bool>(), lower_folder in any::<bool>(),
    ) {
        let mut doc = signed_marker(&id, &target, &created, &origin);
        if upper {
            let s = text(&doc, "sig").to_ascii_uppercase();
            doc.insert("sig".into(), json!(s));
        }
        let folder = if lower_folder { target.to_ascii_lowercase() } else { target.clone() };
        let name = format!("{id}.json");
        let verdict = accept::marker(&name, bytes_of(&doc), &folder, &fleet_key());
        prop_assert!(verdict.is_ok(), "{:?} for {doc:?}", verdict.unwrap_err());
        check_marker(&doc, &name, &folder, &verdict)?;
    }

    #[test]
    fn a_well_formed_job_signed_by_an_independent_signer_is_valid(
        id in job_id(), target in machine(), created in timestamp(), origin in machine(),
        spec in spec_text(),
    ) {
        let doc = signed_job(&id, &target, &created, &origin, &spec);
        let name = format!("{id}.json");
        let verdict = accept::job(&name, bytes_of(&doc), &target, &fleet_key());
        prop_assert!(verdict.is_ok(), "{:?} for {doc:?}", verdict.unwrap_err());
        check_job(&doc, &name, &target, &verdict)?;
    }

    #[test]
    fn a_well_formed_result_signed_by_an_independent_signer_is_valid(doc in result_strategy()) {
        let id = text(&doc, "jobId").to_string();
        let target = text(&doc, "target").to_string();
        let verdict = accept::outcome(&id, bytes_of(&doc), &target, &fleet_key());
        prop_assert!(verdict.is_ok(), "{:?} for {doc:?}", verdict.unwrap_err());
        check_result(&doc, &id, &target, &verdict)?;
    }

    // ------------------------------------------------------------ one byte changed

    #[test]
    fn a_marker_with_one_signed_byte_changed_is_never_valid(
        id in job_id(), target in machine(), created in timestamp(), origin in machine(),
        field in prop::sample::select(MARKER_FIELDS.to_vec()),
        at in any::<Index>(), to in any::<u8>(), follow in any::<bool>(),
    ) {
        let doc = signed_marker(&id, &target, &created, &origin);
        let (changed, _) = change_byte(text(&doc, field).as_bytes(), &at, to);
        let bytes = render_with(&doc, field, &changed);
        // The attacker renames the file, or drops it in the folder, to match.
        let changed_text = String::from_utf8(changed).ok().filter(|_| follow);
        let name = match (&changed_text, field) {
            (Some(c), "jobId") => format!("{c}.json"),
            _ => format!("{id}.json"),
        };
        let folder = match (&changed_text, field) {
            (Some(c), "target") => c.clone(),
            _ => target.clone(),
        };
        let verdict = accept::marker(&name, FileRead::Bytes(bytes), &folder, &fleet_key());
        prop_assert!(verdict.is_err(), "changed {field} and still valid: {verdict:?}");
    }

    #[test]
    fn a_job_with_one_signed_byte_changed_is_never_valid(
        id in job_id(), target in machine(), created in timestamp(), origin in machine(),
        spec in spec_text(),
        field in prop::sample::select(JOB_FIELDS.to_vec()),
        at in any::<Index>(), to in any::<u8>(), follow in any::<bool>(),
    ) {
        let doc = signed_job(&id, &target, &created, &origin, &spec);
        let (changed, _) = change_byte(text(&doc, field).as_bytes(), &at, to);
        let bytes = render_with(&doc, field, &changed);
        let changed_text = String::from_utf8(changed).ok().filter(|_| follow);
        let name = match (&changed_text, field) {
            (Some(c), "jobId") => format!("{c}.json"),
            _ => format!("{id}.json"),
        };
        let folder = match (&changed_text, field) {
            (Some(c), "target") => c.clone(),
            _ => target.clone(),
        };
        let verdict = accept::job(&name, FileRead::Bytes(bytes), &folder, &fleet_key());
        prop_assert!(verdict.is_err(), "changed {field} and still valid: {verdict:?}");
    }

    #[test]
    fn a_result_with_one_signed_byte_changed_is_never_valid(
        doc in result_strategy(),
        field in prop::sample::select(vec![
            "jobId", "target", "error", "startedAt", "finishedAt", "detail", "ok", "exitCode",
        ]),
        at in any::<Index>(), to in any::<u8>(), follow in any::<bool>(),
    ) {
        let id = text(&doc, "jobId").to_string();
        let target = text(&doc, "target").to_string();
        let (bytes, changed_text) = match field {
            "ok" => {
                let mut d = doc.clone();
                d.insert("ok".into(), json!(!doc["ok"].as_bool().unwrap()));
                (serde_json::to_vec(&d).unwrap(), None)
            }
            "exitCode" => {
                // One byte of the decimal text changed to another digit.
                let old = doc["exitCode"].as_i64().unwrap().to_string();
                let (mut digits, i) = change_byte(old.as_bytes(), &at, b'0' + to % 10);
                if !digits[i].is_ascii_digit() {
                    digits[i] = if old.as_bytes()[i] == b'9' { b'8' } else { b'9' };
                }
                let text = String::from_utf8(digits).unwrap();
                let mut d = doc.clone();
                match text.parse::<i64>() {
                    Ok(n) => d.insert("exitCode".into(), json!(n)),
                    Err(_) => d.insert("exitCode".into(), json!(text)),
                };
                (serde_json::to_vec(&d).unwrap(), None)
            }
            _ => {
                // `error` may be empty: a byte added is the smallest change then.
                let old = text(&doc, field).as_bytes().to_vec();
                let changed = if old.is_empty() { vec![to] } else { change_byte(&old, &at, to).0 };
                let bytes = render_with(&doc, field, &changed);
                (bytes, String::from_utf8(changed).ok().filter(|_| follow))
            }
        };
        let asked = match (&changed_text, field) {
            (Some(c), "jobId") => c.clone(),
            _ => id.clone(),
        };
        let folder = match (&changed_text, field) {
            (Some(c), "target") => c.clone(),
            _ => target.clone(),
        };
        let verdict = accept::outcome(&asked, FileRead::Bytes(bytes), &folder, &fleet_key());
        prop_assert!(verdict.is_err(), "changed {field} and still valid: {verdict:?}");
    }

    #[test]
    fn a_signature_with_one_byte_changed_is_never_valid(
        id in job_id(), target in machine(), created in timestamp(), origin in machine(),
        spec in spec_text(), at in any::<Index>(), to in any::<u8>(),
    ) {
        let k = fleet_key();
        let m = signed_marker(&id, &target, &created, &origin);
        let name = format!("{id}.json");
        let bad = render_with(&m, "sig", &sig_changed(text(&m, "sig"), &at, to));
        let verdict = accept::marker(&name, FileRead::Bytes(bad), &target, &k);
        prop_assert!(verdict.is_err(), "{:?}", verdict);
        let j = signed_job(&id, &target, &created, &origin, &spec);
        let bad = render_with(&j, "sig", &sig_changed(text(&j, "sig"), &at, to));
        let verdict = accept::job(&name, FileRead::Bytes(bad), &target, &k);
        prop_assert!(verdict.is_err(), "{:?}", verdict);
    }

    // ------------------------------------------------------------ durations and names

    #[test]
    fn the_duration_parser_never_panics_on_any_text(s in prop_oneof![
        any::<String>(),
        "[0-9 ]{0,25}(ms|s|m|h|d|x|µs|)[ 0-9a-z]{0,3}",
    ]) {
        let _ = parse_duration(&s);
    }

    #[test]
    fn a_duration_reads_back_as_it_was_written(ms in 0u64..1_000_000_000_000) {
        let d = Duration::from_millis(ms);
        prop_assert_eq!(parse_duration(&format_duration(d)).unwrap(), d);
    }

    // Up to 12 digits times the unit can exceed u64 milliseconds: that is a
    // VALIDATION_ERROR, never an overflow.
    #[test]
    fn a_duration_of_up_to_twelve_digits_never_overflows(
        n in 0u64..1_000_000_000_000,
        unit in prop::sample::select(vec!["ms", "s", "", "m", "h", "d"]),
    ) {
        let per: u64 = match unit {
            "ms" => 1,
            "" | "s" => 1000,
            "m" => 60_000,
            "h" => 3_600_000,
            _ => 86_400_000,
        };
        match (n.checked_mul(per), parse_duration(&format!("{n}{unit}"))) {
            (Some(ms), Ok(d)) => prop_assert_eq!(d, Duration::from_millis(ms)),
            (None, Err(_)) => {}
            (want, got) => prop_assert!(false, "{n}{unit}: wanted {want:?} ms, got {got:?}"),
        }
    }

    #[test]
    fn ids_and_names_follow_the_spec_rules_on_any_text(s in prop_oneof![
        any::<String>(),
        "[A-Za-z0-9_.|/ -]{0,70}",
        job_id(),
        machine(),
        prop::sample::select(RESERVED.to_vec()).prop_map(|r| r.to_ascii_lowercase()),
    ]) {
        prop_assert_eq!(is_job_id(&s), oracle_job_id(&s), "job id {:?}", s);
        prop_assert_eq!(JobId::parse(&s).is_ok(), oracle_job_id(&s));
        prop_assert_eq!(
            JobId::from_file_name(&format!("{s}.json")).is_some(),
            oracle_job_id(&s)
        );
        prop_assert!(JobId::from_file_name(&s).is_none_or(|i| s == i.file_name()));
        prop_assert_eq!(is_machine(&s), oracle_machine(&s), "machine {:?}", s);
        prop_assert_eq!(Machine::parse(&s, "target").is_ok(), oracle_machine(&s));
    }
}

/// Found by `a_duration_of_up_to_twelve_digits_never_overflows` and by the
/// `parse_duration` fuzz target (fixed in 62b1e0b), pinned.
#[test]
fn regression_a_twelve_digit_day_count_is_a_validation_error_not_an_overflow() {
    let got = std::panic::catch_unwind(|| parse_duration("999999999999d").is_err());
    assert_eq!(
        got.ok(),
        Some(true),
        "999999999999d overflowed or was accepted"
    );
}

/// Found while writing the properties above (fixed in 62b1e0b), pinned.
/// docs/protocol.md §5: the canonical string is unambiguous because every field but the
/// last cannot contain `|`. A result's `error`, `startedAt` and `finishedAt`
/// are such fields (a protocol word, RFC 3339 timestamps); moving a `|` from
/// `detail` into `finishedAt` keeps the signed bytes and must not keep the
/// verdict.
#[test]
fn regression_a_result_re_split_at_a_pipe_is_not_valid() {
    let doc = signed_result(
        [
            "job-1",
            "PC",
            "",
            "2026-11-29T19:30:00.000Z",
            "2026-11-29T19:31:00.000Z",
            r#"{"stdoutTail":"ok|done"}"#,
        ],
        true,
        0,
    );
    let honest = accept::outcome("job-1", bytes_of(&doc), "PC", &fleet_key());
    assert!(honest.is_ok(), "{honest:?}");
    let mut forged = doc.clone();
    forged.insert(
        "finishedAt".into(),
        json!(r#"2026-11-29T19:31:00.000Z|{"stdoutTail":"ok"#),
    );
    forged.insert("detail".into(), json!(r#"done"}"#));
    assert_eq!(
        result_string(&forged),
        result_string(&doc),
        "precondition: same signed bytes"
    );
    let verdict = accept::outcome("job-1", bytes_of(&forged), "PC", &fleet_key());
    assert!(
        verdict.is_err(),
        "a re-split result is valid, its finishedAt now {:?}",
        verdict.unwrap().finished_at
    );
}
