//! `service install` / `service uninstall`: write or remove this machine's
//! service entry ([`crate::front::service::install`], from
//! [`Context::service_spec`]) and say how to start, stop and read it.

use serde_json::json;

use crate::base::error::{Error, Result};
use crate::base::exit;
use crate::front::cli::{ServiceAction, ServiceArgs};
use crate::front::config::Context;
use crate::front::service::install::{self, Entry};
use crate::front::service::{self, Platform};

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

fn install(ctx: &Context, platform: Platform, args: &ServiceArgs) -> Result<u8> {
    let spec = ctx.service_spec(platform)?;
    let entry = Entry::new(platform, &spec)?;
    let (path, text) = (&entry.path, &entry.text);
    for var in service::not_carried(platform, &spec) {
        crate::note!(
            "fleet-dispatch: note: a Task Scheduler task sets no variables: the listener gets your account's {var}, not this shell's"
        );
    }
    if service::is_build_output(&spec.exe) {
        crate::note!(
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
    let done = entry.install(&spec, args.force)?;
    let c = &done.commands;
    let runs = format!(
        "it runs {} listen as {} on {}",
        spec.exe,
        spec.pinned("FLEET_DISPATCH_MACHINE").unwrap_or_default(),
        spec.pinned("FLEET_DISPATCH_ROOT").unwrap_or_default()
    );
    let mut human = vec![if done.changed {
        format!("wrote the {} {}: {runs}", platform.kind(), path.display())
    } else {
        format!(
            "the {} {} is already installed, unchanged: {runs}",
            platform.kind(),
            path.display()
        )
    }];
    if done.registered {
        human.push(format!("registered the task {}", service::TASK_NAME));
    }
    human.push(format!("start it (now and at every login): {}", c.start));
    human.push(format!("stop it: {}", c.stop));
    human.push(format!("its log: {}", c.log));
    if platform == Platform::Linux {
        human.push("keep it running while logged out: loginctl enable-linger \"$USER\"".into());
    }
    if done.replaced {
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
            "changed": done.changed,
            "replaced": done.replaced,
            "registered": done.registered,
            "start": c.start,
            "stop": c.stop,
            "log": c.log,
        }),
        &human.join("\n"),
    );
    Ok(exit::SUCCESS)
}

fn uninstall(ctx: &Context, platform: Platform, force: bool) -> Result<u8> {
    let path = install::entry_path(platform)?;
    let Some(removed) = install::uninstall(platform, &path, force)? else {
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
    if let Some(note) = &removed.note {
        crate::note!("fleet-dispatch: note: {note}");
    }
    let after = &removed.commands.after_removal;
    super::emit(
        ctx,
        &json!({"platform": platform.as_str(), "path": path, "removed": true, "stop": after}),
        &format!(
            "removed the {} {}\nif it is still running, stop it: {after}",
            platform.kind(),
            path.display(),
        ),
    );
    Ok(exit::SUCCESS)
}
