//! Unit tests of the settings: precedence, the config file's keys and
//! values, and each setting's bounds.

use super::*;

#[test]
fn config_file_fields_and_refusals() {
    let p = Path::new("/c.toml");
    let c = parse_config(
        "root = \"/r\"\nmachine = \"PC\"\nfleet = [\"PC\", \"LAPTOP\"]\npoll_interval = \"500ms\"\n",
        p,
    )
    .unwrap();
    assert_eq!(c.root, Some(PathBuf::from("/r")));
    assert_eq!(
        c.fleet.as_deref(),
        Some(&["PC".to_string(), "LAPTOP".to_string()][..])
    );
    let e = parse_config("rooot = \"/r\"", p).unwrap_err();
    assert!(e.message.contains("/c.toml"), "{}", e.message);
    assert!(parse_config("poll_interval = \"soon\"", p).is_err());
    assert!(parse_config("root = 5", p).is_err());
}

/// A command line that gives no global option.
fn no_flags() -> Global {
    Global {
        root: None,
        key_file: None,
        identity_file: None,
        machine: None,
        state_dir: None,
        json: false,
        durability: None,
        auth: None,
        given: Vec::new(),
    }
}

#[test]
fn flags_win_over_the_file() {
    let g = Global {
        root: Some(PathBuf::from("/flag")),
        ..no_flags()
    };
    let f = FileConfig {
        root: Some(PathBuf::from("/file")),
        machine: Some("FILEPC".into()),
        poll_interval: Some("5s".into()),
        durability: Some(crate::store::fsops::Durability::Relaxed),
        ..FileConfig::default()
    };
    let ctx = Context::with_file(g.clone(), f.clone());
    assert_eq!(ctx.durability(), crate::store::fsops::Durability::Relaxed);
    let full = Global {
        durability: Some(crate::store::fsops::Durability::Full),
        ..g.clone()
    };
    assert_eq!(
        Context::with_file(full, f.clone()).durability(),
        crate::store::fsops::Durability::Full
    );
    assert_eq!(
        Context::with_file(g.clone(), FileConfig::default()).durability(),
        crate::store::fsops::Durability::Full
    );
    assert!(parse_config("durability = \"sometimes\"", Path::new("/c.toml")).is_err());
    let ctx = Context::with_file(g, f);
    assert_eq!(ctx.root.value, Some(PathBuf::from("/flag")));
    assert_eq!(ctx.root.source, Source::Flag);
    assert_eq!(ctx.machine.value.as_deref(), Some("FILEPC"));
    assert_eq!(ctx.machine.source, Source::File);
    assert_eq!(ctx.poll_interval(None).unwrap(), Duration::from_secs(5));
    assert_eq!(
        ctx.poll_interval(Some("1s")).unwrap(),
        Duration::from_secs(1)
    );
}

#[test]
fn a_file_that_is_not_toml_is_refused_naming_its_line_and_column() {
    let p = Path::new("/c.toml");
    let e = parse_config("root = \"/r\"\nmachine = \"PC\n", p).unwrap_err();
    assert_eq!(e.code, crate::base::error::Code::Config);
    assert!(e.message.contains("/c.toml"), "{}", e.message);
    assert!(e.message.contains("line 2, column 14"), "{}", e.message);
    let e = parse_config("\n\nwatch = 3\n", p).unwrap_err();
    assert!(e.message.contains("line 3, column 9"), "{}", e.message);
}

#[test]
fn each_value_in_the_file_meets_the_rule_its_flag_meets() {
    let p = Path::new("/c.toml");
    for (key, body) in [
        ("machine", "machine = \"CON\""),
        ("fleet", "fleet = [\"PC\", \"-x\"]"),
        ("poll_interval", "poll_interval = \"0s\""),
        ("stop_grace", "stop_grace = \"soon\""),
        ("slots", "slots = 65"),
        ("retention", "retention = \"a month\""),
        ("max_job_age", "max_job_age = \"0\""),
    ] {
        let e = parse_config(body, p).unwrap_err();
        assert_eq!(e.code, crate::base::error::Code::Config, "{key}");
        assert!(
            e.message
                .starts_with(&format!("config file /c.toml: {key}: ")),
            "{key}: {}",
            e.message
        );
    }
    assert!(
        parse_config("stop_grace = \"0s\"", p).is_ok(),
        "no grace is a choice"
    );
}

#[test]
fn a_refusal_names_the_source_that_gave_the_value() {
    let g = no_flags();
    let mut ctx = Context::with_file(
        g,
        FileConfig {
            poll_interval: Some("0s".into()),
            machine: Some("CON".into()),
            ..FileConfig::default()
        },
    );
    ctx.config_file = Some(ConfigFile {
        path: PathBuf::from("/c.toml"),
        source: Source::Default,
        read: true,
    });
    let e = ctx.poll_interval(None).unwrap_err();
    assert_eq!(e.code, crate::base::error::Code::Config);
    assert!(
        e.message
            .starts_with("config file /c.toml: poll_interval: "),
        "{}",
        e.message
    );
    let e = ctx.machine().unwrap_err();
    assert_eq!(e.code, crate::base::error::Code::Config);
    assert!(e.message.contains("/c.toml: machine: "), "{}", e.message);
    let e = ctx.poll_interval(Some("0")).unwrap_err();
    assert_eq!(e.code, crate::base::error::Code::Validation);
    assert!(e.message.starts_with("--poll-interval: "), "{}", e.message);
    let e = ctx.max_job_age(Some("0s")).unwrap_err();
    assert_eq!(e.code, crate::base::error::Code::Validation);
    assert!(e.message.starts_with("--max-job-age: "), "{}", e.message);
}
