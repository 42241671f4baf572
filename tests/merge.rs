//! `redfence report --merge` as a CI matrix uses it: a sweep run as four
//! shards (`run --shard I/4 --json`) and merged gives the very sweep an
//! unsharded run of the same seeds writes, and shards that do not make one
//! sweep together are refused with exit 2 before anything is written.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A small sweep with a passing protocol and two caught mutants, so the
/// merge has tallies, first runs, first failures and a score to get right.
const PLAN: [&str; 12] = [
    "--scenario",
    "late-unlock",
    "--scenario",
    "stale-worker-pause",
    "--protocol",
    "reference",
    "--protocol",
    "del-unlock",
    "--protocol",
    "no-fence-check",
    "--seeds",
    "8",
];

fn redfence(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_redfence"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A fresh folder for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("redfence-merge-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Runs [`PLAN`] (one shard of it with `shard`) and returns its JSON file.
fn run(dir: &Path, shard: Option<&str>) -> PathBuf {
    let file = dir.join(match shard {
        Some(s) => format!("shard-{}.json", s.replace('/', "-of-")),
        None => "whole.json".to_owned(),
    });
    let mut args = vec!["run", "--jobs", "1", "--json", path(&file)];
    args.extend(PLAN);
    if let Some(shard) = shard {
        args.extend(["--shard", shard]);
    }
    let out = redfence(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    file
}

fn four_shards(dir: &Path) -> Vec<PathBuf> {
    ["1/4", "2/4", "3/4", "4/4"]
        .into_iter()
        .map(|shard| run(dir, Some(shard)))
        .collect()
}

fn json(file: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap()
}

/// `report --merge FILES… --out DIR`.
fn merge(files: &[&Path], out: &Path) -> Output {
    let mut args = vec!["report", "--out", path(out), "--format", "json,html"];
    args.push("--merge");
    args.extend(files.iter().map(|f| path(f)));
    redfence(&args)
}

/// The sweep inside the merged report.json is byte-for-byte the sweep in
/// the report of the unsharded run (its `--json` re-rendered with `report
/// --from`, so both went through the same report: the same histories kept),
/// compared whole but for one field that differs legitimately: the
/// provenance's wall time, which the unsharded run records and a merge of
/// runs on several machines has none of. The merged sweep has no `shard`,
/// like the unsharded one, and both carry the same binary's build. Only the
/// report around it — its command line — differs, and is not compared.
#[test]
fn four_merged_shards_equal_the_unsharded_sweep() {
    let dir = scratch("equal");
    let started = std::time::Instant::now();
    let whole = run(&dir, None);
    let shards = four_shards(&dir);
    let out = dir.join("report");
    // In an order of its own: the merge must not depend on it.
    let merged = merge(&[&shards[2], &shards[0], &shards[3], &shards[1]], &out);
    assert!(merged.status.success(), "{}", stderr(&merged));
    eprintln!("5 runs of the sweep and a merge in {:?}", started.elapsed());
    let whole_report = dir.join("whole-report");
    let rendered = redfence(&[
        "report",
        "--from",
        path(&whole),
        "--out",
        path(&whole_report),
        "--format",
        "json",
    ]);
    assert!(rendered.status.success(), "{}", stderr(&rendered));
    let sweep_of = |file: &Path| {
        let mut sweep = json(file)["sweep"].clone();
        let provenance = sweep["provenance"].as_object_mut().expect("provenance");
        provenance.remove("wall_ms");
        serde_json::to_string_pretty(&sweep).unwrap()
    };
    assert_eq!(
        sweep_of(&out.join("report.json")),
        sweep_of(&whole_report.join("report.json"))
    );
    // Not vacuous: the sweep has a pass, catches and failures to carry.
    let stdout = String::from_utf8_lossy(&merged.stdout).into_owned();
    assert!(
        stdout.contains("merged 4 files: reference: 2/2 scenarios held"),
        "{stdout}"
    );
    assert!(stdout.contains("2/2 mutants caught"), "{stdout}");
    assert!(out.join("report.html").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each way shards can fail to make one sweep is refused with exit 2, in
/// one `error:` line naming the files, and the report folder is never made.
#[test]
fn shards_that_do_not_make_one_sweep_are_refused_before_writing() {
    let dir = scratch("refused");
    let shards = four_shards(&dir);
    let (one, two, three, four) = (&shards[0], &shards[1], &shards[2], &shards[3]);
    // A copy of shard 4 changed by `edit`, as another build or plan writes it.
    let edited = |name: &str, edit: &dyn Fn(&mut serde_json::Value)| {
        let mut value = json(four);
        edit(&mut value);
        let file = dir.join(name);
        std::fs::write(&file, serde_json::to_string(&value).unwrap()).unwrap();
        file
    };
    let other_commit = edited("commit.json", &|v| {
        v["provenance"]["commit"] = "0123456789ab".into()
    });
    let other_world = edited("world.json", &|v| v["world"] = "real".into());
    let other_scenarios = edited("scenarios.json", &|v| {
        v["scenarios"][0]["name"] = "mutual-exclusion".into()
    });
    let other_protocols = edited("protocols.json", &|v| {
        v["protocols"].as_array_mut().unwrap().pop();
    });
    let other_range = edited("range.json", &|v| v["seeds"] = 12.into());
    let copy = dir.join("copy-of-2.json");
    std::fs::copy(two, &copy).unwrap();
    let cases: [(Vec<&Path>, String); 7] = [
        (
            vec![one, two, three],
            format!(
                "{}, {}, {} leave 2 of the 8 seeds from 0 unrun (seeds 3, 7)",
                path(one),
                path(two),
                path(three)
            ),
        ),
        (
            vec![one, two, three, four, &copy],
            format!(
                "{} and {} both ran seed 1 (shards 2/4 and 2/4)",
                path(two),
                path(&copy)
            ),
        ),
        (
            vec![one, two, three, &other_commit],
            format!(
                "{} and {} were written by different builds",
                path(one),
                path(&other_commit)
            ),
        ),
        (
            vec![one, two, three, &other_world],
            format!(
                "{} ran in the sim world and {} in the real world",
                path(one),
                path(&other_world)
            ),
        ),
        (
            vec![one, two, three, &other_scenarios],
            format!(
                "{} and {} ran different scenarios (late-unlock, stale-worker-pause vs \
                 mutual-exclusion, stale-worker-pause)",
                path(one),
                path(&other_scenarios)
            ),
        ),
        (
            vec![one, two, three, &other_protocols],
            format!(
                "{} and {} ran different protocols",
                path(one),
                path(&other_protocols)
            ),
        ),
        (
            vec![one, two, three, &other_range],
            format!(
                "{} and {} split different seed ranges (8 seeds from 0 vs 12 seeds from 0)",
                path(one),
                path(&other_range)
            ),
        ),
    ];
    let out = dir.join("report");
    for (files, message) in cases {
        let refused = merge(&files, &out);
        let err = stderr(&refused);
        assert_eq!(refused.status.code(), Some(2), "{err}");
        assert!(err.starts_with("error: "), "{err}");
        assert!(err.contains(&message), "wanted {message:?} in {err}");
        assert!(!out.exists(), "nothing written for: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
