//! Windows: a Job Object per job so its whole process tree stops together,
//! `MoveFileExW` without replace for moves, the file's DACL for the key, and
//! the listener itself in a kill-on-close job so its death takes its jobs
//! with it.
//!
//! Process control, in Unix terms:
//! - process group → the job is spawned suspended with
//!   `CREATE_NEW_PROCESS_GROUP`, put in a Job Object of its own (no
//!   breakaway allowed), then resumed, so nothing it starts can slip out;
//! - SIGTERM → `CTRL_BREAK_EVENT` to the job's console process group, when
//!   the listener has a console the job shares; otherwise there is no
//!   graceful stop and the forced one follows after the grace;
//! - SIGKILL → `TerminateJobObject`, which ends every process of the tree;
//! - `waitid(WNOWAIT)` → waiting on a process handle, which never reaps: the
//!   pid stays reserved while any handle to the process is open;
//! - subreaper → the listener's own job with
//!   `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`; each job's Job Object nests
//!   inside it (Windows 8 and later) and is kill-on-close too.
//!
//! The ids the rest of the crate sees (`i32`) are process ids.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::windows::ffi::OsStrExt;
use std::os::windows::fs::OpenOptionsExt;
use std::os::windows::io::{AsRawHandle, FromRawHandle};
use std::os::windows::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use windows_sys::Win32::Foundation::{
    CloseHandle, DUPLICATE_SAME_ACCESS, DuplicateHandle, ERROR_ACCESS_DENIED, ERROR_INTERNAL_ERROR,
    ERROR_LOCK_VIOLATION, ERROR_MORE_DATA, ERROR_NO_SYSTEM_RESOURCES, ERROR_SHARING_VIOLATION,
    ERROR_STOPPED_ON_SYMLINK, FILETIME, GENERIC_ALL, GENERIC_READ, GENERIC_WRITE, HANDLE,
    INVALID_HANDLE_VALUE, LocalFree, WAIT_OBJECT_0, WAIT_TIMEOUT,
};
use windows_sys::Win32::Security::Authorization::{
    ConvertSidToStringSidW, ConvertStringSecurityDescriptorToSecurityDescriptorW,
    GetNamedSecurityInfoW, SDDL_REVISION_1, SE_FILE_OBJECT,
};
use windows_sys::Win32::Security::{
    ACCESS_ALLOWED_ACE, ACE_HEADER, ACL, DACL_SECURITY_INFORMATION, EqualSid, GetAce,
    GetTokenInformation, INHERIT_ONLY_ACE, IsWellKnownSid, LookupAccountSidW,
    OWNER_SECURITY_INFORMATION, PSID, SECURITY_ATTRIBUTES, TOKEN_QUERY, TOKEN_USER, TokenUser,
    WinBuiltinAdministratorsSid, WinCreatorOwnerRightsSid, WinLocalSystemSid,
};
use windows_sys::Win32::Storage::FileSystem::{
    CREATE_NEW, CreateFileW, FILE_APPEND_DATA, FILE_ATTRIBUTE_NORMAL, FILE_ATTRIBUTE_REPARSE_POINT,
    FILE_ATTRIBUTE_TAG_INFO, FILE_FLAG_OPEN_REPARSE_POINT, FILE_READ_DATA, FILE_WRITE_DATA,
    FileAttributeTagInfo, GetFileInformationByHandleEx, MOVEFILE_WRITE_THROUGH, MoveFileExW,
    WRITE_DAC, WRITE_OWNER,
};
use windows_sys::Win32::System::Console::{
    CTRL_BREAK_EVENT, GenerateConsoleCtrlEvent, GetConsoleProcessList,
};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, TH32CS_SNAPTHREAD, THREADENTRY32, Thread32First, Thread32Next,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOBOBJECT_BASIC_PROCESS_ID_LIST, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    JobObjectBasicProcessIdList, JobObjectExtendedLimitInformation, QueryInformationJobObject,
    SetInformationJobObject, TerminateJobObject,
};
use windows_sys::Win32::System::SystemInformation::{ComputerNameDnsHostname, GetComputerNameExW};
use windows_sys::Win32::System::SystemServices::{
    ACCESS_ALLOWED_ACE_TYPE, ACCESS_ALLOWED_CALLBACK_ACE_TYPE,
};
use windows_sys::Win32::System::Threading::{
    CREATE_NEW_PROCESS_GROUP, CREATE_SUSPENDED, GetCurrentProcess, GetProcessTimes, INFINITE,
    OpenProcess, OpenProcessToken, OpenThread, PROCESS_QUERY_LIMITED_INFORMATION,
    PROCESS_SYNCHRONIZE, PROCESS_TERMINATE, ResumeThread, THREAD_SUSPEND_RESUME, TerminateProcess,
    WaitForSingleObject,
};

use super::Signal;
use crate::error::{Error, Result};

/// The exit code a forced stop leaves, as `taskkill /F` does.
const KILLED_EXIT_CODE: u32 = 1;

/// An owned kernel handle, closed on drop.
#[derive(Debug)]
struct Handle(HANDLE);

// SAFETY: a kernel handle is a process-wide value, usable from any thread.
unsafe impl Send for Handle {}
// SAFETY: as above; `Handle` has no interior mutability.
unsafe impl Sync for Handle {}

impl Handle {
    /// Takes ownership of `h`, or the last OS error when it is invalid.
    fn new(h: HANDLE) -> io::Result<Handle> {
        if h.is_null() || h == INVALID_HANDLE_VALUE {
            Err(io::Error::last_os_error())
        } else {
            Ok(Handle(h))
        }
    }

    /// A second handle to the same object, with the same access.
    fn try_clone(&self) -> io::Result<Handle> {
        let mut out: HANDLE = std::ptr::null_mut();
        // SAFETY: both process handles are our own pseudo handle; `out`
        // receives a new handle we then own.
        let ok = unsafe {
            DuplicateHandle(
                GetCurrentProcess(),
                self.0,
                GetCurrentProcess(),
                &mut out,
                0,
                0,
                DUPLICATE_SAME_ACCESS,
            )
        };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        Handle::new(out)
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: we own the handle and close it once.
        unsafe { CloseHandle(self.0) };
    }
}

