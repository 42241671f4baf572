//! The twelve properties the checker decides: their names and one-line descriptions.
//!
//! The kebab-case name is the property's identity everywhere — JSON, reports,
//! the CLI, scenario expectations — so it is defined once, here, and the serde
//! spelling is tested to match [`Property::name`].

use serde::{Deserialize, Serialize};

/// A safety or liveness property of a lock protocol (each is decided by its
/// own file in `checker/`; `docs/architecture.md` lists them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Property {
    /// Accepted writes carry strictly increasing fences in commit order.
    FenceOrder,
    /// Stale owners are rejected, report ownership lost, and stop retrying.
    StaleOwnerRejected,
    /// No write without a fence is accepted after its writer's lease ended.
    UnfencedStaleWrite,
    /// A release never deletes another owner's lock.
    UnlockSafety,
    /// A renew never extends another owner's lock; renewal is bounded.
    RenewalSafety,
    /// No fence is issued to two acquisitions.
    FenceUniqueness,
    /// A job's effect is applied at most once.
    ExactlyOnce,
    /// No protected write without a successful acquire of its fence.
    FailClosed,
    /// Contenders get a decision; no lock outlives max hold + lease.
    BoundedLiveness,
    /// No two workers write while both hold unexpired leases.
    NoOverlappingHolders,
    /// A healthy, working holder's lease does not lapse before the hold limit.
    LeaseContinuity,
    /// Under load, attempts per acquisition and the p99 wait stay in bounds.
    Contention,
}

impl Property {
    /// Every property, in the order verdicts are reported.
    pub const ALL: [Property; 12] = [
        Property::FenceOrder,
        Property::StaleOwnerRejected,
        Property::UnfencedStaleWrite,
        Property::UnlockSafety,
        Property::RenewalSafety,
        Property::FenceUniqueness,
        Property::ExactlyOnce,
        Property::FailClosed,
        Property::BoundedLiveness,
        Property::NoOverlappingHolders,
        Property::LeaseContinuity,
        Property::Contention,
    ];

    /// The stable kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            Property::FenceOrder => "fence-order",
            Property::StaleOwnerRejected => "stale-owner-rejected",
            Property::UnfencedStaleWrite => "unfenced-stale-write",
            Property::UnlockSafety => "unlock-safety",
            Property::RenewalSafety => "renewal-safety",
            Property::FenceUniqueness => "fence-uniqueness",
            Property::ExactlyOnce => "exactly-once",
            Property::FailClosed => "fail-closed",
            Property::BoundedLiveness => "bounded-liveness",
            Property::NoOverlappingHolders => "no-overlapping-holders",
            Property::LeaseContinuity => "lease-continuity",
            Property::Contention => "contention",
        }
    }

    /// One line saying what the property demands.
    pub fn description(self) -> &'static str {
        match self {
            Property::FenceOrder => {
                "per resource, accepted writes carry strictly increasing fences in commit order"
            }
            Property::StaleOwnerRejected => {
                "a stale owner's write is rejected once its successor has written, \
                 and the worker reports ownership lost without retrying the fence"
            }
            Property::UnfencedStaleWrite => {
                "no write without a fence is accepted after its writer's lease ended \
                 (nothing else could stop it)"
            }
            Property::UnlockSafety => "a release never deletes a lock held by another owner",
            Property::RenewalSafety => {
                "a renew never extends another owner's lock, and renewal stops \
                 at the maximum hold time or renewal count"
            }
            Property::FenceUniqueness => "no fence value is issued to two acquisitions",
            Property::ExactlyOnce => "a job's effect is applied at most once per job id",
            Property::FailClosed => {
                "no protected write is accepted without a completed successful acquire of its fence"
            }
            Property::BoundedLiveness => {
                "every contender eventually acquires or gives up cleanly, \
                 and no lock outlives max hold + lease"
            }
            Property::NoOverlappingHolders => {
                "no two workers write to the resource while both hold unexpired leases on it"
            }
            Property::LeaseContinuity => {
                "a holder whose paths are healthy never loses its lease while its job runs, \
                 short of the maximum hold"
            }
            Property::Contention => {
                "under load, attempts per acquisition and the p99 wait stay within the \
                 scenario's bounds (no retry storm)"
            }
        }
    }

    /// The property with this name, if any.
    pub fn from_name(name: &str) -> Option<Property> {
        Property::ALL.into_iter().find(|p| p.name() == name)
    }
}

impl std::fmt::Display for Property {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_match_serde() {
        let mut names = std::collections::BTreeSet::new();
        for p in Property::ALL {
            assert!(names.insert(p.name()), "duplicate name {}", p.name());
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(json, format!("\"{}\"", p.name()));
            assert_eq!(Property::from_name(p.name()), Some(p));
            assert!(!p.description().is_empty());
            assert!(!p.description().contains('\n'), "one line");
        }
        assert_eq!(Property::from_name("mutual-exclusion"), None);
    }
}
