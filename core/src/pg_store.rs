//! The fenced store on PostgreSQL (sqlx), with its migrations embedded.
//!
//! Postgres enforces the fence inside the statement or transaction that
//! writes, never in application code between a read and a write: a check done
//! in the application and then written in a second statement leaves a gap a
//! newer owner can slip through.

use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::postgres::{PgConnection, PgPool, PgPoolOptions};
use sqlx::{Postgres, Transaction};

use crate::error::StoreError;
use crate::fence::Fence;
use crate::owner::OwnerToken;
use crate::resource::ResourceName;
use crate::store::{
    FenceLogEntry, FenceOutcome, FencedStore, FencedWrite, JobId, JobOutcome, JobWrite,
    WriteOutcome,
};

/// Default timeout of one store operation. Generous next to Postgres's
/// millisecond statements, but bounded so a hung server cannot hang a worker.
pub const STORE_OP_TIMEOUT_MS_DEFAULT: u64 = 5_000;

/// Pool size used by [`PgFencedStore::connect`]. Bounded so that a burst of
/// workers queues for a connection instead of exhausting the server's slots.
pub const STORE_POOL_CONNECTIONS_MAX: u32 = 16;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

// The store's statements, named so that [`PgFencedStore::prepare`] can
// prepare every one of them on a fresh connection.

/// A refused write's log row (and any logged decision but `accepted`).
const LOG_SQL: &str = "INSERT INTO fence_log (resource_id, fence, owner_token, job_id, outcome) \
                       VALUES ($1, $2, $3, $4, $5)";
const LOG_ACCEPTED_SQL: &str =
    "INSERT INTO fence_log (resource_id, fence, owner_token, job_id, outcome) \
     VALUES ($1, $2, $3, $4, 'accepted')";
const ROLLBACK_MUTATIONS_SQL: &str = "ROLLBACK TO SAVEPOINT before_mutations";
const SAVEPOINT_SQL: &str = "SAVEPOINT before_mutations";
const RAISE_GUARD_SQL: &str = "UPDATE resource_guards SET last_fence = $2 WHERE resource_id = $1";
const RAISE_RESOURCE_SQL: &str = "UPDATE shared_resources SET last_fence = $2 WHERE id = $1";
const GUARD_SQL: &str = "SELECT GREATEST(g.last_fence, s.last_fence) \
                         FROM resource_guards g JOIN shared_resources s ON s.id = g.resource_id \
                         WHERE g.resource_id = $1 FOR UPDATE OF g, s";
const NEXT_FENCE_SQL: &str = "INSERT INTO fence_counters (resource_id, value) VALUES ($1, 1) \
                              ON CONFLICT (resource_id) DO UPDATE SET value = fence_counters.value + 1 \
                              RETURNING value";
const ENSURE_RESOURCE_SQL: &str =
    "INSERT INTO shared_resources (id) VALUES ($1) ON CONFLICT DO NOTHING";
const ENSURE_GUARD_SQL: &str =
    "INSERT INTO resource_guards (resource_id) VALUES ($1) ON CONFLICT DO NOTHING";
const WRITE_FENCED_SQL: &str =
    "WITH prev AS (SELECT last_fence FROM shared_resources WHERE id = $3), \
     upd AS (UPDATE shared_resources SET value = $1, last_fence = $2 \
             WHERE id = $3 AND last_fence < $2 RETURNING 1), \
     verdict AS (SELECT CASE WHEN EXISTS (SELECT 1 FROM upd) THEN 'accepted' \
                             WHEN EXISTS (SELECT 1 FROM prev) THEN 'stale' \
                             ELSE 'not_found' END AS outcome), \
     logged AS (INSERT INTO fence_log (resource_id, fence, owner_token, outcome) \
                SELECT $3, $2, $4, outcome FROM verdict) \
     SELECT outcome, (SELECT last_fence FROM prev) FROM verdict";
const RECORD_JOB_SQL: &str =
    "INSERT INTO job_completions (job_id, resource_id, fence, owner_token) \
                              VALUES ($1, $2, $3, $4) ON CONFLICT (job_id) DO NOTHING";
const JOB_VALUE_SQL: &str = "UPDATE shared_resources SET value = $1, last_fence = $2 WHERE id = $3";
const IS_COMPLETED_SQL: &str = "SELECT 1 FROM job_completions WHERE job_id = $1";
const READ_SQL: &str = "SELECT value, last_fence FROM shared_resources WHERE id = $1";
const FENCE_LOG_SQL: &str = "SELECT seq, resource_id, fence, owner_token, job_id, outcome, \
                                    floor(extract(epoch FROM at) * 1000)::BIGINT, \
                                    floor(extract(epoch FROM at) * 1000000)::BIGINT \
                             FROM fence_log WHERE resource_id = $1 ORDER BY seq";

