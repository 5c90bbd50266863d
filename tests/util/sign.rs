//! Every signed document a test writes or checks, built here: a job, a
//! cancel marker, a result, a heartbeat, and the signature header of an
//! HTTP request.
//!
//! The canonical strings come from the crate's own functions, so no test
//! restates the format (the reference vectors in `suite/vectors.rs` pin
//! those functions to the specification, by hand); the HMAC is computed
//! here with `ring` directly, so a signature a test makes does not come
//! from the signing code it checks. A test that needs a canonical string
//! gone wrong on purpose changes what these return. The crate's key type
//! is named only here.

use serde_json::{Value, json};

use fleet_dispatch::protocol::doc::{job, marker, outcome};

/// The key text of the reference vectors: the fleet key of every test world.
pub const VECTOR_KEY: &str = "3f6c2a9e1b7d4c58a0e9f2b6d1c7e4a89b3d5f7a1c2e4b6d8f0a1b3c5d7e9f21\n";

/// Who signs a document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signer {
    /// The fleet key ([`VECTOR_KEY`]).
    Fleet,
    /// A key that is not the fleet's, as from a machine that ran its own
    /// `keygen`.
    Foreign,
}

impl Signer {
    /// HMAC-SHA256 of `canonical`, in lower-case hex.
    pub fn sig(self, canonical: &str) -> String {
        match self {
            Signer::Fleet => sig_with(VECTOR_KEY.trim_end().as_bytes(), canonical),
            Signer::Foreign => sig_with(&[7u8; 32], canonical),
        }
    }
}

/// HMAC-SHA256 of `canonical` with the key bytes `secret`, in lower-case
/// hex (for keys that are near misses of the fleet's).
pub fn sig_with(secret: &[u8], canonical: &str) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret);
    hex::encode(ring::hmac::sign(&key, canonical.as_bytes()).as_ref())
}

/// HMAC-SHA256 hex of `canonical` with the fleet key, computed with `ring`
/// directly, independently of the crate's own signing code.
pub fn independent_sig(canonical: &str) -> String {
    Signer::Fleet.sig(canonical)
}

/// The token a listener holding the fleet key gives job `id` on `target`
/// (`FLEET_DISPATCH_JOB_TOKEN`), computed with `ring` directly.
pub fn job_token(id: &str, target: &str) -> String {
    let id = fleet_dispatch::base::names::JobId::parse(id).unwrap();
    independent_sig(&fleet_dispatch::protocol::jobenv::token_text(&id, target))
}

/// The crate's own key, from the vector key file's text (for tests that
/// call the library's acceptance functions directly).
pub fn fleet_key() -> fleet_dispatch::trust::Key {
    fleet_dispatch::trust::Key::from_file_text(VECTOR_KEY.as_bytes()).unwrap()
}

// ---------------------------------------------------------------- canonical strings

/// A job's canonical string (docs/protocol.md §5.2).
pub fn job_canonical(id: &str, target: &str, created_at: &str, origin: &str, spec: &str) -> String {
    job::canonical(id, target, created_at, origin, spec)
}

/// A cancel marker's canonical string (docs/protocol.md §5.1).
pub fn marker_canonical(id: &str, target: &str, created_at: &str, origin: &str) -> String {
    marker::canonical(id, target, created_at, origin)
}

/// A result's canonical string (docs/protocol.md §5.3), from the
/// document; every field must be there, of its type.
pub fn result_canonical(r: &Value) -> String {
    let s = |k: &str| r[k].as_str().unwrap_or_else(|| panic!("{k} in {r}"));
    outcome::canonical(
        s("jobId"),
        s("target"),
        r["ok"].as_bool().unwrap_or_else(|| panic!("ok in {r}")),
        r["exitCode"]
            .as_i64()
            .unwrap_or_else(|| panic!("exitCode in {r}")),
        s("error"),
        s("startedAt"),
        s("finishedAt"),
        s("detail"),
    )
}

