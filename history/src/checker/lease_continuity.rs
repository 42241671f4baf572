//! `lease-continuity`: a healthy holder never loses its lease while its job
//! runs, except at the maximum hold.
//!
//! A lease that lapses under a worker that is still working is the start of
//! every stale write: someone else acquires, and the two work at once until
//! the fence (if any) stops one. When the worker was paused, partitioned or
//! losing replies, the lapse is the fault's doing and the fence's business.
//! When nothing was wrong with its paths, the lock itself let the lease go:
//! it renewed too late (an interval at or above the lease), too little (a
//! renewal count or hold limit below what the job needs, without telling
//! the job), with the wrong unit (`PEXPIRE` given seconds), or its renewal
//! task died quietly. This property catches those, from what the servers
//! did, at both plug-in levels.
//!
//! **The rule** (from the Redis ownership log and the ops). A holding of
//! owner token `X` that ended by **expiry** (at its deadline) or was
//! **overwritten** by another owner, judged when:
//!
//! - a worker's acquire of `X` was answered "acquired" (the holder is
//!   known), the worker had not crashed or reported the job, and it still
//!   sent its token after the end (plus the tolerance) — a renewal, a
//!   write, its release: it still held the lock in its own mind;
//! - the holding ended less than `hold_ms_max` (minus the tolerance) after
//!   the acquire's invoke, from which a library counts its hold: at the
//!   hold limit a lock must let go, and the library signals the job;
//! - the worker had fewer than `renewals_max` confirmed renewals of `X`:
//!   the renewal limit is the library's to enforce;
//! - the worker's Redis path was healthy for the whole last lease before the
//!   end: no pause, partition, dropped replies or added latency of that
//!   worker, and Redis was not stopped, restarted or failed over, in
//!   `[end − lease_ms − tolerance, end]`.
//!
//! Such a holding is a violation, reported with the gap between the last
//! moment the worker could have extended it and its end. A run with no
//! holding whose holder is known is not exercised. Without the ownership
//! log the verdict is undecided.

use std::collections::BTreeMap;

use super::health::{self, Paths};
use super::{more, no_redis_truth, Derived};
use crate::history::{History, OkValue, Op, OpKind, Outcome, OwnershipChange};
use crate::property::Property;
use crate::verdict::{owner_text, HistorySlice, Verdict};

const PROPERTY: Property = Property::LeaseContinuity;

/// Judges `lease-continuity`.
pub(super) fn check(history: &History, derived: &Derived) -> Verdict {
    let Some(log) = &history.redis_truth else {
        return Verdict::undecided(
            PROPERTY,
            format!(
                "{}: when each lease ended is unknown",
                no_redis_truth(history)
            ),
        );
    };
    let limits = history.limits;
    let mut acquires: BTreeMap<&str, Vec<&Op>> = BTreeMap::new();
    for op in &history.ops {
        if let (Some(_), Some(owner)) = (op.acquired_fence(), op.owner.as_deref()) {
            acquires.entry(owner).or_default().push(op);
        }
    }
    let all = derived.holdings();
    let mut judged = 0_usize;
    let mut violations: Vec<(String, HistorySlice)> = Vec::new();
    for holding in all {
        let Some(acquire) = acquires.get(holding.owner.as_str()).and_then(|ops| {
            ops.iter()
                .copied()
                .filter(|op| op.invoke_ms <= holding.start_ms.saturating_add(limits.tolerance_ms))
                .max_by_key(|op| (op.invoke_ms, op.id))
        }) else {
            continue;
        };
        judged += 1;
        let Some((end_ms, end_index)) = holding.end else {
            continue;
        };
        let taken_by = match &log[end_index].change {
            OwnershipChange::Expired { .. } => None,
            OwnershipChange::Overwritten { to, .. } if *to != holding.owner => Some(to.as_str()),
            _ => continue,
        };
        let worker = acquire.worker.as_str();
        let Some(working) = still_working(history, acquire, end_ms) else {
            continue;
        };
        // Counted from the acquire's invoke, as a library counts its hold:
        // a server's holding can start later than the lock's own (a replica
        // applies the key when replication brings it, hundreds of ms late
        // on a loaded machine), and a copy that starts late reaches the
        // hold limit's deadline having "held" less than the limit.
        let held_ms = end_ms.saturating_sub(acquire.invoke_ms);
        if held_ms.saturating_add(limits.tolerance_ms) >= limits.hold_ms_max {
            continue;
        }
        let renewals = own_ops(history, acquire)
            .filter(|op| op.is_successful_renew())
            .count();
        if renewals >= limits.renewals_max as usize {
            continue;
        }
        let watched_from_ms = end_ms
            .saturating_sub(limits.lease_ms + limits.tolerance_ms)
            .max(holding.start_ms);
        if health::unhealthy(history, worker, Paths::Redis, watched_from_ms, end_ms).is_some() {
            continue;
        }
        let last_ms = own_ops(history, acquire)
            .filter(|op| may_extend(op) && op.invoke_ms <= end_ms)
            .map(|op| extended_at(history, op).min(end_ms))
            .max()
            .unwrap_or(acquire.invoke_ms)
            .max(acquire.invoke_ms);
        let how = match taken_by {
            None => "expired".to_owned(),
            Some(other) => format!("was overwritten by owner {}", owner_text(other)),
        };
        let explanation = format!(
            "{worker}'s lease (owner {}) {how} at {end_ms} ms while its job still ran ({working}) \
             and its Redis path was healthy: held {held_ms} ms of a {} ms maximum, the last \
             moment it could have been extended was {last_ms} ms — a gap of {} ms against a \
             lease of {} ms",
            owner_text(&holding.owner),
            limits.hold_ms_max,
            end_ms.saturating_sub(last_ms),
            limits.lease_ms,
        );
        let slice = HistorySlice::default()
            .with_op(acquire)
            .with_ownership(holding.start_index, &log[holding.start_index])
            .with_ownership(end_index, &log[end_index]);
        violations.push((explanation, slice));
    }
    if judged == 0 {
        return Verdict::not_exercised(PROPERTY, "no lock holding had a known holder");
    }
    let total = violations.len();
    match violations.into_iter().next() {
        Some((explanation, slice)) => {
            Verdict::violated(PROPERTY, format!("{explanation}{}", more(total)), slice)
        }
        None => Verdict::held(
            PROPERTY,
            format!(
                "{judged} holdings with a known holder; none lapsed under a working holder \
                 with healthy paths before the hold limit"
            ),
        ),
    }
}

