//! Linux: a job's process started by `posix_spawnp` itself, as
//! `std::process` would start it (a new process group, an empty signal
//! mask, SIGPIPE back to its default, standard input from the null device,
//! output and error piped), but with the listener's environment made into
//! C strings once instead of at every spawn.

use std::ffi::{CString, c_char};
use std::fs::File;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::OnceLock;

use super::JobSpawn;
use super::unix::JobProcess;

/// Starts `s`, or None where `std::process` must: a job that sets its own
/// `PATH` for a program named without a `/` (the search must use the job's
/// `PATH`, which `posix_spawnp` does not), or a listener started with a
/// standard descriptor closed (a pipe could land on 0–2, where `dup2` onto
/// itself would leave it closed at the exec).
pub(super) fn spawn(s: &JobSpawn<'_>) -> Option<io::Result<JobProcess>> {
    let program = s.argv.first()?;
    if !program.contains('/') && s.env.iter().any(|(k, _)| k == "PATH") {
        return None;
    }
    let null = null_device()?;
    Some(spawn_with(s, null))
}

/// The null device, opened once (close-on-exec), for every job's standard
/// input; None when the listener's standard descriptors are not all open.
fn null_device() -> Option<&'static File> {
    static NULL: OnceLock<Option<File>> = OnceLock::new();
    NULL.get_or_init(|| {
        // SAFETY: F_GETFD only reads the descriptor's flags.
        let open = (0..=2).all(|fd| unsafe { libc::fcntl(fd, libc::F_GETFD) } != -1);
        open.then(|| File::open("/dev/null").ok()).flatten()
    })
    .as_ref()
}

/// The listener's environment as `NAME=value` strings, taken at the first
/// spawn: nothing changes it later (empty `FLEET_DISPATCH_*` variables are
/// dropped at start-up, before any thread).
fn inherited() -> &'static [CString] {
    static ENV: OnceLock<Vec<CString>> = OnceLock::new();
    ENV.get_or_init(|| {
        std::env::vars_os()
            .filter_map(|(k, v)| {
                let mut entry = k.as_bytes().to_vec();
                entry.push(b'=');
                entry.extend_from_slice(v.as_bytes());
                CString::new(entry).ok()
            })
            .collect()
    })
}

/// True when environment entry `entry` is variable `name`.
fn is_named(entry: &CString, name: &str) -> bool {
    let entry = entry.as_bytes();
    entry.len() > name.len() && entry[name.len()] == b'=' && entry.starts_with(name.as_bytes())
}

fn c_string(text: impl Into<Vec<u8>>) -> io::Result<CString> {
    CString::new(text).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "nul byte found in provided data",
        )
    })
}

/// A close-on-exec pipe: (read end, write end).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills both descriptors on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and ours alone.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(rc))
    }
}

/// A `posix_spawn` object of one spawn (its file actions or attributes),
/// destroyed when dropped. It stays where it was made: glibc keeps its own
/// pointer inside.
struct Made<T> {
    value: MaybeUninit<T>,
    destroy: Option<unsafe extern "C" fn(*mut T) -> libc::c_int>,
}

impl<T> Made<T> {
    fn new() -> Made<T> {
        Made {
            value: MaybeUninit::uninit(),
            destroy: None,
        }
    }

    /// Initialises it with `init`, to be destroyed with `destroy`.
    fn init(
        &mut self,
        init: unsafe extern "C" fn(*mut T) -> libc::c_int,
        destroy: unsafe extern "C" fn(*mut T) -> libc::c_int,
    ) -> io::Result<*mut T> {
        // SAFETY: `init` is the libc initialiser for `T`, given storage we own.
        check(unsafe { init(self.value.as_mut_ptr()) })?;
        self.destroy = Some(destroy);
        Ok(self.value.as_mut_ptr())
    }
}

impl<T> Drop for Made<T> {
    fn drop(&mut self) {
        if let Some(destroy) = self.destroy {
            // SAFETY: initialised by `init` and not destroyed before.
            unsafe { destroy(self.value.as_mut_ptr()) };
        }
    }
}

