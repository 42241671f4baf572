//! `setnx-then-expire`: a lock taken in three separate commands — `SETNX`
//! the lock key, `INCR` the fence counter, then `PEXPIRE` the lock key with
//! the lease. Renew, release and the write are the reference's.
//!
//! Until the `PEXPIRE` lands, the lock has no TTL: a worker that crashes (or
//! whose `SETNX` reply is lost and who gives up) between the `SETNX` and the
//! `PEXPIRE` leaves a lock that never expires, and every other contender
//! waits forever. In normal runs it works: a `SETNX` that finds the key
//! taken reads it, and the token that already holds it (a re-ask) is
//! answered with the counter's current fence, as the reference's script
//! answers it. Meant to be caught by the `crash-after-acquire` scenario
//! (crash between the `SETNX` and the `PEXPIRE`), property
//! `bounded-liveness`.

use crate::names;
use async_trait::async_trait;
use redfence_core::LockConfig;

use super::patch::{Leaseless, Patch, Patched};
use super::wire;
use crate::protocol::{Acquire, Plug, Protocol, StepError};
use crate::world::WorkerEnv;

/// `SETNX`, `INCR`, `PEXPIRE` as three commands.
#[derive(Clone, Copy, Debug, Default)]
pub struct SetnxThenExpire;

impl Protocol for SetnxThenExpire {
    fn name(&self) -> &str {
        names::mutant::SETNX_THEN_EXPIRE
    }

    fn describe(&self) -> &str {
        "acquire is SETNX, then INCR of the fence, then PEXPIRE: a crash in between leaves a \
         lock with no TTL"
    }

    fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug {
        Plug::Steps(Patched::boxed(Leaseless::new(env, config), ThreeCommands))
    }
}

/// The patched acquire.
struct ThreeCommands;

#[async_trait(?Send)]
impl Patch<Leaseless> for ThreeCommands {
    async fn acquire(
        &mut self,
        base: &mut Leaseless,
        resource: &str,
        owner: &str,
    ) -> Result<Acquire, StepError> {
        let wire = base.wire();
        let (lock_key, fence_key) = wire.keys(resource)?;
        let set = wire
            .query(redis::cmd("SETNX").arg(&lock_key).arg(owner))
            .await?;
        if wire::int("SETNX", &set)? == 0 {
            return Ok(match wire.taken(resource, owner).await? {
                Some(fence) => wire::acquired(resource, owner, fence),
                None => Acquire::Contended,
            });
        }
        // The bug: from here until the PEXPIRE lands the lock has no TTL,
        // and any failure on the way leaves it so.
        let counter = wire.query(redis::cmd("INCR").arg(&fence_key)).await?;
        let fence = wire::fence("INCR", &counter)?;
        let lease_ms = wire.config().lease_ms();
        let expiring = wire
            .query(redis::cmd("PEXPIRE").arg(&lock_key).arg(lease_ms))
            .await?;
        if wire::int("PEXPIRE", &expiring)? == 0 {
            // The key is gone (deleted by someone): not ours after all.
            return Ok(Acquire::Contended);
        }
        Ok(wire::acquired(resource, owner, fence))
    }
}
