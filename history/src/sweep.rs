//! The result of a sweep — every scenario × protocol cell over many seeds —
//! and the pure reduction that builds it from run records.
//!
//! A runner (in `redfence-scenarios`) produces [`RunRecord`]s; a [`CellAcc`]
//! folds one cell's records in seed order into tallies, its first run and its
//! first failure; [`CellAcc::finish`] judges the cell against what the
//! mutation table promised; [`score`] turns a mutant's cells into its
//! mutation score. Memory stays bounded: a cell keeps its tallies and at
//! most two full records, never every history. The result does not depend on
//! the order records arrive in, so sweeps on any number of threads agree.

use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::mutation::{is_mutant, promised};
use crate::property::Property;
use crate::record::{Param, RunRecord, WorldKind};
use crate::verdict::Status;

/// Version of the [`Sweep`] JSON schema; readers refuse other versions
/// (version 2 gave fault records their typed `fault`; version 3 added the
/// `not-exercised` verdict status, the tallies' `not_exercised` count and
/// the `unfenced-stale-write` property).
pub const SCHEMA_VERSION: u32 = 3;

/// One shard of the seed space: seeds whose `seed % count == index - 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// 1-based shard number.
    pub index: u64,
    /// How many shards the space is split into.
    pub count: u64,
}

/// A shard written wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    /// Not `I/N`.
    #[error("shard {0:?} is not of the form I/N (e.g. 2/4)")]
    Format(String),
    /// `I` outside `1..=N`, or `N` zero.
    #[error("shard {index}/{count}: I must be in 1..=N and N at least 1")]
    Range {
        /// I.
        index: u64,
        /// N.
        count: u64,
    },
}

impl FromStr for Shard {
    type Err = ShardError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let format = || ShardError::Format(text.to_owned());
        let (i, n) = text.split_once('/').ok_or_else(format)?;
        let index: u64 = i.trim().parse().map_err(|_| format())?;
        let count: u64 = n.trim().parse().map_err(|_| format())?;
        if count == 0 || index == 0 || index > count {
            return Err(ShardError::Range { index, count });
        }
        Ok(Self { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// Whether `seed` belongs to this shard.
    pub fn contains(self, seed: u64) -> bool {
        seed % self.count == self.index - 1
    }
}

/// How one property fared across a cell's seeds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// The property.
    pub property: Property,
    /// Seeds on which it was exercised and held.
    pub held: u64,
    /// Seeds on which it was violated.
    pub violated: u64,
    /// Seeds on which it could not be decided.
    pub undecided: u64,
    /// Seeds that gave it nothing to judge: neither a pass nor a failure,
    /// and never counted as held.
    pub not_exercised: u64,
}

impl Tally {
    /// Whether any seed gave the property something to judge and the
    /// checker decided it (held or violated).
    pub fn exercised(&self) -> bool {
        self.held + self.violated > 0
    }
}

/// What a cell was expected to show.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Expectation {
    /// No property is violated (the reference, everywhere); a property the
    /// run did not exercise is not a failure, and not a pass either.
    Pass,
    /// These properties are violated on some seed (a promised catch).
    Catch(Vec<Property>),
    /// Nothing promised (a mutant outside the scenarios meant for it).
    Any,
}

/// How a cell came out against its expectation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CellStatus {
    /// Expected to pass and did: no property violated on any seed (each
    /// held, or was not exercised, or could not be decided; the tallies say
    /// which).
    Passed,
    /// A promised catch happened.
    Caught,
    /// Nothing promised; it failed anyway (caught here too).
    AlsoCaught,
    /// Nothing promised; it passed.
    NotCaught,
    /// A promised catch did not happen within the seeds run.
    Missed,
    /// A promised catch cannot happen in this world: the property needs
    /// ground truth the world could not provide (a real server's recording
    /// had a gap), and it was undecided on every seed.
    Undecidable,
    /// Expected to pass, and failed: a defect in the protocol (or harness).
    Failed,
}

