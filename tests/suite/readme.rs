//! The README's Security section names, for each promise, the test that
//! tries to break it: every name it gives must be a test in the suite, so
//! a renamed or deleted test cannot leave a promise unproved in silence.

use std::path::Path;

#[test]
fn every_test_the_security_section_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
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
        let in_src = root.join("src").join(format!("{module}.rs")).exists()
            || root.join("src").join(module).is_dir();
        if in_src && !file.exists() {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap_or_else(|_| {
            panic!(
                "the Security section names `{quoted}`: no {}",
                file.display()
            )
        });
        let found = match test.strip_suffix('*') {
            Some(prefix) => text.contains(&format!("fn {prefix}")),
            None => text.contains(&format!("fn {test}()")),
        };
        assert!(
            found,
            "the Security section names `{quoted}`, which is not a test"
        );
        named += 1;
    }
    assert!(named >= 10, "only {named} tests named");
}
