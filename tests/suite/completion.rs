//! Shell completion works in real shells: the committed scripts in
//! `completions/` are loaded into bash, zsh and fish, which then complete
//! through the built binary (on PATH as `fleet-dispatch`): subcommands,
//! options after a subcommand, the values of every value enum, target
//! folders for every `--target` and job ids for every `--job-id` and
//! `--interrupt`. The cases are read from the clap definition, so a new
//! subcommand or flag is tested with no change here.
//!
//! bash: `COMP_WORDS`/`COMP_CWORD` are set and the registered function is
//! called, then `COMPREPLY` is read, as bash's programmable completion does.
//! zsh: the script's completer runs with `words`/`CURRENT` set; `compdef`
//! and `_describe`, which belong to zsh's completion system, are stand-ins
//! that record what it offers. fish: `complete -C` asks fish itself. The
//! cases run in bash by default; zsh's and fish's tests are ignored, since
//! a machine may lack those shells, and fail where the shell is missing
//! (`.ci/run` installs both and runs them).
//!
//! Regression: the script clap_complete generated once matched none of the
//! command names it built for a hyphenated program name, so
//! `fleet-dispatch enqueue --ta<Tab>` completed nothing and
//! `--priority <Tab>` listed files.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::CommandFactory;
use fleet_dispatch::front::cli::Cli;

use crate::util::{World, bin};

#[derive(Clone, Copy, Debug)]
enum Shell {
    Bash,
    Zsh,
    Fish,
}

const END: &str = "--end-of-case--";

fn script(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("completions")
        .join(file)
}

/// Quotes a word for bash, zsh and fish alike (single quotes).
fn q(w: &str) -> String {
    assert!(!w.contains('\''), "{w}");
    format!("'{w}'")
}

/// What `shell` offers for each case: the words typed so far, the last one
/// being completed (may be empty). A shell that is not installed fails
/// the test.
fn offers(shell: Shell, w: &World, cases: &[Vec<String>]) -> Vec<BTreeSet<String>> {
    offers_in_order(shell, w, cases)
        .into_iter()
        .map(|l| l.into_iter().collect())
        .collect()
}

