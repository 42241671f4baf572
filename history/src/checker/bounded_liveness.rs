//! `bounded-liveness`: every contender eventually gets a decision, and no
//! lock outlives max hold + lease.
//!
//! Two rules:
//!
//! 1. **Contenders are not starved** (from ops). A worker that invoked
//!    `Acquire` at least once must either have a completed `Acquire`
//!    answered `Acquired`, or have a last `Report` (by invoke time) whose
//!    outcome is not `failed` — `retry-later` is a bounded give-up the queue
//!    retries, `already-done`/`ownership-lost`/`success` are decisions. A
//!    worker whose last op never completed is excused (it crashed, or the
//!    run ended while it waited), and so is a worker a recorded fault
//!    crashed (it may have died between attempts, with every op answered).
//!    So this rule
//!    catches contenders that end up failing or fall silent after finishing
//!    every op; a lock that is never freed is caught by rule 2.
//! 2. **No lock outlives its bound** (from the Redis ownership log). Each
//!    holding — from `Set`/`Overwritten` to `Expired`/`Deleted`/
//!    `Overwritten`/`Lost`, or to `end_ms` if still held — lasts at most
//!    `hold_ms_max + lease_ms + tolerance_ms`. This catches a missing TTL
//!    and unbounded renewal.
//!
//! Rule 1 is judged only once the worker's paths had been healthy — no
//! pause, partition, dropped replies or latency on its Redis or store path,
//! Redis neither stopped nor failed over or restarted within a lease — for
//! the whole acquire deadline plus a lease before it gave up (or before
//! the run ended): a worker that fails closed during its own fault did the
//! right thing, as the design article asks. A run that keeps a fault up to
//! the end judges no give-up under it.
//! Without the ownership log, rule 2 cannot be decided: a violation of rule 1
//! still gives `Violated`, otherwise the verdict is `Undecided`. A run with
//! no contending worker and no holding is `NotExercised`.

use std::collections::BTreeMap;

use super::health::{self, Paths};
use super::{more, no_redis_truth, Derived};
use crate::history::{History, JobReport, Op, OpKind, OwnershipChange, OwnershipRecord};
use crate::property::Property;
use crate::verdict::{owner_text, HistorySlice, Verdict};

const PROPERTY: Property = Property::BoundedLiveness;

/// Judges `bounded-liveness`.
pub(super) fn check(history: &History, derived: &Derived) -> Verdict {
    let mut violations: Vec<(String, HistorySlice)> = Vec::new();
    let contenders_count = contenders_decided(history, &mut violations);
    let mut holdings_count = 0_usize;
    if let Some(log) = &history.redis_truth {
        holdings_count = holdings_bounded(history, log, derived, &mut violations);
    }

    let violations_total = violations.len();
    if let Some((explanation, slice)) = violations.into_iter().next() {
        return Verdict::violated(
            PROPERTY,
            format!("{explanation}{}", more(violations_total)),
            slice,
        );
    }
    let contenders =
        format!("{contenders_count} contending workers each acquired or gave up cleanly");
    match &history.redis_truth {
        None => Verdict::undecided(
            PROPERTY,
            format!(
                "{} (how long locks were held is unknown); {contenders}",
                no_redis_truth(history)
            ),
        ),
        Some(_) if contenders_count == 0 && holdings_count == 0 => Verdict::not_exercised(
            PROPERTY,
            "no worker tried to acquire and no lock key was held",
        ),
        Some(_) => Verdict::held(
            PROPERTY,
            format!(
                "{contenders}; {holdings_count} lock holdings each ended within max hold + lease"
            ),
        ),
    }
}

/// Rule 1; returns how many workers contended.
fn contenders_decided(history: &History, violations: &mut Vec<(String, HistorySlice)>) -> usize {
    let mut by_worker: BTreeMap<&str, Vec<&Op>> = BTreeMap::new();
    for op in &history.ops {
        by_worker.entry(op.worker.as_str()).or_default().push(op);
    }
    let mut contenders_count = 0_usize;
    for (worker, ops) in &mut by_worker {
        ops.sort_by_key(|op| (op.invoke_ms, op.id));
        let acquires: Vec<&Op> = ops
            .iter()
            .copied()
            .filter(|op| op.kind == OpKind::Acquire)
            .collect();
        let (Some(&first), Some(&last)) = (acquires.first(), acquires.last()) else {
            continue;
        };
        contenders_count += 1;
        if acquires.iter().any(|op| op.acquired_fence().is_some()) {
            continue;
        }
        if ops.last().is_some_and(|op| op.complete_ms.is_none()) {
            continue;
        }
        let crashed = history
            .faults
            .iter()
            .any(|f| f.crash && f.worker.as_deref() == Some(crate::names::process_of(worker)));
        if crashed {
            continue;
        }
        let report = ops.iter().rev().find_map(|op| match &op.kind {
            OpKind::Report { outcome, .. } => Some((*op, *outcome)),
            _ => None,
        });
        let ended = match report {
            Some((_, outcome)) if outcome != JobReport::Failed => continue,
            Some((op, outcome)) => {
                format!("its last report was \"{outcome}\" at {} ms", op.invoke_ms)
            }
            None => "it never reported".to_owned(),
        };
        // Judged only after its paths were healthy for a whole acquire
        // deadline plus a lease: giving up during its own fault is failing
        // closed, which is right.
        let gave_up_ms = report.map_or(history.end_ms, |(op, _)| op.invoke_ms);
        let limits = history.limits;
        let healthy_ms = limits
            .acquire_deadline_ms
            .saturating_add(limits.lease_ms)
            .saturating_add(limits.tolerance_ms);
        let watched_from_ms = gave_up_ms.saturating_sub(healthy_ms);
        if health::unhealthy(
            history,
            worker,
            Paths::RedisAndStore,
            watched_from_ms,
            gave_up_ms,
        )
        .is_some()
        {
            continue;
        }
        let explanation = format!(
            "worker {worker} invoked acquire {} times from {} ms to {} ms and never acquired; {ended}",
            acquires.len(),
            first.invoke_ms,
            last.invoke_ms,
        );
        let slice = HistorySlice::default()
            .with_op(first)
            .with_op(last)
            .with_op_opt(report.map(|(op, _)| op));
        violations.push((explanation, slice));
    }
    contenders_count
}

