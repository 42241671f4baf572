//! `fail-closed`: no protected write is accepted without a successful acquire.
//!
//! Decided from the store's fence log and the ops. Every accepted record must
//! have behind it a completed `Acquire` by the same owner token answered
//! `Acquired { fence: Some(f) }` with the record's fence, completed no later
//! than the write was invoked. An acquire that ended `Indeterminate` or
//! `Fail`, or issued no fence, does not count: a client that writes after
//! one of those did not fail closed. The write's invoke is the latest
//! matching write op invoked by the commit (plus tolerance); a record with no
//! write op behind it (a write the client never reported) is bounded by its
//! commit time. Without the log the verdict is `Undecided`.
//!
//! The Redis ownership log counts too: an owner the server granted the
//! lock to (the key held its token) before its write was invoked, and
//! whose acquire was answered, is covered even when that answer was read
//! as not acquired — at the
//! whole-worker level an acquire is classified by reading the key just
//! after the reply, and a failover in between loses the grant. This
//! applies only to owners with no acquire answered "acquired", so a fence
//! mismatch between a real acquire and its write is still judged.
//!
//! A write without a fence (fence 0) is judged by what the lock is. A lock
//! that issues no fences at all (no acquire in the run issued one, no
//! fenced write reached the store: a plain `SET NX PX` lock) cannot fail
//! closed on a fence it never promised, so for its writes the rule asks
//! only what it can of any lock: a completed successful acquire by the same
//! owner token, completed no later than the write was invoked. Whether such
//! a write was stale is `unfenced-stale-write`'s question, and reading "its
//! acquire issued no fence" here would hide the data it lost behind a
//! fencing detail. A lock that does issue fences and writes without one —
//! its fence step failed and it went ahead — failed open, and is judged as
//! any fenced write is: its acquire issued no fence.
//!
//! A second rule reads the Redis ownership log: **a failed acquire leaves no
//! lock behind.** A holding whose owner token's every acquire ended in a
//! definite `Fail` — the client was told "no" and walked away — must not
//! outlive that answer (by more than the tolerance) and then run out by
//! expiry or last to the end of the run: a protocol that sets the lock and
//! then fails (for example, asking for the fence after taking the lock)
//! blocks every contender for a whole lease with a lock nobody holds. A
//! holding that ended by deletion was cleaned up and is fine (so is one
//! whose server died, on any server: a replica's leftover copy of a key the
//! primary lost proves nothing about the client); one that
//! expired before the failure was answered (the client was paused, say)
//! left nothing behind by walking away. Only acquires answered before the
//! run's first injected fault are judged: once faults fly, a best-effort
//! give-back can fail to get through for any protocol, and that is not a
//! design that walks away from its lock. Without the
//! ownership log this rule cannot be decided: a violation of the first rule
//! still gives `Violated`, otherwise the verdict is `Undecided`.
//!
//! The rules range over accepted writes (each needs its acquire) and over
//! acquires that did not succeed (failed or indeterminate: where a client
//! must fail closed, by not writing and by leaving no lock behind); a run
//! with neither is `NotExercised`.

use std::collections::BTreeMap;

use super::{lookup, more, no_redis_truth, Derived, NO_STORE_TRUTH};
use crate::history::{FenceOutcome, FenceRecord, History, Op, OpKind, Outcome, OwnershipChange};
use crate::property::Property;
use crate::verdict::{owner_text, HistorySlice, Verdict};

const PROPERTY: Property = Property::FailClosed;

