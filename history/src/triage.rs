//! Failure triage: a sweep's findings grouped by signature — the protocol
//! and what went wrong (a property it violated, a run that broke, a promised
//! catch that did not happen) — across scenarios and seeds, each group with
//! its counts and the smallest seed to replay.
//!
//! Why: one defect trips the same property in many scenarios (a static owner
//! token issues a fence twice wherever two workers acquire), and one replay
//! line per failing cell buries what a reader needs: how many distinct
//! defects there are, whether any of them is unexpected, and one command that
//! shows each. Pure: it reads only the [`Sweep`], so the CLI, reports and
//! tests group the same way.
//!
//! A cell keeps only its first failing run, so a group's sample is the
//! smallest seed among its cells' first failures that show the signature;
//! when no first failure shows it (the property tripped only on later
//! seeds), the group's smallest first failure stands in, marked so.

use crate::property::Property;
use crate::record::{RunRecord, SCHEDULE_PARAM};
use crate::sweep::{Cell, CellStatus, Expectation, Sweep};

/// What went wrong, the second half of a signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Finding {
    /// The property was violated.
    Violated(Property),
    /// The run broke or its script stopped early.
    RunError,
    /// A promised catch by this property did not happen.
    Missed(Property),
}

impl Finding {
    /// The finding in a few words (`fence-uniqueness`, `run error`,
    /// `fail-closed not caught`).
    pub fn words(self) -> String {
        match self {
            Finding::Violated(p) => p.name().to_owned(),
            Finding::RunError => "run error".to_owned(),
            Finding::Missed(p) => format!("{} not caught", p.name()),
        }
    }
}

/// Whether a group is news, in the order a reader should see them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Concern {
    /// A defect: a protocol that must pass failed, or a promised catch did
    /// not happen.
    Unexpected,
    /// A mutant caught as a scenario promised: the harness did its job.
    Promised,
    /// A mutant caught where nothing was promised.
    Extra,
}

/// The run a group's replay line comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Its scenario.
    pub scenario: String,
    /// Its seed.
    pub seed: u64,
    /// Its fault schedule, for random faults.
    pub schedule: Option<String>,
    /// The line that replays it.
    pub replay: String,
    /// The checker's words for the finding on this run, if it shows it.
    pub explanation: Option<String>,
    /// Whether this run shows the group's finding (else it is the group's
    /// smallest failing run, standing in).
    pub shows_finding: bool,
}

/// One signature and where it showed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// The protocol.
    pub protocol: String,
    /// What went wrong.
    pub finding: Finding,
    /// Whether it is news.
    pub concern: Concern,
    /// The scenarios it showed in, in plan order.
    pub scenarios: Vec<String>,
    /// Runs that showed it, over those scenarios (for a missed catch: runs
    /// that did not catch it).
    pub runs_showing: u64,
    /// Runs of those scenarios.
    pub runs: u64,
    /// The smallest seed to replay, if any run was kept.
    pub sample: Option<Sample>,
}

impl Group {
    /// `protocol × finding`.
    pub fn signature(&self) -> String {
        format!("{} × {}", self.protocol, self.finding.words())
    }
}

/// The groups of `sweep`: unexpected ones first, then promised catches,
/// then the rest; within each, protocols in plan order and findings in
/// [`Property::ALL`] order.
pub fn groups(sweep: &Sweep) -> Vec<Group> {
    let mut out = Vec::new();
    // Bounded by the plan's protocols × (properties × 2 + 1).
    for protocol in &sweep.protocols {
        let cells: Vec<&Cell> = sweep
            .cells
            .iter()
            .filter(|c| c.protocol == protocol.name)
            .collect();
        let findings = Property::ALL
            .iter()
            .map(|&p| Finding::Violated(p))
            .chain([Finding::RunError])
            .chain(Property::ALL.iter().map(|&p| Finding::Missed(p)));
        for finding in findings {
            if let Some(group) = group(sweep, &protocol.name, &cells, finding) {
                out.push(group);
            }
        }
    }
    // Stable: plan and property order stay within a concern.
    out.sort_by_key(|g| g.concern);
    out
}

/// How many of `cell`'s runs show `finding` (0: the cell is not in the
/// group).
fn runs_showing(cell: &Cell, finding: Finding) -> u64 {
    let violated = |p: Property| {
        cell.tallies
            .iter()
            .find(|t| t.property == p)
            .map_or(0, |t| t.violated)
    };
    match finding {
        Finding::Violated(p) => violated(p),
        Finding::RunError => cell.errors,
        Finding::Missed(p) => match &cell.expectation {
            Expectation::Catch(promised)
                if cell.status == CellStatus::Missed && promised.contains(&p) =>
            {
                cell.runs
            }
            _ => 0,
        },
    }
}

