//! Which mutant each scenario is built to catch, by which property.
//!
//! This table is the harness's promise: the mutation-score test runs every
//! mutant through every scenario and fails if a promised catch does not
//! happen; the CLI and reports show the same table. Every scenario promises
//! at least one catch, so no scenario's properties are only ever seen
//! passing. A mutant may also be caught elsewhere — that is reported, not
//! promised.

use crate::names::mutant::*;
use crate::names::scenario::*;
use crate::property::Property;

/// One promised catch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Catch {
    /// The mutant's name.
    pub mutant: &'static str,
    /// The scenario that catches it.
    pub scenario: &'static str,
    /// The property it violates there.
    pub property: Property,
}

const fn catch(mutant: &'static str, scenario: &'static str, property: Property) -> Catch {
    Catch {
        mutant,
        scenario,
        property,
    }
}

/// Every promised catch.
pub const CATCHES: &[Catch] = &[
    catch(DEL_UNLOCK, LATE_UNLOCK, Property::UnlockSafety),
    catch(GET_THEN_DEL, LATE_UNLOCK, Property::UnlockSafety),
    catch(
        RENEW_WITHOUT_OWNER_CHECK,
        LATE_UNLOCK,
        Property::RenewalSafety,
    ),
    catch(NO_FENCE_CHECK, STALE_WORKER_PAUSE, Property::FenceOrder),
    catch(NO_FENCE_CHECK, FENCE_REJECTED, Property::FenceOrder),
    catch(NO_FENCE_CHECK, CRASH_BEFORE_ACK, Property::ExactlyOnce),
    catch(NO_FENCE_CHECK, CRASH_MID_MUTATION, Property::ExactlyOnce),
    catch(
        APP_SIDE_FENCE_CHECK,
        STALE_WORKER_PAUSE,
        Property::FenceOrder,
    ),
    catch(
        APP_SIDE_FENCE_CHECK,
        CRASH_BEFORE_ACK,
        Property::ExactlyOnce,
    ),
    catch(STATIC_OWNER, MUTUAL_EXCLUSION, Property::FenceUniqueness),
    catch(STATIC_OWNER, HOTSPOT_LOAD, Property::FenceUniqueness),
    catch(UNBOUNDED_RENEWAL, RENEWAL_LIMITS, Property::BoundedLiveness),
    catch(
        SETNX_THEN_EXPIRE,
        CRASH_AFTER_ACQUIRE,
        Property::BoundedLiveness,
    ),
    catch(NO_TTL, CRASH_AFTER_ACQUIRE, Property::BoundedLiveness),
    catch(NO_TTL, LOST_ACQUIRE_REPLY, Property::BoundedLiveness),
    catch(LOCK_BEFORE_FENCE, REDIS_UNAVAILABLE, Property::FailClosed),
    catch(
        REDIS_COUNTER_FENCES,
        FAILOVER_COUNTER_REGRESSION,
        Property::FenceUniqueness,
    ),
    catch(
        UNFENCED_SET_NX,
        STALE_WORKER_PAUSE,
        Property::UnfencedStaleWrite,
    ),
];

/// Whether `protocol` is a shipped mutant (it has promised catches). Any
/// other protocol — the reference, a team's own lock — must pass everywhere.
pub fn is_mutant(protocol: &str) -> bool {
    CATCHES.iter().any(|c| c.mutant == protocol)
}

/// The catches promised for `mutant`.
pub fn catches_of(mutant: &str) -> Vec<Catch> {
    CATCHES
        .iter()
        .copied()
        .filter(|c| c.mutant == mutant)
        .collect()
}

/// The properties `mutant` is promised to violate in `scenario`.
pub fn promised(mutant: &str, scenario: &str) -> Vec<Property> {
    CATCHES
        .iter()
        .filter(|c| c.mutant == mutant && c.scenario == scenario)
        .map(|c| c.property)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::{mutant, scenario};

    #[test]
    fn every_catch_names_a_real_scenario_and_mutant_and_every_mutant_is_promised() {
        for c in CATCHES {
            assert!(scenario::ALL.contains(&c.scenario), "{c:?}");
            assert!(mutant::ALL.contains(&c.mutant), "{c:?}");
        }
        for m in mutant::ALL {
            assert!(is_mutant(m), "{m} has no promised catch");
        }
        assert!(!is_mutant(crate::names::protocol::REFERENCE));
    }
}
