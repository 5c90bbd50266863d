//! Every signature (docs/protocol.md §4, §5, §6.7): what this machine
//! signs with, what it accepts and from whom. The rest of the code signs
//! and verifies through [`Key`] and never sees the scheme, chosen by the
//! [`Auth`] mode: the fleet key (`shared-key`, the default), an
//! HMAC-SHA256 whose text form is 64 hex digits (either case), with its
//! algorithm and key implied; or each machine's own Ed25519 key judged
//! against the roster (`roster`), the document stating `alg` and `keyId`
//! ([`Signed`]); or either, by what the document states (`both`).
//!
//! Verification takes the [`Signer`] a document names (a job's or marker's
//! origin, a result's or heartbeat's target): [`Key::judge`] for documents
//! (their [`Claim`]; [`Key::judge_later`] leaves an Ed25519 curve check
//! to [`Unchecked`], for a listener that lists many jobs at once),
//! [`Key::check`] for what names no algorithm (a GET's
//! header, the root's identity); a job's token is an HMAC made and checked
//! on one machine ([`Key::token`]). A signature's text is
//! parsed only here ([`Signature`]), and a fleet key's short name for
//! messages is its [`Key::key_id`]; whether two machines' keys differ is
//! [`compare`]'s.
//!
//! [`file`](mod@file) loads the key file (and `keygen` writes one): this
//! module sits in its own layer below the documents, so the pure rules
//! above it take a loaded [`Key`] and never read a file themselves.
//!
//! Machine identities (docs/identities.md): [`identity`] holds a machine's
//! Ed25519 and X25519 keys and its identity line, [`roster`] the signed,
//! versioned, expiring list of the fleet's machines, [`store`] their files
//! and this machine's pin, and [`live`] the roster a reader judges with:
//! the last good one, read again when it changes.

use std::fmt;

use ring::hmac;

mod auth;
mod ed25519;
pub mod file;
pub mod identity;
pub mod live;
pub mod own;
pub mod place;
pub mod roster;
pub mod seal;
pub mod store;

pub use auth::Auth;
pub use ed25519::Unchecked;
pub use file::{MAX_KEY_FILE_BYTES, POINT_AT_KEY, generate, judge_file_text};
pub use own::Own;
use own::{Later, Mine};

/// The shortest key accepted, in bytes.
pub const MIN_KEY_BYTES: usize = 32;

/// The bytes of a signature: an HMAC-SHA256 tag.
const TAG_BYTES: usize = 32;

/// What a key id is computed over: the words are the wire's (heartbeats
/// and reasons carry it as `keyFingerprint`), so they never change.
const KEY_ID_TEXT: &[u8] = b"fleet-dispatch key fingerprint";

/// What this machine signs with and accepts, loaded once for its
/// [`Auth`] mode: the fleet key (`shared-key`, `both`: the key file's
/// content with trailing ASCII whitespace trimmed, taken as bytes), this
/// machine's identity (`roster`) and the roster to judge Ed25519 documents
/// against (`roster`, `both`), and in `both` mode this machine's identity
/// once the roster lists it. No secret is ever printed: it hides itself
/// from `Debug`, and no code path writes it anywhere but its own file.
pub struct Key {
    auth: Auth,
    hmac: Option<hmac::Key>,
    own: Option<Mine>,
    roster: Option<live::Live>,
    later: Option<Later>,
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({}, <redacted>)", self.auth.as_str())
    }
}

/// The algorithm word of an Ed25519-signed document.
pub const ED25519: &str = "ed25519";

/// The bytes of an Ed25519 signature.
const ED25519_SIG_BYTES: usize = 64;

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

    /// The Ed25519 signature `text` holds: 128 hex digits, either case.
    fn parse_ed25519(text: &str) -> Option<Signature> {
        if text.len() != 2 * ED25519_SIG_BYTES {
            return None;
        }
        hex::decode(text).ok().map(|tag| Signature { tag })
    }
}

/// How a document says it was signed, beside its `sig`: `alg` and
/// `keyId`, both absent in the shared-key lane (an HMAC with the fleet
/// key), `ed25519` and the signer's key id in the roster's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Signed {
    /// `ed25519`, or none for the fleet key's HMAC.
    pub alg: Option<String>,
    /// The signing key's id on the roster.
    pub key_id: Option<String>,
    /// The signature's text.
    pub sig: String,
}

