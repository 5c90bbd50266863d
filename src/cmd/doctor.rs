//! `doctor`: this machine's set-up and each target's health, one check a
//! line, failures first with a hint, exit 1 when any warns. The checks and
//! their judgements are [`doctor`]'s; this file picks the targets as
//! `status` does, says where the settings came from, compares this
//! machine's service entry with the one `service install` would write
//! now, and prints ([`crate::view::doctor`]).

use crate::cli::DoctorArgs;
use crate::config::{Context, Setting};
use crate::doctor::{self, Inputs, ServiceFacts};
use crate::error::Result;
use crate::exit;
use crate::layout::{self, TargetDirs};
use crate::names::Machine;
use crate::objstore;
use crate::read::FileRead;
use crate::service::{self, Platform};
use crate::view;

/// Lowers [`doctor::FILE_LIMIT`] for a test, which cannot make 300,000
/// files in reasonable time. A variable rather than a hidden flag: the
/// flags drive `--help`, the man page and the completions, and this is
/// no setting for people.
const FILE_LIMIT_VAR: &str = "FLEET_DISPATCH_DOCTOR_FILE_LIMIT";

fn source<T>(label: &str, s: &Setting<T>) -> String {
    format!("{label} from {}", s.source.as_str())
}

fn targets(ctx: &Context, root: &std::path::Path, args: &DoctorArgs) -> Result<Vec<TargetDirs>> {
    let names: Vec<String> = if args.all {
        layout::existing_targets(root)?
    } else if let Some(t) = &args.target {
        vec![ctx.target(root, t)?.target().to_string()]
    } else {
        match ctx
            .machine()
            .ok()
            .and_then(|me| layout::find_target(root, &me).transpose())
        {
            Some(mine) => vec![mine?],
            None => layout::existing_targets(root)?,
        }
    };
    Ok(names
        .iter()
        .filter_map(|n| Machine::parse(n, "target").ok())
        .map(|m| TargetDirs::new(root, &m))
        .collect())
}

/// This machine's service entry against the one `service install` would
/// write now; `None` without a home directory to look in.
fn service_facts(ctx: &Context) -> Option<ServiceFacts> {
    let platform = Platform::host();
    let path = service::entry_path(platform, |v| std::env::var(v).ok())?;
    let kind = platform.kind();
    let installed = match crate::fsops::read_local(&path, 1 << 20) {
        FileRead::Missing => return Some(ServiceFacts::Absent { path, kind }),
        FileRead::Bytes(b) => service::decode(&b).unwrap_or_default(),
        _ => String::new(),
    };
    let spec = match ctx.service_spec(platform) {
        Ok(spec) => spec,
        Err(e) => {
            return Some(ServiceFacts::Unchecked {
                path,
                why: e.message,
            });
        }
    };
    let expected = match service::render(platform, &spec) {
        Ok(text) => text,
        Err(u) => {
            let why = format!("{} {:?}: {}", u.what, u.value, u.why);
            return Some(ServiceFacts::Unchecked { path, why });
        }
    };
    let c = service::commands(platform, &path, &spec.home);
    if installed != expected {
        let lines = service::differing_lines(&installed, &expected);
        let mut shown = lines
            .iter()
            .take(3)
            .copied()
            .collect::<Vec<_>>()
            .join(" | ");
        if shown.is_empty() {
            shown = "the same lines, in another order or encoding".into();
        }
        return Some(ServiceFacts::Differs {
            path,
            kind,
            lines: shown,
            restart: c.restart,
        });
    }
    let state = systemd_state(&path);
    Some(ServiceFacts::Matches {
        path,
        kind,
        state,
        start: c.start,
    })
}

/// The unit's state as the systemd user manager says it, only when that
/// manager has loaded the unit from `path` (a read-only question; `None`
/// where there is no systemctl or no user manager to ask).
fn systemd_state(path: &std::path::Path) -> Option<String> {
    if Platform::host() != Platform::Linux {
        return None;
    }
    let out = std::process::Command::new("systemctl")
        .args(["--user", "show", service::SYSTEMD_UNIT])
        .args(["-p", "FragmentPath", "-p", "ActiveState"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k))
            .map(str::to_string)
    };
    if field("FragmentPath=")?.as_str() != path.to_str()? {
        return None;
    }
    field("ActiveState=")
}

/// Runs `doctor`.
pub fn run(ctx: &Context, args: DoctorArgs) -> Result<u8> {
    if let Some(text) = ctx.s3_root() {
        let config = vec![source("root", ctx.root_setting())];
        let report = doctor::examine_store(&text, &objstore::settings_from_env, &config)?;
        return print(ctx, &report);
    }
    let root = ctx.root().ok();
    let targets = match &root {
        Some(r) => targets(ctx, r, &args)?,
        None => Vec::new(),
    };
    let configured_root = ctx.root_setting().value.clone();
    let key_file = ctx.key_file_setting().value.clone();
    let state_dir = ctx.state_dir_setting().value.clone();
    let machine = ctx.machine().ok();
    let mut config = vec![
        source("root", ctx.root_setting()),
        source("key file", ctx.key_file_setting()),
        source("machine", ctx.machine_setting()),
        source("state dir", ctx.state_dir_setting()),
    ];
    config.push(match ctx.config_file() {
        Some(f) if f.read => format!("config file {}", f.path.display()),
        Some(f) => format!("no config file ({} is not there)", f.path.display()),
        None => "no config file".to_string(),
    });
    let file_limit = std::env::var(FILE_LIMIT_VAR)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(doctor::FILE_LIMIT);
    // A bad retention or max age is `config`'s and `sweep`'s to refuse;
    // here it only decides what a sweep would free, so the default stands in.
    let retention = ctx
        .max_job_age(None)
        .and_then(|age| ctx.retention(None, age))
        .unwrap_or(crate::retention::DEFAULT_RETENTION);
    let mut report = doctor::examine(&Inputs {
        root: configured_root.as_deref(),
        key_file: key_file.as_deref(),
        state_dir: state_dir.as_deref(),
        machine: machine.as_ref().map(Machine::as_str),
        targets: &targets,
        fleet: &ctx.fleet(),
        file_limit,
        retention,
        config,
    });
    if let Some(facts) = service_facts(ctx) {
        let mut checks = std::mem::take(&mut report.checks);
        checks.push(doctor::judge_service(&facts));
        report = doctor::Report::new(checks, report.key_fingerprint);
    }
    print(ctx, &report)
}

fn print(ctx: &Context, report: &doctor::Report) -> Result<u8> {
    super::emit(
        ctx,
        &view::doctor::json(report),
        &view::doctor::text(report),
    );
    Ok(if report.ok { exit::SUCCESS } else { exit::NO })
}
