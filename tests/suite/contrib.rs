//! The deploy recipes in `contrib/`: Task Scheduler XML and
//! its install script, systemd user units, a crontab, a launchd agent, and
//! the README that explains them. Each recipe is parsed the way its platform
//! reads it (XML, plist, a unit file's sections and keys, cron fields and
//! `sh` syntax, `systemd-analyze verify` where it exists), and every
//! fleet-dispatch command line inside any of them goes through the real clap
//! definition, so a recipe can never name a flag or subcommand that does not
//! exist, and a listener recipe really runs `listen` (never `--once`, which
//! exits 0 and is not restarted) while a sweep recipe runs `sweep`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use clap::Parser;
use fleet_dispatch::front::cli::{Cli, Cmd};
use roxmltree::{Document, Node, ParsingOptions};

const TASK_NS: &str = "http://schemas.microsoft.com/windows/2004/02/mit/task";

const LISTEN_XML: &str = "windows/fleet-dispatch-listen.xml";
const SWEEP_XML: &str = "windows/fleet-dispatch-sweep.xml";
const INSTALL_CMD: &str = "windows/install.cmd";
const LISTEN_UNIT: &str = "systemd/fleet-dispatch-listen.service";
const SWEEP_UNIT: &str = "systemd/fleet-dispatch-sweep.service";
const SWEEP_TIMER: &str = "systemd/fleet-dispatch-sweep.timer";
const CRONTAB: &str = "cron/crontab";
const PLIST: &str = "launchd/net.fleet-dispatch.listen.plist";
const README: &str = "README.md";

/// Every recipe file, for the checks that apply to all of them.
const RECIPES: &[&str] = &[
    LISTEN_XML,
    SWEEP_XML,
    INSTALL_CMD,
    LISTEN_UNIT,
    SWEEP_UNIT,
    CRONTAB,
    PLIST,
];

// ---------------------------------------------------------------- helpers

fn contrib() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib")
}

fn read(rel: &str) -> String {
    let path = contrib().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A word or a shell operator of a command line.
#[derive(Debug, PartialEq)]
enum Tok {
    Word(String),
    Op(String),
}

/// Splits a command line into words the way sh, systemd and the Windows C
/// runtime all agree on for the lines the recipes use: whitespace separates,
/// double and single quotes group, `\"` is a literal quote, any other
/// backslash is kept (Windows paths). Outside quotes `; & | < > ( )` are
/// operators; adjacent ones join (`&&`, `>>`, `>&`), as does a digit-only
/// word right before `<` or `>` (`2>&1`). An unterminated quote runs to the
/// end of the line.
fn words(line: &str) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    // True while the last thing read was an operator character.
    let mut after_op = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        let op_char = quote.is_none() && ";&|<>()".contains(c);
        if !op_char {
            after_op = false;
        }
        if c == '\\' && chars.peek() == Some(&'"') {
            word.push(chars.next().unwrap());
            in_word = true;
            after_op = false;
            continue;
        }
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                in_word = true;
            }
            None if c.is_whitespace() => {
                if in_word {
                    out.push(Tok::Word(std::mem::take(&mut word)));
                    in_word = false;
                }
            }
            None if op_char => {
                let mut op = String::new();
                if in_word {
                    if (c == '<' || c == '>') && word.chars().all(|d| d.is_ascii_digit()) {
                        op = std::mem::take(&mut word);
                    } else {
                        out.push(Tok::Word(std::mem::take(&mut word)));
                    }
                    in_word = false;
                } else if after_op
                    && let Some(Tok::Op(last)) = out.last()
                    && matches!(
                        (last.chars().last(), c),
                        (Some('&'), '&')
                            | (Some('|'), '|')
                            | (Some('>'), '>' | '&')
                            | (Some('<'), '&')
                    )
                {
                    let Some(Tok::Op(last)) = out.pop() else {
                        unreachable!()
                    };
                    op = last;
                }
                op.push(c);
                out.push(Tok::Op(op));
                after_op = true;
            }
            None => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(Tok::Word(word));
    }
    out
}

/// True for a word naming the binary: `fleet-dispatch` or
/// `fleet-dispatch.exe`, with or without a directory.
fn is_binary(word: &str) -> bool {
    let base = word.rsplit(['/', '\\']).next().unwrap_or(word);
    base == "fleet-dispatch" || base == "fleet-dispatch.exe"
}

/// Every fleet-dispatch invocation in a command line: the binary in command
/// position (first, or after `;`, `&&`, `do`, `VAR=x` and the like) and the
/// words after it up to the next operator. A quoted word holding a command
/// line of its own (schtasks `/TR "…"`, `sh -c "…"`) is searched too.
fn invocations(line: &str) -> Vec<Vec<String>> {
    let toks = words(line);
    let mut out = Vec::new();
    let mut command_position = true;
    let mut i = 0;
    while i < toks.len() {
        match &toks[i] {
            Tok::Op(op) => command_position = !op.contains(['<', '>']),
            Tok::Word(w) if command_position && is_binary(w) => {
                let mut argv = vec![w.clone()];
                while let Some(Tok::Word(a)) = toks.get(i + 1) {
                    argv.push(a.clone());
                    i += 1;
                }
                out.push(argv);
                command_position = false;
            }
            Tok::Word(w) => {
                if w.contains(char::is_whitespace) {
                    out.extend(invocations(w));
                }
                let assignment = w.split_once('=').is_some_and(|(k, _)| {
                    !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                });
                command_position = assignment
                    || [
                        "!", "do", "then", "else", "elif", "if", "while", "until", "exec", "nohup",
                        "time",
                    ]
                    .contains(&w.as_str());
            }
        }
        i += 1;
    }
    out
}

