//! `unfenced-stale-write`: no write without a fence is accepted after its
//! writer's lease ended.
//!
//! The bug it names is the one most teams ship: a plain `SET key owner NX
//! PX lease`, then the work, then a compare-and-delete, and no fencing
//! token — redis-py's `Lock`, redlock-py, and most hand-written locks. The
//! lock itself is correct; what it cannot do is stop a holder that stopped
//! the world (a GC pause, a VM freeze, a swapped-out process, a slow
//! network) past its lease from writing when it wakes. Its successor has
//! taken the lock and written meanwhile, and the store, which has no fence
//! to compare, accepts the stale write over the successor's: the data is
//! corrupted and nothing reports it. This is the GC-pause scenario of Martin
//! Kleppmann's "How to do distributed locking" (2016), the reason fencing
//! tokens exist. No unfenced lock is safe under such a pause, so every
//! unfenced lock is expected to violate this property in a scenario that
//! pauses a holder past its lease; the property's job is to say so in those
//! words, rather than let the run read as a fencing detail.
//!
//! The rule, decided from what reached the servers: for every write the
//! store accepted that carried no fence (fence 0, see `lookup`), the Redis
//! ownership log must show the writer's owner token holding the lock key at
//! the moment the store committed it — inside one of its holdings (from
//! the record that set the key to the token until the record that ended
//! that, inclusive; to the end of the run if it never ended) on *some*
//! server. A replica's copy counts, so a lagging replica never raises a
//! false alarm; a key that expired, was deleted, overwritten or lost with
//! its server before the commit does not. The commit time is the store's,
//! on the run's one clock (in the simulation, Redis and the store share
//! it; a world without an ownership log leaves this `Undecided`).
//!
//! A write sent while the lease still held and committed after it ended is
//! a violation too, and the explanation says it was in flight: the store
//! accepted a write from someone who no longer held the lock, and with no
//! fence nothing could tell it apart from the successor's. What any correct
//! unfenced lock guarantees about that write is nothing, and the property
//! reports what happened, not whether the client meant well.
//!
//! Fenced writes are out of scope: with a fence the store can refuse a
//! stale write, and `fence-order` and `stale-owner-rejected` judge whether
//! it did. A run whose store accepted no write without a fence (every
//! fenced lock, always) is `NotExercised`. Without the store's log the
//! property is `Undecided` if any write without a fence was attempted;
//! without the ownership log it is `Undecided` once such a write was
//! accepted.

use super::holdings::Holding;
use super::{lookup, more, no_redis_truth, Derived, NO_STORE_TRUTH};
use crate::history::{FenceOutcome, FenceRecord, History, OpKind, OwnershipChange};
use crate::property::Property;
use crate::verdict::{owner_text, HistorySlice, Verdict};

const PROPERTY: Property = Property::UnfencedStaleWrite;

/// Judges `unfenced-stale-write`.
pub(super) fn check(history: &History, derived: &Derived) -> Verdict {
    let Some(store_log) = &history.store_truth else {
        let attempted = history
            .ops
            .iter()
            .any(|op| matches!(op.kind, OpKind::Write { fence, .. } if lookup::unfenced(fence)));
        if !attempted {
            return Verdict::not_exercised(PROPERTY, "no write without a fence was attempted");
        }
        return Verdict::undecided(
            PROPERTY,
            format!("{NO_STORE_TRUTH}: whether writes without a fence were accepted is unknown"),
        );
    };
    let unfenced: Vec<&FenceRecord> = store_log
        .iter()
        .filter(|r| r.outcome == FenceOutcome::Accepted && lookup::unfenced(r.fence))
        .collect();
    if unfenced.is_empty() {
        return Verdict::not_exercised(PROPERTY, "the store accepted no write without a fence");
    }
    if history.redis_truth.is_none() {
        return Verdict::undecided(
            PROPERTY,
            format!(
                "{}: the store accepted {} writes without a fence, and whether \
                 each writer still held its lease then is unknown",
                no_redis_truth(history),
                unfenced.len()
            ),
        );
    }
    let all = derived.holdings();
    let stale: Vec<&FenceRecord> = unfenced
        .iter()
        .copied()
        .filter(|record| !held_at(all, &record.owner, record.at_ms))
        .collect();
    let Some(&record) = stale.first() else {
        return Verdict::held(
            PROPERTY,
            format!(
                "each of {} writes without a fence was accepted while its writer held the lock",
                unfenced.len()
            ),
        );
    };
    let (explanation, slice) = explain(history, store_log, all, record);
    Verdict::violated(
        PROPERTY,
        format!("{explanation}{}", more(stale.len())),
        slice,
    )
}

