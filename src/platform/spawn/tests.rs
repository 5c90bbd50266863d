//! Linux's own job spawn, run: what a job sees at its start, with and
//! without a keeper, as `std::process` would start it.

use super::linux::*;
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
        keeper: false,
        pauses: &[],
    };
    let mut p = spawn(&s).expect("served here").expect("started");
    // Read without a JobIo: the held write ends would keep it open.
    p.writers.clear();
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

fn kept(argv: &[&str]) -> io::Result<JobProcess> {
    let argv: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
    let s = JobSpawn {
        argv: &argv,
        cwd: None,
        env: &[],
        keeper: true,
        pauses: &[],
    };
    let p = spawn(&s).expect("served here")?;
    super::await_start(&p, &mut |_, _| {})?;
    Ok(p)
}

#[test]
fn a_kept_job_ends_and_fails_to_start_as_it_would_without_a_keeper() {
    use std::os::unix::process::ExitStatusExt;
    let mut p = kept(&["sh", "-c", "echo hi; exit 3"]).unwrap();
    let mut out = String::new();
    p.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    assert_eq!((out.as_str(), p.wait().unwrap().code()), ("hi\n", Some(3)));
    let mut p = kept(&["sh", "-c", "kill -9 $$"]).unwrap();
    assert_eq!(p.wait().unwrap().signal(), Some(libc::SIGKILL));
    let e = kept(&["fleet-dispatch-no-such-program"]).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::NotFound);
}

#[test]
fn a_keeper_holds_the_jobs_orphans_but_not_its_output_and_outlives_them_only() {
    let mut p = kept(&["sh", "-c", "sleep 30 </dev/null >/dev/null 2>&1 & echo $!"]).unwrap();
    let keeper = p.id() as i32;
    let mut out = String::new();
    // The output ends with the main process: the keeper holds no end of it.
    p.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    let orphan: i32 = out.trim().parse().unwrap();
    let main = p.kept.as_ref().unwrap().started(&mut |_, _| {}).unwrap();
    assert_ne!(main, keeper);
    // The main process ends; its orphan is the keeper's now.
    let parent = |pid: i32| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let rest = stat
            .rsplit_once(") ")
            .map(|(_, r)| r.to_string())
            .unwrap_or_default();
        rest.split(' ').nth(1).and_then(|f| f.parse::<i32>().ok())
    };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while parent(orphan) != Some(keeper) && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(parent(orphan), Some(keeper));
    // Once it is gone, the keeper ends by itself, with the main
    // process's status.
    unsafe { libc::kill(orphan, libc::SIGKILL) };
    assert_eq!(p.wait().unwrap().code(), Some(0));
}

#[test]
fn a_missing_program_or_folder_is_the_error_std_gives() {
    let argv = vec!["fleet-dispatch-no-such-program".to_string()];
    let s = JobSpawn {
        argv: &argv,
        cwd: None,
        env: &[],
        keeper: false,
        pauses: &[],
    };
    let e = spawn(&s).unwrap().unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::NotFound);
    let argv = vec!["sh".to_string()];
    let gone = std::path::Path::new("/nonexistent/fleet-dispatch");
    let s = JobSpawn {
        argv: &argv,
        cwd: Some(gone),
        env: &[],
        keeper: false,
        pauses: &[],
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
        keeper: false,
        pauses: &[],
    };
    assert_eq!(
        spawn(&s).unwrap().unwrap_err().kind(),
        io::ErrorKind::InvalidInput
    );
}

/// An executable script `name` in `dir`, printing `says`.
fn script(dir: &std::path::Path, name: &str, says: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\necho {says}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn started(argv: &[&str], cwd: Option<&std::path::Path>, path: &str) -> io::Result<String> {
    let argv: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
    let env = vec![("PATH".to_string(), path.to_string())];
    let s = JobSpawn {
        argv: &argv,
        cwd,
        env: &env,
        keeper: false,
        pauses: &[],
    };
    let mut p = spawn(&s).expect("served here")?;
    // Read without a JobIo: the held write ends would keep it open.
    p.writers.clear();
    let mut out = String::new();
    p.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    p.wait().unwrap();
    Ok(out)
}

#[test]
fn a_program_is_searched_for_in_the_jobs_own_path_as_execvp_does() {
    let dirs = [(); 3].map(|_| tempfile::tempdir().unwrap());
    let [denied, first, second] = dirs.each_ref().map(|d| d.path());
    script(denied, "fd-probe", "denied", 0o644);
    script(first, "fd-probe", "first", 0o755);
    script(second, "fd-probe", "second", 0o755);
    let join = |ds: &[&std::path::Path]| {
        ds.iter()
            .map(|d| d.to_str().unwrap())
            .collect::<Vec<_>>()
            .join(":")
    };
    // A place that denies the exec is passed over; the first that runs wins.
    let out = started(&["fd-probe"], None, &join(&[denied, first, second])).unwrap();
    assert_eq!(out, "first\n");
    // Only denied: the error is that, not "not found".
    let e = started(
        &["fd-probe"],
        None,
        &join(&[std::path::Path::new("/nowhere"), denied]),
    );
    assert_eq!(e.unwrap_err().kind(), io::ErrorKind::PermissionDenied);
    // An empty entry is the job's working folder.
    let out = started(&["fd-probe"], Some(second), "/nowhere:").unwrap();
    assert_eq!(out, "second\n");
    // A name with a slash is not searched for, and is taken from the
    // job's folder.
    let out = started(&["./fd-probe"], Some(first), "/nowhere").unwrap();
    assert_eq!(out, "first\n");
    let e = started(&["sh"], None, "/nowhere").unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::NotFound);
}

#[test]
fn a_job_starts_with_no_signal_blocked_and_those_the_listener_ignores_still_ignored() {
    // SAFETY: SIGUSR2 is used by nothing else in these tests.
    unsafe { libc::signal(libc::SIGUSR2, libc::SIG_IGN) };
    let (out, _) = run(
        &["grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"],
        None,
        &[],
    );
    let mask = |name: &str| {
        let line = out.lines().find(|l| l.starts_with(name)).expect(name);
        u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap()
    };
    assert_eq!(mask("SigBlk:"), 0, "{out}");
    assert_ne!(mask("SigIgn:") & (1 << (libc::SIGUSR2 - 1)), 0, "{out}");
}