/// A heartbeat's canonical string (docs/protocol.md §7.11), from its
/// fields as a listener writes them.
pub fn heartbeat_canonical(beat: &Value) -> String {
    serde_json::from_value::<fleet_dispatch::places::heartbeat::Beat>(beat.clone())
        .unwrap_or_else(|e| panic!("not a heartbeat ({e}): {beat}"))
        .canonical()
}

/// What a GET request's signature signs (docs/protocol.md §10): `path` on
/// `target` at unix time `t`.
pub fn request_canonical(target: &str, path: &str, t: &str) -> String {
    fleet_dispatch::front::http::auth::canonical(target, path, t)
}

// ---------------------------------------------------------------- documents

/// A job document: `spec` is the spec's JSON text.
pub fn job_doc(
    id: &str,
    target: &str,
    created_at: &str,
    origin: &str,
    spec: &str,
    by: Signer,
) -> Value {
    let sig = by.sig(&job_canonical(id, target, created_at, origin, spec));
    json!({
        "v": 1, "jobId": id, "target": target, "createdAt": created_at,
        "origin": origin, "spec": spec, "sig": sig,
    })
}

/// A cancel marker document.
pub fn marker_doc(id: &str, target: &str, created_at: &str, origin: &str, by: Signer) -> Value {
    let sig = by.sig(&marker_canonical(id, target, created_at, origin));
    json!({
        "jobId": id, "target": target, "createdAt": created_at,
        "origin": origin, "sig": sig,
    })
}

/// `r` (a result's fields) with its `sig` made with the fleet key.
pub fn signed_result(mut r: Value) -> Value {
    r["sig"] = Value::String(independent_sig(&result_canonical(&r)));
    r
}

/// True when a result's signature verifies with the fleet key.
pub fn result_sig_ok(r: &Value) -> bool {
    r["sig"].as_str().map(str::to_ascii_lowercase) == Some(independent_sig(&result_canonical(r)))
}

/// `beat` (a heartbeat's fields) with its `sig` made with the fleet key.
pub fn signed_beat(mut beat: Value) -> Value {
    beat["sig"] = Value::String(independent_sig(&heartbeat_canonical(&beat)));
    beat
}

/// The `X-Fleet-Signature` value signing a GET of `path` on `target` at
/// unix time `t`: `t=<t>,sig=<hex>`.
pub fn request_header(target: &str, path: &str, t: i64, by: Signer) -> String {
    let t = t.to_string();
    format!("t={t},sig={}", by.sig(&request_canonical(target, path, &t)))
}

/// A job for `PC` from `LAPTOP`, made now and signed with a key that is
/// not the fleet's.
pub fn foreign_job_text(id: &str) -> String {
    let spec = json!({"argv": ["true"]}).to_string();
    job_doc(
        id,
        "PC",
        &super::now_text(),
        "LAPTOP",
        &spec,
        Signer::Foreign,
    )
    .to_string()
}

// ---------------------------------------------------------------- read back

/// A text field of `doc`, empty when missing or not a text (a test may
/// sign a document that lacks one).
fn text<'a>(doc: &'a Value, field: &str) -> &'a str {
    doc[field].as_str().unwrap_or("")
}

/// The canonical string of a job document as it stands.
pub fn job_canonical_of(doc: &Value) -> String {
    let f = |k| text(doc, k);
    job_canonical(
        f("jobId"),
        f("target"),
        f("createdAt"),
        f("origin"),
        f("spec"),
    )
}

/// The canonical string of a marker document as it stands.
pub fn marker_canonical_of(doc: &Value) -> String {
    let f = |k| text(doc, k);
    marker_canonical(f("jobId"), f("target"), f("createdAt"), f("origin"))
}

/// The canonical string of a result document as it stands (`ok` false and
/// `exitCode` 0 when missing or of another type); [`result_canonical`]
/// insists on every field.
pub fn result_canonical_of(doc: &Value) -> String {
    let f = |k| text(doc, k);
    outcome::canonical(
        f("jobId"),
        f("target"),
        doc["ok"].as_bool().unwrap_or(false),
        doc["exitCode"].as_i64().unwrap_or(0),
        f("error"),
        f("startedAt"),
        f("finishedAt"),
        f("detail"),
    )
}