/// Whether `owner` held the lock key on some server at `at_ms`.
fn held_at(all: &[Holding], owner: &str, at_ms: u64) -> bool {
    all.iter()
        .filter(|h| h.owner == owner)
        .any(|h| h.start_ms <= at_ms && h.end.is_none_or(|(end_ms, _)| at_ms <= end_ms))
}

/// "owner X (wN)": an owner with the worker whose ops carried its token.
fn who(history: &History, owner: &str) -> String {
    match history.ops.iter().find(|op| op.is_owner(owner)) {
        Some(op) => format!("owner {} ({})", owner_text(owner), op.worker),
        None => format!("owner {}", owner_text(owner)),
    }
}

/// The words and the slice for the stale `record`.
fn explain(
    history: &History,
    store_log: &[FenceRecord],
    all: &[Holding],
    record: &FenceRecord,
) -> (String, HistorySlice) {
    let redis_log = history.redis_truth.as_deref().unwrap_or_default();
    let write = lookup::write_for(history, record);
    let writer = match write {
        Some(op) => format!("{} (owner {})", op.worker, owner_text(&record.owner)),
        None => format!("owner {}", owner_text(&record.owner)),
    };
    // The writer's lease that ended last before the commit.
    let lease = all
        .iter()
        .filter(|h| h.owner == record.owner)
        .filter_map(|h| h.end.map(|(end_ms, index)| (h, end_ms, index)))
        .filter(|(_, end_ms, _)| *end_ms < record.at_ms)
        .max_by_key(|(h, end_ms, index)| (*end_ms, *index, h.start_index));
    let mut slice = HistorySlice::default()
        .with_fence(record)
        .with_op_opt(write);
    let mut ownership_indexes: Vec<usize> = Vec::new();
    let mut add_ownership = |slice: HistorySlice, index: usize| {
        if ownership_indexes.contains(&index) {
            return slice;
        }
        ownership_indexes.push(index);
        slice.with_ownership(index, &redis_log[index])
    };
    let Some((holding, end_ms, end_index)) = lease else {
        let explanation = format!(
            "stale write accepted at {} ms (seq {}) by {writer}, which held no lease on the lock \
             at any point before it — no fence to stop it",
            record.at_ms, record.seq,
        );
        return (explanation, slice);
    };
    slice = add_ownership(slice, holding.start_index);
    slice = add_ownership(slice, end_index);
    let how = match &redis_log[end_index].change {
        OwnershipChange::Expired { .. } => "expired".to_owned(),
        OwnershipChange::Deleted { .. } => "was deleted".to_owned(),
        OwnershipChange::Overwritten { to, .. } => {
            format!("was overwritten by owner {}", owner_text(to))
        }
        OwnershipChange::Lost { .. } => "was lost with its server".to_owned(),
        OwnershipChange::Set { .. } => "was set anew".to_owned(),
    };
    let in_flight = match write {
        Some(op) if op.invoke_ms <= end_ms => format!(
            " (sent at {} ms, before the lease ended: it was in flight)",
            op.invoke_ms
        ),
        _ => String::new(),
    };
    // Who took the lock after the lease, and whose accepted write the stale
    // one landed on.
    let successor = all
        .iter()
        .filter(|h| h.owner != record.owner)
        .filter(|h| h.start_ms >= end_ms && h.start_ms <= record.at_ms)
        .min_by_key(|h| (h.start_ms, h.start_index));
    let overwritten = store_log
        .iter()
        .filter(|r| r.outcome == FenceOutcome::Accepted && r.owner != record.owner)
        .filter(|r| r.seq < record.seq && r.at_ms >= end_ms)
        .max_by_key(|r| r.seq);
    let mut after = String::new();
    if let Some(next) = successor {
        slice = add_ownership(slice, next.start_index);
        after.push_str(&format!(
            "; {} had taken the lock at {} ms",
            who(history, &next.owner),
            next.start_ms
        ));
    }
    if let Some(theirs) = overwritten {
        slice = slice.with_fence(theirs);
        let whose = match successor {
            Some(next) if next.owner == theirs.owner => " and its".to_owned(),
            _ => format!(
                "{} {}'s",
                if after.is_empty() { ";" } else { ", and" },
                who(history, &theirs.owner)
            ),
        };
        after.push_str(&format!(
            "{whose} write accepted at {} ms (seq {}) was overwritten by the stale one: the data \
             is corrupted",
            theirs.at_ms, theirs.seq
        ));
    }
    let explanation = format!(
        "stale write accepted at {} ms (seq {}) by {writer} after its lease ended at {end_ms} ms \
         (the key {how} on {}){in_flight} — no fence to stop it{after}",
        record.at_ms, record.seq, holding.server,
    );
    (explanation, slice)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{HistoryBuilder, Limits, OkValue, OwnershipRecord};
    use crate::verdict::Status;

    /// The rule on `history`, with what it reads derived as `check` does.
    fn check(history: &History) -> Verdict {
        super::check(history, &Derived::of(history))
    }

    const LIMITS: Limits = Limits {
        lease_ms: 500,
        hold_ms_max: 3_000,
        renewals_max: 5,
        tolerance_ms: 20,
        acquire_deadline_ms: 10_000,
    };

    /// A lock that issues no fence: w0 acquires at 0 ms, its key set on
    /// Redis; w1 contends.
    fn unfenced_start() -> HistoryBuilder {
        let value = OkValue::Acquired { fence: None };
        HistoryBuilder::new("r", LIMITS)
            .op(
                "w0",
                Some("o0"),
                OpKind::Acquire,
                0,
                Some(2),
                crate::history::Outcome::Ok(value),
            )
            .set(1, "o0")
    }

    fn acquired_unfenced(
        b: HistoryBuilder,
        worker: &str,
        owner: &str,
        at_ms: u64,
    ) -> HistoryBuilder {
        let value = OkValue::Acquired { fence: None };
        b.op(
            worker,
            Some(owner),
            OpKind::Acquire,
            at_ms,
            Some(at_ms + 2),
            crate::history::Outcome::Ok(value),
        )
    }

    fn write(
        b: HistoryBuilder,
        worker: &str,
        owner: &str,
        job: &str,
        span: (u64, u64),
    ) -> HistoryBuilder {
        b.write(worker, owner, 0, Some(job), span, OkValue::WriteAccepted)
    }

    #[test]
    fn holds_when_every_unfenced_write_lands_inside_its_lease() {
        let b = unfenced_start();
        let b = write(b, "w0", "o0", "j0", (100, 103))
            .fence_log(102, "o0", 0, Some("j0"), FenceOutcome::Accepted)
            .released("w0", "o0", (110, 112), true)
            .deleted(111, "o0");
        let b = acquired_unfenced(b, "w1", "o1", 120).set(121, "o1");
        let h = write(b, "w1", "o1", "j1", (200, 203))
            .fence_log(202, "o1", 0, Some("j1"), FenceOutcome::Accepted)
            .expired(700, "o1")
            .build();
        let v = check(&h);
        assert_eq!(v.status, Status::Held, "{}", v.explanation);
        assert!(
            v.explanation.contains("each of 2 writes without a fence"),
            "{}",
            v.explanation
        );
    }

    /// The Kleppmann pause: w0's lease expires at 501 ms while it is
    /// paused, w1 takes the lock and writes, w0 wakes and writes at 750.
    fn paused_past_lease() -> HistoryBuilder {
        let b = unfenced_start().expired(501, "o0");
        let b = acquired_unfenced(b, "w1", "o1", 600).set(601, "o1");
        let b = write(b, "w1", "o1", "j1", (650, 653)).fence_log(
            652,
            "o1",
            0,
            Some("j1"),
            FenceOutcome::Accepted,
        );
        write(b, "w0", "o0", "j0", (748, 752)).fence_log(
            750,
            "o0",
            0,
            Some("j0"),
            FenceOutcome::Accepted,
        )
    }

    #[test]
    fn catches_a_write_accepted_after_the_writers_lease_expired() {
        let h = paused_past_lease().build();
        let v = check(&h);
        assert_eq!(v.status, Status::Violated, "{}", v.explanation);
        assert_eq!(
            v.explanation,
            "stale write accepted at 750 ms (seq 2) by w0 (owner o0) after its lease ended at \
             501 ms (the key expired on redis-0) — no fence to stop it; owner o1 (w1) had taken \
             the lock at 601 ms and its write accepted at 652 ms (seq 1) was overwritten by the \
             stale one: the data is corrupted"
        );
        // The stale record, its write, the lease's set and expiry, the
        // successor's set and its overwritten write.
        assert_eq!(v.slice.fences.len(), 2);
        assert_eq!(v.slice.op_ids, [4]);
        assert_eq!(v.slice.ownership.len(), 3);
    }

    #[test]
    fn a_write_in_flight_when_the_lease_ended_is_still_stale() {
        let b = unfenced_start();
        let h = write(b, "w0", "o0", "j0", (495, 510))
            .expired(501, "o0")
            .fence_log(505, "o0", 0, Some("j0"), FenceOutcome::Accepted)
            .build();
        let v = check(&h);
        assert_eq!(v.status, Status::Violated, "{}", v.explanation);
        assert!(
            v.explanation
                .contains("sent at 495 ms, before the lease ended"),
            "{}",
            v.explanation
        );
        assert!(
            !v.explanation.contains("corrupted"),
            "no successor wrote: {}",
            v.explanation
        );
    }

    #[test]
    fn a_commit_at_the_expiry_instant_is_still_inside_the_lease() {
        // Redis expires a key only once its deadline has passed.
        let b = unfenced_start();
        let h = write(b, "w0", "o0", "j0", (490, 502))
            .fence_log(501, "o0", 0, Some("j0"), FenceOutcome::Accepted)
            .expired(501, "o0")
            .build();
        assert_eq!(check(&h).status, Status::Held);
    }

    #[test]
    fn a_replica_still_holding_the_key_is_not_a_false_alarm() {
        let b = unfenced_start().ownership(OwnershipRecord {
            at_ms: 3,
            server: "redis-1".to_owned(),
            key: "lock:r".to_owned(),
            change: OwnershipChange::Set { owner: "o0".into() },
        });
        let h = write(b.expired(501, "o0"), "w0", "o0", "j0", (510, 512))
            .fence_log(511, "o0", 0, Some("j0"), FenceOutcome::Accepted)
            .build();
        assert_eq!(check(&h).status, Status::Held);
    }

    #[test]
    fn a_writer_that_never_held_the_lock_is_stale_too() {
        let h = write(HistoryBuilder::new("r", LIMITS), "w0", "o0", "j0", (10, 12))
            .fence_log(11, "o0", 0, Some("j0"), FenceOutcome::Accepted)
            .build();
        let v = check(&h);
        assert_eq!(v.status, Status::Violated);
        assert!(
            v.explanation.contains("held no lease on the lock"),
            "{}",
            v.explanation
        );
    }

    #[test]
    fn fenced_writes_are_not_its_business() {
        // The reference's kind of run: a fence on every write, one of them
        // stale and (wrongly) accepted — fence-order's and
        // stale-owner-rejected's to judge.
        let h = HistoryBuilder::new("r", LIMITS)
            .acquired("w0", "o0", (0, 2), 1)
            .set(1, "o0")
            .expired(501, "o0")
            .write("w0", "o0", 1, None, (700, 702), OkValue::WriteAccepted)
            .fence_log(701, "o0", 1, None, FenceOutcome::Accepted)
            .build();
        let v = check(&h);
        assert_eq!(v.status, Status::NotExercised, "{}", v.explanation);
    }

    #[test]
    fn rejected_unfenced_writes_are_not_accepted_ones() {
        let h = write(
            unfenced_start().expired(501, "o0"),
            "w0",
            "o0",
            "j0",
            (700, 702),
        )
        .fence_log(701, "o0", 0, Some("j0"), FenceOutcome::NotFound)
        .build();
        assert_eq!(check(&h).status, Status::NotExercised);
    }

    #[test]
    fn missing_truth_is_undecided_once_there_is_something_to_judge() {
        let h = paused_past_lease().without_redis_truth().build();
        let v = check(&h);
        assert_eq!(v.status, Status::Undecided);
        assert!(
            v.explanation.contains("2 writes without a fence"),
            "{}",
            v.explanation
        );
        let h = paused_past_lease().without_store_truth().build();
        assert_eq!(check(&h).status, Status::Undecided);
        let nothing = HistoryBuilder::new("r", LIMITS)
            .acquired("w0", "o0", (0, 2), 1)
            .without_store_truth()
            .build();
        assert_eq!(check(&nothing).status, Status::NotExercised);
    }

    #[test]
    fn counts_every_stale_write_and_reports_the_first() {
        let b = paused_past_lease();
        let h = write(b, "w0", "o0", "j2", (800, 802))
            .fence_log(801, "o0", 0, Some("j2"), FenceOutcome::Accepted)
            .build();
        let v = check(&h);
        assert!(
            v.explanation.starts_with("stale write accepted at 750 ms"),
            "{}",
            v.explanation
        );
        assert!(
            v.explanation.ends_with(" (and 1 more violation)"),
            "{}",
            v.explanation
        );
    }
}
