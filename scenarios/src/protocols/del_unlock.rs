//! `del-unlock`: the reference lock whose release is a plain `DEL` of the
//! lock key, with no check that the key still holds this owner's token.
//!
//! A worker whose lease ran out while it was paused (or slow) deletes its
//! successor's lock on release, and a third worker can then take the lock
//! while the successor still works under it. Meant to be caught by the
//! `late-unlock` scenario, property `unlock-safety` (the Redis ownership log
//! shows the successor's key deleted during another owner's release).

use crate::names;
use async_trait::async_trait;
use redfence_core::LockConfig;

use super::patch::{Patch, Patched};
use super::wire::{self, Wire};
use super::ReferenceSession;
use crate::protocol::{Held, Plug, Protocol, StepError};
use crate::world::WorkerEnv;

/// Release is `DEL` without an owner check.
#[derive(Clone, Copy, Debug, Default)]
pub struct DelUnlock;

impl Protocol for DelUnlock {
    fn name(&self) -> &str {
        names::mutant::DEL_UNLOCK
    }

    fn describe(&self) -> &str {
        "the reference, but release is a plain DEL with no owner check"
    }

    fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug {
        Plug::Steps(Patched::boxed(
            ReferenceSession::new(env, config),
            PlainDel(Wire::new(env, config)),
        ))
    }
}

/// The patched release.
struct PlainDel(Wire);

#[async_trait(?Send)]
impl Patch<ReferenceSession> for PlainDel {
    async fn release(
        &mut self,
        _base: &mut ReferenceSession,
        held: &Held,
    ) -> Result<bool, StepError> {
        let (lock_key, _) = self.0.keys(&held.resource)?;
        // The bug: whoever holds the key now, it goes.
        let deleted = self.0.query(redis::cmd("DEL").arg(lock_key)).await?;
        Ok(wire::int("DEL", &deleted)? == 1)
    }
}