/// Rule 2; returns how many holdings were judged.
fn holdings_bounded(
    history: &History,
    log: &[OwnershipRecord],
    derived: &Derived,
    violations: &mut Vec<(String, HistorySlice)>,
) -> usize {
    let limits = history.limits;
    let bound_ms = limits
        .hold_ms_max
        .saturating_add(limits.lease_ms)
        .saturating_add(limits.tolerance_ms);
    let holdings = derived.holdings();
    for holding in holdings {
        let held_ms = holding.duration_ms(history.end_ms);
        if held_ms <= bound_ms {
            continue;
        }
        let until = match holding.end {
            Some((end_ms, end_index)) => {
                let how = match &log[end_index].change {
                    OwnershipChange::Expired { .. } => "expiry",
                    OwnershipChange::Deleted { .. } => "deletion",
                    OwnershipChange::Overwritten { .. } => "an overwrite",
                    OwnershipChange::Lost { .. } => "the server's loss of data",
                    OwnershipChange::Set { .. } => "a new set",
                };
                format!("to {end_ms} ms, ended by {how}")
            }
            None => format!(
                "and still held it at the end of the run at {} ms",
                history.end_ms
            ),
        };
        let explanation = format!(
            "owner {} held the lock {} on {} for {held_ms} ms (from {} ms {until}), longer than \
             max hold {} ms + lease {} ms + tolerance {} ms",
            owner_text(&holding.owner),
            holding.key,
            holding.server,
            holding.start_ms,
            limits.hold_ms_max,
            limits.lease_ms,
            limits.tolerance_ms,
        );
        let mut slice =
            HistorySlice::default().with_ownership(holding.start_index, &log[holding.start_index]);
        if let Some((_, end_index)) = holding.end {
            slice = slice.with_ownership(end_index, &log[end_index]);
        }
        violations.push((explanation, slice));
    }
    holdings.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::Fault;

    use crate::verdict::Status;

    use super::super::testing::builder;
    use crate::history::HistoryBuilder;

    /// The rule on `history`, with what it reads derived as `check` does.
    fn check(history: &History) -> Verdict {
        super::check(history, &Derived::of(history))
    }

    /// w0 tries twice, is refused, and reports the job failed at `at_ms`.
    fn gives_up(builder: HistoryBuilder, at_ms: u64) -> HistoryBuilder {
        builder
            .contended("w0", "a", (at_ms - 200, at_ms - 190))
            .op(
                "w0",
                Some("a"),
                OpKind::Acquire,
                at_ms - 100,
                Some(at_ms - 90),
                crate::history::Outcome::Fail("refused".into()),
            )
            .report("w0", Some("j"), JobReport::Failed, at_ms)
    }

    #[test]
    fn giving_up_during_its_own_fault_is_failing_closed() {
        // Its store path (where its fences come from) was partitioned.
        let history = gives_up(builder().fault(100, Fault::PartitionStore(0)), 1_000)
            .fault(5_000, Fault::HealStore(0))
            .build();
        let verdict = check(&history);
        assert_ne!(verdict.status, Status::Violated, "{}", verdict.explanation);
    }

    #[test]
    fn giving_up_long_after_its_paths_healed_is_caught() {
        // Healed at 200; gives up at 4000, after 2000 + 1000 + 20 ms healthy.
        let history = gives_up(
            builder()
                .fault(100, Fault::PartitionStore(0))
                .fault(200, Fault::HealStore(0)),
            4_000,
        )
        .build();
        let verdict = check(&history);
        assert_eq!(verdict.status, Status::Violated, "{}", verdict.explanation);
        assert!(
            verdict
                .explanation
                .starts_with("worker w0 invoked acquire 2 times"),
            "{}",
            verdict.explanation
        );
    }
}
