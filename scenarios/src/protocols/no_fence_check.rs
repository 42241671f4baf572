//! `no-fence-check`: the reference lock whose protected write reaches
//! storage without the fence check (and without the idempotency check):
//! the store takes whatever fence the write carries.
//!
//! The lock alone cannot stop a worker that was paused past its lease from
//! writing afterwards; only the store's fence check can. Without it the
//! stale worker's write lands after its successor's, and a redelivered job
//! is applied twice. Meant to be caught by the `stale-worker-pause`,
//! `fence-rejected` and `crash-before-ack` scenarios, properties
//! `fence-order`, `stale-owner-rejected` and `exactly-once`.

use crate::names;
use async_trait::async_trait;
use std::sync::Arc;

use redfence_core::LockConfig;

use super::patch::{Patch, Patched};
use super::wire;
use super::ReferenceSession;
use crate::protocol::{Held, Plug, Protocol, StepError, WriteResult};
use crate::world::{RawStore, WorkerEnv};

/// Writes go to storage unchecked.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoFenceCheck;

impl Protocol for NoFenceCheck {
    fn name(&self) -> &str {
        names::mutant::NO_FENCE_CHECK
    }

    fn describe(&self) -> &str {
        "the reference, but the protected write reaches storage with no fence or idempotency check"
    }

    fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug {
        Plug::Steps(Patched::boxed(
            ReferenceSession::new(env, config),
            UncheckedWrite(env.raw_store.clone()),
        ))
    }
}

/// The patched write.
struct UncheckedWrite(Arc<dyn RawStore>);

#[async_trait(?Send)]
impl Patch<ReferenceSession> for UncheckedWrite {
    async fn write(
        &mut self,
        _base: &mut ReferenceSession,
        held: &Held,
        job_id: &str,
        value: &str,
    ) -> Result<WriteResult, StepError> {
        // The bug: the fence travels with the write, but nobody checks it.
        wire::write_unchecked(self.0.as_ref(), held, job_id, value).await
    }
}