/// What a recipe's command must run.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Want {
    Listen,
    Sweep,
}

/// One fleet-dispatch command line found in a recipe.
#[derive(Debug)]
struct Found {
    file: &'static str,
    place: String,
    want: Option<Want>,
    argv: Vec<String>,
}

/// Parses with the real clap definition, or fails naming the recipe.
fn parse(f: &Found) -> Cli {
    Cli::try_parse_from(&f.argv).unwrap_or_else(|e| {
        panic!(
            "{} ({}): `{}` is not a valid fleet-dispatch command line:\n{e}",
            f.file,
            f.place,
            f.argv.join(" ")
        )
    })
}

/// Walks down from `n` through children with these local names.
fn el<'a, 'i>(n: Node<'a, 'i>, path: &[&str]) -> Option<Node<'a, 'i>> {
    path.iter().try_fold(n, |n, name| {
        n.children()
            .find(|c| c.is_element() && c.tag_name().name() == *name)
    })
}

/// The trimmed text at `path` below `n`.
fn text<'a>(n: Node<'a, '_>, path: &[&str]) -> Option<&'a str> {
    el(n, path).and_then(|e| e.text()).map(str::trim)
}

/// Every element below `n` with this local name.
fn all<'a, 'i>(n: Node<'a, 'i>, name: &str) -> Vec<Node<'a, 'i>> {
    n.descendants()
        .filter(|d| d.is_element() && d.tag_name().name() == name)
        .collect()
}

/// Seconds in an xs:duration of the kinds Task Scheduler uses (`PT5M`,
/// `P1DT2H`, `PT0S`).
fn iso_secs(d: &str) -> u64 {
    let rest = d
        .strip_prefix('P')
        .unwrap_or_else(|| panic!("not a duration: {d}"));
    let (mut secs, mut num, mut in_time) = (0u64, String::new(), false);
    for c in rest.chars() {
        match c {
            'T' => in_time = true,
            '0'..='9' => num.push(c),
            _ => {
                let n: u64 = num
                    .parse()
                    .unwrap_or_else(|_| panic!("not a duration: {d}"));
                num.clear();
                secs += n * match (c, in_time) {
                    ('D', false) => 86_400,
                    ('H', true) => 3_600,
                    ('M', true) => 60,
                    ('S', true) => 1,
                    _ => panic!("unsupported duration: {d}"),
                };
            }
        }
    }
    assert!(num.is_empty(), "not a duration: {d}");
    secs
}

/// Seconds in a systemd time span (`30s`, `1min 30s`, a bare number).
fn span_secs(v: &str) -> f64 {
    v.split_whitespace()
        .map(|part| {
            let split = part
                .find(|c: char| !c.is_ascii_digit() && c != '.')
                .unwrap_or(part.len());
            let (n, unit) = part.split_at(split);
            let n: f64 = n.parse().unwrap_or_else(|_| panic!("not a span: {v}"));
            n * match unit {
                "" | "s" | "sec" | "second" | "seconds" => 1.0,
                "ms" | "msec" => 0.001,
                "m" | "min" | "minute" | "minutes" => 60.0,
                "h" | "hr" | "hour" | "hours" => 3_600.0,
                "d" | "day" | "days" => 86_400.0,
                _ => panic!("unknown unit in span: {v}"),
            }
        })
        .sum()
}

/// A unit file: section → its `Key=Value` lines in order. Fails on a line
/// that is neither blank, a comment, a section header nor `Key=Value`.
type Unit = BTreeMap<String, Vec<(String, String)>>;

fn unit(rel: &str) -> Unit {
    let mut out = Unit::new();
    let mut section: Option<String> = None;
    for (n, line) in read(rel).lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        assert!(!line.ends_with('\\'), "{rel}:{}: no continuations", n + 1);
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = Some(name.to_string());
            out.entry(name.to_string()).or_default();
            continue;
        }
        let (k, v) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("{rel}:{}: not Key=Value: {line}", n + 1));
        let k = k.trim();
        assert!(
            !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric()),
            "{rel}:{}: bad key {k:?}",
            n + 1
        );
        let s = section
            .clone()
            .unwrap_or_else(|| panic!("{rel}:{}: key outside a section", n + 1));
        out.get_mut(&s)
            .unwrap()
            .push((k.to_string(), v.trim().to_string()));
    }
    out
}

/// The last value of `key` in `section` (later lines win, as in systemd).
fn get<'a>(u: &'a Unit, section: &str, key: &str) -> Option<&'a str> {
    u.get(section)?
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

fn require<'a>(u: &'a Unit, rel: &str, section: &str, key: &str) -> &'a str {
    get(u, section, key).unwrap_or_else(|| panic!("{rel}: [{section}] lacks {key}="))
}

/// ExecStart without systemd's prefix characters (`-@:+!`).
fn exec_start(u: &Unit, rel: &str) -> String {
    require(u, rel, "Service", "ExecStart")
        .trim_start_matches(['-', '@', ':', '+', '!'])
        .to_string()
}

/// The crontab: variable lines and (schedule, command) entries.
struct Crontab {
    vars: Vec<(String, String)>,
    entries: Vec<(String, String)>,
}

