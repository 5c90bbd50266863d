//! The entries' text and quoting, without a disk.

use super::*;

/// A root no format takes as it is: spaces, `%`, `$`, `&`, `<`, quotes
/// and a backslash.
const HOSTILE: &str = "/home/a b/100% sure $HOME & <x> \"q\" 'a' \\d";

fn spec(root: &str) -> Spec {
    Spec {
        exe: "/opt/fleet dispatch/bin/fleet-dispatch".into(),
        pinned: vec![
            Pinned {
                var: "FLEET_DISPATCH_ROOT",
                flag: Some("--root"),
                value: root.into(),
            },
            Pinned {
                var: "FLEET_DISPATCH_MACHINE",
                flag: Some("--machine"),
                value: "PC".into(),
            },
            Pinned {
                var: "FLEET_DISPATCH_CONFIG",
                flag: None,
                value: "/home/a/.config/fleet-dispatch/config.toml".into(),
            },
            Pinned {
                var: "FLEET_DISPATCH_STOP_GRACE",
                flag: Some("--stop-grace"),
                value: "20s".into(),
            },
        ],
        path: Some("/home/a/.cargo/bin:/usr/bin".into()),
        home: "/home/a".into(),
        stop_grace_secs: 20,
        user: Some("DOM\\a".into()),
    }
}

/// systemd's reading of one quoted word (C escapes, `%%`, and with
/// `dollar`, `$$`).
fn systemd_unquote(word: &str, dollar: bool) -> String {
    let inner = word
        .strip_prefix('"')
        .and_then(|w| w.strip_suffix('"'))
        .unwrap();
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(chars.next().unwrap()),
            '%' | '$' if c == '%' || dollar => {
                assert_eq!(chars.next(), Some(c), "a lone {c} in {word}");
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

#[test]
fn systemd_words_come_back_as_written() {
    let q = systemd_quote(HOSTILE, true);
    assert_eq!(systemd_unquote(&q, true), HOSTILE);
    assert!(q.contains("100%% sure $$HOME"), "{q}");
    // Environment= expands no `$`: it stays single there.
    let e = systemd_quote("A=$x%", false);
    assert_eq!(e, "\"A=$x%%\"");
}

#[test]
fn the_unit_runs_the_binary_with_each_setting_and_path() {
    let unit = systemd_unit(&spec(HOSTILE));
    let exec: Vec<&str> = unit
        .lines()
        .filter_map(|l| l.strip_prefix("ExecStart="))
        .collect();
    assert_eq!(exec, ["\"/opt/fleet dispatch/bin/fleet-dispatch\" listen"]);
    let env: Vec<String> = unit
        .lines()
        .filter_map(|l| l.strip_prefix("Environment="))
        .map(|w| systemd_unquote(w, false))
        .collect();
    assert!(
        env.contains(&format!("FLEET_DISPATCH_ROOT={HOSTILE}")),
        "{env:?}"
    );
    assert!(env.contains(&"PATH=/home/a/.cargo/bin:/usr/bin".to_string()));
    assert!(env.contains(&"FLEET_DISPATCH_STOP_GRACE=20s".to_string()));
    assert!(unit.contains("\nTimeoutStopSec=30s\n"));
}

#[test]
fn xml_text_is_escaped() {
    assert_eq!(xml_escape("a&b<c>\"d'"), "a&amp;b&lt;c&gt;&quot;d&apos;");
    let plist = launchd_plist(&spec(HOSTILE));
    assert!(plist.contains("100% sure $HOME &amp; &lt;x&gt; &quot;q&quot;"));
    assert!(!plist.contains("& <"));
    let xml = task_xml(&spec("D:\\Sync 1\\fleet & co"));
    assert!(
        xml.contains("--root &quot;D:\\Sync 1\\fleet &amp; co&quot;"),
        "{xml}"
    );
    assert!(xml.contains("<UserId>DOM\\a</UserId>"));
}

/// `CommandLineToArgvW`'s reading of one quoted argument.
fn argv_unquote(word: &str) -> String {
    let inner: Vec<char> = word[1..word.len() - 1].chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < inner.len() {
        let mut n = 0;
        while i < inner.len() && inner[i] == '\\' {
            n += 1;
            i += 1;
        }
        if i < inner.len() && inner[i] == '"' {
            out.push_str(&"\\".repeat(n / 2));
            assert!(n % 2 == 1, "an unescaped quote inside {word}");
            out.push('"');
            i += 1;
        } else {
            let n = if i == inner.len() { n / 2 } else { n };
            out.push_str(&"\\".repeat(n));
            if i < inner.len() {
                out.push(inner[i]);
                i += 1;
            }
        }
    }
    out
}

#[test]
fn windows_arguments_come_back_as_written() {
    for s in ["C:\\a b\\", "say \"hi\"", "a\\\\\"b", "plain", "C:\\x\\\\"] {
        assert_eq!(argv_unquote(&windows_arg(s)), s, "{}", windows_arg(s));
    }
}

#[test]
fn a_task_carries_the_settings_with_flags_and_says_which_it_cannot() {
    let s = spec("C:\\Sync");
    assert_eq!(
        task_arguments(&s),
        "listen --root \"C:\\Sync\" --machine \"PC\" --stop-grace \"20s\""
    );
    assert_eq!(
        not_carried(Platform::Windows, &s),
        ["FLEET_DISPATCH_CONFIG", "PATH"]
    );
    assert!(not_carried(Platform::Linux, &s).is_empty());
}

#[test]
fn values_no_entry_can_hold_are_refused() {
    let bad = render(Platform::Linux, &spec("/a\nb")).unwrap_err();
    assert_eq!(bad.what, "FLEET_DISPATCH_ROOT");
    // One `%` is safe for Task Scheduler; `%NAME%` would be expanded.
    assert!(render(Platform::Windows, &spec("C:\\100% sure")).is_ok());
    let bad = render(Platform::Windows, &spec("C:\\%TEMP%")).unwrap_err();
    assert!(bad.why.contains("expand"), "{bad:?}");
    assert!(render(Platform::Linux, &spec("/%TEMP%")).is_ok());
}

#[test]
fn entries_live_where_each_manager_looks() {
    let env = |pairs: &'static [(&str, &str)]| {
        move |k: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    };
    let home = &[("HOME", "/h")];
    assert_eq!(
        entry_path(Platform::Linux, env(home)).unwrap(),
        Path::new("/h/.config/systemd/user/fleet-dispatch.service")
    );
    assert_eq!(
        entry_path(
            Platform::Linux,
            env(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "/x")])
        )
        .unwrap(),
        Path::new("/x/systemd/user/fleet-dispatch.service")
    );
    assert_eq!(
        entry_path(Platform::Macos, env(home)).unwrap(),
        Path::new("/h/Library/LaunchAgents/net.fleet-dispatch.listen.plist")
    );
    assert_eq!(
        entry_path(Platform::Windows, env(&[("LOCALAPPDATA", "/l")])).unwrap(),
        Path::new("/l/fleet-dispatch/fleet-dispatch-listen.xml")
    );
    assert_eq!(entry_path(Platform::Macos, env(&[])), None);
}