/// `s` as a NUL-terminated UTF-16 string, refusing an embedded NUL.
fn wide(s: &OsStr) -> io::Result<Vec<u16>> {
    let mut w: Vec<u16> = s.encode_wide().collect();
    if w.contains(&0) {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    w.push(0);
    Ok(w)
}

/// Reads a NUL-terminated UTF-16 string that the system allocated with
/// `LocalAlloc`, and frees it.
///
/// # Safety
/// `p` is null or a valid NUL-terminated string owned by the caller.
unsafe fn take_local_wide(p: *mut u16) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: the caller promises a NUL-terminated string.
    let s = unsafe {
        let len = (0..).take_while(|&i| *p.add(i) != 0).count();
        String::from_utf16_lossy(std::slice::from_raw_parts(p, len))
    };
    // SAFETY: the system allocated it with LocalAlloc for us.
    unsafe { LocalFree(p.cast()) };
    Some(s)
}

// ---------------------------------------------------------------------------
// The key file
// ---------------------------------------------------------------------------

/// Access that lets someone read the secret, change it, or grant themselves
/// either: the DACL counterpart of the Unix check's group/other bits.
const KEY_EXPOSING_ACCESS: u32 = FILE_READ_DATA
    | FILE_WRITE_DATA
    | FILE_APPEND_DATA
    | WRITE_DAC
    | WRITE_OWNER
    | GENERIC_READ
    | GENERIC_WRITE
    | GENERIC_ALL;

/// Refuses a key file whose DACL lets anyone but its owner (or the current
/// user, SYSTEM, and the Administrators group, who can read any file anyway)
/// read or change it, as the Unix check refuses group/other mode bits.
///
/// This is the honest Windows equivalent, with two limits: deny entries are
/// ignored, so a DACL that grants broadly and then denies is refused even if
/// it is in fact tight; and access through privileges (backup operators)
/// is not visible in a DACL at all. A file under `%USERPROFILE%` inherits a
/// private DACL; `keygen` writes one explicitly.
pub(super) fn check_key_permissions(path: &Path) -> Result<()> {
    let cannot =
        |e: io::Error| Error::config(format!("cannot read key file {}: {e}", path.display()));
    let name = wide(path.as_os_str()).map_err(cannot)?;
    let mut owner: PSID = std::ptr::null_mut();
    let mut dacl: *mut ACL = std::ptr::null_mut();
    let mut sd = std::ptr::null_mut();
    // SAFETY: `name` is NUL-terminated; the out pointers point into `sd`,
    // which we free below.
    let rc = unsafe {
        GetNamedSecurityInfoW(
            name.as_ptr(),
            SE_FILE_OBJECT,
            OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
            &mut owner,
            std::ptr::null_mut(),
            &mut dacl,
            std::ptr::null_mut(),
            &mut sd,
        )
    };
    if rc != 0 {
        return Err(cannot(io::Error::from_raw_os_error(rc as i32)));
    }
    let me = current_user();
    // SAFETY: `dacl` and `owner` point into `sd`, alive until freed below.
    let exposed = unsafe { exposure(dacl, owner, me.as_deref()) };
    // SAFETY: `sd` was allocated for us by GetNamedSecurityInfoW.
    unsafe { LocalFree(sd) };
    match exposed {
        None => Ok(()),
        Some(who) => Err(Error::config(format!(
            "key file {} is readable or writable by others ({who})",
            path.display()
        ))
        .hint(format!(
            "run `icacls \"{}\" /inheritance:r /grant:r \"%USERNAME%:F\"`",
            path.display()
        ))),
    }
}

/// Who, besides the file's owner, the current user, SYSTEM and
/// Administrators, may read or change a file with access list `dacl`: the
/// first such allow entry's account, by name.
///
/// # Safety
/// `dacl` is a valid ACL or null, and `owner` a valid SID or null.
unsafe fn exposure(dacl: *mut ACL, owner: PSID, me: Option<&[u8]>) -> Option<String> {
    if dacl.is_null() {
        // A null DACL grants everyone everything.
        return Some("Everyone: the file has no access list".into());
    }
    // SAFETY: the caller promises a valid ACL.
    let count = unsafe { (*dacl).AceCount };
    for i in 0..u32::from(count) {
        let mut ace: *mut core::ffi::c_void = std::ptr::null_mut();
        // SAFETY: `i` is below the ACL's entry count.
        if unsafe { GetAce(dacl, i, &mut ace) } == 0 {
            continue;
        }
        // SAFETY: every ACE starts with an ACE_HEADER.
        let header = unsafe { *(ace as *const ACE_HEADER) };
        let allow = u32::from(header.AceType);
        if allow != ACCESS_ALLOWED_ACE_TYPE && allow != ACCESS_ALLOWED_CALLBACK_ACE_TYPE {
            continue;
        }
        if u32::from(header.AceFlags) & INHERIT_ONLY_ACE != 0 {
            continue; // applies to children only, and a file has none
        }
        // SAFETY: both allow types share ACCESS_ALLOWED_ACE's layout, with
        // the SID starting at `SidStart`.
        let (mask, sid) = unsafe {
            let a = ace as *const ACCESS_ALLOWED_ACE;
            ((*a).Mask, std::ptr::addr_of!((*a).SidStart) as PSID)
        };
        if mask & KEY_EXPOSING_ACCESS == 0 {
            continue;
        }
        // SAFETY: `sid` is a valid SID inside the ACE; `owner` and `me` are
        // valid SIDs when present.
        let trusted = unsafe {
            (!owner.is_null() && EqualSid(sid, owner) != 0)
                || me.is_some_and(|m| EqualSid(sid, m.as_ptr() as PSID) != 0)
                || IsWellKnownSid(sid, WinLocalSystemSid) != 0
                || IsWellKnownSid(sid, WinBuiltinAdministratorsSid) != 0
                || IsWellKnownSid(sid, WinCreatorOwnerRightsSid) != 0
        };
        if !trusted {
            // SAFETY: `sid` is valid.
            return Some(unsafe { account_name(sid) });
        }
    }
    None
}