fn crontab() -> Crontab {
    let mut tab = Crontab {
        vars: Vec::new(),
        entries: Vec::new(),
    };
    for (n, line) in read(CRONTAB).lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let first = line.split_whitespace().next().unwrap();
        if let Some((name, _)) = first.split_once('=')
            && !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            let value = line[name.len() + 1..].to_string();
            assert_eq!(
                value,
                value.trim(),
                "{CRONTAB}:{}: spaces in {name}=",
                n + 1
            );
            tab.vars.push((name.to_string(), value));
            continue;
        }
        let fields = if first.starts_with('@') { 1 } else { 5 };
        let parts: Vec<&str> = line.splitn(fields + 1, char::is_whitespace).collect();
        assert_eq!(
            parts.len(),
            fields + 1,
            "{CRONTAB}:{}: no command: {line}",
            n + 1
        );
        let schedule = parts[..fields].join(" ");
        if fields == 1 {
            assert!(
                [
                    "@reboot",
                    "@yearly",
                    "@annually",
                    "@monthly",
                    "@weekly",
                    "@daily",
                    "@midnight",
                    "@hourly"
                ]
                .contains(&first),
                "{CRONTAB}:{}: unknown {first}",
                n + 1
            );
        } else {
            for f in &parts[..fields] {
                assert!(
                    f.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "*/,-".contains(c)),
                    "{CRONTAB}:{}: bad time field {f:?}",
                    n + 1
                );
            }
        }
        tab.entries
            .push((schedule, parts[fields].trim().to_string()));
    }
    tab
}

/// The plist's top-level dictionary as key → value element.
fn plist_dict<'a, 'i>(doc: &'a Document<'i>) -> Vec<(String, Node<'a, 'i>)> {
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "plist");
    let dict = root
        .children()
        .find(|c| c.is_element())
        .expect("plist has no dict");
    plist_dict_of(dict)
}

/// A `<dict>` element as key → value element.
fn plist_dict_of<'a, 'i>(dict: Node<'a, 'i>) -> Vec<(String, Node<'a, 'i>)> {
    assert_eq!(dict.tag_name().name(), "dict");
    let items: Vec<Node> = dict.children().filter(|c| c.is_element()).collect();
    assert!(
        items.len().is_multiple_of(2),
        "dict: keys and values must pair up"
    );
    items
        .chunks(2)
        .map(|kv| {
            assert_eq!(kv[0].tag_name().name(), "key", "dict: expected a key");
            (kv[0].text().unwrap_or("").to_string(), kv[1])
        })
        .collect()
}

fn parse_plist(text: &str) -> Document<'_> {
    let opts = ParsingOptions {
        allow_dtd: true,
        ..ParsingOptions::default()
    };
    Document::parse_with_options(text, opts)
        .unwrap_or_else(|e| panic!("{PLIST} is not well-formed XML: {e}"))
}

fn parse_task<'t>(rel: &str, text: &'t str) -> Document<'t> {
    let doc = Document::parse(text).unwrap_or_else(|e| panic!("{rel} is not well-formed: {e}"));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "Task", "{rel}: root element");
    assert_eq!(
        root.tag_name().namespace(),
        Some(TASK_NS),
        "{rel}: namespace"
    );
    assert!(
        el(root, &["Actions", "Exec"]).is_some(),
        "{rel}: no Exec action"
    );
    doc
}

/// The Exec action of a task as an argv.
fn task_argv(rel: &str, task: Node) -> Vec<String> {
    let command = text(task, &["Actions", "Exec", "Command"])
        .unwrap_or_else(|| panic!("{rel}: no Command"))
        .to_string();
    let mut argv = vec![command];
    for t in words(text(task, &["Actions", "Exec", "Arguments"]).unwrap_or("")) {
        match t {
            Tok::Word(w) => argv.push(w),
            Tok::Op(op) => panic!("{rel}: Arguments hold an operator {op:?}"),
        }
    }
    argv
}

/// The commands in a Markdown file: fenced blocks line by line (except
/// TOML, which is configuration), and inline code spans.
fn markdown_code(md: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fence: Option<String> = None;
    for line in md.lines() {
        if let Some(info) = line.trim_start().strip_prefix("```") {
            fence = match fence {
                Some(_) => None,
                None => Some(info.trim().to_string()),
            };
            continue;
        }
        if let Some(info) = &fence {
            if info != "toml" {
                out.push(line.to_string());
            }
        } else {
            out.extend(line.split('`').skip(1).step_by(2).map(str::to_string));
        }
    }
    out
}

