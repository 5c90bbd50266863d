//! The signature on GET requests: `X-Fleet-Signature: t=<unix seconds>,
//! sig=<signature of "get|<target>|<path>|<t>">` (the target in lower
//! case), accepted within ±[`MAX_SKEW_SECS`] of this machine's clock and
//! checked in constant time (docs/protocol.md §10.2). The signature is
//! the fleet key's (HMAC, 64 hex digits) or, in the roster lane, the
//! identity's of a machine the roster lists (Ed25519, 128 hex digits): a
//! machine signs as it signs its documents, so a `both` machine the
//! roster lists is taken by a `roster` listener. The header names no
//! signer: any machine the fleet trusts may ask. POST bodies need nothing
//! more: they are signed documents.
//!
//! The target is signed so a header captured on its way to one machine is
//! refused by every other; the path so an answer cannot be swapped for
//! another endpoint's; the time limits how long a captured header can be
//! replayed to the machine it was for.

use crate::trust::{Auth, Key, Refusal, Signer};

/// The request header carrying the signature.
pub const HEADER: &str = "X-Fleet-Signature";

/// How far `t` may be from this machine's clock, either way.
pub const MAX_SKEW_SECS: i64 = 300;

/// `get|{target, lower case}|{path}|{t}`.
pub fn canonical(target: &str, path: &str, t: &str) -> String {
    format!("get|{}|{path}|{t}", target.to_ascii_lowercase())
}

/// The header value signing a GET of `path` on `target` at unix time `t`:
/// with this machine's identity where it signs its documents with it
/// (`roster`, and `both` while the roster lists its key), else with the
/// fleet key. A listener tells the two apart by the signature's length.
pub fn sign(key: &Key, target: &str, path: &str, t: i64) -> String {
    let t = t.to_string();
    let sig = key.sign_document(&canonical(target, path, &t)).sig;
    format!("t={t},sig={sig}")
}

