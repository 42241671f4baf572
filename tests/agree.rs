//! `redfence agree` as a user investigating a disagreement runs it: with
//! `--sweeps DIR` both worlds' sweeps are kept, each cell's first failing
//! run with its whole history (a real run cannot be replayed, so this is
//! the only record of what reached the servers), and `redfence report`
//! renders them. A `--sweeps` that cannot be written is refused before any
//! server starts.
//!
//! Run under scripts/with-services (the servers' binaries); the real world
//! is the local provider's.

use std::path::PathBuf;
use std::process::{Command, Output};

use redfence_scenarios::record::WorldKind;
use redfence_scenarios::sweep::Sweep;

fn redfence(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_redfence"))
        .args(args)
        .env("REDFENCE_PROVIDER", "local")
        .output()
        .expect("the binary runs")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("redfence-agree-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn read_sweep(path: &std::path::Path) -> Sweep {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A mutant without a fence check writes stale in both worlds: the
/// agreement holds (both violated), and each kept sweep holds that cell's
/// failing run, history included, which `report --from` renders.
#[test]
fn an_agreement_keeps_both_worlds_sweeps_with_the_failing_histories() {
    let dir = scratch("sweeps");
    let sweeps = dir.join("sweeps");
    let out = redfence(&[
        "agree",
        "--scenario",
        "stale-worker-pause",
        "--protocol",
        "no-fence-check",
        "--seeds",
        "1",
        "--sweeps",
        sweeps.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("no disagreement between the worlds"),
        "{}",
        text(&out)
    );
    for (name, world) in [("sim.json", WorldKind::Sim), ("real.json", WorldKind::Real)] {
        let sweep = read_sweep(&sweeps.join(name));
        assert_eq!(sweep.world, world, "{name}");
        assert_eq!(sweep.cells.len(), 1, "{name}");
        let cell = &sweep.cells[0];
        assert_eq!(
            (cell.scenario.as_str(), cell.protocol.as_str(), cell.runs),
            ("stale-worker-pause", "no-fence-check", 1),
            "{name}"
        );
        let failure = cell
            .first_failure
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: the stale write is kept"));
        let history = failure.history.as_ref().expect("its history");
        assert!(!history.ops.is_empty(), "{name}: its history");
    }
    let rendered = dir.join("report");
    let report = redfence(&[
        "report",
        "--from",
        sweeps.join("real.json").to_str().unwrap(),
        "--out",
        rendered.to_str().unwrap(),
        "--format",
        "md",
    ]);
    assert_eq!(report.status.code(), Some(0), "{}", text(&report));
    let md = std::fs::read_to_string(rendered.join("summary.md")).expect("report.md");
    assert!(md.contains("no-fence-check"), "{md}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A `--sweeps` that names a file is refused at once, exit 2, naming the
/// path, before the simulation or any server starts.
#[test]
fn a_sweeps_folder_that_cannot_be_written_is_refused_before_any_work() {
    let dir = scratch("refused");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("a-file");
    std::fs::write(&file, b"kept").unwrap();
    let out = redfence(&["agree", "--sweeps", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("exists and is not a folder"),
        "{}",
        text(&out)
    );
    assert!(
        !text(&out).contains("simulation:") && !text(&out).contains("real world:"),
        "it started work first: {}",
        text(&out)
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"kept", "nothing lost");
    std::fs::remove_dir_all(&dir).unwrap();
}
