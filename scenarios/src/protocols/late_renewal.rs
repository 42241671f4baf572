//! `late-renewal`: a whole worker whose spawned renewal task renews every
//! *lease* instead of well inside it (`TeamFlow` with the renewal interval
//! set to the lease).
//!
//! The usual shape of the bug: a renewal timer set to the TTL ("extend it
//! when it runs out"), or a watchdog period computed in the wrong unit.
//! Each renewal leaves for Redis exactly when the key expires, so the key
//! is gone before the renewal lands: the lease lapses under a healthy
//! holder whose job is still running, and another worker takes the lock.
//! The fence keeps the data safe; the lock does not keep its promise.
//! Meant to be caught by `mutual-exclusion`, property `lease-continuity`.

use crate::names;
use redfence_core::LockConfig;

use super::team_flow::{Knobs, TeamFlow};
use crate::protocol::{Plug, Protocol};
use crate::world::WorkerEnv;

/// Renews every lease, too late each time.
#[derive(Clone, Copy, Debug, Default)]
pub struct LateRenewal;

impl Protocol for LateRenewal {
    fn name(&self) -> &str {
        names::mutant::LATE_RENEWAL
    }

    fn describe(&self) -> &str {
        "a whole worker whose spawned renewal task renews once per lease, each time after \
         the key has expired"
    }

    fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug {
        let knobs = Knobs {
            renew_interval_ms: config.lease_ms(),
            ..Knobs::correct(config)
        };
        Plug::Worker(Box::new(TeamFlow::new(env, config, knobs)))
    }
}
