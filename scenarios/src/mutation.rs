//! Which mutant each scenario is built to catch, by which property.
//!
//! This table is the harness's promise: the mutation-score test runs every
//! mutant through every scenario and fails if a promised catch does not
//! happen; the CLI and reports show the same table. Every scenario promises
//! at least one catch, so no scenario's properties are only ever seen
//! passing. A mutant may also be caught elsewhere — that is reported, not
//! promised.

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
    catch("del-unlock", "late-unlock", Property::UnlockSafety),
    catch("get-then-del", "late-unlock", Property::UnlockSafety),
    catch(
        "renew-without-owner-check",
        "late-unlock",
        Property::RenewalSafety,
    ),
    catch("no-fence-check", "stale-worker-pause", Property::FenceOrder),
    catch("no-fence-check", "fence-rejected", Property::FenceOrder),
    catch("no-fence-check", "crash-before-ack", Property::ExactlyOnce),
    catch(
        "no-fence-check",
        "crash-mid-mutation",
        Property::ExactlyOnce,
    ),
    catch(
        "app-side-fence-check",
        "stale-worker-pause",
        Property::FenceOrder,
    ),
    catch(
        "app-side-fence-check",
        "crash-before-ack",
        Property::ExactlyOnce,
    ),
    catch(
        "static-owner",
        "mutual-exclusion",
        Property::FenceUniqueness,
    ),
    catch("static-owner", "hotspot-load", Property::FenceUniqueness),
    catch(
        "unbounded-renewal",
        "renewal-limits",
        Property::BoundedLiveness,
    ),
    catch(
        "setnx-then-expire",
        "crash-after-acquire",
        Property::BoundedLiveness,
    ),
    catch("no-ttl", "crash-after-acquire", Property::BoundedLiveness),
    catch("no-ttl", "lost-acquire-reply", Property::BoundedLiveness),
    catch(
        "lock-before-fence",
        "redis-unavailable",
        Property::FailClosed,
    ),
    catch(
        "redis-counter-fences",
        "failover-counter-regression",
        Property::FenceUniqueness,
    ),
];

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
