//! `unlock-safety`: a release never deletes a lock held by another owner.
//!
//! Decided from the Redis ownership log: every `Deleted { owner: X }` must
//! fall inside a `Release` op of owner token `X` (at the whole-worker level,
//! a `Command` that carried `X`), within
//! `[invoke_ms, complete_ms]` (or `end_ms` if the release never completed —
//! its command may still have run). An acquire of `X` that did not answer
//! "acquired" counts as such a window too: a protocol that took the lease but
//! could not use it (its fence source failed, its reply was garbled) gives it
//! back before it answers, and that deletes only `X`'s own key; the window
//! runs a lease past the answer, because the give-back may still be in flight
//! when the library's own timeout makes it answer. One
//! exception keeps replication honest:
//! a replica that deletes its copy of `X`'s key after `X`'s holding of that
//! key already ended on another server (at or before the deletion) is
//! catching up, not unlocking. Without the log the verdict is `Undecided`:
//! the client cannot see whose key its release removed. A log with no
//! deletion of a lock key leaves the property `NotExercised`.

use std::collections::BTreeMap;

use super::holdings::Holding;
use super::{more, no_redis_truth, Derived};
use crate::history::{History, Op, OpKind, OwnershipChange, OwnershipRecord};
use crate::property::Property;
use crate::verdict::{owner_text, HistorySlice, Verdict};

const PROPERTY: Property = Property::UnlockSafety;

/// Judges `unlock-safety`.
pub(super) fn check(history: &History, derived: &Derived) -> Verdict {
    let Some(log) = &history.redis_truth else {
        return Verdict::undecided(
            PROPERTY,
            format!(
                "{}: whose key a release removed is unknown",
                no_redis_truth(history)
            ),
        );
    };
    let mut releases: BTreeMap<&str, Vec<&Op>> = BTreeMap::new();
    // A whole-worker lock's token-carrying command counts as its release
    // window: the harness does not guess which of them released, and a
    // command carrying `X` can only have deleted `X`'s key by comparing.
    let own_cleanup = |op: &&Op| {
        matches!(op.kind, OpKind::Release | OpKind::Command)
            || (op.kind == OpKind::Acquire && op.acquired_fence().is_none())
    };
    for op in history.ops.iter().filter(own_cleanup) {
        if let Some(owner) = op.owner.as_deref() {
            releases.entry(owner).or_default().push(op);
        }
    }
    let holdings = derived.holdings();
    // The holding each record ended, by the ending record's index.
    let ended_by: BTreeMap<usize, &Holding> = holdings
        .iter()
        .filter_map(|h| h.end.map(|(_, index)| (index, h)))
        .collect();

    // Holdings per (key, owner), so the replica rule is not quadratic.
    let mut by_owner: BTreeMap<(&str, &str), Vec<&Holding>> = BTreeMap::new();
    for h in holdings {
        by_owner.entry((&h.key, &h.owner)).or_default().push(h);
    }

    let mut deletions_count = 0_usize;
    let mut violations: Vec<(usize, &OwnershipRecord)> = Vec::new();
    for (index, record) in log.iter().enumerate() {
        let OwnershipChange::Deleted { owner } = &record.change else {
            continue;
        };
        deletions_count += 1;
        let released_by_owner = releases.get(owner.as_str()).is_some_and(|ops| {
            ops.iter().any(|op| {
                // A failed acquire's give-back may still be in flight when
                // the acquire answers (its own timeout ran out); it can land
                // until the lease would have ended anyway.
                let slack_ms = if op.kind == OpKind::Acquire {
                    history.limits.lease_ms
                } else {
                    0
                };
                let until_ms = op.end_or(history.end_ms).saturating_add(slack_ms);
                op.invoke_ms <= record.at_ms && record.at_ms <= until_ms
            })
        });
        if released_by_owner {
            continue;
        }
        let catching_up = ended_by
            .get(&index)
            .is_some_and(|deleted| ended_elsewhere(&by_owner, deleted, index, record.at_ms));
        if !catching_up {
            violations.push((index, record));
        }
    }
    let Some(&(index, record)) = violations.first() else {
        if deletions_count == 0 {
            return Verdict::not_exercised(PROPERTY, "no lock key was deleted");
        }
        return Verdict::held(
            PROPERTY,
            format!(
                "each of {deletions_count} deletions of a lock key happened during a release \
                 by the owner that held it"
            ),
        );
    };
    let OwnershipChange::Deleted { owner } = &record.change else {
        unreachable!("violations are deletions");
    };
    // The release in progress at the deletion, by someone else: the culprit.
    let culprit = history
        .ops
        .iter()
        .filter(|op| op.kind == OpKind::Release && !op.is_owner(owner))
        .filter(|op| op.invoke_ms <= record.at_ms && record.at_ms <= op.end_or(history.end_ms))
        .min_by_key(|op| op.id);
    let set = ended_by.get(&index).map(|h| (h.start_index, h.start_ms));
    let since = set.map_or(String::new(), |(_, start_ms)| {
        format!(" (set at {start_ms} ms)")
    });
    let by = match culprit {
        Some(op) => format!(
            "during a release by owner {} (worker {}, op {}), not by {}",
            owner_text(op.owner.as_deref().unwrap_or("?")),
            op.worker,
            op.id,
            owner_text(owner)
        ),
        None => format!("while no release by {} was in progress", owner_text(owner)),
    };
    let explanation = format!(
        "the lock {} of owner {}{since} was deleted at {} ms on {} {by}{}",
        record.key,
        owner_text(owner),
        record.at_ms,
        record.server,
        more(violations.len()),
    );
    let mut slice = HistorySlice::default();
    if let Some((start_index, _)) = set {
        slice = slice.with_ownership(start_index, &log[start_index]);
    }
    let slice = slice.with_ownership(index, record).with_op_opt(culprit);
    Verdict::violated(PROPERTY, explanation, slice)
}

/// Whether the same owner's holding of the same key, begun no later than
/// `deleted`'s, had already ended on another server before the deletion
/// at log position `index` (time `at_ms`): a replica catching up.
///
/// Earlier in the log, not merely at an earlier or equal millisecond: the
/// log is in the order the servers applied the records (the real world's
/// tapes merge by microsecond), and a primary's deletion replicates within
/// the same millisecond on loopback. Compared by milliseconds alone, the
/// primary's deletion and its replica's excused each other, and a release
/// that deleted a successor's lock passed (late-unlock × get-then-del on
/// real servers).
fn ended_elsewhere(
    by_owner: &BTreeMap<(&str, &str), Vec<&Holding>>,
    deleted: &Holding,
    index: usize,
    at_ms: u64,
) -> bool {
    let same = by_owner.get(&(deleted.key.as_str(), deleted.owner.as_str()));
    same.into_iter().flatten().any(|h| {
        h.server != deleted.server
            && h.start_ms <= deleted.start_ms
            && h.end
                .is_some_and(|(end_ms, end_index)| end_ms <= at_ms && end_index < index)
    })
}
