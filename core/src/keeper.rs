//! The renewal keeper: extends the lease while a job runs, within limits, and
//! says so when the lease is lost.
//!
//! It runs in the *same task* as the job — the two futures are polled by one
//! `select!`, never a detached `tokio::spawn` — so that freezing the task
//! freezes both, exactly as a stop-the-world pause freezes a real process. A
//! detached renewer would keep a paused worker's lease alive and hide the very
//! failure fencing exists for.

use std::future::Future;
use std::time::Duration;

use redis::aio::ConnectionLike;
use tokio::time::Instant;

use crate::client::{Lease, LockClient, Renewal};
use crate::error::LockError;
use crate::telemetry::{self, *};

/// Why a lease was lost while a job held it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaseLost {
    /// Renew found another owner's token (or no lock): someone else may hold it.
    OwnerMismatch,
    /// Renewals failed until the lease's safe end passed.
    Expired {
        /// The last renewal error.
        last_error: String,
    },
    /// The hold or renewal limit stopped renewal and the lease then ran out.
    LimitReached {
        /// Renewals made.
        renewals: u32,
        /// Time held, in milliseconds.
        held_ms: u64,
    },
}

impl LeaseLost {
    /// Metric label.
    pub fn reason(&self) -> &'static str {
        match self {
            LeaseLost::OwnerMismatch => "owner_mismatch",
            LeaseLost::Expired { .. } => "expired",
            LeaseLost::LimitReached { .. } => "limit_reached",
        }
    }
}

/// The result of running a job under the keeper.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Guarded<T> {
    /// The job finished while the lease was (as far as we know) held.
    Completed(T),
    /// The lease was lost first; the job future was dropped (cancelled).
    /// Storage fencing still protects against writes already in flight.
    LeaseLost(LeaseLost),
}

impl<C> LockClient<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    /// Runs `job` while renewing `lease` every `renew_interval_ms`, in this task.
    ///
    /// Renewal stops at `renewals_max` or `hold_ms_max` (the last renewal is
    /// shortened so the lock never outlives `acquired + hold_ms_max`); the lease
    /// then runs out and the job is cancelled with [`LeaseLost::LimitReached`].
    pub async fn hold<F: Future>(&self, lease: &Lease, job: F) -> Guarded<F::Output> {
        let keeper = self.keep(lease);
        tokio::pin!(job);
        tokio::pin!(keeper);
        // `biased`: a job that finishes in the same poll as a loss is reported
        // completed, and the order never depends on tokio's RNG.
        tokio::select! {
            biased;
            out = &mut job => Guarded::Completed(out),
            lost = &mut keeper => {
                let rtype = lease.resource().resource_type();
                telemetry::count_with(LOCK_LEASE_LOST_TOTAL, rtype, "reason", lost.reason());
                tracing::warn!(
                    resource_type = rtype,
                    resource_hash = %lease.resource().id_hash(),
                    owner = %lease.owner(),
                    fence = lease.fence().get(),
                    reason = lost.reason(),
                    "lease lost; cancelling the job"
                );
                Guarded::LeaseLost(lost)
            }
        }
    }

    /// Resolves only when the lease is lost.
    async fn keep(&self, lease: &Lease) -> LeaseLost {
        let config = self.config();
        let rtype = lease.resource().resource_type();
        let interval = Duration::from_millis(config.renew_interval_ms());
        let acquired = lease.sent_at();
        let hold_end = acquired + Duration::from_millis(config.hold_ms_max());
        let mut valid_until = lease.valid_until();
        let mut next = acquired + interval;
        let mut renewals: u32 = 0;
        // Every iteration sleeps at least until `next`, which moves forward by
        // an interval, and the hold limit ends the loop; this bound is that
        // argument made checkable.
        let iterations_max = config.hold_ms_max() / config.renew_interval_ms() + 2;
        for _ in 0..iterations_max {
            let limit_reached = renewals >= config.renewals_max() || Instant::now() >= hold_end;
            if limit_reached {
                tokio::time::sleep_until(valid_until).await;
                return LeaseLost::LimitReached {
                    renewals,
                    held_ms: acquired.elapsed().as_millis() as u64,
                };
            }
            tokio::time::sleep_until(next.min(valid_until)).await;
            let now = Instant::now();
            if now >= valid_until {
                return LeaseLost::Expired {
                    last_error: "no renewal succeeded before the lease ended".into(),
                };
            }
            let remaining_hold_ms = hold_end.saturating_duration_since(now).as_millis() as u64;
            if remaining_hold_ms == 0 {
                continue;
            }
            let lease_ms = config.lease_ms().min(remaining_hold_ms);
            match self.renew(lease, lease_ms).await {
                Ok(Renewal::Renewed { valid_until: until }) => {
                    telemetry::count_with(LOCK_RENEW_TOTAL, rtype, "result", "renewed");
                    valid_until = until;
                    renewals += 1;
                    next = now + interval;
                    tracing::debug!(owner = %lease.owner(), renewals, lease_ms, "lease renewed");
                }
                Ok(Renewal::OwnerMismatch) => {
                    telemetry::count_with(LOCK_RENEW_TOTAL, rtype, "result", "owner_mismatch");
                    return LeaseLost::OwnerMismatch;
                }
                Err(e) => {
                    telemetry::count_with(LOCK_RENEW_TOTAL, rtype, "result", "error");
                    tracing::warn!(owner = %lease.owner(), error = %e, "renewal failed");
                    if Instant::now() >= valid_until {
                        return LeaseLost::Expired {
                            last_error: renew_error_text(&e),
                        };
                    }
                    next = now + interval;
                }
            }
        }
        // Unreachable by the bound above; losing the lease is the safe answer.
        debug_assert!(false, "renewal loop exceeded its iteration bound");
        LeaseLost::LimitReached {
            renewals,
            held_ms: acquired.elapsed().as_millis() as u64,
        }
    }
}

fn renew_error_text(e: &LockError) -> String {
    e.to_string()
}
