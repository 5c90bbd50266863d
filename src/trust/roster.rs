//! The roster (docs/identities.md): which machines belong to the fleet,
//! with which keys, valid when, and what each may send; signed by the admin
//! key, versioned and expiring. Pure rules over values: the canonical form
//! the signature covers, the verdict on a roster a machine reads, and the
//! edits the admin makes. [`super::store`] reads and publishes the file.
//!
//! The signature covers the compact JSON of every field but `sig`, in the
//! order of [`Body`]'s fields, so whitespace in the file does not matter
//! and any edited value does.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;

use super::identity::{AdminKey, IdentityLine, SigningPublic};

/// The value of `format`: what the file is and its version.
pub const FORMAT: &str = "fleet-dispatch roster 1";

/// The largest roster read, in bytes.
pub const MAX_ROSTER_BYTES: u64 = 1 << 20;

/// How long a roster is valid when `--expires` is not given.
pub const DEFAULT_EXPIRY: Duration = Duration::from_secs(90 * 24 * 3600);

/// How long an old key stays valid after `rotate` when `--overlap` is not
/// given.
pub const DEFAULT_OVERLAP: Duration = Duration::from_secs(24 * 3600);

/// Everything the admin signs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Body {
    /// Always [`FORMAT`].
    pub format: String,
    /// Bumped by every edit; a reader refuses one lower than it has seen.
    pub version: u64,
    /// When this version was signed.
    pub issued_at: String,
    /// After this the roster is refused until `roster renew`.
    pub expires_at: String,
    /// The admin's public key, `ed25519:<hex>`: the one that must sign.
    pub admin: String,
    /// The fleet's machines, by name.
    pub machines: Vec<Entry>,
}

/// One machine of the roster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Entry {
    /// Its name.
    pub name: String,
    /// The targets it may send jobs and markers to; `*` for any.
    pub may_send: Vec<String>,
    /// Jobs to it must be sealed.
    pub require_seal: bool,
    /// Its keys, oldest first.
    pub keys: Vec<RosterKey>,
}

/// One key of a machine and its validity window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RosterKey {
    /// The short fingerprint of `ed25519`.
    pub key_id: String,
    /// `ed25519:<hex>`.
    pub ed25519: String,
    /// `x25519:<hex>`.
    pub x25519: String,
    /// Valid from this moment.
    pub valid_from: String,
    /// Valid until this moment; `null` while it is the current key.
    pub valid_until: Option<String>,
}

/// The file: the body with the admin's signature, `ed25519:<128 hex>`, last.
#[derive(Serialize)]
struct Signed<'a> {
    #[serde(flatten)]
    body: &'a Body,
    sig: String,
}

/// Why a roster is not good.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// It is not a roster file.
    Malformed(String),
    /// It names another admin key than the pinned one.
    OtherAdmin {
        /// The key the roster names.
        named: String,
        /// The key this machine pins.
        pinned: String,
    },
    /// Its signature does not verify with the pinned admin key.
    Forged {
        /// The version it claims.
        version: u64,
    },
    /// Its version is lower than one this machine has seen.
    RolledBack {
        /// Its version.
        version: u64,
        /// The highest version seen here.
        seen: u64,
    },
    /// It has expired.
    Expired {
        /// Its version.
        version: u64,
        /// When it expired.
        at: String,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Malformed(why) => write!(f, "not a roster: {why}"),
            Refusal::OtherAdmin { named, pinned } => write!(
                f,
                "signed by another admin key: it names {named}, this machine pins {pinned}"
            ),
            Refusal::Forged { version } => write!(
                f,
                "bad signature: version {version} does not verify with the pinned admin key (edited after signing)"
            ),
            Refusal::RolledBack { version, seen } => write!(
                f,
                "rolled back: version {version} is lower than version {seen}, already seen here"
            ),
            Refusal::Expired { version, at } => {
                write!(f, "expired: version {version} expired at {at}")
            }
        }
    }
}

/// The bytes the admin's signature covers.
pub fn canonical(body: &Body) -> Vec<u8> {
    serde_json::to_vec(body).expect("a roster serializes")
}

/// The roster file's text: `body` signed with `admin`.
pub fn sign(body: &Body, admin: &AdminKey) -> Vec<u8> {
    let sig = format!("ed25519:{}", hex::encode(admin.sign(&canonical(body))));
    let mut text = serde_json::to_vec_pretty(&Signed { body, sig }).expect("a roster serializes");
    text.push(b'\n');
    text
}