fn spawn_with(s: &JobSpawn<'_>, null: &File) -> io::Result<JobProcess> {
    let argv = s
        .argv
        .iter()
        .map(|a| c_string(a.as_str()))
        .collect::<io::Result<Vec<_>>>()?;
    let own = s
        .env
        .iter()
        .map(|(k, v)| c_string(format!("{k}={v}")))
        .collect::<io::Result<Vec<_>>>()?;
    let cwd = s
        .cwd
        .map(|c| c_string(c.as_os_str().as_bytes()))
        .transpose()?;
    let mut args: Vec<*mut c_char> = argv.iter().map(|a| a.as_ptr().cast_mut()).collect();
    args.push(std::ptr::null_mut());
    let mut envp: Vec<*mut c_char> = Vec::with_capacity(inherited().len() + own.len() + 1);
    envp.extend(
        inherited()
            .iter()
            .filter(|e| !s.env.iter().any(|(k, _)| is_named(e, k)))
            .map(|e| e.as_ptr().cast_mut()),
    );
    envp.extend(own.iter().map(|e| e.as_ptr().cast_mut()));
    envp.push(std::ptr::null_mut());

    let (out_read, out_write) = pipe()?;
    let (err_read, err_write) = pipe()?;
    let mut actions = Made::new();
    let fa = actions.init(
        libc::posix_spawn_file_actions_init,
        libc::posix_spawn_file_actions_destroy,
    )?;
    let mut attributes = Made::new();
    let attr = attributes.init(libc::posix_spawnattr_init, libc::posix_spawnattr_destroy)?;
    // SAFETY: `fa` and `attr` are initialised and live until the end of
    // this function; every descriptor named is open (ours, 3 or above, as
    // `null_device` checked), and the strings outlive the spawn.
    unsafe {
        check(libc::posix_spawn_file_actions_adddup2(
            fa,
            null.as_raw_fd(),
            0,
        ))?;
        check(libc::posix_spawn_file_actions_adddup2(
            fa,
            out_write.as_raw_fd(),
            1,
        ))?;
        check(libc::posix_spawn_file_actions_adddup2(
            fa,
            err_write.as_raw_fd(),
            2,
        ))?;
        if let Some(cwd) = &cwd {
            check(libc::posix_spawn_file_actions_addchdir_np(fa, cwd.as_ptr()))?;
        }
        let mut set = MaybeUninit::<libc::sigset_t>::uninit();
        libc::sigemptyset(set.as_mut_ptr());
        check(libc::posix_spawnattr_setsigmask(attr, set.as_ptr()))?;
        libc::sigaddset(set.as_mut_ptr(), libc::SIGPIPE);
        check(libc::posix_spawnattr_setsigdefault(attr, set.as_ptr()))?;
        check(libc::posix_spawnattr_setpgroup(attr, 0))?;
        let flags = libc::POSIX_SPAWN_SETPGROUP
            | libc::POSIX_SPAWN_SETSIGMASK
            | libc::POSIX_SPAWN_SETSIGDEF;
        check(libc::posix_spawnattr_setflags(attr, flags as libc::c_short))?;
        let mut pid = 0;
        check(libc::posix_spawnp(
            &mut pid,
            argv[0].as_ptr(),
            fa,
            attr,
            args.as_ptr(),
            envp.as_ptr(),
        ))?;
        drop((out_write, err_write));
        Ok(JobProcess::new(
            pid,
            Some(out_read.into()),
            Some(err_read.into()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn run(argv: &[&str], cwd: Option<&std::path::Path>, env: &[(&str, &str)]) -> (String, i32) {
        let argv: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let s = JobSpawn {
            argv: &argv,
            cwd,
            env: &env,
        };
        let mut p = spawn(&s).expect("served here").expect("started");
        let mut out = String::new();
        p.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        let status = p.wait().unwrap();
        (out, status.code().unwrap())
    }

    #[test]
    fn a_job_gets_the_listeners_environment_with_its_own_variables_replacing_theirs() {
        // The test runner's own environment is the listener's here.
        let (out, code) = run(
            &["sh", "-c", "echo \"$HOME|$FD_SPAWN_A|$FD_SPAWN_B\"; exit 3"],
            None,
            &[("FD_SPAWN_A", "one"), ("HOME", "/elsewhere")],
        );
        assert_eq!((out.as_str(), code), ("/elsewhere|one|\n", 3));
    }

    #[test]
    fn a_job_starts_in_its_folder_in_a_group_of_its_own_with_nothing_to_read_and_sigpipe_default() {
        let dir = tempfile::tempdir().unwrap();
        let (out, _) = run(
            &[
                "sh",
                "-c",
                "pwd; read -r _ _ _ _ g _ < /proc/$$/stat; echo $g; echo $$; cat; grep SigIgn /proc/self/status",
            ],
            Some(dir.path()),
            &[],
        );
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            std::path::Path::new(lines[0]).canonicalize().unwrap(),
            dir.path().canonicalize().unwrap()
        );
        assert_eq!(lines[1].trim(), lines[2], "its own process group");
        // `cat` read the null device: nothing, at once. SIGPIPE (bit 13) is
        // not ignored, though this test process ignores it.
        let ignored = u64::from_str_radix(lines[3].split_whitespace().nth(1).unwrap(), 16).unwrap();
        assert_eq!(ignored & (1 << 12), 0, "{out}");
    }

    #[test]
    fn a_missing_program_or_folder_is_the_error_std_gives() {
        let argv = vec!["fleet-dispatch-no-such-program".to_string()];
        let s = JobSpawn {
            argv: &argv,
            cwd: None,
            env: &[],
        };
        let e = spawn(&s).unwrap().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        let argv = vec!["sh".to_string()];
        let gone = std::path::Path::new("/nonexistent/fleet-dispatch");
        let s = JobSpawn {
            argv: &argv,
            cwd: Some(gone),
            env: &[],
        };
        assert_eq!(
            spawn(&s).unwrap().unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        let argv = vec!["sh\0x".to_string()];
        let s = JobSpawn {
            argv: &argv,
            cwd: None,
            env: &[],
        };
        assert_eq!(
            spawn(&s).unwrap().unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
    }

    #[test]
    fn a_job_that_sets_its_own_path_is_left_to_std() {
        let argv = vec!["sh".to_string()];
        let env = vec![("PATH".to_string(), "/nowhere".to_string())];
        let s = JobSpawn {
            argv: &argv,
            cwd: None,
            env: &env,
        };
        assert!(spawn(&s).is_none());
        let argv = vec![
            "/bin/sh".to_string(),
            "-c".to_string(),
            "exit 0".to_string(),
        ];
        let s = JobSpawn {
            argv: &argv,
            cwd: None,
            env: &env,
        };
        assert!(spawn(&s).is_some(), "a path needs no search");
    }
}