/// An account for a message: `Everyone (S-1-1-0)`, or the SID alone when
/// it has no name here.
///
/// # Safety
/// `sid` is a valid SID.
unsafe fn account_name(sid: PSID) -> String {
    let (mut name, mut domain) = ([0u16; 256], [0u16; 256]);
    let (mut n, mut d, mut kind) = (name.len() as u32, domain.len() as u32, 0);
    // SAFETY: the buffers are valid for the lengths given; `sid` is valid.
    let ok = unsafe {
        LookupAccountSidW(
            std::ptr::null(),
            sid,
            name.as_mut_ptr(),
            &mut n,
            domain.as_mut_ptr(),
            &mut d,
            &mut kind,
        )
    };
    // SAFETY: `sid` is valid.
    let text = unsafe { sid_string(sid) };
    if ok == 0 || n == 0 {
        return text;
    }
    let name = String::from_utf16_lossy(&name[..n as usize]);
    match String::from_utf16_lossy(&domain[..d as usize]) {
        dom if dom.is_empty() => format!("{name} ({text})"),
        dom => format!("{dom}\\{name} ({text})"),
    }
}

/// A SID as `S-1-…` text.
///
/// # Safety
/// `sid` is a valid SID.
unsafe fn sid_string(sid: PSID) -> String {
    let mut text: *mut u16 = std::ptr::null_mut();
    // SAFETY: `sid` is valid; the system allocates `text` for us.
    unsafe {
        if ConvertSidToStringSidW(sid, &mut text) == 0 {
            return "an unknown account".into();
        }
        take_local_wide(text).unwrap_or_default()
    }
}

/// The current user's SID, as bytes.
fn current_user() -> Option<Vec<u8>> {
    let mut token: HANDLE = std::ptr::null_mut();
    // SAFETY: our own pseudo process handle; `token` receives a handle.
    if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) } == 0 {
        return None;
    }
    let token = Handle::new(token).ok()?;
    let mut buf = vec![0u64; 64]; // 512 bytes, aligned for TOKEN_USER
    let mut len = 0u32;
    // SAFETY: the buffer is valid for its byte length.
    let ok = unsafe {
        GetTokenInformation(
            token.0,
            TokenUser,
            buf.as_mut_ptr().cast(),
            (buf.len() * 8) as u32,
            &mut len,
        )
    };
    if ok == 0 {
        return None;
    }
    // SAFETY: the call filled a TOKEN_USER whose SID lies in `buf`.
    let sid = unsafe { (*(buf.as_ptr() as *const TOKEN_USER)).User.Sid };
    // SAFETY: a SID is 8 bytes plus 4 per sub-authority (byte 1 counts them).
    let n = unsafe { 8 + 4 * usize::from(*(sid as *const u8).add(1)) };
    // SAFETY: the SID is `n` bytes long and lies inside `buf`.
    Some(unsafe { std::slice::from_raw_parts(sid as *const u8, n) }.to_vec())
}

/// Creates a new file only its owner (and SYSTEM) can open: a protected DACL
/// set at creation, so the secret is never readable by others, wherever the
/// file lives.
pub(super) fn create_private(path: &Path) -> io::Result<File> {
    let me = current_user().ok_or_else(|| io::Error::other("cannot find the current user"))?;
    // SAFETY: `me` holds a valid SID.
    let me = unsafe { sid_string(me.as_ptr() as PSID) };
    // P: don't inherit the folder's entries; FA: full access.
    create_with_dacl(path, &format!("D:P(A;;FA;;;SY)(A;;FA;;;{me})"))
}

/// Creates a new file for writing with the access list `sddl` (SDDL text).
fn create_with_dacl(path: &Path, sddl: &str) -> io::Result<File> {
    let name = wide(path.as_os_str())?;
    let sddl = wide(OsStr::new(sddl))?;
    let mut sd = std::ptr::null_mut();
    // SAFETY: `sddl` is NUL-terminated; `sd` receives an allocation we free.
    let ok = unsafe {
        ConvertStringSecurityDescriptorToSecurityDescriptorW(
            sddl.as_ptr(),
            SDDL_REVISION_1,
            &mut sd,
            std::ptr::null_mut(),
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    let attrs = SECURITY_ATTRIBUTES {
        nLength: size_of::<SECURITY_ATTRIBUTES>() as u32,
        lpSecurityDescriptor: sd,
        bInheritHandle: 0,
    };
    // SAFETY: `name` is NUL-terminated and `attrs` valid for the call.
    let h = unsafe {
        CreateFileW(
            name.as_ptr(),
            GENERIC_WRITE,
            0,
            &attrs,
            CREATE_NEW,
            FILE_ATTRIBUTE_NORMAL,
            std::ptr::null_mut(),
        )
    };
    let err = io::Error::last_os_error();
    // SAFETY: allocated by the conversion above; CreateFileW copied it.
    unsafe { LocalFree(sd) };
    if h == INVALID_HANDLE_VALUE {
        return Err(err);
    }
    // SAFETY: a fresh file handle that we own.
    Ok(unsafe { File::from_raw_handle(h) })
}

// ---------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------

/// Moves `from` to `to`, failing with `AlreadyExists` when `to` exists:
/// `MoveFileExW` without `MOVEFILE_REPLACE_EXISTING` answers
/// `ERROR_ALREADY_EXISTS` or `ERROR_FILE_EXISTS`, both of which std maps to
/// `AlreadyExists`.
pub(super) fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    let (f, t) = (wide(from.as_os_str())?, wide(to.as_os_str())?);
    // SAFETY: both are NUL-terminated paths.
    if unsafe { MoveFileExW(f.as_ptr(), t.as_ptr(), MOVEFILE_WRITE_THROUGH) } != 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Failures worth retrying: a handle held by a virus scanner, an indexer or
/// OneDrive (sharing and lock violations; access denied is also what a file
/// pending deletion answers).
pub(super) fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error().map(|c| c as u32),
        Some(ERROR_SHARING_VIOLATION) | Some(ERROR_LOCK_VIOLATION) | Some(ERROR_ACCESS_DENIED)
    )
}

