//! `redis-counter-fences`: the reference lock, but its fences always come
//! from the Redis counter in the acquire script, whatever the configuration
//! says — a deployment that asked for the store's durable counter and did
//! not get it.
//!
//! `INCR` is monotonic only along one primary's history: when a failover
//! promotes a replica that had not received the latest increments, the
//! counter goes back and hands out a fence that was already issued, and the
//! store then orders two owners' writes wrongly. With the durable counter
//! (the reference configured for it) the same failover issues no fence
//! twice. Meant to be caught by the `failover-counter-regression` scenario,
//! property `fence-uniqueness`.

use crate::names;
use redfence_core::{FenceSourceKind, LockConfig};

use super::ReferenceSession;
use crate::protocol::{Plug, Protocol};
use crate::world::WorkerEnv;

/// Redis-counter fences, regardless of the configuration. (The protocol,
/// not redfence-core's fence source of the same name.)
#[derive(Clone, Copy, Debug, Default)]
pub struct RedisCounterFences;

impl Protocol for RedisCounterFences {
    fn name(&self) -> &str {
        names::mutant::REDIS_COUNTER_FENCES
    }

    fn describe(&self) -> &str {
        "the reference, but fences always come from the Redis counter, even when the \
         configuration asks for the store's durable counter"
    }

    fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug {
        Plug::Steps(Box::new(ReferenceSession::new(env, &redis_counter(config))))
    }
}

/// `config` with the fence source switched to the Redis counter (the bug:
/// the deployment's choice of a durable counter is ignored).
fn redis_counter(config: &LockConfig) -> LockConfig {
    LockConfig::builder()
        .lease_ms(config.lease_ms())
        .renew_interval_ms(config.renew_interval_ms())
        .hold_ms_max(config.hold_ms_max())
        .renewals_max(config.renewals_max())
        .acquire_deadline_ms(config.acquire_deadline_ms())
        .backoff_base_ms(config.backoff_base_ms())
        .backoff_cap_ms(config.backoff_cap_ms())
        .attempts_max(config.attempts_max())
        .op_timeout_ms(config.op_timeout_ms())
        .reasks_max(config.reasks_max())
        .keys(config.keys().clone())
        .fence_source(FenceSourceKind::RedisCounter)
        .build()
        .expect("a valid configuration stays valid with another fence source")
}
