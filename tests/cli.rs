//! The `redfence` binary as a user runs it: listing, a small sweep (in 80
//! columns by default, wide when asked, plain progress lines off a
//! terminal), replay determinism, exploration, and the errors bad arguments
//! get.

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
fn run_wide_prints_the_matrix_and_replay_lines() {
    let out = redfence(&[
        "run",
        "--wide",
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

/// The widest line the default output may print.
const WIDTH_COLS: usize = 80;

#[test]
fn run_fits_80_columns_starts_with_the_verdict_and_groups_failures() {
    // Every scenario and protocol, as `redfence run` with no flags, on
    // one seed to stay quick in a debug build.
    let out = redfence(&["run", "--seeds", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for line in text.lines() {
        assert!(
            line.chars().count() <= WIDTH_COLS,
            "{} columns: {line:?}\n{text}",
            line.chars().count()
        );
    }
    let first = text.lines().next().unwrap_or_default();
    assert!(first.starts_with("reference"), "{first}");
    for part in ["13/13", "held", "16/16 mutants caught", "7/9"] {
        assert!(first.contains(part), "the verdict names {part:?}: {first}");
    }
    // One group for a property a mutant trips in many scenarios, with
    // its count and one replay line, not one per failing cell.
    let groups: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("  static-owner × fence-uniqueness: "))
        .collect();
    assert_eq!(groups.len(), 1, "{text}");
    assert!(groups[0].contains(" scenarios, "), "{}", groups[0]);
    assert!(
        text.contains("\n    redfence replay mutual-exclusion --protocol static-owner --seed 0\n"),
        "{text}"
    );
    assert!(!text.contains("CAUGHT@"), "the wide matrix is --wide's");
    // It ends with readiness and the first replay line.
    assert!(text.contains("\nreadiness of reference (fences redis-counter"));
    let tail: Vec<&str> = text.lines().rev().take(3).collect();
    assert!(
        tail.iter()
            .any(|l| l.trim_start().starts_with("redfence replay ")
                || l.trim_start().starts_with("--protocol")),
        "{text}"
    );
}

#[test]
fn progress_off_a_terminal_is_plain_lines() {
    let out = redfence(&[
        "run",
        "--scenario",
        "mutual-exclusion",
        "--protocol",
        "reference",
        "--seeds",
        "2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(!err.contains('\r'), "no carriage returns: {err:?}");
    assert!(!err.contains('\u{1b}'), "no escape codes: {err:?}");
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines
            .last()
            .is_some_and(|l| l.starts_with("progress: 2/2 runs, 0 failing, ") && l.ends_with(" s")),
        "{err:?}"
    );
    assert!(lines.iter().all(|l| l.starts_with("progress: ")), "{err:?}");
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
