//! `fixed-backoff`: a whole worker whose retry loop waits a fixed delay —
//! the backoff base, no growth, no jitter — between attempts (`TeamFlow`
//! with `fixed_retry_ms`).
//!
//! The `while !lock.acquire() { sleep(10ms) }` loop found in many services:
//! every waiter comes back every few milliseconds for as long as the lock
//! is held, in lockstep with the others, so under load each acquisition
//! costs many times the round trips of a jittered exponential backoff — a
//! retry storm on the Redis primary. Nothing unsafe happens; the lock just
//! stops scaling. Meant to be caught by `hotspot-load`, property
//! `contention`.

use crate::names;
use redfence_core::LockConfig;

use super::team_flow::{Knobs, TeamFlow};
use crate::protocol::{Plug, Protocol};
use crate::world::WorkerEnv;

/// Retries after a fixed delay.
#[derive(Clone, Copy, Debug, Default)]
pub struct FixedBackoff;

impl Protocol for FixedBackoff {
    fn name(&self) -> &str {
        names::mutant::FIXED_BACKOFF
    }

    fn describe(&self) -> &str {
        "a whole worker whose retry loop waits a fixed delay, no growth and no jitter: \
         contenders retry in lockstep"
    }

    fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug {
        let knobs = Knobs {
            fixed_retry_ms: Some(config.backoff_base_ms()),
            ..Knobs::correct(config)
        };
        Plug::Worker(Box::new(TeamFlow::new(env, config, knobs)))
    }
}
