//! `service install` / `service uninstall`: write or remove this machine's
//! service entry ([`crate::service`] makes its text from
//! [`Context::service_spec`]) and say how to start, stop and read it.
//!
//! The entry is written and removed here, never started: starting it is
//! the service manager's, and the commands printed say exactly how. On
//! Windows a task exists only once registered, so there `install` also
//! registers the XML it wrote (`schtasks /Create`) and `uninstall` deletes
//! the task.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::cli::{ServiceAction, ServiceArgs};
use crate::config::Context;
use crate::error::{Error, Result};
use crate::exit;
use crate::read::FileRead;
use crate::service::{self, Platform};

/// The largest entry read back: one is a few kilobytes.
const MAX_ENTRY_BYTES: u64 = 1 << 20;

/// Runs `service`.
pub fn run(ctx: &Context, args: ServiceArgs) -> Result<u8> {
    let platform = args.platform.unwrap_or_else(Platform::host);
    match args.action {
        ServiceAction::Install => install(ctx, platform, &args),
        ServiceAction::Uninstall if args.print => Err(Error::validation(
            "--print goes with `service install`: `service uninstall` only removes the entry",
        )),
        ServiceAction::Uninstall => uninstall(ctx, platform, args.force),
    }
}

/// Where `platform`'s entry lives, from this process's environment.
fn entry_path(platform: Platform) -> Result<PathBuf> {
    service::entry_path(platform, |v| std::env::var(v).ok()).ok_or_else(|| {
        Error::config(format!(
            "no home directory (HOME is not set): nowhere to put the {}",
            platform.kind()
        ))
    })
}

/// The entry's current text at `path`: `None` when nothing is there.
fn read_entry(path: &Path) -> Result<Option<String>> {
    match crate::fsops::read_local(path, MAX_ENTRY_BYTES) {
        FileRead::Missing => Ok(None),
        // Bytes no entry of ours has (not UTF-8 or UTF-16) differ from any.
        FileRead::Bytes(b) => {
            Ok(Some(service::decode(&b).unwrap_or_else(|| {
                String::from_utf8_lossy(&b).into_owned()
            })))
        }
        FileRead::TooLarge(_) => Ok(Some(String::new())),
        FileRead::NotAFile(kind) => Err(Error::config(format!(
            "{} is a {kind}, not a service entry; nothing was changed",
            path.display()
        ))
        .hint("move it aside, then run `fleet-dispatch service install` again")),
        FileRead::Unreadable(e) => Err(Error::config(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}

/// The first few lines of `installed` that the entry now would not have.
fn difference(installed: &str, expected: &str) -> String {
    let lines = service::differing_lines(installed, expected);
    let shown: Vec<&str> = lines.iter().take(3).copied().collect();
    let more = lines.len().saturating_sub(shown.len());
    let mut s = shown.join(" | ");
    if more > 0 {
        s.push_str(&format!(" (and {more} more)"));
    }
    s
}

/// Runs schtasks (Windows only): `Ok` or its own words on failure.
#[cfg(windows)]
fn schtasks(args: &[&std::ffi::OsStr]) -> std::result::Result<(), String> {
    let out = std::process::Command::new("schtasks")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run schtasks: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stderr).trim().to_string();
    Err(format!("schtasks failed ({}): {text}", out.status))
}

/// Registers the task from the XML at `path`, when this is Windows.
#[cfg(windows)]
fn register(platform: Platform, path: &Path) -> Result<bool> {
    if platform != Platform::Windows {
        return Ok(false);
    }
    let args = ["/Create", "/F", "/TN", service::TASK_NAME, "/XML"];
    let mut all: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    all.push(path.as_os_str());
    schtasks(&all).map_err(|m| {
        Error::new(
            crate::error::Code::Internal,
            format!("wrote {} but could not register it: {m}", path.display()),
        )
    })?;
    Ok(true)
}

/// Elsewhere a task's XML is only written (`--platform windows`).
#[cfg(not(windows))]
fn register(_platform: Platform, _path: &Path) -> Result<bool> {
    Ok(false)
}

fn install(ctx: &Context, platform: Platform, args: &ServiceArgs) -> Result<u8> {
    let spec = ctx.service_spec(platform)?;
    let text = service::render(platform, &spec).map_err(|u| {
        Error::config(format!(
            "{} {:?} cannot go into a {}: {}; nothing was written",
            u.what,
            u.value,
            platform.kind(),
            u.why
        ))
    })?;
    let path = entry_path(platform)?;
    for var in service::not_carried(platform, &spec) {
        eprintln!(
            "fleet-dispatch: note: a Task Scheduler task sets no variables: the listener gets your account's {var}, not this shell's"
        );
    }
    if service::is_build_output(&spec.exe) {
        eprintln!(
            "fleet-dispatch: note: {} is a build in a cargo target folder, which `cargo clean` or the next build replaces; install it first (`cargo install --locked --path .`) and run `service install` with the installed binary",
            spec.exe
        );
    }
    if args.print {
        super::emit(
            ctx,
            &json!({"platform": platform.as_str(), "path": path, "entry": text}),
            text.trim_end(),
        );
        return Ok(exit::SUCCESS);
    }
    let (changed, replaced) = match read_entry(&path)? {
        Some(old) if old == text => (false, false),
        Some(old) if !args.force => {
            return Err(Error::validation(format!(
                "a different {} is already at {}; refusing to replace it (it has: {})",
                platform.kind(),
                path.display(),
                difference(&old, &text)
            ))
            .hint("`fleet-dispatch service install --print` shows what would be written; --force replaces it"));
        }
        old => (true, old.is_some()),
    };
    if changed {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io("create", dir, &e))?;
        }
        crate::fsops::replace(
            &path,
            &service::encode(platform, &text),
            crate::fsops::Flush::DataAndName,
        )?;
    }
    let registered = register(platform, &path)?;
    let mut c = service::commands(platform, &path, &spec.home);
    if registered {
        c.start = format!("schtasks /Run /TN {}", service::TASK_NAME);
    }
    let runs = format!(
        "it runs {} listen as {} on {}",
        spec.exe,
        spec.pinned("FLEET_DISPATCH_MACHINE").unwrap_or_default(),
        spec.pinned("FLEET_DISPATCH_ROOT").unwrap_or_default()
    );
    let mut human = vec![if changed {
        format!("wrote the {} {}: {runs}", platform.kind(), path.display())
    } else {
        format!(
            "the {} {} is already installed, unchanged: {runs}",
            platform.kind(),
            path.display()
        )
    }];
    if registered {
        human.push(format!("registered the task {}", service::TASK_NAME));
    }
    human.push(format!("start it (now and at every login): {}", c.start));
    human.push(format!("stop it: {}", c.stop));
    human.push(format!("its log: {}", c.log));
    if platform == Platform::Linux {
        human.push("keep it running while logged out: loginctl enable-linger \"$USER\"".into());
    }
    if replaced {
        human.push(format!(
            "a listener the old entry started keeps the old settings until restarted: {}",
            c.restart
        ));
    }
    super::emit(
        ctx,
        &json!({
            "platform": platform.as_str(),
            "path": path,
            "changed": changed,
            "replaced": replaced,
            "registered": registered,
            "start": c.start,
            "stop": c.stop,
            "log": c.log,
        }),
        &human.join("\n"),
    );
    Ok(exit::SUCCESS)
}