/// Flushes a directory's entries to disk: nothing to do on Windows, where
/// NTFS journals a rename before it returns and a directory cannot be opened
/// for flushing without privileges.
pub(super) fn sync_dir(_dir: &Path) {}

/// Lowers the calling thread's scheduling priority: bookkeeping that may
/// wait must not take a core from the job the listener just started.
pub(super) fn lower_thread_priority() {
    use windows_sys::Win32::System::Threading::{
        GetCurrentThread, SetThreadPriority, THREAD_PRIORITY_BELOW_NORMAL,
    };
    // SAFETY: the pseudo-handle of the calling thread is always valid.
    unsafe { SetThreadPriority(GetCurrentThread(), THREAD_PRIORITY_BELOW_NORMAL) };
}

/// Creates a new file for writing, failing if anything (a link included)
/// already has the name: with `FILE_FLAG_OPEN_REPARSE_POINT` the name itself
/// is checked, so a planted link is never followed to create its target.
pub(super) fn create_new_no_follow(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
        .open(path)
}

/// Opens the existing file `path` for writing without following a final
/// symbolic link or junction (to flush a file written and closed before).
pub(super) fn open_write_no_follow(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
        .open(path)
}

/// Opens for reading without following a final symbolic link or junction.
///
/// `FILE_FLAG_OPEN_REPARSE_POINT` opens a link as itself; other reparse
/// points (OneDrive's cloud placeholders) are reopened normally so the sync
/// engine can supply their content.
pub(super) fn open_no_follow(path: &Path) -> io::Result<File> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
        .open(path)?;
    let mut tag = FILE_ATTRIBUTE_TAG_INFO::default();
    // SAFETY: `tag` is valid for its size; the handle is open.
    let ok = unsafe {
        GetFileInformationByHandleEx(
            f.as_raw_handle(),
            FileAttributeTagInfo,
            (&mut tag as *mut FILE_ATTRIBUTE_TAG_INFO).cast(),
            size_of::<FILE_ATTRIBUTE_TAG_INFO>() as u32,
        )
    };
    if ok == 0 || tag.FileAttributes & FILE_ATTRIBUTE_REPARSE_POINT == 0 {
        return Ok(f);
    }
    // Name surrogates (symbolic links, junctions) point elsewhere: refuse.
    if tag.ReparseTag & 0x2000_0000 != 0 {
        return Err(io::Error::from_raw_os_error(
            ERROR_STOPPED_ON_SYMLINK as i32,
        ));
    }
    drop(f);
    std::fs::OpenOptions::new().read(true).open(path)
}

/// True when an open failed because the path was a link (see
/// [`open_no_follow`]).
pub(super) fn is_link_error(e: &io::Error) -> bool {
    e.raw_os_error() == Some(ERROR_STOPPED_ON_SYMLINK as i32)
}

/// This machine's host name (the DNS host label), or `COMPUTERNAME`.
pub(super) fn hostname() -> Option<String> {
    let mut buf = [0u16; 256];
    let mut len = buf.len() as u32;
    // SAFETY: the buffer is valid for `len` characters.
    let ok = unsafe { GetComputerNameExW(ComputerNameDnsHostname, buf.as_mut_ptr(), &mut len) };
    if ok != 0 && len > 0 {
        return String::from_utf16(&buf[..len as usize]).ok();
    }
    std::env::var("COMPUTERNAME").ok().filter(|n| !n.is_empty())
}

// ---------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------

/// See [`super::spawn_may_pass`].
pub(super) fn spawn_may_pass(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error().map(|c| c as u32),
        Some(ERROR_NO_SYSTEM_RESOURCES) | Some(ERROR_INTERNAL_ERROR)
    )
}

/// A job's process: std's own.
pub type JobProcess = std::process::Child;

/// See [`super::spawn_job`].
/// See [`super::await_start`]: a job here has no keeper, and has
/// started once spawned.
pub(super) fn await_start(
    _child: &JobProcess,
    _retrying: &mut dyn FnMut(&io::Error, usize),
) -> io::Result<()> {
    Ok(())
}

pub(super) fn spawn_job(s: &super::JobSpawn<'_>) -> io::Result<JobProcess> {
    super::std_command(s).spawn()
}

/// Starts the job's process suspended, in a console process group of its
/// own: [`Tree::adopt`] puts it in its Job Object before it runs a single
/// instruction, then resumes it.
pub(super) fn prepare_job(cmd: &mut Command) {
    cmd.creation_flags(CREATE_NEW_PROCESS_GROUP | CREATE_SUSPENDED);
}

/// The Job Objects of running jobs by leader pid, for [`kill_tree_now`]
/// (which only has the id). Raw handle values: the owning [`Tree`] removes
/// its entry before closing the handle.
static LIVE: Mutex<Vec<(i32, usize)>> = Mutex::new(Vec::new());

/// The process tree of one job: its main process and everything started
/// under it, all held in one Job Object that allows no breakaway.
#[derive(Debug)]
pub struct Tree {
    leader: i32,
    /// The leader's process handle (SYNCHRONIZE): waits on it never reap,
    /// and while it is open the pid cannot be reused.
    process: Handle,
    job: Handle,
}

