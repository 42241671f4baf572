//! A team's crate outside this workspace, set up only as the README says
//! ("Verify your own lock from your crate"), verifies its own lock with
//! `cargo test`: a correct lock passes quietly, and a broken one fails with
//! the one-line verdict, the explanation and the replay line that runs the
//! team's own code.
//!
//! The crate is written to a temporary folder (removed afterwards, also when
//! the test fails) and built with its own target directory below this
//! repository's `target/`, so it never waits on the lock of the build that
//! runs this test; its `Cargo.lock` is this workspace's, so it builds
//! offline with the versions CI already has.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longest the scratch crate's `cargo test` may take (a first build of the
/// dependencies on two cores included).
const BUILD_AND_TEST_MAX: Duration = Duration::from_secs(40 * 60);

/// The team's test file: their lock is a shipped mutant's sessions under a
/// name of their own (release by plain `DEL`), and a correct one is the
/// reference under another name.
const TEAM_TEST: &str = r#"
use std::sync::Arc;

use redfence_core::LockConfig;
use redfence_scenarios::protocol::{Protocol, Session};
use redfence_scenarios::protocols;
use redfence_scenarios::sweep::verify;
use redfence_scenarios::world::WorkerEnv;

struct Named(&'static str, Arc<dyn Protocol>);

impl Protocol for Named {
    fn name(&self) -> &str {
        self.0
    }
    fn describe(&self) -> &str {
        "the team's lock"
    }
    fn session(&self, env: &WorkerEnv, config: &LockConfig) -> Box<dyn Session> {
        self.1.session(env, config)
    }
}

#[test]
fn broken_team_lock_survives_every_scenario() {
    let lock = Named("broken-team-lock", protocols::by_name("del-unlock").unwrap());
    verify(Arc::new(lock), 2).assert_ok();
}

#[test]
fn correct_team_lock_survives_every_scenario() {
    let lock = Named("correct-team-lock", protocols::by_name("reference").unwrap());
    verify(Arc::new(lock), 1).assert_ok();
}
"#;

/// Removes the scratch folder when the test ends, however it ends.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("create folder");
    std::fs::write(path, text).expect("write file");
}

#[test]
fn a_crate_outside_the_workspace_verifies_its_own_lock() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let scratch =
        Scratch(std::env::temp_dir().join(format!("redfence-own-crate-{}", std::process::id())));
    let dir = &scratch.0;
    let _ = std::fs::remove_dir_all(dir);
    // Exactly the README's setup: two dev-dependencies and the flag.
    write(
        &dir.join("Cargo.toml"),
        &format!(
            "[package]\nname = \"team-lock\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\
             publish = false\n\n[dev-dependencies]\n\
             redfence-scenarios = {{ path = {scenarios:?} }}\n\
             redfence-core = {{ path = {core:?} }}\n\n[workspace]\n",
            scenarios = repo.join("scenarios"),
            core = repo.join("core"),
        ),
    );
    write(
        &dir.join(".cargo/config.toml"),
        "[build]\nrustflags = [\"--cfg\", \"tokio_unstable\"]\n\
         rustdocflags = [\"--cfg\", \"tokio_unstable\"]\n",
    );
    write(&dir.join("src/lib.rs"), "//! The team's crate.\n");
    write(&dir.join("tests/verify.rs"), TEAM_TEST);
    std::fs::copy(repo.join("Cargo.lock"), dir.join("Cargo.lock")).expect("copy Cargo.lock");

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut child = Command::new(cargo)
        .args([
            "test",
            "--offline",
            "--test",
            "verify",
            "--",
            "--test-threads=1",
        ])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", repo.join("target/own-crate"))
        // The flag must come from the team's .cargo/config.toml, not from us.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cargo runs");
    let started = Instant::now();
    // Bounded: polls until the child exits or the deadline passes.
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for cargo") {
            break status;
        }
        if started.elapsed() > BUILD_AND_TEST_MAX {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the scratch crate's cargo test took over {BUILD_AND_TEST_MAX:?}");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let output = child.wait_with_output().expect("cargo output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let all = format!("{stdout}\n{stderr}");
    assert!(
        all.contains("test correct_team_lock_survives_every_scenario ... ok"),
        "the correct lock must pass:\n{all}"
    );
    assert!(
        all.contains("test broken_team_lock_survives_every_scenario ... FAILED"),
        "the broken lock must fail:\n{all}"
    );
    assert!(!status.success(), "cargo test must fail:\n{all}");
    for expected in [
        "broken-team-lock: ",
        "scenarios held (failed: ",
        "late-unlock × broken-team-lock:",
        "violates unlock-safety: ",
        "replay: redfence_scenarios::replay::replay(\"late-unlock\", None, \
         Arc::new(<your broken-team-lock protocol>), ",
    ] {
        assert!(
            all.contains(expected),
            "the failure message lacks {expected:?}:\n{all}"
        );
    }
}