/// Judges `fail-closed`.
pub(super) fn check(history: &History, derived: &Derived) -> Verdict {
    let Some(log) = &history.store_truth else {
        return Verdict::undecided(PROPERTY, NO_STORE_TRUTH);
    };
    // Earliest completion of a successful acquire, per (owner, fence), and
    // per owner whatever the fence (for writes without one).
    let mut acquired_ms: BTreeMap<(&str, i64), u64> = BTreeMap::new();
    let mut acquired_any_ms: BTreeMap<&str, u64> = BTreeMap::new();
    for op in &history.ops {
        if let (Some(fence), Some(owner), Some(complete_ms)) =
            (op.acquired_fence(), op.owner.as_deref(), op.complete_ms)
        {
            let any = acquired_any_ms.entry(owner).or_insert(complete_ms);
            *any = (*any).min(complete_ms);
            if let Some(fence) = fence {
                let entry = acquired_ms.entry((owner, fence)).or_insert(complete_ms);
                *entry = (*entry).min(complete_ms);
            }
        }
    }
    // The servers' own grants, per owner: the first moment the lock key
    // held its token. They stand in for an acquire whose reply the
    // harness read as "not acquired" (a whole worker's acquire is
    // classified by reading the key right after the reply, and a failover
    // in between loses the key the server had granted) — only for owners
    // with no acquire answered "acquired" at all, so a fence mismatch
    // between a real acquire and its write is still judged.
    // And only where that acquire was answered: a client that wrote after
    // an acquire whose reply never came did not fail closed, whatever the
    // server had done.
    let mut granted_ms: BTreeMap<&str, u64> = BTreeMap::new();
    for record in history.redis_truth.iter().flatten() {
        if let Some(owner) = record.change.started_owner() {
            let first = granted_ms.entry(owner).or_insert(record.at_ms);
            *first = (*first).min(record.at_ms);
        }
    }
    let mut answered_ms: BTreeMap<&str, u64> = BTreeMap::new();
    for op in &history.ops {
        if let (OpKind::Acquire, Outcome::Ok(_), Some(owner), Some(complete_ms)) =
            (&op.kind, &op.outcome, op.owner.as_deref(), op.complete_ms)
        {
            let first = answered_ms.entry(owner).or_insert(complete_ms);
            *first = (*first).min(complete_ms);
        }
    }
    // Whether this lock issues fences at all (see the module doc).
    let fenced_lock = acquired_ms
        .keys()
        .any(|(_, fence)| !lookup::unfenced(*fence))
        || log.iter().any(|r| !lookup::unfenced(r.fence));
    let mut violations: Vec<(&FenceRecord, Option<&Op>, u64)> = Vec::new();
    let mut accepted_count = 0_usize;
    let writes = lookup::writes_by_token(history);
    for record in log.iter().filter(|r| r.outcome == FenceOutcome::Accepted) {
        accepted_count += 1;
        let token_writes = writes
            .get(&(record.owner.as_str(), record.fence))
            .map_or(&[][..], Vec::as_slice);
        let write = lookup::pick_write(token_writes, record, history.limits.tolerance_ms);
        let write_invoke_ms = write.map_or(record.at_ms, |op| op.invoke_ms);
        let acquired = if !fenced_lock && lookup::unfenced(record.fence) {
            acquired_any_ms.get(record.owner.as_str())
        } else {
            acquired_ms.get(&(record.owner.as_str(), record.fence))
        };
        let owner = record.owner.as_str();
        let granted = !acquired_any_ms.contains_key(owner)
            && granted_ms
                .get(owner)
                .is_some_and(|&at_ms| at_ms <= write_invoke_ms)
            && answered_ms
                .get(owner)
                .is_some_and(|&at_ms| at_ms <= write_invoke_ms);
        let covered =
            granted || acquired.is_some_and(|&complete_ms| complete_ms <= write_invoke_ms);
        if !covered {
            violations.push((record, write, write_invoke_ms));
        }
    }
    let Some(&(record, write, write_invoke_ms)) = violations.first() else {
        if let Some(verdict) = orphan_lock(history, derived) {
            return verdict;
        }
        let unsuccessful_count = history
            .ops
            .iter()
            .filter(|op| op.kind == OpKind::Acquire)
            .filter(|op| matches!(op.outcome, Outcome::Fail(_) | Outcome::Indeterminate(_)))
            .count();
        let writes = format!(
            "each of {accepted_count} accepted writes followed a completed successful acquire \
             by its owner (of its fence, where it carried one)"
        );
        // As bounded-liveness does: half a property is not a verdict.
        if history.redis_truth.is_none() {
            return Verdict::undecided(
                PROPERTY,
                format!(
                    "{writes}, but whether a failed acquire left a lock behind is unknown \
                     ({})",
                    no_redis_truth(history)
                ),
            );
        }
        if accepted_count == 0 && unsuccessful_count == 0 {
            return Verdict::not_exercised(
                PROPERTY,
                "the store accepted no write and every acquire succeeded or was contended",
            );
        }
        return Verdict::held(
            PROPERTY,
            format!(
                "{writes}; {unsuccessful_count} acquires failed or ended unknown, and no \
                 failed acquire left a lock behind"
            ),
        );
    };
    let acquire = closest_acquire(history, &record.owner, record.fence);
    let why = match acquire {
        None => format!("{} never invoked an acquire", owner_text(&record.owner)),
        Some(op) => acquire_failure(op, record.fence, write_invoke_ms),
    };
    let explanation = format!(
        "write by owner {} with fence {} was accepted at {} ms (seq {}), but {why}{}",
        owner_text(&record.owner),
        record.fence,
        record.at_ms,
        record.seq,
        more(violations.len()),
    );
    let slice = HistorySlice::default()
        .with_fence(record)
        .with_op_opt(write)
        .with_op_opt(acquire);
    Verdict::violated(PROPERTY, explanation, slice)
}

