//! The store path without the fence check, for the mutants that check
//! fences in the application or not at all.

use std::time::Duration;

use async_trait::async_trait;
use redfence_core::{
    FenceOutcome, FencedStore, PgFencedStore, ResourceName, StoreError, WriteOutcome,
};

use crate::world::RawStore;

/// The store path without the fence check (mutants only), in SQL on the
/// core's schema (core/migrations/0001_fenced_store.sql).
pub(super) struct PgRawStore {
    pub(super) store: PgFencedStore,
    pub(super) op_timeout: Duration,
}

/// The unchecked write as one statement, so it commits or fails whole, as
/// `write_fenced` does: value and both fence columns set to the write's
/// fence whatever they were, the job completed (a redelivered job is
/// completed again: no idempotency check either), and the write logged
/// `accepted` — or `not_found`, changing nothing, without the resource.
pub(super) const WRITE_UNCHECKED_SQL: &str = "\
    WITH upd AS (UPDATE shared_resources SET value = $1, last_fence = $2 \
                 WHERE id = $3 RETURNING id), \
    guard AS (UPDATE resource_guards SET last_fence = $2 \
              WHERE resource_id IN (SELECT id FROM upd)), \
    job AS (INSERT INTO job_completions (job_id, resource_id, fence, owner_token) \
            SELECT $5, id, $2, $4 FROM upd WHERE $5::TEXT IS NOT NULL \
            ON CONFLICT (job_id) DO UPDATE SET resource_id = EXCLUDED.resource_id, \
                fence = EXCLUDED.fence, owner_token = EXCLUDED.owner_token, \
                completed_at = clock_timestamp()), \
    verdict AS (SELECT CASE WHEN EXISTS (SELECT 1 FROM upd) THEN 'accepted' \
                            ELSE 'not_found' END AS outcome), \
    logged AS (INSERT INTO fence_log (resource_id, fence, owner_token, job_id, outcome) \
               SELECT $3, $2, $4, $5, outcome FROM verdict) \
    SELECT outcome FROM verdict";

#[async_trait]
impl RawStore for PgRawStore {
    async fn read_fence(&self, resource: &str) -> Result<i64, StoreError> {
        let name = ResourceName::new(resource)?;
        Ok(self.store.read(&name).await?.map_or(0, |(_, fence)| fence))
    }

    async fn write_unchecked(
        &self,
        resource: &str,
        fence: i64,
        owner: &str,
        job_id: Option<&str>,
        value: &str,
    ) -> Result<WriteOutcome, StoreError> {
        let query = sqlx::query_as::<_, (String,)>(WRITE_UNCHECKED_SQL)
            .bind(value)
            .bind(fence)
            .bind(resource)
            .bind(owner)
            .bind(job_id)
            .fetch_one(self.store.pool());
        let (outcome,) = tokio::time::timeout(self.op_timeout, query)
            .await
            .map_err(|_| StoreError::Timeout(self.op_timeout))??;
        Ok(match FenceOutcome::from_log_spelling(&outcome) {
            Some(FenceOutcome::Accepted) => WriteOutcome::Accepted,
            _ => WriteOutcome::NotFound,
        })
    }
}
