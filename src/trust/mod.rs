//! Every signature (docs/protocol.md §4, §5): what this machine signs with,
//! what it accepts and from whom. The rest of the code signs and verifies
//! through [`Key`] and never sees the scheme: today one fleet key, an
//! HMAC-SHA256 whose text form is 64 hex digits (either case), with its
//! algorithm and key implied.
//!
//! Verification takes the [`Signer`] a document names (a job's or marker's
//! origin, a result's or heartbeat's target), so a scheme with a key per
//! machine changes this module and not its callers: today every signer
//! maps to the fleet key. A signature's text is parsed only here
//! ([`Signature`]), and a key's short name for messages is its
//! [`Key::key_id`]; whether two machines' keys differ is [`compare`]'s.
//!
//! [`file`](mod@file) loads the key file (and `keygen` writes one): this module sits
//! in its own layer below the documents, so the pure rules above it take a
//! loaded [`Key`] and never read a file.
//!
//! Machine identities (docs/identities.md) are the second scheme in the
//! making: [`identity`] holds a machine's Ed25519 and X25519 keys and its
//! identity line, [`roster`] the signed, versioned, expiring list of the
//! fleet's machines, and [`store`] their files and this machine's pin.
//! Nothing signs or accepts a job with them yet.

use std::fmt;

use ring::hmac;

pub mod file;
pub mod identity;
pub mod roster;
pub mod seal;
pub mod store;

pub use file::{MAX_KEY_FILE_BYTES, POINT_AT_KEY, generate, judge_file_text};

/// The shortest key accepted, in bytes.
pub const MIN_KEY_BYTES: usize = 32;

/// The bytes of a signature: an HMAC-SHA256 tag.
const TAG_BYTES: usize = 32;

/// What a key id is computed over: the words are the wire's (heartbeats
/// and reasons carry it as `keyFingerprint`), so they never change.
const KEY_ID_TEXT: &[u8] = b"fleet-dispatch key fingerprint";

/// What this machine signs with and accepts, loaded once (today the fleet
/// key: the key file's content with trailing ASCII whitespace trimmed,
/// taken as bytes). It is never printed: it hides itself from `Debug`, and
/// no code path writes it anywhere but the key file `keygen` creates.
pub struct Key {
    hmac: hmac::Key,
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Key(<redacted>)")
    }
}

/// Who signed a document, as the document names it: whose key must verify
/// its signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signer<'a> {
    /// A machine of the fleet by its name: a job's or a marker's origin, a
    /// result's or a heartbeat's target.
    Machine(&'a str),
    /// A signature whose document names no signer (a `GET`'s header, the
    /// root's identity): any machine the fleet trusts.
    Unnamed,
}

/// A signature parsed from its text form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    tag: Vec<u8>,
}

impl Signature {
    /// The signature `text` holds: today 64 hex digits, either case.
    pub fn parse(text: &str) -> Option<Signature> {
        if text.len() != 2 * TAG_BYTES {
            return None;
        }
        hex::decode(text).ok().map(|tag| Signature { tag })
    }
}

/// Why a signature was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Its text is not a signature's form.
    NotASignature,
    /// It does not verify: the document was edited, or signed with a key
    /// this machine does not accept from its signer.
    DoesNotVerify,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Refusal::NotASignature => "sig is not 64 hex digits",
            Refusal::DoesNotVerify => {
                "the signature does not verify with this fleet key (edited, or signed with another key)"
            }
        })
    }
}

impl Key {
    /// A key from raw bytes (already trimmed); refuses fewer than
    /// [`MIN_KEY_BYTES`].
    pub fn from_bytes(bytes: &[u8]) -> Option<Key> {
        (bytes.len() >= MIN_KEY_BYTES).then(|| Key {
            hmac: hmac::Key::new(hmac::HMAC_SHA256, bytes),
        })
    }

    /// The key that verifies what `signer` signs: the fleet key, whoever
    /// the signer.
    fn of(&self, signer: Signer<'_>) -> &hmac::Key {
        match signer {
            Signer::Machine(_) | Signer::Unnamed => &self.hmac,
        }
    }

    /// A short name for this key, to tell two keys apart in messages: 8
    /// hex digits of a MAC of a fixed text under the key. Like any output
    /// of the MAC it reveals nothing usable about the key, and 32 bits
    /// make an accidental match between two different keys a
    /// one-in-four-billion event.
    pub fn key_id(&self) -> String {
        let tag = hmac::sign(&self.hmac, KEY_ID_TEXT);
        hex::encode(&tag.as_ref()[..4])
    }

    /// This machine's signature over `canonical`, in its text form
    /// (lowercase hex).
    pub fn sign(&self, canonical: &str) -> String {
        hex::encode(hmac::sign(&self.hmac, canonical.as_bytes()).as_ref())
    }

    /// Checks `sig` (its text form) over `canonical`, signed by `signer`,
    /// in constant time.
    ///
    /// # Errors
    ///
    /// [`Refusal::NotASignature`] when `sig` is not a signature's text,
    /// [`Refusal::DoesNotVerify`] when it does not verify.
    pub fn check(&self, signer: Signer<'_>, canonical: &str, sig: &str) -> Result<(), Refusal> {
        let sig = Signature::parse(sig).ok_or(Refusal::NotASignature)?;
        hmac::verify(self.of(signer), canonical.as_bytes(), &sig.tag)
            .map_err(|_| Refusal::DoesNotVerify)
    }

    /// Whether `sig` over `canonical` is `signer`'s ([`Key::check`]).
    pub fn verify(&self, signer: Signer<'_>, canonical: &str, sig: &str) -> bool {
        self.check(signer, canonical, sig).is_ok()
    }
}

/// How the key id another machine reports compares with this machine's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyIds<'a> {
    /// The other reports none (a version before it was written).
    Unreported,
    /// This machine has no key to compare with the other's.
    NoneHere(&'a str),
    /// The same key.
    Same(&'a str),
    /// Another key: what one machine signs, the other refuses.
    Differ {
        /// This machine's.
        mine: &'a str,
        /// The other's.
        theirs: &'a str,
    },
}

/// What to do when two machines' keys differ (the words every message that
/// says so ends with).
pub const COPY_ONE_KEY: &str = "copy one key to every machine";

/// Compares this machine's key id (`mine`, when a key loads) with the one
/// another machine reports (`theirs`, when it does): the one rule for
/// every "the keys differ" message.
pub fn compare<'a>(mine: Option<&'a str>, theirs: Option<&'a str>) -> KeyIds<'a> {
    match (mine, theirs) {
        (_, None) => KeyIds::Unreported,
        (None, Some(theirs)) => KeyIds::NoneHere(theirs),
        (Some(mine), Some(theirs)) if mine == theirs => KeyIds::Same(theirs),
        (Some(mine), Some(theirs)) => KeyIds::Differ { mine, theirs },
    }
}

#[cfg(test)]
mod tests {
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
}
