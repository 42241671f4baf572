//! The default sweep's output, byte for byte: every cell of the default
//! scenario × protocol set on the first seeds, serialised as `run --json`
//! writes it, and one SHA-1 a cell compared with
//! `tests/golden/sweep-digests.txt`.
//!
//! Why: a change made for speed (fewer allocations, a cheaper world, one
//! pass instead of three) must not change what a run does or what the
//! checker says about it. The digests pin every history, verdict and
//! explanation text of the sweep; a change that alters them on purpose
//! (a new scenario, a fix in the simulation) regenerates the file with
//! `REDFENCE_BLESS=1 cargo test -p redfence-scenarios --test sweep_digest`
//! and says why in its commit. Cells are named, so the diff shows which.

use std::fmt::Write as _;
use std::path::PathBuf;

use redfence_scenarios::catalog;
use redfence_scenarios::protocols;
use redfence_scenarios::run::WorldFactory;
use redfence_scenarios::sim_world::{PolledSimWorlds, SimWorlds};
use redfence_scenarios::sweep::{sweep, SweepPlan};

/// Seeds per cell: enough for the sweep's faults and mutants to fire in
/// most cells, few enough for a debug build (2 × 234 runs).
const SEEDS: u64 = 2;

fn golden() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/sweep-digests.txt")
}

/// One line a cell: `scenario protocol sha1`, in the sweep's own order.
fn digests(worlds: &dyn WorldFactory) -> String {
    let plan = SweepPlan {
        scenarios: catalog::all(),
        protocols: protocols::all(),
        seed_first: 0,
        seeds: SEEDS,
        jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
        shard: None,
    };
    let result = sweep(worlds, &plan, &|_| {});
    assert!(
        result.provenance.is_none(),
        "no wall time in what is hashed"
    );
    let mut text = String::new();
    for cell in &result.cells {
        let json = serde_json::to_vec(cell).expect("a cell serialises");
        let digest = sha1_smol::Sha1::from(&json).digest().to_string();
        writeln!(text, "{} {} {digest}", cell.scenario, cell.protocol).unwrap();
    }
    text
}

#[test]
fn the_default_sweep_is_byte_identical_to_its_golden_digests() {
    let now = digests(&SimWorlds);
    if std::env::var_os("REDFENCE_BLESS").is_some() {
        std::fs::write(golden(), &now).expect("golden digests written");
        return;
    }
    let golden = std::fs::read_to_string(golden()).expect("tests/golden/sweep-digests.txt");
    let changed: Vec<String> = golden
        .lines()
        .zip(now.lines())
        .filter(|(was, is)| was != is)
        .map(|(was, is)| format!("  was {was}\n  now {is}"))
        .collect();
    assert!(
        changed.is_empty() && golden.lines().count() == now.lines().count(),
        "{} of {} cells changed their output (REDFENCE_BLESS=1 regenerates the file when \
         the change is meant):\n{}",
        changed.len(),
        golden.lines().count(),
        changed.join("\n")
    );
}

/// Polling every host every tick, as turmoil does without the idle fast
/// path, gives the same bytes: the fast path is an optimisation only.
#[test]
fn polling_every_host_every_tick_gives_the_same_digests() {
    assert_eq!(digests(&PolledSimWorlds), digests(&SimWorlds));
}

/// The comparison sees a change: the same cells on another seed range
/// differ from the golden ones.
#[test]
fn a_changed_cell_changes_its_digest() {
    let plan = |seed_first| SweepPlan {
        scenarios: vec![catalog::all().remove(0)],
        protocols: vec![protocols::all().remove(0)],
        seed_first,
        seeds: 1,
        jobs: 1,
        shard: None,
    };
    let digest = |seed_first| {
        let result = sweep(&SimWorlds, &plan(seed_first), &|_| {});
        sha1_smol::Sha1::from(serde_json::to_vec(&result.cells[0]).unwrap())
            .digest()
            .to_string()
    };
    assert_eq!(digest(0), digest(0), "the same seed, the same bytes");
    assert_ne!(digest(0), digest(1));
}
