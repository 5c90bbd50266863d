//! Linux's process table: `/proc`, and the `children` files of our own
//! threads, walked from a job's leader.

use super::Proc;
use super::running::{live, own_pid, thread_id};
/// Reads a small `/proc` file.
fn read_proc(path: &str) -> Option<String> {
    read_from_start(&std::fs::File::open(path).ok()?)
}

/// Reads an open `/proc` file whole from its start (again, for one held
/// open): `pread` needs no size probe, which `/proc` cannot answer, and the
/// buffer is on the stack, as a heap one of a page makes the allocator
/// tidy its free lists first, which costs more than the read.
fn read_from_start(f: &std::fs::File) -> Option<String> {
    use std::os::unix::fs::FileExt;
    let mut buf = [0u8; 512];
    let mut whole = Vec::new();
    loop {
        let k = f.read_at(&mut buf, whole.len() as u64).ok()?;
        whole.extend_from_slice(&buf[..k]);
        // A `/proc` file fills a read up to its end: a read that comes back
        // short has reached it (a second would only say so).
        if k < buf.len() {
            break;
        }
    }
    String::from_utf8(whole).ok()
}

/// The children of our own thread `task` (its `/proc/<pid>/task/<tid>/children`).
/// The main thread's file, and the calling thread's, are held open and read
/// again from their start: opening a `/proc` file costs several times the
/// read, and a job's end looks once. Another thread's is opened each time
/// (its id may be a new thread's by the next look).
fn task_children(task: i32) -> Option<String> {
    static MAIN: std::sync::OnceLock<Option<std::fs::File>> = std::sync::OnceLock::new();
    thread_local! {
        static OWN: std::cell::OnceCell<Option<std::fs::File>> = const { std::cell::OnceCell::new() };
    }
    let me = own_pid();
    let path = || format!("/proc/{me}/task/{task}/children");
    if task == me {
        let held = MAIN.get_or_init(|| std::fs::File::open(path()).ok());
        return held
            .as_ref()
            .map_or_else(|| read_proc(&path()), read_from_start);
    }
    if task == thread_id() {
        return OWN.with(|own| {
            let held = own.get_or_init(|| std::fs::File::open(path()).ok());
            held.as_ref()
                .map_or_else(|| read_proc(&path()), read_from_start)
        });
    }
    read_proc(&path())
}

/// One `/proc/<pid>/stat` row, or None for a zombie or a vanished process.
pub(super) fn proc_row(pid: i32) -> Option<Proc> {
    let stat = read_proc(&format!("/proc/{pid}/stat"))?;
    // The command name may hold spaces and parentheses: fields start after
    // the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut f = rest.split(' ');
    let state = f.next()?;
    if state == "Z" || state == "X" {
        return None;
    }
    let ppid = f.next()?.parse().ok()?;
    let pgrp = f.next()?.parse().ok()?;
    Some(Proc { pid, ppid, pgrp })
}

pub(super) fn process_table() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(proc_row)
        .collect()
}

/// Every descendant of `root` (zombies included), walked through
/// `/proc/<pid>/task/<tid>/children`: cost grows with the job's tree, not
/// with the machine's process count. None where the kernel lacks that file.
pub(super) fn descendants(root: i32, skip: Option<i32>) -> Option<Vec<i32>> {
    if !children_supported() {
        return None;
    }
    let me = own_pid();
    let mut found = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        let tasks: Vec<String> = if parent == me {
            own_tasks().into_iter().filter_map(task_children).collect()
        } else {
            // A process or thread that ends meanwhile simply has no children.
            let Ok(dir) = std::fs::read_dir(format!("/proc/{parent}/task")) else {
                continue;
            };
            dir.flatten()
                .filter_map(|t| t.path().join("children").to_str().and_then(read_proc))
                .collect()
        };
        for list in tasks {
            for child in list
                .split_whitespace()
                .filter_map(|c| c.parse::<i32>().ok())
            {
                if Some(child) != skip && !found.contains(&child) {
                    found.push(child);
                    frontier.push(child);
                }
            }
        }
    }
    Some(found)
}

/// Every child of this process, whichever thread started or adopted it
/// (zombies included); None where the kernel lacks the `children` file.
pub(super) fn own_children() -> Option<Vec<i32>> {
    if !children_supported() {
        return None;
    }
    let tasks = own_tasks();
    let mut found = Vec::new();
    for task in tasks {
        // A thread that ends meanwhile simply has no children.
        let Some(list) = task_children(task) else {
            continue;
        };
        found.extend(
            list.split_whitespace()
                .filter_map(|c| c.parse::<i32>().ok()),
        );
    }
    Some(found)
}

/// The threads of ours that may have children: the main one (a subreaper
/// adopts orphans into its first live thread, the main one), the calling
/// one, and those that spawned the running jobs; no other thread of ours
/// starts processes.
fn own_tasks() -> Vec<i32> {
    let mut tasks = vec![own_pid()];
    let spawners = live().iter().map(|l| l.spawner).collect::<Vec<_>>();
    for t in std::iter::once(thread_id()).chain(spawners) {
        if !tasks.contains(&t) {
            tasks.push(t);
        }
    }
    tasks
}

/// True where the kernel has `/proc/<pid>/task/<tid>/children`.
fn children_supported() -> bool {
    static SUPPORTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SUPPORTED.get_or_init(|| {
        let me = std::process::id();
        std::path::Path::new(&format!("/proc/{me}/task/{me}/children")).exists()
    })
}

/// True when live process `pid`, an orphan we adopted, is one of the job's
/// with `mark` (`NAME=id`) and group `pgid`: not another job's leader, and
/// carrying the mark in its environment, or, carrying no job's mark at all,
/// in the group. One that carries another job's mark is that job's.
pub(super) fn marked(pid: i32, pgid: i32, mark: &str) -> bool {
    if live().iter().any(|l| l.leader == pid) {
        return false;
    }
    let Some(row) = proc_row(pid) else {
        return false;
    };
    let name = &mark.as_bytes()[..mark.find('=').map_or(mark.len(), |i| i + 1)];
    let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    match env.split(|&b| b == 0).find(|kv| kv.starts_with(name)) {
        Some(kv) => kv == mark.as_bytes(),
        None => row.pgrp == pgid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_children_file_read_again_shows_the_children_of_now() {
        let listed = |pid: u32| {
            task_children(thread_id())
                .expect("children file")
                .split_whitespace()
                .any(|c| c == pid.to_string())
        };
        let mut first = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        // The first look opens the file and holds it; the later ones read it again.
        assert!(listed(first.id()));
        let mut second = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        assert!(listed(first.id()) && listed(second.id()));
        first.kill().unwrap();
        first.wait().unwrap();
        assert!(!listed(first.id()) && listed(second.id()));
        second.kill().unwrap();
        second.wait().unwrap();
        assert!(!listed(second.id()));
    }
}