/// Every statement the store runs, for [`PgFencedStore::prepare`].
const STATEMENTS: [&str; 16] = [
    LOG_SQL,
    LOG_ACCEPTED_SQL,
    ROLLBACK_MUTATIONS_SQL,
    SAVEPOINT_SQL,
    RAISE_GUARD_SQL,
    RAISE_RESOURCE_SQL,
    GUARD_SQL,
    NEXT_FENCE_SQL,
    ENSURE_RESOURCE_SQL,
    ENSURE_GUARD_SQL,
    WRITE_FENCED_SQL,
    RECORD_JOB_SQL,
    JOB_VALUE_SQL,
    IS_COMPLETED_SQL,
    READ_SQL,
    FENCE_LOG_SQL,
];

/// The Postgres fenced store. Cheap to clone (the pool is shared).
#[derive(Clone, Debug)]
pub struct PgFencedStore {
    pool: PgPool,
    op_timeout: Duration,
}

/// The guard row's verdict on a fence, from [`PgFencedStore::begin_guarded`].
#[derive(Debug)]
pub enum GuardCheck {
    /// The fence is newer: run mutations on [`GuardedTx::conn`], then commit.
    Open(GuardedTx),
    /// Refused; already rolled back and logged.
    Stale {
        /// The guard's current fence.
        last_fence: i64,
    },
    /// No guard row for the resource; rolled back and logged.
    NotFound,
}

/// An open transaction holding the resource's guard row `FOR UPDATE`.
///
/// Dropping it without [`GuardedTx::commit`] rolls everything back, the guard's
/// `last_fence` included, so a failing mutation leaves no trace.
#[derive(Debug)]
pub struct GuardedTx {
    tx: Transaction<'static, Postgres>,
    resource: String,
    fence: i64,
    owner: String,
    job_id: Option<String>,
    op_timeout: Duration,
}

impl GuardedTx {
    /// Logs a refusal decided inside the transaction and commits nothing
    /// else: the guard keeps its fence.
    async fn refuse(mut self, outcome: FenceOutcome) -> Result<(), StoreError> {
        let op_timeout = self.op_timeout;
        bounded(op_timeout, async {
            sqlx::query(ROLLBACK_MUTATIONS_SQL)
                .execute(&mut *self.tx)
                .await?;
            sqlx::query(LOG_SQL)
                .bind(&self.resource)
                .bind(self.fence)
                .bind(&self.owner)
                .bind(&self.job_id)
                .bind(outcome.log_spelling())
                .execute(&mut *self.tx)
                .await?;
            self.tx.commit().await?;
            Ok(())
        })
        .await
    }

    /// The transaction's connection, for the caller's mutations.
    pub fn conn(&mut self) -> &mut PgConnection {
        &mut self.tx
    }

    /// Raises the guard's `last_fence`, logs the accepted write and commits,
    /// all in the transaction that ran the mutations.
    pub async fn commit(mut self) -> Result<(), StoreError> {
        let op_timeout = self.op_timeout;
        bounded(op_timeout, async {
            sqlx::query(RAISE_GUARD_SQL)
                .bind(&self.resource)
                .bind(self.fence)
                .execute(&mut *self.tx)
                .await?;
            sqlx::query(RAISE_RESOURCE_SQL)
                .bind(&self.resource)
                .bind(self.fence)
                .execute(&mut *self.tx)
                .await?;
            sqlx::query(LOG_ACCEPTED_SQL)
                .bind(&self.resource)
                .bind(self.fence)
                .bind(&self.owner)
                .bind(&self.job_id)
                .execute(&mut *self.tx)
                .await?;
            self.tx.commit().await?;
            Ok(())
        })
        .await
    }
}