impl Tree {
    /// Takes charge of a just-spawned, still suspended job process (see
    /// [`spawn_job`](super::spawn_job)): creates its Job Object, assigns it, resumes it.
    /// Each job has a Job Object of its own, so jobs running beside each
    /// other need no `mark` to be told apart.
    pub fn adopt(child: &std::process::Child, mark: Option<String>) -> io::Result<Tree> {
        let _ = mark;
        let leader = i32::try_from(child.id()).map_err(|_| io::Error::other("pid out of range"))?;
        let job = new_job()?;
        // SAFETY: both handles are valid; std's child handle has all access.
        if unsafe { AssignProcessToJobObject(job.0, child.as_raw_handle()) } == 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the pid is our unreaped child, so it names that process.
        let process = Handle::new(unsafe {
            OpenProcess(
                PROCESS_SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION,
                0,
                child.id(),
            )
        })?;
        resume_threads(child.id())?;
        LIVE.lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((leader, job.0 as usize));
        Ok(Tree {
            leader,
            process,
            job,
        })
    }

    /// The id recorded in the journal: the leader's pid.
    pub fn id(&self) -> i32 {
        self.leader
    }

    /// A blocking wait for the leader's exit that does not reap it, to run
    /// on a thread of its own.
    pub fn exit_waiter(&self) -> impl FnOnce() + Send + 'static {
        let handle = self.process.try_clone();
        move || {
            if let Ok(h) = handle {
                // SAFETY: a process handle with SYNCHRONIZE, owned here.
                unsafe { WaitForSingleObject(h.0, INFINITE) };
            }
        }
    }

    /// True once the leader has exited.
    pub fn leader_exited(&self) -> bool {
        // SAFETY: a process handle with SYNCHRONIZE.
        unsafe { WaitForSingleObject(self.process.0, 0) == WAIT_OBJECT_0 }
    }

    /// Signals the whole tree: Term is CTRL_BREAK to the job's console
    /// process group (see `has_console`); Kill ends every process in the
    /// Job Object.
    pub fn signal(&self, sig: Signal) {
        match sig {
            Signal::Term => {
                // Without a console there is no graceful stop to send; a
                // failed send is the same. The runner's forced stop follows
                // after the grace either way, and reports it.
                if has_console() {
                    // SAFETY: the leader's pid is its process group id.
                    unsafe { GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, self.leader as u32) };
                }
            }
            Signal::Kill => {
                // SAFETY: a valid Job Object handle.
                unsafe { TerminateJobObject(self.job.0, KILLED_EXIT_CODE) };
            }
        }
    }

    /// Live processes of the tree other than the leader.
    pub fn others(&self) -> Vec<i32> {
        job_pids(&self.job)
            .into_iter()
            .filter(|&p| p != self.leader)
            .collect()
    }

    /// Called after the leader was reaped: closing the kill-on-close Job
    /// Object ends anything still in it.
    pub fn release(self) {}
}

impl Drop for Tree {
    fn drop(&mut self) {
        // Forget the handle before it closes, so `kill_tree_now` never uses
        // a stale one.
        LIVE.lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|&(id, _)| id != self.leader);
    }
}

/// Kills the tree recorded under `id` at once (a second Ctrl-C).
pub(super) fn kill_tree_now(id: i32) {
    let live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    for &(_, job) in live.iter().filter(|&&(leader, _)| leader == id) {
        // SAFETY: the handle stays open while its entry is listed, and the
        // list is locked.
        unsafe { TerminateJobObject(job as HANDLE, KILLED_EXIT_CODE) };
    }
}

/// Name of a signal number, for result details. Windows processes end with
/// an exit code, never a signal, so this is only a fallback.
pub(super) fn signal_name(sig: i32) -> String {
    format!("signal {sig}")
}

/// The signal that ended a process: never one on Windows.
pub(super) fn exit_signal(_status: &std::process::ExitStatus) -> Option<i32> {
    None
}

/// Stops single processes: Kill terminates each; Term does nothing, as a
/// process that leads no console group of ours has no graceful stop (the
/// caller's Kill follows).
pub(super) fn signal_pids(pids: &[i32], sig: Signal) {
    if sig != Signal::Kill {
        return;
    }
    for &pid in pids.iter().filter(|&&p| p > 0) {
        // SAFETY: OpenProcess either fails or gives a handle we own.
        if let Ok(h) = Handle::new(unsafe { OpenProcess(PROCESS_TERMINATE, 0, pid as u32) }) {
            // SAFETY: a process handle with PROCESS_TERMINATE.
            unsafe { TerminateProcess(h.0, KILLED_EXIT_CODE) };
        }
    }
}

/// The listener's own Job Object, kept open for the life of the process.
static LISTENER_JOB: OnceLock<Option<Handle>> = OnceLock::new();

/// See [`super::tune_allocator`]: nothing to tune.
pub(super) fn tune_allocator() {}

/// Puts this process (the listener) in a kill-on-close Job Object: when it
/// dies, however it dies, the system closes the last handle and ends every
/// job it started. Best effort, as on Unix: on failure the listener runs
/// without that guarantee. Each job's own Job Object nests inside this one.
pub(super) fn become_subreaper() {
    LISTENER_JOB.get_or_init(|| {
        let job = new_job().ok()?;
        // SAFETY: a valid Job Object and our own pseudo process handle.
        let ok = unsafe { AssignProcessToJobObject(job.0, GetCurrentProcess()) };
        (ok != 0).then_some(job)
    });
}

/// After a crash, the live processes of the job that was running. On
/// Windows there are normally none: a job's processes all sit in its
/// kill-on-close Job Object, whose only handle the listener held, so the
/// system ended them when the listener died. What is left to check is the
/// recorded leader itself, and only if it is the same process (started when
/// the job did), never a stranger that reused the pid.
pub(super) fn orphans(o: &super::Orphaned<'_>) -> Vec<i32> {
    if o.group > 0 && is_alive(o.group) && started_near(o.group, o.started) {
        vec![o.group]
    } else {
        Vec::new()
    }
}