/// A document's claim to be signed, as a reader found it.
#[derive(Clone, Copy, Debug)]
pub struct Claim<'a> {
    /// The machine the document names as its signer.
    pub signer: &'a str,
    /// Its `alg`, when it has one (an empty text for one that is no string).
    pub alg: Option<&'a str>,
    /// Its `keyId`, when it has one.
    pub key_id: Option<&'a str>,
    /// When the document says it was made: the signer's key must be valid
    /// then, as well as now.
    pub made: Option<time::OffsetDateTime>,
    /// For a job or a marker, the target it is sent to: the signer must be
    /// permitted to send there.
    pub sends_to: Option<&'a str>,
    /// What the signature covers.
    pub canonical: &'a str,
    /// The signature's text.
    pub sig: &'a str,
}

/// Why a signature was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Its text is not a signature's form.
    NotASignature,
    /// It does not verify: the document was edited, or signed with a key
    /// this machine does not accept from its signer.
    DoesNotVerify,
    /// The machine or key id is not on the roster (or was removed).
    UnknownSigner(String),
    /// An Ed25519 signature that does not verify with the key it names.
    Forged(String),
    /// The key is outside its validity window.
    KeyNotValid(String),
    /// The signer may not send to this target.
    NotPermitted(String),
    /// A document signed by an algorithm this mode does not accept.
    AlgNotAllowed(String),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::NotASignature => f.write_str("sig is not 64 hex digits"),
            Refusal::DoesNotVerify => f.write_str(
                "the signature does not verify with this fleet key (edited, or signed with another key)",
            ),
            Refusal::Forged(why)
            | Refusal::UnknownSigner(why)
            | Refusal::KeyNotValid(why)
            | Refusal::NotPermitted(why)
            | Refusal::AlgNotAllowed(why) => f.write_str(why),
        }
    }
}

impl Key {
    /// A fleet key from raw bytes (already trimmed); refuses fewer than
    /// [`MIN_KEY_BYTES`].
    pub fn from_bytes(bytes: &[u8]) -> Option<Key> {
        (bytes.len() >= MIN_KEY_BYTES).then(|| Key {
            auth: Auth::SharedKey,
            hmac: Some(hmac::Key::new(hmac::HMAC_SHA256, bytes)),
            own: None,
            roster: None,
            later: None,
        })
    }

    /// The `roster` mode's key: this machine signs with `own` and judges
    /// documents against `roster`.
    pub fn roster(own: identity::Identity, roster: live::Live) -> Key {
        Key {
            auth: Auth::Roster,
            hmac: None,
            own: Some(Mine::new(own)),
            roster: Some(roster),
            later: None,
        }
    }

    /// The `both` mode's key: `fleet` checks HMAC documents and signs;
    /// `roster` (when an admin key is pinned) judges Ed25519 ones; `own`
    /// signs documents instead while that roster lists it.
    pub fn both(fleet: Key, roster: Option<live::Live>, own: Own) -> Key {
        let (own, later) = match own {
            Own::Loaded(id) => (Some(Mine::new(id)), None),
            Own::Later { path, machine } => (None, Some(Later::new(path, machine))),
            Own::None => (None, None),
        };
        Key {
            auth: Auth::Both,
            roster,
            own,
            later,
            ..fleet
        }
    }

    /// The identity this machine signs documents with: always in `roster`
    /// mode; in `both` only while the good roster lists it (no machine then
    /// refuses it as an unknown signer); never in `shared-key`.
    fn signing_identity(&self) -> Option<&Mine> {
        if self.auth != Auth::Both {
            return self.own.as_ref();
        }
        let live = self.roster.as_ref()?;
        let id = match &self.own {
            Some(id) => id,
            None => self.later.as_ref()?.get(live.generation())?,
        };
        id.listed(live).then_some(id)
    }

    /// The mode this key was loaded for.
    pub fn auth(&self) -> Auth {
        self.auth
    }

    /// The roster this key judges with, when it has one.
    pub fn live(&self) -> Option<&live::Live> {
        self.roster.as_ref()
    }

    /// `Ok` unless this key judges against a roster and holds no good one
    /// (a listener refuses to start then): the `CONFIG` refusal says why.
    ///
    /// # Errors
    ///
    /// [`live::Live::ready`]'s.
    pub fn roster_ready(&self) -> crate::base::error::Result<()> {
        self.roster.as_ref().map_or(Ok(()), live::Live::ready)
    }

