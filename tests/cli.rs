//! The `redfence` binary as a user runs it: listing, a small sweep, replay
//! determinism, exploration, and the errors bad arguments get.

use std::process::{Command, Output};

fn redfence(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_redfence"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn list_names_every_scenario_protocol_and_property() {
    let out = redfence(&["list"]);
    assert!(out.status.success());
    let text = stdout(&out);
    for scenario in redfence_scenarios::catalog::all() {
        assert!(text.contains(scenario.name()), "{}", scenario.name());
    }
    for protocol in redfence_scenarios::protocols::all() {
        assert!(text.contains(protocol.name()), "{}", protocol.name());
    }
    for property in redfence_scenarios::Property::ALL {
        assert!(text.contains(property.name()), "{}", property.name());
    }
}

#[test]
fn run_prints_the_matrix_and_replay_lines() {
    let out = redfence(&[
        "run",
        "--scenario",
        "late-unlock",
        "--protocol",
        "reference",
        "--protocol",
        "del-unlock",
        "--seeds",
        "2",
        "--jobs",
        "1",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("late-unlock"));
    assert!(text.contains("pass"), "{text}");
    assert!(text.contains("CAUGHT@1"), "{text}");
    assert!(
        text.contains("redfence replay late-unlock --protocol del-unlock --seed 0"),
        "{text}"
    );
}

#[test]
fn replay_prints_the_same_timeline_for_the_same_seed() {
    let args = [
        "replay",
        "stale-worker-pause",
        "--protocol",
        "no-fence-check",
        "--seed",
        "7",
    ];
    let first = redfence(&args);
    let second = redfence(&args);
    // A violated property: exit 1, and the timeline says why.
    assert_eq!(first.status.code(), Some(1));
    assert!(stdout(&first).contains("VIOLATED"));
    assert_eq!(stdout(&first), stdout(&second));
}

#[test]
fn explore_the_reference_briefly() {
    let out = redfence(&["explore", "--time", "2s", "--seed", "3"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("no property violated by reference"));
}

#[test]
fn bad_arguments_get_clear_errors() {
    let cases: [(&[&str], &str); 6] = [
        (
            &["run", "--scenario", "nope"],
            "unknown scenario \"nope\"; known: mutual-exclusion",
        ),
        (
            &["run", "--protocol", "nope"],
            "unknown protocol \"nope\"; known: reference",
        ),
        (&["run", "--shard", "3/2"], "I must be in 1..=N"),
        (
            &["run", "--seeds", "x"],
            "invalid value 'x' for '--seeds <N>'",
        ),
        (&["explore", "--time", "5q"], "unknown unit \"q\""),
        (
            &[
                "replay",
                "random-faults",
                "--seed",
                "1",
                "--schedule",
                "10 nap w0 5",
            ],
            "unknown fault kind",
        ),
    ];
    for (args, message) in cases {
        let out = redfence(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(message), "{args:?}: {}", stderr(&out));
    }
}
