//! `config`'s view of the settings: each effective setting, where it came
//! from and what is worth knowing about it (missing, inside the root, or
//! refused as the command that uses it would refuse it). Reads the config
//! file and the variables as every command does, and creates nothing.

use serde_json::{Value, json};

use super::{Context, Setting};

/// The settings as `config` shows them.
#[derive(Debug)]
pub struct Shown {
    /// One line a setting, in the order shown.
    pub lines: Vec<Line>,
    /// 0, or the exit status of the first refused setting.
    pub status: u8,
}

/// One printed line: a setting's name, its value, where it came from and
/// what is worth knowing about it.
#[derive(Debug)]
pub struct Line {
    /// Its key in the JSON document.
    pub key: &'static str,
    /// Its name in the text.
    pub label: &'static str,
    /// Its value.
    pub value: Value,
    /// Where it came from: `flag`, `env`, `file` or `default`.
    pub source: &'static str,
    /// What is worth knowing about it (missing, refused, …).
    pub note: Option<String>,
}

fn line<T: serde::Serialize>(
    key: &'static str,
    label: &'static str,
    s: &Setting<T>,
    note: Option<String>,
) -> Line {
    Line {
        key,
        label,
        value: json!(s.value),
        source: s.source.as_str(),
        note,
    }
}

/// Says what is wrong with a path that should be there, if anything.
fn presence(path: Option<&std::path::Path>, dir: bool, missing: &str) -> Option<String> {
    let path = path?;
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() == dir => None,
        Ok(_) if dir => Some("not a directory".into()),
        Ok(_) => Some("not a file".into()),
        Err(_) => Some(missing.into()),
    }
}

/// A setting's variable, when set and not empty, as `config` sees it
/// (no flag exists for `config`, so a value there came from the variable).
fn variable(name: &str) -> Option<(String, crate::front::cli::Given)> {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty())
        .map(|v| (v, crate::front::cli::Given::Variable))
}

/// A [`variable`]'s text, as a command's flag would give it.
fn text(v: &Option<(String, crate::front::cli::Given)>) -> Option<&str> {
    v.as_ref().map(|(t, _)| t.as_str())
}

/// A [`variable`]'s value as the settings take it.
fn given(
    v: &Option<(String, crate::front::cli::Given)>,
) -> Option<(&str, crate::front::cli::Given)> {
    v.as_ref().map(|(v, how)| (v.as_str(), *how))
}

