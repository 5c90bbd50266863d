//! Man pages and shell completions are generated from the clap definition,
//! the user guide's exit-status table from `src/base/exit.rs`, and its table of
//! where each test module runs from the test sources. These tests
//! regenerate them and fail, with a diff and the command to refresh them,
//! when the committed files are out of date. Run
//! `FLEET_DISPATCH_REGENERATE=1 cargo test --test tests generated` to rewrite them.

use std::path::{Path, PathBuf};

use clap::{ArgAction, CommandFactory};
use clap_complete::env::{Bash, EnvCompleter, Fish, Powershell, Zsh};
use fleet_dispatch::front::cli::{self, Cli};
use fleet_dispatch::front::complete;

use crate::util::config_file_keys;

const REGENERATE: &str = "FLEET_DISPATCH_REGENERATE";

fn project() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Escapes text for a roff line.
fn roff(text: &str) -> String {
    let t = text.replace('\\', "\\e").replace('-', "\\-");
    if t.starts_with('.') || t.starts_with('\'') {
        format!("\\&{t}")
    } else {
        t
    }
}

fn tagged(out: &mut String, items: impl IntoIterator<Item = (String, String)>) {
    for (tag, text) in items {
        out.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", roff(&tag), roff(&text)));
    }
}

/// One option or argument as the SYNOPSIS shows it, value included
/// (`[--root DIR]`), which clap_mangen's own synopsis leaves out.
fn synopsis_arg(a: &clap::Arg) -> String {
    let value = a
        .get_value_names()
        .map(|v| {
            v.iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| a.get_id().as_str().to_uppercase());
    let takes_value = matches!(a.get_action(), ArgAction::Set | ArgAction::Append);
    // A positional's value name already says it repeats (`[ARG]...`).
    let repeats = if matches!(a.get_action(), ArgAction::Append) && !a.is_positional() {
        "..."
    } else {
        ""
    };
    let text = if a.is_positional() {
        let dashes = if a.is_last_set() {
            "\\fB\\-\\-\\fR "
        } else {
            ""
        };
        format!("{dashes}\\fI{}\\fR", roff(&value))
    } else {
        let mut names = Vec::new();
        if let Some(c) = a.get_short() {
            names.push(format!("\\fB\\-{c}\\fR"));
        }
        if let Some(l) = a.get_long() {
            names.push(format!("\\fB{}\\fR", roff(&format!("--{l}"))));
        }
        let mut t = names.join("|");
        if takes_value {
            t.push_str(&format!(" \\fI{}\\fR", roff(&value)));
        }
        t
    };
    if a.is_required_set() {
        format!("{text}{repeats}")
    } else {
        format!("[{text}]{repeats}")
    }
}

/// The SYNOPSIS: a command's own options with their values, and for a
/// subcommand its parent's name and `[global options]` in front.
fn synopsis(cmd: &clap::Command, parent: Option<&str>) -> String {
    let mut words = Vec::new();
    match parent {
        Some(p) => {
            words.push(format!("\\fB{}\\fR", roff(p)));
            words.push("[\\fIglobal options\\fR]".to_string());
            words.push(format!("\\fB{}\\fR", roff(cmd.get_name())));
        }
        None => words.push(format!("\\fB{}\\fR", roff(cmd.get_name()))),
    }
    let own = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && (parent.is_none() || !a.is_global_set()));
    let (required, optional): (Vec<_>, Vec<_>) = own
        .filter(|a| !a.is_positional())
        .partition(|a| a.is_required_set());
    words.extend(required.into_iter().chain(optional).map(synopsis_arg));
    words.extend(
        cmd.get_positionals()
            .filter(|a| !a.is_hide_set())
            .map(synopsis_arg),
    );
    if cmd.has_subcommands() {
        words.push("\\fIcommand\\fR".to_string());
    }
    format!(".SH SYNOPSIS\n{}\n", words.join(" "))
}

