//! `renew-without-owner-check`: the reference lock whose renewal is a plain
//! `PEXPIRE lock lease`, without checking that the key still holds this
//! owner's token.
//!
//! A worker that lost its lease (a pause longer than the lease) keeps
//! "renewing" and so extends its successor's lock: if the successor dies,
//! its lock outlives it by as long as the stale worker keeps renewing, and
//! the stale worker never learns it lost the lease. Meant to be caught by
//! the `late-unlock` scenario, property `renewal-safety` (the successor's key
//! expires later than its own last extension allows).

use crate::names;
use async_trait::async_trait;
use redfence_core::LockConfig;

use super::patch::{Patch, Patched};
use super::wire::{self, Wire};
use super::ReferenceSession;
use crate::protocol::{Held, Plug, Protocol, StepError};
use crate::world::WorkerEnv;

/// Renewal is `PEXPIRE` without an owner check.
#[derive(Clone, Copy, Debug, Default)]
pub struct RenewWithoutOwnerCheck;

impl Protocol for RenewWithoutOwnerCheck {
    fn name(&self) -> &str {
        names::mutant::RENEW_WITHOUT_OWNER_CHECK
    }

    fn describe(&self) -> &str {
        "the reference, but renew is a plain PEXPIRE that extends whoever holds the lock"
    }

    fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug {
        Plug::Steps(Patched::boxed(
            ReferenceSession::new(env, config),
            PlainPexpire(Wire::new(env, config)),
        ))
    }
}

/// The patched renewal.
struct PlainPexpire(Wire);

#[async_trait(?Send)]
impl Patch<ReferenceSession> for PlainPexpire {
    async fn renew(
        &mut self,
        _base: &mut ReferenceSession,
        held: &Held,
        lease_ms: u64,
    ) -> Result<bool, StepError> {
        if lease_ms == 0 {
            // PEXPIRE 0 would delete the key; the reference refuses it too,
            // and this mutant breaks only the owner check.
            return Err(StepError::Failed("renewal of 0 ms refused".to_owned()));
        }
        let (lock_key, _) = self.0.keys(&held.resource)?;
        // The bug: any key extends, whoever's token it holds.
        let extended = self
            .0
            .query(redis::cmd("PEXPIRE").arg(lock_key).arg(lease_ms))
            .await?;
        Ok(wire::int("PEXPIRE", &extended)? == 1)
    }
}