#[test]
fn a_task_is_written_as_utf16_and_read_back() {
    let text = task_xml(&spec("C:\\Bücher"));
    let bytes = encode(Platform::Windows, &text);
    assert_eq!(&bytes[..2], &[0xFF, 0xFE]);
    assert_eq!(decode(&bytes).as_deref(), Some(text.as_str()));
    assert_eq!(decode(b"[Unit]\n").as_deref(), Some("[Unit]\n"));
}

#[test]
fn differing_lines_name_what_changed() {
    let old = systemd_unit(&spec("/old"));
    let new = systemd_unit(&spec("/new"));
    assert_eq!(
        differing_lines(&old, &new),
        ["Environment=\"FLEET_DISPATCH_ROOT=/old\""]
    );
    assert!(differing_lines(&new, &new).is_empty());
}

#[test]
fn a_binary_in_a_cargo_target_folder_is_told_apart() {
    assert!(is_build_output(
        "/home/a/src/fleet-dispatch/target/release/fleet-dispatch"
    ));
    assert!(is_build_output(
        "C:\\src\\fd\\target\\debug\\fleet-dispatch.exe"
    ));
    assert!(is_build_output(
        "/src/fd/target/x86_64-pc-windows-gnu/debug/fleet-dispatch.exe"
    ));
    assert!(!is_build_output("/home/a/.cargo/bin/fleet-dispatch"));
    assert!(!is_build_output("/opt/target/bin/fleet-dispatch"));
}