/// One scenario × protocol across the sweep's seeds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// The scenario.
    pub scenario: String,
    /// The protocol.
    pub protocol: String,
    /// The world.
    pub world: WorldKind,
    /// Seeds run.
    pub runs: u64,
    /// Seeds with a violation or an error.
    pub failed_runs: u64,
    /// Seeds whose run broke or whose script stopped early.
    pub errors: u64,
    /// Per property, in [`Property::ALL`] order.
    pub tallies: Vec<Tally>,
    /// What was expected.
    pub expectation: Expectation,
    /// How it came out.
    pub status: CellStatus,
    /// 1-based position, in seed order, of the first seed that showed the
    /// expected violation (or, with nothing promised, any failure).
    pub seeds_to_catch: Option<u64>,
    /// The first failing run (full history), if any.
    pub first_failure: Option<RunRecord>,
    /// The first run (full history), for timelines of passing cells.
    pub first_run: Option<RunRecord>,
}

/// A mutant's score across the scenarios meant to catch it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MutantScore {
    /// The mutant.
    pub mutant: String,
    /// Promised catches in this sweep.
    pub promised: u64,
    /// Promised catches that happened.
    pub caught: u64,
    /// Scenarios (beyond the promised ones) that also caught it.
    pub also_caught_by: Vec<String>,
    /// Fewest seeds any promised scenario needed.
    pub seeds_to_catch: Option<u64>,
}

/// A scenario as listed in a sweep (so reports need nothing else).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScenarioInfo {
    /// Name.
    pub name: String,
    /// What it tests.
    pub description: String,
    /// The properties it targets.
    pub targets: Vec<Property>,
    /// Its parameters.
    pub params: Vec<Param>,
}

/// A protocol as listed in a sweep.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtocolInfo {
    /// Name.
    pub name: String,
    /// What it does (for a mutant: what is broken).
    pub description: String,
}

/// The result of a sweep. See the module doc.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    /// [`SCHEMA_VERSION`] at the time of writing.
    pub schema_version: u32,
    /// The world the sweep ran in.
    pub world: WorldKind,
    /// First seed.
    pub seed_first: u64,
    /// Seeds per cell before sharding.
    pub seeds: u64,
    /// The shard run, if any.
    pub shard: Option<Shard>,
    /// The scenarios, in plan order.
    pub scenarios: Vec<ScenarioInfo>,
    /// The protocols, in plan order.
    pub protocols: Vec<ProtocolInfo>,
    /// Cells, scenario-major in plan order.
    pub cells: Vec<Cell>,
    /// Mutation score per mutant in the plan.
    pub mutants: Vec<MutantScore>,
    /// What produced the sweep: redfence's version and commit, and in the
    /// real world the provider and the servers' versions. Absent in results
    /// written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<crate::provenance::Provenance>,
}

impl Sweep {
    /// This sweep with its cells and mutation score built from `accs`, one
    /// accumulator per scenario × protocol, scenario-major in the order of
    /// [`Sweep::scenarios`] and [`Sweep::protocols`]: each cell is finished
    /// against the mutation table and every mutant among the protocols is
    /// scored. A sweep runner and a merge of shards both end here, so
    /// their results are built the same way.
    pub fn with_cells(mut self, accs: Vec<CellAcc>) -> Self {
        let protocols_count = self.protocols.len().max(1);
        self.cells = accs
            .into_iter()
            .enumerate()
            .map(|(index, acc)| {
                acc.finish(
                    self.world,
                    &self.scenarios[index / protocols_count].name,
                    &self.protocols[index % protocols_count].name,
                )
            })
            .collect();
        self.mutants = self
            .protocols
            .iter()
            .filter(|p| is_mutant(&p.name))
            .map(|p| score(&p.name, &self.cells))
            .collect();
        self
    }

