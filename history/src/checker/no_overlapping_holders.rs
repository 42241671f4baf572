//! `no-overlapping-holders`: no two workers write to one resource while
//! both hold unexpired leases on it.
//!
//! This is mutual exclusion as a team means it: at no moment do two
//! workers each believe, rightly by their lease's terms, that the resource
//! is theirs, and act on it. Fences make such a moment *safe* for the data;
//! this property says whether the *lock* let it happen at all.
//!
//! **Leases.** Every acquisition — an `Acquire` answered `Acquired` (at the
//! whole-worker level: the server showed the worker's token on the key) —
//! starts a lease for its worker and owner token. The lease is valid from
//! the answer until `lease_ms` after the latest moment the client can have
//! counted from: the acquire's invoke, each confirmed `Renew` of that token
//! by that worker, and (whole-worker level) each of its token-carrying
//! `Command`s sent while the server still held its key. A lease is never
//! valid across a gap: a renewal after it lapsed starts a new stretch. An
//! expired lease is not held. It ends early at the worker's own release
//! (the `Release` invoke), or when the server ended its holding by the
//! worker's own doing, by expiry, or by losing it (`Lost`: the server died
//! with the key; that a failover can then hand the lock out twice is a fact
//! of asynchronous replication — only fences make it safe, and
//! `stale-owner-rejected` judges them). A holding another worker's command
//! ended (deleted or overwritten) does **not** end the victim's lease: the
//! victim cannot know, and keeps acting.
//!
//! **Holders.** A worker that runs several jobs at once records each job
//! slot under a name of its own (`w0.0`, `w0.1`; see
//! [`crate::names::task_name`]), and each slot is a holder: two jobs of one
//! process that both believe the lock is theirs act on the resource at
//! once as surely as two processes do, even under one owner token.
//!
//! **The rule.** A write invoked by worker `A` under a valid lease, while
//! another worker `B` also held a valid lease under which `B` wrote, is a
//! violation. No correct lock allows it on a server that keeps its state:
//! the second acquire can only succeed once the first key is gone, by
//! expiry (which the server counts from after the client's invoke, so after
//! the client's own validity), by the holder's own release, or by a bug.
//!
//! At the whole-worker level the release is one of the lock's own
//! commands, so a lease's end comes from the server's log; without the log
//! (a real server's recording with a gap) the verdict is undecided there. At the step level
//! the client's own ops decide it.
//!
//! Real bugs it catches: `SET` without `NX` (or a misread "nil" reply taken
//! as success), owner tokens shared between workers, an unlock that deletes
//! another worker's key so a third worker acquires beside its victim. With
//! no write under two valid leases it holds; with no write under a lease
//! at all it is not exercised.

use std::collections::BTreeMap;

use super::{more, no_redis_truth, Derived};
use crate::history::{History, OkValue, Op, OpKind, Outcome, OwnershipChange};
use crate::property::Property;
use crate::verdict::{owner_text, HistorySlice, Verdict};

const PROPERTY: Property = Property::NoOverlappingHolders;

/// Most stretches one acquisition's lease is split into (each renewal
/// after a gap starts one); more are merged into the last.
const STRETCHES_MAX: usize = 1_024;

/// One acquisition's lease: who, and the stretches it was valid.
#[derive(Debug)]
struct Lease<'h> {
    acquire: &'h Op,
    worker: &'h str,
    owner: &'h str,
    /// `[from_ms, until_ms)` stretches, in time order.
    stretches: Vec<(u64, u64)>,
}

impl Lease<'_> {
    /// The stretch containing `at_ms`, if the lease was valid then.
    fn stretch_at(&self, at_ms: u64) -> Option<(u64, u64)> {
        self.stretches
            .iter()
            .copied()
            .find(|&(from_ms, until_ms)| from_ms <= at_ms && at_ms < until_ms)
    }
}