/// Every fleet-dispatch command line in every recipe and in the README,
/// with what it must run where that is known.
fn found() -> Vec<Found> {
    let mut out = Vec::new();
    for (rel, want) in [(LISTEN_XML, Want::Listen), (SWEEP_XML, Want::Sweep)] {
        let xml = read(rel);
        let doc = parse_task(rel, &xml);
        out.push(Found {
            file: rel,
            place: "Exec Command + Arguments".into(),
            want: Some(want),
            argv: task_argv(rel, doc.root_element()),
        });
    }
    for (rel, md) in [(INSTALL_CMD, false), (README, true)] {
        let text = read(rel);
        let lines = if md {
            markdown_code(&text)
        } else {
            text.lines().map(str::to_string).collect()
        };
        for line in lines {
            let shown = line.trim_start();
            // In the script, a comment counts only where it shows a command.
            let code = match shown.strip_prefix("rem").filter(|_| !md) {
                Some(c) if !c.contains("schtasks") => continue,
                Some(c) => c.trim().to_string(),
                None => shown.to_string(),
            };
            let want = code.contains("/SC ONLOGON").then_some(Want::Listen);
            for argv in invocations(&code) {
                if argv.len() > 1 || want.is_some() {
                    out.push(Found {
                        file: rel,
                        place: code.clone(),
                        want,
                        argv,
                    });
                }
            }
        }
    }
    for (rel, want) in [(LISTEN_UNIT, Want::Listen), (SWEEP_UNIT, Want::Sweep)] {
        let line = exec_start(&unit(rel), rel);
        for argv in invocations(&line) {
            out.push(Found {
                file: rel,
                place: "ExecStart".into(),
                want: Some(want),
                argv,
            });
        }
    }
    for (schedule, command) in crontab().entries {
        let want = if schedule == "@reboot" {
            Want::Listen
        } else {
            Want::Sweep
        };
        for argv in invocations(&command) {
            out.push(Found {
                file: CRONTAB,
                place: schedule.clone(),
                want: Some(want),
                argv,
            });
        }
    }
    let text = read(PLIST);
    let doc = parse_plist(&text);
    if let Some((_, args)) = plist_dict(&doc)
        .into_iter()
        .find(|(k, _)| k == "ProgramArguments")
    {
        out.push(Found {
            file: PLIST,
            place: "ProgramArguments".into(),
            want: Some(Want::Listen),
            argv: args
                .children()
                .filter(|c| c.is_element())
                .map(|c| c.text().unwrap_or("").to_string())
                .collect(),
        });
    }
    out
}

