//! Machine identities (docs/identities.md): a machine's Ed25519 signing key
//! and X25519 key-agreement key, the one-line public form an operator pastes
//! into `roster add`, and the text of the identity file. Pure: the file is
//! read and written by [`super::store`].
//!
//! Every key is written as 64 lowercase hex digits (32 bytes): the same
//! encoding as the fleet key file, and no new codec to audit.

use std::fmt;

use ring::signature::{self, Ed25519KeyPair, KeyPair};
use ring::{digest, hkdf, hmac};

/// The first line of an identity file: what it is, and its format's version.
const IDENTITY_HEADER: &str = "fleet-dispatch identity 1";

/// The first line of an admin key file.
const ADMIN_HEADER: &str = "fleet-dispatch admin key 1";

/// What a key id is computed over, before the public key: fixed, so ids
/// never change.
const KEY_ID_TEXT: &[u8] = b"fleet-dispatch identity key id\0";

/// What the job token key is derived for (HKDF's salt): fixed, so a job's
/// listener and the `mcp` server it starts derive the same key.
const TOKEN_KEY_TEXT: &[u8] = b"fleet-dispatch job token key";

/// Bytes of a key: Ed25519 seeds and public keys, X25519 secrets and
/// public keys are all 32.
const KEY_BYTES: usize = 32;

/// A public Ed25519 key, `ed25519:<hex>` in text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SigningPublic(pub [u8; KEY_BYTES]);

/// A public X25519 key, `x25519:<hex>` in text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SealingPublic(pub [u8; KEY_BYTES]);

impl SigningPublic {
    /// Parses `ed25519:<64 hex digits>`.
    pub fn parse(text: &str) -> Option<SigningPublic> {
        key_bytes(text.strip_prefix("ed25519:")?).map(SigningPublic)
    }

    /// The short fingerprint that names this key in rosters and messages:
    /// 12 hex digits of a SHA-256 over a fixed text and the key.
    pub fn key_id(&self) -> String {
        let mut ctx = digest::Context::new(&digest::SHA256);
        ctx.update(KEY_ID_TEXT);
        ctx.update(&self.0);
        hex::encode(&ctx.finish().as_ref()[..6])
    }

    /// Whether `sig` is this key's Ed25519 signature over `message`.
    pub fn verifies(&self, message: &[u8], sig: &[u8]) -> bool {
        signature::UnparsedPublicKey::new(&signature::ED25519, &self.0)
            .verify(message, sig)
            .is_ok()
    }
}

impl fmt::Display for SigningPublic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ed25519:{}", hex::encode(self.0))
    }
}

impl SealingPublic {
    /// Parses `x25519:<64 hex digits>`.
    pub fn parse(text: &str) -> Option<SealingPublic> {
        key_bytes(text.strip_prefix("x25519:")?).map(SealingPublic)
    }
}

impl fmt::Display for SealingPublic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "x25519:{}", hex::encode(self.0))
    }
}

/// 32 bytes from exactly 64 hex digits.
fn key_bytes(text: &str) -> Option<[u8; KEY_BYTES]> {
    if text.len() != 2 * KEY_BYTES {
        return None;
    }
    hex::decode(text).ok()?.try_into().ok()
}

/// A machine's public identity: `NAME ed25519:<hex> x25519:<hex>`, one line
/// safe to paste anywhere.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdentityLine {
    /// The machine's name.
    pub name: String,
    /// Its signing key.
    pub ed25519: SigningPublic,
    /// Its key for sealed documents.
    pub x25519: SealingPublic,
}

impl IdentityLine {
    /// Parses an identity line (surrounding whitespace ignored); says what
    /// is wrong with one that is not.
    pub fn parse(text: &str) -> Result<IdentityLine, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let [name, ed, x] = words[..] else {
            return Err(format!(
                "an identity line has 3 words, `NAME ed25519:<key> x25519:<key>`; this one has {}",
                words.len()
            ));
        };
        crate::base::names::Machine::parse(name, "machine name").map_err(|e| e.message)?;
        let ed25519 = SigningPublic::parse(ed)
            .ok_or_else(|| format!("`{ed}` is not `ed25519:` and 64 hex digits"))?;
        let x25519 = SealingPublic::parse(x)
            .ok_or_else(|| format!("`{x}` is not `x25519:` and 64 hex digits"))?;
        Ok(IdentityLine {
            name: name.to_string(),
            ed25519,
            x25519,
        })
    }
}

