//! `doctor`: this machine's set-up and each target's health, one check a
//! line, failures first with a hint, exit 1 when any warns. The checks and
//! their judgements are [`doctor`]'s; this file picks the targets as
//! `status` does, says where the settings came from, and prints.

use crate::cli::DoctorArgs;
use crate::config::{Context, Setting};
use crate::doctor::{self, Check, Inputs, Status};
use crate::error::Result;
use crate::exit;
use crate::layout::{self, TargetDirs};
use crate::names::Machine;
use crate::out::{self, Tone};

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

fn line(c: &Check) -> String {
    let word = match c.status {
        Status::Ok => out::paint("ok  ", Tone::Good),
        Status::Warn => out::paint("warn", Tone::Bad),
    };
    let subject = match &c.target {
        Some(t) => format!("{t} {}", c.check),
        None => c.check.to_string(),
    };
    let mut s = format!("{word}  {subject}: {}", c.message);
    if let Some(h) = &c.hint {
        s.push_str(&format!("\n      hint: {h}"));
    }
    s
}

/// Runs `doctor`.
pub fn run(ctx: &Context, args: DoctorArgs) -> Result<u8> {
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
    let report = doctor::examine(&Inputs {
        root: configured_root.as_deref(),
        key_file: key_file.as_deref(),
        state_dir: state_dir.as_deref(),
        machine: machine.as_ref().map(Machine::as_str),
        targets: &targets,
        file_limit,
        retention,
        config,
    });
    let warned = report
        .checks
        .iter()
        .filter(|c| c.status == Status::Warn)
        .count();
    let mut human: Vec<String> = report.checks.iter().map(line).collect();
    human.push(if warned == 0 {
        format!("all {} checks pass", report.checks.len())
    } else {
        format!("{warned} of {} checks warn", report.checks.len())
    });
    super::emit(ctx, &serde_json::json!(report), &human.join("\n"));
    Ok(if report.ok { exit::SUCCESS } else { exit::NO })
}
