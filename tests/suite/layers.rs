//! The architecture holds: `src/lib.rs` lists the modules in layers, and
//! every module imports only from its own layer or the ones before it, with
//! no cycle anywhere, and no command imports another; CONTRIBUTING.md's
//! Dependencies table names every crate where it is used. A change that makes a
//! rule layer call up into a front end fails here, naming the import. Inside
//! `src/platform/`, no OS leaf file (`unix.rs`, `linux.rs`, `macos.rs`,
//! `windows.rs`, …) names another; no source file is over 600 lines, and
//! no command file (`src/cmd/`) over 200: a command parses, calls one
//! library function and renders.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// Code lines only: comments may name any module.
fn code(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The identifiers following each `prefix` in `text`.
fn names_after<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    text.match_indices(prefix)
        .map(|(i, _)| {
            let rest = &text[i + prefix.len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .filter(|n| !n.is_empty())
        .collect()
}

/// The crate modules `text` names: `crate::a::…` and each first item of a
/// group, `crate::{a, b::c}`.
fn crate_names(text: &str) -> Vec<&str> {
    let mut out = names_after(text, "crate::");
    for (i, _) in text.match_indices("crate::{") {
        let rest = &text[i + "crate::{".len()..];
        let (mut depth, mut item_start) = (0usize, true);
        for (j, c) in rest.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => item_start = true,
                c if item_start && (c.is_ascii_alphanumeric() || c == '_') => {
                    item_start = false;
                    let item = &rest[j..];
                    let end = item
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(item.len());
                    out.push(&item[..end]);
                }
                _ => {}
            }
        }
    }
    out
}

#[test]
fn grouped_imports_name_each_module() {
    let text = "use crate::{clock, submit::{a, b}};\nuse crate::names::JobId;";
    assert_eq!(crate_names(text), ["names", "clock", "submit"]);
}

/// Module → layer number, from the numbered list in `lib.rs`'s doc.
fn layers() -> BTreeMap<String, usize> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let mut out = BTreeMap::new();
    for line in lib.lines() {
        let Some(item) = line.strip_prefix("//! ") else {
            continue;
        };
        let Some((n, rest)) = item.split_once(". ") else {
            continue;
        };
        let Ok(n) = n.parse::<usize>() else { continue };
        for m in names_after(rest, "[`") {
            assert!(
                out.insert(m.to_string(), n).is_none(),
                "{m} is listed in two layers of lib.rs"
            );
        }
    }
    out
}

/// Module → the crate modules its code names.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let root = src();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in rust_files(&root) {
        let rel = file.strip_prefix(&root).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_str()
            .unwrap();
        let module = first.trim_end_matches(".rs").to_string();
        if module == "lib" || module == "main" {
            continue;
        }
        let text = code(&std::fs::read_to_string(&file).unwrap());
        let deps = out.entry(module.clone()).or_default();
        for dep in crate_names(&text) {
            // `crate::note!` is a macro `out` exports at the crate's root.
            let dep = if dep == "note" { "out" } else { dep };
            if dep != module {
                deps.insert(dep.to_string());
            }
        }
    }
    out
}

#[test]
fn every_module_is_in_exactly_one_layer() {
    let layers = layers();
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let declared: BTreeSet<String> = code(&lib)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|m| m.trim_end_matches(';').to_string())
        .collect();
    let listed: BTreeSet<String> = layers.keys().cloned().collect();
    assert_eq!(
        declared, listed,
        "lib.rs: `pub mod` lines vs the layer list"
    );
}

