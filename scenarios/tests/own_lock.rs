//! A team's own lock, as the harness sees it: a protocol whose name is not
//! built in must pass every scenario; when it does not, the failing sweep's
//! assertion says what broke and why, and its replay line names the library
//! call that runs *that* lock again (the CLI only knows the built-in ones) —
//! and the call reproduces the run byte for byte.

use std::sync::Arc;

use redfence_core::LockConfig;
use redfence_scenarios::names;
use redfence_scenarios::protocol::{Plug, Protocol};
use redfence_scenarios::protocols;
use redfence_scenarios::replay::{replay, ReplayError};
use redfence_scenarios::sweep::verify;
use redfence_scenarios::world::WorkerEnv;

/// "Our" lock: the shipped `del-unlock` mutant's sessions under a name of
/// the team's own — a release that deletes without checking the owner.
struct TeamLock(Arc<dyn Protocol>);

impl Protocol for TeamLock {
    fn name(&self) -> &str {
        "team-lock"
    }

    fn describe(&self) -> &str {
        "a hand-written lock whose release is a plain DEL"
    }

    fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug {
        self.0.plug(env, config)
    }
}

fn team_lock() -> Arc<dyn Protocol> {
    Arc::new(TeamLock(
        protocols::by_name(names::mutant::DEL_UNLOCK).expect("a shipped mutant"),
    ))
}

#[test]
fn a_failing_own_lock_says_what_broke_and_how_to_replay_its_own_code() {
    let sweep = verify(team_lock(), 2);
    assert!(!sweep.ok(), "a plain-DEL release must fail late-unlock");
    let text = sweep.failures_text();
    assert!(
        text.starts_with("team-lock: "),
        "the one-line verdict comes first: {text}"
    );
    assert!(text.contains("scenarios held (failed: "), "{text}");
    assert!(text.contains("late-unlock × team-lock:"), "{text}");
    assert!(text.contains("violates unlock-safety: "), "{text}");
    assert!(
        text.contains(
            "replay: redfence_scenarios::replay::replay(\"late-unlock\", None, \
             std::sync::Arc::new(YourLock), "
        ) && text.contains("(your own lock, here team-lock: "),
        "the replay line runs the team's code, not `redfence replay`: {text}"
    );
    assert!(!text.contains("redfence replay late-unlock"), "{text}");
    // assert_ok panics with exactly that text.
    let panic = std::panic::catch_unwind(|| sweep.assert_ok()).expect_err("not ok");
    let message = panic
        .downcast_ref::<String>()
        .expect("a formatted panic message");
    assert_eq!(message, &text);

    // The replay call gives the failing run back, byte for byte.
    let cell = sweep
        .cell(names::scenario::LATE_UNLOCK, "team-lock")
        .expect("the cell");
    let failure = cell.first_failure.as_ref().expect("a failure");
    let again = replay(
        names::scenario::LATE_UNLOCK,
        None,
        team_lock(),
        failure.seed,
    )
    .expect("a known scenario");
    assert_eq!(&again, failure);
}

#[test]
#[should_panic(expected = "a built-in protocol's name")]
fn verify_refuses_a_lock_named_like_a_built_in_protocol() {
    // Named like a mutant, a broken lock would be judged by the mutant's
    // promises instead of having to pass.
    struct Impostor(TeamLock);
    impl Protocol for Impostor {
        fn name(&self) -> &str {
            names::mutant::NO_TTL
        }
        fn describe(&self) -> &str {
            self.0.describe()
        }
        fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug {
            self.0.plug(env, config)
        }
    }
    let lock = TeamLock(protocols::by_name(names::mutant::DEL_UNLOCK).expect("a mutant"));
    let _ = verify(Arc::new(Impostor(lock)), 1);
}

#[test]
fn a_passing_own_lock_asserts_quietly_and_replay_refuses_bad_names() {
    // The reference under another name is a team's lock that is correct.
    let reference = protocols::by_name(names::protocol::REFERENCE).expect("the reference");
    let sweep = verify(Arc::new(TeamLock(reference)), 1);
    sweep.assert_ok();
    assert_eq!(sweep.failures_text(), "");
    assert!(sweep
        .verdict_line()
        .starts_with("team-lock: 17/17 scenarios held"));

    assert!(matches!(
        replay("no-such-scenario", None, team_lock(), 0),
        Err(ReplayError::UnknownScenario(_))
    ));
    assert!(matches!(
        replay(names::scenario::RANDOM_FAULTS, None, team_lock(), 0),
        Err(ReplayError::Schedule(_))
    ));
    assert!(matches!(
        replay(
            names::scenario::RANDOM_FAULTS,
            Some("300 nap w0 1"),
            team_lock(),
            0
        ),
        Err(ReplayError::BadSchedule(_))
    ));
}
