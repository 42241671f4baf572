//! The rollout-readiness checklist and the failure scenarios a deployment
//! leaves unprotected, judged from a run's evidence.
//!
//! The checklist is the design article's pre-production list ("before
//! production, make sure the implementation has …"): fresh owner token per
//! acquire, atomic compare-and-delete, bounded renewal, durable monotonic
//! fencing, fence validated by storage, jittered retries, operation
//! timeouts, contention metrics, crash and failover tested. Each item names
//! the scenarios whose passing shows it for the deployed protocol and the
//! mutant catches that show the check has teeth; its mark comes from those
//! cells only, never from what the code is believed to do. The article then
//! demands that whatever cannot be applied is stated as an unprotected
//! failure scenario — [`Exposure`] is that list, with the run's evidence.

use redfence_history::curve::CurvePoint;
use redfence_history::names::{mutant as m, scenario as s};
use redfence_history::record::WorldKind;
use redfence_history::sweep::{Cell, CellStatus, Sweep};
use serde::{Deserialize, Serialize};

use crate::deployment::{Deployment, Replication};
use crate::labels::{cell_never_exercised, property_names};
use redfence_history::FenceSourceKind;
use redfence_history::Property;

/// How well the run shows a checklist item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mark {
    /// Every scenario that shows it ran and passed for the deployed protocol.
    Met,
    /// Shown in part (some scenarios not run, a check without teeth, or
    /// only in the simulation).
    Partial,
    /// A scenario showing it failed, or the deployment rules it out.
    NotMet,
    /// Nothing in the run speaks to it.
    NoEvidence,
}

impl Mark {
    /// The word reports print.
    pub fn label(self) -> &'static str {
        match self {
            Mark::Met => "met",
            Mark::Partial => "partial",
            Mark::NotMet => "NOT MET",
            Mark::NoEvidence => "no evidence",
        }
    }
}

/// One cell cited as evidence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// Scenario of the cell.
    pub scenario: String,
    /// Protocol of the cell.
    pub protocol: String,
    /// How the cell came out (`None`: not in this run).
    pub status: Option<CellStatus>,
    /// What the cell shows, in words.
    pub text: String,
}

/// One item of the pre-production checklist.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChecklistItem {
    /// Stable kebab-case id.
    pub id: String,
    /// The item in English.
    pub title: String,
    /// The article's own words for it.
    pub article: String,
    /// The verdict.
    pub mark: Mark,
    /// Why, in one sentence.
    pub summary: String,
    /// The cells behind the mark.
    pub evidence: Vec<Evidence>,
}

/// How a failure scenario is left open.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExposureKind {
    /// The deployment is exposed (the run or its configuration shows it).
    Exposed,
    /// The run did not test it, so nothing is known.
    Untested,
    /// Outside what fencing can protect at all.
    OutOfScope,
}

/// A failure scenario the deployment leaves unprotected.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exposure {
    /// Exposed, untested or out of scope.
    pub kind: ExposureKind,
    /// The failure, in one line.
    pub failure: String,
    /// Why it is open.
    pub why: String,
    /// What closes it.
    pub mitigation: String,
    /// Cells that show it.
    pub evidence: Vec<Evidence>,
}

/// The checklist and the unprotected list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Readiness {
    /// The checklist, in the article's order.
    pub items: Vec<ChecklistItem>,
    /// Failure scenarios left unprotected.
    pub unprotected: Vec<Exposure>,
}

impl Readiness {
    /// The failure scenarios the deployment is exposed to (not the
    /// untested or out-of-scope ones).
    pub fn exposed(&self) -> Vec<&Exposure> {
        self.unprotected
            .iter()
            .filter(|e| e.kind == ExposureKind::Exposed)
            .collect()
    }
}

/// What shows one checklist item.
struct Rule {
    id: &'static str,
    title: &'static str,
    /// The item in the design article's own (Indonesian) words.
    article: &'static str,
    /// Scenarios the deployed protocol must pass.
    passes: &'static [&'static str],
    /// (mutant, scenario): catches showing the check bites.
    catches: &'static [(&'static str, &'static str)],
}