/// [`offers`] in the order the shell offers them (every script keeps the
/// binary's order: bash `-o nosort`, zsh `_describe -V`, fish
/// `--keep-order`).
fn offers_in_order(shell: Shell, w: &World, cases: &[Vec<String>]) -> Vec<Vec<String>> {
    let mut text = String::new();
    let program = match shell {
        Shell::Bash => {
            text.push_str(&format!(
                "source {}\n",
                q(script("fleet-dispatch.bash").to_str().unwrap())
            ));
            for c in cases {
                let words: Vec<String> = c.iter().map(|w| q(w)).collect();
                text.push_str(&format!(
                    "COMP_WORDS=({})\nCOMP_CWORD={}\nCOMP_LINE={}\nCOMP_POINT=${{#COMP_LINE}}\nCOMPREPLY=()\n\
                     _clap_complete_fleet_dispatch fleet-dispatch {} {}\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\necho {END}\n",
                    words.join(" "),
                    c.len() - 1,
                    q(&c.join(" ")),
                    q(&c[c.len() - 1]),
                    q(&c[c.len() - 2]),
                ));
            }
            "bash"
        }
        Shell::Zsh => {
            // Stand-ins for the completion system's entry points: record
            // the values `_describe` is handed (`value:description`).
            text.push_str(
                "compdef() { :; }\n_describe() { local n=$3; local v; for v in \"${(@P)n}\"; do print -r -- \"${v%%:*}\"; done; }\n",
            );
            text.push_str(&format!(
                "source {}\n",
                q(script("_fleet-dispatch").to_str().unwrap())
            ));
            for c in cases {
                let words: Vec<String> = c.iter().map(|w| q(w)).collect();
                text.push_str(&format!(
                    "words=({})\nCURRENT={}\n_clap_dynamic_completer_fleet_dispatch\necho {END}\n",
                    words.join(" "),
                    c.len()
                ));
            }
            "zsh"
        }
        Shell::Fish => {
            text.push_str(&format!(
                "source {}\n",
                q(script("fleet-dispatch.fish").to_str().unwrap())
            ));
            for c in cases {
                text.push_str(&format!("complete -C {}\necho {END}\n", q(&c.join(" "))));
            }
            "fish"
        }
    };
    let file = w.dir.path().join(format!("cases.{program}"));
    std::fs::write(&file, text).unwrap();
    let path = format!(
        "{}:/usr/local/bin:/usr/bin:/bin",
        bin().parent().unwrap().display()
    );
    let mut cmd = Command::new(program);
    if program == "zsh" {
        cmd.arg("-f");
    }
    if program == "fish" {
        cmd.arg("--no-config");
    }
    let out = cmd
        .arg(&file)
        .env_clear()
        .env("PATH", path)
        .env("HOME", &w.home)
        .env("XDG_CONFIG_HOME", w.home.join("cfg"))
        .env("FLEET_DISPATCH_ROOT", &w.root)
        .env("FLEET_DISPATCH_KEY_FILE", &w.key)
        .env("FLEET_DISPATCH_STATE_DIR", &w.state)
        .env("FLEET_DISPATCH_MACHINE", "PC")
        .current_dir(w.dir.path())
        .output()
        .unwrap_or_else(|e| panic!("{program} cannot run ({e}): install it"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{program} failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answers: Vec<Vec<String>> = stdout
        .split(&format!("{END}\n"))
        .take(cases.len())
        .map(|block| {
            block
                .lines()
                // fish prints `value<TAB>description`.
                .map(|l| l.split('\t').next().unwrap().to_string())
                .filter(|l| !l.is_empty())
                .collect()
        })
        .collect();
    assert_eq!(answers.len(), cases.len(), "{program}: {stdout}");
    answers
}

fn case(words: &[&str]) -> Vec<String> {
    std::iter::once("fleet-dispatch")
        .chain(words.iter().copied())
        .map(str::to_string)
        .collect()
}

/// Runs every case in `shell`; `check` gets the shell, the case and what
/// the shell offered.
fn in_shell(
    shell: Shell,
    w: &World,
    cases: &[Vec<String>],
    check: impl Fn(Shell, &[String], &BTreeSet<String>),
) {
    for (c, got) in cases.iter().zip(&offers(shell, w, cases)) {
        check(shell, c, got);
    }
}

/// The subcommands users see (not clap's `help`), built.
fn subcommands() -> Vec<clap::Command> {
    let mut cmd = Cli::command();
    cmd.build();
    cmd.get_subcommands()
        .filter(|s| s.get_name() != "help" && !s.is_hide_set())
        .cloned()
        .collect()
}

/// Subcommands with an option of this id, and its long name.
fn with_option(id: &str) -> Vec<(String, String)> {
    subcommands()
        .iter()
        .filter_map(|s| {
            let a = s.get_arguments().find(|a| a.get_id() == id)?;
            Some((s.get_name().to_string(), a.get_long()?.to_string()))
        })
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn subcommands_complete(shell: Shell) {
    let w = World::new();
    let names: BTreeSet<String> = subcommands()
        .iter()
        .map(|s| s.get_name().to_string())
        .collect();
    let cases = vec![case(&[""]), case(&["con"]), case(&["verify-"])];
    in_shell(shell, &w, &cases, |shell, c, got| match c[1].as_str() {
        "" => assert!(
            got.is_superset(&names),
            "{shell:?}: {got:?} lacks some of {names:?}"
        ),
        "con" => assert_eq!(got, &set(&["config"]), "{shell:?}"),
        _ => assert_eq!(got, &set(&["verify-marker"]), "{shell:?}"),
    });
}

fn every_option_completes_after_its_subcommand(shell: Shell) {
    let w = World::new();
    let mut cases = Vec::new();
    for sub in subcommands() {
        for a in sub.get_arguments().filter(|a| !a.is_hide_set()) {
            let Some(long) = a.get_long() else { continue };
            let typed = format!("--{}", &long[..long.len().min(4)]);
            cases.push(case(&[sub.get_name(), &typed]));
            cases.push(case(&[sub.get_name(), &format!("--{long}")]));
        }
    }
    assert!(cases.len() > 40, "{} cases", cases.len());
    in_shell(shell, &w, &cases, |shell, c, got| {
        let typed = &c[2];
        assert!(
            !got.is_empty() && got.iter().all(|o| o.starts_with(typed.as_str())),
            "{shell:?}: `{}` offered {got:?}",
            c.join(" ")
        );
    });
    // The regression itself, spelled out.
    in_shell(shell, &w, &[case(&["enqueue", "--ta"])], |shell, _, got| {
        assert_eq!(got, &set(&["--target"]), "{shell:?}");
    });
}

fn every_value_enum_completes_its_values(shell: Shell) {
    let w = World::new();
    let mut cases = Vec::new();
    let mut wanted = Vec::new();
    for sub in subcommands() {
        for a in sub.get_arguments() {
            let values: BTreeSet<String> = a
                .get_possible_values()
                .iter()
                .filter(|v| !v.is_hide_set())
                .map(|v| v.get_name().to_string())
                .collect();
            let (Some(long), false) = (a.get_long(), values.is_empty()) else {
                continue;
            };
            cases.push(case(&[sub.get_name(), &format!("--{long}"), ""]));
            wanted.push(values);
        }
    }
    let names: Vec<String> = cases.iter().map(|c| c[2].clone()).collect();
    assert!(names.contains(&"--priority".to_string()), "{names:?}");
    assert!(names.contains(&"--durability".to_string()), "{names:?}");
    in_shell(shell, &w, &cases, |shell, c, got| {
        let i = cases.iter().position(|x| x == c).unwrap();
        assert_eq!(got, &wanted[i], "{shell:?}: `{}`", c.join(" "));
    });
    in_shell(
        shell,
        &w,
        &[case(&["enqueue", "--priority", "h"])],
        |shell, _, got| {
            assert_eq!(got, &set(&["high"]), "{shell:?}");
        },
    );
}

fn every_target_option_completes_the_target_folders(shell: Shell) {
    let w = World::new();
    w.make_target("PC");
    w.make_target("LAPTOP");
    std::fs::create_dir_all(w.root.join("not a machine")).unwrap();
    std::fs::write(w.root.join("FILE"), "").unwrap();
    let other = w.dir.path().join("other-root");
    std::fs::create_dir_all(other.join("BOX")).unwrap();
    w.make_target("BOX");
    let subs = with_option("target");
    assert!(subs.len() >= 5, "{subs:?}");
    let mut cases = Vec::new();
    for (sub, long) in &subs {
        cases.push(case(&[sub, &format!("--{long}"), ""]));
        cases.push(case(&[sub, &format!("--{long}"), "L"]));
        // After a comma: the targets the list does not name yet.
        cases.push(case(&[sub, &format!("--{long}"), "PC,"]));
        cases.push(case(&[sub, &format!("--{long}"), "PC,L"]));
        // A root typed on the line is the one completed from.
        cases.push(case(&[
            "--root",
            other.to_str().unwrap(),
            sub,
            &format!("--{long}"),
            "",
        ]));
    }
    in_shell(shell, &w, &cases, |shell, c, got| {
        let want = if c[1] == "--root" {
            set(&["BOX"])
        } else if c[c.len() - 1] == "L" {
            set(&["LAPTOP"])
        } else if c[c.len() - 1] == "PC," {
            set(&["PC,BOX", "PC,LAPTOP"])
        } else if c[c.len() - 1] == "PC,L" {
            set(&["PC,LAPTOP"])
        } else {
            set(&["BOX", "LAPTOP", "PC"])
        };
        assert_eq!(got, &want, "{shell:?}: `{}`", c.join(" "));
    });
}

fn every_job_id_option_completes_the_ids_on_the_target(shell: Shell) {
    let w = World::new();
    w.make_target("PC");
    w.make_target("LAPTOP");
    let pc = w.root.join("PC");
    for (dir, name) in [
        ("inbox", "20261129-193000-0000000000000001.json"),
        ("running", "running-job.json"),
        ("results", "finished-job.json"),
        ("archive/done", "archived-job.json"),
        ("inbox", "notes.txt"),
        ("inbox", ".tmp-half-written"),
    ] {
        std::fs::write(pc.join(dir).join(name), "{}").unwrap();
    }
    std::fs::write(w.root.join("LAPTOP/inbox/laptop-job.json"), "{}").unwrap();
    let on_pc = set(&[
        "20261129-193000-0000000000000001",
        "finished-job",
        "running-job",
    ]);
    let mut subs = with_option("job_id");
    subs.extend(with_option("interrupt"));
    assert!(subs.len() >= 3, "{subs:?}");
    let mut cases = Vec::new();
    for (sub, long) in &subs {
        let has_target = !with_option("target").iter().all(|(s, _)| s != sub);
        if has_target {
            cases.push(case(&[sub, "--target", "PC", &format!("--{long}"), ""]));
            cases.push(case(&[sub, "--target", "pc", &format!("--{long}"), "run"]));
        }
        cases.push(case(&[sub, &format!("--{long}"), ""]));
    }
    in_shell(shell, &w, &cases, |shell, c, got| {
        let last = c[c.len() - 1].as_str();
        let mut want = if c.contains(&"--target".to_string()) && last == "run" {
            set(&["running-job"])
        } else if c.contains(&"--target".to_string()) {
            on_pc.clone()
        } else {
            let mut all = on_pc.clone();
            all.insert("laptop-job".into());
            all
        };
        // A finished job has nothing to stop; the names that are no id
        // are offered there too (`run` completes to `running` as well).
        if c[1] == "cancel" || c.contains(&"--interrupt".to_string()) {
            want.remove("finished-job");
            let interrupt = c.contains(&"--interrupt".to_string());
            for name in ["last", "running"] {
                if name.starts_with(last) && (name == "last" || interrupt) {
                    want.insert(name.into());
                }
            }
        }
        assert_eq!(got, &want, "{shell:?}: `{}`", c.join(" "));
    });
}

/// `cancel` and `--interrupt` complete the jobs that can still be stopped,
/// queued and running, newest first; finished ones are not offered there.
/// `result` offers them all, newest first too.
fn stopping_completes_queued_and_running_jobs_newest_first(shell: Shell) {
    let w = World::new();
    w.make_target("PC");
    let pc = w.root.join("PC");
    let now = std::time::SystemTime::now();
    for (dir, id, age) in [
        ("inbox", "oldest-queued", 40),
        ("running", "running-now", 30),
        ("inbox", "newer-queued", 20),
        ("results", "finished-last", 10),
        ("inbox", "newest-queued", 5),
    ] {
        let f = pc.join(dir).join(format!("{id}.json"));
        std::fs::write(&f, "{}").unwrap();
        let t = now - std::time::Duration::from_secs(age);
        std::fs::File::options()
            .write(true)
            .open(&f)
            .unwrap()
            .set_modified(t)
            .unwrap();
    }
    let stoppable = [
        "newest-queued",
        "newer-queued",
        "running-now",
        "oldest-queued",
    ];
    let cases = vec![
        case(&["cancel", "--target", "PC", "--job-id", ""]),
        case(&["enqueue", "--target", "PC", "--interrupt", ""]),
        case(&["result", "--target", "PC", "--job-id", ""]),
    ];
    let answers = offers_in_order(shell, &w, &cases);
    // The names that are no id come first: `running` (the job running
    // now) where it is taken, and `last`.
    let with = |names: &[&str]| -> Vec<String> {
        names
            .iter()
            .chain(stoppable.iter())
            .map(|s| s.to_string())
            .collect()
    };
    assert_eq!(answers[0], with(&["last"]), "{shell:?}: cancel");
    assert_eq!(
        answers[1],
        with(&["running", "last"]),
        "{shell:?}: --interrupt"
    );
    assert_eq!(
        answers[2],
        [
            "newest-queued",
            "finished-last",
            "newer-queued",
            "running-now",
            "oldest-queued"
        ],
        "{shell:?}: result"
    );
}

// ---------------------------------------------------------------- per shell

#[test]
fn subcommands_complete_in_bash() {
    subcommands_complete(Shell::Bash);
}

#[test]
fn every_option_completes_after_its_subcommand_in_bash() {
    every_option_completes_after_its_subcommand(Shell::Bash);
}

#[test]
fn every_value_enum_completes_its_values_in_bash() {
    every_value_enum_completes_its_values(Shell::Bash);
}

#[test]
fn every_target_option_completes_the_target_folders_in_bash() {
    every_target_option_completes_the_target_folders(Shell::Bash);
}

#[test]
fn every_job_id_option_completes_the_ids_on_the_target_in_bash() {
    every_job_id_option_completes_the_ids_on_the_target(Shell::Bash);
}

#[test]
fn stopping_completes_queued_and_running_jobs_newest_first_in_bash() {
    stopping_completes_queued_and_running_jobs_newest_first(Shell::Bash);
}

/// Every case above, in `shell`.
fn every_case(shell: Shell) {
    subcommands_complete(shell);
    every_option_completes_after_its_subcommand(shell);
    every_value_enum_completes_its_values(shell);
    every_target_option_completes_the_target_folders(shell);
    every_job_id_option_completes_the_ids_on_the_target(shell);
    stopping_completes_queued_and_running_jobs_newest_first(shell);
}

#[test]
#[ignore = "needs zsh"]
fn every_case_in_zsh() {
    every_case(Shell::Zsh);
}

#[test]
#[ignore = "needs fish"]
fn every_case_in_fish() {
    every_case(Shell::Fish);
}
