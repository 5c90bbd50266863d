//! Windows key-file permissions: the file's DACL, read and judged as the
//! Unix check judges mode bits, and set owner-only at creation.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::windows::io::FromRawHandle;
use std::path::Path;

use windows_sys::Win32::Foundation::{
    GENERIC_ALL, GENERIC_READ, GENERIC_WRITE, HANDLE, INVALID_HANDLE_VALUE, LocalFree,
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
    CREATE_NEW, CreateFileW, FILE_APPEND_DATA, FILE_ATTRIBUTE_NORMAL, FILE_READ_DATA,
    FILE_WRITE_DATA, WRITE_DAC, WRITE_OWNER,
};
use windows_sys::Win32::System::SystemServices::{
    ACCESS_ALLOWED_ACE_TYPE, ACCESS_ALLOWED_CALLBACK_ACE_TYPE,
};
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

use crate::base::error::{Error, Result};
use crate::platform::win32::{Handle, wide};

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

#[cfg(test)]
mod tests {
    use super::*;

    use windows_sys::Win32::Security::{GetSecurityDescriptorDacl, GetSecurityDescriptorOwner};

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
        assert_eq!(e.code, crate::base::error::Code::Config);
        assert!(
            e.to_string().contains("readable or writable by others"),
            "{e}"
        );
        assert!(e.to_string().contains("icacls"), "{e}");
    }
}
