//! The `redfence` binary as a user runs it: listing, a small sweep (in 80
//! columns by default, wide when asked, plain progress lines off a
//! terminal), replay determinism, exploration, the errors bad arguments
//! get, and the regression corpus (`explore` saves the failure it finds
//! once; `run --corpus` re-runs saved cases before its sweep: a shipped
//! mutant that reproduces is expected, a case that no longer reproduces says
//! so without calling it fixed, a bad case stops the command before any
//! run).

use std::path::{Path, PathBuf};
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
    // Three protocols must pass (the reference at both levels and the
    // fenced Redlock): the widest verdict that fits sums them.
    assert!(first.starts_with("3 must-pass protocols"), "{first}");
    for part in ["51/51", "held", "mutants 18/18", "7/9"] {
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

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("redfence-corpus-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn cases(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    out.sort();
    out
}

/// `run` over one cheap cell, re-running `dir` first.
fn run_corpus(dir: &Path) -> Output {
    redfence(&[
        "run",
        "--scenario",
        "late-unlock",
        "--protocol",
        "reference",
        "--seed",
        "0",
        "--corpus",
        dir.to_str().unwrap(),
    ])
}

#[test]
fn explore_saves_its_failure_once_and_run_reruns_it() {
    let dir = scratch("explore");
    let explore = || {
        redfence(&[
            "explore",
            "--protocol",
            "no-fence-check",
            "--time",
            "30s",
            "--jobs",
            "1",
            "--seed",
            "0",
            "--save-failures",
            dir.to_str().unwrap(),
        ])
    };
    let first = explore();
    assert_eq!(first.status.code(), Some(1), "{}", text(&first));
    assert!(
        text(&first).contains("saved regression case"),
        "{}",
        text(&first)
    );
    let saved = cases(&dir);
    assert_eq!(saved.len(), 1, "{saved:?}");
    let case = std::fs::read_to_string(&saved[0]).unwrap();
    assert!(case.contains("scenario: random-faults\n"), "{case}");
    assert!(case.contains("schedule: "), "{case}");
    let again = explore();
    assert!(
        text(&again).contains("was saved already"),
        "{}",
        text(&again)
    );
    assert_eq!(
        std::fs::read_to_string(&saved[0]).unwrap(),
        case,
        "untouched"
    );

    let run = run_corpus(&dir);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    assert!(
        text(&run).contains("a shipped mutant, expected to fail"),
        "{}",
        text(&run)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn run_says_a_case_no_longer_reproduces_and_refuses_a_bad_one() {
    let dir = scratch("reference");
    // The reference on a seed where no-fence-check breaks stale-worker-pause.
    let case = "scenario: stale-worker-pause\nprotocol: reference\nseed: 0\n\
                property: fence-order\nfound-by: 0.0.1\n";
    std::fs::write(dir.join("reference.txt"), case).unwrap();
    let run = run_corpus(&dir);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    assert!(
        text(&run).contains("no longer reproduces (found by 0.0.1, last reproduced by 0.0.1)"),
        "{}",
        text(&run)
    );
    assert!(!text(&run).contains("fixed"));

    std::fs::write(dir.join("bad.txt"), "scenario: late-unlock\nseed: soon\n").unwrap();
    let bad = run_corpus(&dir);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    assert!(text(&bad).contains("bad.txt"), "{}", text(&bad));
    assert!(
        !text(&bad).contains("runs in"),
        "no sweep ran: {}",
        text(&bad)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn run_saves_nothing_when_nothing_unexpected_failed() {
    let dir = scratch("run");
    let out = redfence(&[
        "run",
        "--scenario",
        "stale-worker-pause",
        "--protocol",
        "reference",
        "--protocol",
        "no-fence-check",
        "--seeds",
        "2",
        "--no-corpus",
        "--save-failures",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        cases(&dir).is_empty(),
        "a caught mutant is not a regression"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--adapter` is checked before any work: each refusal exits 2 at once,
/// names what is wrong, and starts no server.
#[test]
fn bad_adapter_arguments_are_refused_before_any_work() {
    let cases: [(&[&str], &str); 6] = [
        (
            &["run", "--adapter", "a=true"],
            "on real servers only: add --world real",
        ),
        (
            &["run", "--world", "real", "--adapter", "python3 x.py"],
            "an adapter is NAME=COMMAND",
        ),
        (
            &["run", "--world", "real", "--adapter", "My_Lock=true"],
            "must be kebab-case",
        ),
        (
            &["run", "--world", "real", "--adapter", "reference=true"],
            "a built-in protocol has that name",
        ),
        (
            &["run", "--world", "real", "--adapter", "a=/no/such/adapter"],
            "cannot find the program \"/no/such/adapter\"",
        ),
        (
            &["run", "--world", "real", "--adapter", "a='unclosed"],
            "quote does not close",
        ),
    ];
    for (args, says) in cases {
        let started = std::time::Instant::now();
        let out = redfence(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{args:?} did work"
        );
    }
    let twice = redfence(&[
        "run",
        "--world",
        "real",
        "--adapter",
        "a=true",
        "--adapter",
        "a=true",
    ]);
    assert_eq!(twice.status.code(), Some(2));
    assert!(stderr(&twice).contains("given twice"), "{}", stderr(&twice));
}
