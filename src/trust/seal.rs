//! Sealed envelopes (docs/identities.md, "Sealed jobs"): bytes encrypted to
//! one machine's X25519 key so that only that machine can read them — not
//! the sync provider, not a folder writer, not another machine of the
//! fleet. Pure: the caller brings the randomness and the context.
//!
//! The construction is the usual one for a sealed box, from `ring` and
//! `x25519-dalek` only: a fresh ephemeral X25519 key per envelope; the
//! shared secret with the recipient's key (refused when not contributory,
//! so a low-order point cannot force a known key); HKDF-SHA256 with the
//! ephemeral and recipient public keys as salt and a fixed label with the
//! caller's context as info; ChaCha20-Poly1305 under that key, the context
//! again as associated data. A key is used for one message only, so the
//! nonce is zero. The context binds an envelope to where it belongs (a
//! job's id, target and origin): moved into another job, it does not open.
//!
//! In a document an envelope is one JSON object:
//! `{"alg": "x25519-hkdf-sha256-chacha20poly1305", "to": "<key id>",
//! "epk": "<64 hex>", "ct": "<hex>"}`, `to` naming the recipient's X25519
//! key by its id so a machine can tell "sealed to my old key" from
//! "tampered".

use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};
use ring::digest;
use ring::hkdf;
use serde_json::{Map, Value};

use super::identity::{Identity, SealingPublic};

/// The one algorithm an envelope names.
pub const ALG: &str = "x25519-hkdf-sha256-chacha20poly1305";

/// The HKDF label, before the caller's context: fixed, so a key derived
/// here is never one derived for another purpose.
const LABEL: &[u8] = b"fleet-dispatch seal 1\0";

/// What a key id of an X25519 key is computed over, before the key.
const KEY_ID_TEXT: &[u8] = b"fleet-dispatch sealing key id\0";

/// The longest ciphertext an envelope may hold, in bytes: a job's payload
/// or a result's detail is bounded well below this by the documents' own
/// size limits; the bound keeps a hostile envelope from costing more.
pub const MAX_SEALED_BYTES: usize = 4 << 20;

/// An envelope: the ephemeral public key, the ciphertext with its tag, and
/// the id of the key it is sealed to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sealed {
    /// The recipient key's id ([`sealing_key_id`]).
    pub to: String,
    /// The ephemeral X25519 public key.
    pub epk: [u8; 32],
    /// The ciphertext followed by its 16-byte tag.
    pub ct: Vec<u8>,
}

/// Why an envelope did not open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unsealed {
    /// It is sealed to another key (its `to`).
    NotForMe(String),
    /// The ephemeral key is a low-order point: no secret is shared.
    WeakKey,
    /// The tag does not verify: tampered, moved to another context, or
    /// sealed to another key that claims this one's id.
    Tampered,
}

impl std::fmt::Display for Unsealed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unsealed::NotForMe(to) => write!(f, "sealed to key {to}, not this machine's"),
            Unsealed::WeakKey => f.write_str("its ephemeral key shares no secret"),
            Unsealed::Tampered => f.write_str(
                "it does not open: changed after sealing, or moved from another document",
            ),
        }
    }
}

/// The short id of an X25519 public key: 12 hex digits of a SHA-256 over a
/// fixed text and the key.
pub fn sealing_key_id(key: &SealingPublic) -> String {
    let mut ctx = digest::Context::new(&digest::SHA256);
    ctx.update(KEY_ID_TEXT);
    ctx.update(&key.0);
    hex::encode(&ctx.finish().as_ref()[..6])
}

/// The AEAD key for one envelope.
fn derive(shared: &[u8; 32], epk: &[u8; 32], recipient: &[u8; 32], context: &[u8]) -> LessSafeKey {
    let mut salt = [0u8; 64];
    salt[..32].copy_from_slice(epk);
    salt[32..].copy_from_slice(recipient);
    let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, &salt).extract(shared);
    let info = [LABEL, context];
    let okm = prk
        .expand(&info, &aead::CHACHA20_POLY1305)
        .expect("32 bytes is within HKDF-SHA256's output bound");
    LessSafeKey::new(UnboundKey::from(okm))
}