    /// The cell of `scenario` × `protocol`.
    pub fn cell(&self, scenario: &str, protocol: &str) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.scenario == scenario && c.protocol == protocol)
    }

    /// Cells that had to pass and failed: the reference's, or a team's own
    /// protocol's (anything that is not a shipped mutant).
    pub fn failed_cells(&self) -> Vec<&Cell> {
        self.cells
            .iter()
            .filter(|c| c.status == CellStatus::Failed)
            .collect()
    }

    /// Whether every cell that had to pass did, and every promised catch
    /// happened.
    pub fn ok(&self) -> bool {
        self.failed_cells().is_empty() && self.missed().is_empty()
    }

    /// Cells where a promised catch did not happen.
    pub fn missed(&self) -> Vec<&Cell> {
        self.cells
            .iter()
            .filter(|c| c.status == CellStatus::Missed)
            .collect()
    }

    /// The properties no seed of `protocol`'s cells gave anything to judge
    /// (in [`Property::ALL`] order; empty if the protocol ran nowhere): a
    /// summary must not count them as held.
    pub fn never_exercised(&self, protocol: &str) -> Vec<Property> {
        let cells: Vec<&Cell> = self
            .cells
            .iter()
            .filter(|c| c.protocol == protocol)
            .collect();
        if cells.is_empty() {
            return Vec::new();
        }
        Property::ALL
            .into_iter()
            .filter(|&p| {
                cells.iter().all(|c| {
                    c.tallies
                        .iter()
                        .find(|t| t.property == p)
                        .is_none_or(|t| !t.exercised())
                })
            })
            .collect()
    }

    /// The sweep in one line: per protocol that had to pass, how many
    /// scenarios it held (violated nothing in) and which properties no
    /// scenario exercised; for the mutants, how many promised catches
    /// happened (`my-lock: 11/13 scenarios held (failed:
    /// stale-worker-pause, late-unlock) (never exercised:
    /// unfenced-stale-write)`).
    pub fn verdict_line(&self) -> String {
        let mut parts = Vec::new();
        for protocol in &self.protocols {
            let cells: Vec<&Cell> = self
                .cells
                .iter()
                .filter(|c| c.protocol == protocol.name && c.expectation == Expectation::Pass)
                .collect();
            if cells.is_empty() {
                continue;
            }
            let failed: Vec<&str> = cells
                .iter()
                .filter(|c| c.status == CellStatus::Failed)
                .map(|c| c.scenario.as_str())
                .collect();
            let mut part = format!(
                "{}: {}/{} scenarios held",
                protocol.name,
                cells.len() - failed.len(),
                cells.len()
            );
            if !failed.is_empty() {
                part.push_str(&format!(" (failed: {})", failed.join(", ")));
            }
            let idle: Vec<&str> = self
                .never_exercised(&protocol.name)
                .into_iter()
                .map(Property::name)
                .collect();
            if !idle.is_empty() {
                part.push_str(&format!(" (never exercised: {})", idle.join(", ")));
            }
            parts.push(part);
        }
        let promised: u64 = self.mutants.iter().map(|m| m.promised).sum();
        if promised > 0 {
            let caught: u64 = self.mutants.iter().map(|m| m.caught).sum();
            // A mutant with nothing promised in this sweep is not counted.
            let mutants: Vec<&MutantScore> =
                self.mutants.iter().filter(|m| m.promised > 0).collect();
            parts.push(format!(
                "{}/{} mutants caught ({caught}/{promised} promised catches)",
                mutants.iter().filter(|m| m.caught == m.promised).count(),
                mutants.len()
            ));
        }
        parts.join("; ")
    }

    /// What a failing sweep has to say, for a test's failure message: the
    /// verdict line, then every cell that had to pass and failed (each
    /// violated property with its explanation, or why the run broke, and
    /// the line that replays it) and every promised catch that did not
    /// happen. Empty when [`Sweep::ok`].
    pub fn failures_text(&self) -> String {
        if self.ok() {
            return String::new();
        }
        let mut out = self.verdict_line();
        for cell in self.failed_cells() {
            out.push_str(&format!("\n\n{} × {}:", cell.scenario, cell.protocol));
            if let Some(run) = &cell.first_failure {
                for verdict in run.verdicts.iter().filter(|v| v.status == Status::Violated) {
                    out.push_str(&format!(
                        "\n  violates {}: {}",
                        verdict.property.name(),
                        verdict.explanation
                    ));
                }
                if let Some(error) = &run.error {
                    out.push_str(&format!("\n  run: {error}"));
                }
                out.push_str(&format!("\n  replay: {}", run.replay));
            }
        }
        for cell in self.missed() {
            out.push_str(&format!(
                "\n\n{} × {}: a promised catch did not happen in {} seeds",
                cell.scenario, cell.protocol, cell.runs
            ));
        }
        out
    }

    /// Panics with [`Sweep::failures_text`] unless [`Sweep::ok`]: the
    /// assertion a team's test makes after verifying its lock, so that a
    /// failure says what broke, why, and how to replay it.
    #[track_caller]
    pub fn assert_ok(&self) {
        assert!(self.ok(), "{}", self.failures_text());
    }
}