/// True when process `pid` was created within a few seconds of `when`.
fn started_near(pid: i32, when: std::time::SystemTime) -> bool {
    // SAFETY: OpenProcess either fails or gives a handle we own.
    let Ok(h) =
        Handle::new(unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid as u32) })
    else {
        return false;
    };
    let zero = FILETIME::default();
    let (mut created, mut exited, mut kernel, mut user) = (zero, zero, zero, zero);
    // SAFETY: a process handle with PROCESS_QUERY_LIMITED_INFORMATION.
    if unsafe { GetProcessTimes(h.0, &mut created, &mut exited, &mut kernel, &mut user) } == 0 {
        return false;
    }
    // FILETIME counts 100 ns since 1601-01-01, 11 644 473 600 s before 1970.
    let ticks = (u64::from(created.dwHighDateTime) << 32) | u64::from(created.dwLowDateTime);
    let Some(unix_ticks) = ticks.checked_sub(11_644_473_600 * 10_000_000) else {
        return false;
    };
    let start = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(unix_ticks * 100);
    let gap = start
        .duration_since(when)
        .or_else(|_| when.duration_since(start));
    gap.is_ok_and(|g| g <= std::time::Duration::from_secs(5))
}

/// True while process `pid` exists and has not exited.
pub(super) fn is_alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: OpenProcess either fails or gives a handle we own.
    let h = unsafe { OpenProcess(PROCESS_SYNCHRONIZE, 0, pid as u32) };
    match Handle::new(h) {
        // SAFETY: a process handle with SYNCHRONIZE.
        Ok(h) => unsafe { WaitForSingleObject(h.0, 0) == WAIT_TIMEOUT },
        // It exists, but is not ours to open.
        Err(e) => e.raw_os_error() == Some(ERROR_ACCESS_DENIED as i32),
    }
}

/// Stops a child process (the demo's listener). Windows has no polite
/// signal for a console process outside a group of its own, so this is
/// `TerminateProcess`, as Task Scheduler's "End" does; the listener's
/// kill-on-close job takes its running job with it, and its next start
/// records that job as interrupted.
pub(super) fn terminate(child: &mut std::process::Child) {
    let _ = child.kill();
}

/// A new, unnamed kill-on-close Job Object. Its handle is not inheritable,
/// so only this process holds it: when this process ends, the job ends.
fn new_job() -> io::Result<Handle> {
    // SAFETY: default security (not inheritable), no name.
    let job = Handle::new(unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) })?;
    let mut info = JOBOBJECT_EXTENDED_LIMIT_INFORMATION::default();
    info.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
    // SAFETY: `info` is valid for its size.
    let ok = unsafe {
        SetInformationJobObject(
            job.0,
            JobObjectExtendedLimitInformation,
            (&info as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
            size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(job)
}

/// The pids of the live processes in a Job Object.
fn job_pids(job: &Handle) -> Vec<i32> {
    // The list is two u32 counts, then the pids as usizes.
    let header =
        std::mem::offset_of!(JOBOBJECT_BASIC_PROCESS_ID_LIST, ProcessIdList) / size_of::<usize>();
    let mut room = 64usize;
    loop {
        let mut buf = vec![0usize; header + room];
        let mut len = 0u32;
        // SAFETY: the buffer is valid for its byte length and aligned for
        // the list structure.
        let ok = unsafe {
            QueryInformationJobObject(
                job.0,
                JobObjectBasicProcessIdList,
                buf.as_mut_ptr().cast(),
                (buf.len() * size_of::<usize>()) as u32,
                &mut len,
            )
        };
        let err = io::Error::last_os_error();
        // SAFETY: the buffer starts with the list header.
        let list = unsafe { &*(buf.as_ptr() as *const JOBOBJECT_BASIC_PROCESS_ID_LIST) };
        let assigned = list.NumberOfAssignedProcesses as usize;
        if assigned > room && room < 1 << 16 {
            // A full buffer answers ERROR_MORE_DATA: make room, ask again.
            room = assigned + 16;
            continue;
        }
        if ok == 0 && err.raw_os_error() != Some(ERROR_MORE_DATA as i32) {
            return Vec::new();
        }
        let n = (list.NumberOfProcessIdsInList as usize).min(room);
        return buf[header..header + n].iter().map(|&p| p as i32).collect();
    }
}

/// Resumes every thread of a process started with `CREATE_SUSPENDED` (std
/// does not hand out its main thread's handle).
fn resume_threads(pid: u32) -> io::Result<()> {
    // SAFETY: a snapshot of all threads; the handle is ours.
    let snap = Handle::new(unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) })?;
    let mut entry = THREADENTRY32 {
        dwSize: size_of::<THREADENTRY32>() as u32,
        ..Default::default()
    };
    let mut resumed = 0;
    // SAFETY: `entry` is valid with dwSize set.
    let mut more = unsafe { Thread32First(snap.0, &mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            // SAFETY: OpenThread either fails or gives a handle we own.
            let t =
                Handle::new(unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID) })?;
            // SAFETY: a thread handle with THREAD_SUSPEND_RESUME.
            if unsafe { ResumeThread(t.0) } == u32::MAX {
                return Err(io::Error::last_os_error());
            }
            resumed += 1;
        }
        // SAFETY: as for Thread32First.
        more = unsafe { Thread32Next(snap.0, &mut entry) } != 0;
    }
    if resumed == 0 {
        return Err(io::Error::other("no thread of the new process to resume"));
    }
    Ok(())
}

/// True when this process is attached to a console, which the jobs it
/// starts then share: only then can CTRL_BREAK reach them. (Under Wine 8
/// GenerateConsoleCtrlEvent fails even then, so there the stop is always
/// the forced one after the grace.)
fn has_console() -> bool {
    let mut pids = [0u32; 4];
    // SAFETY: the buffer is valid for its length.
    unsafe { GetConsoleProcessList(pids.as_mut_ptr(), pids.len() as u32) != 0 }
}

