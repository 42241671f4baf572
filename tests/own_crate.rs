//! A team's crate outside this workspace, set up only as the README says
//! ("Verify your own lock from your crate"), verifies its own lock with
//! `cargo test`: a correct lock passes quietly, and a broken one fails with
//! the one-line verdict, the explanation and the replay line that runs the
//! team's own code.
//!
//! The crate is written to a temporary folder (removed afterwards, also when
//! the test fails) and built with its own target directory below this
//! repository's `target/`, so it never waits on the lock of the build that
//! runs this test; its `Cargo.lock` is this workspace's, so it builds with
//! the versions CI already has. One crate is fetched: this workspace patches
//! turmoil and tokio (`vendor/`, same behaviour) and a `[patch]` does not
//! reach a dependent crate, which gets turmoil 0.7.2 and tokio from
//! crates.io as a team's would — so the build is not `--offline` (on a
//! fresh machine the registry's turmoil was never downloaded). This is also
//! the test that the simulation builds and judges alike without the
//! patches' idle-host fast path (`sim/build.rs`).

use std::os::unix::process::CommandExt;
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
use redfence_scenarios::protocol::{Plug, Protocol};
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
    fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug {
        self.1.plug(env, config)
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

/// A child started in its own process group; dropping it (on any panic of
/// this test, the deadline included) kills the whole group, so no cargo,
/// rustc or test process outlives the test.
struct Group(std::process::Child);

impl Drop for Group {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = Command::new("kill")
                .args(["-KILL", &format!("-{}", self.0.id())])
                .status();
            let _ = self.0.wait();
        }
    }
}

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
    // Output to files in the scratch folder: a pipe nobody reads while
    // cargo runs would fill and stall it.
    let log = |name: &str| std::fs::File::create(dir.join(name)).expect("log file");
    let child = Command::new(cargo)
        .args(["test", "--test", "verify", "--", "--test-threads=1"])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", repo.join("target/own-crate"))
        // The flag must come from the team's .cargo/config.toml, not from us.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .stdout(Stdio::from(log("stdout.txt")))
        .stderr(Stdio::from(log("stderr.txt")))
        // Its own process group, so the guard can stop cargo and everything
        // it started (rustc, the test binary) at once.
        .process_group(0)
        .spawn()
        .expect("cargo runs");
    let mut child = Group(child);
    let started = Instant::now();
    // Bounded: polls until the child exits or the deadline passes.
    let status = loop {
        if let Some(status) = child.0.try_wait().expect("wait for cargo") {
            break status;
        }
        assert!(
            started.elapsed() <= BUILD_AND_TEST_MAX,
            "the scratch crate's cargo test took over {BUILD_AND_TEST_MAX:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    let (stdout, stderr) = (read("stdout.txt"), read("stderr.txt"));
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
         std::sync::Arc::new(YourLock), ",
        "(your own lock, here broken-team-lock: ",
    ] {
        assert!(
            all.contains(expected),
            "the failure message lacks {expected:?}:\n{all}"
        );
    }
}
