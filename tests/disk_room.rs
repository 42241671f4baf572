//! `scripts/disk-room`, the check `scripts/test` makes before it builds: a
//! disk that cannot hold the build is said in one line, with what is needed
//! and what is free, before any compiling (CI's fresh machine once ran out
//! of disk minutes into the build, and rustc said only "No space left on
//! device"). A disk that can is let through silently.

use std::path::PathBuf;
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn disk_room(args: &[&str]) -> Output {
    Command::new("bash")
        .arg(root().join("scripts/disk-room"))
        .args(args)
        .output()
        .expect("bash runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_disk_too_small_for_the_build_is_refused_with_what_it_needs() {
    // No disk here has a petabyte free; the folder need not exist yet.
    let dir = std::env::temp_dir().join("redfence-disk-room-absent/target");
    let out = disk_room(&["1000000", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stderr(&out);
    assert!(text.contains("needs about 1000000 GiB"), "{text}");
    assert!(text.contains(dir.to_str().unwrap()), "{text}");
    assert!(text.contains("MiB free"), "{text}");
    assert!(!dir.exists(), "the check creates nothing");
}

#[test]
fn a_disk_that_holds_the_build_passes_silently() {
    let out = disk_room(&["0", root().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
}

#[test]
fn a_malformed_need_is_a_usage_error() {
    let out = disk_room(&["six", "target"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("usage: scripts/disk-room GIB DIR"));
}

/// The test command checks the disk before its first build step.
#[test]
fn the_test_command_checks_the_disk_before_building() {
    let script = std::fs::read_to_string(root().join("scripts/test")).expect("scripts/test");
    let check = script
        .find("scripts/disk-room")
        .expect("scripts/test runs scripts/disk-room");
    for build in [
        "bash scripts/images",
        "bash scripts/adapters",
        "cargo clippy",
    ] {
        let at = script.find(build).unwrap_or_else(|| panic!("{build}"));
        assert!(check < at, "the disk check comes after {build}");
    }
}