/// Judges `no-overlapping-holders`.
pub(super) fn check(history: &History, derived: &Derived) -> Verdict {
    if history.redis_truth.is_none() && history.ops.iter().any(|op| op.kind == OpKind::Command) {
        // A whole-worker lock's release is one of its commands: only the
        // server's log says which, so without it a lease's end is unknown.
        return Verdict::undecided(
            PROPERTY,
            format!(
                "{}: when a whole-worker lock's leases ended (which of its \
                 commands released) is unknown",
                no_redis_truth(history)
            ),
        );
    }
    let leases = leases(history, derived);
    // Writes under a valid lease, with the lease and its stretch.
    let mut covered: Vec<(&Op, usize, (u64, u64))> = Vec::new();
    for op in &history.ops {
        if !matches!(op.kind, OpKind::Write { .. }) {
            continue;
        }
        let Some(owner) = op.owner.as_deref() else {
            continue;
        };
        let found = leases.iter().enumerate().find_map(|(index, lease)| {
            (lease.worker == op.worker && lease.owner == owner)
                .then(|| lease.stretch_at(op.invoke_ms).map(|s| (index, s)))
                .flatten()
        });
        if let Some((index, stretch)) = found {
            covered.push((op, index, stretch));
        }
    }
    if covered.is_empty() {
        return Verdict::not_exercised(PROPERTY, "no write was made under a valid lease");
    }
    covered.sort_by_key(|(op, _, _)| (op.invoke_ms, op.id));
    let mut violations: Vec<(&Op, &Op, usize, usize)> = Vec::new();
    for &(write, index, _) in &covered {
        let lease = &leases[index];
        // Another worker's lease valid at this write, under which it wrote.
        let other = covered
            .iter()
            .find(|&&(other_write, other_index, stretch)| {
                let other_lease = &leases[other_index];
                other_lease.worker != lease.worker
                    && stretch.0 <= write.invoke_ms
                    && write.invoke_ms < stretch.1
                    && other_write.id != write.id
            });
        if let Some(&(other_write, other_index, _)) = other {
            violations.push((write, other_write, index, other_index));
        }
    }
    let Some(&(write, other_write, index, other_index)) = violations.first() else {
        return Verdict::held(
            PROPERTY,
            format!(
                "{} writes under a valid lease; no two workers' leases were valid at once \
                 while both wrote",
                covered.len()
            ),
        );
    };
    let (lease, other) = (&leases[index], &leases[other_index]);
    let explanation = format!(
        "{} wrote at {} ms under its lease (owner {}, acquired at {} ms) while {} also held an \
         unexpired lease (owner {}, acquired at {} ms) and wrote under it at {} ms: two holders \
         acted on the resource at once{}",
        write.worker,
        write.invoke_ms,
        owner_text(lease.owner),
        lease.acquire.end_or(history.end_ms),
        other.worker,
        owner_text(other.owner),
        other.acquire.end_or(history.end_ms),
        other_write.invoke_ms,
        more(violations.len()),
    );
    let slice = HistorySlice::default()
        .with_op(other.acquire)
        .with_op(lease.acquire)
        .with_op(other_write)
        .with_op(write);
    Verdict::violated(PROPERTY, explanation, slice)
}

/// Every acquisition's lease (see the module doc).
fn leases<'h>(history: &'h History, derived: &'h Derived) -> Vec<Lease<'h>> {
    let lease_ms = history.limits.lease_ms;
    let mut by_token: BTreeMap<(&str, &str), Vec<&Op>> = BTreeMap::new();
    for op in &history.ops {
        if let Some(owner) = op.owner.as_deref() {
            by_token
                .entry((op.worker.as_str(), owner))
                .or_default()
                .push(op);
        }
    }
    let all = history.redis_truth.is_some().then(|| derived.holdings());
    let ends = ends_by_owner(history);
    // Whether the server held `owner`'s key at a moment (always, without
    // the log: then no command is doubted).
    let held = |owner: &str, at_ms: u64| {
        all.as_ref().is_none_or(|all| {
            all.iter()
                .filter(|h| h.owner == owner)
                .any(|h| h.start_ms <= at_ms && h.end.is_none_or(|(end_ms, _)| at_ms <= end_ms))
        })
    };
    let mut leases = Vec::new();
    for ((worker, owner), mut ops) in by_token {
        ops.sort_by_key(|op| (op.invoke_ms, op.id));
        let acquires: Vec<&Op> = ops
            .iter()
            .copied()
            .filter(|op| op.acquired_fence().is_some())
            .collect();
        for (n, &acquire) in acquires.iter().enumerate() {
            let start_ms = acquire.end_or(history.end_ms);
            // The next acquisition of the same token starts its own lease.
            let next_ms = acquires.get(n + 1).map_or(u64::MAX, |a| a.invoke_ms);
            let mut counted_from: Vec<u64> = vec![acquire.invoke_ms];
            let mut cut_ms = next_ms;
            for op in ops.iter().filter(|op| op.invoke_ms >= acquire.invoke_ms) {
                if op.invoke_ms >= next_ms {
                    break;
                }
                match (&op.kind, &op.outcome) {
                    (OpKind::Renew, Outcome::Ok(OkValue::Renewed)) => {
                        counted_from.push(op.invoke_ms);
                    }
                    (OpKind::Command, Outcome::Ok(_)) if held(owner, op.invoke_ms) => {
                        counted_from.push(op.invoke_ms);
                    }
                    (OpKind::Release, _) if op.id != acquire.id => {
                        cut_ms = cut_ms.min(op.invoke_ms);
                    }
                    _ => {}
                }
            }
            let owner_ends = ends.get(owner).map_or(&[][..], Vec::as_slice);
            cut_ms = cut_ms.min(own_end(history, owner_ends, worker, owner, start_ms));
            let mut stretches: Vec<(u64, u64)> = Vec::new();
            for from_ms in counted_from {
                let from_ms = from_ms.max(start_ms);
                let until_ms = from_ms.saturating_add(lease_ms).min(cut_ms);
                if from_ms >= until_ms {
                    continue;
                }
                let full = stretches.len() >= STRETCHES_MAX;
                match stretches.last_mut() {
                    Some(last) if from_ms <= last.1 => last.1 = last.1.max(until_ms),
                    Some(last) if full => last.1 = until_ms,
                    _ => stretches.push((from_ms, until_ms)),
                }
            }
            leases.push(Lease {
                acquire,
                worker,
                owner,
                stretches,
            });
        }
    }
    leases
}