/// One man page: clap's sections, then EXAMPLES, EXIT STATUS, ENVIRONMENT,
/// CONFIGURATION FILE (on the main page and `config`'s), FILES, SEE ALSO.
/// `parent` is the main command's name on a subcommand's page; `pages`
/// names every page, for SEE ALSO.
fn man_page(cmd: clap::Command, title: &str, parent: Option<&str>, pages: &[String]) -> String {
    // clap names take &'static str; a test may leak a few bytes.
    let man = clap_mangen::Man::new(cmd.clone().name(&*title.to_string().leak()))
        .title(title.to_uppercase())
        .section("1")
        .source(format!("fleet-dispatch {}", env!("CARGO_PKG_VERSION")))
        .manual("fleet-dispatch manual");
    let mut buf = Vec::new();
    man.render_title(&mut buf).unwrap();
    man.render_name_section(&mut buf).unwrap();
    buf.extend_from_slice(synopsis(&cmd, parent).as_bytes());
    man.render_description_section(&mut buf).unwrap();
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut buf).unwrap();
    }
    if cmd.get_subcommands().next().is_some() {
        man.render_subcommands_section(&mut buf).unwrap();
    }
    let mut out = String::from_utf8(buf).unwrap();
    if let Some(after) = cmd.get_after_help() {
        out.push_str(".SH EXAMPLES\n.nf\n");
        for line in after.to_string().lines() {
            out.push_str(&roff(line));
            out.push('\n');
        }
        out.push_str(".fi\n");
    }
    out.push_str(".SH \"EXIT STATUS\"\n");
    let statuses = fleet_dispatch::base::exit::table();
    tagged(
        &mut out,
        statuses.into_iter().map(|(n, t)| (n.to_string(), t)),
    );
    out.push_str(&format!(".PP\n{}\n", roff(&worst_sentence())));
    out.push_str(".SH ENVIRONMENT\n");
    tagged(
        &mut out,
        cli::ENVIRONMENT
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    if parent.is_none() || cmd.get_name() == "config" {
        out.push_str(&configuration_file());
    }
    out.push_str(".SH FILES\n");
    tagged(
        &mut out,
        cli::FILES
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    out.push_str(".SH \"SEE ALSO\"\n");
    let others: Vec<String> = pages
        .iter()
        .filter(|p| *p != title)
        .map(|p| format!("{p}(1)"))
        .collect();
    out.push_str(&roff(&format!(
        "{}, docs/protocol.md for the protocol and docs/operations.md for running it as a service",
        others.join(", ")
    )));
    out.push('\n');
    out
}

/// The CONFIGURATION FILE section: where the file is, its keys, the
/// precedence.
fn configuration_file() -> String {
    let doc = &cli::CONFIG_FILE;
    let mut out = String::from(".SH \"CONFIGURATION FILE\"\n");
    out.push_str(&roff(doc.precedence));
    out.push_str("\n.PP\nThe file is looked for at:\n");
    tagged(
        &mut out,
        doc.paths
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    out.push_str(".PP\nIts keys, each optional:\n");
    tagged(
        &mut out,
        doc.keys.iter().map(|(k, v)| (k.to_string(), v.to_string())),
    );
    out
}

/// Every generated file: path relative to the project, and its content.
fn generated() -> Vec<(PathBuf, String)> {
    // `help` is a subcommand of the parser but has no page of its own.
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let name = cmd.get_name().to_string();
    let mut pages = vec![name.clone()];
    pages.extend(
        cmd.get_subcommands()
            .map(|s| format!("{name}-{}", s.get_name())),
    );
    // A command's own subcommands (`identity init`) have pages too.
    for sub in cmd.get_subcommands() {
        pages.extend(
            sub.get_subcommands()
                .map(|n| format!("{name}-{}-{}", sub.get_name(), n.get_name())),
        );
    }
    let mut files = vec![(
        PathBuf::from(format!("man/{name}.1")),
        man_page(cmd.clone(), &name, None, &pages),
    )];
    for sub in cmd.get_subcommands() {
        let page = format!("{name}-{}", sub.get_name());
        files.push((
            PathBuf::from(format!("man/{page}.1")),
            man_page(sub.clone(), &page, Some(&name), &pages),
        ));
        for nested in sub.get_subcommands() {
            let parent = format!("{name} {}", sub.get_name());
            let page = format!("{page}-{}", nested.get_name());
            files.push((
                PathBuf::from(format!("man/{page}.1")),
                man_page(nested.clone(), &page, Some(&parent), &pages),
            ));
        }
    }
    files.extend(completion_scripts());
    files
}

/// The completion scripts: each only registers the shell's hook, which
/// asks the binary (`complete::VAR=<shell> fleet-dispatch -- WORDS…`); the
/// binary on PATH answers. The same text the binary prints for
/// `FLEET_DISPATCH_COMPLETE=<shell> fleet-dispatch`, except that it names
/// the binary by name instead of by the path it was run from.
pub fn completion_scripts() -> Vec<(PathBuf, String)> {
    let shells: [(&dyn EnvCompleter, &str); 4] = [
        (&Bash, "fleet-dispatch.bash"),
        (&Zsh, "_fleet-dispatch"),
        (&Fish, "fleet-dispatch.fish"),
        (&Powershell, "_fleet-dispatch.ps1"),
    ];
    let name = complete::command().get_name().to_string();
    shells
        .into_iter()
        .map(|(shell, file)| {
            let mut buf = Vec::new();
            shell
                .write_registration(complete::VAR, &name, &name, &name, &mut buf)
                .unwrap();
            (
                PathBuf::from(format!("completions/{file}")),
                String::from_utf8(buf).unwrap(),
            )
        })
        .collect()
}

fn first_difference(old: &str, new: &str) -> String {
    for (i, (a, b)) in old.lines().zip(new.lines()).enumerate() {
        if a != b {
            return format!("line {}:\n- {a}\n+ {b}", i + 1);
        }
    }
    format!(
        "length differs: {} lines committed, {} generated",
        old.lines().count(),
        new.lines().count()
    )
}

#[test]
fn man_pages_and_completions_are_up_to_date() {
    let rewrite = std::env::var_os(REGENERATE).is_some();
    let mut stale = Vec::new();
    for (rel, content) in generated() {
        let path = project().join(&rel);
        let old = std::fs::read_to_string(&path).unwrap_or_default();
        if old == content {
            continue;
        }
        if rewrite {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &content).unwrap();
        } else {
            stale.push(format!(
                "{}: {}",
                rel.display(),
                first_difference(&old, &content)
            ));
        }
    }
    assert!(
        stale.is_empty(),
        "generated files are out of date:\n{}\n\nrefresh them with:\n  {REGENERATE}=1 cargo test --test tests generated",
        stale.join("\n\n")
    );
}

#[test]
fn man_pages_carry_exit_status_environment_and_layout() {
    for (rel, content) in generated()
        .into_iter()
        .filter(|(p, _)| p.starts_with("man"))
    {
        for section in [
            ".SH \"EXIT STATUS\"",
            ".SH ENVIRONMENT",
            ".SH FILES",
            "FLEET\\-DISPATCH\\-ROOT"
                .replace("\\-DISPATCH\\-", "_DISPATCH_")
                .as_str(),
        ] {
            assert!(
                content.contains(section),
                "{} lacks {section}",
                rel.display()
            );
        }
        assert!(
            content.contains("archive/done"),
            "{} lacks the layout",
            rel.display()
        );
    }
    assert!(Path::new(&project().join("man")).exists() || std::env::var_os(REGENERATE).is_some());
}

#[test]
fn every_subcommand_has_an_example_in_its_help() {
    let cmd = Cli::command();
    for sub in cmd.get_subcommands() {
        let after = sub
            .get_after_help()
            .map(|a| a.to_string())
            .unwrap_or_default();
        assert!(
            after.contains("Example"),
            "{} --help has no example",
            sub.get_name()
        );
    }
}

/// The exit-status table of `src/base/exit.rs` as Markdown rows.
fn exit_rows() -> String {
    let mut out = String::from("| exit | meaning |\n| --- | --- |\n");
    for (n, text) in fleet_dispatch::base::exit::table() {
        out.push_str(&format!("| {n} | {} |\n", text.replace('|', "\\|")));
    }
    out.push_str(&format!("\n{}\n", worst_sentence()));
    out
}

/// How a command over a target list combines its statuses, from
/// `src/base/exit.rs`.
fn worst_sentence() -> String {
    format!(
        "Over a target list (`--target A,B` or `all`), `result`, `cancel` and `enqueue --wait` exit with the worst status of the targets': {}.",
        fleet_dispatch::base::exit::WORST_ORDER
    )
}

/// Checks the block between the markers `begin` and `end` in the file
/// `rel` against `want`, which is given the block as committed; rewrites it
/// when FLEET_DISPATCH_REGENERATE is set, and otherwise fails saying `what`
/// differs, the first difference and the command to refresh it. Returns
/// the wanted block.
fn check_block(
    rel: &str,
    (begin, end): (&str, &str),
    what: &str,
    want: impl FnOnce(&str) -> String,
) -> String {
    let path = project().join(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    let start = text
        .find(begin)
        .unwrap_or_else(|| panic!("{rel} has no `{}` block", begin.trim()))
        + begin.len();
    let stop = start + text[start..].find(end).expect("the block's end marker");
    let want = want(&text[start..stop]);
    if text[start..stop] != want {
        assert!(
            std::env::var_os(REGENERATE).is_some(),
            "{rel}: {what}: {}\nrefresh it with:\n  {REGENERATE}=1 cargo test --test tests generated",
            first_difference(&text[start..stop], &want)
        );
        std::fs::write(&path, format!("{}{want}{}", &text[..start], &text[stop..])).unwrap();
    }
    want
}

#[test]
fn the_readme_and_the_protocol_carry_the_one_exit_status_table() {
    const MARKS: (&str, &str) = (
        "<!-- exit statuses: generated from src/base/exit.rs -->\n",
        "<!-- end of exit statuses -->",
    );
    for rel in ["docs/guide.md", "docs/protocol.md"] {
        check_block(
            rel,
            MARKS,
            "the exit-status table differs from src/base/exit.rs",
            |_| exit_rows(),
        );
    }
}

#[test]
fn man_pages_name_only_pages_that_exist_and_show_option_values() {
    let files = generated();
    let pages: Vec<String> = files
        .iter()
        .filter(|(p, _)| p.starts_with("man"))
        .map(|(p, _)| p.file_stem().unwrap().to_str().unwrap().to_string())
        .collect();
    assert!(!pages.iter().any(|p| p.ends_with("-help")), "{pages:?}");
    for (rel, content) in files.iter().filter(|(p, _)| p.starts_with("man")) {
        let page = rel.file_stem().unwrap().to_str().unwrap();
        // Every page a man page names exists, and none names itself.
        for (i, _) in content.match_indices("(1)") {
            let start = content[..i]
                .rfind(|c: char| c.is_whitespace() || c == ',')
                .map_or(0, |s| s + 1);
            let named = content[start..i].replace("\\-", "-");
            assert!(pages.contains(&named), "{page}: names {named}(1)");
            if content[..start].contains(".SH \"SEE ALSO\"") {
                assert_ne!(named, page, "{page}: SEE ALSO names itself");
            }
        }
        // The SYNOPSIS shows what each option takes.
        let synopsis = content
            .split(".SH SYNOPSIS\n")
            .nth(1)
            .and_then(|s| s.lines().next())
            .unwrap_or_else(|| panic!("{page}: no SYNOPSIS"));
        let mut cmd = Cli::command();
        cmd.build();
        let cmd = match page.strip_prefix("fleet-dispatch-") {
            Some(sub) => cmd
                .find_subcommand(sub)
                .or_else(|| {
                    let (outer, inner) = sub.split_once('-')?;
                    cmd.find_subcommand(outer)?.find_subcommand(inner)
                })
                .unwrap()
                .clone(),
            None => cmd,
        };
        for a in cmd.get_arguments().filter(|a| {
            a.get_long().is_some() && a.get_action().takes_values() && !a.is_global_set()
        }) {
            let value = a.get_value_names().unwrap()[0].to_string();
            let shown = format!(
                "\\fB\\-\\-{}\\fR \\fI{value}\\fR",
                a.get_long().unwrap().replace('-', "\\-")
            );
            assert!(synopsis.contains(&shown), "{page}: {shown} in {synopsis}");
        }
        // Global options have a section of their own.
        assert!(content.contains(".SH \"GLOBAL OPTIONS\""), "{page}");
        let own = content.split(".SH \"GLOBAL OPTIONS\"").next().unwrap();
        assert!(!own.contains("\\-\\-state\\-dir\\fR \\fI<"), "{page}");
    }
    let main = &files
        .iter()
        .find(|(p, _)| p.ends_with("fleet-dispatch.1"))
        .unwrap()
        .1;
    assert!(main.contains("[\\fB\\-\\-root\\fR \\fIDIR\\fR]"), "{main}");
}

#[test]
fn the_config_file_is_documented_in_the_man_pages_and_help() {
    for (rel, content) in generated() {
        let name = rel.file_stem().unwrap().to_str().unwrap().to_string();
        if !rel.starts_with("man")
            || !["fleet-dispatch", "fleet-dispatch-config"].contains(&name.as_str())
        {
            continue;
        }
        let section = content
            .split(".SH \"CONFIGURATION FILE\"\n")
            .nth(1)
            .unwrap_or_else(|| panic!("{name}: no CONFIGURATION FILE section"));
        assert!(section.contains("config.toml"), "{name}");
        assert!(section.contains("FLEET_DISPATCH_CONFIG"), "{name}");
        assert!(section.contains("else the config file"), "{name}");
        for key in cli::CONFIG_FILE.key_names() {
            assert!(
                section.contains(&format!("\\fB{}", key.replace('-', "\\-"))),
                "{name}: key {key}"
            );
        }
    }
    // Every key the parser accepts is documented, and no other: the
    // parser's own list (its refusal of an unknown key names every field)
    // against the documented list, both ways.
    let documented: Vec<String> = cli::CONFIG_FILE.key_names().map(String::from).collect();
    let mut accepted = config_file_keys();
    let mut sorted = documented.clone();
    sorted.sort();
    accepted.sort();
    assert_eq!(
        sorted, accepted,
        "the config file keys documented in cli::CONFIG_FILE differ from those the parser accepts"
    );
    // And each documented key, fed alone, is one the parser knows.
    for key in &documented {
        let text = format!("{key} = []");
        let err = fleet_dispatch::front::config::parse_config(&text, Path::new("/c.toml"))
            .err()
            .map(|e| e.message)
            .unwrap_or_default();
        assert!(!err.contains("unknown field"), "{key}: {err}");
    }
    let help = Cli::command().render_long_help().to_string();
    assert!(help.contains("config file"), "{help}");
    let mut cmd = Cli::command();
    cmd.build();
    let sub = cmd
        .find_subcommand_mut("enqueue")
        .unwrap()
        .render_long_help()
        .to_string();
    let (own, global) = sub
        .split_once("Global options:")
        .expect("a Global options heading");
    assert!(global.contains("--root"), "{sub}");
    assert!(!own.contains("--root"), "{sub}");
}

// ---------------------------------------------------------------- where each test module runs

/// How many of a test module's tests run where, read from its source.
#[derive(Clone, Copy, Default)]
struct Counts {
    /// Built and run natively on Linux.
    linux: usize,
    /// Built on Linux but ignored there (it needs a tool or root), run by
    /// `.ci/run` with `--ignored`.
    ignored_linux: usize,
    /// Built for Windows and not ignored there: what runs under Wine.
    wine: usize,
    /// Built on Linux but not for Windows (`cfg(unix)`, `target_os = "linux"`).
    not_windows: usize,
    /// Built for Windows but ignored there.
    ignored_wine: usize,
}

impl Counts {
    fn add(&mut self, o: Counts) {
        self.linux += o.linux;
        self.ignored_linux += o.ignored_linux;
        self.wine += o.wine;
        self.not_windows += o.not_windows;
        self.ignored_wine += o.ignored_wine;
    }
}

/// Where one test (its attributes, and its module's `cfg` from `mod.rs`,
/// with all white space removed) runs. A `cfg` this does not know fails,
/// so a new kind of gate cannot be counted wrong in silence.
fn test_counts(attrs: &str) -> Counts {
    const OFF_WINDOWS: [&str; 3] = [
        "#[cfg(unix)]",
        "#[cfg(target_os=\"linux\")]",
        "#[cfg(not(windows))]",
    ];
    const OFF_LINUX: [&str; 2] = ["#[cfg(windows)]", "#[cfg(not(unix))]"];
    let off_windows = OFF_WINDOWS.iter().any(|g| attrs.contains(g));
    let off_linux = OFF_LINUX.iter().any(|g| attrs.contains(g));
    let unknown = OFF_WINDOWS
        .iter()
        .chain(&OFF_LINUX)
        .fold(attrs.to_string(), |rest, g| rest.replace(g, ""));
    assert!(
        !unknown.contains("#[cfg("),
        "a test gate this count does not understand: {attrs}"
    );
    let ignored = attrs.contains("#[ignore");
    let ignored_on_windows = ignored || attrs.contains("#[cfg_attr(windows,ignore");
    Counts {
        linux: usize::from(!off_linux && !ignored),
        ignored_linux: usize::from(!off_linux && ignored),
        wine: usize::from(!off_windows && !ignored_on_windows),
        not_windows: usize::from(off_windows && !off_linux),
        ignored_wine: usize::from(!off_windows && ignored_on_windows),
    }
}

/// The attributes (and comments) of each `#[test]` in `source`, from the
/// end of the item above it down to its `fn`, white space removed.
fn test_attributes(source: &str) -> Vec<String> {
    let lines: Vec<&str> = source.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        if (t.starts_with("mod ") || t.starts_with("pub mod ")) && t.ends_with('{') && i > 0 {
            assert!(
                !lines[i - 1].trim().starts_with("#[cfg"),
                "a gated inline module ({t}): count it in the CONTRIBUTING.md test table by hand"
            );
        }
        if t != "#[test]" {
            continue;
        }
        let mut start = i;
        while start > 0 {
            let above = lines[start - 1].trim();
            let part_of_it =
                above.starts_with("//") || !(above.is_empty() || above.ends_with([';', '{', '}']));
            if !part_of_it {
                break;
            }
            start -= 1;
        }
        let end = (i..lines.len())
            .find(|&j| lines[j].contains("fn "))
            .expect("a #[test] without its fn");
        let attrs: String = lines[start..=end]
            .iter()
            .filter(|l| !l.trim_start().starts_with("//"))
            .flat_map(|l| l.chars())
            .filter(|c| !c.is_whitespace())
            .collect();
        out.push(attrs);
    }
    out
}

/// Each module of `tests/suite`, by name, with its counts.
fn suite_counts() -> Vec<(String, Counts)> {
    let dir = project().join("tests/suite");
    let list = std::fs::read_to_string(dir.join("mod.rs")).unwrap();
    let lines: Vec<&str> = list.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(name) = line.strip_prefix("mod ").and_then(|l| l.strip_suffix(';')) else {
            continue;
        };
        let gate: String = match i.checked_sub(1).map(|j| lines[j].trim()) {
            Some(a) if a.starts_with("#[") => a.chars().filter(|c| !c.is_whitespace()).collect(),
            _ => String::new(),
        };
        let source = std::fs::read_to_string(dir.join(format!("{name}.rs"))).unwrap();
        let mut c = Counts::default();
        for attrs in test_attributes(&source) {
            c.add(test_counts(&format!("{gate}{attrs}")));
        }
        out.push((name.to_string(), c));
    }
    out
}