const RULES: &[Rule] = &[
    Rule {
        id: "fresh-owner-token",
        title: "Fresh owner token per acquire",
        article: "owner token baru untuk setiap acquire",
        passes: &[s::MUTUAL_EXCLUSION, s::LATE_UNLOCK],
        catches: &[(m::STATIC_OWNER, s::MUTUAL_EXCLUSION)],
    },
    Rule {
        id: "atomic-compare-and-delete",
        title: "Atomic compare-and-delete release",
        article: "compare-and-delete atomik",
        passes: &[s::LATE_UNLOCK],
        catches: &[
            (m::DEL_UNLOCK, s::LATE_UNLOCK),
            (m::GET_THEN_DEL, s::LATE_UNLOCK),
        ],
    },
    Rule {
        id: "bounded-renewal",
        title: "Bounded renewal (owner-checked, capped by hold time and count)",
        article: "renewal terbatas",
        passes: &[s::RENEWAL_LIMITS, s::LATE_UNLOCK],
        catches: &[
            (m::UNBOUNDED_RENEWAL, s::RENEWAL_LIMITS),
            (m::RENEW_WITHOUT_OWNER_CHECK, s::LATE_UNLOCK),
        ],
    },
    Rule {
        id: "durable-monotonic-fencing",
        title: "Durable, monotonic fencing tokens",
        article: "fencing monotonik yang durable",
        passes: &[s::FAILOVER_COUNTER_REGRESSION, s::REDIS_UNAVAILABLE],
        catches: &[
            (m::REDIS_COUNTER_FENCES, s::FAILOVER_COUNTER_REGRESSION),
            (m::LOCK_BEFORE_FENCE, s::REDIS_UNAVAILABLE),
        ],
    },
    Rule {
        id: "fence-validated-by-storage",
        title: "Fence validated by the storage itself",
        article: "validasi token pada storage",
        passes: &[
            s::STALE_WORKER_PAUSE,
            s::FENCE_REJECTED,
            s::CRASH_BEFORE_ACK,
        ],
        catches: &[
            (m::NO_FENCE_CHECK, s::STALE_WORKER_PAUSE),
            (m::APP_SIDE_FENCE_CHECK, s::STALE_WORKER_PAUSE),
            (m::UNFENCED_SET_NX, s::STALE_WORKER_PAUSE),
        ],
    },
    Rule {
        id: "jittered-retries",
        title: "Retries with full jitter under a deadline",
        article: "retry dengan jitter",
        passes: &[s::HOTSPOT_LOAD],
        catches: &[],
    },
    Rule {
        id: "operation-timeouts",
        title: "Operation timeouts (no unbounded wait on Redis or storage)",
        article: "timeout operasi",
        passes: &[s::LOST_ACQUIRE_REPLY, s::REDIS_UNAVAILABLE],
        catches: &[(m::NO_TTL, s::LOST_ACQUIRE_REPLY)],
    },
    Rule {
        id: "contention-metrics",
        title: "Contention metrics (attempts, waits, fairness)",
        article: "metrik contention",
        passes: &[s::HOTSPOT_LOAD],
        catches: &[],
    },
    Rule {
        id: "crash-and-failover-tested",
        title: "Crash and failover tested",
        article: "pengujian crash dan failover",
        passes: &[
            s::CRASH_AFTER_ACQUIRE,
            s::CRASH_MID_MUTATION,
            s::CRASH_BEFORE_ACK,
            s::FAILOVER_COUNTER_REGRESSION,
        ],
        catches: &[(m::SETNX_THEN_EXPIRE, s::CRASH_AFTER_ACQUIRE)],
    },
];

/// The scenario that shows fence regression across failover, and the
/// mutant that takes its fences from the Redis counter.
const FAILOVER: (&str, &str) = (s::FAILOVER_COUNTER_REGRESSION, m::REDIS_COUNTER_FENCES);

