//! Man pages and shell completions are generated from the clap definition.
//! This test regenerates them and fails, with a diff and the command to
//! refresh them, when the committed files are out of date. Run
//! `FLEET_DISPATCH_REGENERATE=1 cargo test --test tests generated` to rewrite them.

use std::path::{Path, PathBuf};

use clap::CommandFactory;
use clap_complete::Shell;
use fleet_dispatch::cli::{self, Cli};

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

/// One man page: clap's sections, then EXAMPLES, EXIT STATUS, ENVIRONMENT, FILES.
fn man_page(cmd: clap::Command, title: &str) -> String {
    let man = clap_mangen::Man::new(cmd.clone())
        .title(title.to_uppercase())
        .section("1")
        .source(format!("fleet-dispatch {}", env!("CARGO_PKG_VERSION")))
        .manual("fleet-dispatch manual");
    let mut buf = Vec::new();
    man.render_title(&mut buf).unwrap();
    man.render_name_section(&mut buf).unwrap();
    man.render_synopsis_section(&mut buf).unwrap();
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
    let statuses = fleet_dispatch::exit::table();
    tagged(
        &mut out,
        statuses.into_iter().map(|(n, t)| (n.to_string(), t)),
    );
    out.push_str(".SH ENVIRONMENT\n");
    tagged(
        &mut out,
        cli::ENVIRONMENT
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    out.push_str(".SH FILES\n");
    tagged(
        &mut out,
        cli::FILES
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    out.push_str(".SH \"SEE ALSO\"\n");
    out.push_str(&roff(
        "fleet-dispatch(1), and the README for the protocol and deployment recipes",
    ));
    out.push('\n');
    out
}

/// Every generated file: path relative to the project, and its content.
fn generated() -> Vec<(PathBuf, String)> {
    let mut cmd = Cli::command();
    cmd.build();
    let mut files = vec![(
        PathBuf::from("man/fleet-dispatch.1"),
        man_page(cmd.clone(), "fleet-dispatch"),
    )];
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = format!("fleet-dispatch-{}", sub.get_name());
        // clap names take &'static str; a test may leak a few bytes.
        let sub = sub.clone().name(&*name.clone().leak());
        files.push((PathBuf::from(format!("man/{name}.1")), man_page(sub, &name)));
    }
    for (shell, file) in [
        (Shell::Bash, "fleet-dispatch.bash"),
        (Shell::Zsh, "_fleet-dispatch"),
        (Shell::Fish, "fleet-dispatch.fish"),
        (Shell::PowerShell, "_fleet-dispatch.ps1"),
    ] {
        let mut buf = Vec::new();
        clap_complete::generate(shell, &mut Cli::command(), "fleet-dispatch", &mut buf);
        files.push((
            PathBuf::from(format!("completions/{file}")),
            String::from_utf8(buf).unwrap(),
        ));
    }
    files
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

/// The exit-status table of `src/exit.rs` as Markdown rows.
fn exit_rows() -> String {
    let mut out = String::from("| exit | meaning |\n| --- | --- |\n");
    for (n, text) in fleet_dispatch::exit::table() {
        out.push_str(&format!("| {n} | {} |\n", text.replace('|', "\\|")));
    }
    out
}

#[test]
fn the_readme_and_the_protocol_carry_the_one_exit_status_table() {
    const BEGIN: &str = "<!-- exit statuses: generated from src/exit.rs -->\n";
    const END: &str = "<!-- end of exit statuses -->";
    let rewrite = std::env::var_os(REGENERATE).is_some();
    for rel in ["README.md", "docs/protocol.md"] {
        let path = project().join(rel);
        let text = std::fs::read_to_string(&path).unwrap();
        let start = text
            .find(BEGIN)
            .unwrap_or_else(|| panic!("{rel} has no `{}` block", BEGIN.trim()))
            + BEGIN.len();
        let end = start + text[start..].find(END).expect("the block's end marker");
        let want = exit_rows();
        if text[start..end] == want {
            continue;
        }
        assert!(
            rewrite,
            "{rel}: the exit-status table differs from src/exit.rs: {}\nrefresh it with:\n  {REGENERATE}=1 cargo test --test tests generated",
            first_difference(&text[start..end], &want)
        );
        std::fs::write(&path, format!("{}{want}{}", &text[..start], &text[end..])).unwrap();
    }
}