/// CONTRIBUTING.md's table of where the integration tests run: the counts from
/// the sources, the reasons (the last column) kept from `old`.
fn where_tests_run(old: &str) -> String {
    let reasons: std::collections::HashMap<&str, &str> = old
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.strip_prefix("| `")?.split_once('`')?;
            // The cells after the name: the counts, then the reason.
            let mut cells = rest.trim_end().trim_end_matches('|').split('|').skip(1);
            let why = cells.find(|c| !c.trim().bytes().all(|b| b.is_ascii_digit()))?;
            Some((name, why.trim()))
        })
        .collect();
    let mut out = String::from(
        "| module | Linux | ignored on Linux | under Wine | not built for Windows | ignored under Wine | why not under Wine |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | --- |\n",
    );
    let mut all = Counts::default();
    for (name, c) in suite_counts() {
        all.add(c);
        let why = reasons.get(name.as_str()).copied().unwrap_or_default();
        out.push_str(
            &format!(
                "| `{name}` | {} | {} | {} | {} | {} | {why} |\n",
                c.linux, c.ignored_linux, c.wine, c.not_windows, c.ignored_wine
            )
            .replace("|  |", "| |"),
        );
    }
    out.push_str(&format!(
        "| all | {} | {} | {} | {} | {} | |\n",
        all.linux, all.ignored_linux, all.wine, all.not_windows, all.ignored_wine
    ));
    out
}

#[test]
fn the_readme_says_where_each_test_module_runs() {
    const MARKS: (&str, &str) = (
        "<!-- test counts: generated from tests/suite -->\n",
        "<!-- end of test counts -->",
    );
    let want = check_block(
        "CONTRIBUTING.md",
        MARKS,
        "the table of where the tests run differs from tests/suite",
        where_tests_run,
    );
    // Every module that leaves tests out under Wine says why.
    for row in want.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = row.split(" | ").collect();
        let left_out = cells[4] != "0" || cells[5] != "0";
        assert!(
            !left_out || !row.ends_with("| |"),
            "CONTRIBUTING.md, where the tests run: say why beside {row}"
        );
    }
}