/// The effective settings and the status `config` exits with.
pub fn shown(ctx: &Context) -> Shown {
    let root = ctx.root_setting();
    let key = ctx.key_file_setting();
    let identity = ctx.identity_file_setting();
    let state = ctx.state_dir_setting();
    let inside = |p: &Option<std::path::PathBuf>| match (p, &root.value) {
        (Some(p), Some(r)) if crate::store::layout::is_inside(p, r) => {
            Some("inside the root: it would sync, and is refused".to_string())
        }
        _ => None,
    };
    let machine = ctx.machine_setting();
    let machine_note = ctx.machine().err().map(|e| e.message);
    let [poll, stop_grace, retention, max_job_age, slots] = [
        super::POLL_INTERVAL_VAR,
        super::STOP_GRACE_VAR,
        super::RETENTION_VAR,
        super::MAX_JOB_AGE_VAR,
        super::SLOTS_VAR,
    ]
    .map(variable);
    // Each value as the commands that use it would judge it: a refused one
    // is shown with why, and makes `config` exit as they would.
    let age = ctx.max_job_age(text(&max_job_age));
    // In the order they are shown: the first refused one sets the status.
    let refused = [
        ctx.poll_interval(text(&poll)).err(),
        ctx.stop_grace(text(&stop_grace)).err(),
        ctx.slots(text(&slots)).err(),
        age.as_ref()
            .ok()
            .and_then(|a| ctx.retention(text(&retention), *a).err()),
        age.as_ref().err().cloned(),
    ];
    let [poll_bad, grace_bad, slots_bad, retention_bad, age_bad] = refused
        .clone()
        .map(|e| e.map(|e| format!("refused: {}", e.message)));
    let poll = ctx.poll_interval_setting(given(&poll));
    let stop_grace = ctx.stop_grace_setting(given(&stop_grace));
    let retention = ctx.retention_setting(given(&retention));
    let max_job_age = ctx.max_job_age_setting(given(&max_job_age));
    let slots = ctx.slots_setting(given(&slots));
    let config_file = ctx.config_file();
    let d = ctx.durability_setting();
    let durability = Setting {
        value: d
            .value
            .and_then(|v| clap::ValueEnum::to_possible_value(&v))
            .map(|p| p.get_name().to_string()),
        source: d.source,
    };
    let a = ctx.auth_setting();
    let auth = Setting {
        value: a.value.map(|v| v.as_str().to_string()),
        source: a.source,
    };
    let lines = [
        line(
            "root",
            "root",
            root,
            match &root.value {
                None => Some("not set: pass --root DIR or set FLEET_DISPATCH_ROOT".into()),
                Some(_) if ctx.s3_root().is_some() => Some(format!(
                    "an object store: only {} work on one in this version, and no listener (docs/object-store.md)",
                    super::store::S3_WORKS
                )),
                Some(r) => presence(Some(r), true, "does not exist"),
            },
        ),
        line(
            "keyFile",
            "key file",
            key,
            inside(&key.value).or_else(|| {
                presence(
                    key.value.as_deref(),
                    false,
                    if ctx.auth() == crate::trust::Auth::Roster {
                        "missing, and not needed: --auth roster signs with this machine's identity"
                    } else {
                        "missing: run `fleet-dispatch keygen`, or copy the fleet's key here"
                    },
                )
            }),
        ),
        line(
            "identityFile",
            "identity file",
            identity,
            inside(&identity.value).or_else(|| {
                presence(
                    identity.value.as_deref(),
                    false,
                    "missing: run `fleet-dispatch identity init` (used by the roster, docs/identities.md)",
                )
            }),
        ),
        line("machine", "machine", machine, machine_note),
        line(
            "stateDir",
            "state dir",
            state,
            inside(&state.value)
                .or_else(|| presence(state.value.as_deref(), true, "not created yet")),
        ),
        line("durability", "durability", &durability, None),
        line("auth", "auth", &auth, None),
        line("pollInterval", "poll interval", &poll, poll_bad),
        line("watch", "watch", &ctx.watch_setting(), None),
        line(
            "stopGrace",
            "stop grace",
            &stop_grace,
            grace_bad.or_else(|| {
                stop_grace
                    .value
                    .is_none()
                    .then(|| "a stopped listener gives the running job its own grace".into())
            }),
        ),
        line("slots", "slots", &slots, slots_bad),
        line("fleet", "fleet", &ctx.fleet_setting(), None),
        line("retention", "retention", &retention, retention_bad),
        line("maxJobAge", "max job age", &max_job_age, age_bad),
        s3_line(ctx, "s3Endpoint", "s3 endpoint", 0),
        s3_line(ctx, "s3Region", "s3 region", 1),
        s3_line(ctx, "s3PathStyle", "s3 path style", 2),
        s3_line(ctx, "s3AllowHttp", "s3 allow http", 3),
        Line {
            key: "configFile",
            label: "config file",
            value: json!(config_file.map(|f| &f.path)),
            source: config_file.map_or("default", |f| f.source.as_str()),
            note: match config_file {
                None => Some("no home directory to look in".into()),
                Some(f) if !f.read => Some("not present".into()),
                Some(_) => None,
            },
        },
    ];
    Shown {
        lines: lines.into(),
        status: status(&refused),
    }
}

/// The line of the object-store setting `S3_KEYS[n]`: its value and
/// where it came from; the endpoint's line says why the settings are
/// refused, when they are and the root is a bucket.
fn s3_line(ctx: &Context, key: &'static str, label: &'static str, n: usize) -> Line {
    let (var, _) = super::S3_KEYS[n];
    let (value, source) = match ctx.s3_setting(var) {
        Some((v, s)) => (Some(v), s),
        None => (None, super::Source::Default),
    };
    let note = (n == 0 && ctx.s3_root().is_some())
        .then(|| ctx.s3_settings().err())
        .flatten()
        .map(|e| format!("refused: {}", e.message));
    line(key, label, &Setting { value, source }, note)
}

/// 0, or the exit status of the first refused setting.
fn status(refused: &[Option<crate::base::error::Error>]) -> u8 {
    refused
        .iter()
        .flatten()
        .next()
        .map_or(0, |e| crate::base::exit::of(e.code))
}
