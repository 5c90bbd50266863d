//! The README's install step works: `cargo install --locked --path .` into a
//! temporary prefix gives a `bin/fleet-dispatch` that runs and says the
//! version in Cargo.toml.
//!
//! The test installs the debug build (`--debug`) with the build folder
//! this suite was built in (`CARGO_BUILD_BUILD_DIR`), so cargo reuses what
//! it already compiled: about 7 s on a 2-core machine (it links the binary
//! again), 15 s after a change to the crate, against two minutes for a
//! release build from nothing. The finished binary goes to a temporary
//! target folder, never over the one the other tests run. What is checked
//! (the package installs, offline, from the locked dependencies, and the
//! binary starts) does not depend on the profile.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The build folder this suite was built in: the binary's
/// `<target>/debug/fleet-dispatch`.
fn build_dir() -> PathBuf {
    let bin = crate::util::bin();
    bin.parent().and_then(Path::parent).unwrap().to_path_buf()
}

#[test]
#[cfg_attr(
    windows,
    ignore = "ci/windows cross-builds: there is no cargo inside Wine to install with"
)]
fn cargo_install_gives_a_binary_that_reports_the_cargo_toml_version() {
    let project = Path::new(env!("CARGO_MANIFEST_DIR"));
    let prefix = tempfile::tempdir().unwrap();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "install",
            "--locked",
            "--offline",
            "--debug",
            "--quiet",
            "--path",
        ])
        .arg(project)
        .arg("--root")
        .arg(prefix.path())
        .env("CARGO_BUILD_BUILD_DIR", build_dir())
        .env("CARGO_TARGET_DIR", prefix.path().join("target"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo install failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let exe = prefix
        .path()
        .join("bin")
        .join(format!("fleet-dispatch{}", std::env::consts::EXE_SUFFIX));
    let out = Command::new(&exe).arg("--version").output().unwrap();
    assert!(out.status.success(), "{} --version failed", exe.display());
    let manifest: toml::Table =
        toml::from_str(&std::fs::read_to_string(project.join("Cargo.toml")).unwrap()).unwrap();
    let version = manifest["package"]["version"].as_str().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("fleet-dispatch {version}")
    );
}
