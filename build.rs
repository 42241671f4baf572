//! Build script of the `redfence` CLI: records the git commit it is built
//! from as `REDFENCE_COMMIT` (empty when unknown: no git, not a checkout),
//! so a run's JSON can say which code produced it. `REDFENCE_COMMIT` set in
//! the environment wins (for builds from a tarball).

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
}

fn main() {
    println!("cargo:rerun-if-env-changed=REDFENCE_COMMIT");
    let commit = std::env::var("REDFENCE_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_default();
    println!("cargo:rustc-env=REDFENCE_COMMIT={commit}");
    // Rebuilt when HEAD moves: HEAD itself (a checkout) and the branch it
    // points at (a commit).
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        let dir = Path::new(&dir);
        let mut watched = vec![dir.join("HEAD"), dir.join("packed-refs")];
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watched.push(dir.join(branch));
        }
        // A path that does not exist would rerun this on every build.
        for path in watched.iter().filter(|p| p.exists()) {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
}