/// One cell being reduced: feed it every run of the cell with [`CellAcc::add`],
/// in any order, then [`CellAcc::finish`] it.
#[derive(Debug)]
pub struct CellAcc {
    runs: u64,
    failed_runs: u64,
    errors: u64,
    tallies: Vec<Tally>,
    /// (position, record) of the first failure so far.
    first_failure: Option<(u64, RunRecord)>,
    /// Position of the first seed showing a promised violation.
    first_promised: Option<u64>,
    first_run: Option<(u64, RunRecord)>,
}

impl Default for CellAcc {
    fn default() -> Self {
        Self::new()
    }
}

impl CellAcc {
    /// An empty cell.
    pub fn new() -> Self {
        Self {
            runs: 0,
            failed_runs: 0,
            errors: 0,
            tallies: Property::ALL
                .iter()
                .map(|&property| Tally {
                    property,
                    held: 0,
                    violated: 0,
                    undecided: 0,
                    not_exercised: 0,
                })
                .collect(),
            first_failure: None,
            first_promised: None,
            first_run: None,
        }
    }

    /// Adds the run at 1-based seed `position`; `promised` are the properties
    /// the mutation table promises this cell violates.
    pub fn add(&mut self, position: u64, record: RunRecord, promised: &[Property]) {
        self.runs += 1;
        if record.error.is_some() {
            self.errors += 1;
        }
        for verdict in &record.verdicts {
            let tally = &mut self.tallies[Property::ALL
                .iter()
                .position(|&p| p == verdict.property)
                .expect("every property is in ALL")];
            match verdict.status {
                Status::Held => tally.held += 1,
                Status::Violated => tally.violated += 1,
                Status::Undecided => tally.undecided += 1,
                Status::NotExercised => tally.not_exercised += 1,
            }
        }
        let hit = record.violated().iter().any(|p| promised.contains(p));
        if hit && self.first_promised.is_none_or(|p| position < p) {
            self.first_promised = Some(position);
        }
        if record.failed()
            && self
                .first_failure
                .as_ref()
                .is_none_or(|(p, _)| position < *p)
        {
            self.failed_runs += 1;
            self.first_failure = Some((position, record.clone()));
        } else if record.failed() {
            self.failed_runs += 1;
        }
        if self.first_run.as_ref().is_none_or(|(p, _)| position < *p) {
            self.first_run = Some((position, record));
        }
    }

    /// Folds in `cell`, the finished cell of the same scenario × protocol
    /// over other seeds of the same sweep (one shard of it), as if each of
    /// its runs had been [`CellAcc::add`]ed: counts add up, and each "first"
    /// is the one at the smallest position, so the order shards come in
    /// does not matter. `seed_at` maps the cell's own 1-based positions to
    /// seeds; `position` maps a seed to its 1-based position in the whole
    /// sweep.
    pub fn absorb(
        &mut self,
        cell: Cell,
        seed_at: impl Fn(u64) -> u64,
        position: impl Fn(u64) -> u64,
    ) {
        self.runs += cell.runs;
        self.failed_runs += cell.failed_runs;
        self.errors += cell.errors;
        for theirs in &cell.tallies {
            if let Some(mine) = self
                .tallies
                .iter_mut()
                .find(|t| t.property == theirs.property)
            {
                mine.held += theirs.held;
                mine.violated += theirs.violated;
                mine.undecided += theirs.undecided;
                mine.not_exercised += theirs.not_exercised;
            }
        }
        // Only a promised catch's position is the first promised violation
        // (`finish` gives an unpromised failure's position otherwise).
        if let (Expectation::Catch(_), CellStatus::Caught, Some(own)) =
            (&cell.expectation, cell.status, cell.seeds_to_catch)
        {
            let at = position(seed_at(own));
            if self.first_promised.is_none_or(|p| at < p) {
                self.first_promised = Some(at);
            }
        }
        for (record, first) in [
            (cell.first_failure, &mut self.first_failure),
            (cell.first_run, &mut self.first_run),
        ] {
            if let Some(record) = record {
                let at = position(record.seed);
                if first.as_ref().is_none_or(|(p, _)| at < *p) {
                    *first = Some((at, record));
                }
            }
        }
    }
}

