//! `static-owner`: the reference lock with one owner token for every
//! acquire of every worker (a hard-coded or per-service id) instead of a
//! fresh one per acquire.
//!
//! The reference acquire script is idempotent per token — a re-ask after a
//! lost reply must learn that its first attempt won — so a second worker
//! asking with the same token is told "already yours" and handed the same
//! fence: two workers hold the lock at once under one fence. Meant to be
//! caught by the `mutual-exclusion` scenario, property `fence-uniqueness`.

use crate::names;
use async_trait::async_trait;
use redfence_core::LockConfig;

use super::patch::{Patch, Patched};
use super::ReferenceSession;
use crate::protocol::{Plug, Protocol};
use crate::world::WorkerEnv;

/// The token every acquire of every worker uses.
pub const STATIC_OWNER: &str = "worker-static";

/// One owner token for everyone.
#[derive(Clone, Copy, Debug, Default)]
pub struct StaticOwner;

impl Protocol for StaticOwner {
    fn name(&self) -> &str {
        names::mutant::STATIC_OWNER
    }

    fn describe(&self) -> &str {
        "the reference, but every acquire of every worker uses the same owner token"
    }

    fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug {
        Plug::Steps(Patched::boxed(
            ReferenceSession::new(env, config),
            SameToken,
        ))
    }
}

/// The patched owner token.
struct SameToken;

#[async_trait(?Send)]
impl Patch<ReferenceSession> for SameToken {
    fn next_owner(&mut self, _base: &mut ReferenceSession) -> String {
        // The bug: not fresh per acquire, not even per worker.
        STATIC_OWNER.to_owned()
    }
}