/// The first lock left behind by an owner whose every acquire definitely
/// failed, as a violation (see the module doc).
fn orphan_lock(history: &History, derived: &Derived) -> Option<Verdict> {
    let log = history.redis_truth.as_ref()?;
    let mut acquires: BTreeMap<&str, Vec<&Op>> = BTreeMap::new();
    for op in &history.ops {
        if let (OpKind::Acquire, Some(owner)) = (&op.kind, op.owner.as_deref()) {
            acquires.entry(owner).or_default().push(op);
        }
    }
    let tolerance_ms = history.limits.tolerance_ms;
    // Under an injected fault a best-effort give-back may not get through
    // (Redis down, replies lost, the client paused); only the healthy path
    // shows a protocol that leaves its lock behind by design.
    let first_fault_ms = history
        .faults
        .iter()
        .map(|f| f.at_ms)
        .min()
        .unwrap_or(u64::MAX);
    let all = derived.holdings();
    // A key that was deleted (the client's own clean-up) or lost with its
    // server on any server is not the client's doing; a replica's leftover
    // copy then proves nothing.
    let mut ended_by_others: BTreeMap<&str, bool> = BTreeMap::new();
    for holding in all {
        let gone = holding.end.is_some_and(|(_, index)| {
            matches!(
                log[index].change,
                OwnershipChange::Deleted { .. } | OwnershipChange::Lost { .. }
            )
        });
        *ended_by_others.entry(holding.owner.as_str()).or_default() |= gone;
    }
    let mut orphans = all.iter().filter(|holding| {
        let Some(ops) = acquires.get(holding.owner.as_str()) else {
            return false;
        };
        let failed_only = ops.iter().all(|op| matches!(op.outcome, Outcome::Fail(_)));
        let cleaned = ended_by_others[holding.owner.as_str()];
        let answered_ms = ops
            .iter()
            .filter_map(|op| op.complete_ms)
            .max()
            .unwrap_or(0);
        if answered_ms >= first_fault_ms {
            return false;
        }
        let until_ms = holding.end.map_or(history.end_ms, |(at_ms, _)| at_ms);
        failed_only && !cleaned && until_ms > answered_ms.saturating_add(tolerance_ms)
    });
    let holding = orphans.next()?;
    let others = orphans.count();
    let acquire = acquires[holding.owner.as_str()][0];
    let until = match holding.end {
        Some((at_ms, _)) => format!("until it expired at {at_ms} ms"),
        None => "until the end of the run".to_owned(),
    };
    let explanation = format!(
        "owner {}'s acquire (op {}) failed, yet its lock was set on {} at {} ms and stayed \
         {until}, blocking every contender with a lock nobody held{}",
        owner_text(&holding.owner),
        acquire.id,
        holding.server,
        holding.start_ms,
        more(others + 1),
    );
    let mut slice = HistorySlice::default()
        .with_op(acquire)
        .with_ownership(holding.start_index, &log[holding.start_index]);
    if let Some((_, index)) = holding.end {
        slice = slice.with_ownership(index, &log[index]);
    }
    Some(Verdict::violated(PROPERTY, explanation, slice))
}

/// The owner's acquire that best explains the write: one that issued this
/// fence if any, else the owner's last acquire.
fn closest_acquire<'h>(history: &'h History, owner: &str, fence: i64) -> Option<&'h Op> {
    let acquires = history
        .ops
        .iter()
        .filter(|op| op.is_owner(owner) && op.kind == OpKind::Acquire);
    let mut best: Option<&Op> = None;
    for op in acquires {
        let issued_this = op.acquired_fence() == Some(Some(fence));
        let best_issued = best.is_some_and(|b| b.acquired_fence() == Some(Some(fence)));
        let later = best.is_none_or(|b| (op.invoke_ms, op.id) > (b.invoke_ms, b.id));
        if (issued_this && !best_issued) || (issued_this == best_issued && later) {
            best = Some(op);
        }
    }
    best
}

/// Why `acquire` does not cover a write of `fence` invoked at `write_invoke_ms`.
fn acquire_failure(acquire: &Op, fence: i64, write_invoke_ms: u64) -> String {
    let id = acquire.id;
    match (&acquire.outcome, acquire.acquired_fence()) {
        (Outcome::Indeterminate(why), _) => {
            format!("its acquire (op {id}) ended indeterminate ({why})")
        }
        (Outcome::Fail(why), _) => format!("its acquire (op {id}) failed ({why})"),
        (_, Some(None)) => format!(
            "its acquire (op {id}) issued no fence, though this lock issues fences: it wrote \
             without one instead of failing closed"
        ),
        (_, Some(Some(f))) if f == fence => format!(
            "its acquire of fence {fence} (op {id}) completed only at {} ms, after the write \
             was invoked at {write_invoke_ms} ms",
            acquire.complete_ms.unwrap_or(acquire.invoke_ms)
        ),
        (_, Some(Some(f))) => format!("its acquire (op {id}) issued fence {f}, not {fence}"),
        (Outcome::Ok(value), None) => {
            format!("its acquire (op {id}) did not acquire ({value:?})")
        }
    }
}
