//! Merging the shards of a sweep: the `--json` results of `redfence run
//! --shard I/N` runs over one seed range, folded into the one [`Sweep`] an
//! unsharded run of the same seeds writes — the same tallies, verdict cells,
//! first runs and failures, and mutation score.
//!
//! Why the merge can be exact: a seed's run depends on the seed alone, a
//! cell keeps counts (which add up) and "firsts" (the smallest seed wins:
//! [`CellAcc::absorb`]), and cells and score are then built as a sweep
//! builds them ([`Sweep::with_cells`]). Why it refuses so much: shards of
//! different builds, plans, worlds or seed ranges, or shards that overlap or
//! leave seeds out, would merge into a report of a sweep nobody ran. Every
//! check runs before anything is merged, and every refusal names the files.

use crate::provenance::Provenance;
use crate::sweep::{CellAcc, Shard, Sweep, SCHEMA_VERSION};

/// Most files one merge takes (a bound on the work and on the ownership
/// table's entries).
pub const PARTS_MAX: usize = 1024;

/// Most seeds per cell a merged sweep may span: the most one sweep runs
/// (`redfence_scenarios::sweep::SEEDS_MAX`), and a bound on the coverage
/// check's table.
pub const SEEDS_MAX: u64 = 10_000_000;

/// Most missing seeds an error lists one by one.
const MISSING_LISTED_MAX: usize = 10;

/// One file to merge: its name (for errors) and the sweep it holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    /// The file, as the user named it.
    pub file: String,
    /// Its sweep.
    pub sweep: Sweep,
}

/// Why a set of files cannot be merged. Each names the files concerned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    /// No file given.
    #[error("nothing to merge: give the --json file of every shard")]
    Nothing,
    /// More files than [`PARTS_MAX`].
    #[error("{count} files to merge, over the limit of {PARTS_MAX}")]
    TooMany {
        /// Files given.
        count: usize,
    },
    /// A sweep of another schema version.
    #[error("{file} is a sweep of schema_version {found}; merging reads version {SCHEMA_VERSION}")]
    Schema {
        /// The file.
        file: String,
        /// Its version.
        found: u32,
    },
    /// Written by different redfence builds (version, commit, servers).
    #[error(
        "{file} and {other} were written by different builds ({ours} vs {theirs}); \
         run every shard with the same redfence"
    )]
    Provenance {
        /// The first file.
        file: String,
        /// The file that differs.
        other: String,
        /// What the first says.
        ours: String,
        /// What the other says.
        theirs: String,
    },
    /// Run in different worlds.
    #[error("{file} ran in the {ours} world and {other} in the {theirs} world")]
    World {
        /// The first file.
        file: String,
        /// The file that differs.
        other: String,
        /// The first's world.
        ours: &'static str,
        /// The other's world.
        theirs: &'static str,
    },
    /// Different scenarios (names, order or parameters).
    #[error("{file} and {other} ran different scenarios ({ours} vs {theirs})")]
    Scenarios {
        /// The first file.
        file: String,
        /// The file that differs.
        other: String,
        /// The first's scenarios.
        ours: String,
        /// The other's.
        theirs: String,
    },
    /// Different protocols.
    #[error("{file} and {other} ran different protocols ({ours} vs {theirs})")]
    Protocols {
        /// The first file.
        file: String,
        /// The file that differs.
        other: String,
        /// The first's protocols.
        ours: String,
        /// The other's.
        theirs: String,
    },
    /// Shards of different seed ranges.
    #[error(
        "{file} and {other} split different seed ranges ({ours} vs {theirs}); run every \
         shard with the same --seed-first and --seeds"
    )]
    SeedRange {
        /// The first file.
        file: String,
        /// The file that differs.
        other: String,
        /// The first's range.
        ours: String,
        /// The other's.
        theirs: String,
    },
    /// Two files ran the same seed.
    #[error("{file} and {other} both ran seed {seed} (shards {ours} and {theirs}); give each shard once")]
    Overlap {
        /// One file.
        file: String,
        /// The other.
        other: String,
        /// The first seed both ran.
        seed: u64,
        /// The one's shard.
        ours: String,
        /// The other's.
        theirs: String,
    },
    /// The files leave seeds of the range unrun.
    #[error(
        "{files} leave {count} of the {seeds} seeds from {seed_first} unrun (seeds \
         {listed}); merge the missing shards' files too"
    )]
    Missing {
        /// Every file given.
        files: String,
        /// Seeds no file ran.
        count: u64,
        /// Seeds per cell in the range.
        seeds: u64,
        /// The range's first seed.
        seed_first: u64,
        /// The smallest missing seeds.
        listed: String,
    },
    /// A file whose cells do not match its own plan or shard.
    #[error("{file} is not a sweep as `redfence run` writes one: {why}")]
    Inconsistent {
        /// The file.
        file: String,
        /// What does not match.
        why: String,
    },
}

