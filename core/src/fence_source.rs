//! Where fences come from: the Redis counter in the acquire script, or a
//! durable Postgres counter.
//!
//! The Redis counter costs nothing extra (the acquire script increments it),
//! but `INCR` is only monotonic along one primary's history: a failover that
//! loses the increment hands out a fence twice. Deployments that cannot accept
//! that take the fence from Postgres, one row per resource, right after the
//! Redis lease is taken. Both sit behind one trait, chosen by configuration.

use std::fmt;

use async_trait::async_trait;

use crate::config::FenceSourceKind;
use crate::error::{LockError, StoreError};
use crate::fence::Fence;
use crate::pg_store::PgFencedStore;
use crate::resource::ResourceName;

/// Issues the fence for a lease that was just taken.
#[async_trait]
pub trait FenceSource: Send + Sync + fmt::Debug {
    /// Which kind this is; the acquire script issues the fence itself only for
    /// [`FenceSourceKind::RedisCounter`].
    fn kind(&self) -> FenceSourceKind;

    /// The fence for a lease on `resource`. `from_script` is what the acquire
    /// script returned (present only when the script issues fences).
    async fn fence_for(
        &self,
        resource: &ResourceName,
        from_script: Option<Fence>,
    ) -> Result<Fence, LockError>;
}

/// The default: the fence is `INCR fence:{name}` inside the acquire script.
#[derive(Debug, Default, Clone, Copy)]
pub struct RedisCounterFences;

#[async_trait]
impl FenceSource for RedisCounterFences {
    fn kind(&self) -> FenceSourceKind {
        FenceSourceKind::RedisCounter
    }

    async fn fence_for(
        &self,
        _resource: &ResourceName,
        from_script: Option<Fence>,
    ) -> Result<Fence, LockError> {
        from_script.ok_or_else(|| {
            LockError::Protocol("acquire script returned no fence in redis-counter mode".into())
        })
    }
}

/// A durable counter row per resource in Postgres (`fence_counters`).
#[derive(Debug, Clone)]
pub struct PostgresFences {
    store: PgFencedStore,
}

impl PostgresFences {
    /// Fences from `store`'s `fence_counters` table.
    pub fn new(store: PgFencedStore) -> Self {
        Self { store }
    }
}

#[async_trait]
impl FenceSource for PostgresFences {
    fn kind(&self) -> FenceSourceKind {
        FenceSourceKind::Store
    }

    async fn fence_for(
        &self,
        resource: &ResourceName,
        _from_script: Option<Fence>,
    ) -> Result<Fence, LockError> {
        self.store
            .next_fence(resource)
            .await
            .map_err(LockError::FenceSource)
    }
}

impl From<StoreError> for LockError {
    fn from(e: StoreError) -> Self {
        LockError::FenceSource(e)
    }
}