impl fmt::Display for IdentityLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.name, self.ed25519, self.x25519)
    }
}

/// A machine's secret keys and name, as its identity file holds them. It
/// hides itself from `Debug`.
pub struct Identity {
    name: String,
    seed: [u8; KEY_BYTES],
    x25519: [u8; KEY_BYTES],
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Identity({}, <redacted>)", self.name)
    }
}

impl Identity {
    /// A new identity for machine `name` from 64 random bytes.
    pub fn new(name: &str, random: [u8; 2 * KEY_BYTES]) -> Identity {
        let (seed, x) = random.split_at(KEY_BYTES);
        Identity {
            name: name.to_string(),
            seed: seed.try_into().expect("32 bytes"),
            x25519: x.try_into().expect("32 bytes"),
        }
    }

    /// The public line.
    pub fn line(&self) -> IdentityLine {
        let secret = x25519_dalek::StaticSecret::from(self.x25519);
        IdentityLine {
            name: self.name.clone(),
            ed25519: signing_public(&self.seed),
            x25519: SealingPublic(*x25519_dalek::PublicKey::from(&secret).as_bytes()),
        }
    }

    /// The X25519 shared secret with `their` public key (for
    /// [`super::seal::open`]; the secret key never leaves this type).
    pub(super) fn agree(&self, their: &[u8; KEY_BYTES]) -> x25519_dalek::SharedSecret {
        x25519_dalek::StaticSecret::from(self.x25519)
            .diffie_hellman(&x25519_dalek::PublicKey::from(*their))
    }

    /// The machine's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its Ed25519 signature over `message`.
    pub fn sign(&self, message: &[u8]) -> Vec<u8> {
        pair(&self.seed).sign(message).as_ref().to_vec()
    }

    /// The identity file's text.
    pub fn to_file_text(&self) -> String {
        format!(
            "{IDENTITY_HEADER}\nname {}\ned25519-seed {}\nx25519-secret {}\n",
            self.name,
            hex::encode(self.seed),
            hex::encode(self.x25519)
        )
    }

    /// An identity from its file's text, or why the text is none.
    pub fn from_file_text(text: &str) -> Result<Identity, String> {
        let fields = fields(
            text,
            IDENTITY_HEADER,
            &["name", "ed25519-seed", "x25519-secret"],
        )?;
        crate::base::names::Machine::parse(fields[0], "machine name").map_err(|e| e.message)?;
        let key = |i: usize| {
            key_bytes(fields[i]).ok_or_else(|| {
                format!(
                    "its {} is not 64 hex digits",
                    ["name", "ed25519-seed", "x25519-secret"][i]
                )
            })
        };
        Ok(Identity {
            name: fields[0].to_string(),
            seed: key(1)?,
            x25519: key(2)?,
        })
    }
}

/// An identity's signing half, derived once: what signs document after
/// document without deriving the key pair and its id each time.
pub struct Signing {
    pair: Ed25519KeyPair,
    public: SigningPublic,
    key_id: String,
}

impl Signing {
    /// The public key.
    pub fn public(&self) -> SigningPublic {
        self.public
    }

    /// The key id.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// The Ed25519 signature over `message`.
    pub fn sign(&self, message: &[u8]) -> Vec<u8> {
        self.pair.sign(message).as_ref().to_vec()
    }
}

impl Identity {
    /// The HMAC-SHA256 key its jobs' tokens are made with: HKDF-SHA256 of
    /// the Ed25519 seed, so only a holder of the identity file makes one
    /// (as with a signature), at the cost of an HMAC rather than an
    /// Ed25519 signature per job. No document is ever signed with it.
    pub fn token_key(&self) -> hmac::Key {
        hkdf::Salt::new(hkdf::HKDF_SHA256, TOKEN_KEY_TEXT)
            .extract(&self.seed)
            .expand(&[b"job-token"], hmac::HMAC_SHA256)
            .expect("32 bytes is a valid HKDF-SHA256 length")
            .into()
    }

