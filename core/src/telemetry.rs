//! Metric names (from the design article) and the helpers that record them.
//!
//! Every metric is labelled by resource *type*, never by resource id: ids are
//! unbounded and would explode cardinality. Logs carry a hash of the id.
//! Metrics go through the `metrics` facade, so the application picks the
//! exporter; without one installed, recording costs next to nothing.

use std::sync::Arc;

use metrics::SharedString;

/// Acquire outcomes; label `result` = `acquired` | `contended` | `timeout` | `redis_error`.
/// `contended` counts single attempts that found the lock held; `timeout`
/// counts `acquire` calls that gave up (deadline or attempts) and returned retry-later.
pub const LOCK_ACQUIRE_TOTAL: &str = "lock_acquire_total";
/// Time from the start of `acquire` until the lease was held (or given up), in seconds.
pub const LOCK_ACQUIRE_DURATION_SECONDS: &str = "lock_acquire_duration_seconds";
/// Attempts that found another owner holding the lock.
pub const LOCK_CONTENTION_TOTAL: &str = "lock_contention_total";
/// From acquire until release or lease loss, in seconds.
pub const LOCK_HOLD_DURATION_SECONDS: &str = "lock_hold_duration_seconds";
/// Renewals; label `result` = `renewed` | `owner_mismatch` | `error`.
pub const LOCK_RENEW_TOTAL: &str = "lock_renew_total";
/// Leases lost; label `reason` = `owner_mismatch` | `expired` | `limit_reached` | `fence_rejected`.
pub const LOCK_LEASE_LOST_TOTAL: &str = "lock_lease_lost_total";
/// Fenced writes the storage refused as stale.
pub const FENCE_REJECTED_TOTAL: &str = "fence_rejected_total";
/// Acquire attempts after the first one.
pub const LOCK_ACQUIRE_RETRIES_TOTAL: &str = "lock_acquire_retries_total";
/// Backoff slept between attempts, in seconds.
pub const LOCK_BACKOFF_SECONDS: &str = "lock_backoff_seconds";
/// Jobs handed back to the queue (retry-later) because of contention.
pub const LOCK_JOBS_REQUEUED_TOTAL: &str = "lock_jobs_requeued_total";
/// Re-asks after an indeterminate reply; label `result` = `held` | `not_held` | `indeterminate`.
pub const LOCK_REASK_TOTAL: &str = "lock_reask_total";

/// Registers descriptions and units with the installed recorder, so exporters
/// can show them. Call once after installing a recorder; harmless otherwise.
pub fn describe() {
    use metrics::{describe_counter, describe_histogram, Unit};
    describe_counter!(LOCK_ACQUIRE_TOTAL, "acquire outcomes by result");
    describe_histogram!(
        LOCK_ACQUIRE_DURATION_SECONDS,
        Unit::Seconds,
        "wait to acquire a lease"
    );
    describe_counter!(LOCK_CONTENTION_TOTAL, "attempts that found the lock held");
    describe_histogram!(
        LOCK_HOLD_DURATION_SECONDS,
        Unit::Seconds,
        "time a lease was held"
    );
    describe_counter!(LOCK_RENEW_TOTAL, "renewals by result");
    describe_counter!(LOCK_LEASE_LOST_TOTAL, "leases lost by reason");
    describe_counter!(FENCE_REJECTED_TOTAL, "fenced writes rejected as stale");
    describe_counter!(
        LOCK_ACQUIRE_RETRIES_TOTAL,
        "acquire attempts after the first"
    );
    describe_histogram!(LOCK_BACKOFF_SECONDS, Unit::Seconds, "backoff slept");
    describe_counter!(LOCK_JOBS_REQUEUED_TOTAL, "jobs returned to the queue");
    describe_counter!(LOCK_REASK_TOTAL, "re-asks after an indeterminate reply");
}

// Label values are `Arc<str>` so that recording does not copy the type name.
pub(crate) fn count(name: &'static str, resource_type: &Arc<str>) {
    metrics::counter!(name, "resource_type" => SharedString::from(resource_type.clone()))
        .increment(1);
}

pub(crate) fn count_with(
    name: &'static str,
    resource_type: &Arc<str>,
    label: &'static str,
    value: &'static str,
) {
    metrics::counter!(name, "resource_type" => SharedString::from(resource_type.clone()), label => value)
        .increment(1);
}

pub(crate) fn observe_seconds(name: &'static str, resource_type: &Arc<str>, seconds: f64) {
    metrics::histogram!(name, "resource_type" => SharedString::from(resource_type.clone()))
        .record(seconds);
}
