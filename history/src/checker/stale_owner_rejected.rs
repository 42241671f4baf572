//! `stale-owner-rejected`: a stale owner's write is rejected, and the worker
//! reports ownership lost and stops retrying the fence.
//!
//! Three rules, the first from the store's fence log, the others from ops:
//!
//! 1. **The store rejects the stale owner.** With fences, an owner's
//!    successor is an owner with a higher fence, and a successor that has
//!    written proves the earlier lease is over. So per resource, once an
//!    owner's write with fence `g` is accepted, no other owner's write with a
//!    fence below `g` may be accepted. (An equal fence from another owner is
//!    `fence-uniqueness`'s concern; the same owner is `fence-order`'s.)
//! 2. **The worker reports ownership lost.** After a write completes
//!    `WriteStale`, the worker's first report invoked after it — on the same
//!    job, when both name one — must be `ownership-lost`. A worker with no
//!    report afterwards is not judged here: it may have crashed (faults do
//!    not name workers), and `bounded-liveness` looks at workers that stop.
//! 3. **No retrying the fence.** After a write completes `WriteStale`, the
//!    same worker invokes at most one more write with that fence.
//!
//! Without the fence log, rule 1 cannot be decided: a violation of rule 2 or
//! 3 still gives `Violated`, otherwise the verdict is `Undecided`.
//!
//! The rules range over stale writes: a fenced write that reached the store
//! with a fence below one another owner already had accepted (or that the
//! store answered stale), and a write a worker was told was stale. A run
//! with none of those — no worker was ever stale, or the lock issues no
//! fences, which is `unfenced-stale-write`'s to judge — is `NotExercised`:
//! nothing was there to reject.

use std::collections::{BTreeMap, BTreeSet};

use super::{lookup, more, NO_STORE_TRUTH};
use crate::history::{FenceOutcome, FenceRecord, History, JobReport, OkValue, Op, OpKind, Outcome};
use crate::property::Property;
use crate::verdict::{owner_text, HistorySlice, Verdict};

const PROPERTY: Property = Property::StaleOwnerRejected;

/// Most writes with a rejected fence a worker may invoke after the rejection.
const RETRIES_AFTER_REJECTION_MAX: usize = 1;

/// Judges `stale-owner-rejected`.
pub(super) fn check(history: &History) -> Verdict {
    let mut violations: Vec<(String, HistorySlice)> = Vec::new();
    let mut stale_count = 0_usize;
    if let Some(log) = &history.store_truth {
        stale_count = store_rejects_stale(history, log, &mut violations);
    }
    let rejections = rejections(history);
    worker_reports_lost(history, &rejections, &mut violations);
    worker_stops_retrying(history, &rejections, &mut violations);

    let violations_total = violations.len();
    if let Some((explanation, slice)) = violations.into_iter().next() {
        return Verdict::violated(
            PROPERTY,
            format!("{explanation}{}", more(violations_total)),
            slice,
        );
    }
    let workers = format!(
        "{} stale rejections were each reported as ownership lost without retrying the fence",
        rejections.len()
    );
    match &history.store_truth {
        None => Verdict::undecided(
            PROPERTY,
            format!(
                "{NO_STORE_TRUTH} (whether the store rejected stale owners is unknown); {workers}"
            ),
        ),
        Some(_) if stale_count == 0 && rejections.is_empty() => Verdict::not_exercised(
            PROPERTY,
            "no fenced write from a stale owner reached the store, and no worker was told \
             its write was stale",
        ),
        Some(_) => Verdict::held(
            PROPERTY,
            format!(
                "{stale_count} fenced writes from stale owners reached the store and none was \
                 accepted after its successor's; {workers}"
            ),
        ),
    }
}

/// Rule 1, from the fence log; returns how many stale owners' writes
/// reached the store (below another owner's accepted fence, or refused as
/// stale).
fn store_rejects_stale(
    history: &History,
    log: &[FenceRecord],
    violations: &mut Vec<(String, HistorySlice)>,
) -> usize {
    let mut highest: BTreeMap<&str, &FenceRecord> = BTreeMap::new();
    let mut stale_count = 0_usize;
    for record in log.iter().filter(|r| !lookup::unfenced(r.fence)) {
        let resource = record.resource.as_str();
        let below_successor = highest
            .get(resource)
            .is_some_and(|s| record.fence < s.fence && record.owner != s.owner);
        if below_successor || record.outcome == FenceOutcome::Stale {
            stale_count += 1;
        }
        if record.outcome != FenceOutcome::Accepted {
            continue;
        }
        match highest.get(resource) {
            Some(&successor)
                if record.fence < successor.fence && record.owner != successor.owner =>
            {
                let explanation = format!(
                    "stale write by owner {} with fence {} was accepted at {} ms (seq {}) \
                     although its successor {} had written with fence {} at {} ms (seq {})",
                    owner_text(&record.owner),
                    record.fence,
                    record.at_ms,
                    record.seq,
                    owner_text(&successor.owner),
                    successor.fence,
                    successor.at_ms,
                    successor.seq,
                );
                let slice = HistorySlice::default()
                    .with_fence(successor)
                    .with_fence(record)
                    .with_op_opt(lookup::write_for(history, successor))
                    .with_op_opt(lookup::write_for(history, record));
                violations.push((explanation, slice));
            }
            Some(&successor) if record.fence <= successor.fence => {}
            _ => {
                highest.insert(resource, record);
            }
        }
    }
    stale_count
}

