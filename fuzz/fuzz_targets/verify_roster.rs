//! Fuzzes `trust::roster::verify` (docs/identities.md): no input panics it;
//! a roster re-signed here by the pinned admin key is never refused for its
//! signature or its admin, only for its version or its expiry; and one
//! whose bytes changed after signing never verifies.

#![no_main]

use fleet_dispatch::trust::identity::AdminKey;
use fleet_dispatch::trust::roster::{self, Refusal};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let admin = AdminKey::new([7; 32]);
    let pin = admin.public();
    let now = time::OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
    let seen = u64::from(mode >> 1);
    if mode & 1 == 0 {
        let _ = roster::verify(rest, &pin, seen, now, mode & 2 == 0);
        return;
    }
    let Ok((mut body, _)) = roster::parse(rest) else {
        return;
    };
    body.admin = pin.to_string();
    let signed = roster::sign(&body, &admin);
    match roster::verify(&signed, &pin, seen, now, true) {
        Ok(_) | Err(Refusal::RolledBack { .. } | Refusal::Expired { .. }) => {}
        Err(other) => panic!("a re-signed roster refused: {other:?}"),
    }
    // One byte changed inside the signed text: never accepted as it is.
    if let Some(at) = signed.iter().position(|&b| b.is_ascii_digit()) {
        let mut changed = signed.clone();
        changed[at] = if changed[at] == b'9' {
            b'0'
        } else {
            changed[at] + 1
        };
        if let Ok(body2) = roster::verify(&changed, &pin, 0, now, false) {
            assert_eq!(
                roster::canonical(&body2),
                roster::canonical(&body),
                "a changed roster verified with another body"
            );
        }
    }
});
