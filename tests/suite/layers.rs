//! The architecture holds: `src/` is `lib.rs`, `main.rs` and a folder per
//! layer that `src/lib.rs` lists in order; every module (a layer folder, or
//! each module of one that only groups modules) imports only from its own
//! layer or the ones before it, with no import circle anywhere, and no
//! command imports another; CONTRIBUTING.md's Dependencies table names
//! every crate where it is used. A change that makes a
//! rule layer call up into a front end fails here, naming the import. Inside
//! `src/platform/`, no OS leaf file (`unix.rs`, `linux.rs`, `macos.rs`,
//! `windows.rs`, …) names another; no source file is over 600 lines, and
//! no command file (`src/front/cmd/`) over 200: a command parses, calls one
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
        .map(|(i, _)| ident(&text[i + prefix.len()..]))
        .filter(|n| !n.is_empty())
        .collect()
}

/// The identifier `text` starts with.
fn ident(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// The first `depth` segments of every path a use tree starting at `text`
/// names: `a::b::c` gives `[a, b]` for a depth of 2, and a group
/// `{a::b, c::{d, e}}` gives each of its paths, `a` then `b` and `c::d`
/// and `c::e` (a path shorter than `depth` is given as it is).
fn tree_paths(text: &str, depth: usize) -> Vec<Vec<String>> {
    /// The paths of the tree at `text[at..]`, each under `prefix`, and where
    /// the tree ends.
    fn tree(
        text: &str,
        mut at: usize,
        prefix: Vec<String>,
        depth: usize,
        out: &mut Vec<Vec<String>>,
    ) -> usize {
        let skip_space = |at: usize| at + (text[at..].len() - text[at..].trim_start().len());
        let mut path = prefix;
        loop {
            at = skip_space(at);
            if text[at..].starts_with('{') {
                at += 1;
                loop {
                    at = skip_space(at);
                    if text[at..].starts_with('}') {
                        return at + 1;
                    }
                    at = skip_space(tree(text, at, path.clone(), depth, out));
                    if text[at..].starts_with(',') {
                        at += 1;
                    } else {
                        return at + usize::from(text[at..].starts_with('}'));
                    }
                }
            }
            let name = ident(&text[at..]);
            at += name.len();
            if !name.is_empty() && name != "self" && path.len() < depth {
                path.push(name.to_string());
            }
            if name.is_empty() || !text[at..].starts_with("::") {
                if !path.is_empty() {
                    out.push(path);
                }
                return at;
            }
            at += 2;
        }
    }
    let mut out = Vec::new();
    tree(text, 0, Vec::new(), depth, &mut out);
    out
}

/// The crate modules `text` names, as `layer` or `layer::module`: a layer
/// folder whose `mod.rs` only lists modules is a group of them
/// (`crate::store::fsops::Dir` names `store::fsops`), the others are one
/// module each (`crate::trust::Key` names `trust`).
fn crate_names(text: &str, groups: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in text.match_indices("crate::") {
        for path in tree_paths(&text[i + "crate::".len()..], 2) {
            let name = match path.as_slice() {
                [layer, module] if groups.contains(layer) => format!("{layer}::{module}"),
                [layer, ..] => layer.clone(),
                [] => continue,
            };
            out.insert(name);
        }
    }
    out
}

#[test]
fn grouped_imports_name_each_module() {
    let groups: BTreeSet<String> = ["base", "requests"].map(String::from).into();
    let text = "use crate::{base::clock, requests::{submit::{a, b}, wait}};\nuse crate::base::names::JobId;\nuse crate::trust::{Key, Signer};";
    assert_eq!(
        crate_names(text, &groups),
        [
            "base::clock",
            "base::names",
            "requests::submit",
            "requests::wait",
            "trust"
        ]
        .map(String::from)
        .into()
    );
}

/// Layer folder → layer number, from the numbered list in `lib.rs`'s doc.
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
        let Some(folder) = names_after(rest, "[`").first().map(|s| s.to_string()) else {
            continue;
        };
        assert!(
            out.insert(folder.clone(), n).is_none(),
            "{folder} is listed in two layers of lib.rs"
        );
    }
    out
}

