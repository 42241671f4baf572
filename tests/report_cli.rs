//! The report outputs of the `redfence` binary as a user runs them: `run
//! --out` writes the chosen files and prints the HTML path, `report --from`
//! re-renders (also a bare `run --json` sweep), `replay --out` writes the
//! single-seed report, and bad input exits 2 with a clear message.

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

/// A fresh folder for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("redfence-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn run_out_writes_every_format_and_prints_the_html_path() {
    let dir = scratch("run");
    let out_dir = dir.join("report");
    let out = redfence(&[
        "run",
        "--scenario",
        "failover-counter-regression",
        "--protocol",
        "reference",
        "--protocol",
        "redis-counter-fences",
        "--seeds",
        "1",
        "--jobs",
        "1",
        // Described, so the fence exposure is judged, not assumed.
        "--fences",
        "redis-counter",
        "--replication",
        "async",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        files(&out_dir),
        ["junit.xml", "report.html", "report.json", "summary.md"]
    );
    let html_path = out_dir.join("report.html");
    let last = stdout(&out).lines().last().unwrap_or_default().to_owned();
    assert_eq!(last, format!("report: {}", html_path.display()));
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(html.contains("Redis counter as fence source with asynchronous replication"));

    // Re-render from the JSON, for another deployment, only two formats.
    let again = dir.join("again");
    let out = redfence(&[
        "report",
        "--from",
        out_dir.join("report.json").to_str().unwrap(),
        "--out",
        again.to_str().unwrap(),
        "--format",
        "html,md",
        "--fences",
        "store",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(files(&again), ["report.html", "summary.md"]);
    let md = std::fs::read_to_string(again.join("summary.md")).unwrap();
    assert!(!md.contains("**EXPOSED**: Redis counter"), "{md}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_renders_a_bare_sweep_and_replay_writes_a_single_seed_report() {
    let dir = scratch("bare");
    let json = dir.join("sweep.json");
    let out = redfence(&[
        "run",
        "--scenario",
        "late-unlock",
        "--protocol",
        "reference",
        "--seed",
        "3",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rendered = dir.join("rendered");
    let out = redfence(&[
        "report",
        "--from",
        json.to_str().unwrap(),
        "--out",
        rendered.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(files(&rendered).len(), 4);

    let replay = dir.join("replay");
    let out = redfence(&[
        "replay",
        "late-unlock",
        "--protocol",
        "del-unlock",
        "--seed",
        "0",
        "--out",
        replay.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "the mutant is caught");
    let text = stdout(&out);
    assert!(
        text.contains("VIOLATED"),
        "the text timeline and verdicts still print"
    );
    assert!(text.ends_with(&format!(
        "report: {}\n",
        replay.join("report.html").display()
    )));
    let html = std::fs::read_to_string(replay.join("report.html")).unwrap();
    assert!(html.contains("redfence replay: late-unlock × del-unlock, seed 0"));
    assert!(html.contains("<svg class=\"timeline\""));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_report_input_exits_2_with_a_clear_message() {
    let dir = scratch("bad");
    let out_dir = dir.join("out");
    let malformed = dir.join("malformed.json");
    std::fs::write(&malformed, "{\"schema_version\": 1,").unwrap();
    let newer = dir.join("newer.json");
    std::fs::write(
        &newer,
        "{\"schema_version\": 99, \"kind\": \"sweep\", \"sweep\": {}}",
    )
    .unwrap();
    let cases = [
        (malformed.clone(), "is not valid JSON (line 1, column 21)"),
        (newer.clone(), "schema_version 99, newer than the 1"),
        (dir.join("missing.json"), "cannot read"),
    ];
    for (input, message) in cases {
        let out = redfence(&[
            "report",
            "--from",
            input.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(err.starts_with("error: "), "{err}");
        assert!(err.contains(message), "{err}");
    }
    assert!(!out_dir.exists(), "nothing written for bad input");
    let out = redfence(&["report", "--from", malformed.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("needs --out DIR"));
    let out = redfence(&["run", "--seed", "1", "--out", "x", "--format", "pdf"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unknown report format \"pdf\""),
        "{}",
        stderr(&out)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Bad input and bad outputs are refused before any work, with exit 2.
#[test]
fn endless_inputs_and_unwritable_outputs_are_refused_before_any_work() {
    let dir = scratch("refused");
    let out = dir.join("out");
    let started = std::time::Instant::now();
    let zero = redfence(&[
        "report",
        "--from",
        "/dev/zero",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(zero.status.code(), Some(2), "{}", stderr(&zero));
    assert!(
        stderr(&zero).contains("not a regular file"),
        "{}",
        stderr(&zero)
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "refused without reading"
    );
    // An output that cannot be written fails before the sweep, not after.
    let nope = redfence(&[
        "run",
        "--scenario",
        "mutual-exclusion",
        "--out",
        "/proc/nope",
    ]);
    assert_eq!(nope.status.code(), Some(2), "{}", stderr(&nope));
    assert!(stderr(&nope).contains("/proc/nope"), "{}", stderr(&nope));
    assert!(
        !stdout(&nope).contains("runs in"),
        "no run happened: {}",
        stdout(&nope)
    );
    let json = redfence(&[
        "run",
        "--scenario",
        "mutual-exclusion",
        "--json",
        "/proc/nope/sweep.json",
    ]);
    assert_eq!(json.status.code(), Some(2), "{}", stderr(&json));
    assert!(!stdout(&json).contains("runs in"), "{}", stdout(&json));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every valid seed runs, the last one included; a range past it is an
/// error naming the largest valid first seed; a name given twice is refused.
#[test]
fn seeds_at_the_edge_and_repeated_names() {
    let last = u64::MAX.to_string();
    let one = redfence(&[
        "run",
        "--scenario",
        "mutual-exclusion",
        "--protocol",
        "reference",
        "--seed",
        &last,
    ]);
    assert!(one.status.success(), "{}{}", stdout(&one), stderr(&one));
    assert!(stdout(&one).contains("1 runs in"), "{}", stdout(&one));
    let two = redfence(&[
        "run",
        "--scenario",
        "mutual-exclusion",
        "--protocol",
        "reference",
        "--seed-first",
        &(u64::MAX - 1).to_string(),
        "--seeds",
        "2",
    ]);
    assert!(two.status.success(), "{}{}", stdout(&two), stderr(&two));
    assert!(stdout(&two).contains("2 runs in"), "{}", stdout(&two));
    let past = redfence(&[
        "run",
        "--scenario",
        "mutual-exclusion",
        "--seed-first",
        &last,
        "--seeds",
        "2",
    ]);
    assert_eq!(past.status.code(), Some(2), "{}", stderr(&past));
    assert!(
        stderr(&past).contains(&format!(
            "the largest first seed for 2 seeds is {}",
            u64::MAX - 1
        )),
        "{}",
        stderr(&past)
    );
    let twice = redfence(&[
        "run",
        "--scenario",
        "late-unlock",
        "--scenario",
        "late-unlock",
    ]);
    assert_eq!(twice.status.code(), Some(2), "{}", stderr(&twice));
    assert!(
        stderr(&twice).contains("--scenario late-unlock is given twice"),
        "{}",
        stderr(&twice)
    );
}

/// Largest `report.html` of the default sweep a laptop reader is asked to
/// open.
const HTML_BYTES_MAX: u64 = 400 * 1024;
/// Largest report folder of the default sweep (a CI artifact).
const FOLDER_BYTES_MAX: u64 = 3 * 1024 * 1024;

/// The default sweep's report stays small: every scenario × every shipped
/// protocol. What a report holds grows with its cells (one first run and
/// one first failure each), not with the seed count, so one seed per cell
/// measures the default run's size.
#[test]
fn the_default_report_fits_its_size_budget() {
    let dir = scratch("size");
    let out_dir = dir.join("report");
    let out = redfence(&["run", "--seeds", "1", "--out", out_dir.to_str().unwrap()]);
    assert!(
        out.status.code() == Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let size = |name: &str| std::fs::metadata(out_dir.join(name)).unwrap().len();
    let html = size("report.html");
    let folder: u64 = files(&out_dir).iter().map(|f| size(f)).sum();
    assert!(html <= HTML_BYTES_MAX, "report.html is {html} bytes");
    assert!(
        folder <= FOLDER_BYTES_MAX,
        "the report folder is {folder} bytes"
    );
    println!("report.html {html} bytes, folder {folder} bytes");
    let _ = std::fs::remove_dir_all(&dir);
}