    /// This machine's own identity (in `roster` mode, and in `both` once
    /// it is loaded): what opens an envelope sealed to it ([`seal::open`]).
    pub fn identity(&self) -> Option<&identity::Identity> {
        self.own
            .as_ref()
            .or_else(|| self.later.as_ref().and_then(Later::loaded))
            .map(|m| &m.identity)
    }

    /// [`live::Live::sealing_key`] on this key's roster.
    ///
    /// # Errors
    ///
    /// Why there is no key to seal to, naming the machine.
    pub fn sealing_key(&self, machine: &str) -> Result<identity::SealingPublic, String> {
        let roster = self.roster.as_ref();
        roster
            .ok_or_else(|| "this machine holds no roster (--auth roster)".to_string())?
            .sealing_key(machine)
    }

    /// [`live::Live::requires_seal`] on this key's roster; false without.
    pub fn requires_seal(&self, machine: &str) -> bool {
        self.roster
            .as_ref()
            .is_some_and(|r| r.requires_seal(machine))
    }

    /// A number that changes whenever another good roster is taken (0
    /// without one): what was accepted under the old one is judged again.
    pub fn generation(&self) -> u64 {
        self.roster.as_ref().map_or(0, live::Live::generation)
    }

    /// The version of the roster documents are judged against (none
    /// without a good one, and in the shared-key lane).
    pub fn roster_version(&self) -> Option<u64> {
        let roster = self.roster.as_ref()?.current().ok()?;
        Some(roster.version)
    }

    /// A short name for the fleet key, to tell two keys apart in messages:
    /// 8 hex digits of a MAC of a fixed text under the key. Like any output
    /// of the MAC it reveals nothing usable about the key, and 32 bits
    /// make an accidental match between two different keys a
    /// one-in-four-billion event. Empty in `roster` mode: no fleet key.
    pub fn key_id(&self) -> String {
        match &self.hmac {
            Some(k) => hex::encode(&hmac::sign(k, KEY_ID_TEXT).as_ref()[..4]),
            None => String::new(),
        }
    }

    /// This machine's signature over `canonical`, in its text form
    /// (lowercase hex): the fleet key's HMAC when it has one, else its
    /// identity's Ed25519 signature.
    pub fn sign(&self, canonical: &str) -> String {
        match (&self.hmac, &self.own) {
            (Some(k), _) => hex::encode(hmac::sign(k, canonical.as_bytes()).as_ref()),
            (None, Some(id)) => hex::encode(id.signing.sign(canonical.as_bytes())),
            (None, None) => unreachable!("a key signs with the fleet key or an identity"),
        }
    }

    /// A document's signature over `canonical`, by the machine it names
    /// (this one): with `alg` and `keyId` in the roster lane (`roster`, a
    /// listed `both` machine), neither in the shared-key lane.
    pub fn sign_document(&self, canonical: &str) -> Signed {
        match self.signing_identity() {
            Some(id) => Signed {
                alg: Some(ED25519.to_string()),
                key_id: Some(id.signing.key_id().to_string()),
                sig: hex::encode(id.signing.sign(canonical.as_bytes())),
            },
            None => Signed {
                sig: self.sign(canonical),
                ..Signed::default()
            },
        }
    }

    /// Checks `sig` (its text form) over `canonical`, signed by `signer`,
    /// in constant time: a signature no document's `alg` qualifies (a
    /// header, the root's identity).
    ///
    /// # Errors
    ///
    /// [`Refusal::NotASignature`] when `sig` is not a signature's text,
    /// [`Refusal::DoesNotVerify`] when it does not verify.
    pub fn check(&self, signer: Signer<'_>, canonical: &str, sig: &str) -> Result<(), Refusal> {
        if let Some(k) = &self.hmac
            && (self.auth == Auth::SharedKey || sig.len() == 2 * TAG_BYTES)
        {
            let sig = Signature::parse(sig).ok_or(Refusal::NotASignature)?;
            return hmac::verify(k, canonical.as_bytes(), &sig.tag)
                .map_err(|_| Refusal::DoesNotVerify);
        }
        let sig = Signature::parse_ed25519(sig).ok_or(Refusal::NotASignature)?;
        let now = crate::base::clock::now();
        let mut keys: Vec<identity::SigningPublic> =
            self.own.iter().map(|id| id.signing.public()).collect();
        if let Some(body) = self.roster.as_ref().and_then(|r| r.current().ok()) {
            keys.extend(
                body.machines
                    .iter()
                    .filter(|m| match signer {
                        Signer::Machine(name) => m.name.eq_ignore_ascii_case(name),
                        Signer::Unnamed => true,
                    })
                    .flat_map(|m| &m.keys)
                    .filter(|k| roster::key_valid_at(k, now))
                    .filter_map(|k| identity::SigningPublic::parse(&k.ed25519)),
            );
        }
        if keys
            .iter()
            .any(|k| k.verifies(canonical.as_bytes(), &sig.tag))
        {
            Ok(())
        } else {
            Err(Refusal::DoesNotVerify)
        }
    }

