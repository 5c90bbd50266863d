//! The operating system's random source: job ids, temp-file names and new
//! keys draw from it. It sits below the file layer and the key so that
//! neither has to import the other for it.

use ring::rand::{SecureRandom, SystemRandom};

/// Fills `buf` from the operating system's random source.
pub fn fill(buf: &mut [u8]) {
    // SystemRandom only fails when the OS has no entropy source at all, in
    // which case nothing this program does could be trusted anyway.
    SystemRandom::new()
        .fill(buf)
        .expect("the operating system's random source failed");
}