impl PgFencedStore {
    /// Connects with a bounded pool and applies the migrations.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let pool = PgPoolOptions::new()
            .max_connections(STORE_POOL_CONNECTIONS_MAX)
            .acquire_timeout(Duration::from_millis(STORE_OP_TIMEOUT_MS_DEFAULT))
            .connect(url)
            .await?;
        let store = Self::from_pool(pool);
        store.migrate().await?;
        Ok(store)
    }

    /// Wraps an existing pool; call [`PgFencedStore::migrate`] once.
    pub fn from_pool(pool: PgPool) -> Self {
        Self {
            pool,
            op_timeout: Duration::from_millis(STORE_OP_TIMEOUT_MS_DEFAULT),
        }
    }

    /// Sets the per-operation timeout.
    pub fn with_op_timeout(mut self, op_timeout: Duration) -> Self {
        self.op_timeout = op_timeout;
        self
    }

    /// Applies the embedded migrations (idempotent; safe to run concurrently).
    pub async fn migrate(&self) -> Result<(), StoreError> {
        MIGRATOR.run(&self.pool).await?;
        Ok(())
    }

    /// Prepares every statement the store runs on `conn`, so that each
    /// later runs in one round trip on that connection (sqlx otherwise
    /// prepares a statement the first time a connection sees it: one more
    /// round trip). Meant for a pool's `after_connect`. Needs the
    /// migrations applied (a statement naming a missing table fails).
    pub async fn prepare(conn: &mut PgConnection) -> Result<(), StoreError> {
        for sql in STATEMENTS {
            sqlx::Executor::prepare(&mut *conn, sql).await?;
        }
        Ok(())
    }

    /// The pool, for callers' own queries.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Opens the guard transaction: `SELECT last_fence ... FOR UPDATE` and
    /// refuse unless `fence` is greater. Rejections are logged.
    pub async fn begin_guarded(
        &self,
        resource: &ResourceName,
        fence: Fence,
        owner: &OwnerToken,
    ) -> Result<GuardCheck, StoreError> {
        self.begin_guarded_for(resource, fence, owner, None).await
    }

    async fn begin_guarded_for(
        &self,
        resource: &ResourceName,
        fence: Fence,
        owner: &OwnerToken,
        job_id: Option<&JobId>,
    ) -> Result<GuardCheck, StoreError> {
        let mut tx = bounded(self.op_timeout, async { Ok(self.pool.begin().await?) }).await?;
        // One fence per resource: the guard row and the single-statement
        // path's `shared_resources.last_fence` are read together and both
        // rows locked, so a write through one path can never land below a
        // fence accepted through the other.
        let row: Option<(i64,)> = bounded(self.op_timeout, async {
            Ok(sqlx::query_as(GUARD_SQL)
                .bind(resource.as_str())
                .fetch_optional(&mut *tx)
                .await?)
        })
        .await?;
        let refused = match row {
            None => Some((FenceOutcome::NotFound, GuardCheck::NotFound)),
            Some((last_fence,)) if fence.get() <= last_fence => {
                Some((FenceOutcome::Stale, GuardCheck::Stale { last_fence }))
            }
            Some(_) => None,
        };
        if let Some((outcome, check)) = refused {
            // Logged in the transaction that holds the guard, so the log's
            // order is the decision order; nothing else was changed.
            log_in(
                &mut tx,
                self.op_timeout,
                resource,
                fence,
                owner,
                job_id,
                outcome,
            )
            .await?;
            bounded(self.op_timeout, async { Ok(tx.commit().await?) }).await?;
            return Ok(check);
        }
        bounded(self.op_timeout, async {
            sqlx::query(SAVEPOINT_SQL).execute(&mut *tx).await?;
            Ok(())
        })
        .await?;
        Ok(GuardCheck::Open(GuardedTx {
            tx,
            resource: resource.as_str().to_owned(),
            fence: fence.get(),
            owner: owner.as_str().to_owned(),
            job_id: job_id.map(|j| j.as_str().to_owned()),
            op_timeout: self.op_timeout,
        }))
    }

    /// The durable fence counter: one row per resource, incremented atomically.
    pub async fn next_fence(&self, resource: &ResourceName) -> Result<Fence, StoreError> {
        let (value,): (i64,) = bounded(self.op_timeout, async {
            Ok(sqlx::query_as(NEXT_FENCE_SQL)
                .bind(resource.as_str())
                .fetch_one(&self.pool)
                .await?)
        })
        .await?;
        Ok(Fence::new(value)?)
    }
}

