//! `doctor`: this machine's set-up and each target's health, one check a
//! line, failures first with a hint, exit 1 when any warns. The checks and
//! their judgements are [`doctor`]'s; this file picks the targets as
//! `status` does, says where the settings came from, compares this
//! machine's service entry with the one `service install` would write
//! now, and prints ([`crate::view::doctor`]).

use crate::base::{error::Result, exit, names::Machine, read::FileRead};
use crate::front::cli::DoctorArgs;
use crate::front::config::{Context, Setting};
use crate::front::service::{self, Platform};
use crate::requests::doctor::{self, Inputs, ServiceFacts};
use crate::store::layout::{self, TargetDirs};
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
    let installed = match crate::store::fsops::read_local(&path, 1 << 20) {
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
    let state = service::install::systemd_state(&path);
    Some(ServiceFacts::Matches {
        path,
        kind,
        state,
        start: c.start,
    })
}

/// Runs `doctor`.
pub fn run(ctx: &Context, args: DoctorArgs) -> Result<u8> {
    if let Some(text) = ctx.s3_root() {
        let config = vec![source("root", ctx.root_setting())];
        let mut report = doctor::examine_store(&text, &|| ctx.s3_settings(), &config)?;
        if ctx.auth() != crate::trust::Auth::SharedKey {
            let at = crate::trust::store::RosterAt::Bucket(ctx.bucket(&text)?);
            let state = ctx.bucket_state(&text).ok();
            report = report.with(roster_checks(ctx, Some(&at), state.as_deref()));
        }
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
        .unwrap_or(crate::base::retention::DEFAULT_RETENTION);
    let auth = ctx.auth();
    let shared = auth == crate::trust::Auth::SharedKey;
    let loaded = root
        .as_deref()
        .filter(|_| !shared)
        .and_then(|r| ctx.key(Some(r)).ok());
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
        judge_with: (!shared).then_some(loaded.as_ref()),
    });
    if !shared {
        let state = root.as_deref().and_then(|r| ctx.state_dir(r).ok());
        let at = root.clone().map(crate::trust::store::RosterAt::Folder);
        report = report.with(roster_checks(ctx, at.as_ref(), state.as_deref()));
    }
    if let Some(facts) = service_facts(ctx) {
        report = report.with(vec![doctor::judge_service(&facts)]);
    }
    print(ctx, &report)
}

/// The roster mode's checks: the identity, the pin, and the roster at `at`
/// as this machine's `state` judges it.
fn roster_checks(
    ctx: &Context,
    at: Option<&crate::trust::store::RosterAt>,
    state: Option<&std::path::Path>,
) -> Vec<doctor::Check> {
    let id = ctx.identity_path().unwrap_or_default();
    let facts = doctor::roster::gather(ctx.auth(), &id, at, state);
    doctor::roster::judge_roster(&facts, crate::base::clock::now())
}

fn print(ctx: &Context, report: &doctor::Report) -> Result<u8> {
    super::emit(
        ctx,
        &view::doctor::json(report),
        &view::doctor::text(report),
    );
    Ok(if report.ok { exit::SUCCESS } else { exit::NO })
}