    /// Its signing half ([`Signing`]).
    pub fn signing(&self) -> Signing {
        let pair = pair(&self.seed);
        let public = SigningPublic(pair.public_key().as_ref().try_into().expect("32 bytes"));
        Signing {
            key_id: public.key_id(),
            public,
            pair,
        }
    }
}

/// The roster's signing key, as the admin key file holds it.
pub struct AdminKey {
    seed: [u8; KEY_BYTES],
}

impl fmt::Debug for AdminKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AdminKey(<redacted>)")
    }
}

impl AdminKey {
    /// An admin key from 32 random bytes.
    pub fn new(seed: [u8; KEY_BYTES]) -> AdminKey {
        AdminKey { seed }
    }

    /// Its public key, the one every machine pins.
    pub fn public(&self) -> SigningPublic {
        signing_public(&self.seed)
    }

    /// Its Ed25519 signature over `message`.
    pub fn sign(&self, message: &[u8]) -> Vec<u8> {
        pair(&self.seed).sign(message).as_ref().to_vec()
    }

    /// The admin key file's text.
    pub fn to_file_text(&self) -> String {
        format!("{ADMIN_HEADER}\ned25519-seed {}\n", hex::encode(self.seed))
    }

    /// An admin key from its file's text, or why the text is none.
    pub fn from_file_text(text: &str) -> Result<AdminKey, String> {
        let fields = fields(text, ADMIN_HEADER, &["ed25519-seed"])?;
        let seed = key_bytes(fields[0]).ok_or("its ed25519-seed is not 64 hex digits")?;
        Ok(AdminKey { seed })
    }
}

/// The Ed25519 key pair of a seed: any 32 bytes are a valid seed.
fn pair(seed: &[u8; KEY_BYTES]) -> Ed25519KeyPair {
    Ed25519KeyPair::from_seed_unchecked(seed).expect("any 32 bytes are an Ed25519 seed")
}

fn signing_public(seed: &[u8; KEY_BYTES]) -> SigningPublic {
    let p = pair(seed);
    SigningPublic(p.public_key().as_ref().try_into().expect("32 bytes"))
}

/// The values of a key file's `name value` lines, in the order `names`
/// gives, after its `header` line; nothing else is allowed.
fn fields<'t>(text: &'t str, header: &str, names: &[&str]) -> Result<Vec<&'t str>, String> {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    if lines.next() != Some(header) {
        return Err(format!("its first line is not `{header}`"));
    }
    let mut values = Vec::new();
    for name in names {
        let line = lines
            .next()
            .ok_or_else(|| format!("it has no `{name}` line"))?;
        match line.split_once(' ') {
            Some((n, v)) if n == *name => values.push(v.trim()),
            _ => {
                return Err(format!(
                    "its line `{}…` is not `{name} <value>`",
                    line.chars().take(16).collect::<String>()
                ));
            }
        }
    }
    if lines.next().is_some() {
        return Err("it has lines after its last key".to_string());
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_round_trips_through_its_file_and_line() {
        let id = Identity::new("PC", [7; 64]);
        let back = Identity::from_file_text(&id.to_file_text()).unwrap();
        assert_eq!(back.line(), id.line());
        let line = id.line().to_string();
        assert_eq!(IdentityLine::parse(&line).unwrap(), id.line());
        assert!(!format!("{id:?}").contains("0707"));
    }

    #[test]
    fn bad_lines_are_refused_with_the_reason() {
        let line = Identity::new("PC", [7; 64]).line().to_string();
        assert!(
            IdentityLine::parse(&line[..line.len() - 1])
                .unwrap_err()
                .contains("x25519")
        );
        assert!(IdentityLine::parse("PC").unwrap_err().contains("3 words"));
        let swapped = line.replace("ed25519:", "x").replace("x25519:", "ed25519:");
        assert!(IdentityLine::parse(&swapped).is_err());
    }

    #[test]
    fn admin_signatures_verify_only_unchanged() {
        let k = AdminKey::new([3; 32]);
        let sig = k.sign(b"roster");
        assert!(k.public().verifies(b"roster", &sig));
        assert!(!k.public().verifies(b"rosteR", &sig));
        assert!(!AdminKey::new([4; 32]).public().verifies(b"roster", &sig));
        assert_eq!(k.public().key_id().len(), 12);
    }
}
