//! `unfenced-set-nx`: the lock most teams ship — `SET key owner NX PX
//! lease` to acquire, the work, a compare-and-delete to release — with no
//! fencing token, writing to a store that has no fence to check. Renew and
//! release are the reference's (compare-and-`PEXPIRE`, compare-and-delete),
//! so the lock itself is as good as a lock without fences gets; the only
//! thing missing is the fence.
//!
//! This is redis-py's `Lock`, redlock-py, and the pattern in most
//! hand-written Redis locks. It is correct until a holder stops the world
//! (a GC pause, a VM freeze) past its lease: its key expires, a successor
//! takes the lock and writes, and the stale holder wakes and writes too —
//! and the store, with no fence to compare, accepts it over the
//! successor's. Martin Kleppmann's "How to do distributed locking" (2016)
//! is this scenario. The store here is a plain one as well: no fence and
//! no idempotency check (`RawStore::write_unchecked`, fence 0), as a store
//! behind an unfenced lock has. Meant to be caught by the
//! `stale-worker-pause` scenario, property `unfenced-stale-write`.

use std::sync::Arc;

use async_trait::async_trait;
use redfence_core::{LockConfig, WriteOutcome};

use super::patch::{Leaseless, Patch, Patched};
use super::{store_error, wire};
use crate::names;
use crate::protocol::{Acquire, Held, Plug, Protocol, StepError, WriteResult};
use crate::world::{RawStore, WorkerEnv};

/// The fence a write of this lock carries: none (fences are positive).
const NO_FENCE: i64 = 0;

/// `SET NX PX`, no fence.
#[derive(Clone, Copy, Debug, Default)]
pub struct UnfencedSetNx;

impl Protocol for UnfencedSetNx {
    fn name(&self) -> &str {
        names::mutant::UNFENCED_SET_NX
    }

    fn describe(&self) -> &str {
        "a plain SET NX PX lock with compare-and-delete and no fencing token: a holder paused \
         past its lease still writes, and the store cannot tell"
    }

    fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug {
        Plug::Steps(Patched::boxed(
            Leaseless::new(env, config),
            Unfenced(env.raw_store.clone()),
        ))
    }
}

/// The patched acquire and write.
struct Unfenced(Arc<dyn RawStore>);

#[async_trait(?Send)]
impl Patch<Leaseless> for Unfenced {
    async fn acquire(
        &mut self,
        base: &mut Leaseless,
        resource: &str,
        owner: &str,
    ) -> Result<Acquire, StepError> {
        let wire = base.wire();
        let (lock_key, _) = wire.keys(resource)?;
        let lease_ms = wire.config().lease_ms();
        let set = wire
            .query(
                redis::cmd("SET")
                    .arg(&lock_key)
                    .arg(owner)
                    .arg("NX")
                    .arg("PX")
                    .arg(lease_ms),
            )
            .await?;
        let won = match set {
            redis::Value::Okay => true,
            redis::Value::Nil => {
                // Taken: by this very token if an earlier ask's reply was
                // lost (re-asked with the same token), else by someone else.
                let holder = wire.query(redis::cmd("GET").arg(&lock_key)).await?;
                wire::holds(&holder, owner)
            }
            other => return Err(wire::unexpected("SET NX PX", &other)),
        };
        Ok(if won {
            // The bug: no fence comes with the lease.
            Acquire::Acquired(Held {
                resource: resource.to_owned(),
                owner: owner.to_owned(),
                fence: None,
            })
        } else {
            Acquire::Contended
        })
    }

    async fn write(
        &mut self,
        _base: &mut Leaseless,
        held: &Held,
        job_id: &str,
        value: &str,
    ) -> Result<WriteResult, StepError> {
        // Nothing to fence with, so nothing for the store to check.
        let outcome = self
            .0
            .write_unchecked(&held.resource, NO_FENCE, &held.owner, Some(job_id), value)
            .await;
        match outcome {
            Ok(WriteOutcome::Accepted) => Ok(WriteResult::Applied),
            Ok(WriteOutcome::Stale { last_fence }) => Ok(WriteResult::Stale { last_fence }),
            Ok(WriteOutcome::NotFound) => Ok(WriteResult::NotFound),
            Err(e) => Err(store_error(e)),
        }
    }
}