impl CellAcc {
    /// The finished cell of `scenario` × `protocol` in `world`.
    pub fn finish(self, world: WorldKind, scenario: &str, protocol: &str) -> Cell {
        let acc = self;
        let promised = promised(protocol, scenario);
        // The reference and any protocol that is not a shipped mutant (a
        // team's own lock) must pass; a mutant must be caught where promised.
        let mutant = is_mutant(protocol);
        let expectation = if !mutant {
            Expectation::Pass
        } else if promised.is_empty() {
            Expectation::Any
        } else {
            Expectation::Catch(promised)
        };
        let any_failure = acc.failed_runs > 0;
        let (status, seeds_to_catch) = match &expectation {
            Expectation::Pass if any_failure => (CellStatus::Failed, None),
            Expectation::Pass => (CellStatus::Passed, None),
            Expectation::Catch(promised) => match acc.first_promised {
                Some(position) => (CellStatus::Caught, Some(position)),
                None if undecided_everywhere(&acc.tallies, promised) => {
                    (CellStatus::Undecidable, None)
                }
                None => (CellStatus::Missed, None),
            },
            Expectation::Any if any_failure => (
                CellStatus::AlsoCaught,
                acc.first_failure.as_ref().map(|(p, _)| *p),
            ),
            Expectation::Any => (CellStatus::NotCaught, None),
        };
        Cell {
            scenario: scenario.to_owned(),
            protocol: protocol.to_owned(),
            world,
            runs: acc.runs,
            failed_runs: acc.failed_runs,
            errors: acc.errors,
            tallies: acc.tallies,
            expectation,
            status,
            seeds_to_catch,
            first_failure: acc.first_failure.map(|(_, r)| r),
            first_run: acc.first_run.map(|(_, r)| r),
        }
    }
}

/// Whether every one of `properties` was undecided on every seed run that
/// gave it something to judge (never held, never violated, undecided at
/// least once). A property that was merely not exercised on every seed is
/// not undecidable: the world could have judged it, the scenario gave it
/// nothing — a promised catch that did not happen (`Missed`).
fn undecided_everywhere(tallies: &[Tally], properties: &[Property]) -> bool {
    properties.iter().all(|p| {
        tallies
            .iter()
            .find(|t| t.property == *p)
            .is_some_and(|t| t.held == 0 && t.violated == 0 && t.undecided > 0)
    })
}