fn uninstall(ctx: &Context, platform: Platform, force: bool) -> Result<u8> {
    let path = entry_path(platform)?;
    let Some(text) = read_entry(&path)? else {
        super::emit(
            ctx,
            &json!({"platform": platform.as_str(), "path": path, "removed": false}),
            &format!(
                "no {} at {}: nothing to remove",
                platform.kind(),
                path.display()
            ),
        );
        return Ok(exit::SUCCESS);
    };
    if !text.contains(service::MARK) && !force {
        return Err(Error::validation(format!(
            "{} was not written by `fleet-dispatch service install`; refusing to remove it",
            path.display()
        ))
        .hint("remove it yourself, or pass --force"));
    }
    std::fs::remove_file(&path).map_err(|e| Error::io("remove", &path, &e))?;
    // `systemctl enable` linked it into default.target.wants; `disable`
    // cannot find a unit whose file is gone, so the link goes with it.
    let wants = path
        .parent()
        .map(|d| d.join("default.target.wants").join(service::SYSTEMD_UNIT));
    if platform == Platform::Linux
        && let Some(w) = wants.filter(|w| w.is_symlink())
    {
        std::fs::remove_file(&w).map_err(|e| Error::io("remove", &w, &e))?;
    }
    #[cfg(windows)]
    if platform == Platform::Windows
        && let Err(m) = schtasks(&[
            "/Delete".as_ref(),
            "/F".as_ref(),
            "/TN".as_ref(),
            service::TASK_NAME.as_ref(),
        ])
    {
        eprintln!("fleet-dispatch: note: the task was not deleted: {m}");
    }
    let home =
        std::env::var(if cfg!(windows) { "USERPROFILE" } else { "HOME" }).unwrap_or_default();
    let c = service::commands(platform, &path, &home);
    super::emit(
        ctx,
        &json!({"platform": platform.as_str(), "path": path, "removed": true, "stop": c.after_removal}),
        &format!(
            "removed the {} {}\nif it is still running, stop it: {}",
            platform.kind(),
            path.display(),
            c.after_removal
        ),
    );
    Ok(exit::SUCCESS)
}