/// Whether `record` shows `finding`, and the checker's words for it.
fn shows(record: &RunRecord, finding: Finding) -> Option<Option<String>> {
    match finding {
        Finding::Violated(p) => record
            .verdicts
            .iter()
            .find(|v| v.property == p && v.status == crate::Status::Violated)
            .map(|v| Some(v.explanation.clone())),
        Finding::RunError => record.error.clone().map(Some),
        // Every run of a missed cell shows the miss; there are no words.
        Finding::Missed(_) => Some(None),
    }
}

fn sample(record: &RunRecord, explanation: Option<String>, shows_finding: bool) -> Sample {
    Sample {
        scenario: record.scenario.clone(),
        seed: record.seed,
        schedule: record
            .params
            .iter()
            .find(|p| p.name == SCHEDULE_PARAM)
            .map(|p| p.value.clone()),
        replay: record.replay.clone(),
        explanation,
        shows_finding,
    }
}

fn group(sweep: &Sweep, protocol: &str, cells: &[&Cell], finding: Finding) -> Option<Group> {
    let mine: Vec<&Cell> = cells
        .iter()
        .copied()
        .filter(|c| runs_showing(c, finding) > 0)
        .collect();
    if mine.is_empty() {
        return None;
    }
    let must_pass = mine.iter().any(|c| c.expectation == Expectation::Pass);
    let concern = match finding {
        _ if must_pass => Concern::Unexpected,
        Finding::Missed(_) => Concern::Unexpected,
        Finding::Violated(p)
            if mine
                .iter()
                .any(|c| matches!(&c.expectation, Expectation::Catch(ps) if ps.contains(&p))) =>
        {
            Concern::Promised
        }
        _ => Concern::Extra,
    };
    // A missed catch has no failing run: its first run is what to watch.
    let kept = |c: &Cell| match finding {
        Finding::Missed(_) => c.first_run.clone(),
        _ => c.first_failure.clone(),
    };
    let order = |s: &str| sweep.scenarios.iter().position(|i| i.name == s);
    let smallest = |records: Vec<(RunRecord, Option<String>)>| {
        records
            .into_iter()
            .min_by_key(|(r, _)| (r.seed, order(&r.scenario)))
    };
    let records: Vec<RunRecord> = mine.iter().filter_map(|&c| kept(c)).collect();
    let showing: Vec<(RunRecord, Option<String>)> = records
        .iter()
        .filter_map(|r| shows(r, finding).map(|words| (r.clone(), words)))
        .collect();
    let sample = match smallest(showing) {
        Some((record, words)) => Some(sample(&record, words, true)),
        None => smallest(records.into_iter().map(|r| (r, None)).collect())
            .map(|(record, _)| sample(&record, None, false)),
    };
    Some(Group {
        protocol: protocol.to_owned(),
        finding,
        concern,
        scenarios: mine.iter().map(|c| c.scenario.clone()).collect(),
        runs_showing: mine.iter().map(|c| runs_showing(c, finding)).sum(),
        runs: mine.iter().map(|c| c.runs).sum(),
        sample,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::{mutant, protocol, scenario};
    use crate::sweep::tests::{cell, run};
    use crate::sweep::{ProtocolInfo, ScenarioInfo, SCHEMA_VERSION};
    use crate::{Status, WorldKind};

    /// A run of `scenario` × `protocol` on `seed` violating `violated`.
    fn seeded(scenario: &str, protocol: &str, seed: u64, violated: &[Property]) -> RunRecord {
        let mut record = run(Status::Held, violated);
        record.scenario = scenario.to_owned();
        record.protocol = protocol.to_owned();
        record.seed = seed;
        record.replay = format!("replay {scenario} {protocol} {seed}");
        record
    }

    fn sweep_of(cells: Vec<Cell>) -> Sweep {
        let mut scenarios: Vec<ScenarioInfo> = Vec::new();
        let mut protocols: Vec<ProtocolInfo> = Vec::new();
        for c in &cells {
            if !scenarios.iter().any(|s| s.name == c.scenario) {
                scenarios.push(ScenarioInfo {
                    name: c.scenario.clone(),
                    description: String::new(),
                    targets: Vec::new(),
                    params: Vec::new(),
                });
            }
            if !protocols.iter().any(|p| p.name == c.protocol) {
                protocols.push(ProtocolInfo {
                    name: c.protocol.clone(),
                    description: String::new(),
                });
            }
        }
        Sweep {
            schema_version: SCHEMA_VERSION,
            world: WorldKind::Sim,
            seed_first: 0,
            seeds: 3,
            shard: None,
            scenarios,
            protocols,
            cells,
            mutants: Vec::new(),
            provenance: None,
        }
    }

    const FU: Property = Property::FenceUniqueness;

    #[test]
    fn one_property_tripped_in_many_scenarios_is_one_group_with_its_smallest_seed() {
        let m = mutant::STATIC_OWNER;
        let mut cells = Vec::new();
        // Promised in mutual-exclusion (from seed 2 there), also elsewhere.
        for (s, first_seed) in [
            (scenario::LATE_UNLOCK, 1),
            (scenario::MUTUAL_EXCLUSION, 2),
            (scenario::STALE_WORKER_PAUSE, 1),
        ] {
            let runs = (first_seed..3)
                .map(|seed| seeded(s, m, seed, &[FU]))
                .collect();
            cells.push(cell(m, s, runs));
        }
        let groups = groups(&sweep_of(cells));
        assert_eq!(groups.len(), 1, "{groups:#?}");
        let g = &groups[0];
        assert_eq!(g.signature(), "static-owner × fence-uniqueness");
        assert_eq!(g.concern, Concern::Promised);
        assert_eq!(g.scenarios.len(), 3);
        assert_eq!((g.runs_showing, g.runs), (5, 5));
        let sample = g.sample.as_ref().unwrap();
        // Seed 1 in two scenarios: the one first in plan order.
        assert_eq!(
            (sample.scenario.as_str(), sample.seed),
            (scenario::LATE_UNLOCK, 1)
        );
        assert!(sample.shows_finding);
        assert_eq!(sample.explanation.as_deref(), Some("x"));
        assert_eq!(sample.replay, "replay late-unlock static-owner 1");
    }

    #[test]
    fn a_must_pass_failure_and_a_missed_catch_come_first() {
        let (r, m) = (protocol::REFERENCE, mutant::NO_FENCE_CHECK);
        let cells = vec![
            cell(
                m,
                scenario::STALE_WORKER_PAUSE,
                vec![seeded(scenario::STALE_WORKER_PAUSE, m, 0, &[])],
            ),
            cell(
                m,
                scenario::FENCE_REJECTED,
                vec![seeded(
                    scenario::FENCE_REJECTED,
                    m,
                    0,
                    &[Property::FenceOrder],
                )],
            ),
            cell(
                r,
                scenario::LATE_UNLOCK,
                vec![
                    seeded(scenario::LATE_UNLOCK, r, 0, &[]),
                    seeded(scenario::LATE_UNLOCK, r, 1, &[Property::UnlockSafety]),
                ],
            ),
        ];
        let groups = groups(&sweep_of(cells));
        let seen: Vec<(String, Concern)> =
            groups.iter().map(|g| (g.signature(), g.concern)).collect();
        assert_eq!(
            seen,
            [
                // Plan order: the mutant's cells came first.
                (
                    "no-fence-check × fence-order not caught".to_owned(),
                    Concern::Unexpected
                ),
                ("reference × unlock-safety".to_owned(), Concern::Unexpected),
                ("no-fence-check × fence-order".to_owned(), Concern::Promised),
            ]
        );
        let missed = &groups[0];
        assert_eq!(missed.scenarios, [scenario::STALE_WORKER_PAUSE]);
        let sample = missed.sample.as_ref().unwrap();
        assert_eq!(sample.replay, "replay stale-worker-pause no-fence-check 0");
        assert_eq!((groups[1].runs_showing, groups[1].runs), (1, 2));
        assert_eq!(groups[1].sample.as_ref().unwrap().seed, 1);
    }

    #[test]
    fn a_finding_only_on_later_seeds_borrows_the_first_failure_and_says_so() {
        let m = mutant::SET_WITHOUT_NX;
        let s = scenario::CONCURRENT_JOBS;
        let no = Property::NoOverlappingHolders;
        let runs = vec![seeded(s, m, 0, &[FU]), seeded(s, m, 1, &[FU, no])];
        let groups = groups(&sweep_of(vec![cell(m, s, runs)]));
        let g = groups.iter().find(|g| g.finding == Finding::Violated(no));
        let sample = g.unwrap().sample.as_ref().unwrap();
        assert_eq!(sample.seed, 0);
        assert!(!sample.shows_finding);
        assert_eq!(sample.explanation, None);
        assert!(groups.iter().all(|g| g.concern == Concern::Extra));
    }

    #[test]
    fn a_run_error_is_its_own_signature_and_a_schedule_is_named() {
        let r = protocol::REFERENCE;
        let s = scenario::MUTUAL_EXCLUSION;
        let mut broken = seeded(s, r, 4, &[]);
        broken.error = Some("stuck".to_owned());
        broken.params = vec![crate::record::Param::new(
            SCHEDULE_PARAM,
            "300 pause w0 1200",
            "",
        )];
        let groups = groups(&sweep_of(vec![cell(r, s, vec![broken])]));
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].signature(), "reference × run error");
        let sample = groups[0].sample.as_ref().unwrap();
        assert_eq!(sample.explanation.as_deref(), Some("stuck"));
        assert_eq!(sample.schedule.as_deref(), Some("300 pause w0 1200"));
    }

    #[test]
    fn a_clean_sweep_has_no_groups() {
        let r = protocol::REFERENCE;
        let s = scenario::MUTUAL_EXCLUSION;
        let clean = cell(r, s, vec![seeded(s, r, 0, &[])]);
        assert!(groups(&sweep_of(vec![clean])).is_empty());
    }
}
