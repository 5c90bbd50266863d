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

#[test]
fn flags_win_over_the_file() {
    let g = Global {
        root: Some(PathBuf::from("/flag")),
        key_file: None,
        machine: None,
        state_dir: None,
        json: false,
        durability: None,
        given: Vec::new(),
    };
    let f = FileConfig {
        root: Some(PathBuf::from("/file")),
        machine: Some("FILEPC".into()),
        poll_interval: Some("5s".into()),
        durability: Some(crate::fsops::Durability::Relaxed),
        ..FileConfig::default()
    };
    let ctx = Context::with_file(g.clone(), f.clone());
    assert_eq!(ctx.durability(), crate::fsops::Durability::Relaxed);
    let full = Global {
        durability: Some(crate::fsops::Durability::Full),
        ..g.clone()
    };
    assert_eq!(
        Context::with_file(full, f.clone()).durability(),
        crate::fsops::Durability::Full
    );
    assert_eq!(
        Context::with_file(g.clone(), FileConfig::default()).durability(),
        crate::fsops::Durability::Full
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