#[async_trait]
impl FencedStore for PgFencedStore {
    async fn ensure_resource(&self, resource: &ResourceName) -> Result<(), StoreError> {
        bounded(self.op_timeout, async {
            let mut tx = self.pool.begin().await?;
            sqlx::query(ENSURE_RESOURCE_SQL)
                .bind(resource.as_str())
                .execute(&mut *tx)
                .await?;
            sqlx::query(ENSURE_GUARD_SQL)
                .bind(resource.as_str())
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    async fn write_fenced(&self, write: &FencedWrite) -> Result<WriteOutcome, StoreError> {
        // One statement: the fence check, the write and its log row commit or
        // fail together, and no other writer can interleave.
        let (outcome, prev): (String, Option<i64>) = bounded(self.op_timeout, async {
            Ok(sqlx::query_as(WRITE_FENCED_SQL)
                .bind(&write.value)
                .bind(write.fence.get())
                .bind(write.resource.as_str())
                .bind(write.owner.as_str())
                .fetch_one(&self.pool)
                .await?)
        })
        .await?;
        Ok(match FenceOutcome::from_log_spelling(&outcome) {
            Some(FenceOutcome::Accepted) => WriteOutcome::Accepted,
            Some(FenceOutcome::Stale) => WriteOutcome::Stale {
                // A concurrent writer may have raised it further since the
                // statement's snapshot; it is at least this.
                last_fence: prev.unwrap_or(0).max(write.fence.get()),
            },
            _ => WriteOutcome::NotFound,
        })
    }

    async fn apply_job(&self, job: &JobWrite) -> Result<JobOutcome, StoreError> {
        let w = &job.write;
        let mut guard = match self
            .begin_guarded_for(&w.resource, w.fence, &w.owner, Some(&job.job_id))
            .await?
        {
            GuardCheck::Open(guard) => guard,
            GuardCheck::Stale { last_fence } => return Ok(JobOutcome::Stale { last_fence }),
            GuardCheck::NotFound => return Ok(JobOutcome::NotFound),
        };
        let recorded = bounded(self.op_timeout, async {
            Ok(sqlx::query(RECORD_JOB_SQL)
                .bind(job.job_id.as_str())
                .bind(w.resource.as_str())
                .bind(w.fence.get())
                .bind(w.owner.as_str())
                .execute(guard.conn())
                .await?
                .rows_affected())
        })
        .await?;
        if recorded == 0 {
            guard.refuse(FenceOutcome::Duplicate).await?;
            return Ok(JobOutcome::AlreadyDone);
        }
        bounded(self.op_timeout, async {
            sqlx::query(JOB_VALUE_SQL)
                .bind(&w.value)
                .bind(w.fence.get())
                .bind(w.resource.as_str())
                .execute(guard.conn())
                .await?;
            Ok(())
        })
        .await?;
        guard.commit().await?;
        Ok(JobOutcome::Applied)
    }

    async fn is_completed(&self, job_id: &JobId) -> Result<bool, StoreError> {
        bounded(self.op_timeout, async {
            let row: Option<(i32,)> = sqlx::query_as(IS_COMPLETED_SQL)
                .bind(job_id.as_str())
                .fetch_optional(&self.pool)
                .await?;
            Ok(row.is_some())
        })
        .await
    }

    async fn read(&self, resource: &ResourceName) -> Result<Option<(String, i64)>, StoreError> {
        bounded(self.op_timeout, async {
            Ok(sqlx::query_as(READ_SQL)
                .bind(resource.as_str())
                .fetch_optional(&self.pool)
                .await?)
        })
        .await
    }

    async fn fence_log(&self, resource: &ResourceName) -> Result<Vec<FenceLogEntry>, StoreError> {
        type Row = (i64, String, i64, String, Option<String>, String, i64, i64);
        let rows: Vec<Row> = bounded(self.op_timeout, async {
            Ok(sqlx::query_as(FENCE_LOG_SQL)
                .bind(resource.as_str())
                .fetch_all(&self.pool)
                .await?)
        })
        .await?;
        rows.into_iter()
            .map(
                |(seq, resource, fence, owner, job_id, outcome, at_ms, at_us)| {
                    let outcome = FenceOutcome::from_log_spelling(&outcome).ok_or_else(|| {
                        StoreError::Protocol(format!("unknown outcome {outcome:?}"))
                    })?;
                    Ok(FenceLogEntry {
                        seq,
                        resource,
                        fence,
                        owner,
                        job_id,
                        outcome,
                        at_ms,
                        at_us: Some(at_us),
                    })
                },
            )
            .collect()
    }
}

async fn log_in(
    tx: &mut Transaction<'static, Postgres>,
    op_timeout: Duration,
    resource: &ResourceName,
    fence: Fence,
    owner: &OwnerToken,
    job_id: Option<&JobId>,
    outcome: FenceOutcome,
) -> Result<(), StoreError> {
    bounded(op_timeout, async {
        sqlx::query(LOG_SQL)
            .bind(resource.as_str())
            .bind(fence.get())
            .bind(owner.as_str())
            .bind(job_id.map(JobId::as_str))
            .bind(outcome.log_spelling())
            .execute(&mut **tx)
            .await?;
        Ok(())
    })
    .await
}

async fn bounded<T>(
    op_timeout: Duration,
    op: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    tokio::time::timeout(op_timeout, op)
        .await
        .map_err(|_| StoreError::Timeout(op_timeout))?
}
