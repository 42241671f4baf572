//! `unbounded-renewal`: the reference lock that keeps renewing for as long
//! as the job runs, with no maximum hold time and no renewal count.
//!
//! A job that hangs (or just runs long) keeps the lock forever, and every
//! other contender starves behind it. Meant to be caught by the
//! `renewal-limits` scenario, properties `renewal-safety` (renewals past the
//! maximum hold) and `bounded-liveness` (a lock that outlives max hold +
//! lease).

use crate::names;
use async_trait::async_trait;
use redfence_core::LockConfig;

use super::patch::{Patch, Patched};
use super::ReferenceSession;
use crate::protocol::{Plug, Protocol, RenewalPolicy, Session};
use crate::world::WorkerEnv;

/// Renews without limits.
#[derive(Clone, Copy, Debug, Default)]
pub struct UnboundedRenewal;

impl Protocol for UnboundedRenewal {
    fn name(&self) -> &str {
        names::mutant::UNBOUNDED_RENEWAL
    }

    fn describe(&self) -> &str {
        "the reference, but it renews for as long as the job runs: no max hold, no renewal count"
    }

    fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug {
        Plug::Steps(Patched::boxed(ReferenceSession::new(env, config), NoLimits))
    }
}

/// The patched renewal policy.
struct NoLimits;

#[async_trait(?Send)]
impl Patch<ReferenceSession> for NoLimits {
    fn renewal(&self, base: &ReferenceSession) -> RenewalPolicy {
        RenewalPolicy {
            // The bug: nothing ever stops the renewals but the job's end.
            hold_ms_max: None,
            renewals_max: None,
            ..base.renewal()
        }
    }
}
