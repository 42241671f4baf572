//! Sim-vs-real agreement: the same scenarios and protocols in both worlds
//! should reach the same verdicts; any disagreement is a defect in one of
//! the worlds, to be investigated, never tolerated.
//!
//! Seeds do not pair across worlds (the real world does not replay a
//! seed), so verdicts are compared per cell and property as classes: was
//! the property ever violated, over the seeds each world ran? A property
//! the real world did not decide (its servers' recording had a gap) is
//! shown as such, with the gap in the row's note, rather than counted as
//! agreement.

use serde::{Deserialize, Serialize};

use crate::property::Property;
use crate::sweep::{Cell, Sweep};

/// How one property of one cell compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Compared {
    /// Both worlds exercised it and neither violated it.
    BothHeld,
    /// Neither world violated it, and at least one never exercised it (its
    /// runs gave the property nothing to judge): agreement, but no evidence.
    NotExercised,
    /// Both worlds violated it on some seed.
    BothViolated,
    /// Violated in the simulation, held in the real world.
    OnlySim,
    /// Held in the simulation, violated in the real world.
    OnlyReal,
    /// The real world could not decide it (no ground truth there).
    RealUndecided,
    /// The simulation could not decide it (should not happen).
    SimUndecided,
    /// One of the worlds did not run this cell.
    Missing,
    /// Only the real world can run this cell as configured (Sentinel
    /// decided its failover; the simulation has no Sentinel): not compared.
    RealOnly,
}

impl Compared {
    /// Whether this is a disagreement to investigate.
    pub fn disagrees(self) -> bool {
        matches!(self, Compared::OnlySim | Compared::OnlyReal)
    }
}

/// One cell's comparison.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Row {
    /// The scenario.
    pub scenario: String,
    /// The protocol.
    pub protocol: String,
    /// Per property, in [`Property::ALL`] order.
    pub properties: Vec<(Property, Compared)>,
    /// Why a world's runs did not count (a run error), if any.
    pub note: Option<String>,
}

impl Row {
    /// Whether any property disagrees.
    pub fn disagrees(&self) -> bool {
        self.properties.iter().any(|(_, c)| c.disagrees())
    }
}

/// Ever violated / held when exercised / never exercised / never decided,
/// over a cell's seeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Violated,
    Held,
    NotExercised,
    Undecided,
}

fn class(cell: &Cell, property: Property) -> Class {
    let Some(t) = cell.tallies.iter().find(|t| t.property == property) else {
        return Class::Undecided;
    };
    if t.violated > 0 {
        Class::Violated
    } else if t.held > 0 {
        Class::Held
    } else if t.not_exercised > 0 {
        Class::NotExercised
    } else {
        Class::Undecided
    }
}

/// Marks the rows of `scenarios` real-only: the real world ran them in a
/// way the simulation cannot (`why`, e.g. Sentinel deciding the failover),
/// so their verdicts are not compared.
pub fn mark_real_only(rows: &mut [Row], scenarios: &[&str], why: &str) {
    for row in rows
        .iter_mut()
        .filter(|row| scenarios.contains(&row.scenario.as_str()))
    {
        for (_, compared) in &mut row.properties {
            *compared = Compared::RealOnly;
        }
        row.note = Some(match row.note.take() {
            Some(note) => format!("real only: {why}; {note}"),
            None => format!("real only: {why}"),
        });
    }
}

#[cfg(test)]
mod real_only_tests {
    use super::*;

    #[test]
    fn real_only_rows_are_not_compared_and_say_why() {
        let row = |scenario: &str| Row {
            scenario: scenario.into(),
            protocol: "reference".into(),
            properties: vec![(Property::FenceOrder, Compared::OnlyReal)],
            note: None,
        };
        let mut rows = vec![row("failover-counter-regression"), row("mutual-exclusion")];
        mark_real_only(
            &mut rows,
            &["failover-counter-regression"],
            "Sentinel decided",
        );
        assert!(!rows[0].disagrees());
        assert_eq!(rows[0].properties[0].1, Compared::RealOnly);
        assert_eq!(rows[0].note.as_deref(), Some("real only: Sentinel decided"));
        assert!(rows[1].disagrees(), "other rows are compared as before");
    }
}

