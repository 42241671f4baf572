//! `app-side-fence-check`: the reference lock whose fence check happens in
//! the application — read the store's fence, compare, then write in a
//! second, unchecked statement.
//!
//! It looks like fencing, and it rejects a stale worker whose successor has
//! already written by the time of the read. But the check and the write are
//! not one statement: a worker paused between them writes its stale fence
//! over its successor's write. Meant to be caught by the
//! `stale-worker-pause` scenario (pause between the read and the write),
//! property `fence-order`.

use crate::names;
use async_trait::async_trait;
use std::sync::Arc;

use redfence_core::LockConfig;

use super::patch::{Patch, Patched};
use super::wire;
use super::{store_error, ReferenceSession};
use crate::protocol::{Held, Plug, Protocol, StepError, WriteResult};
use crate::world::{RawStore, WorkerEnv};

/// Fence compared in the application, then an unchecked write.
#[derive(Clone, Copy, Debug, Default)]
pub struct AppSideFenceCheck;

impl Protocol for AppSideFenceCheck {
    fn name(&self) -> &str {
        names::mutant::APP_SIDE_FENCE_CHECK
    }

    fn describe(&self) -> &str {
        "the reference, but the write reads the store's fence, compares in the application, \
         then writes unchecked in a second step"
    }

    fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug {
        Plug::Steps(Patched::boxed(
            ReferenceSession::new(env, config),
            ReadThenWrite(env.raw_store.clone()),
        ))
    }
}

/// The patched write.
struct ReadThenWrite(Arc<dyn RawStore>);

#[async_trait(?Send)]
impl Patch<ReferenceSession> for ReadThenWrite {
    async fn write(
        &mut self,
        _base: &mut ReferenceSession,
        held: &Held,
        job_id: &str,
        value: &str,
    ) -> Result<WriteResult, StepError> {
        let fence = wire::held_fence(held)?;
        let stored = self
            .0
            .read_fence(&held.resource)
            .await
            .map_err(store_error)?;
        if fence <= stored {
            return Ok(WriteResult::Stale { last_fence: stored });
        }
        // The bug: by the time this lands, a successor may have written.
        wire::write_unchecked(self.0.as_ref(), held, job_id, value).await
    }
}