/// Waits for `child` up to `limit`, killing it past that.
#[cfg_attr(not(unix), allow(dead_code))] // only the Unix-only cron test uses it
fn wait_for(mut child: std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ---------------------------------------------------------------- command lines

#[test]
fn every_command_line_in_every_recipe_parses_with_the_real_cli() {
    let found = found();
    for rel in RECIPES.iter().chain([&README]) {
        assert!(
            found.iter().any(|f| f.file == *rel),
            "{rel}: no fleet-dispatch command line found (is the extraction still right?)"
        );
    }
    for f in &found {
        parse(f);
    }
}

#[test]
fn listener_recipes_run_listen_forever_and_sweep_recipes_run_sweep() {
    let found = found();
    for want in [Want::Listen, Want::Sweep] {
        assert!(
            found.iter().any(|f| f.want == Some(want)),
            "no {want:?} recipe"
        );
    }
    // Every recipe file that starts the listener or the sweep does so.
    for rel in RECIPES {
        assert!(
            found.iter().any(|f| f.file == *rel && f.want.is_some()),
            "{rel}: runs neither listen nor sweep"
        );
    }
    for f in found.iter().filter(|f| f.want.is_some()) {
        match (f.want.unwrap(), parse(f).command) {
            (Want::Listen, Cmd::Listen(a)) => assert!(
                !a.once,
                "{} ({}): `--once` exits 0 and is never restarted",
                f.file, f.place
            ),
            // The daily sweep prunes, with the default retention (or the
            // config file's): a recipe never narrows it or only pretends.
            (Want::Sweep, Cmd::Sweep(a)) => assert!(
                !a.dry_run && a.retention.is_none() && a.max_job_age.is_none(),
                "{} ({}): `{}` should prune with the default retention",
                f.file,
                f.place,
                f.argv.join(" ")
            ),
            (want, _) => panic!(
                "{} ({}): `{}` should run {want:?}",
                f.file,
                f.place,
                f.argv.join(" ")
            ),
        }
    }
}

#[test]
fn recipes_stay_one_short_line_and_leave_settings_to_the_config_file() {
    for f in found().iter().filter(|f| f.want.is_some()) {
        for a in &f.argv[1..] {
            for flag in ["--root", "--key-file", "--machine", "--state-dir"] {
                assert!(
                    !a.starts_with(flag),
                    "{} ({}): `{flag}` belongs in the config file or the environment",
                    f.file,
                    f.place
                );
            }
        }
        assert!(
            f.argv.len() <= 3,
            "{} ({}): `{}` is longer than one short line",
            f.file,
            f.place,
            f.argv.join(" ")
        );
    }
    // Each recipe says where the settings come from, for its platform.
    let linux = "~/.config/fleet-dispatch/config.toml";
    let macos = "~/Library/Application Support/fleet-dispatch/config.toml";
    let windows = "%APPDATA%\\fleet-dispatch\\config.toml";
    for (rel, paths) in [
        (LISTEN_XML, &[windows][..]),
        (SWEEP_XML, &[windows]),
        (INSTALL_CMD, &[windows]),
        (LISTEN_UNIT, &[linux]),
        (SWEEP_UNIT, &[linux]),
        (CRONTAB, &[linux, macos]),
        (PLIST, &[macos]),
    ] {
        let text = read(rel);
        for p in paths {
            assert!(text.contains(p), "{rel}: does not point to {p}");
        }
    }
}

// ---------------------------------------------------------------- Windows

#[test]
fn task_scheduler_xml_is_ascii_without_an_encoding_declaration() {
    // schtasks reads ANSI or UTF-16; a UTF-8 file (with or without a BOM)
    // that declares its encoding is refused as malformed.
    for rel in [LISTEN_XML, SWEEP_XML] {
        let bytes = std::fs::read(contrib().join(rel)).unwrap();
        assert!(bytes.is_ascii(), "{rel}: not plain ASCII");
        let text = String::from_utf8(bytes).unwrap();
        let decl = text
            .strip_prefix("<?xml")
            .and_then(|t| t.split_once("?>"))
            .map(|(d, _)| d)
            .unwrap_or_else(|| panic!("{rel}: no XML declaration first"));
        assert!(
            !decl.contains("encoding"),
            "{rel}: the declaration names an encoding"
        );
        parse_task(rel, &text);
    }
}

#[test]
fn listener_task_starts_at_logon_comes_back_and_never_times_out() {
    let rel = LISTEN_XML;
    let xml = read(rel);
    let doc = parse_task(rel, &xml);
    let task = doc.root_element();
    let logon = el(task, &["Triggers", "LogonTrigger"]).expect("no LogonTrigger");
    assert_ne!(text(logon, &["Enabled"]), Some("false"));
    assert!(
        text(logon, &["UserId"]).is_some(),
        "a non-administrator may only register a logon trigger naming its own user"
    );
    // RestartOnFailure only covers a failure to start; the repetition is what
    // starts the listener again after it exits (75, a crash, a closed window).
    let every = iso_secs(text(logon, &["Repetition", "Interval"]).expect("no repetition"));
    assert!((60..=31 * 86_400).contains(&every), "repetition {every}s");
    assert!(
        text(logon, &["Repetition", "Duration"]).is_none(),
        "the repetition must go on indefinitely"
    );
    assert_ne!(
        text(logon, &["Repetition", "StopAtDurationEnd"]),
        Some("true")
    );
    let s = el(task, &["Settings"]).expect("no Settings");
    let restart =
        iso_secs(text(s, &["RestartOnFailure", "Interval"]).expect("no RestartOnFailure"));
    assert!(restart >= 60, "RestartOnFailure interval is at least PT1M");
    let count: u32 = text(s, &["RestartOnFailure", "Count"])
        .expect("no restart count")
        .parse()
        .unwrap();
    assert!((1..=255).contains(&count), "restart count {count}");
    assert_eq!(
        text(s, &["ExecutionTimeLimit"]).map(iso_secs),
        Some(0),
        "no execution time limit (PT0S); the default stops it after 72 hours"
    );
    assert_eq!(text(s, &["MultipleInstancesPolicy"]), Some("IgnoreNew"));
    assert_eq!(text(s, &["DisallowStartIfOnBatteries"]), Some("false"));
    assert_eq!(text(s, &["StopIfGoingOnBatteries"]), Some("false"));
    assert_eq!(
        text(task, &["Principals", "Principal", "LogonType"]),
        Some("InteractiveToken"),
        "runs only while the user is logged on, so OneDrive is there"
    );
}

#[test]
fn sweep_task_runs_daily_and_catches_up() {
    let rel = SWEEP_XML;
    let xml = read(rel);
    let doc = parse_task(rel, &xml);
    let task = doc.root_element();
    let cal = el(task, &["Triggers", "CalendarTrigger"]).expect("no CalendarTrigger");
    assert!(text(cal, &["StartBoundary"]).is_some(), "no StartBoundary");
    assert_eq!(text(cal, &["ScheduleByDay", "DaysInterval"]), Some("1"));
    let s = el(task, &["Settings"]).expect("no Settings");
    assert_eq!(
        text(s, &["StartWhenAvailable"]),
        Some("true"),
        "a missed day runs as soon as it can"
    );
    let limit = iso_secs(text(s, &["ExecutionTimeLimit"]).expect("no time limit"));
    assert!(limit > 0, "a sweep that hangs is stopped");
    assert_eq!(text(s, &["MultipleInstancesPolicy"]), Some("IgnoreNew"));
    assert_eq!(
        text(task, &["Principals", "Principal", "LogonType"]),
        Some("InteractiveToken")
    );
}

#[test]
fn install_cmd_registers_both_tasks_filling_in_the_placeholder_the_xml_carries() {
    let raw = read(INSTALL_CMD);
    assert!(
        raw.lines().count() == raw.matches("\r\n").count(),
        "{INSTALL_CMD}: CRLF line endings (cmd.exe misreads labels otherwise)"
    );
    let lines: Vec<&str> = raw.lines().map(str::trim).collect();
    for name in ["listen", "sweep"] {
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with(&format!("call :register {name} "))),
            "{INSTALL_CMD}: does not register {name}"
        );
        assert!(
            contrib()
                .join(format!("windows/fleet-dispatch-{name}.xml"))
                .is_file()
        );
    }
    assert!(lines.contains(&":register"));
    assert!(
        lines
            .iter()
            .any(|l| l.contains("set \"SRC=%~dp0fleet-dispatch-%1.xml\"")),
        "{INSTALL_CMD}: registers the XML files next to it"
    );
    let create = lines
        .iter()
        .find(|l| l.starts_with("schtasks /Create") && l.contains("/XML"))
        .expect("no schtasks /Create /XML");
    assert!(create.contains("/TN \"fleet-dispatch-%1\""), "{create}");
    // The placeholder it replaces, once cmd has halved the %%, is exactly the
    // account every task in the XML files names.
    let ps = lines
        .iter()
        .find(|l| l.starts_with("powershell "))
        .expect("no placeholder substitution");
    let placeholder = ps
        .split_once(".Replace('")
        .and_then(|(_, r)| r.split_once('\''))
        .map(|(p, _)| p.replace("%%", "%"))
        .expect("no .Replace('…')");
    for rel in [LISTEN_XML, SWEEP_XML] {
        let xml = read(rel);
        let doc = parse_task(rel, &xml);
        let ids = all(doc.root_element(), "UserId");
        assert!(!ids.is_empty(), "{rel}: names no user");
        for id in ids {
            assert_eq!(id.text(), Some(placeholder.as_str()), "{rel}: UserId");
        }
    }
    // Both READMEs that register the XML by hand say to replace the
    // placeholder first, naming it exactly.
    let top = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/operations.md");
    for (rel, md) in [
        (README.to_string(), read(README)),
        (
            "../docs/operations.md".to_string(),
            std::fs::read_to_string(&top).unwrap(),
        ),
    ] {
        for para in md.split("\n\n").filter(|p| {
            p.contains("schtasks /Create") && p.contains("/XML") && !p.contains("install.cmd")
                || p.contains("/XML contrib")
        }) {
            let before = &md[..md.find(para).unwrap()];
            let last = before.trim_end().rsplit("\n\n").next().unwrap_or("");
            assert!(
                para.contains(&placeholder) || last.contains(&placeholder),
                "{rel}: `schtasks /Create /XML` without the placeholder {placeholder} to replace:\n{para}"
            );
        }
    }
    // The plain one-liner is there too, in the script and in the README.
    for rel in [INSTALL_CMD, README] {
        assert!(
            found()
                .iter()
                .any(|f| f.file == rel && f.place.contains("/SC ONLOGON")),
            "{rel}: no `schtasks /Create /SC ONLOGON` one-liner"
        );
    }
}