/// Completed writes the store answered stale, by completion time.
fn rejections(history: &History) -> Vec<&Op> {
    let mut rejected: Vec<&Op> = history
        .ops
        .iter()
        .filter(|op| matches!(op.kind, OpKind::Write { .. }))
        .filter(|op| matches!(op.outcome, Outcome::Ok(OkValue::WriteStale { .. })))
        .filter(|op| op.complete_ms.is_some())
        .collect();
    rejected.sort_by_key(|op| (op.complete_ms, op.id));
    rejected
}

fn write_fence_job(op: &Op) -> (i64, Option<&str>) {
    match &op.kind {
        OpKind::Write { fence, job_id } => (*fence, job_id.as_deref()),
        _ => unreachable!("rejections are writes"),
    }
}

/// Rule 2: the first report after a rejection says ownership lost.
fn worker_reports_lost(
    history: &History,
    rejections: &[&Op],
    violations: &mut Vec<(String, HistorySlice)>,
) {
    for &rejected in rejections {
        let rejected_ms = rejected.complete_ms.expect("rejections completed");
        let (fence, job) = write_fence_job(rejected);
        let report = history
            .ops
            .iter()
            .filter(|op| op.worker == rejected.worker && op.invoke_ms >= rejected_ms)
            .filter_map(|op| match &op.kind {
                OpKind::Report { outcome, job_id } => {
                    let same_job = job.is_none() || job_id.is_none() || job == job_id.as_deref();
                    same_job.then_some((op, outcome))
                }
                _ => None,
            })
            .min_by_key(|(op, _)| (op.invoke_ms, op.id));
        let Some((report, said)) = report else {
            continue;
        };
        if *said != JobReport::OwnershipLost {
            let explanation =
                format!(
                "worker {}'s write with fence {fence} was rejected as stale at {rejected_ms} ms, \
                 but it then reported \"{said}\" at {} ms instead of \"{}\"",
                rejected.worker, report.invoke_ms, JobReport::OwnershipLost,
            );
            let slice = HistorySlice::default().with_op(rejected).with_op(report);
            violations.push((explanation, slice));
        }
    }
}

/// Rule 3: at most one more write with a rejected fence.
fn worker_stops_retrying(
    history: &History,
    rejections: &[&Op],
    violations: &mut Vec<(String, HistorySlice)>,
) {
    // Judge each (worker, fence) once, from its first rejection.
    let mut judged: BTreeSet<(&str, i64)> = BTreeSet::new();
    for &rejected in rejections {
        let (fence, _) = write_fence_job(rejected);
        if !judged.insert((rejected.worker.as_str(), fence)) {
            continue;
        }
        let rejected_ms = rejected.complete_ms.expect("rejections completed");
        let mut retries: Vec<&Op> = history
            .ops
            .iter()
            .filter(|op| op.id != rejected.id && op.worker == rejected.worker)
            .filter(|op| matches!(op.kind, OpKind::Write { fence: f, .. } if f == fence))
            .filter(|op| op.invoke_ms >= rejected_ms)
            .collect();
        if retries.len() <= RETRIES_AFTER_REJECTION_MAX {
            continue;
        }
        retries.sort_by_key(|op| (op.invoke_ms, op.id));
        let explanation = format!(
            "worker {} (owner {}) wrote with fence {fence} {} more times after it was rejected \
             as stale at {rejected_ms} ms (at most {RETRIES_AFTER_REJECTION_MAX} allowed)",
            rejected.worker,
            owner_text(rejected.owner.as_deref().unwrap_or("?")),
            retries.len(),
        );
        let slice = HistorySlice::default()
            .with_op(rejected)
            .with_op(retries[0])
            .with_op(retries[1]);
        violations.push((explanation, slice));
    }
}
