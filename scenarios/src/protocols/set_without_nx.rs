//! `set-without-nx`: the acquire forgets `NX` — `SET key token PX lease`
//! takes the lock whether or not someone holds it, after `INCR`ing the fence
//! counter. Renew, release and the write are the reference's.
//!
//! A one-word bug seen in hand-written locks (and its cousin: a client that
//! reads any reply to `SET … NX` as success). Every acquire "succeeds", so
//! two workers hold unexpired leases at once and both act on the resource;
//! the first holder's lease vanishes under it while it is healthy and
//! working. The storage fence still refuses the older writer's write once
//! the newer has written, so the data may survive — the lock did not.
//! Meant to be caught by `mutual-exclusion`, properties
//! `no-overlapping-holders` and `lease-continuity`.

use crate::names;
use async_trait::async_trait;
use redfence_core::LockConfig;

use super::patch::{Leaseless, Patch, Patched};
use super::wire;
use crate::protocol::{Acquire, Plug, Protocol, StepError};
use crate::world::WorkerEnv;

/// Fence, then the lock with `PX` but no `NX`.
const ACQUIRE: &str = r#"
local fence = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return fence
"#;

/// `SET` without `NX`.
#[derive(Clone, Copy, Debug, Default)]
pub struct SetWithoutNx;

impl Protocol for SetWithoutNx {
    fn name(&self) -> &str {
        names::mutant::SET_WITHOUT_NX
    }

    fn describe(&self) -> &str {
        "acquire is SET PX without NX: it takes the lock from whoever holds it"
    }

    fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug {
        Plug::Steps(Patched::boxed(Leaseless::new(env, config), Overwrite))
    }
}

/// The patched acquire.
struct Overwrite;

#[async_trait(?Send)]
impl Patch<Leaseless> for Overwrite {
    async fn acquire(
        &mut self,
        base: &mut Leaseless,
        resource: &str,
        owner: &str,
    ) -> Result<Acquire, StepError> {
        let wire = base.wire();
        let (lock_key, fence_key) = wire.keys(resource)?;
        let lease_ms = wire.config().lease_ms().to_string();
        let reply = wire
            .query(
                redis::cmd("EVAL")
                    .arg(ACQUIRE)
                    .arg(2)
                    .arg(&lock_key)
                    .arg(&fence_key)
                    .arg(owner)
                    .arg(&lease_ms),
            )
            .await?;
        let fence = wire::fence("SET", &reply)?;
        Ok(wire::acquired(resource, owner, fence))
    }
}