/// Merges the shards in `parts` (in any order) into the sweep an unsharded
/// run of their seed range gives, or says why they cannot be merged before
/// merging anything.
pub fn merge(parts: Vec<Part>) -> Result<Sweep, MergeError> {
    let first = parts.first().ok_or(MergeError::Nothing)?;
    if parts.len() > PARTS_MAX {
        return Err(MergeError::TooMany { count: parts.len() });
    }
    for part in &parts {
        check_alike(first, part)?;
        check_own_plan(part)?;
    }
    check_coverage(&parts)?;
    Ok(fold(parts))
}

/// Refuses `part` unless it ran what `first` ran, with the same build.
fn check_alike(first: &Part, part: &Part) -> Result<(), MergeError> {
    let (ours, theirs) = (&first.sweep, &part.sweep);
    let file = first.file.clone();
    let other = part.file.clone();
    if theirs.schema_version != SCHEMA_VERSION {
        return Err(MergeError::Schema {
            file: other,
            found: theirs.schema_version,
        });
    }
    let same = match (&ours.provenance, &theirs.provenance) {
        (Some(a), Some(b)) => a.same_build(b),
        (a, b) => a == b,
    };
    if !same {
        let line = |s: &Sweep| {
            s.provenance
                .as_ref()
                .map_or_else(|| "no provenance".to_owned(), |p| p.line())
        };
        return Err(MergeError::Provenance {
            file,
            other,
            ours: line(ours),
            theirs: line(theirs),
        });
    }
    if ours.world != theirs.world {
        return Err(MergeError::World {
            file,
            other,
            ours: ours.world.name(),
            theirs: theirs.world.name(),
        });
    }
    if let Some((a, b)) = difference(&ours.scenarios, &theirs.scenarios, |s| &s.name) {
        return Err(MergeError::Scenarios {
            file,
            other,
            ours: a,
            theirs: b,
        });
    }
    if let Some((a, b)) = difference(&ours.protocols, &theirs.protocols, |p| &p.name) {
        return Err(MergeError::Protocols {
            file,
            other,
            ours: a,
            theirs: b,
        });
    }
    if (ours.seed_first, ours.seeds) != (theirs.seed_first, theirs.seeds) {
        let range = |s: &Sweep| format!("{} seeds from {}", s.seeds, s.seed_first);
        return Err(MergeError::SeedRange {
            file,
            other,
            ours: range(ours),
            theirs: range(theirs),
        });
    }
    Ok(())
}

