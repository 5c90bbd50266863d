//! Fuzzes the sealed envelope (`trust::seal`, docs/identities.md): no
//! input panics its parser or `open`; what is sealed here opens to the same
//! bytes in its own context, and never in another.

#![no_main]

use fleet_dispatch::trust::identity::Identity;
use fleet_dispatch::trust::seal::{self, Sealed};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let me = Identity::new("PC", [5; 64]);
    if mode & 1 == 0 {
        if let Ok(value) = serde_json::from_slice(rest)
            && let Ok(sealed) = Sealed::from_json(&value)
        {
            let _ = seal::open(&me, &sealed, b"job|x|PC|LAPTOP");
        }
        return;
    }
    let sealed = seal::seal(&me.line().x25519, b"ctx-a", rest, [mode; 32]);
    let back = Sealed::from_json(&sealed.to_json()).expect("its own JSON parses");
    assert_eq!(seal::open(&me, &back, b"ctx-a").as_deref(), Ok(rest));
    assert!(seal::open(&me, &back, b"ctx-b").is_err());
});