/// Parses a roster file: its body and signature bytes, checked for form only.
pub fn parse(bytes: &[u8]) -> Result<(Body, Vec<u8>), Refusal> {
    let bad = |why: String| Refusal::Malformed(why);
    let mut value: Value =
        serde_json::from_slice(bytes).map_err(|e| bad(format!("not JSON ({e})")))?;
    let sig = value
        .as_object_mut()
        .ok_or_else(|| bad("not a JSON object".into()))?
        .remove("sig")
        .ok_or_else(|| bad("no `sig`".into()))?;
    let sig = sig
        .as_str()
        .and_then(|s| s.strip_prefix("ed25519:"))
        .and_then(|s| hex::decode(s).ok())
        .filter(|s| s.len() == 64)
        .ok_or_else(|| bad("`sig` is not `ed25519:` and 128 hex digits".into()))?;
    let body: Body = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
    if body.format != FORMAT {
        return Err(bad(format!("format {:?}, not {FORMAT:?}", body.format)));
    }
    for t in [&body.issued_at, &body.expires_at] {
        crate::base::clock::parse(t).ok_or_else(|| bad(format!("{t:?} is not a time")))?;
    }
    Ok((body, sig))
}

/// The verdict on a roster read by a machine that pins `pin` and has seen
/// version `seen` (0 for none) at `now`: its signature first, then its
/// version, then its expiry. `expiry` false skips the last (the admin
/// edits, and renews, an expired roster).
pub fn verify(
    bytes: &[u8],
    pin: &SigningPublic,
    seen: u64,
    now: OffsetDateTime,
    expiry: bool,
) -> Result<Body, Refusal> {
    let (body, sig) = parse(bytes)?;
    if SigningPublic::parse(&body.admin) != Some(*pin) {
        return Err(Refusal::OtherAdmin {
            named: body.admin.clone(),
            pinned: pin.to_string(),
        });
    }
    if !pin.verifies(&canonical(&body), &sig) {
        return Err(Refusal::Forged {
            version: body.version,
        });
    }
    if body.version < seen {
        return Err(Refusal::RolledBack {
            version: body.version,
            seen,
        });
    }
    let expires = crate::base::clock::parse(&body.expires_at).expect("checked by parse");
    if expiry && now >= expires {
        return Err(Refusal::Expired {
            version: body.version,
            at: body.expires_at,
        });
    }
    Ok(body)
}

/// The first roster: version 1, no machines, signed by `admin`.
pub fn first(admin: &AdminKey, now: OffsetDateTime, expires: Duration) -> Body {
    Body {
        format: FORMAT.to_string(),
        version: 1,
        issued_at: crate::base::clock::format(now),
        expires_at: crate::base::clock::format(now + expires),
        admin: admin.public().to_string(),
        machines: Vec::new(),
    }
}

/// An edit the admin makes; each yields the next version.
#[derive(Clone, Debug)]
pub enum Edit {
    /// A new machine with its first key.
    Add {
        /// Its name and public keys.
        line: IdentityLine,
        /// The targets it may send to, or `*`.
        may_send: Vec<String>,
        /// Jobs to it must be sealed.
        require_seal: bool,
    },
    /// A machine gone, or only one of its keys.
    Remove {
        /// The machine.
        name: String,
        /// Only this key of it.
        key_id: Option<String>,
    },
    /// A machine's new key; its other keys end after `overlap`.
    Rotate {
        /// The machine's new identity line.
        line: IdentityLine,
        /// How long its old keys stay valid.
        overlap: Duration,
    },
    /// Only a new expiry.
    Renew,
}

/// `body` after `edit` at `now`, its version bumped and its expiry `expires`
/// from now when given (kept otherwise); or why the edit cannot be made.
pub fn apply(
    mut body: Body,
    edit: Edit,
    now: OffsetDateTime,
    expires: Option<Duration>,
) -> Result<Body, String> {
    let stamp = crate::base::clock::format(now);
    let key = |line: &IdentityLine| RosterKey {
        key_id: line.ed25519.key_id(),
        ed25519: line.ed25519.to_string(),
        x25519: line.x25519.to_string(),
        valid_from: stamp.clone(),
        valid_until: None,
    };
    let uses = |b: &Body, line: &IdentityLine| {
        b.machines
            .iter()
            .flat_map(|m| m.keys.iter().map(move |k| (m, k)))
            .find(|(_, k)| k.ed25519 == line.ed25519.to_string())
            .map(|(m, k)| format!("key {} is already {}'s", k.key_id, m.name))
    };
    match edit {
        Edit::Add {
            line,
            may_send,
            require_seal,
        } => {
            if body.machines.iter().any(|m| m.name == line.name) {
                return Err(format!(
                    "{} is already on the roster; use `roster rotate` to give it a new key",
                    line.name
                ));
            }
            if let Some(why) = uses(&body, &line) {
                return Err(why);
            }
            body.machines.push(Entry {
                name: line.name.clone(),
                may_send,
                require_seal,
                keys: vec![key(&line)],
            });
        }
        Edit::Remove { name, key_id } => {
            let at = position(&body, &name)?;
            match key_id {
                None => {
                    body.machines.remove(at);
                }
                Some(id) => {
                    let keys = &mut body.machines[at].keys;
                    let before = keys.len();
                    keys.retain(|k| k.key_id != id);
                    if keys.len() == before {
                        return Err(format!("{name} has no key {id} on the roster"));
                    }
                    if keys.is_empty() {
                        body.machines.remove(at);
                    }
                }
            }
        }
        Edit::Rotate { line, overlap } => {
            let at = position(&body, &line.name)?;
            if let Some(why) = uses(&body, &line) {
                return Err(why);
            }
            let until = crate::base::clock::format(now + overlap);
            for k in &mut body.machines[at].keys {
                let ends_later = k
                    .valid_until
                    .as_deref()
                    .and_then(crate::base::clock::parse)
                    .is_none_or(|u| u > now + overlap);
                if ends_later {
                    k.valid_until = Some(until.clone());
                }
            }
            body.machines[at].keys.push(key(&line));
        }
        Edit::Renew => {}
    }
    body.version += 1;
    body.issued_at = stamp;
    if let Some(d) = expires {
        body.expires_at = crate::base::clock::format(now + d);
    }
    Ok(body)
}