/// `None` when the lists are equal, else how each reads: their names, or,
/// when only a description or parameter differs, which entry.
fn difference<T: PartialEq>(
    ours: &[T],
    theirs: &[T],
    name: impl Fn(&T) -> &String,
) -> Option<(String, String)> {
    if ours == theirs {
        return None;
    }
    let names = |list: &[T]| {
        list.iter()
            .map(|t| name(t).as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (a, b) = (names(ours), names(theirs));
    if a != b {
        return Some((a, b));
    }
    let differing = ours
        .iter()
        .zip(theirs)
        .find(|(x, y)| x != y)
        .map_or(String::new(), |(x, _)| name(x).clone());
    Some((
        format!("{differing} as one describes it"),
        format!("{differing} with other parameters or description"),
    ))
}

/// The shard a sweep ran (an unsharded sweep is shard 1/1).
fn shard_of(sweep: &Sweep) -> Shard {
    sweep.shard.unwrap_or(Shard { index: 1, count: 1 })
}

/// Offset from `seed_first` of the first seed of `shard`.
fn offset(seed_first: u64, shard: Shard) -> u64 {
    let wanted = shard.index - 1;
    let have = seed_first % shard.count;
    // Both below `count`, so neither side overflows.
    if wanted >= have {
        wanted - have
    } else {
        wanted + (shard.count - have)
    }
}

/// Seeds of `shard` among `seeds` seeds from `seed_first`.
fn seeds_in(seed_first: u64, seeds: u64, shard: Shard) -> u64 {
    let start = offset(seed_first, shard);
    if start >= seeds {
        0
    } else {
        (seeds - 1 - start) / shard.count + 1
    }
}

/// Refuses a part whose cells do not follow its own plan: one cell per
/// scenario × protocol in plan order, in its world, each with one run per
/// seed of its shard. The merge's seed arithmetic relies on all of it.
fn check_own_plan(part: &Part) -> Result<(), MergeError> {
    let sweep = &part.sweep;
    let refuse = |why: String| MergeError::Inconsistent {
        file: part.file.clone(),
        why,
    };
    if sweep.seeds == 0 || sweep.seeds > SEEDS_MAX {
        return Err(refuse(format!(
            "{} seeds per cell, outside 1..={SEEDS_MAX}",
            sweep.seeds
        )));
    }
    if sweep.seed_first.checked_add(sweep.seeds - 1).is_none() {
        return Err(refuse(format!(
            "{} seeds from {} run past the largest seed",
            sweep.seeds, sweep.seed_first
        )));
    }
    let expected = sweep.scenarios.len() * sweep.protocols.len();
    if sweep.cells.len() != expected {
        return Err(refuse(format!(
            "{} cells for {} scenarios × {} protocols",
            sweep.cells.len(),
            sweep.scenarios.len(),
            sweep.protocols.len()
        )));
    }
    let runs = seeds_in(sweep.seed_first, sweep.seeds, shard_of(sweep));
    for (index, cell) in sweep.cells.iter().enumerate() {
        let scenario = &sweep.scenarios[index / sweep.protocols.len()].name;
        let protocol = &sweep.protocols[index % sweep.protocols.len()].name;
        let at = format!("cell {scenario} × {protocol}");
        if (&cell.scenario, &cell.protocol) != (scenario, protocol) || cell.world != sweep.world {
            return Err(refuse(format!(
                "{at} holds {} × {} in the {} world",
                cell.scenario,
                cell.protocol,
                cell.world.name()
            )));
        }
        if cell.runs != runs || cell.seeds_to_catch.is_some_and(|p| p == 0 || p > runs) {
            return Err(refuse(format!(
                "{at} ran {} seeds (catch at {:?}), shard {} holds {runs}",
                cell.runs,
                cell.seeds_to_catch,
                shard_of(sweep)
            )));
        }
        let last = sweep.seed_first + (sweep.seeds - 1);
        for record in [&cell.first_failure, &cell.first_run].into_iter().flatten() {
            let seed = record.seed;
            if seed < sweep.seed_first || seed > last || !shard_of(sweep).contains(seed) {
                return Err(refuse(format!(
                    "{at} keeps a run of seed {seed}, outside its shard's seeds"
                )));
            }
        }
    }
    Ok(())
}

fn gcd(a: u64, b: u64) -> u64 {
    // Euclid: bounded by the logarithm of the smaller.
    let (mut a, mut b) = (a, b);
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Refuses parts that run a seed twice or leave one out. Which shard owns a
/// seed repeats with the least common multiple of the shard counts, so one
/// period of the range (or the whole range, when shorter) decides both.
fn check_coverage(parts: &[Part]) -> Result<(), MergeError> {
    let head = &parts[0].sweep;
    let (seed_first, seeds) = (head.seed_first, head.seeds);
    let period = parts.iter().fold(1u64, |period, part| {
        let count = shard_of(&part.sweep).count;
        (period / gcd(period, count))
            .checked_mul(count)
            .map_or(seeds, |lcm| lcm.min(seeds))
    });
    const UNOWNED: u16 = u16::MAX;
    // `period` ≤ seeds ≤ SEEDS_MAX, and at most PARTS_MAX < u16::MAX parts.
    let mut owner = vec![UNOWNED; period as usize];
    for (k, part) in parts.iter().enumerate() {
        let shard = shard_of(&part.sweep);
        // Bounded: period / count steps, and each marks a free slot or ends
        // the check, so all parts together take at most period + 1.
        let mut at = offset(seed_first, shard);
        while at < period {
            let slot = &mut owner[at as usize];
            if *slot != UNOWNED {
                let earlier = &parts[usize::from(*slot)];
                return Err(MergeError::Overlap {
                    file: earlier.file.clone(),
                    other: part.file.clone(),
                    seed: seed_first + at,
                    ours: shard_of(&earlier.sweep).to_string(),
                    theirs: shard.to_string(),
                });
            }
            *slot = k as u16;
            at += shard.count;
        }
    }
    let unowned: Vec<u64> = (0..period)
        .filter(|&at| owner[at as usize] == UNOWNED)
        .collect();
    if unowned.is_empty() {
        return Ok(());
    }
    let count: u64 = unowned.iter().map(|at| (seeds - 1 - at) / period + 1).sum();
    let mut listed = Vec::new();
    // Bounded by MISSING_LISTED_MAX seeds, in ascending order.
    'listing: for round in 0..=(seeds / period) {
        for at in &unowned {
            let from_first = round * period + at;
            if from_first >= seeds || listed.len() == MISSING_LISTED_MAX {
                break 'listing;
            }
            listed.push((seed_first + from_first).to_string());
        }
    }
    if count > listed.len() as u64 {
        listed.push("…".to_owned());
    }
    Err(MergeError::Missing {
        files: parts
            .iter()
            .map(|p| p.file.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        count,
        seeds,
        seed_first,
        listed: listed.join(", "),
    })
}

/// Folds checked parts into one sweep.
fn fold(parts: Vec<Part>) -> Sweep {
    let head = &parts[0].sweep;
    let seed_first = head.seed_first;
    let merged = Sweep {
        schema_version: SCHEMA_VERSION,
        world: head.world,
        seed_first,
        seeds: head.seeds,
        shard: None,
        scenarios: head.scenarios.clone(),
        protocols: head.protocols.clone(),
        cells: Vec::new(),
        mutants: Vec::new(),
        // The build of every shard (checked alike); no wall time, which a
        // merge of runs on several machines does not have.
        provenance: head
            .provenance
            .clone()
            .map(|p| Provenance { wall_ms: None, ..p }),
    };
    let mut accs: Vec<CellAcc> = head.cells.iter().map(|_| CellAcc::new()).collect();
    for part in parts {
        let shard = shard_of(&part.sweep);
        let start = offset(seed_first, shard);
        for (acc, cell) in accs.iter_mut().zip(part.sweep.cells) {
            acc.absorb(
                cell,
                |own| seed_first + start + (own - 1) * shard.count,
                |seed| seed - seed_first + 1,
            );
        }
    }
    merged.with_cells(accs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mutation::promised;
    use crate::names::{mutant, protocol, scenario};
    use crate::property::Property;
    use crate::provenance::Provenance;
    use crate::record::{Metrics, RunRecord, WorldKind};
    use crate::sweep::{CellStatus, ProtocolInfo, ScenarioInfo};
    use crate::verdict::{HistorySlice, Verdict};

    const SCENARIOS: [&str; 2] = [scenario::STALE_WORKER_PAUSE, scenario::MUTUAL_EXCLUSION];
    const PROTOCOLS: [&str; 3] = [
        protocol::REFERENCE,
        mutant::NO_FENCE_CHECK,
        mutant::DEL_UNLOCK,
    ];

    /// A run that depends on its seed alone, as a simulated one does: the
    /// mutants fail fence-order on some seeds, the reference on one, and
    /// every seventh seed breaks.
    fn run(scenario: &str, protocol: &str, seed: u64) -> RunRecord {
        let violated = match protocol {
            protocol::REFERENCE => seed == 9,
            mutant::NO_FENCE_CHECK => seed % 3 == 2,
            _ => seed % 5 == 3,
        };
        let verdicts = Property::ALL
            .iter()
            .map(|&p| match p {
                Property::FenceOrder if violated => Verdict::violated(
                    p,
                    "x",
                    HistorySlice {
                        op_ids: vec![seed],
                        ..Default::default()
                    },
                ),
                Property::FenceOrder => Verdict::held(p, "x"),
                _ if seed.is_multiple_of(2) => Verdict::not_exercised(p, "x"),
                _ => Verdict::undecided(p, "x"),
            })
            .collect();
        RunRecord {
            scenario: scenario.to_owned(),
            protocol: protocol.to_owned(),
            world: WorldKind::Sim,
            seed,
            params: Vec::new(),
            verdicts,
            history: None,
            metrics: Metrics::default(),
            error: (seed % 7 == 5).then(|| format!("broke on {seed}")),
            replay: format!("redfence replay {scenario} --protocol {protocol} --seed {seed}"),
        }
    }

    /// The sweep a runner writes for `shard` of `seeds` seeds from
    /// `seed_first`, positions counted within the shard as it counts them.
    fn sweep(seed_first: u64, seeds: u64, shard: Option<Shard>) -> Sweep {
        let mine: Vec<u64> = (seed_first..seed_first + seeds)
            .filter(|&s| shard.is_none_or(|sh| sh.contains(s)))
            .collect();
        let mut accs = Vec::new();
        for scenario in SCENARIOS {
            for protocol in PROTOCOLS {
                let mut acc = CellAcc::new();
                // Backwards, as threads may finish: the result must not care.
                for (i, &seed) in mine.iter().enumerate().rev() {
                    let promised = promised(protocol, scenario);
                    acc.add(i as u64 + 1, run(scenario, protocol, seed), &promised);
                }
                accs.push(acc);
            }
        }
        Sweep {
            schema_version: SCHEMA_VERSION,
            world: WorldKind::Sim,
            seed_first,
            seeds,
            shard,
            scenarios: SCENARIOS
                .iter()
                .map(|&name| ScenarioInfo {
                    name: name.to_owned(),
                    description: "d".to_owned(),
                    targets: Vec::new(),
                    params: Vec::new(),
                })
                .collect(),
            protocols: PROTOCOLS
                .iter()
                .map(|&name| ProtocolInfo {
                    name: name.to_owned(),
                    description: "d".to_owned(),
                })
                .collect(),
            cells: Vec::new(),
            mutants: Vec::new(),
            provenance: Some(Provenance {
                redfence_version: "0.1.0".to_owned(),
                commit: Some("abc".to_owned()),
                ..Default::default()
            }),
        }
        .with_cells(accs)
    }

    fn part(file: &str, sweep: Sweep) -> Part {
        Part {
            file: file.to_owned(),
            sweep,
        }
    }

    fn shards(seed_first: u64, seeds: u64, count: u64) -> Vec<Part> {
        (1..=count)
            .map(|index| {
                let shard = Shard { index, count };
                part(
                    &format!("shard-{index}.json"),
                    sweep(seed_first, seeds, Some(shard)),
                )
            })
            .collect()
    }

    #[test]
    fn shards_merge_into_the_unsharded_sweep_in_any_order() {
        for (seed_first, seeds, count) in [(0, 20, 4), (5, 13, 3), (7, 3, 4), (0, 20, 1)] {
            let whole = sweep(seed_first, seeds, None);
            let mut parts = shards(seed_first, seeds, count);
            parts.retain(|p| p.sweep.cells[0].runs > 0);
            let merged = merge(parts.clone()).unwrap();
            assert_eq!(merged, whole, "{seeds} seeds from {seed_first} in {count}");
            parts.reverse();
            assert_eq!(merge(parts).unwrap(), whole);
        }
        // The case the positions matter for: no-fence-check first fails on
        // seed 2, the first seed of shard 3/4 but the third of the sweep.
        let whole = sweep(0, 20, None);
        let cell = whole
            .cell(scenario::STALE_WORKER_PAUSE, mutant::NO_FENCE_CHECK)
            .unwrap();
        assert_eq!(
            (cell.status, cell.seeds_to_catch),
            (CellStatus::Caught, Some(3))
        );
        let fails = whole
            .cell(scenario::MUTUAL_EXCLUSION, protocol::REFERENCE)
            .unwrap();
        assert_eq!(fails.status, CellStatus::Failed);
        assert_eq!(fails.first_failure.as_ref().map(|r| r.seed), Some(5));
    }

    #[test]
    fn shards_of_different_counts_merge_when_they_cover_each_seed_once() {
        let parts = vec![
            part("a", sweep(0, 12, Some(Shard { index: 1, count: 2 }))),
            part("b", sweep(0, 12, Some(Shard { index: 2, count: 4 }))),
            part("c", sweep(0, 12, Some(Shard { index: 4, count: 4 }))),
        ];
        assert_eq!(merge(parts).unwrap(), sweep(0, 12, None));
    }

    #[test]
    fn overlapping_and_missing_seeds_are_named() {
        let mut parts = shards(0, 20, 4);
        parts.push(part("again.json", parts[1].sweep.clone()));
        assert_eq!(
            merge(parts).unwrap_err().to_string(),
            "shard-2.json and again.json both ran seed 1 (shards 2/4 and 2/4); give each shard once"
        );
        let mut parts = shards(0, 20, 4);
        parts.push(part("all.json", sweep(0, 20, None)));
        assert!(matches!(
            merge(parts).unwrap_err(),
            MergeError::Overlap { seed: 0, .. }
        ));
        let mut parts = shards(0, 20, 4);
        parts.remove(3);
        assert_eq!(
            merge(parts).unwrap_err().to_string(),
            "shard-1.json, shard-2.json, shard-3.json leave 5 of the 20 seeds from 0 unrun \
             (seeds 3, 7, 11, 15, 19); merge the missing shards' files too"
        );
        let mut parts = shards(0, 80, 4);
        parts.remove(0);
        let missing = merge(parts).unwrap_err().to_string();
        assert!(
            missing.contains("leave 20 of the 80 seeds from 0 unrun (seeds 0, 4, 8, 12, 16, 20, 24, 28, 32, 36, …)"),
            "{missing}"
        );
        assert_eq!(merge(Vec::new()).unwrap_err(), MergeError::Nothing);
    }

    #[test]
    fn shards_of_other_builds_worlds_plans_or_ranges_are_refused() {
        let check = |change: &dyn Fn(&mut Sweep), expected: &str| {
            let mut parts = shards(0, 8, 2);
            change(&mut parts[1].sweep);
            let error = merge(parts).unwrap_err().to_string();
            assert!(error.contains("shard-2.json"), "names the file: {error}");
            assert!(error.contains(expected), "{error}");
        };
        check(
            &|s| s.provenance.as_mut().unwrap().commit = Some("def".to_owned()),
            "different builds (redfence 0.1.0 (abc) vs redfence 0.1.0 (def))",
        );
        check(&|s| s.provenance = None, "vs no provenance");
        check(
            &|s| s.world = WorldKind::Real,
            "in the sim world and shard-2.json in the real world",
        );
        check(
            &|s| s.scenarios.reverse(),
            "different scenarios (stale-worker-pause, mutual-exclusion vs mutual-exclusion, stale-worker-pause)",
        );
        check(
            &|s| {
                s.scenarios[1]
                    .params
                    .push(crate::record::Param::new("n", 1, "d"))
            },
            "(mutual-exclusion as one describes it vs mutual-exclusion with other parameters",
        );
        check(
            &|s| {
                s.protocols.pop();
            },
            "different protocols",
        );
        check(
            &|s| s.seeds = 9,
            "different seed ranges (8 seeds from 0 vs 9 seeds from 0)",
        );
        check(&|s| s.schema_version = 2, "schema_version 2");
        check(
            &|s| {
                s.cells.pop();
            },
            "is not a sweep as `redfence run` writes one: 5 cells",
        );
        check(&|s| s.cells[0].runs += 1, "ran 5 seeds");
        check(
            &|s| s.cells[0].first_run.as_mut().unwrap().seed = 0,
            "keeps a run of seed 0, outside its shard's seeds",
        );
    }
}
