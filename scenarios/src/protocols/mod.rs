//! The protocols shipped with the harness: the reference lock and the
//! mutants, deliberately broken variants that prove the scenarios bite.
//!
//! Every protocol has one kebab-case name used in the CLI, reports, test
//! names and docs; [`all`] lists them in a fixed order.

use std::sync::Arc;

use redfence_core::{LockError, ResourceName, StoreError};

use crate::protocol::{Protocol, StepError};

pub mod app_side_fence_check;
pub mod del_unlock;
pub mod fixed_backoff;
pub mod get_then_del;
pub mod late_renewal;
pub mod lock_before_fence;
pub mod no_fence_check;
pub mod no_ttl;
pub mod patch;
pub mod process_wide_token;
pub mod redis_counter_fences;
pub mod redlock;
pub mod reference;
pub mod renew_without_owner_check;
pub mod set_without_nx;
pub mod setnx_then_expire;
pub mod static_owner;
pub mod team_flow;
pub mod unbounded_renewal;
pub mod unfenced_set_nx;
pub mod wire;

pub use app_side_fence_check::AppSideFenceCheck;
pub use del_unlock::DelUnlock;
pub use fixed_backoff::FixedBackoff;
pub use get_then_del::GetThenDel;
pub use late_renewal::LateRenewal;
pub use lock_before_fence::LockBeforeFence;
pub use no_fence_check::NoFenceCheck;
pub use no_ttl::NoTtl;
pub use process_wide_token::ProcessWideToken;
pub use redis_counter_fences::RedisCounterFences;
pub use redlock::{Redlock, RedlockFenced, RedlockHalfQuorum};
pub use reference::{Reference, ReferenceSession, ReferenceSteps, ReferenceWorker};
pub use renew_without_owner_check::RenewWithoutOwnerCheck;
pub use set_without_nx::SetWithoutNx;
pub use setnx_then_expire::SetnxThenExpire;
pub use static_owner::StaticOwner;
pub use unbounded_renewal::UnboundedRenewal;
pub use unfenced_set_nx::UnfencedSetNx;

/// Every shipped protocol: the reference at both plug-in levels first,
/// then the mutants.
pub fn all() -> Vec<Arc<dyn Protocol>> {
    vec![
        Arc::new(Reference),
        Arc::new(ReferenceSteps),
        Arc::new(RedlockFenced),
        Arc::new(DelUnlock),
        Arc::new(GetThenDel),
        Arc::new(RenewWithoutOwnerCheck),
        Arc::new(NoFenceCheck),
        Arc::new(AppSideFenceCheck),
        Arc::new(StaticOwner),
        Arc::new(UnboundedRenewal),
        Arc::new(SetnxThenExpire),
        Arc::new(NoTtl),
        Arc::new(LockBeforeFence),
        Arc::new(RedisCounterFences),
        Arc::new(UnfencedSetNx),
        Arc::new(SetWithoutNx),
        Arc::new(LateRenewal),
        Arc::new(FixedBackoff),
        Arc::new(ProcessWideToken),
        Arc::new(Redlock),
        Arc::new(RedlockHalfQuorum),
    ]
}

/// The shipped protocol called `name`: one of [`all`], or
/// `reference-steps` (the reference at the step level, which the default
/// sweep leaves out because `reference` is the same library as deployed).
pub fn by_name(name: &str) -> Option<Arc<dyn Protocol>> {
    all()
        .into_iter()
        .chain(std::iter::once(
            Arc::new(ReferenceSteps) as Arc<dyn Protocol>
        ))
        .find(|p| p.name() == name)
}

/// A validated resource name (scenarios use plain names).
pub fn resource_name(resource: &str) -> Result<ResourceName, StepError> {
    ResourceName::new(resource).map_err(|e| StepError::Failed(e.to_string()))
}

/// A library error as a step outcome: only a lost reply is indeterminate.
pub fn lock_error(error: LockError) -> StepError {
    match error {
        LockError::Indeterminate { .. } => StepError::Indeterminate(error.to_string()),
        other => StepError::Failed(other.to_string()),
    }
}

/// A store error as a step outcome: definite only when the request was never
/// sent or the store refused to run it.
pub fn store_error(error: StoreError) -> StepError {
    let text = error.to_string();
    if error.definitely_not_applied() {
        StepError::Failed(text)
    } else {
        StepError::Indeterminate(text)
    }
}