// ---------------------------------------------------------------- systemd

#[test]
fn systemd_units_have_their_sections_and_keys() {
    for (rel, sections) in [
        (LISTEN_UNIT, &["Unit", "Service", "Install"][..]),
        (SWEEP_UNIT, &["Unit", "Service"]),
        (SWEEP_TIMER, &["Unit", "Timer", "Install"]),
    ] {
        let u = unit(rel);
        for s in sections {
            assert!(u.contains_key(*s), "{rel}: no [{s}]");
        }
        require(&u, rel, "Unit", "Description");
        if u.contains_key("Service") {
            let exec = exec_start(&u, rel);
            assert!(
                exec.starts_with('/') || exec.starts_with("%h/"),
                "{rel}: ExecStart needs an absolute path (or %h/…)"
            );
        }
    }
    let listen = unit(LISTEN_UNIT);
    assert_eq!(get(&listen, "Service", "Restart"), Some("on-failure"));
    assert_eq!(
        get(&listen, "Install", "WantedBy"),
        Some("default.target"),
        "a user unit starts with the user's default.target"
    );
    assert_eq!(get(&unit(SWEEP_UNIT), "Service", "Type"), Some("oneshot"));
}

#[test]
fn systemd_listener_retries_a_held_lock_and_stops_gracefully() {
    let rel = LISTEN_UNIT;
    let u = unit(rel);
    // Exit 75 (another listener holds the lock) is retried, paced.
    if let Some(prevent) = get(&u, "Service", "RestartPreventExitStatus") {
        assert!(
            !prevent.split_whitespace().any(|s| s == "75"),
            "{rel}: 75 must be retried, not prevented"
        );
    }
    let pause = span_secs(require(&u, rel, "Service", "RestartSec"));
    assert!(pause >= 5.0, "{rel}: RestartSec {pause}s would spin");
    assert_eq!(
        get(&u, "Unit", "StartLimitIntervalSec"),
        Some("0"),
        "{rel}: never give up restarting"
    );
    // SIGTERM, then time for the job's grace (10 s by default) and more.
    let mode = require(&u, rel, "Service", "KillMode");
    assert!(
        ["mixed", "control-group"].contains(&mode),
        "KillMode={mode}"
    );
    assert_eq!(get(&u, "Service", "KillSignal"), Some("SIGTERM"));
    let stop = span_secs(require(&u, rel, "Service", "TimeoutStopSec"));
    assert!(stop >= 30.0, "{rel}: TimeoutStopSec {stop}s");
    // A job may ask for any grace: the unit caps what a stop gives it with
    // the listener's stop grace, and TimeoutStopSec covers that cap plus
    // time to record the job's end. Without the cap a job with a longer
    // grace would be killed by systemd mid-grace.
    let cap = u["Service"]
        .iter()
        .filter(|(k, _)| k == "Environment")
        .find_map(|(_, v)| v.strip_prefix("FLEET_DISPATCH_STOP_GRACE="))
        .unwrap_or_else(|| {
            panic!("{rel}: no Environment=FLEET_DISPATCH_STOP_GRACE=: a job's grace is not capped")
        });
    let cap = fleet_dispatch::base::clock::parse_duration(cap)
        .unwrap_or_else(|e| panic!("{rel}: FLEET_DISPATCH_STOP_GRACE={cap}: {}", e.message))
        .as_secs_f64();
    let grace = fleet_dispatch::protocol::doc::job::DEFAULT_GRACE.as_secs_f64();
    assert!(
        cap >= grace,
        "{rel}: a stop grace of {cap}s cuts even the default grace ({grace}s)"
    );
    assert!(
        stop >= cap + 10.0,
        "{rel}: TimeoutStopSec {stop}s leaves no room after the stop grace ({cap}s)"
    );
    // Raising one without the other breaks the rule: the unit says so.
    let text = read(rel);
    assert!(
        text.lines().any(|l| l.starts_with('#')
            && l.contains("FLEET_DISPATCH_STOP_GRACE")
            && l.contains("TimeoutStopSec")),
        "{rel}: no comment saying to raise the stop grace and TimeoutStopSec together"
    );
    // The listener answers SIGTERM with 130: a stop, not a failure.
    let ok = require(&u, rel, "Service", "SuccessExitStatus");
    assert!(ok.split_whitespace().any(|s| s == "130"), "{rel}: {ok}");
}