/// The folder's residency marks, from its attributes (opened for
/// attributes only: nothing is downloaded).
pub fn residency(path: &Path) -> super::Residency {
    use std::os::windows::fs::MetadataExt;
    // Cloud Files attributes (winnt.h); spelled here so the check needs no
    // further windows-sys feature.
    const PINNED: u32 = 0x0008_0000;
    const UNPINNED: u32 = 0x0010_0000;
    const RECALL_ON_OPEN: u32 = 0x0004_0000;
    const RECALL_ON_DATA_ACCESS: u32 = 0x0040_0000;
    let Ok(attrs) = std::fs::metadata(path).map(|m| m.file_attributes()) else {
        return super::Residency::Unknown;
    };
    if attrs & PINNED != 0 {
        super::Residency::Pinned
    } else if attrs & (UNPINNED | RECALL_ON_OPEN | RECALL_ON_DATA_ACCESS) != 0 {
        super::Residency::OnlineOnly
    } else {
        super::Residency::Unmarked
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};
    use windows_sys::Win32::Security::{GetSecurityDescriptorDacl, GetSecurityDescriptorOwner};
    use windows_sys::Win32::System::JobObjects::IsProcessInJob;

    fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
        let until = Instant::now() + limit;
        while !cond() {
            if Instant::now() > until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }

    #[test]
    fn no_replace_move_refuses_an_existing_name_in_any_case() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
        std::fs::write(&a, "a").unwrap();
        std::fs::write(&b, "b").unwrap();
        let e = rename_no_replace(&a, &b).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{e:?}");
        // Windows folders are case-insensitive: B.JSON is b.json.
        let e = rename_no_replace(&a, &dir.path().join("B.JSON")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{e:?}");
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "a");
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "b");
        rename_no_replace(&a, &dir.path().join("c.json")).unwrap();
        assert!(!a.exists());
    }

    #[test]
    fn sharing_and_lock_violations_are_transient() {
        for code in [5, 32, 33] {
            assert!(is_transient(&io::Error::from_raw_os_error(code)), "{code}");
        }
        assert!(!is_transient(&io::Error::from_raw_os_error(2)));
        assert!(!is_transient(&io::Error::from_raw_os_error(183)));
    }

    #[test]
    fn a_private_file_passes_the_key_check() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("k.key");
        let mut f = create_private(&p).unwrap();
        std::io::Write::write_all(&mut f, b"secret").unwrap();
        drop(f);
        check_key_permissions(&p).unwrap();
        assert_eq!(
            create_private(&p).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
    }

    /// The refusal rule over an access list given as SDDL text, owned by
    /// the current user.
    fn exposed_by(dacl: &str) -> Option<String> {
        let me = current_user().unwrap();
        // SAFETY: a valid SID.
        let text = unsafe { sid_string(me.as_ptr() as PSID) };
        let sddl = wide(OsStr::new(&format!("O:{text}D:P(A;;FA;;;{text}){dacl}"))).unwrap();
        let mut sd = std::ptr::null_mut();
        let (mut present, mut defaulted) = (0, 0);
        let (mut acl, mut owner): (*mut ACL, PSID) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: valid SDDL; the out pointers point into `sd`, freed last.
        unsafe {
            assert!(
                ConvertStringSecurityDescriptorToSecurityDescriptorW(
                    sddl.as_ptr(),
                    SDDL_REVISION_1,
                    &mut sd,
                    std::ptr::null_mut()
                ) != 0
            );
            assert!(GetSecurityDescriptorDacl(sd, &mut present, &mut acl, &mut defaulted) != 0);
            assert!(GetSecurityDescriptorOwner(sd, &mut owner, &mut defaulted) != 0);
            let found = exposure(acl, owner, Some(&me));
            LocalFree(sd);
            found
        }
    }

    #[test]
    fn the_key_rule_refuses_entries_that_let_others_read_or_change_it() {
        for dacl in [
            "(A;;FR;;;WD)",                   // Everyone may read
            "(A;;FW;;;BU)",                   // Users may write
            "(A;;GR;;;AU)",                   // Authenticated Users, generic read
            "(A;;WD;;;BG)",                   // Guests may rewrite the access list
            "(A;;0x1;;;S-1-5-21-1-2-3-1001)", // another user, read data only
        ] {
            assert!(exposed_by(dacl).is_some(), "{dacl} is refused");
        }
        for dacl in [
            "",
            "(A;;FA;;;SY)(A;;FA;;;BA)", // what a profile folder grants
            "(A;;FA;;;OW)",             // Owner Rights
            "(D;;FA;;;WD)",             // a deny entry exposes nothing
            "(A;;0x100000;;;WD)",       // SYNCHRONIZE only
            "(A;OIIO;FA;;;WD)",         // inherit-only: not for this file
        ] {
            assert_eq!(exposed_by(dacl), None, "{dacl} is fine");
        }
        assert!(exposed_by("(A;;FR;;;WD)").unwrap().contains("S-1-1-0"));
        // No access list at all grants everyone everything. (Built directly:
        // Wine's SDDL parser makes `D:NO_ACCESS_CONTROL` an empty list.)
        // SAFETY: a null DACL and owner are valid inputs.
        assert!(unsafe { exposure(std::ptr::null_mut(), std::ptr::null_mut(), None) }.is_some());
    }

    #[test]
    fn a_key_file_everyone_may_read_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let me = current_user().unwrap();
        // SAFETY: a valid SID.
        let me = unsafe { sid_string(me.as_ptr() as PSID) };
        let p = dir.path().join("everyone.key");
        drop(create_with_dacl(&p, &format!("D:P(A;;FA;;;{me})(A;;FR;;;WD)")).unwrap());
        let e = check_key_permissions(&p).unwrap_err();
        assert_eq!(e.code, crate::error::Code::Config);
        assert!(
            e.to_string().contains("readable or writable by others"),
            "{e}"
        );
        assert!(e.to_string().contains("icacls"), "{e}");
    }

    #[test]
    fn a_new_file_never_takes_a_name_in_use() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.log");
        std::io::Write::write_all(&mut create_new_no_follow(&p).unwrap(), b"x").unwrap();
        let e = create_new_no_follow(&p).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&p).unwrap(), b"x");
    }

    #[test]
    #[ignore = "Wine 8 cannot make symbolic links (CreateSymbolicLinkW succeeds, no link appears); \
                on Windows run with --ignored, with Developer Mode or as an administrator"]
    fn links_are_neither_read_through_nor_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.json");
        std::fs::write(&target, "secret").unwrap();
        let link = dir.path().join("link.json");
        std::os::windows::fs::symlink_file(&target, &link).unwrap();
        assert!(is_link_error(&open_no_follow(&link).unwrap_err()));
        let dangling = dir.path().join("dangling.log");
        std::os::windows::fs::symlink_file(dir.path().join("elsewhere"), &dangling).unwrap();
        assert!(create_new_no_follow(&dangling).is_err());
        assert!(
            !dir.path().join("elsewhere").exists(),
            "written through the link"
        );
    }

    #[test]
    #[ignore = "Wine 8 cannot make junctions (`mklink /J` exits 0 and no junction appears); \
                on Windows run with --ignored (a junction needs no privilege)"]
    fn a_junction_in_place_of_a_folder_is_never_entered() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("a.json"), "secret").unwrap();
        let junction = dir.path().join("inbox");
        let made = std::process::Command::new("cmd")
            .arg("/C")
            .arg("mklink")
            .arg("/J")
            .arg(&junction)
            .arg(&elsewhere)
            .status()
            .unwrap();
        assert!(made.success() && junction.exists(), "no junction was made");
        let root = crate::platform::DirHandle::open_trusted(dir.path()).unwrap();
        let name = std::ffi::OsStr::new("inbox");
        assert!(matches!(
            root.entry(name).unwrap().kind,
            crate::platform::EntryKind::Link
        ));
        match root.open_child(name, &junction) {
            Ok(_) => panic!("entered a junction"),
            Err(e) => assert!(is_link_error(&e), "{e}"),
        }
    }

    #[test]
    fn reads_do_not_follow_but_do_read_plain_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        std::fs::write(&p, "12345").unwrap();
        let mut s = String::new();
        std::io::Read::read_to_string(&mut open_no_follow(&p).unwrap(), &mut s).unwrap();
        assert_eq!(s, "12345");
        assert!(is_link_error(&io::Error::from_raw_os_error(
            ERROR_STOPPED_ON_SYMLINK as i32
        )));
    }

    #[test]
    fn this_machine_has_a_name() {
        assert!(hostname().is_some_and(|h| !h.is_empty()));
    }

    /// `cmd` that starts two more processes: a tree of three.
    fn spawn_tree() -> (std::process::Child, Tree) {
        let mut cmd = Command::new("cmd");
        cmd.args([
            "/C",
            "start /B ping -n 30 127.0.0.1 >nul & ping -n 30 127.0.0.1 >nul",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        // Nothing of the test's own: a process that outlived its tree would
        // hold the test runner's output open.
        .stderr(std::process::Stdio::null());
        prepare_job(&mut cmd);
        let child = cmd.spawn().unwrap();
        let tree = Tree::adopt(&child, None).unwrap();
        (child, tree)
    }

    #[test]
    fn the_whole_job_object_stops_together() {
        // As in the listener: the job's Job Object nests in ours.
        become_subreaper();
        let listener_job = LISTENER_JOB.get().and_then(Option::as_ref);
        let listener_job = listener_job.expect("the test process joined a kill-on-close job");
        let (mut child, tree) = spawn_tree();
        for job in [listener_job, &tree.job] {
            let mut inside = 0;
            // SAFETY: valid process and Job Object handles.
            let ok = unsafe { IsProcessInJob(child.as_raw_handle(), job.0, &mut inside) };
            assert!(
                ok != 0 && inside != 0,
                "the job's process is in both, nested"
            );
        }
        // `start /B` may pass through a short-lived helper process first
        // (Wine's does): wait for a moment when the whole tree is up.
        let mut others = Vec::new();
        assert!(
            wait_until(Duration::from_secs(20), || {
                others = tree.others();
                others.len() >= 2 && others.iter().all(|&p| is_alive(p))
            }),
            "the tree never grew: {others:?}"
        );
        assert!(!tree.leader_exited());
        let started = Instant::now();
        tree.signal(Signal::Kill);
        tree.exit_waiter()();
        assert!(tree.leader_exited());
        assert!(wait_until(Duration::from_secs(5), || tree
            .others()
            .is_empty()));
        assert!(others.iter().all(|&p| !is_alive(p)), "{others:?} live on");
        assert!(started.elapsed() < Duration::from_secs(5));
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(KILLED_EXIT_CODE as i32));
        tree.release();
    }

    #[test]
    fn kill_tree_now_finds_the_tree_by_its_id() {
        let (mut child, tree) = spawn_tree();
        assert!(wait_until(Duration::from_secs(20), || !tree
            .others()
            .is_empty()));
        kill_tree_now(tree.id());
        tree.exit_waiter()();
        assert!(wait_until(Duration::from_secs(5), || tree
            .others()
            .is_empty()));
        child.wait().unwrap();
        let id = tree.id();
        drop(tree);
        let live = LIVE.lock().unwrap();
        assert!(live.iter().all(|&(l, _)| l != id), "forgotten when dropped");
    }

    #[test]
    fn releasing_a_tree_ends_what_is_left_in_it() {
        let (mut child, tree) = spawn_tree();
        assert!(wait_until(Duration::from_secs(20), || tree.others().len() >= 2));
        let others = tree.others();
        tree.release();
        assert!(wait_until(Duration::from_secs(5), || others
            .iter()
            .all(|&p| !is_alive(p))));
        child.wait().unwrap();
    }

    #[test]
    fn an_orphan_is_the_recorded_leader_only_if_it_started_with_the_job() {
        let mut child = Command::new("ping")
            .args(["-n", "30", "127.0.0.1"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let o = |started| super::super::Orphaned {
            env: &[],
            group: pid,
            started,
        };
        let now = std::time::SystemTime::now();
        assert_eq!(orphans(&o(now)), vec![pid]);
        // The pid now names a process that started long after the job: a
        // stranger, never to be stopped.
        assert!(orphans(&o(now - Duration::from_secs(3600))).is_empty());
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(orphans(&o(now)).is_empty());
        assert!(!is_alive(pid));
    }
}