/// Seals `plaintext` to `recipient` within `context`, with `random` as the
/// ephemeral secret (32 fresh random bytes: never used twice).
pub fn seal(
    recipient: &SealingPublic,
    context: &[u8],
    plaintext: &[u8],
    random: [u8; 32],
) -> Sealed {
    let secret = x25519_dalek::StaticSecret::from(random);
    let epk = *x25519_dalek::PublicKey::from(&secret).as_bytes();
    let shared = secret.diffie_hellman(&x25519_dalek::PublicKey::from(recipient.0));
    let key = derive(shared.as_bytes(), &epk, &recipient.0, context);
    let mut ct = plaintext.to_vec();
    key.seal_in_place_append_tag(
        Nonce::assume_unique_for_key([0; 12]),
        Aad::from(context),
        &mut ct,
    )
    .expect("a ChaCha20-Poly1305 message under 256 GiB seals");
    Sealed {
        to: sealing_key_id(recipient),
        epk,
        ct,
    }
}

/// Opens `sealed` with this machine's identity within `context`.
pub fn open(identity: &Identity, sealed: &Sealed, context: &[u8]) -> Result<Vec<u8>, Unsealed> {
    let mine = identity.line().x25519;
    if sealed.to != sealing_key_id(&mine) {
        return Err(Unsealed::NotForMe(sealed.to.clone()));
    }
    let shared = identity.agree(&sealed.epk);
    if !shared.was_contributory() {
        return Err(Unsealed::WeakKey);
    }
    let key = derive(shared.as_bytes(), &sealed.epk, &mine.0, context);
    let mut buf = sealed.ct.clone();
    let plain = key
        .open_in_place(
            Nonce::assume_unique_for_key([0; 12]),
            Aad::from(context),
            &mut buf,
        )
        .map_err(|_| Unsealed::Tampered)?;
    Ok(plain.to_vec())
}

