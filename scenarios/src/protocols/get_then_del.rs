//! `get-then-del`: the reference lock whose release checks the owner in the
//! client — `GET` the lock key, compare the token, then a separate `DEL`.
//!
//! The check and the delete are two round trips, not one atomic step: if the
//! lease expires and a successor takes the lock between the `GET` and the
//! `DEL` (a pause, a slow network), the `DEL` removes the successor's lock.
//! Meant to be caught by the `late-unlock` scenario, property
//! `unlock-safety`, when the releasing worker stalls between the two.

use crate::names;
use async_trait::async_trait;
use redfence_core::LockConfig;

use super::patch::{Patch, Patched};
use super::wire::{self, Wire};
use super::ReferenceSession;
use crate::protocol::{Held, Plug, Protocol, StepError};
use crate::world::WorkerEnv;

/// Release is `GET`, compare in the client, then `DEL`.
#[derive(Clone, Copy, Debug, Default)]
pub struct GetThenDel;

impl Protocol for GetThenDel {
    fn name(&self) -> &str {
        names::mutant::GET_THEN_DEL
    }

    fn describe(&self) -> &str {
        "the reference, but release is GET, compare in the client, then a separate DEL"
    }

    fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug {
        Plug::Steps(Patched::boxed(
            ReferenceSession::new(env, config),
            CheckThenDel(Wire::new(env, config)),
        ))
    }
}

/// The patched release.
struct CheckThenDel(Wire);

#[async_trait(?Send)]
impl Patch<ReferenceSession> for CheckThenDel {
    async fn release(
        &mut self,
        _base: &mut ReferenceSession,
        held: &Held,
    ) -> Result<bool, StepError> {
        let (lock_key, _) = self.0.keys(&held.resource)?;
        let holder = self.0.query(redis::cmd("GET").arg(&lock_key)).await?;
        if !wire::holds(&holder, &held.owner) {
            return Ok(false);
        }
        // The bug: what the GET saw may no longer be true when the DEL runs.
        let deleted = self.0.query(redis::cmd("DEL").arg(&lock_key)).await?;
        Ok(wire::int("DEL", &deleted)? == 1)
    }
}