#[test]
fn systemd_timer_runs_the_sweep_daily_and_catches_up() {
    let rel = SWEEP_TIMER;
    let u = unit(rel);
    let when = require(&u, rel, "Timer", "OnCalendar");
    assert!(
        when == "daily" || when.starts_with("*-*-* "),
        "{rel}: OnCalendar={when} is not daily"
    );
    assert_eq!(get(&u, "Timer", "Persistent"), Some("true"));
    assert_eq!(get(&u, "Install", "WantedBy"), Some("timers.target"));
    let service = Path::new(SWEEP_UNIT).file_name().unwrap().to_str().unwrap();
    let target = get(&u, "Timer", "Unit").unwrap_or(service);
    assert_eq!(target, service, "{rel}: starts the sweep service");
    assert_eq!(
        Path::new(rel).file_stem(),
        Path::new(SWEEP_UNIT).file_stem()
    );
}

#[cfg(unix)] // systemd units
#[test]
#[ignore = "needs systemd-analyze (systemd)"]
fn systemd_analyze_verify_accepts_the_units() {
    // verify insists the binary exists: point the copies at the one built.
    let dir = tempfile::tempdir().unwrap();
    let runtime = tempfile::tempdir().unwrap();
    let recipe_bin = "%h/.cargo/bin/fleet-dispatch";
    let mut files = Vec::new();
    for rel in [LISTEN_UNIT, SWEEP_UNIT, SWEEP_TIMER] {
        let text = read(rel);
        if rel.ends_with(".service") {
            assert!(
                text.contains(recipe_bin),
                "{rel}: binary is not {recipe_bin}"
            );
        }
        let name = Path::new(rel).file_name().unwrap();
        let copy = dir.path().join(name);
        std::fs::write(
            &copy,
            text.replace(recipe_bin, crate::util::bin().to_str().unwrap()),
        )
        .unwrap();
        files.push(copy);
    }
    // --man=no: the man pages live in man/, not installed on this machine.
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no", "--user"])
        .args(&files)
        .env("XDG_RUNTIME_DIR", runtime.path())
        .current_dir(dir.path())
        .output()
        .unwrap_or_else(|e| panic!("systemd-analyze cannot run ({e}): install systemd"));
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && !said.contains("fleet-dispatch"),
        "systemd-analyze verify --user objects:\n{said}"
    );
}

// ---------------------------------------------------------------- cron

#[test]
fn crontab_lines_are_valid_cron_and_valid_sh() {
    let tab = crontab();
    let path = tab
        .vars
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_str())
        .expect("cron's PATH is /usr/bin:/bin: set one");
    assert!(
        !path.contains('$') && !path.contains('~'),
        "cron does not expand variables in PATH={path}"
    );
    assert!(
        path.split(':').all(|d| d.starts_with('/')),
        "PATH={path}: absolute directories"
    );
    assert!(
        tab.entries.iter().any(|(s, _)| s == "@reboot"),
        "no @reboot listener line"
    );
    let daily: Vec<_> = tab.entries.iter().filter(|(s, _)| s != "@reboot").collect();
    assert_eq!(daily.len(), 1, "one sweep line");
    let f: Vec<&str> = daily[0].0.split(' ').collect();
    assert!(
        f[0].parse::<u8>().is_ok() && f[1].parse::<u8>().is_ok() && f[2..] == ["*", "*", "*"],
        "the sweep runs once a day: {}",
        daily[0].0
    );
    for (schedule, command) in &tab.entries {
        assert!(
            !command.replace("\\%", "").contains('%'),
            "{schedule}: cron turns % into a newline"
        );
        if !cfg!(unix) {
            continue;
        }
        let check = Command::new("sh")
            .args(["-n", "-c", command])
            .output()
            .unwrap();
        assert!(
            check.status.success(),
            "{schedule}: not valid sh: {}",
            String::from_utf8_lossy(&check.stderr)
        );
    }
}