#[test]
fn no_module_imports_one_in_a_later_layer() {
    let layers = layers();
    let mut wrong = Vec::new();
    for (module, deps) in imports() {
        let mine = layers[&module];
        for dep in deps {
            let theirs = *layers
                .get(&dep)
                .unwrap_or_else(|| panic!("{module} names crate::{dep}, which no layer lists"));
            if theirs > mine {
                wrong.push(format!(
                    "{module} (layer {mine}) imports {dep} (layer {theirs})"
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the layers:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_module_graph_has_no_cycle() {
    let graph = imports();
    // Depth-first search; `path` is the chain being explored.
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) {
        if let Some(i) = path.iter().position(|p| p == m) {
            panic!("import cycle: {} -> {m}", path[i..].join(" -> "));
        }
        if done.contains(m) {
            return;
        }
        path.push(m.to_string());
        for dep in graph.get(m).into_iter().flatten() {
            visit(dep, graph, done, path);
        }
        path.pop();
        done.insert(m.to_string());
    }
    let mut done = BTreeSet::new();
    for m in graph.keys() {
        visit(m, &graph, &mut done, &mut Vec::new());
    }
}

#[test]
fn no_command_imports_another() {
    let dir = src().join("cmd");
    let commands: BTreeSet<String> = rust_files(&dir)
        .iter()
        .map(|p| p.file_stem().unwrap().to_str().unwrap().to_string())
        .filter(|n| n != "mod")
        .collect();
    for file in rust_files(&dir) {
        let text = code(&std::fs::read_to_string(&file).unwrap());
        for name in names_after(&text, "super::")
            .into_iter()
            .chain(names_after(&text, "cmd::"))
        {
            assert!(
                !commands.contains(name),
                "{} uses the command module `{name}`: move what both need below cmd/ or into cmd/mod.rs",
                file.display()
            );
        }
    }
}

/// The crate names `Cargo.toml` declares, in any dependency table, each
/// with true when it is a dev-dependency.
fn declared_crates() -> BTreeMap<String, bool> {
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    let mut out = BTreeMap::new();
    let (mut in_deps, mut dev) = (false, false);
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line.ends_with("dependencies]");
            dev = line.ends_with("dev-dependencies]");
            continue;
        }
        if in_deps
            && let Some((name, _)) = line.split_once('=')
            && !name.trim().is_empty()
            && name
                .trim()
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            out.insert(name.trim().to_string(), dev);
        }
    }
    out
}

/// CONTRIBUTING.md's Dependencies table: crate → the places its "used in" column
/// names (files or folders, relative to the repository).
fn dependency_table() -> BTreeMap<String, Vec<String>> {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("CONTRIBUTING.md"))
            .unwrap();
    let section = readme
        .split("\n## Dependencies\n")
        .nth(1)
        .expect("CONTRIBUTING.md has a Dependencies section");
    let mut out = BTreeMap::new();
    for row in section.lines().take_while(|l| !l.starts_with("## ")) {
        let cells: Vec<&str> = row.split(" | ").collect();
        if !row.starts_with("| `") || cells.len() < 4 {
            continue;
        }
        let places: Vec<String> = names_in_backticks(cells[2]);
        for name in names_in_backticks(cells[0]) {
            // Features are listed in parentheses after the crate names.
            if cells[0].find(&format!("`{name}`")) < cells[0].find('(').or(Some(usize::MAX)) {
                out.insert(name, places.clone());
            }
        }
    }
    out
}

fn names_in_backticks(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// Where the code uses `krate`: each `.rs` file under `dirs` naming it as
/// a path (`krate::…`, in code or a `use`).
fn files_using(krate: &str, dirs: &[&str]) -> BTreeSet<String> {
    let base = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ident = krate.replace('-', "_");
    let mut out = BTreeSet::new();
    for dir in dirs {
        for file in rust_files(&base.join(dir)) {
            let text = code(&std::fs::read_to_string(&file).unwrap());
            let named = text.match_indices(&format!("{ident}::")).any(|(i, _)| {
                // Not `std::time::…` or `self.time::…`: the crate itself.
                i == 0
                    || !text[..i]
                        .ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':')
            });
            if named {
                let rel = file.strip_prefix(base).unwrap();
                out.insert(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out
}

#[test]
fn the_readme_dependency_table_lists_every_crate_where_it_is_used() {
    let table = dependency_table();
    let declared = declared_crates();
    let listed: BTreeSet<&String> = table.keys().collect();
    assert_eq!(
        declared.keys().collect::<BTreeSet<_>>(),
        listed,
        "Cargo.toml's crates vs CONTRIBUTING.md's Dependencies table"
    );
    let mut wrong = Vec::new();
    for (krate, places) in &table {
        // A dependency is named where the product uses it; a dev-dependency
        // wherever the tests, examples or unit tests do.
        let dirs: &[&str] = if declared[krate] {
            &["src", "tests", "examples"]
        } else {
            &["src"]
        };
        let users = files_using(krate, dirs);
        let covered = |file: &str| {
            places
                .iter()
                .any(|p| file == p || file.starts_with(&format!("{}/", p.trim_end_matches('/'))))
        };
        // Every file that uses the crate is named (by itself or its folder).
        for file in users.iter().filter(|f| !covered(f)) {
            wrong.push(format!(
                "{krate}: used in {file}, which the table does not name"
            ));
        }
        // Every place named uses it.
        for place in places {
            let p = place.trim_end_matches('/');
            if !users
                .iter()
                .any(|f| f == p || f.starts_with(&format!("{p}/")))
            {
                wrong.push(format!(
                    "{krate}: the table names {place}, which does not use it"
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "CONTRIBUTING.md Dependencies table:\n{}",
        wrong.join("\n")
    );
}

/// Where `text` names the `ring` crate other than for its random source
/// (`ring::rand`): not `string::…` or `sring::…`, the crate itself.
fn names_ring_but_rand(text: &str) -> bool {
    text.match_indices("ring::").any(|(i, _)| {
        let own = i == 0
            || !text[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':');
        own && !text[i..].starts_with("ring::rand")
    })
}

#[test]
fn only_trust_knows_how_a_signature_is_made() {
    let root = src();
    let mut wrong = Vec::new();
    for file in rust_files(&root) {
        let rel = file.strip_prefix(&root).unwrap();
        if rel.starts_with("trust") {
            continue;
        }
        let text = code(&std::fs::read_to_string(&file).unwrap());
        let lower = text.to_ascii_lowercase();
        let hex_length = ["len() != 64", "len() == 64", "len() < 64", "len() > 64"];
        for (what, named) in [
            ("names the ring crate", names_ring_but_rand(&text)),
            ("names an HMAC", lower.contains("hmac")),
            (
                "checks a signature's hex length",
                hex_length.iter().any(|p| text.contains(p)),
            ),
        ] {
            if named {
                wrong.push(format!("src/{} {what}", rel.display()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "only src/trust/ knows the signature scheme: sign, verify and parse a signature through crate::trust:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn ring_is_told_from_string() {
    assert!(names_ring_but_rand("use ring::hmac;"));
    assert!(names_ring_but_rand("x(ring::hmac::sign(k, b))"));
    assert!(!names_ring_but_rand("use ring::rand::SystemRandom;"));
    assert!(!names_ring_but_rand("String::new(); std::string::String"));
}

/// The OS leaf files of `src/platform/`: one system's implementation of a
/// concern (`unix.rs`, `linux.rs`, `macos.rs`, `windows.rs`, or a name
/// ending in `_unix`, `_linux`, `_macos`, `_windows`).
fn is_platform_leaf(stem: &str) -> bool {
    const SYSTEMS: [&str; 4] = ["unix", "linux", "macos", "windows"];
    SYSTEMS
        .iter()
        .any(|s| stem == *s || stem.ends_with(&format!("_{s}")))
}

/// The module names a path in `text` reaches through `super::` or
/// `crate::platform::` (each segment, and each name of a `{…}` group).
fn platform_paths(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for prefix in ["super::", "crate::platform::"] {
        for (i, _) in text.match_indices(prefix) {
            let rest = &text[i + prefix.len()..];
            // The path ends at the first character a path cannot hold;
            // inside braces a group also holds commas and white space.
            let mut depth = 0usize;
            let end = rest
                .char_indices()
                .find(|&(_, c)| {
                    match c {
                        '{' => depth += 1,
                        '}' if depth > 0 => depth -= 1,
                        c if c.is_ascii_alphanumeric() || c == '_' || c == ':' => {}
                        c if depth > 0 && (c == ',' || c.is_whitespace()) => {}
                        _ => return true,
                    }
                    false
                })
                .map_or(rest.len(), |(j, _)| j);
            out.extend(
                rest[..end]
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .filter(|n| !n.is_empty()),
            );
        }
    }
    out
}

#[test]
fn no_platform_leaf_names_another() {
    let root = src().join("platform");
    let leaves: BTreeSet<String> = rust_files(&root)
        .iter()
        .map(|p| p.file_stem().unwrap().to_str().unwrap().to_string())
        .filter(|s| is_platform_leaf(s))
        .collect();
    let mut wrong = Vec::new();
    for file in rust_files(&root) {
        let stem = file.file_stem().unwrap().to_str().unwrap();
        if !is_platform_leaf(stem) {
            continue;
        }
        let text = code(&std::fs::read_to_string(&file).unwrap());
        // `imp` is the name a concern's mod.rs gives the leaf compiled in.
        for name in platform_paths(&text) {
            if leaves.contains(name) || name == "imp" {
                wrong.push(format!(
                    "{} names `{name}`: code two leaves share goes into a shared file of the concern or its mod.rs",
                    file.strip_prefix(src()).unwrap().display()
                ));
            }
        }
    }
    assert!(
        !leaves.is_empty(),
        "no OS leaf file found under src/platform"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_leaf_naming_another_is_seen() {
    assert!(platform_paths("use super::linux::descendants;").contains(&"linux"));
    assert!(platform_paths("use super::{Proc, macos};").contains(&"macos"));
    assert!(!platform_paths("super::Exited\n}\nmod windows;").contains(&"windows"));
    assert!(platform_paths("super::imp::open(p)").contains(&"imp"));
    assert!(platform_paths("crate::platform::procs::windows::x").contains(&"windows"));
    assert!(!platform_paths("use std::os::unix::fs::OpenOptionsExt;").contains(&"unix"));
    assert!(is_platform_leaf("dir_windows") && !is_platform_leaf("tree"));
}

#[test]
fn no_source_file_is_over_600_lines() {
    let mut wrong = Vec::new();
    for file in rust_files(&src()) {
        let rel = file
            .strip_prefix(src())
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let lines = std::fs::read_to_string(&file).unwrap().lines().count();
        if lines <= 600 {
            continue;
        }
        wrong.push(format!("src/{rel}: {lines} lines"));
    }
    assert!(
        wrong.is_empty(),
        "over 600 lines (split the file by concern):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_command_file_is_over_200_lines() {
    let mut wrong = Vec::new();
    for file in rust_files(&src().join("cmd")) {
        let lines = std::fs::read_to_string(&file).unwrap().lines().count();
        if lines > 200 {
            let rel = file
                .strip_prefix(src())
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            wrong.push(format!("src/{rel}: {lines} lines"));
        }
    }
    assert!(
        wrong.is_empty(),
        "a command parses, calls one library function and renders; move its logic below cmd/:\n{}",
        wrong.join("\n")
    );
}

/// `eprintln!` panics when stderr cannot be written (a closed pipe), and
/// in a listener's signal handler that panic lost the stop: notes to
/// stderr go through `crate::note!` (`out::note`), which never fails.
#[test]
fn no_eprintln_outside_tests() {
    let mut wrong = Vec::new();
    for file in rust_files(&src()) {
        if file.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let text = text.split("#[cfg(test)]").next().unwrap_or("");
        for (n, line) in code(text).lines().enumerate() {
            if line.contains("println!") {
                wrong.push(format!(
                    "{}:{}: {}",
                    file.strip_prefix(src()).unwrap().display(),
                    n + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "write to stderr with crate::note!, to stdout with out::line:\n{}",
        wrong.join("\n")
    );
}