/// The mutation score of `mutant` from a sweep's cells.
pub fn score(mutant: &str, cells: &[Cell]) -> MutantScore {
    let mine: Vec<&Cell> = cells.iter().filter(|c| c.protocol == mutant).collect();
    // A catch this world cannot decide is neither promised nor missed here.
    let promised: Vec<&&Cell> = mine
        .iter()
        .filter(|c| matches!(c.expectation, Expectation::Catch(_)))
        .filter(|c| c.status != CellStatus::Undecidable)
        .collect();
    let caught = promised
        .iter()
        .filter(|c| c.status == CellStatus::Caught)
        .count() as u64;
    MutantScore {
        mutant: mutant.to_owned(),
        promised: promised.len() as u64,
        caught,
        also_caught_by: mine
            .iter()
            .filter(|c| c.status == CellStatus::AlsoCaught)
            .map(|c| c.scenario.clone())
            .collect(),
        seeds_to_catch: promised.iter().filter_map(|c| c.seeds_to_catch).min(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::names::{mutant, protocol, scenario};
    use crate::record::Metrics;
    use crate::verdict::Verdict;

    /// A run whose every property has `status`, except `violated` ones.
    pub(crate) fn run(status: Status, violated: &[Property]) -> RunRecord {
        let verdicts = Property::ALL
            .iter()
            .map(|&p| match (violated.contains(&p), status) {
                (true, _) => Verdict::violated(
                    p,
                    "x",
                    crate::verdict::HistorySlice {
                        op_ids: vec![1],
                        ..Default::default()
                    },
                ),
                (false, Status::Held) => Verdict::held(p, "x"),
                (false, Status::Undecided) => Verdict::undecided(p, "x"),
                (false, _) => Verdict::not_exercised(p, "x"),
            })
            .collect();
        RunRecord {
            scenario: "s".to_owned(),
            protocol: "p".to_owned(),
            world: WorldKind::Sim,
            seed: 0,
            params: Vec::new(),
            verdicts,
            history: None,
            metrics: Metrics::default(),
            error: None,
            replay: "r".to_owned(),
        }
    }

    /// The cell of `protocol` × `scenario` folded from `runs`, the first
    /// at seed position 1.
    pub(crate) fn cell(protocol: &str, scenario: &str, runs: Vec<RunRecord>) -> Cell {
        let promised = promised(protocol, scenario);
        let mut acc = CellAcc::new();
        for (i, record) in runs.into_iter().enumerate() {
            acc.add(i as u64 + 1, record, &promised);
        }
        acc.finish(WorldKind::Sim, scenario, protocol)
    }

    #[test]
    fn not_exercised_is_tallied_apart_from_held_and_fails_nothing() {
        let c = cell(
            protocol::REFERENCE,
            scenario::MUTUAL_EXCLUSION,
            vec![run(Status::NotExercised, &[]), run(Status::Held, &[])],
        );
        assert_eq!(c.status, CellStatus::Passed);
        for t in &c.tallies {
            assert_eq!((t.held, t.not_exercised, t.violated), (1, 1, 0));
            assert!(t.exercised());
        }
        let never = cell(
            protocol::REFERENCE,
            scenario::MUTUAL_EXCLUSION,
            vec![run(Status::NotExercised, &[])],
        );
        assert_eq!(never.status, CellStatus::Passed);
        assert!(never.tallies.iter().all(|t| !t.exercised() && t.held == 0));
    }

    #[test]
    fn a_promised_property_never_exercised_is_a_miss_not_undecidable() {
        let (m, s) = (mutant::NO_FENCE_CHECK, scenario::STALE_WORKER_PAUSE);
        let missed = cell(m, s, vec![run(Status::NotExercised, &[])]);
        assert_eq!(missed.status, CellStatus::Missed);
        let undecidable = cell(m, s, vec![run(Status::Undecided, &[])]);
        assert_eq!(undecidable.status, CellStatus::Undecidable);
        let mixed = cell(
            m,
            s,
            vec![run(Status::Undecided, &[]), run(Status::NotExercised, &[])],
        );
        assert_eq!(mixed.status, CellStatus::Undecidable);
        let caught = cell(
            m,
            s,
            vec![
                run(Status::NotExercised, &[]),
                run(Status::NotExercised, &[Property::FenceOrder]),
            ],
        );
        assert_eq!(
            (caught.status, caught.seeds_to_catch),
            (CellStatus::Caught, Some(2))
        );
        let score = score(m, &[missed, caught]);
        assert_eq!((score.promised, score.caught), (2, 1));
    }

    #[test]
    fn the_verdict_line_names_what_was_never_exercised() {
        let mut held_once = run(Status::NotExercised, &[]);
        held_once.verdicts[0] = Verdict::held(Property::ALL[0], "x");
        let cells = vec![
            cell(
                protocol::REFERENCE,
                scenario::MUTUAL_EXCLUSION,
                vec![held_once],
            ),
            cell(
                protocol::REFERENCE,
                scenario::LATE_UNLOCK,
                vec![run(Status::NotExercised, &[])],
            ),
        ];
        let sweep = Sweep {
            schema_version: SCHEMA_VERSION,
            world: WorldKind::Sim,
            seed_first: 0,
            seeds: 1,
            shard: None,
            scenarios: Vec::new(),
            protocols: vec![ProtocolInfo {
                name: protocol::REFERENCE.to_owned(),
                description: "d".to_owned(),
            }],
            cells,
            mutants: Vec::new(),
            provenance: None,
        };
        let idle = sweep.never_exercised(protocol::REFERENCE);
        assert_eq!(idle, Property::ALL[1..].to_vec());
        let line = sweep.verdict_line();
        assert!(
            line.starts_with(
                "reference: 2/2 scenarios held (never exercised: stale-owner-rejected, "
            ),
            "{line}"
        );
        assert!(!line.contains(Property::ALL[0].name()), "{line}");
        assert!(sweep.never_exercised("absent").is_empty());
    }

    #[test]
    fn tallies_serialise_the_new_count() {
        let c = cell(
            protocol::REFERENCE,
            scenario::MUTUAL_EXCLUSION,
            vec![run(Status::NotExercised, &[])],
        );
        let json = serde_json::to_string(&c.tallies[0]).unwrap();
        assert_eq!(
            json,
            r#"{"property":"fence-order","held":0,"violated":0,"undecided":0,"not_exercised":1}"#
        );
        assert_eq!(SCHEMA_VERSION, 3);
    }
}
