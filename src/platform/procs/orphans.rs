//! After a crash on Unix: the processes a dead listener's job left, found
//! by the environment they carry (`/proc/<pid>/environ` on Linux,
//! `sysctl(KERN_PROCARGS2)` on macOS) and the group it was started in.

use super::running::own_pid;
use super::tree::{process_table, tree_in_table};

/// After a crash, the live processes of the job that was running: those
/// whose environment holds every entry of `o.env` (set by the listener,
/// inherited by descendants), and the members of its recorded process group
/// unless that group id was visibly reused by a process started later.
/// Environments come from `/proc/<pid>/environ` on Linux and
/// `sysctl(KERN_PROCARGS2)` on macOS; both give the environment a process
/// started with.
pub(super) fn orphans(o: &super::Orphaned<'_>) -> Vec<i32> {
    let wanted = o.env;
    let me = own_pid();
    let table = process_table();
    let holds_all = |env: &[u8]| {
        wanted
            .iter()
            .all(|w| env.split(|&b| b == 0).any(|kv| kv == w.as_bytes()))
    };
    #[cfg(target_os = "macos")]
    let mut reader = super::macos::EnvReader::new();
    let mut found: Vec<i32> = table
        .iter()
        .filter(|p| p.pid != me)
        .filter(|p| {
            #[cfg(target_os = "macos")]
            {
                reader.env(p.pid).is_some_and(holds_all)
            }
            #[cfg(not(target_os = "macos"))]
            {
                std::fs::read(format!("/proc/{}/environ", p.pid)).is_ok_and(|env| holds_all(&env))
            }
        })
        .map(|p| p.pid)
        .collect();
    let reused = table
        .iter()
        .any(|p| p.pid == o.group && !started_near(p.pid, o.started));
    if o.group > 1 && !reused {
        // Its group, and everything below its leader when that lives: a
        // job beside others ran under a keeper (the recorded pid), which
        // still holds every orphan of the job, whatever it did to its
        // environment and group.
        let below = if table.iter().any(|p| p.pid == o.group) {
            tree_in_table(&table, o.group, 0)
        } else {
            Vec::new()
        };
        let members = table.iter().filter(|p| p.pgrp == o.group).map(|p| p.pid);
        for p in members.chain(below) {
            if p != me && !found.contains(&p) {
                found.push(p);
            }
        }
    }
    if table.is_empty() && o.group > 1 {
        // No process table (neither Linux nor macOS): the recorded group is
        // all we know.
        found.push(o.group);
    }
    found
}

/// True when `pid` started within a few seconds of `when` (Linux and macOS;
/// elsewhere assumed true).
fn started_near(pid: i32, when: std::time::SystemTime) -> bool {
    #[cfg(target_os = "linux")]
    {
        let start = (|| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let rest = &stat[stat.rfind(')')? + 2..];
            // Field 22 of stat is the start time in clock ticks since boot;
            // `rest` begins at field 3.
            let ticks: u64 = rest.split(' ').nth(19)?.parse().ok()?;
            let btime: u64 = std::fs::read_to_string("/proc/stat")
                .ok()?
                .lines()
                .find_map(|l| l.strip_prefix("btime "))?
                .trim()
                .parse()
                .ok()?;
            // SAFETY: sysconf has no preconditions.
            let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
            Some(
                std::time::UNIX_EPOCH
                    + std::time::Duration::from_millis(btime * 1000 + ticks * 1000 / hz),
            )
        })();
        let Some(start) = start else { return false };
        let gap = start
            .duration_since(when)
            .or_else(|_| when.duration_since(start));
        gap.is_ok_and(|g| g <= std::time::Duration::from_secs(5))
    }
    #[cfg(target_os = "macos")]
    {
        let Some(start) = super::macos::start_time(pid) else {
            return false;
        };
        let gap = start
            .duration_since(when)
            .or_else(|_| when.duration_since(start));
        gap.is_ok_and(|g| g <= std::time::Duration::from_secs(5))
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        let _ = (pid, when);
        true
    }
}