/// The layer folders whose `mod.rs` does nothing but declare modules: each
/// of those modules is checked on its own.
fn groups() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for layer in layers().keys() {
        let Ok(text) = std::fs::read_to_string(src().join(layer).join("mod.rs")) else {
            continue;
        };
        let only_modules = code(&text)
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .all(|l| {
                l.starts_with("pub mod ") || l.starts_with("pub(crate) mod ") || l.starts_with("#[")
            });
        if only_modules {
            out.insert(layer.clone());
        }
    }
    out
}

/// The module a file under `src/` belongs to: `store/fsops/dir/read.rs` is
/// `store::fsops` when `store` is a group, `trust/roster.rs` is `trust`.
fn module_of(rel: &Path, groups: &BTreeSet<String>) -> String {
    let parts: Vec<String> = rel
        .components()
        .map(|c| {
            c.as_os_str()
                .to_str()
                .unwrap()
                .trim_end_matches(".rs")
                .to_string()
        })
        .collect();
    match parts.as_slice() {
        [layer, module, ..] if groups.contains(layer) && module != "mod" => {
            format!("{layer}::{module}")
        }
        [layer, ..] => layer.clone(),
        [] => unreachable!(),
    }
}

/// Module → the crate modules its code names.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let root = src();
    let groups = groups();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in rust_files(&root) {
        let rel = file.strip_prefix(&root).unwrap();
        if rel == Path::new("lib.rs") || rel == Path::new("main.rs") {
            continue;
        }
        let module = module_of(rel, &groups);
        let text = code(&std::fs::read_to_string(&file).unwrap());
        let deps = out.entry(module.clone()).or_default();
        for dep in crate_names(&text, &groups) {
            // `crate::note!` is a macro `base::out` exports at the crate's root.
            let dep = if dep == "note" {
                "base::out".to_string()
            } else {
                dep
            };
            if dep != module {
                deps.insert(dep);
            }
        }
    }
    out
}

/// The layer of a module `layer` or `layer::module`.
fn layer_of(module: &str) -> &str {
    module.split("::").next().unwrap()
}

#[test]
fn only_lib_and_main_are_loose_and_every_folder_is_a_layer() {
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
    let mut loose = Vec::new();
    let mut folders = BTreeSet::new();
    for entry in std::fs::read_dir(src()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if path.is_dir() {
            folders.insert(name);
        } else if name != "lib.rs" && name != "main.rs" {
            loose.push(name);
        }
    }
    assert!(
        loose.is_empty(),
        "src/ holds only lib.rs, main.rs and a folder per layer; put these in their layer's folder: {loose:?}"
    );
    assert_eq!(folders, listed, "src/ folders vs the layers lib.rs lists");
}

#[test]
fn no_module_imports_one_in_a_later_layer() {
    let layers = layers();
    let mut wrong = Vec::new();
    for (module, deps) in imports() {
        let mine = layers[layer_of(&module)];
        for dep in deps {
            let theirs = *layers
                .get(layer_of(&dep))
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

/// The first import circle in `graph`, as the chain of modules round it.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    // Depth-first search; `path` is the chain being explored.
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == m) {
            let mut found = path[i..].to_vec();
            found.push(m.to_string());
            return Some(found);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_string());
        for dep in graph.get(m).into_iter().flatten() {
            if let Some(found) = visit(dep, graph, done, path) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|m| visit(m, graph, &mut done, &mut Vec::new()))
}

#[test]
fn no_module_imports_in_a_circle() {
    if let Some(found) = circle(&imports()) {
        panic!("import circle: {}", found.join(" -> "));
    }
}

#[test]
fn a_circle_is_seen() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("places::a", vec!["places::b"]),
        ("places::b", vec!["base::c", "places::a"]),
        ("base::c", vec![]),
    ]
    .into_iter()
    .map(|(m, deps)| (m.to_string(), deps.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(
        circle(&graph).unwrap(),
        ["places::a", "places::b", "places::a"]
    );
    let mut acyclic = graph.clone();
    acyclic.get_mut("places::b").unwrap().remove("places::a");
    assert_eq!(circle(&acyclic), None);
}

/// `src/front/cmd/`: one file per subcommand.
fn cmd_dir() -> PathBuf {
    src().join("front").join("cmd")
}

#[test]
fn no_command_imports_another() {
    let dir = cmd_dir();
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
    for file in rust_files(&cmd_dir()) {
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
