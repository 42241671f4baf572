//! The renewal keeper: extends the lease while a job runs, within limits, and
//! says so when the lease is lost.
//!
//! It runs in the *same task* as the job — the two futures are polled by one
//! `select!`, never a detached `tokio::spawn` — so that freezing the task
//! freezes both, exactly as a stop-the-world pause freezes a real process. A
//! detached renewer would keep a paused worker's lease alive and hide the very
//! failure fencing exists for.
//!
//! When the lease is lost the keeper stops and fires the job's
//! [`LeaseSignal`]; it does not abort the job from outside, because a job torn
//! down mid-way hides nothing from storage fencing and tells the caller less.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use redis::aio::ConnectionLike;
use tokio::time::Instant;

use crate::client::{Lease, LockClient, Renewal};
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
pub struct Held<T> {
    /// What the job returned.
    pub output: T,
    /// Set when the keeper saw the lease go while the job ran.
    pub lease_lost: Option<LeaseLost>,
}

/// Tells a running job whether its lease is gone, so it can stop early.
///
/// Checking it is cooperative cancellation, not safety: a worker can lose its
/// lease between checking this and writing. Storage fencing closes that gap.
#[derive(Clone, Debug, Default)]
pub struct LeaseSignal {
    lost: Arc<Mutex<Option<LeaseLost>>>,
    notify: Arc<Notify>,
}

impl LeaseSignal {
    /// Why the lease was lost, if it was.
    pub fn lost(&self) -> Option<LeaseLost> {
        self.lost.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Completes when the lease is lost (never, if it is not).
    pub async fn wait_lost(&self) -> LeaseLost {
        loop {
            let notified = self.notify.notified();
            if let Some(lost) = self.lost() {
                return lost;
            }
            notified.await;
        }
    }

    fn set(&self, lost: LeaseLost) {
        *self.lost.lock().unwrap_or_else(|e| e.into_inner()) = Some(lost);
        self.notify.notify_waiters();
    }
}

impl<C> LockClient<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    /// Runs the job made by `job` while renewing `lease` every
    /// `renew_interval_ms`, in this task.
    ///
    /// Renewal stops at `renewals_max` or `hold_ms_max` (the last renewal is
    /// shortened to end at `acquired + hold_ms_max`; Redis starts that TTL
    /// when the command arrives, so the key outlives the hold limit by at
    /// most the renewal's transit time, itself bounded by `op_timeout_ms`). When the
    /// lease is lost — renew answered 0, renewals failed past the lease, or the
    /// limit was reached and the lease ran out — the job's [`LeaseSignal`]
    /// fires; the job decides how to stop, and `hold` returns when it has.
    pub async fn hold<F, Fut>(&self, lease: &Lease, job: F) -> Held<Fut::Output>
    where
        F: FnOnce(LeaseSignal) -> Fut,
        Fut: Future,
    {
        let signal = LeaseSignal::default();
        let job = job(signal.clone());
        let keeper = self.keep(lease);
        tokio::pin!(job);
        tokio::pin!(keeper);
        let mut lease_lost = None;
        // At most two rounds: the keeper resolves at most once.
        for _ in 0..2 {
            if lease_lost.is_some() {
                let output = (&mut job).await;
                return Held { output, lease_lost };
            }
            // `biased`: after a pause the job is polled before the keeper, the
            // way a real process resumes its work before its timers catch up,
            // and the order never depends on tokio's RNG.
            tokio::select! {
                biased;
                output = &mut job => return Held { output, lease_lost },
                lost = &mut keeper => {
                    let rtype = &lease.resource().resource_type_shared();
                    telemetry::count_with(LOCK_LEASE_LOST_TOTAL, rtype, "reason", lost.reason());
                    tracing::warn!(
                        resource_type = &**rtype,
                        resource_hash = %lease.resource().id_hash(),
                        owner = %lease.owner(),
                        fence = lease.fence().get(),
                        reason = lost.reason(),
                        "lease lost; signalling the job"
                    );
                    signal.set(lost.clone());
                    lease_lost = Some(lost);
                }
            }
        }
        unreachable!("the keeper resolves at most once")
    }

    /// Resolves only when the lease is lost.
    async fn keep(&self, lease: &Lease) -> LeaseLost {
        let config = self.config();
        let interval = Duration::from_millis(config.renew_interval_ms());
        let acquired = lease.sent_at();
        let hold_end = acquired + Duration::from_millis(config.hold_ms_max());
        let mut valid_until = lease.valid_until();
        let mut next = acquired + interval;
        let mut renewals: u32 = 0;
        // Set once a renewal had to be shortened to end at the hold limit.
        let mut hold_exhausted = false;
        // Every iteration but the last sleeps until `next`, which moves forward
        // by an interval, and the hold limit ends the loop; this bound is that
        // argument made checkable.
        let iterations_max = config.hold_ms_max() / config.renew_interval_ms() + 3;
        for _ in 0..iterations_max {
            // Known before sleeping: the renewal budget is spent, or the last
            // renewal was shortened to end exactly at the hold limit. The
            // lease then simply runs out.
            if renewals >= config.renewals_max() || hold_exhausted {
                tokio::time::sleep_until(valid_until).await;
                return LeaseLost::LimitReached {
                    renewals,
                    held_ms: acquired.elapsed().as_millis() as u64,
                };
            }
            tokio::time::sleep_until(next.min(valid_until)).await;
            let now = Instant::now();
            // A worker paused past its lease lost it to time, whatever limit
            // it may also have crossed while frozen.
            if now >= valid_until {
                return LeaseLost::Expired {
                    last_error: "no renewal succeeded before the lease ended".into(),
                };
            }
            if now >= hold_end {
                tokio::time::sleep_until(valid_until).await;
                return LeaseLost::LimitReached {
                    renewals,
                    held_ms: acquired.elapsed().as_millis() as u64,
                };
            }
            let remaining_hold_ms = hold_end.saturating_duration_since(now).as_millis() as u64;
            let lease_ms = config.lease_ms().min(remaining_hold_ms.max(1));
            match self.renew(lease, lease_ms).await {
                Ok(Renewal::Renewed { valid_until: until }) => {
                    valid_until = until;
                    hold_exhausted = lease_ms < config.lease_ms();
                    renewals += 1;
                    next = now + interval;
                    tracing::debug!(owner = %lease.owner(), renewals, lease_ms, "lease renewed");
                }
                Ok(Renewal::OwnerMismatch) => {
                    return LeaseLost::OwnerMismatch;
                }
                Err(e) => {
                    tracing::warn!(owner = %lease.owner(), error = %e, "renewal failed");
                    if Instant::now() >= valid_until {
                        return LeaseLost::Expired {
                            last_error: e.to_string(),
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