fn position(body: &Body, name: &str) -> Result<usize, String> {
    body.machines
        .iter()
        .position(|m| m.name == name)
        .ok_or_else(|| format!("{name} is not on the roster"))
}

/// Whether `key` is valid at `at`: within `[validFrom, validUntil)`.
pub fn key_valid_at(key: &RosterKey, at: OffsetDateTime) -> bool {
    let from = crate::base::clock::parse(&key.valid_from);
    let until = key.valid_until.as_deref().map(crate::base::clock::parse);
    from.is_some_and(|f| f <= at) && until.is_none_or(|u| u.is_some_and(|u| at < u))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trust::identity::Identity;

    fn t(secs: i64) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_800_000_000 + secs).unwrap()
    }

    fn admin() -> AdminKey {
        AdminKey::new([1; 32])
    }

    fn added(name: &str, seed: u8) -> Body {
        let edit = Edit::Add {
            line: Identity::new(name, [seed; 64]).line(),
            may_send: vec!["*".into()],
            require_seal: false,
        };
        apply(first(&admin(), t(0), DEFAULT_EXPIRY), edit, t(1), None).unwrap()
    }

    #[test]
    fn a_signed_roster_verifies_and_an_edited_one_does_not() {
        let text = sign(&added("PC", 9), &admin());
        let pin = admin().public();
        assert_eq!(verify(&text, &pin, 2, t(2), true).unwrap().version, 2);
        let edited = String::from_utf8(text).unwrap().replace("\"PC\"", "\"PD\"");
        assert_eq!(
            verify(edited.as_bytes(), &pin, 0, t(2), true),
            Err(Refusal::Forged { version: 2 })
        );
    }

    #[test]
    fn rollback_expiry_and_other_admins_are_refused_by_name() {
        let text = sign(&added("PC", 9), &admin());
        let pin = admin().public();
        assert!(matches!(
            verify(&text, &pin, 3, t(2), true),
            Err(Refusal::RolledBack {
                version: 2,
                seen: 3
            })
        ));
        let late = t(0) + DEFAULT_EXPIRY;
        assert!(matches!(
            verify(&text, &pin, 0, late, true),
            Err(Refusal::Expired { .. })
        ));
        assert!(verify(&text, &pin, 0, late, false).is_ok());
        let other = AdminKey::new([2; 32]).public();
        assert!(matches!(
            verify(&text, &other, 0, t(2), true),
            Err(Refusal::OtherAdmin { .. })
        ));
    }

    #[test]
    fn rotate_ends_the_old_key_after_the_overlap() {
        let line = Identity::new("PC", [8; 64]).line();
        let overlap = Duration::from_secs(60);
        let b = apply(added("PC", 9), Edit::Rotate { line, overlap }, t(10), None).unwrap();
        let keys = &b.machines[0].keys;
        assert_eq!(b.version, 3);
        assert!(key_valid_at(&keys[0], t(69)) && !key_valid_at(&keys[0], t(70)));
        assert!(key_valid_at(&keys[1], t(70)));
    }

    #[test]
    fn remove_takes_a_machine_or_one_key() {
        let b = added("PC", 9);
        let id = b.machines[0].keys[0].key_id.clone();
        let gone = apply(
            b.clone(),
            Edit::Remove {
                name: "PC".into(),
                key_id: Some(id),
            },
            t(2),
            None,
        )
        .unwrap();
        assert!(gone.machines.is_empty());
        assert!(
            apply(
                b,
                Edit::Remove {
                    name: "LAPTOP".into(),
                    key_id: None
                },
                t(2),
                None
            )
            .is_err()
        );
    }
}