/// Checks a GET of `path` received by `target`'s listener at unix time
/// `now`; `Err` says why not.
pub fn check(
    header: Option<&str>,
    target: &str,
    path: &str,
    now: i64,
    key: &Key,
) -> Result<(), String> {
    let header = header.ok_or_else(|| format!("a GET needs an {HEADER} header"))?;
    let (mut t, mut sig) = (None, None);
    for part in header.split(',').map(str::trim) {
        match part.split_once('=') {
            Some(("t", v)) if t.is_none() => t = Some(v),
            Some(("sig", v)) if sig.is_none() => sig = Some(v),
            _ => return Err(format!("{HEADER} is not t=<unix seconds>,sig=<hex>")),
        }
    }
    let (Some(t), Some(sig)) = (t, sig) else {
        return Err(format!("{HEADER} is not t=<unix seconds>,sig=<hex>"));
    };
    if t.is_empty() || t.len() > 12 || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{HEADER}: t {t:?} is not unix seconds"));
    }
    let secs: i64 = t.parse().map_err(|_| format!("{HEADER}: bad t"))?;
    if (now - secs).abs() > MAX_SKEW_SECS {
        return Err(format!(
            "{HEADER}: t is {}s from this machine's clock, beyond ±{MAX_SKEW_SECS}s (replayed, or a clock is wrong)",
            now - secs
        ));
    }
    let refusal = match key.check(Signer::Unnamed, &canonical(target, path, t), sig) {
        Ok(()) => return Ok(()),
        Err(r) => r,
    };
    Err(match (key.auth(), refusal) {
        (Auth::SharedKey, _) => {
            format!("{HEADER}: the signature does not verify with this fleet key for {target}")
        }
        // The fleet key's form, which this mode has no key to check.
        (Auth::Roster, Refusal::NotASignature) => format!(
            "{HEADER}: sig is not an Ed25519 signature: this listener runs --auth roster and takes no fleet key signature; sign with the identity of a machine on the roster"
        ),
        _ => format!(
            "{HEADER}: the signature does not verify for {target} with the fleet key or the identity of any machine on the roster, valid now"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Key {
        Key::from_file_text(b"3f6c2a9e1b7d4c58a0e9f2b6d1c7e4a89b3d5f7a1c2e4b6d8f0a1b3c5d7e9f21\n")
            .unwrap()
    }

    #[test]
    fn accepts_a_fresh_signature_for_its_path_only() {
        let k = key();
        let h = sign(&k, "PC", "/v1/status", 1_800_000_000);
        assert_eq!(
            check(Some(&h), "PC", "/v1/status", 1_800_000_000, &k),
            Ok(())
        );
        assert_eq!(
            check(Some(&h), "PC", "/v1/status", 1_800_000_300, &k),
            Ok(())
        );
        assert_eq!(
            check(Some(&h), "PC", "/v1/status", 1_799_999_700, &k),
            Ok(())
        );
        assert!(check(Some(&h), "PC", "/v1/jobs/abc", 1_800_000_000, &k).is_err());
        // Another target's listener refuses it; the target's case does not count.
        assert!(check(Some(&h), "LAPTOP", "/v1/status", 1_800_000_000, &k).is_err());
        assert_eq!(
            check(Some(&h), "pc", "/v1/status", 1_800_000_000, &k),
            Ok(())
        );
        assert!(
            check(
                Some(&h.to_uppercase().replace("T=", "t=").replace("SIG=", "sig=")),
                "PC",
                "/v1/status",
                1_800_000_000,
                &k
            )
            .is_ok()
        );
    }

    #[test]
    fn refuses_old_future_forged_and_garbled_headers() {
        let k = key();
        let h = sign(&k, "PC", "/v1/status", 1_800_000_000);
        assert!(check(Some(&h), "PC", "/v1/status", 1_800_000_301, &k).is_err());
        assert!(check(Some(&h), "PC", "/v1/status", 1_799_999_699, &k).is_err());
        let other = Key::from_bytes(&[7u8; 32]).unwrap();
        let forged = sign(&other, "PC", "/v1/status", 1_800_000_000);
        assert!(check(Some(&forged), "PC", "/v1/status", 1_800_000_000, &k).is_err());
        for bad in [
            "",
            "t=1800000000",
            "sig=00",
            "t=-5,sig=00",
            "t=1800000000,sig=zz",
            "t=1800000000,t=1800000000,sig=00",
            "x=1,t=1800000000,sig=00",
        ] {
            assert!(
                check(Some(bad), "PC", "/v1/status", 1_800_000_000, &k).is_err(),
                "{bad}"
            );
        }
        assert!(check(None, "PC", "/v1/status", 1_800_000_000, &k).is_err());
    }

    /// The roster lane: PC listens in `roster` mode (and then in `both`);
    /// LAPTOP runs `both` and is on the roster, NAS runs `both` and is not.
    #[test]
    fn a_listed_both_machine_signs_with_its_identity_which_a_roster_listener_takes() {
        use crate::trust::Own;
        use crate::trust::identity::{AdminKey, Identity};
        use crate::trust::live::Live;
        use crate::trust::roster::{self, Edit};
        use crate::trust::store::Local;
        let tmp = tempfile::tempdir().unwrap();
        let admin = AdminKey::new([1; 32]);
        let now = crate::base::clock::now();
        let mut body = roster::first(&admin, now, roster::DEFAULT_EXPIRY);
        for (name, seed) in [("PC", 2), ("LAPTOP", 3)] {
            let edit = Edit::Add {
                line: Identity::new(name, [seed; 64]).line(),
                may_send: vec!["*".into()],
                require_seal: false,
            };
            body = roster::apply(body, edit, now, None).unwrap();
        }
        std::fs::write(tmp.path().join("roster.json"), roster::sign(&body, &admin)).unwrap();
        let live = |state: &str| {
            let state = tmp.path().join(state);
            Local::new(&state).set_pin(&admin.public()).unwrap();
            Live::open(tmp.path(), &state).unwrap()
        };
        let both = |state: &str, name: &str, seed: u8| {
            let own = Own::Loaded(Identity::new(name, [seed; 64]));
            Key::both(key(), Some(live(state)), own)
        };
        let roster_pc = Key::roster(Identity::new("PC", [2; 64]), live("pc"));
        let both_pc = both("pc-both", "PC", 2);
        let (laptop, nas) = (both("laptop", "LAPTOP", 3), both("nas", "NAS", 4));
        assert_eq!(laptop.auth(), Auth::Both);
        let t = now.unix_timestamp();
        let path = "/v1/status";
        let by_laptop = sign(&laptop, "PC", path, t);
        let by_nas = sign(&nas, "PC", path, t);
        assert_eq!(by_laptop.len(), by_nas.len() + 64, "{by_laptop} {by_nas}");
        assert_eq!(check(Some(&by_laptop), "PC", path, t, &roster_pc), Ok(()));
        let refused = check(Some(&by_nas), "PC", path, t, &roster_pc).unwrap_err();
        assert!(refused.contains("--auth roster"), "{refused}");
        for header in [&by_laptop, &by_nas] {
            assert_eq!(check(Some(header), "PC", path, t, &both_pc), Ok(()));
        }
        // Another machine's listener still refuses LAPTOP's header.
        assert!(check(Some(&by_laptop), "LAPTOP", path, t, &roster_pc).is_err());
    }
}
