//! Helpers shared by the fuzz targets: the key, an independent signer, and
//! the two ways a target turns the fuzzer's bytes into a document.
//!
//! Every acceptance target reads its first byte as a mode:
//! - even: the rest is the file's bytes, as found in the folder (the fuzzer
//!   cannot forge a signature, so this explores steps 1 to 7 of SPEC §6);
//! - odd: the rest is parsed as a JSON object and *re-signed* here with the
//!   fleet key, so everything after the signature (the job spec, the valid
//!   path) is explored too.
//!
//! The key is the SPEC's vector key, so seeds taken from
//! `tests/data/signing.json` are valid documents.

use serde_json::{Map, Value};

/// The vector key file's text.
pub const VECTOR_KEY: &[u8] = b"3f6c2a9e1b7d4c58a0e9f2b6d1c7e4a89b3d5f7a1c2e4b6d8f0a1b3c5d7e9f21\n";

/// The crate's key.
pub fn key() -> fleet_dispatch::trust::Key {
    fleet_dispatch::trust::Key::from_file_text(VECTOR_KEY).expect("the vector key is long enough")
}

/// Lowercase hex HMAC-SHA256 of `canonical`, by `ring` directly rather than
/// by the crate's signer.
pub fn independent_sig(canonical: &str) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &VECTOR_KEY[..64]);
    hex::encode(ring::hmac::sign(&key, canonical.as_bytes()).as_ref())
}

/// The document's `sig` verifies over `canonical`, independently.
pub fn verifies(doc: &Map<String, Value>, canonical: &str) -> bool {
    doc.get("sig")
        .and_then(Value::as_str)
        .is_some_and(|s| s.to_ascii_lowercase() == independent_sig(canonical))
}

/// The bytes as a JSON object, if they are one.
pub fn object(bytes: &[u8]) -> Option<Map<String, Value>> {
    match serde_json::from_slice(bytes) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// A string field, or "" (as the canonical string of a field that is not
/// a string would never be reached).
pub fn text<'a>(doc: &'a Map<String, Value>, field: &str) -> &'a str {
    doc.get(field).and_then(Value::as_str).unwrap_or("")
}

/// The name a document would be found under: its own `<jobId>.json` when
/// `own`, else a fixed one.
pub fn file_name(doc: Option<&Map<String, Value>>, own: bool) -> String {
    match doc {
        Some(d) if own => format!("{}.json", text(d, "jobId")),
        _ => "fuzz-1.json".to_string(),
    }
}

/// The folder's target: the document's own when `own`, else `PC`.
pub fn folder(doc: Option<&Map<String, Value>>, own: bool) -> String {
    match doc {
        Some(d) if own => text(d, "target").to_string(),
        _ => "PC".to_string(),
    }
}