/// Compares every cell `sim` and `real` both ran.
pub fn compare(sim: &Sweep, real: &Sweep) -> Vec<Row> {
    let mut rows = Vec::new();
    for s in &sim.scenarios {
        for p in &sim.protocols {
            let (Some(a), b) = (sim.cell(&s.name, &p.name), real.cell(&s.name, &p.name)) else {
                continue;
            };
            let mut note = b.and_then(|b| {
                b.first_failure
                    .as_ref()
                    .and_then(|r| r.error.clone())
                    .map(|e| format!("real: {e}"))
            });
            let properties: Vec<(Property, Compared)> = Property::ALL
                .iter()
                .map(|&property| {
                    let compared = match b {
                        None => Compared::Missing,
                        Some(b) => match (class(a, property), class(b, property)) {
                            (_, Class::Undecided) => Compared::RealUndecided,
                            (Class::Undecided, _) => Compared::SimUndecided,
                            (Class::Held, Class::Held) => Compared::BothHeld,
                            (Class::Violated, Class::Violated) => Compared::BothViolated,
                            (Class::Violated, _) => Compared::OnlySim,
                            (_, Class::Violated) => Compared::OnlyReal,
                            (Class::NotExercised, _) | (_, Class::NotExercised) => {
                                Compared::NotExercised
                            }
                        },
                    };
                    (property, compared)
                })
                .collect();
            if note.is_none() {
                note = b.and_then(|b| undecided_because(b, &properties));
            }
            rows.push(Row {
                scenario: s.name.clone(),
                protocol: p.name.clone(),
                properties,
                note,
            });
        }
    }
    rows
}

/// Why the real world left a property of `cell` undecided, in the words of
/// its kept runs' verdicts (a recording gap names itself there).
fn undecided_because(cell: &Cell, properties: &[(Property, Compared)]) -> Option<String> {
    let (property, _) = properties
        .iter()
        .find(|(_, c)| *c == Compared::RealUndecided)?;
    let runs = [cell.first_failure.as_ref(), cell.first_run.as_ref()];
    let verdict = runs
        .into_iter()
        .flatten()
        .flat_map(|r| r.verdicts.iter())
        .find(|v| v.property == *property && v.status == crate::verdict::Status::Undecided)?;
    Some(format!("real, undecided: {}", verdict.explanation))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Metrics, RunRecord, WorldKind};
    use crate::sweep::{CellAcc, ProtocolInfo, ScenarioInfo, SCHEMA_VERSION};
    use crate::verdict::{Status, Verdict};

    /// A one-cell sweep of `s` × `p` whose one run has `status` for every
    /// property.
    fn sweep(world: WorldKind, status: Status) -> Sweep {
        let verdicts = Property::ALL
            .iter()
            .map(|&p| match status {
                Status::Held => Verdict::held(p, "x"),
                Status::Undecided => Verdict::undecided(p, "the recording had a gap (x)"),
                _ => Verdict::not_exercised(p, "x"),
            })
            .collect();
        let record = RunRecord {
            scenario: "s".to_owned(),
            protocol: "p".to_owned(),
            world,
            seed: 0,
            params: Vec::new(),
            verdicts,
            history: None,
            metrics: Metrics::default(),
            error: None,
            replay: "r".to_owned(),
        };
        let mut acc = CellAcc::new();
        acc.add(1, record, &[]);
        Sweep {
            schema_version: SCHEMA_VERSION,
            world,
            seed_first: 0,
            seeds: 1,
            shard: None,
            scenarios: vec![ScenarioInfo {
                name: "s".to_owned(),
                description: "d".to_owned(),
                targets: Vec::new(),
                params: Vec::new(),
            }],
            protocols: vec![ProtocolInfo {
                name: "p".to_owned(),
                description: "d".to_owned(),
            }],
            cells: vec![acc.finish(world, "s", "p")],
            mutants: Vec::new(),
            provenance: None,
        }
    }

    fn compared(sim: Status, real: Status) -> Compared {
        let rows = compare(&sweep(WorldKind::Sim, sim), &sweep(WorldKind::Real, real));
        rows[0].properties[0].1
    }

    #[test]
    fn not_exercised_agrees_without_reading_as_both_held() {
        assert_eq!(compared(Status::Held, Status::Held), Compared::BothHeld);
        for (sim, real) in [
            (Status::NotExercised, Status::NotExercised),
            (Status::Held, Status::NotExercised),
            (Status::NotExercised, Status::Held),
        ] {
            let c = compared(sim, real);
            assert_eq!(c, Compared::NotExercised, "{sim:?} / {real:?}");
            assert!(!c.disagrees());
        }
        assert_eq!(
            compared(Status::NotExercised, Status::Undecided),
            Compared::RealUndecided
        );
    }

    /// An `n/d` names why: the undecided verdict's own words, where a
    /// recording gap names itself; a decided row has no note.
    #[test]
    fn an_undecided_real_cell_says_why_in_its_note() {
        let rows = compare(
            &sweep(WorldKind::Sim, Status::Held),
            &sweep(WorldKind::Real, Status::Undecided),
        );
        assert_eq!(
            rows[0].note.as_deref(),
            Some("real, undecided: the recording had a gap (x)")
        );
        let rows = compare(
            &sweep(WorldKind::Sim, Status::Held),
            &sweep(WorldKind::Real, Status::Held),
        );
        assert_eq!(rows[0].note, None);
    }
}