impl Sealed {
    /// The envelope as the JSON object a document holds.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("alg".into(), ALG.into());
        m.insert("to".into(), self.to.clone().into());
        m.insert("epk".into(), hex::encode(self.epk).into());
        m.insert("ct".into(), hex::encode(&self.ct).into());
        Value::Object(m)
    }

    /// An envelope from a document's JSON value, or what is wrong with it
    /// (for a refusal that names the field).
    pub fn from_json(value: &Value) -> Result<Sealed, String> {
        let obj = value
            .as_object()
            .ok_or("a sealed envelope must be a JSON object")?;
        if let Some(extra) = obj
            .keys()
            .find(|k| !["alg", "to", "epk", "ct"].contains(&k.as_str()))
        {
            return Err(format!("a sealed envelope has no field {extra:?}"));
        }
        let field = |name: &str| {
            obj.get(name)
                .and_then(Value::as_str)
                .ok_or_else(|| format!("a sealed envelope needs {name:?} as a string"))
        };
        let alg = field("alg")?;
        if alg != ALG {
            return Err(format!(
                "a sealed envelope's alg must be {ALG:?}, not {:?}",
                alg.chars().take(64).collect::<String>()
            ));
        }
        let to = field("to")?;
        if to.len() != 12
            || !to
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(
                "a sealed envelope's to must be a key id of 12 lowercase hex digits".into(),
            );
        }
        let epk_text = field("epk")?;
        let mut epk = [0u8; 32];
        if epk_text.len() != 64 || hex::decode_to_slice(epk_text, &mut epk).is_err() {
            return Err("a sealed envelope's epk must be 64 hex digits".into());
        }
        let ct_text = field("ct")?;
        if ct_text.len() > 2 * MAX_SEALED_BYTES {
            return Err(format!(
                "a sealed envelope's ct is over {MAX_SEALED_BYTES} bytes"
            ));
        }
        let ct = hex::decode(ct_text).map_err(|_| "a sealed envelope's ct must be hex")?;
        if ct.len() < aead::CHACHA20_POLY1305.tag_len() {
            return Err("a sealed envelope's ct is shorter than its tag".into());
        }
        Ok(Sealed {
            to: to.to_string(),
            epk,
            ct,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(name: &str, fill: u8) -> Identity {
        Identity::new(name, [fill; 64])
    }

    #[test]
    fn what_is_sealed_to_a_machine_opens_there_and_only_there() {
        let pc = identity("PC", 7);
        let laptop = identity("LAPTOP", 9);
        let sealed = seal(
            &pc.line().x25519,
            b"job|a|PC|LAPTOP",
            b"secret argv",
            [3; 32],
        );
        assert_eq!(
            open(&pc, &sealed, b"job|a|PC|LAPTOP").unwrap(),
            b"secret argv"
        );
        assert!(!sealed.ct.windows(6).any(|w| w == b"secret"));
        assert_eq!(
            open(&laptop, &sealed, b"job|a|PC|LAPTOP"),
            Err(Unsealed::NotForMe(sealed.to.clone()))
        );
    }

    #[test]
    fn an_envelope_moved_to_another_context_or_changed_does_not_open() {
        let pc = identity("PC", 7);
        let sealed = seal(&pc.line().x25519, b"job|a|PC|LAPTOP", b"argv", [3; 32]);
        assert_eq!(
            open(&pc, &sealed, b"job|b|PC|LAPTOP"),
            Err(Unsealed::Tampered)
        );
        let mut flipped = sealed.clone();
        flipped.ct[0] ^= 1;
        assert_eq!(
            open(&pc, &flipped, b"job|a|PC|LAPTOP"),
            Err(Unsealed::Tampered)
        );
        let mut other_epk = sealed.clone();
        other_epk.epk[5] ^= 1;
        assert_eq!(
            open(&pc, &other_epk, b"job|a|PC|LAPTOP"),
            Err(Unsealed::Tampered)
        );
    }

    #[test]
    fn a_low_order_ephemeral_key_is_refused() {
        let pc = identity("PC", 7);
        let mut sealed = seal(&pc.line().x25519, b"c", b"argv", [3; 32]);
        sealed.epk = [0; 32];
        assert_eq!(open(&pc, &sealed, b"c"), Err(Unsealed::WeakKey));
    }

    #[test]
    fn two_envelopes_of_one_text_differ() {
        let pc = identity("PC", 7);
        let a = seal(&pc.line().x25519, b"c", b"argv", [3; 32]);
        let b = seal(&pc.line().x25519, b"c", b"argv", [4; 32]);
        assert_ne!(a.ct, b.ct);
        assert_ne!(a.epk, b.epk);
    }

    #[test]
    fn the_json_form_round_trips_and_refuses_what_is_not_an_envelope() {
        let pc = identity("PC", 7);
        let sealed = seal(&pc.line().x25519, b"c", b"argv", [3; 32]);
        let json = sealed.to_json();
        assert_eq!(Sealed::from_json(&json).unwrap(), sealed);
        let bad = |edit: &dyn Fn(&mut Map<String, Value>)| {
            let mut v = json.as_object().unwrap().clone();
            edit(&mut v);
            Sealed::from_json(&Value::Object(v)).unwrap_err()
        };
        assert!(
            bad(&|v| {
                v.insert("alg".into(), "none".into());
            })
            .contains("alg")
        );
        assert!(
            bad(&|v| {
                v.insert("epk".into(), "00".into());
            })
            .contains("epk")
        );
        assert!(
            bad(&|v| {
                v.insert("ct".into(), "00".into());
            })
            .contains("tag")
        );
        assert!(
            bad(&|v| {
                v.insert("ct".into(), "zz".into());
            })
            .contains("hex")
        );
        assert!(
            bad(&|v| {
                v.insert("to".into(), "PC".into());
            })
            .contains("key id")
        );
        assert!(
            bad(&|v| {
                v.insert("extra".into(), 1.into());
            })
            .contains("extra")
        );
        assert!(
            bad(&|v| {
                v.remove("ct");
            })
            .contains("ct")
        );
        assert!(Sealed::from_json(&Value::from("x")).is_err());
    }
}