// Unix only: it runs the crontab recipe's commands with `sh`, against
// stand-in programs that are `#!/bin/sh` scripts; Windows has no cron (its
// recipe is the Task Scheduler XML, checked above).
#[cfg(unix)]
#[test]
fn cron_listener_loop_retries_after_75_and_ends_on_130() {
    use std::os::unix::fs::PermissionsExt;

    let tab = crontab();
    let home = tempfile::tempdir().unwrap();
    let fake = home.path().join("bin");
    std::fs::create_dir(&fake).unwrap();
    let calls = home.path().join("calls");
    // A stand-in listener: 75 (lock held), then 1 (a failure), then 130
    // (SIGTERM); and a `sleep` that does not, so the loop runs at once.
    let script = format!(
        "#!/bin/sh\necho \"$*\" >> '{}'\nn=$(wc -l < '{}')\ncase $n in 1) exit 75;; 2) exit 1;; *) exit 130;; esac\n",
        calls.display(),
        calls.display()
    );
    for (name, body) in [
        ("fleet-dispatch", script.as_str()),
        ("sleep", "#!/bin/sh\n"),
    ] {
        let p = fake.join(name);
        std::fs::write(&p, body).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    for (schedule, command) in &tab.entries {
        let _ = std::fs::remove_file(&calls);
        let child = Command::new("sh")
            .args(["-c", command])
            .env_clear()
            .env("HOME", home.path())
            .env("PATH", format!("{}:/usr/bin:/bin", fake.display()))
            .stdin(std::process::Stdio::null())
            .spawn()
            .unwrap();
        wait_for(child, Duration::from_secs(20));
        let seen = std::fs::read_to_string(&calls).unwrap_or_default();
        let seen: Vec<&str> = seen.lines().collect();
        if schedule == "@reboot" {
            assert_eq!(
                seen,
                ["listen", "listen", "listen"],
                "the loop restarts after 75 and 1, and ends after 130"
            );
            let log = home.path().join(".local/state/fleet-dispatch/listen.log");
            assert!(log.is_file(), "no {}", log.display());
        } else {
            assert_eq!(seen, ["sweep --all"]);
            let log = home.path().join(".local/state/fleet-dispatch/sweep.log");
            assert!(log.is_file(), "no {}", log.display());
        }
    }
}

// ---------------------------------------------------------------- launchd

#[test]
fn launchd_agent_keeps_the_listener_alive_and_logs_to_library_logs() {
    let text = read(PLIST);
    let doc = parse_plist(&text);
    let dict = plist_dict(&doc);
    let value = |key: &str| {
        dict.iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("{PLIST}: no {key}"))
    };
    let stem = Path::new(PLIST).file_stem().unwrap().to_str().unwrap();
    assert_eq!(
        value("Label").text(),
        Some(stem),
        "Label matches the file name"
    );
    assert_eq!(value("RunAtLoad").tag_name().name(), "true");
    let keep = value("KeepAlive");
    assert!(
        keep.tag_name().name() == "true" || keep.tag_name().name() == "dict",
        "KeepAlive"
    );
    let throttle: u32 = value("ThrottleInterval").text().unwrap().parse().unwrap();
    assert!(
        throttle >= 10,
        "exit 75 must not spin: ThrottleInterval {throttle}"
    );
    let exit: u32 = value("ExitTimeOut").text().unwrap().parse().unwrap();
    assert!(exit >= 30, "time for the job's grace: ExitTimeOut {exit}");
    // The grace a stop gives is capped, and ExitTimeOut covers the cap.
    let env = plist_dict_of(value("EnvironmentVariables"));
    let cap = env
        .iter()
        .find(|(k, _)| k == "FLEET_DISPATCH_STOP_GRACE")
        .and_then(|(_, v)| v.text())
        .unwrap_or_else(|| {
            panic!("{PLIST}: no FLEET_DISPATCH_STOP_GRACE: a job's grace is not capped")
        });
    let cap = fleet_dispatch::base::clock::parse_duration(cap)
        .unwrap()
        .as_secs();
    assert!(
        u64::from(exit) >= cap + 10,
        "{PLIST}: ExitTimeOut {exit} leaves no room after the stop grace ({cap}s)"
    );
    for key in ["StandardOutPath", "StandardErrorPath"] {
        let p = value(key).text().unwrap();
        assert!(
            p.starts_with("/Users/") && p.contains("/Library/Logs/"),
            "{key}={p}: a file in ~/Library/Logs"
        );
    }
    // launchd expands neither ~ nor $HOME: every string is taken literally.
    for s in all(doc.root_element(), "string") {
        let s = s.text().unwrap_or("");
        assert!(
            !s.contains('~') && !s.contains('$'),
            "{PLIST}: launchd will not expand {s}"
        );
    }
    let args = value("ProgramArguments");
    let first = args
        .children()
        .find(|c| c.is_element())
        .and_then(|c| c.text())
        .unwrap();
    assert!(first.starts_with('/') && is_binary(first), "{first}");
}

#[test]
fn the_tokenizer_reads_the_command_lines_the_recipes_use() {
    assert_eq!(
        invocations(
            r#"schtasks /Create /TR "\"%USERPROFILE%\.cargo\bin\fleet-dispatch.exe\" listen" /IT"#
        ),
        [[r"%USERPROFILE%\.cargo\bin\fleet-dispatch.exe", "listen"]]
    );
    assert_eq!(
        invocations(r#"mkdir -p "$HOME/x" && fleet-dispatch sweep --all >>"$HOME/x/log" 2>&1"#),
        [["fleet-dispatch", "sweep", "--all"]]
    );
    assert_eq!(
        invocations("while :; do fleet-dispatch listen; [ $? -eq 130 ] && break; done"),
        [["fleet-dispatch", "listen"]]
    );
    assert!(invocations("journalctl --user -u fleet-dispatch-listen").is_empty());
    assert!(invocations(r#"mkdir -p "$HOME/.local/state/fleet-dispatch""#).is_empty());
    assert_eq!(
        invocations("cd /tmp && X=1 fleet-dispatch listen --once | cat"),
        [["fleet-dispatch", "listen", "--once"]]
    );
    assert_eq!(
        words("a 2>&1 >>f; b && c"),
        [
            Tok::Word("a".into()),
            Tok::Op("2>&".into()),
            Tok::Word("1".into()),
            Tok::Op(">>".into()),
            Tok::Word("f".into()),
            Tok::Op(";".into()),
            Tok::Word("b".into()),
            Tok::Op("&&".into()),
            Tok::Word("c".into()),
        ]
    );
}
