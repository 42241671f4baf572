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
    catch(
        SET_WITHOUT_NX,
        MUTUAL_EXCLUSION,
        Property::NoOverlappingHolders,
    ),
    catch(SET_WITHOUT_NX, HOTSPOT_LOAD, Property::NoOverlappingHolders),
    catch(LATE_RENEWAL, RENEWAL_LIMITS, Property::LeaseContinuity),
    catch(LATE_RENEWAL, LATE_UNLOCK, Property::LeaseContinuity),
    catch(FIXED_BACKOFF, HOTSPOT_LOAD, Property::Contention),
    catch(
        PROCESS_WIDE_TOKEN,
        CONCURRENT_JOBS,
        Property::NoOverlappingHolders,
    ),
    catch(
        PROCESS_WIDE_TOKEN,
        CONCURRENT_JOBS,
        Property::FenceUniqueness,
    ),
    catch(REDLOCK, REDLOCK_CLOCK_JUMP, Property::UnfencedStaleWrite),
    catch(
        REDLOCK,
        REDLOCK_MASTER_RESTART,
        Property::UnfencedStaleWrite,
    ),
    catch(REDLOCK, REDLOCK_PAUSE, Property::UnfencedStaleWrite),
    catch(
        REDLOCK_HALF_QUORUM,
        REDLOCK_MINORITY_PARTITION,
        Property::FailClosed,
    ),
];

/// Every property each shipped mutant violates anywhere in the catalog (on
/// the mutation-score test's seeds, 0–5, in the simulation), and nothing
/// else: the promised catches above, plus what a mutant's bug also
/// breaks. The mutation-score test asserts the sweep matches this table
/// exactly, so a checker change that makes a mutant trip one property more
/// or one less shows up as a diff here, to be explained, not absorbed.
pub const EXPECTED_VIOLATIONS: &[(&str, &[Property])] = &[
    (DEL_UNLOCK, &[Property::UnlockSafety]),
    (GET_THEN_DEL, &[Property::UnlockSafety]),
    (RENEW_WITHOUT_OWNER_CHECK, &[Property::RenewalSafety]),
    (
        NO_FENCE_CHECK,
        &[
            Property::FenceOrder,
            Property::StaleOwnerRejected,
            Property::ExactlyOnce,
        ],
    ),
    (
        APP_SIDE_FENCE_CHECK,
        &[
            Property::FenceOrder,
            Property::StaleOwnerRejected,
            Property::ExactlyOnce,
        ],
    ),
    // Two workers with one token share a lease: both write under it.
    (
        STATIC_OWNER,
        &[Property::FenceUniqueness, Property::NoOverlappingHolders],
    ),
    (
        UNBOUNDED_RENEWAL,
        &[Property::RenewalSafety, Property::BoundedLiveness],
    ),
    // Across a failover the fence counter regresses as well.
    (
        SETNX_THEN_EXPIRE,
        &[Property::FenceUniqueness, Property::BoundedLiveness],
    ),
    // Its counter would regress across a failover too (fences from
    // Redis), but a failover replication cut in a holding leaves the
    // holder's key, with no TTL, on the promoted replica: nobody acquires
    // again, so what shows is a lock that is never released.
    (NO_TTL, &[Property::BoundedLiveness]),
    (
        LOCK_BEFORE_FENCE,
        &[Property::FenceUniqueness, Property::FailClosed],
    ),
    (REDIS_COUNTER_FENCES, &[Property::FenceUniqueness]),
    // Without a fence a redelivered job applies twice.
    (
        UNFENCED_SET_NX,
        &[Property::UnfencedStaleWrite, Property::ExactlyOnce],
    ),
    // Every acquire wins: two holders, the first one's lease taken from
    // under it, and (across a failover) fences issued twice.
    (
        SET_WITHOUT_NX,
        &[
            Property::FenceUniqueness,
            Property::NoOverlappingHolders,
            Property::LeaseContinuity,
        ],
    ),
    (LATE_RENEWAL, &[Property::LeaseContinuity]),
    (FIXED_BACKOFF, &[Property::Contention]),
    // Two jobs of one process share a token: both "hold" one lease, under
    // one fence.
    (
        PROCESS_WIDE_TOKEN,
        &[Property::FenceUniqueness, Property::NoOverlappingHolders],
    ),
    // No fence: whoever outlives its majority (a pause, a master's clock
    // jump, a master that forgets) writes over its successor.
    (REDLOCK, &[Property::UnfencedStaleWrite]),
    // A client on a minority believes it holds the lock and writes.
    (REDLOCK_HALF_QUORUM, &[Property::FailClosed]),
];

/// The properties `mutant` is expected to violate somewhere (see
/// [`EXPECTED_VIOLATIONS`]); empty for anything else.
pub fn expected_violations(mutant: &str) -> &'static [Property] {
    EXPECTED_VIOLATIONS
        .iter()
        .find(|(m, _)| *m == mutant)
        .map_or(&[], |(_, properties)| *properties)
}

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

    #[test]
    fn every_mutant_has_one_row_of_expected_violations_covering_its_promises() {
        for m in mutant::ALL {
            let rows = EXPECTED_VIOLATIONS.iter().filter(|(n, _)| *n == m).count();
            assert_eq!(rows, 1, "{m} needs exactly one row");
            for c in catches_of(m) {
                assert!(
                    expected_violations(m).contains(&c.property),
                    "{m}: promised {} is not expected",
                    c.property
                );
            }
        }
        assert_eq!(EXPECTED_VIOLATIONS.len(), mutant::ALL.len());
        assert!(expected_violations(crate::names::protocol::REFERENCE).is_empty());
    }
}
