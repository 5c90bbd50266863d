//! macOS's process table: `proc_listallpids` and
//! `proc_pidinfo(PROC_PIDTBSDINFO)` give each process's parent, group,
//! state and start time; `sysctl(KERN_PROCARGS2)` another process's
//! environment (crash recovery), which it answers for the caller's own
//! processes. macOS has no child subreaper: a process that leaves the
//! job's group and then loses its parent is adopted by launchd, and only
//! the environment search of crash recovery can find it again.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::Proc;

/// Every pid on the machine. `proc_listallpids` counts pids; the buffer is
/// zeroed and pids ≤ 0 dropped, so an answer in bytes would read the same.
fn all_pids() -> Vec<i32> {
    // SAFETY: a null buffer asks only for the number of pids.
    let n = unsafe { libc::proc_listallpids(std::ptr::null_mut(), 0) };
    if n <= 0 {
        return Vec::new();
    }
    // Room for processes started since the count.
    let mut pids = vec![0i32; n as usize + 64];
    let bytes = (pids.len() * std::mem::size_of::<i32>()) as libc::c_int;
    // SAFETY: the buffer holds `bytes` bytes of i32s.
    let got = unsafe { libc::proc_listallpids(pids.as_mut_ptr().cast(), bytes) };
    pids.truncate(got.max(0) as usize);
    pids.retain(|&p| p > 0);
    pids
}

fn bsd_info(pid: i32) -> Option<libc::proc_bsdinfo> {
    if pid <= 0 {
        return None;
    }
    // SAFETY: proc_bsdinfo is plain data; zero is a valid value.
    let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::proc_bsdinfo>() as libc::c_int;
    // SAFETY: the buffer is a proc_bsdinfo of `size` bytes, the flavour
    // PROC_PIDTBSDINFO fills.
    let n = unsafe {
        libc::proc_pidinfo(
            pid,
            libc::PROC_PIDTBSDINFO,
            0,
            (&mut info as *mut libc::proc_bsdinfo).cast(),
            size,
        )
    };
    (n == size).then_some(info)
}

/// One row of the process table, or None for a zombie or a vanished process.
pub(super) fn proc_row(pid: i32) -> Option<Proc> {
    let info = bsd_info(pid)?;
    if info.pbi_status == libc::SZOMB {
        return None;
    }
    Some(Proc {
        pid,
        ppid: info.pbi_ppid as i32,
        pgrp: info.pbi_pgid as i32,
    })
}

/// The live processes of the machine.
pub(super) fn process_table() -> Vec<Proc> {
    all_pids().into_iter().filter_map(proc_row).collect()
}

/// When process `pid` started.
pub(super) fn start_time(pid: i32) -> Option<SystemTime> {
    let info = bsd_info(pid)?;
    Some(
        UNIX_EPOCH
            + Duration::from_secs(info.pbi_start_tvsec)
            + Duration::from_micros(info.pbi_start_tvusec),
    )
}

/// Reads other processes' environments; one buffer for the whole search.
pub(super) struct EnvReader {
    buf: Vec<u8>,
}

impl EnvReader {
    /// A reader with room for the largest argument area (`KERN_ARGMAX`).
    pub(super) fn new() -> EnvReader {
        let mut argmax: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>();
        let mut mib = [libc::CTL_KERN, libc::KERN_ARGMAX];
        // SAFETY: the output is one c_int and `len` says its size.
        let rc = unsafe {
            libc::sysctl(
                mib.as_mut_ptr(),
                2,
                (&mut argmax as *mut libc::c_int).cast(),
                &mut len,
                std::ptr::null_mut(),
                0,
            )
        };
        let size = if rc == 0 && argmax > 0 {
            argmax as usize
        } else {
            1 << 20
        };
        EnvReader { buf: vec![0; size] }
    }

    /// The environment process `pid` started with, as `NAME=value` entries
    /// each ended by a NUL (as `/proc/<pid>/environ` gives it on Linux);
    /// None for another user's process or one that is gone.
    pub(super) fn env(&mut self, pid: i32) -> Option<&[u8]> {
        let mut mib = [libc::CTL_KERN, libc::KERN_PROCARGS2, pid];
        let mut len = self.buf.len();
        // SAFETY: the output buffer holds `len` bytes.
        let rc = unsafe {
            libc::sysctl(
                mib.as_mut_ptr(),
                3,
                self.buf.as_mut_ptr().cast(),
                &mut len,
                std::ptr::null_mut(),
                0,
            )
        };
        if rc != 0 {
            return None;
        }
        super::procargs::procargs_env(&self.buf[..len.min(self.buf.len())])
    }
}
