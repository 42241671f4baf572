//! The CI recipe in `docs/ci/redfence-sweep.yml` cannot rot: this test reads
//! the workflow, takes the `redfence` commands its steps run, in file order,
//! expands the shard matrix, and runs them here as the runners would — each
//! shard job's command once per matrix value, then the merge job's — with
//! the sweep made small (`REDFENCE_SWEEP`, the workflow's one knob, set to a
//! few seeds of two scenarios instead of the whole catalog).

use std::path::PathBuf;
use std::process::Command;

/// Where the workflow runs the binary it built.
const BINARY_IN_WORKFLOW: &str = "target/release/redfence";

/// The workflow's shard placeholder.
const MATRIX_SHARD: &str = "${{ matrix.shard }}";

/// The small sweep substituted for the workflow's `REDFENCE_SWEEP`.
const SMALL_SWEEP: &str =
    "--seeds 4 --scenario late-unlock --scenario crash-after-acquire --protocol reference --protocol del-unlock";

fn workflow() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/ci/redfence-sweep.yml");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The values of `shard:` in the matrix.
fn matrix_shards(text: &str) -> Vec<String> {
    let line = text
        .lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix("shard: ["))
        .expect("the workflow has a `shard: [...]` matrix");
    line.trim_end_matches(']')
        .split(',')
        .map(|v| v.trim().to_owned())
        .collect()
}

/// Every `run:` line that runs redfence, in file order.
fn redfence_commands(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter_map(|l| {
            l.strip_prefix("- run: ")
                .or_else(|| l.strip_prefix("run: "))
        })
        .filter(|command| command.starts_with(BINARY_IN_WORKFLOW))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_workflow_s_redfence_commands_run_and_make_a_report() {
    let text = workflow();
    assert!(
        text.contains("REDFENCE_SWEEP:"),
        "the workflow sets the knob this test makes small"
    );
    let shards = matrix_shards(&text);
    assert_eq!(shards, ["1", "2", "3", "4"]);
    let commands = redfence_commands(&text);
    assert_eq!(
        commands.len(),
        2,
        "a shard command and a merge: {commands:?}"
    );
    assert!(commands[0].contains(MATRIX_SHARD), "{}", commands[0]);
    assert!(commands[1].contains(" report --merge "), "{}", commands[1]);

    let dir = std::env::temp_dir().join(format!("redfence-ci-recipe-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let started = std::time::Instant::now();
    let mut last_stdout = String::new();
    for command in &commands {
        // A command naming the matrix runs once per shard, as the jobs do.
        let values: Vec<Option<&String>> = if command.contains(MATRIX_SHARD) {
            shards.iter().map(Some).collect()
        } else {
            vec![None]
        };
        for value in values {
            let mut line = command.replace(BINARY_IN_WORKFLOW, env!("CARGO_BIN_EXE_redfence"));
            if let Some(value) = value {
                line = line.replace(MATRIX_SHARD, value);
            }
            let out = Command::new("sh")
                .args(["-c", &line])
                .current_dir(&dir)
                .env("REDFENCE_SWEEP", SMALL_SWEEP)
                .output()
                .expect("sh runs");
            assert!(
                out.status.success(),
                "{line}\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            last_stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        }
    }
    eprintln!("the recipe ran in {:?}", started.elapsed());
    assert!(last_stdout.contains("merged 4 files"), "{last_stdout}");
    assert!(dir.join("report/report.html").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}
