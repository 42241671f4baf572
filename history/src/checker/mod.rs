//! The checker: a pure function from a [`History`] to one [`Verdict`] per property.
//!
//! Each property is decided in its own file, reading only the history. Every
//! collection whose order can show in a verdict is a `BTreeMap`/sorted `Vec`,
//! so the same history always gives byte-identical verdicts. A malformed
//! history (see [`History::validate`]) is judged by no property: every verdict
//! is then `Undecided`, because a decision on broken input would be a guess.
//! When a verdict is `Violated`, it reports the earliest violation found by
//! its rule and says how many more there were. A property whose rule found
//! nothing in the history to range over (no deletion, no stale write, no
//! write without a fence) is `NotExercised`, never `Held`: each file's
//! module doc says what its rule ranges over.

mod bounded_liveness;
mod contention;
mod exactly_once;
mod fail_closed;
mod fence_order;
mod fence_uniqueness;
mod health;
mod holdings;
mod lease_continuity;
mod lookup;
mod no_overlapping_holders;
mod renewal_safety;
mod stale_owner_rejected;
mod unfenced_stale_write;
mod unlock_safety;

use self::holdings::{holdings, Holding};
use crate::history::History;
use crate::property::Property;
use crate::verdict::Verdict;

/// Why a property that needs the Redis ownership log is undecided without it.
pub const NO_REDIS_TRUTH: &str = "no server-side ownership log in this world";

/// Why the Redis ownership log is missing, in words for a verdict: the gap
/// the world named ([`History::redis_truth_gap`]), else [`NO_REDIS_TRUTH`].
pub(crate) fn no_redis_truth(history: &History) -> &str {
    history.redis_truth_gap.as_deref().unwrap_or(NO_REDIS_TRUTH)
}

/// Why a property that needs the store's fence log is undecided without it.
pub const NO_STORE_TRUTH: &str = "no store-side fence log in this world";

/// What several rules read, derived from the history once per check
/// instead of once per rule.
struct Derived {
    /// Every holding in the Redis ownership log (none without one).
    holdings: Vec<Holding>,
}

impl Derived {
    /// Derives it from a well-formed `history`.
    fn of(history: &History) -> Self {
        Self {
            holdings: history
                .redis_truth
                .as_deref()
                .map(holdings)
                .unwrap_or_default(),
        }
    }

    /// [`holdings`] of the Redis ownership log.
    fn holdings(&self) -> &[Holding] {
        &self.holdings
    }
}

/// Judges every property, in [`Property::ALL`] order.
pub fn check(history: &History) -> Vec<Verdict> {
    let verdicts: Vec<Verdict> = match history.validate() {
        Ok(()) => {
            let derived = Derived::of(history);
            Property::ALL
                .into_iter()
                .map(|property| decide(history, &derived, property))
                .collect()
        }
        Err(error) => Property::ALL
            .into_iter()
            .map(|property| malformed(property, &error))
            .collect(),
    };
    assert_eq!(verdicts.len(), Property::ALL.len());
    verdicts
}

/// Judges one property.
pub fn check_property(history: &History, property: Property) -> Verdict {
    match history.validate() {
        Ok(()) => decide(history, &Derived::of(history), property),
        Err(error) => malformed(property, &error),
    }
}

fn malformed(property: Property, error: &crate::history::HistoryError) -> Verdict {
    Verdict::undecided(property, format!("the history is malformed: {error}"))
}

/// Dispatches a well-formed history to the property's rule.
fn decide(history: &History, derived: &Derived, property: Property) -> Verdict {
    let verdict = match property {
        Property::FenceOrder => fence_order::check(history),
        Property::StaleOwnerRejected => stale_owner_rejected::check(history),
        Property::UnfencedStaleWrite => unfenced_stale_write::check(history, derived),
        Property::UnlockSafety => unlock_safety::check(history, derived),
        Property::RenewalSafety => renewal_safety::check(history, derived),
        Property::FenceUniqueness => fence_uniqueness::check(history),
        Property::ExactlyOnce => exactly_once::check(history),
        Property::FailClosed => fail_closed::check(history, derived),
        Property::BoundedLiveness => bounded_liveness::check(history, derived),
        Property::NoOverlappingHolders => no_overlapping_holders::check(history, derived),
        Property::LeaseContinuity => lease_continuity::check(history, derived),
        Property::Contention => contention::check(history),
    };
    assert_eq!(
        verdict.property, property,
        "a rule answers for its own property"
    );
    verdict
}

/// What the rules' own tests build histories with.
#[cfg(test)]
mod testing {
    use crate::history::{HistoryBuilder, Limits};