/// Per owner token, the Redis log's records that ended one of its holdings
/// (expired, lost, or deleted: whether a deletion was the owner's own is
/// decided per lease, by [`own_end`]), as (when, whether a deletion), in
/// log order. Made once for all leases: scanning the whole log for each
/// lease was quadratic, a third of this property's cost under
/// `hotspot-load` (callgrind).
fn ends_by_owner(history: &History) -> BTreeMap<&str, Vec<(u64, bool)>> {
    let mut ends: BTreeMap<&str, Vec<(u64, bool)>> = BTreeMap::new();
    for record in history.redis_truth.iter().flatten() {
        let (owner, deleted) = match &record.change {
            OwnershipChange::Expired { owner } | OwnershipChange::Lost { owner } => (owner, false),
            OwnershipChange::Deleted { owner } => (owner, true),
            _ => continue,
        };
        ends.entry(owner.as_str())
            .or_default()
            .push((record.at_ms, deleted));
    }
    ends
}

/// When the server ended `owner`'s holding that was live at `after_ms` by
/// `worker`'s own doing, by expiry or by losing it — not by another
/// worker's command (see the module doc). A deletion counts as the
/// worker's own only inside the window of one of *its* commands with the
/// token: when two workers (or two jobs of one process) share a token, one
/// deleting the key does not end the other's lease — the other cannot
/// know, and keeps acting. `u64::MAX` if it did not end. `owner_ends` is
/// `owner`'s entry of [`ends_by_owner`].
fn own_end(
    history: &History,
    owner_ends: &[(u64, bool)],
    worker: &str,
    owner: &str,
    after_ms: u64,
) -> u64 {
    let in_own_window = |at_ms: u64| {
        history.ops.iter().any(|op| {
            op.worker == worker
                && op.is_owner(owner)
                && matches!(op.kind, OpKind::Release | OpKind::Command | OpKind::Acquire)
                && op.invoke_ms <= at_ms
                && at_ms <= op.end_or(history.end_ms)
        })
    };
    owner_ends
        .iter()
        .filter(|&&(at_ms, deleted)| at_ms >= after_ms && (!deleted || in_own_window(at_ms)))
        .map(|&(at_ms, _)| at_ms)
        .min()
        .unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::OkValue as V;
    use crate::verdict::Status;

    use super::super::testing::builder;

    /// The rule on `history`, with what it reads derived as `check` does.
    fn check(history: &History) -> Verdict {
        super::check(history, &Derived::of(history))
    }

    #[test]
    fn one_holder_at_a_time_holds() {
        let history = builder()
            .acquired("w0", "a", (0, 10), 1)
            .set(10, "a")
            .write("w0", "a", 1, None, (100, 110), V::WriteAccepted)
            .released("w0", "a", (120, 130), true)
            .deleted(125, "a")
            .acquired("w1", "b", (140, 150), 2)
            .set(150, "b")
            .write("w1", "b", 2, None, (200, 210), V::WriteAccepted)
            .build();
        let verdict = check(&history);
        assert_eq!(verdict.status, Status::Held, "{}", verdict.explanation);
    }

    #[test]
    fn jobs_sharing_a_token_are_two_holders_and_one_release_ends_only_its_own_lease() {
        // Two jobs of w0 (slots w0.0 and w0.1) hold under one token "a";
        // w0.0's release deletes the key, w1 acquires and writes, and w0.1,
        // whose lease nothing it did ended, writes too: two holders at once.
        let history = builder()
            .acquired("w0.0", "a", (0, 10), 1)
            .set(10, "a")
            .acquired("w0.1", "a", (5, 15), 1)
            .write("w0.0", "a", 1, None, (100, 110), V::WriteAccepted)
            .released("w0.0", "a", (120, 130), true)
            .deleted(125, "a")
            .acquired("w1", "b", (140, 150), 2)
            .set(150, "b")
            .write("w1", "b", 2, None, (200, 210), V::WriteAccepted)
            .write(
                "w0.1",
                "a",
                1,
                None,
                (300, 310),
                V::WriteStale { last_fence: 2 },
            )
            .build();
        let verdict = check(&history);
        assert_eq!(verdict.status, Status::Violated, "{}", verdict.explanation);
        assert!(
            verdict.explanation.contains("w0.1") && verdict.explanation.contains("w0.0"),
            "{}",
            verdict.explanation
        );
        // With one job, its own release ends its lease: see
        // `one_holder_at_a_time_holds`.
    }

    #[test]
    fn a_second_holder_beside_an_unexpired_lease_is_caught() {
        // SET without NX: w1 overwrites w0's key while w0's lease runs.
        let history = builder()
            .acquired("w0", "a", (0, 10), 1)
            .set(10, "a")
            .acquired("w1", "b", (100, 110), 2)
            .redis(
                110,
                OwnershipChange::Overwritten {
                    from: "a".into(),
                    to: "b".into(),
                },
            )
            .write("w1", "b", 2, None, (200, 210), V::WriteAccepted)
            .write("w0", "a", 1, None, (300, 310), V::WriteAccepted)
            .build();
        let verdict = check(&history);
        assert_eq!(verdict.status, Status::Violated, "{}", verdict.explanation);
        assert!(
            verdict.explanation.starts_with("w1 wrote at 200 ms"),
            "{}",
            verdict.explanation
        );
        assert!(
            verdict.explanation.contains("w0 also held"),
            "{}",
            verdict.explanation
        );
    }

    #[test]
    fn an_expired_lease_is_not_held() {
        // w0 paused past its lease: its late write is the fence's business.
        let history = builder()
            .acquired("w0", "a", (0, 10), 1)
            .set(10, "a")
            .expired(1_010, "a")
            .acquired("w1", "b", (1_100, 1_110), 2)
            .set(1_110, "b")
            .write("w1", "b", 2, None, (1_200, 1_210), V::WriteAccepted)
            .write(
                "w0",
                "a",
                1,
                None,
                (1_300, 1_310),
                V::WriteStale { last_fence: 2 },
            )
            .build();
        let verdict = check(&history);
        assert_eq!(verdict.status, Status::Held, "{}", verdict.explanation);
    }

    #[test]
    fn a_lease_the_server_lost_is_not_the_locks_fault() {
        let history = builder()
            .acquired("w0", "a", (0, 10), 1)
            .set(10, "a")
            .redis(100, OwnershipChange::Lost { owner: "a".into() })
            .acquired("w1", "b", (200, 210), 2)
            .set(210, "b")
            .write("w1", "b", 2, None, (300, 310), V::WriteAccepted)
            .write(
                "w0",
                "a",
                1,
                None,
                (400, 410),
                V::WriteStale { last_fence: 2 },
            )
            .build();
        let verdict = check(&history);
        assert_eq!(verdict.status, Status::Held, "{}", verdict.explanation);
    }

    #[test]
    fn a_renewal_keeps_the_lease_and_a_release_ends_it() {
        // w0 renews at 800 (valid to 1800) and releases at 1000; w1 then
        // acquires and writes: w0's lease ended at its own release.
        let history = builder()
            .acquired("w0", "a", (0, 10), 1)
            .set(10, "a")
            .renewed("w0", "a", (800, 810))
            .write("w0", "a", 1, None, (900, 910), V::WriteAccepted)
            .released("w0", "a", (1_000, 1_010), true)
            .deleted(1_005, "a")
            .acquired("w1", "b", (1_020, 1_030), 2)
            .set(1_030, "b")
            .write("w1", "b", 2, None, (1_100, 1_110), V::WriteAccepted)
            .build();
        assert_eq!(check(&history).status, Status::Held);
    }

    #[test]
    fn no_write_under_a_lease_is_not_exercised() {
        let history = builder()
            .acquired("w0", "a", (0, 10), 1)
            .set(10, "a")
            .build();
        assert_eq!(check(&history).status, Status::NotExercised);
    }
}
