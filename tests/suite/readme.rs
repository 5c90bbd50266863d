//! SECURITY.md's Security section names, for each promise, the test that
//! tries to break it: every name it gives must be a test in the suite, so
//! a renamed or deleted test cannot leave a promise unproved in silence.

use std::path::Path;

/// The names of the `#[test]` functions of a suite module: each `fn` at
/// the start of a line whose attributes, since the item before it ended,
/// include `#[test]` (a helper fn has none).
fn tests_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = text[at..].find("\nfn ") {
        let start = at + i + 1;
        let name: String = text[start + 3..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let item_start = text[..start].rfind("\n}").unwrap_or(0);
        if text[item_start..start].contains("#[test]") {
            out.push(name);
        }
        at = start;
    }
    out
}

#[test]
fn only_test_functions_count_as_tests() {
    let text = "use x;\n\n#[test]\n#[cfg_attr(\n    windows,\n    ignore = \"why\"\n)]\nfn a_test() {\n}\n\n/// Doc.\nfn helper() {\n}\n\n#[test]\nfn b_test() {\n}\n";
    assert_eq!(tests_in(text), ["a_test", "b_test"]);
    assert!(tests_in("fn helper() {\n}\n").is_empty());
}

#[test]
fn every_test_the_security_section_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("SECURITY.md")).unwrap();
    let start = readme.find("\n## Security\n").expect("a Security section");
    let section = &readme[start + 1..];
    let section = &section[..section[1..].find("\n## ").map_or(section.len(), |i| i + 1)];
    let mut named = 0;
    for quoted in section.split('`').skip(1).step_by(2) {
        let Some((module, test)) = quoted.split_once("::") else {
            continue;
        };
        if !module.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
            continue;
        }
        let file = root.join("tests/suite").join(format!("{module}.rs"));
        // A path into the source (`fsops::Dir`) names code, not a test.
        let in_src = std::fs::read_dir(root.join("src"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .chain([root.join("src")])
            .filter(|layer| layer.is_dir())
            .any(|layer| {
                layer.join(format!("{module}.rs")).exists() || layer.join(module).is_dir()
            });
        if in_src && !file.exists() {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap_or_else(|_| {
            panic!(
                "the Security section names `{quoted}`: no {}",
                file.display()
            )
        });
        let tests = tests_in(&text);
        let found = match test.strip_suffix('*') {
            // `module::*` or `module::prefix_*`: at least one test matches.
            Some(prefix) => tests.iter().any(|t| t.starts_with(prefix)),
            None => tests.iter().any(|t| t == test),
        };
        assert!(
            found,
            "the Security section names `{quoted}`, which is not a test (a `#[test]` fn in {})",
            file.display()
        );
        named += 1;
    }
    assert!(named >= 10, "only {named} tests named");
}

/// The README is what a newcomer reads first: at most 15 KB, the rest in
/// `docs/` by reader, and each of those pages reachable from it.
#[test]
fn the_readme_stays_short_and_links_every_page_by_reader() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.len() <= 15 * 1024,
        "README.md is {} bytes: move what is not for a newcomer to docs/",
        readme.len()
    );
    for page in [
        "docs/guide.md",
        "docs/operations.md",
        "docs/protocol.md",
        "docs/report.md",
        "SECURITY.md",
        "CONTRIBUTING.md",
        "bench/README.md",
    ] {
        assert!(root.join(page).is_file(), "{page} is missing");
        assert!(
            readme.contains(&format!("]({page}")),
            "README.md does not link {page}"
        );
    }
}