/// The ops of `acquire`'s worker with its owner token, from the acquire on.
fn own_ops<'h>(history: &'h History, acquire: &'h Op) -> impl Iterator<Item = &'h Op> + 'h {
    history.ops.iter().filter(move |op| {
        op.worker == acquire.worker
            && op.owner == acquire.owner
            && op.invoke_ms >= acquire.invoke_ms
    })
}

/// Whether `op` may have extended its owner's key.
fn may_extend(op: &Op) -> bool {
    matches!(
        (&op.kind, &op.outcome),
        (OpKind::Acquire, _)
            | (OpKind::Command, Outcome::Ok(_))
            | (OpKind::Renew, Outcome::Ok(OkValue::Renewed))
            | (OpKind::Renew, Outcome::Indeterminate(_))
    )
}

/// The latest moment `op` can have extended the key: its invoke when it
/// was answered (the server counts the lease from about then), its
/// completion — or the run's end — when the answer never came.
fn extended_at(history: &History, op: &Op) -> u64 {
    match op.outcome {
        Outcome::Indeterminate(_) => op.end_or(history.end_ms),
        _ => op.invoke_ms,
    }
}

/// Evidence, in words, that `acquire`'s worker still held the lock in its
/// own mind at `end_ms` (plus the tolerance): it still sent its token — a
/// renewal, a write, its release — after that. A report alone is no
/// evidence (a job may end without releasing, and its lease then runs out
/// harmlessly). `None` without evidence, when the job was reported before
/// the end, or when the worker had crashed.
fn still_working(history: &History, acquire: &Op, end_ms: u64) -> Option<String> {
    let crashed = history.faults.iter().any(|f| {
        f.crash
            && f.worker.as_deref() == Some(crate::names::process_of(&acquire.worker))
            && f.at_ms <= end_ms
    });
    if crashed {
        return None;
    }
    let bound_ms = end_ms.saturating_add(history.limits.tolerance_ms);
    let reported_before = history.ops.iter().any(|op| {
        op.worker == acquire.worker
            && matches!(op.kind, OpKind::Report { .. })
            && op.invoke_ms >= acquire.invoke_ms
            && op.invoke_ms <= bound_ms
    });
    if reported_before {
        return None;
    }
    own_ops(history, acquire)
        .filter(|op| op.id != acquire.id && op.invoke_ms > bound_ms)
        .min_by_key(|op| (op.invoke_ms, op.id))
        .map(|op| {
            let what = match op.kind {
                OpKind::Write { .. } => "wrote",
                OpKind::Renew => "renewed",
                OpKind::Release => "released",
                _ => "sent its token",
            };
            format!("it still {what} at {} ms", op.invoke_ms)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::Fault;
    use crate::history::{JobReport, OwnershipRecord};
    use crate::verdict::Status;

    use super::super::testing::builder;

    /// The rule on `history`, with what it reads derived as `check` does.
    fn check(history: &History) -> Verdict {
        super::check(history, &Derived::of(history))
    }

    #[test]
    fn a_renewed_lease_held_to_the_release_holds() {
        let history = builder()
            .acquired("w0", "a", (0, 10), 1)
            .set(10, "a")
            .renewed("w0", "a", (300, 310))
            .renewed("w0", "a", (600, 610))
            .released("w0", "a", (900, 910), true)
            .deleted(905, "a")
            .report("w0", Some("j"), JobReport::Success, 910)
            .build();
        let verdict = check(&history);
        assert_eq!(verdict.status, Status::Held, "{}", verdict.explanation);
    }

    #[test]
    fn a_lease_that_lapses_under_a_healthy_working_holder_is_caught() {
        // Renews once, too late for the lease, and the job runs on.
        let history = builder()
            .acquired("w0", "a", (0, 10), 1)
            .set(10, "a")
            .renewed("w0", "a", (400, 410))
            .expired(1_410, "a")
            .released("w0", "a", (1_900, 1_910), false)
            .report("w0", Some("j"), JobReport::Success, 2_000)
            .build();
        let verdict = check(&history);
        assert_eq!(verdict.status, Status::Violated, "{}", verdict.explanation);
        assert!(
            verdict
                .explanation
                .starts_with("w0's lease (owner a) expired at 1410 ms while its job still ran"),
            "{}",
            verdict.explanation
        );
        assert!(
            verdict.explanation.contains("a gap of 1010 ms"),
            "{}",
            verdict.explanation
        );
    }

    #[test]
    fn a_lapse_during_a_pause_is_the_faults_doing() {
        let history = builder()
            .acquired("w0", "a", (0, 10), 1)
            .set(10, "a")
            .fault(100, Fault::PauseWorker(0))
            .expired(1_010, "a")
            .fault(2_000, Fault::ResumeWorker(0))
            .released("w0", "a", (2_050, 2_060), false)
            .report("w0", Some("j"), JobReport::OwnershipLost, 2_100)
            .build();
        assert_eq!(check(&history).status, Status::Held);
    }

    #[test]
    fn the_hold_limit_lets_the_lease_go() {
        let mut b = builder().acquired("w0", "a", (0, 10), 1).set(10, "a");
        for n in 1..10_u64 {
            b = b.renewed("w0", "a", (n * 300, n * 300 + 10));
        }
        let history = b
            .expired(3_010, "a")
            .released("w0", "a", (4_900, 4_910), false)
            .report("w0", Some("j"), JobReport::OwnershipLost, 5_000)
            .build();
        assert_eq!(check(&history).status, Status::Held);
    }

    /// A replica's copy of the holding starts when replication brings the
    /// key — here 850 ms after the acquire — and expires at the same hold
    /// limit: it lasted less than the limit, but the lock's hold did not.
    /// The primary's copy ending early under the same worker is still a
    /// violation.
    #[test]
    fn the_hold_limit_counts_from_the_acquire_not_from_a_late_copy() {
        let on_replica = |at_ms, change| {
            move |mut history: History| {
                let log = history.redis_truth.get_or_insert_with(Vec::new);
                let key = log[0].key.clone();
                log.push(OwnershipRecord {
                    at_ms,
                    server: "replica".to_owned(),
                    key,
                    change,
                });
                history
            }
        };
        let limit = |b: crate::history::HistoryBuilder| {
            let mut b = b.acquired("w0", "a", (0, 10), 1).set(10, "a");
            for n in 1..10_u64 {
                b = b.renewed("w0", "a", (n * 300, n * 300 + 10));
            }
            b
        };
        let owner = || "a".to_owned();
        let history = limit(builder())
            .expired(3_010, "a")
            .released("w0", "a", (4_900, 4_910), false)
            .report("w0", Some("j"), JobReport::OwnershipLost, 5_000)
            .build();
        let history = on_replica(850, OwnershipChange::Set { owner: owner() })(history);
        let history = on_replica(3_010, OwnershipChange::Expired { owner: owner() })(history);
        assert_eq!(
            check(&history).status,
            Status::Held,
            "{}",
            check(&history).explanation
        );

        let early = limit(builder())
            .expired(2_000, "a")
            .released("w0", "a", (4_900, 4_910), false)
            .report("w0", Some("j"), JobReport::OwnershipLost, 5_000)
            .build();
        assert_eq!(check(&early).status, Status::Violated);
    }

    #[test]
    fn a_holding_without_a_known_holder_is_not_exercised() {
        let history = builder().set(10, "a").expired(1_010, "a").build();
        assert_eq!(check(&history).status, Status::NotExercised);
    }
}
