//! The fleet key's signatures, key ids and the "keys differ" rule.

use super::*;

const VECTOR_KEY: &[u8] = b"3f6c2a9e1b7d4c58a0e9f2b6d1c7e4a89b3d5f7a1c2e4b6d8f0a1b3c5d7e9f21\n";
const MARKER: &str = "cancel|a|PC|2026-11-29T19:31:00.000Z|LAPTOP";

#[test]
fn verify_accepts_either_hex_case_and_nothing_else() {
    let k = Key::from_file_text(VECTOR_KEY).unwrap();
    let by = Signer::Machine("LAPTOP");
    let sig = k.sign(MARKER);
    assert!(k.verify(by, MARKER, &sig));
    assert!(k.verify(Signer::Unnamed, MARKER, &sig));
    assert!(k.verify(by, MARKER, &sig.to_uppercase()));
    assert!(!k.verify(by, "cancel|a|PC|2026-11-29T19:31:00.000Z|LAPTOQ", &sig));
    assert!(!k.verify(by, MARKER, &sig[..62]));
    assert!(!k.verify(by, MARKER, "zz"));
    assert!(!k.verify(by, MARKER, ""));
}

#[test]
fn a_refusal_says_whether_the_text_or_the_signature_is_wrong() {
    let k = Key::from_file_text(VECTOR_KEY).unwrap();
    let by = Signer::Machine("LAPTOP");
    let sig = k.sign(MARKER);
    assert_eq!(k.check(by, MARKER, &sig), Ok(()));
    for text in ["", "zz", &sig[..62], &format!("{sig}00"), &"g".repeat(64)] {
        assert_eq!(
            k.check(by, MARKER, text),
            Err(Refusal::NotASignature),
            "{text}"
        );
    }
    let other = Key::from_bytes(&[7u8; 32]).unwrap().sign(MARKER);
    assert_eq!(k.check(by, MARKER, &other), Err(Refusal::DoesNotVerify));
    assert_eq!(
        Refusal::NotASignature.to_string(),
        "sig is not 64 hex digits"
    );
}

#[test]
fn a_key_id_names_the_key_and_only_it() {
    let a = Key::from_file_text(VECTOR_KEY).unwrap();
    let b = Key::from_bytes(&[7u8; 32]).unwrap();
    assert_eq!(a.key_id().len(), 8);
    assert_eq!(
        a.key_id(),
        Key::from_file_text(VECTOR_KEY).unwrap().key_id()
    );
    assert_ne!(a.key_id(), b.key_id());
}

#[test]
fn keys_differ_only_when_both_are_known_and_unequal() {
    assert_eq!(compare(Some("a"), None), KeyIds::Unreported);
    assert_eq!(compare(None, Some("b")), KeyIds::NoneHere("b"));
    assert_eq!(compare(Some("b"), Some("b")), KeyIds::Same("b"));
    assert_eq!(
        compare(Some("a"), Some("b")),
        KeyIds::Differ {
            mine: "a",
            theirs: "b"
        }
    );
}

#[test]
fn debug_never_shows_the_key() {
    let k = Key::from_file_text(VECTOR_KEY).unwrap();
    let shown = format!("{k:?}");
    assert!(!shown.contains("3f6c"));
}
