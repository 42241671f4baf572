//! `lock-before-fence`: an acquire that takes the lock first
//! (`SET lock owner NX PX lease`) and increments the fence counter in a
//! second command. Renew, release and the write are the reference's.
//!
//! The reference's script increments the counter *before* it sets the lock
//! for a reason: if the `INCR` fails (say the fence key was overwritten with
//! something that is not an integer), this mutant answers "failed" — and
//! leaves behind a lock that nobody holds and nobody will release, which
//! blocks every contender for a whole lease after a failure that was
//! supposed to have had no effect. Meant to be caught by the
//! `redis-unavailable` scenario (whose first phase corrupts the fence key),
//! property `fail-closed`, by its rule that a definitely failed acquire
//! leaves no lock behind.

use crate::names;
use async_trait::async_trait;
use redfence_core::LockConfig;
use redis::Value;

use super::patch::{Leaseless, Patch, Patched};
use super::wire;
use crate::protocol::{Acquire, Plug, Protocol, StepError};
use crate::world::WorkerEnv;

/// The lock set before the fence is issued.
#[derive(Clone, Copy, Debug, Default)]
pub struct LockBeforeFence;

impl Protocol for LockBeforeFence {
    fn name(&self) -> &str {
        names::mutant::LOCK_BEFORE_FENCE
    }

    fn describe(&self) -> &str {
        "acquire is SET NX PX, then INCR of the fence as a second command: a failing INCR \
         leaves a lock with no fence behind"
    }

    fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug {
        Plug::Steps(Patched::boxed(Leaseless::new(env, config), LockFirst))
    }
}

/// The patched acquire.
struct LockFirst;

#[async_trait(?Send)]
impl Patch<Leaseless> for LockFirst {
    async fn acquire(
        &mut self,
        base: &mut Leaseless,
        resource: &str,
        owner: &str,
    ) -> Result<Acquire, StepError> {
        let wire = base.wire();
        let (lock_key, fence_key) = wire.keys(resource)?;
        let lease_ms = wire.config().lease_ms();
        let set = redis::cmd("SET")
            .arg(&lock_key)
            .arg(owner)
            .arg("NX")
            .arg("PX")
            .arg(lease_ms)
            .clone();
        match wire.query(&set).await? {
            Value::Okay => {}
            Value::Nil => {
                return Ok(match wire.taken(resource, owner).await? {
                    Some(fence) => wire::acquired(resource, owner, fence),
                    None => Acquire::Contended,
                });
            }
            other => return Err(wire::unexpected("SET NX PX", &other)),
        }
        // The bug: an INCR error is a definite failure of the acquire, yet
        // the lock set above stays, for a whole lease, with no fence and no
        // one to release it.
        let counter = wire.query(redis::cmd("INCR").arg(&fence_key)).await?;
        Ok(wire::acquired(
            resource,
            owner,
            wire::fence("INCR", &counter)?,
        ))
    }
}