    /// A history of resource `r` under a 1000 ms lease, a 3000 ms hold,
    /// 20 renewals, 20 ms of tolerance and a 2000 ms acquire deadline.
    pub(super) fn builder() -> HistoryBuilder {
        HistoryBuilder::new(
            "r",
            Limits {
                lease_ms: 1_000,
                hold_ms_max: 3_000,
                renewals_max: 20,
                tolerance_ms: 20,
                acquire_deadline_ms: 2_000,
            },
        )
    }
}

/// " (and N more)" when a rule found more than the violation it reports.
fn more(violations_total: usize) -> String {
    assert!(violations_total > 0);
    match violations_total - 1 {
        0 => String::new(),
        1 => " (and 1 more violation)".to_owned(),
        n => format!(" (and {n} more violations)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{FenceOutcome, HistoryBuilder, Limits, OkValue, OpKind, Outcome};
    use crate::verdict::Status;

    const LIMITS: Limits = Limits {
        lease_ms: 500,
        hold_ms_max: 3_000,
        renewals_max: 5,
        tolerance_ms: 20,
        acquire_deadline_ms: 10_000,
    };

    fn statuses(history: &History) -> Vec<(Property, Status)> {
        check(history)
            .iter()
            .map(|v| (v.property, v.status))
            .collect()
    }

    #[test]
    fn a_run_that_did_nothing_exercised_nothing() {
        let history = HistoryBuilder::new("r", LIMITS).end(1_000).build();
        for verdict in check(&history) {
            assert_eq!(
                verdict.status,
                Status::NotExercised,
                "{}: {}",
                verdict.property,
                verdict.explanation
            );
            assert!(verdict.explanation.starts_with("nothing to judge: "));
        }
    }

    /// One job under a lock without fences, inside its lease: acquire (no
    /// fence), write with fence 0, release.
    fn unfenced_job() -> HistoryBuilder {
        let acquired = Outcome::Ok(OkValue::Acquired { fence: None });
        HistoryBuilder::new("r", LIMITS)
            .op("w0", Some("o0"), OpKind::Acquire, 0, Some(2), acquired)
            .set(1, "o0")
            .write(
                "w0",
                "o0",
                0,
                Some("j0"),
                (100, 103),
                OkValue::WriteAccepted,
            )
            .fence_log(102, "o0", 0, Some("j0"), FenceOutcome::Accepted)
            .released("w0", "o0", (110, 112), true)
            .deleted(111, "o0")
            .report("w0", Some("j0"), crate::history::JobReport::Success, 113)
    }

    /// A world that could not trust its Redis recording names the gap;
    /// every verdict that needed the log quotes it instead of the generic
    /// reason, and nothing that needed it is decided.
    #[test]
    fn a_named_recording_gap_is_the_reason_undecided_verdicts_give() {
        let mut history = unfenced_job().without_redis_truth().build();
        let generic: Vec<(Property, Status)> = statuses(&history);
        history.redis_truth_gap = Some("redis ran commands the engine does not know".into());
        let needs_log = [
            Property::UnfencedStaleWrite,
            Property::UnlockSafety,
            Property::RenewalSafety,
            Property::FailClosed,
            Property::BoundedLiveness,
            Property::LeaseContinuity,
        ];
        for verdict in check(&history) {
            if needs_log.contains(&verdict.property) {
                assert_eq!(verdict.status, Status::Undecided, "{}", verdict.explanation);
                assert!(
                    verdict
                        .explanation
                        .contains("redis ran commands the engine does not know")
                        && !verdict.explanation.contains(NO_REDIS_TRUTH),
                    "{}: {}",
                    verdict.property,
                    verdict.explanation
                );
            }
        }
        assert_eq!(statuses(&history), generic, "the gap changes words only");
    }

    #[test]
    fn an_unfenced_lock_is_judged_only_by_what_applies_to_it() {
        let history = unfenced_job().build();
        let expected = [
            (Property::FenceOrder, Status::NotExercised),
            (Property::StaleOwnerRejected, Status::NotExercised),
            (Property::UnfencedStaleWrite, Status::Held),
            (Property::UnlockSafety, Status::Held),
            (Property::RenewalSafety, Status::NotExercised),
            (Property::FenceUniqueness, Status::NotExercised),
            (Property::ExactlyOnce, Status::Held),
            (Property::FailClosed, Status::Held),
            (Property::BoundedLiveness, Status::Held),
            (Property::NoOverlappingHolders, Status::Held),
            (Property::LeaseContinuity, Status::Held),
            (Property::Contention, Status::NotExercised),
        ];
        assert_eq!(statuses(&history), expected);
    }

    #[test]
    fn an_unfenced_write_still_needs_a_completed_acquire_to_fail_closed() {
        // The acquire's answer never came, and the worker wrote anyway.
        let history = HistoryBuilder::new("r", LIMITS)
            .op(
                "w0",
                Some("o0"),
                OpKind::Acquire,
                0,
                None,
                Outcome::Indeterminate("no reply".into()),
            )
            .set(1, "o0")
            .write(
                "w0",
                "o0",
                0,
                Some("j0"),
                (100, 103),
                OkValue::WriteAccepted,
            )
            .fence_log(102, "o0", 0, Some("j0"), FenceOutcome::Accepted)
            .build();
        let verdict = check_property(&history, Property::FailClosed);
        assert_eq!(verdict.status, Status::Violated);
        assert!(
            verdict.explanation.contains("ended indeterminate"),
            "{}",
            verdict.explanation
        );
    }

    /// A whole worker's acquire is read from the key just after its
    /// reply; a failover in between loses the key the server granted. The
    /// server's grant then covers the write; an unanswered acquire does
    /// not (the test above), nor does a grant to someone else.
    #[test]
    fn a_granted_and_answered_acquire_covers_its_write_whatever_it_was_read_as() {
        let history = |granted_to: &str| {
            HistoryBuilder::new("r", LIMITS)
                .contended("w0", "o0", (0, 12))
                .set(8, granted_to)
                .write(
                    "w0",
                    "o0",
                    5,
                    Some("j0"),
                    (100, 103),
                    OkValue::WriteAccepted,
                )
                .fence_log(102, "o0", 5, Some("j0"), FenceOutcome::Accepted)
                .build()
        };
        let held = check_property(&history("o0"), Property::FailClosed);
        assert_eq!(held.status, Status::Held, "{}", held.explanation);
        let violated = check_property(&history("o1"), Property::FailClosed);
        assert_eq!(violated.status, Status::Violated);
        assert!(
            violated.explanation.contains("did not acquire"),
            "{}",
            violated.explanation
        );
    }

    #[test]
    fn held_means_there_was_something_to_judge() {
        // The reference's quiet run: one fenced job, released in time.
        let history = HistoryBuilder::new("r", LIMITS)
            .acquired("w0", "o0", (0, 2), 1)
            .set(1, "o0")
            .write(
                "w0",
                "o0",
                1,
                Some("j0"),
                (100, 103),
                OkValue::WriteAccepted,
            )
            .fence_log(102, "o0", 1, Some("j0"), FenceOutcome::Accepted)
            .released("w0", "o0", (110, 112), true)
            .deleted(111, "o0")
            .report("w0", Some("j0"), crate::history::JobReport::Success, 113)
            .build();
        let expected = [
            (Property::FenceOrder, Status::Held),
            // Nobody was stale, nobody renewed, nothing expired.
            (Property::StaleOwnerRejected, Status::NotExercised),
            (Property::UnfencedStaleWrite, Status::NotExercised),
            (Property::UnlockSafety, Status::Held),
            (Property::RenewalSafety, Status::NotExercised),
            (Property::FenceUniqueness, Status::Held),
            (Property::ExactlyOnce, Status::Held),
            (Property::FailClosed, Status::Held),
            (Property::BoundedLiveness, Status::Held),
            (Property::NoOverlappingHolders, Status::Held),
            (Property::LeaseContinuity, Status::Held),
            (Property::Contention, Status::NotExercised),
        ];
        assert_eq!(statuses(&history), expected);
        // A stale owner rejected, a renew confirmed: now they are exercised.
        let exercised = HistoryBuilder::new("r", LIMITS)
            .acquired("w0", "o0", (0, 2), 1)
            .set(1, "o0")
            .renewed("w0", "o0", (300, 302))
            .fence_log(400, "o1", 2, None, FenceOutcome::Accepted)
            .write(
                "w0",
                "o0",
                1,
                None,
                (450, 453),
                OkValue::WriteStale { last_fence: 2 },
            )
            .fence_log(452, "o0", 1, None, FenceOutcome::Stale)
            .report("w0", None, crate::history::JobReport::OwnershipLost, 460)
            .build();
        for property in [Property::StaleOwnerRejected, Property::RenewalSafety] {
            let verdict = check_property(&exercised, property);
            assert_eq!(
                verdict.status,
                Status::Held,
                "{property}: {}",
                verdict.explanation
            );
        }
    }
}
