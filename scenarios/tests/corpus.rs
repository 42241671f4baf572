//! The regression corpus: every case in the repository's
//! `redfence-regressions/` re-run (none may reproduce for a protocol that
//! must pass), and the machinery proven on a failure a run finds — saved,
//! re-run, reproducing for the mutant and no longer for the reference.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use redfence_scenarios::corpus::{Case, DIR_DEFAULT};
use redfence_scenarios::names::{mutant, protocol, scenario};
use redfence_scenarios::protocols;
use redfence_scenarios::regression::{load, rerun, rerun_all, Outcome, Rerun};
use redfence_scenarios::run::run_one;
use redfence_scenarios::sim_world::SimWorlds;
use redfence_scenarios::{catalog, Property};

/// Seeds tried to find the mutant's failure (it fails on the first few).
const SEEDS_MAX: u64 = 20;

#[test]
fn no_saved_case_reproduces_for_a_protocol_that_must_pass() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(DIR_DEFAULT);
    let cases = load(&dir).expect("the corpus reads");
    let reruns = rerun_all(&cases).expect("every case re-runs");
    let failing: Vec<String> = reruns
        .iter()
        .filter(|r| r.fails())
        .map(Rerun::line)
        .collect();
    assert!(failing.is_empty(), "{}", failing.join("\n"));
}

/// A case for the first seed on which `no-fence-check` violates fence-order
/// in stale-worker-pause, found by running it.
fn found_case() -> Case {
    let stale = catalog::by_name(scenario::STALE_WORKER_PAUSE).unwrap();
    let mutant = protocols::by_name(mutant::NO_FENCE_CHECK).unwrap();
    let record = (0..SEEDS_MAX)
        .map(|seed| run_one(&SimWorlds, stale.as_ref(), mutant.clone(), seed))
        .find(|r| r.violated().contains(&Property::FenceOrder))
        .expect("the mutant is caught within SEEDS_MAX seeds");
    Case {
        scenario: record.scenario,
        protocol: record.protocol,
        seed: record.seed,
        schedule: None,
        property: Property::FenceOrder,
        found_by: "0.0.1".to_owned(),
        reproduced_by: None,
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("redfence-corpus-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_saved_mutant_failure_reproduces_and_the_reference_on_its_seed_does_not() {
    let dir = scratch("machinery");
    let case = found_case();
    let reference = Case {
        protocol: protocol::REFERENCE.to_owned(),
        reproduced_by: Some("0.0.2".to_owned()),
        ..case.clone()
    };
    for c in [&case, &reference] {
        std::fs::write(dir.join(c.file_name()), c.render()).unwrap();
    }
    std::fs::write(dir.join("README.md"), "not a case").unwrap();
    let loaded = load(&dir).unwrap();
    assert_eq!(loaded.len(), 2, "the README is skipped");
    let reruns = rerun_all(&loaded).unwrap();
    let of = |name: &str| reruns.iter().find(|r| r.case.protocol == name).unwrap();
    let mutant = of(mutant::NO_FENCE_CHECK);
    assert_eq!(mutant.outcome, Outcome::Reproduces);
    assert!(!mutant.fails(), "a shipped mutant is expected to fail");
    assert!(
        mutant.line().contains("expected to fail"),
        "{}",
        mutant.line()
    );
    let reference = of(protocol::REFERENCE);
    assert_eq!(reference.outcome, Outcome::NoLongerReproduces);
    assert!(!reference.fails());
    assert!(
        reference
            .line()
            .contains("no longer reproduces (found by 0.0.1, last reproduced by 0.0.2)"),
        "{}",
        reference.line()
    );
    assert!(!reference.line().contains("fixed"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_must_pass_protocol_that_fails_again_fails_the_corpus() {
    // A team's own lock (must pass), here played by the mutant's code.
    let case = Case {
        protocol: "my-lock".to_owned(),
        ..found_case()
    };
    let injected = protocols::by_name(mutant::NO_FENCE_CHECK).unwrap();
    let (outcome, record) = rerun(&SimWorlds, &case, Arc::clone(&injected)).unwrap();
    assert_eq!(outcome, Outcome::Reproduces);
    let rerun = Rerun {
        path: PathBuf::from(case.file_name()),
        case,
        outcome,
        record,
    };
    assert!(rerun.must_pass() && rerun.fails());
    assert!(rerun.line().starts_with("REPRODUCES"), "{}", rerun.line());
    // By name, the simulation cannot rebuild a team's own lock.
    let dir = scratch("own-lock");
    std::fs::write(dir.join(rerun.case.file_name()), rerun.case.render()).unwrap();
    let error = rerun_all(&load(&dir).unwrap()).unwrap_err();
    assert!(error.to_string().contains("unknown protocol \"my-lock\""));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_random_faults_case_reruns_with_its_schedule_and_a_bad_one_is_a_typed_error() {
    let case = Case {
        scenario: scenario::RANDOM_FAULTS.to_owned(),
        protocol: protocol::REFERENCE.to_owned(),
        seed: 1,
        schedule: Some("300 pause w0 1200".to_owned()),
        property: Property::FenceOrder,
        found_by: "0.0.1".to_owned(),
        reproduced_by: None,
    };
    let reference = protocols::by_name(protocol::REFERENCE).unwrap();
    let (outcome, _) = rerun(&SimWorlds, &case, reference.clone()).unwrap();
    assert_eq!(outcome, Outcome::NoLongerReproduces);
    let bad = Case {
        schedule: Some("soon pause everyone".to_owned()),
        ..case
    };
    assert!(rerun(&SimWorlds, &bad, reference).is_err());
}
