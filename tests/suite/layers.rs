//! The architecture holds: `src/lib.rs` lists the modules in layers, and
//! every module imports only from its own layer or the ones before it, with
//! no cycle anywhere, and no command imports another. A change that makes a
//! rule layer call up into a front end fails here, naming the import.

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
        for dep in names_after(&text, "crate::") {
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
