//! `no-ttl`: a lock with no lease at all — the acquire sets the lock key
//! with `SET … NX` and no `PX`, and renewal is a no-op. Release and the
//! write are the reference's.
//!
//! While every holder releases, nobody notices. A holder that crashes, or
//! whose acquire reply is lost, leaves a lock that never expires, and every
//! other contender waits forever. The acquire is still one atomic script,
//! idempotent per token like the reference's (the fence issued with it),
//! so the only thing broken is the missing TTL. Meant to be caught by the
//! `crash-after-acquire` and `lost-acquire-reply` scenarios, property
//! `bounded-liveness`.

use crate::names;
use std::sync::LazyLock;

use async_trait::async_trait;
use redfence_core::scripts::parse_acquire_reply;
use redfence_core::LockConfig;
use redis::Script;

use super::patch::{Leaseless, Patch, Patched};
use super::wire;
use crate::protocol::{Acquire, Held, Plug, Protocol, StepError};
use crate::world::WorkerEnv;

/// The reference's acquire script (`core/lua/acquire.lua`) with the lease
/// dropped: `SET … NX` instead of `PSETEX`, and the fence always from the
/// Redis counter.
pub const NO_TTL_ACQUIRE_LUA: &str = r"
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
    return {2, redis.call('GET', KEYS[2])}
end
if holder then
    return {0, false}
end
redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1], 'NX')
return {1, redis.call('GET', KEYS[2])}
";

/// The script, compiled (hashed) once per process.
static ACQUIRE: LazyLock<Script> = LazyLock::new(|| Script::new(NO_TTL_ACQUIRE_LUA));

/// A lock key without a TTL.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoTtl;

impl Protocol for NoTtl {
    fn name(&self) -> &str {
        names::mutant::NO_TTL
    }

    fn describe(&self) -> &str {
        "acquire is SET NX with no lease and renewal does nothing: a crashed holder's lock \
         never expires"
    }

    fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug {
        Plug::Steps(Patched::boxed(Leaseless::new(env, config), Forever))
    }
}

/// The patched acquire and renewal.
struct Forever;

#[async_trait(?Send)]
impl Patch<Leaseless> for Forever {
    async fn acquire(
        &mut self,
        base: &mut Leaseless,
        resource: &str,
        owner: &str,
    ) -> Result<Acquire, StepError> {
        let wire = base.wire();
        let (lock_key, fence_key) = wire.keys(resource)?;
        let mut invocation = ACQUIRE.prepare_invoke();
        invocation.key(lock_key).key(fence_key).arg(owner);
        let reply = wire.invoke(&invocation).await?;
        // The variant answers in the reference script's shape, so the
        // library's own parser reads it.
        match parse_acquire_reply(&reply) {
            Ok(answer) if !answer.held() => Ok(Acquire::Contended),
            Ok(answer) => match answer.fence() {
                Some(fence) => Ok(wire::acquired(resource, owner, fence.get())),
                None => Err(wire::unexpected("acquire", &reply)),
            },
            Err(_) => Err(wire::unexpected("acquire", &reply)),
        }
    }

    async fn renew(
        &mut self,
        _base: &mut Leaseless,
        _held: &Held,
        _lease_ms: u64,
    ) -> Result<bool, StepError> {
        // Nothing to extend: the key never expires (the bug).
        Ok(true)
    }
}
