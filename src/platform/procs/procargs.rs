//! The environment in a `KERN_PROCARGS2` answer (macOS), a pure parse
//! that unit tests run everywhere.

/// The environment part of a `KERN_PROCARGS2` answer (macOS): the
/// `NAME=value` entries, each ended by a NUL. The answer is the argument
/// count (a native `int`), the executable's path, NUL padding, that many
/// arguments, the environment, an empty string, then the system's own
/// entries. None when it is cut short before the environment.
#[cfg(any(target_os = "macos", test))]
pub(super) fn procargs_env(buf: &[u8]) -> Option<&[u8]> {
    let argc = i32::from_ne_bytes(buf.get(..4)?.try_into().ok()?);
    let mut at = 4;
    // The executable's path, then the padding after it.
    at += buf[at..].iter().position(|&b| b == 0)?;
    at += buf[at..].iter().position(|&b| b != 0)?;
    for _ in 0..argc.max(0) {
        at += buf[at..].iter().position(|&b| b == 0)? + 1;
    }
    let start = at;
    while at < buf.len() && buf[at] != 0 {
        at += buf[at..].iter().position(|&b| b == 0)? + 1;
    }
    Some(&buf[start..at])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn procargs(argc: i32, strings: &[&str]) -> Vec<u8> {
        let mut b = argc.to_ne_bytes().to_vec();
        for (i, s) in strings.iter().enumerate() {
            b.extend_from_slice(s.as_bytes());
            b.push(0);
            if i == 0 {
                // The padding after the executable's path.
                b.extend_from_slice(&[0, 0, 0]);
            }
        }
        b
    }

    #[test]
    fn procargs_env_is_the_entries_between_the_arguments_and_the_empty_string() {
        let b = procargs(
            2,
            &[
                "/bin/jobkit",
                "jobkit",
                "A=1",
                "FLEET_DISPATCH_JOB_ID=x",
                "HOME=/h",
                "",
                "executable_path=/bin/jobkit",
            ],
        );
        // An argument that looks like an entry is not one.
        assert_eq!(
            procargs_env(&b),
            Some(&b"FLEET_DISPATCH_JOB_ID=x\0HOME=/h\0"[..])
        );
    }

    #[test]
    fn procargs_env_without_an_ending_is_what_there_is() {
        let b = procargs(1, &["/bin/sh", "sh", "A=1"]);
        assert_eq!(procargs_env(&b), Some(&b"A=1\0"[..]));
        assert_eq!(procargs_env(&procargs(3, &["/bin/sh", "sh"])), None);
        assert_eq!(procargs_env(&[1, 0]), None);
    }
}