fn cell_text(sweep: &Sweep, cell: &Cell) -> String {
    let violated = cell
        .first_failure
        .as_ref()
        .map(|r| {
            r.violated()
                .iter()
                .map(|p| p.name())
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    match cell.status {
        CellStatus::Passed => {
            let idle = idle_targets(sweep, cell);
            if idle.is_empty() {
                format!("passed on all {} seeds", cell.runs)
            } else {
                format!(
                    "passed on all {} seeds (targets not exercised: {})",
                    cell.runs,
                    property_names(&idle)
                )
            }
        }
        CellStatus::Caught => format!(
            "caught as promised on seed #{} ({violated})",
            cell.seeds_to_catch.unwrap_or(0)
        ),
        CellStatus::AlsoCaught => format!("also caught ({violated})"),
        CellStatus::NotCaught => format!("not caught in {} seeds (not promised)", cell.runs),
        CellStatus::Missed => format!("promised catch MISSED in {} seeds", cell.runs),
        CellStatus::Undecidable => format!(
            "promised property undecidable in this world ({} seeds)",
            cell.runs
        ),
        CellStatus::Failed => format!(
            "FAILED on {} of {} seeds ({violated})",
            cell.failed_runs, cell.runs
        ),
    }
}

fn evidence(sweep: &Sweep, scenario: &str, protocol: &str) -> Evidence {
    let cell = sweep.cell(scenario, protocol);
    Evidence {
        scenario: scenario.to_owned(),
        protocol: protocol.to_owned(),
        status: cell.map(|c| c.status),
        text: cell.map_or_else(|| "not run".to_owned(), |c| cell_text(sweep, c)),
    }
}

/// The properties `cell`'s scenario targets that none of its seeds gave
/// anything to judge: a pass there is no evidence for them.
fn idle_targets(sweep: &Sweep, cell: &Cell) -> Vec<Property> {
    let targets = sweep
        .scenarios
        .iter()
        .find(|s| s.name == cell.scenario)
        .map_or(&[][..], |s| s.targets.as_slice());
    cell_never_exercised(cell)
        .into_iter()
        .filter(|p| targets.contains(p))
        .collect()
}

fn judge(rule: &Rule, sweep: &Sweep, deployment: &Deployment) -> ChecklistItem {
    let mut found: Vec<Evidence> = rule
        .passes
        .iter()
        .map(|s| evidence(sweep, s, &deployment.protocol))
        .collect();
    let ran = found.iter().filter(|e| e.status.is_some()).count();
    // Any failing seed of the deployed protocol counts, whatever was
    // expected of it (a replay may put a mutant in the deployed seat).
    let failed = rule.passes.iter().any(|s| {
        sweep
            .cell(s, &deployment.protocol)
            .is_some_and(|c| c.failed_runs > 0)
    });
    let catches: Vec<Evidence> = rule
        .catches
        .iter()
        .map(|(mutant, scenario)| evidence(sweep, scenario, mutant))
        .collect();
    let toothless = catches.iter().any(|e| e.status == Some(CellStatus::Missed));
    found.extend(catches.into_iter().filter(|e| e.status.is_some()));
    let who = &deployment.protocol;
    let (mut mark, mut summary) = if failed {
        (
            Mark::NotMet,
            format!("{who} failed a scenario that shows this item"),
        )
    } else if ran == 0 {
        (
            Mark::NoEvidence,
            format!("none of {} ran for {who}", rule.passes.join(", ")),
        )
    } else if ran < rule.passes.len() {
        (
            Mark::Partial,
            format!(
                "{who} passed {ran} of the {} scenarios that show it; run the rest",
                rule.passes.len()
            ),
        )
    } else if toothless {
        (
            Mark::Partial,
            format!("{who} passed, but a mutant this check should catch slipped through"),
        )
    } else {
        (
            Mark::Met,
            format!("{who} passed every scenario that shows it"),
        )
    };
    match rule.id {
        // Nothing is judged on a deployment the user did not describe: the
        // run cannot know where their fences come from.
        "durable-monotonic-fencing" if mark != Mark::NotMet && deployment.assumed => {
            mark = mark.max(Mark::Partial);
            summary = format!(
                "{summary}; whether your fences survive a failover depends on where they come \
                 from and how Redis is replicated, which you did not state (--fences, \
                 --replication)"
            );
        }
        "durable-monotonic-fencing" if mark != Mark::NotMet => {
            match (deployment.fence_source, deployment.replication) {
                (FenceSourceKind::RedisCounter, Replication::Async) => {
                    mark = Mark::NotMet;
                    summary = "fences come from the Redis counter and Redis replicates \
                               asynchronously: a failover can hand a fence out twice"
                        .to_owned();
                    found.push(evidence(sweep, FAILOVER.0, FAILOVER.1));
                }
                (FenceSourceKind::RedisCounter, Replication::None) => {
                    mark = mark.max(Mark::Partial);
                    summary = "fences come from the Redis counter: durable only as far as \
                               Redis persistence keeps the counter across a restart"
                        .to_owned();
                }
                (FenceSourceKind::Store, _) => {}
            }
        }
        "crash-and-failover-tested" if mark == Mark::Met && sweep.world == WorldKind::Sim => {
            mark = Mark::Partial;
            summary = "crashes and failover pass in the simulation; the article asks for the \
                       deployment's real Redis and database too (run with --world real)"
                .to_owned();
        }
        _ => {}
    }
    ChecklistItem {
        id: rule.id.to_owned(),
        title: rule.title.to_owned(),
        article: rule.article.to_owned(),
        mark,
        summary,
        evidence: dedup(found),
    }
}

fn dedup(items: Vec<Evidence>) -> Vec<Evidence> {
    let mut out: Vec<Evidence> = Vec::with_capacity(items.len());
    for item in items {
        if !out
            .iter()
            .any(|e| e.scenario == item.scenario && e.protocol == item.protocol)
        {
            out.push(item);
        }
    }
    out
}

/// Adds what the curve says about jitter to the jittered-retries item.
fn jitter_evidence(item: &mut ChecklistItem, curve: &[CurvePoint]) {
    let most = curve.iter().map(|p| p.workers).max().unwrap_or(0);
    let at = |jitter: bool| {
        curve
            .iter()
            .find(|p| p.workers == most && p.jitter == jitter)
    };
    if let (Some(with), Some(without)) = (at(true), at(false)) {
        item.evidence.push(Evidence {
            scenario: s::HOTSPOT_LOAD.to_owned(),
            protocol: "wait curve".to_owned(),
            status: None,
            text: format!(
                "at {most} workers: p99 wait {:.0} ms and {:.1} attempts per acquisition with \
                 full jitter, {:.0} ms and {:.1} without",
                with.wait_ms_p99,
                with.attempts_per_acquisition,
                without.wait_ms_p99,
                without.attempts_per_acquisition
            ),
        });
    }
}

/// Adds what hotspot-load measured to the contention-metrics item: the
/// figures a team's dashboards should show under contention.
fn contention_evidence(item: &mut ChecklistItem, sweep: &Sweep, protocol: &str) {
    let Some(record) = sweep
        .cell(s::HOTSPOT_LOAD, protocol)
        .and_then(|c| c.first_run.as_ref())
    else {
        return;
    };
    let m = &record.metrics;
    let per_worker: Vec<u64> = m.acquisitions_per_worker.values().copied().collect();
    item.evidence.push(Evidence {
        scenario: s::HOTSPOT_LOAD.to_owned(),
        protocol: format!("{protocol}, seed {}", record.seed),
        status: None,
        text: format!(
            "measured {} acquired / {} contended attempts, {:.2} attempts per acquisition,              wait p50 {} ms and p99 {} ms, {}–{} acquisitions per worker, {} gave up",
            m.acquired,
            m.contended,
            m.attempts_per_acquisition,
            m.wait_ms_p50,
            m.wait_ms_p99,
            per_worker.iter().min().unwrap_or(&0),
            per_worker.iter().max().unwrap_or(&0),
            m.retry_later
        ),
    });
}

fn exposures(sweep: &Sweep, deployment: &Deployment) -> Vec<Exposure> {
    let mut out = Vec::new();
    if deployment.assumed {
        // Not exposed, not safe: unknown until the user says.
        out.push(Exposure {
            kind: ExposureKind::Untested,
            failure: "fences across a failover or a restart of Redis".to_owned(),
            why: "you did not say where your fences come from or how your Redis is \
                  replicated; with the Redis counter and a promotable replica a failover hands \
                  a fence out twice (this run shows it with the redis-counter-fences mutant)"
                .to_owned(),
            mitigation: "describe the deployment: --fences redis-counter|store and \
                         --replication async|none"
                .to_owned(),
            evidence: vec![evidence(sweep, FAILOVER.0, FAILOVER.1)],
        });
    }
    match (deployment.fence_source, deployment.replication) {
        _ if deployment.assumed => {}
        (FenceSourceKind::RedisCounter, Replication::Async) => out.push(Exposure {
            kind: ExposureKind::Exposed,
            failure: "Redis counter as fence source with asynchronous replication: a failover \
                      hands a fence out twice"
                .to_owned(),
            why: "an INCR the primary acknowledged but had not yet replicated is lost when the \
                  replica is promoted; the next acquire gets a fence already issued, two owners \
                  carry the same fence and the store cannot tell them apart. WAIT narrows the \
                  window but does not close it."
                .to_owned(),
            mitigation: "take fences from the database (FenceSourceKind::Store, \
                         LockClientBuilder::postgres_fences), or run without a promotable replica"
                .to_owned(),
            evidence: vec![evidence(sweep, FAILOVER.0, FAILOVER.1)],
        }),
        (FenceSourceKind::RedisCounter, Replication::None) => out.push(Exposure {
            kind: ExposureKind::Exposed,
            failure: "Redis counter as fence source: a restart that loses data restarts the \
                      counter"
                .to_owned(),
            why: "without an fsync'd append-only file, a Redis restart forgets the counter; the \
                  fences it then issues were issued before. The store still refuses them (they \
                  are not above its last fence), so storage stays safe but writes stall as \
                  stale until the counter passes the store's last fence."
                .to_owned(),
            mitigation: "take fences from the database, or persist Redis with appendfsync always"
                .to_owned(),
            evidence: vec![evidence(sweep, s::REDIS_UNAVAILABLE, &deployment.protocol)],
        }),
        (FenceSourceKind::Store, _) => {}
    }
    for cell in sweep
        .cells
        .iter()
        .filter(|c| c.protocol == deployment.protocol && c.failed_runs > 0)
    {
        let (property, explanation) = cell
            .first_failure
            .as_ref()
            .and_then(|r| {
                r.verdicts
                    .iter()
                    .find(|v| v.status == redfence_history::Status::Violated)
                    .map(|v| (v.property.name().to_owned(), v.explanation.clone()))
                    .or_else(|| r.error.clone().map(|e| ("run".to_owned(), e)))
            })
            .unwrap_or_else(|| ("run".to_owned(), "the run failed".to_owned()));
        out.push(Exposure {
            kind: ExposureKind::Exposed,
            failure: format!("{}: {property} violated", cell.scenario),
            why: explanation,
            mitigation: "fix the protocol; the replay line in the cell's detail reproduces it"
                .to_owned(),
            evidence: vec![evidence(sweep, &cell.scenario, &cell.protocol)],
        });
    }
    let untested: Vec<&str> = redfence_history::names::scenario::ALL
        .into_iter()
        .filter(|name| sweep.cell(name, &deployment.protocol).is_none())
        .collect();
    if !untested.is_empty() {
        out.push(Exposure {
            kind: ExposureKind::Untested,
            failure: format!("scenarios not run: {}", untested.join(", ")),
            why: format!(
                "this run did not put {} through them, so nothing is known",
                deployment.protocol
            ),
            mitigation: "run every scenario (redfence run without --scenario)".to_owned(),
            evidence: Vec::new(),
        });
    }
    redlock_exposures(sweep, deployment, &mut out);
    if sweep.world == WorldKind::Sim {
        out.push(Exposure {
            kind: ExposureKind::Untested,
            failure: "the deployment's real Redis, failover mechanism and database".to_owned(),
            why: "this run used the deterministic simulation; real failover (Sentinel or a \
                  managed service), persistence settings and network behaviour were not \
                  exercised"
                .to_owned(),
            mitigation: "run the same scenarios with --world real against a copy of the \
                         deployment's topology"
                .to_owned(),
            evidence: Vec::new(),
        });
    }
    out.push(Exposure {
        kind: ExposureKind::OutOfScope,
        failure: "side effects outside the fenced store (emails, external APIs, queues)".to_owned(),
        why: "fencing protects only a target that checks the fence; a stale owner's email or \
              API call goes through"
            .to_owned(),
        mitigation: "an idempotency key, a transactional outbox or a mediator that checks fences"
            .to_owned(),
        evidence: Vec::new(),
    });
    out
}

/// The Redlock scenarios, where fences protect (the stale write) and where
/// only the masters' setup does (the second majority itself).
const REDLOCK_FENCED_AWAY: [&str; 3] = [
    s::REDLOCK_PAUSE,
    s::REDLOCK_CLOCK_JUMP,
    s::REDLOCK_MASTER_RESTART,
];

/// What a run of the Redlock scenarios says about locks over several
/// masters: which of the debated faults a fence makes harmless and which
/// only delayed restart prevents. Listed only when the run has them.
fn redlock_exposures(sweep: &Sweep, deployment: &Deployment, out: &mut Vec<Exposure>) {
    let ran = |scenario: &str| sweep.cells.iter().any(|c| c.scenario == scenario);
    if !REDLOCK_FENCED_AWAY.iter().any(|name| ran(name)) {
        return;
    }
    // The deployed lock's cells, and the unfenced Redlock's beside them
    // when the run has it: the contrast is the evidence.
    let cells = |scenarios: &[&str]| {
        let mut cited = Vec::new();
        for scenario in scenarios.iter().filter(|name| ran(name)) {
            cited.push(evidence(sweep, scenario, &deployment.protocol));
            if sweep.cell(scenario, m::REDLOCK).is_some() && deployment.protocol != m::REDLOCK {
                cited.push(evidence(sweep, scenario, m::REDLOCK));
            }
        }
        cited
    };
    out.push(Exposure {
        kind: ExposureKind::OutOfScope,
        failure: "Redlock: a pause, a master's clock jump or a master that forgets lets two \
                  clients each hold a majority of the masters"
            .to_owned(),
        why: "the algorithm counts masters and subtracts elapsed time; it cannot see a pause \
              after the count (redlock-pause), a master whose clock jumps and expires the key \
              early (redlock-clock-jump), or a master that crashes and restarts without the key \
              (redlock-master-restart). The holder keeps writing after its successor."
            .to_owned(),
        mitigation: "a fence checked by the store makes the stale write harmless in all three \
                     (redlock-fenced passes them; the unfenced redlock has it accepted); no \
                     fence prevents the overlap itself"
            .to_owned(),
        evidence: cells(&REDLOCK_FENCED_AWAY),
    });
    out.push(Exposure {
        kind: ExposureKind::OutOfScope,
        failure: "Redlock: a master that restarts and forgets grants the lock a second time"
            .to_owned(),
        why: "with snapshot-only persistence (or appendfsync everysec and a machine crash) a \
              restarted master loses the locks it granted since its last write to disk, and a \
              second client gathers a majority with it while the first still holds one"
            .to_owned(),
        mitigation: "only the masters' setup prevents the second majority: keep a crashed \
                     master down for at least the longest lease before it rejoins (delayed \
                     restart), or persist with appendfsync always; fences only make it harmless \
                     to the store"
            .to_owned(),
        evidence: cells(&[s::REDLOCK_MASTER_RESTART]),
    });
}

/// The checklist and unprotected list of `sweep` for `deployment`.
pub fn readiness(
    sweep: &Sweep,
    deployment: &Deployment,
    curve: Option<&[CurvePoint]>,
) -> Readiness {
    let mut items: Vec<ChecklistItem> = RULES
        .iter()
        .map(|rule| judge(rule, sweep, deployment))
        .collect();
    if let (Some(curve), Some(item)) =
        (curve, items.iter_mut().find(|i| i.id == "jittered-retries"))
    {
        jitter_evidence(item, curve);
    }
    if let Some(item) = items.iter_mut().find(|i| i.id == "contention-metrics") {
        contention_evidence(item, sweep, &deployment.protocol);
    }
    Readiness {
        items,
        unprotected: exposures(sweep, deployment),
    }
}

#[cfg(test)]
mod rule_tests {
    use super::*;
    use redfence_history::mutation::CATCHES;

    /// A renamed scenario or mutant must not silently turn a readiness mark
    /// into "no evidence": every name a rule cites is a real scenario, and
    /// every catch it cites is one the mutation table promises.
    #[test]
    fn every_scenario_and_catch_a_rule_names_is_real() {
        for rule in RULES {
            for scenario in rule.passes {
                assert!(
                    s::ALL.contains(scenario),
                    "{}: no scenario {scenario}",
                    rule.id
                );
            }
            for (mutant, scenario) in rule.catches {
                assert!(
                    CATCHES
                        .iter()
                        .any(|c| c.mutant == *mutant && c.scenario == *scenario),
                    "{}: {mutant} is not promised to be caught by {scenario}",
                    rule.id
                );
            }
        }
        let (scenario, mutant) = FAILOVER;
        assert!(CATCHES
            .iter()
            .any(|c| c.mutant == mutant && c.scenario == scenario));
    }
}
