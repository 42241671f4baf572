//! The checker: a pure function from a [`History`] to one [`Verdict`] per property.
//!
//! Each property is decided in its own file, reading only the history. Every
//! collection whose order can show in a verdict is a `BTreeMap`/sorted `Vec`,
//! so the same history always gives byte-identical verdicts. A malformed
//! history (see [`History::validate`]) is judged by no property: every verdict
//! is then `Undecided`, because a decision on broken input would be a guess.
//! When a verdict is `Violated`, it reports the earliest violation found by
//! its rule and says how many more there were.

mod bounded_liveness;
mod exactly_once;
mod fail_closed;
mod fence_order;
mod fence_uniqueness;
mod holdings;
mod lookup;
mod renewal_safety;
mod stale_owner_rejected;
mod unlock_safety;

use crate::history::History;
use crate::property::Property;
use crate::verdict::Verdict;

/// Why a property that needs the Redis ownership log is undecided without it.
pub const NO_REDIS_TRUTH: &str = "no server-side ownership log in this world";

/// Why a property that needs the store's fence log is undecided without it.
pub const NO_STORE_TRUTH: &str = "no store-side fence log in this world";

/// Judges every property, in [`Property::ALL`] order.
pub fn check(history: &History) -> Vec<Verdict> {
    let verdicts: Vec<Verdict> = match history.validate() {
        Ok(()) => Property::ALL
            .into_iter()
            .map(|property| decide(history, property))
            .collect(),
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
        Ok(()) => decide(history, property),
        Err(error) => malformed(property, &error),
    }
}

fn malformed(property: Property, error: &crate::history::HistoryError) -> Verdict {
    Verdict::undecided(property, format!("the history is malformed: {error}"))
}

/// Dispatches a well-formed history to the property's rule.
fn decide(history: &History, property: Property) -> Verdict {
    let verdict = match property {
        Property::FenceOrder => fence_order::check(history),
        Property::StaleOwnerRejected => stale_owner_rejected::check(history),
        Property::UnlockSafety => unlock_safety::check(history),
        Property::RenewalSafety => renewal_safety::check(history),
        Property::FenceUniqueness => fence_uniqueness::check(history),
        Property::ExactlyOnce => exactly_once::check(history),
        Property::FailClosed => fail_closed::check(history),
        Property::BoundedLiveness => bounded_liveness::check(history),
    };
    assert_eq!(
        verdict.property, property,
        "a rule answers for its own property"
    );
    verdict
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