    /// Whether `sig` over `canonical` is `signer`'s ([`Key::check`]).
    pub fn verify(&self, signer: Signer<'_>, canonical: &str, sig: &str) -> bool {
        self.check(signer, canonical, sig).is_ok()
    }

    /// The key a job's token is made with: the fleet key when this machine
    /// has one, else its identity's token key
    /// ([`identity::Identity::token_key`]), derived once with the key.
    fn token_key(&self) -> Option<&hmac::Key> {
        self.hmac.as_ref().or(self.own.as_ref().map(|m| &m.token))
    }

    /// A job's token over `text` (docs/protocol.md §7.5): an HMAC-SHA256 in
    /// text form (64 lowercase hex digits) under [`Key::token_key`], made
    /// and checked on this machine only, so no per-job public-key
    /// signature is needed even in `roster` mode.
    pub fn token(&self, text: &str) -> String {
        match self.token_key() {
            Some(k) => hex::encode(hmac::sign(k, text.as_bytes()).as_ref()),
            None => unreachable!("a key holds the fleet key or an identity"),
        }
    }

    /// Whether `token` is [`Key::token`]'s over `text`, checked in
    /// constant time.
    pub fn token_holds(&self, text: &str, token: &str) -> bool {
        match (self.token_key(), Signature::parse(token)) {
            (Some(k), Some(sig)) => hmac::verify(k, text.as_bytes(), &sig.tag).is_ok(),
            _ => false,
        }
    }

    /// Judges a document's signature by the algorithm it states, as this
    /// mode allows: in `shared-key` mode exactly as [`Key::check`] (its
    /// `alg` unread); an HMAC document (no `alg`) by the fleet key, refused
    /// `alg-not-allowed` in `roster` mode; an `ed25519` one against the
    /// roster: its signer and key id listed, the signature verifying, the
    /// key valid when the document was made and now, and the signer
    /// permitted to send to its target.
    ///
    /// # Errors
    ///
    /// The [`Refusal`], each variant a verdict of docs/protocol.md §6.
    pub fn judge(&self, c: &Claim<'_>) -> Result<(), Refusal> {
        let by = Signer::Machine(c.signer);
        match (self.auth, c.alg) {
            (Auth::SharedKey, _) | (Auth::Both, None) => self.check(by, c.canonical, c.sig),
            (Auth::Roster, None) => Err(Refusal::AlgNotAllowed(
                "it is signed with the fleet key (no alg); this machine accepts only ed25519 documents (--auth roster)"
                    .into(),
            )),
            (_, Some(ED25519)) => self.judge_ed25519(c, false).map(drop),
            (_, Some(alg)) => Err(Refusal::AlgNotAllowed(format!(
                "alg {alg:?} is not one this machine accepts (ed25519{})",
                if self.auth == Auth::Both {
                    ", or none for the fleet key"
                } else {
                    ""
                }
            ))),
        }
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
    // An empty id is a machine without a fleet key (`--auth roster`).
    let known = |id: Option<&'a str>| id.filter(|i| !i.is_empty());
    match (known(mine), known(theirs)) {
        (_, None) => KeyIds::Unreported,
        (None, Some(theirs)) => KeyIds::NoneHere(theirs),
        (Some(mine), Some(theirs)) if mine == theirs => KeyIds::Same(theirs),
        (Some(mine), Some(theirs)) => KeyIds::Differ { mine, theirs },
    }
}

#[cfg(test)]
mod tests;
