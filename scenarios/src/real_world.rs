//! `RealWorld`: real Redis and PostgreSQL behind per-worker proxies
//! (`redfence-chaos`'s [`RealCluster`]) as a [`World`].
//!
//! The same scenarios that run in the simulation run here against real
//! servers, with faults injected by Toxiproxy-compatible proxies and by
//! stopping, restarting and failing over real Redis processes. What differs
//! from the simulation, and why:
//!
//! - **Time is wall time.** [`World::run_for`] really waits; the clock is
//!   milliseconds since the world started ([`Instant`]). Nothing is
//!   deterministic: owner tokens and jitter come from the OS RNG, and a seed
//!   names a run but does not replay it.
//! - **Workers run on the world's own thread.** A current-thread tokio
//!   runtime and a [`LocalSet`] owned by the world run the `!Send` worker
//!   futures; they make progress only while the world is driven (`run_for`,
//!   a fault, a peek), which is always the case while a script runs. A
//!   pause freezes the worker's future ([`FreezeSwitch`], as the simulation
//!   does), a crash drops it where it stands.
//! - **Connections reconnect.** Every toxic change, `restore_replies` and a
//!   failover close a proxy's live connections (see the chaos README
//!   section), and a plain multiplexed connection would stay broken for the
//!   rest of the run. A worker's Redis path reconnects on the request after
//!   its connection broke ([`Reconnecting`]); its store path is a small sqlx
//!   pool, which does the same.
//! - **Ground truth is partial.** Redis keeps no ownership log, so
//!   [`Truth::redis`] is `None` and the properties that need it come out
//!   undecided; PostgreSQL's append-only `fence_log` is the store truth.
//!
//! A world whose script asks for no replica still runs one (the providers
//! always start it); it refuses the replication faults, as the simulation
//! does without a replica.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use redfence_chaos::{ChaosConfig, ChaosError, Path, RealCluster, RedisNode};
use redfence_core::{
    FenceSource, FencedStore, FreezeSwitch, LogOutcome, PgFencedStore, PostgresFences,
    RandomUuidTokens, ResourceName, StoreError, ThreadRngJitter, WriteOutcome,
};
use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::{
    AsyncConnectionConfig, Cmd, IntoConnectionInfo, Pipeline, RedisFuture, RedisResult, Value,
};
use sqlx::postgres::PgPoolOptions;
use tokio::runtime::Runtime;
use tokio::task::{JoinHandle, LocalSet};

use crate::conn::RedisConn;
use crate::history::{FenceOutcome, FenceRecord};
use crate::run::{WorldFactory, WorldSpec};
use crate::world::{
    worker_name, Clock, Fault, RawStore, Trigger, Truth, WorkerEnv, WorkerJob, World, WorldError,
    WorldKind,
};

/// Store connections per worker: a worker runs one store operation at a
/// time, and one spare lets a fresh connection replace one a proxy closed
/// without waiting for the pool to notice.
const WORKER_STORE_CONNECTIONS_MAX: u32 = 2;
/// How long a worker's (re)connect to its proxy may take before the
/// attempt counts as failed. Loopback connects take well under a millisecond;
/// only a dropped-replies path makes one hang.
const CONNECT_TIMEOUT_MS: u64 = 1_000;
/// How long a refused connect to a worker's proxy is retried. Installing
/// or removing a fault restarts the proxy (embedded Toxiproxy), and
/// `restore_replies` takes it down and up again: for tens of milliseconds
/// it refuses connections although no partition was asked for. A refusal
/// that outlasts this is a real one (a partition) and fails the request.
const CONNECT_REFUSED_RETRY_MS: u64 = 100;
/// Pause between connect attempts while refused.
const CONNECT_RETRY_PAUSE_MS: u64 = 10;
/// Timeout of one peek: scripts peek every few milliseconds, and a Redis
/// that does not answer within this counts as down.
const PEEK_TIMEOUT_MS: u64 = 500;
/// Timeout of the world's own out-of-band calls (truth, setup).
const ADMIN_TIMEOUT_MS: u64 = 5_000;

/// Builds real-server worlds from a [`ChaosConfig`].
#[derive(Clone, Debug)]
pub struct RealWorlds {
    config: ChaosConfig,
}

impl RealWorlds {
    /// Worlds built as `config` says.
    pub fn new(config: ChaosConfig) -> Self {
        Self { config }
    }

    /// Worlds configured by the `REDFENCE_*` variables (README, "Real-server
    /// world"): containers when Docker answers, else local processes.
    pub fn from_env() -> Result<Self, WorldError> {
        Ok(Self::new(ChaosConfig::from_env().map_err(unavailable)?))
    }

    /// Worlds on local `redis-server` and `postgres` processes (what
    /// `scripts/with-services` installs), other variables from the
    /// environment.
    pub fn local_from_env() -> Result<Self, WorldError> {
        Ok(Self::new(
            ChaosConfig::local_from_env().map_err(unavailable)?,
        ))
    }

    /// The configuration worlds are built from.
    pub fn config(&self) -> &ChaosConfig {
        &self.config
    }
}

impl WorldFactory for RealWorlds {
    fn kind(&self) -> WorldKind {
        WorldKind::Real
    }

    fn build(&self, spec: &WorldSpec) -> Result<Box<dyn World>, WorldError> {
        Ok(Box::new(RealWorld::start(&self.config, spec)?))
    }
}

/// A chaos error while the servers are being provisioned.
fn unavailable(error: ChaosError) -> WorldError {
    WorldError::Failed(format!(
        "no Redis/Postgres available: {error}. Run under scripts/with-services (local \
         processes), start a Docker engine (containers), or set REDFENCE_PROVIDER=external \
         with REDFENCE_CHAOS_REDIS_PRIMARY_URL and REDFENCE_CHAOS_DATABASE_URL (README, \
         \"Real-server world\")"
    ))
}

/// A chaos error while the world runs.
fn chaos_error(error: ChaosError) -> WorldError {
    match error {
        ChaosError::NoSuchWorker { worker, workers } => WorldError::NoSuchWorker {
            index: worker,
            workers,
        },
        ChaosError::Unsupported {
            operation,
            provider,
            why,
        } => WorldError::Unsupported {
            what: operation.to_owned(),
            why: format!("{why} (provider {provider})"),
        },
        other => WorldError::Failed(other.to_string()),
    }
}

/// One worker's connections, made when the world starts so spawning a
/// worker takes no time and a setup failure is reported before the script.
struct WorkerConns {
    redis: Reconnecting,
    store: PgFencedStore,
    store_faulted: FaultClock,
}

/// When a fault last touched one worker's store path, shared with its
/// pool's `before_acquire`.
#[derive(Clone, Default)]
struct FaultClock(Arc<std::sync::Mutex<Option<Instant>>>);

impl FaultClock {
    fn mark(&self) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
    }

    /// Whether a connection `age` old was opened before the last fault.
    fn opened_before_last_fault(&self, age: Duration) -> bool {
        let last = *self.0.lock().unwrap_or_else(|e| e.into_inner());
        last.is_some_and(|at| {
            Instant::now()
                .checked_sub(age)
                .is_none_or(|opened| opened <= at)
        })
    }
}

/// One worker's state in the world.
struct Slot {
    pause: FreezeSwitch,
    /// The last fault on the worker's store path.
    store_faulted: FaultClock,
    /// Taken when the worker is spawned: from then on its job owns them, so
    /// a crash (dropping the job) closes them as a dying process would.
    conns: Option<WorkerConns>,
    /// The worker's Redis connection, without keeping it alive (a crashed
    /// worker's connection must close), so a fault that closed it can have
    /// it replaced at once.
    redis_link: std::sync::Weak<ReconnectingInner>,
    task: Option<JoinHandle<()>>,
    /// Shared with armed crash triggers, which fire inside the worker.
    crashed: Arc<AtomicBool>,
    /// The running job's abort handle, for triggers armed before it ran.
    abort: Arc<std::sync::Mutex<Option<tokio::task::AbortHandle>>>,
    finished: Arc<AtomicBool>,
}

/// Real Redis and PostgreSQL behind the [`World`] contract. See the module
/// doc.
pub struct RealWorld {
    /// Runs the workers; `None` only while dropping.
    local: Option<LocalSet>,
    /// `None` only while dropping.
    cluster: Option<RealCluster>,
    slots: Vec<Slot>,
    replica: bool,
    /// Timeout of one store operation on a worker's path.
    op_timeout: Duration,
    /// Direct to PostgreSQL (no proxy): the store's ground truth.
    admin_store: PgFencedStore,
    /// Direct to the current Redis primary, for peeks; reopened after an
    /// error or a failover.
    peek_conn: Option<(RedisNode, MultiplexedConnection)>,
    started: Instant,
    /// Wall time at `started`, to put the fence log's timestamps on the
    /// world's clock.
    started_wall_ms: i64,
    /// Last: everything above may need the runtime to drop.
    rt: Runtime,
}

impl RealWorld {
    /// Starts servers and proxies as `config` says, laid out as `spec` asks,
    /// and connects every worker's paths.
    pub fn start(config: &ChaosConfig, spec: &WorldSpec) -> Result<Self, WorldError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| WorldError::Failed(format!("tokio runtime: {e}")))?;
        let local = LocalSet::new();
        let cluster = local
            .block_on(&rt, RealCluster::start_with(config, spec.workers))
            .map_err(unavailable)?;
        let op_timeout = Duration::from_millis(spec.op_timeout_ms);
        let connected = local.block_on(&rt, async {
            let admin = PgPoolOptions::new()
                .max_connections(1)
                .acquire_timeout(Duration::from_millis(ADMIN_TIMEOUT_MS))
                .connect(cluster.postgres_url())
                .await
                .map_err(|e| WorldError::Failed(format!("postgres (direct): {e}")))?;
            let mut conns = Vec::with_capacity(spec.workers);
            for index in 0..spec.workers {
                conns.push(connect_worker(&cluster, index, op_timeout).await?);
            }
            Ok::<_, WorldError>((PgFencedStore::from_pool(admin), conns))
        });
        let (admin_store, conns) = match connected {
            Ok(connected) => connected,
            Err(error) => {
                local.block_on(&rt, cluster.shutdown());
                return Err(error);
            }
        };
        let slots = conns
            .into_iter()
            .map(|conns| Slot {
                redis_link: Arc::downgrade(&conns.redis.0),
                store_faulted: conns.store_faulted.clone(),
                pause: FreezeSwitch::new(),
                conns: Some(conns),
                task: None,
                crashed: Arc::new(AtomicBool::new(false)),
                abort: Arc::default(),
                finished: Arc::new(AtomicBool::new(false)),
            })
            .collect();
        let started_wall_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        Ok(Self {
            local: Some(local),
            cluster: Some(cluster),
            slots,
            replica: spec.replica,
            op_timeout,
            admin_store: admin_store.with_op_timeout(Duration::from_millis(ADMIN_TIMEOUT_MS)),
            peek_conn: None,
            started: Instant::now(),
            started_wall_ms,
            rt,
        })
    }

    /// The cluster (its URLs, for tests and reports).
    pub fn cluster(&self) -> &RealCluster {
        self.cluster.as_ref().expect("present until dropped")
    }

    /// Runs `future` to completion on the world's thread; the workers run
    /// meanwhile, as real processes would.
    fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.local
            .as_ref()
            .expect("present until dropped")
            .block_on(&self.rt, future)
    }

    fn slot(&self, index: usize) -> Result<&Slot, WorldError> {
        self.slots.get(index).ok_or(WorldError::NoSuchWorker {
            index,
            workers: self.slots.len(),
        })
    }

    fn slot_mut(&mut self, index: usize) -> Result<&mut Slot, WorldError> {
        let workers = self.slots.len();
        self.slots
            .get_mut(index)
            .ok_or(WorldError::NoSuchWorker { index, workers })
    }

    fn needs_replica(&self, fault: &Fault) -> Result<(), WorldError> {
        if self.replica {
            return Ok(());
        }
        Err(WorldError::Unsupported {
            what: fault.describe(),
            why: "the scenario's world has no replica".to_owned(),
        })
    }

    /// The fault just injected closed the Redis connections of `workers`
    /// (the embedded Toxiproxy restarts a proxy on every change; a stopped,
    /// restarted or failed-over Redis drops them): their next request
    /// connects anew instead of failing on a dead socket, as it would not
    /// with a real Toxiproxy, where only the fault itself acts.
    fn redis_connections_closed(&self, workers: impl IntoIterator<Item = usize>) {
        for worker in workers {
            if let Some(inner) = self.slots.get(worker).and_then(|s| s.redis_link.upgrade()) {
                Reconnecting::forget(&inner);
            }
        }
    }

    /// Runs one cluster operation to completion.
    fn cluster_op<'a, F, Fut>(&'a self, op: F) -> Result<(), WorldError>
    where
        F: FnOnce(&'a RealCluster) -> Fut,
        Fut: Future<Output = redfence_chaos::Result<()>> + 'a,
    {
        self.block_on(op(self.cluster())).map_err(chaos_error)
    }
}

/// Connects worker `index`'s Redis and store paths, through its proxies.
async fn connect_worker(
    cluster: &RealCluster,
    index: usize,
    op_timeout: Duration,
) -> Result<WorkerConns, WorldError> {
    let failed = |what: &str, e: &dyn std::fmt::Display| {
        WorldError::Failed(format!("{}: {what}: {e}", worker_name(index)))
    };
    let url = cluster.worker_redis_url(index).map_err(chaos_error)?;
    let info = url
        .as_str()
        .into_connection_info()
        .map_err(|e| failed("redis url", &e))?;
    // No `CLIENT SETINFO` on connect: a connect that waits for an answer
    // cannot open a connection on a path whose replies are dropped, and
    // the lost reply must hit the lock's own commands.
    let settings = info.redis_settings().clone().set_skip_set_lib_name();
    let client = redis::Client::open(info.set_redis_settings(settings))
        .map_err(|e| failed("redis client", &e))?;
    let redis = Reconnecting::new(client);
    // Connected now, so a path that does not work is a setup error.
    redis
        .connection()
        .await
        .map_err(|e| failed("redis through its proxy", &e))?;
    let pg_url = cluster.worker_postgres_url(index).map_err(chaos_error)?;
    // A warm pool: every statement prepared when a connection opens and no
    // ping before lending one, so a one-statement write or read is one round
    // trip, all of it on the wire in the poll that starts it — as in the
    // simulated store. With sqlx's defaults (a ping, then a prepare on first
    // use) it took up to three, and a worker paused or crashed after the
    // first did something else than in the simulation: a protocol checking
    // the fence in the application looked safe (`stale-worker-pause` ×
    // `app-side-fence-check`) and a crash never let the write commit
    // (`crash-mid-mutation` × `no-fence-check`). The ping's other job, not
    // lending a connection a fault closed, is done by `store_faulted`.
    let store_faulted = FaultClock::default();
    let faulted = store_faulted.clone();
    let pool = PgPoolOptions::new()
        .max_connections(WORKER_STORE_CONNECTIONS_MAX)
        .acquire_timeout(Duration::from_millis(CONNECT_TIMEOUT_MS))
        .test_before_acquire(false)
        .after_connect(|conn, _| {
            Box::pin(async move {
                PgFencedStore::prepare(conn)
                    .await
                    .map_err(|e| sqlx::Error::Protocol(e.to_string()))?;
                sqlx::Executor::prepare(&mut *conn, WRITE_UNCHECKED_SQL).await?;
                Ok(())
            })
        })
        .before_acquire(move |_, meta| {
            // Opened before the last fault on this path: the proxy closed
            // it (the embedded Toxiproxy restarts on every change), so
            // open a fresh one rather than fail the next statement.
            let stale = faulted.opened_before_last_fault(meta.age);
            Box::pin(async move { Ok(!stale) })
        })
        .connect(&pg_url)
        .await
        .map_err(|e| failed("postgres through its proxy", &e))?;
    Ok(WorkerConns {
        redis,
        store: PgFencedStore::from_pool(pool).with_op_timeout(op_timeout),
        store_faulted,
    })
}

/// A worker's Redis connection: one multiplexed connection, replaced by a
/// fresh one on the request after it broke.
///
/// Why not redis-rs's `ConnectionManager`: it reconnects in the background
/// with retries, and requests made meanwhile fail with errors the lock can
/// only read as indeterminate (seen: "broken pipe" for the whole of a Redis
/// outage). Here the request after a break connects anew, so a partitioned
/// worker (its proxy down) gets a refused connection: the definite failure
/// the lock classifies as such (the command did not run). A stopped Redis
/// still looks indeterminate: its proxy accepts the connection, then closes
/// it when the upstream refuses.
#[derive(Clone)]
struct Reconnecting(Arc<ReconnectingInner>);

struct ReconnectingInner {
    client: redis::Client,
    config: AsyncConnectionConfig,
    /// The live connection and its generation (so a failure on an old one
    /// never discards its replacement).
    current: tokio::sync::Mutex<(u64, Option<MultiplexedConnection>)>,
}

impl Reconnecting {
    fn new(client: redis::Client) -> Self {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(Duration::from_millis(CONNECT_TIMEOUT_MS)))
            // The lock bounds every call by its own `op_timeout`; a reply
            // that comes late must not break the connection.
            .set_response_timeout(None);
        Self(Arc::new(ReconnectingInner {
            client,
            config,
            current: tokio::sync::Mutex::new((0, None)),
        }))
    }

    /// The live connection, connecting if there is none.
    async fn connection(&self) -> RedisResult<(u64, MultiplexedConnection)> {
        let mut current = self.0.current.lock().await;
        if let (generation, Some(conn)) = &*current {
            return Ok((*generation, conn.clone()));
        }
        let retry_until =
            tokio::time::Instant::now() + Duration::from_millis(CONNECT_REFUSED_RETRY_MS);
        let attempts_max = CONNECT_REFUSED_RETRY_MS / CONNECT_RETRY_PAUSE_MS + 1;
        let mut attempt = 0;
        // Bounded by the attempts (and the deadline).
        let conn = loop {
            attempt += 1;
            let connected = self
                .0
                .client
                .get_multiplexed_async_connection_with_config(&self.0.config)
                .await;
            match connected {
                Err(error)
                    if error.is_connection_refusal()
                        && attempt < attempts_max
                        && tokio::time::Instant::now() < retry_until =>
                {
                    tokio::time::sleep(Duration::from_millis(CONNECT_RETRY_PAUSE_MS)).await;
                }
                other => break other?,
            }
        };
        current.0 += 1;
        current.1 = Some(conn.clone());
        Ok((current.0, conn))
    }

    /// Drops the live connection, so the next request connects anew. If
    /// the worker is connecting right now (it holds the lock), its new
    /// connection is fresh anyway.
    fn forget(inner: &ReconnectingInner) {
        if let Ok(mut current) = inner.current.try_lock() {
            current.1 = None;
        }
    }

    /// Drops connection `generation` if `result` shows it is broken.
    async fn check<T>(&self, generation: u64, result: &RedisResult<T>) {
        let Err(error) = result else { return };
        if !(error.is_io_error() || error.is_unrecoverable_error()) {
            return;
        }
        let mut current = self.0.current.lock().await;
        if current.0 == generation {
            current.1 = None;
        }
    }
}

impl ConnectionLike for Reconnecting {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let (generation, mut conn) = self.connection().await?;
            let result = conn.req_packed_command(cmd).await;
            self.check(generation, &result).await;
            result
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let (generation, mut conn) = self.connection().await?;
            let result = conn.req_packed_commands(pipeline, offset, count).await;
            self.check(generation, &result).await;
            result
        })
    }

    fn get_db(&self) -> i64 {
        0
    }
}

/// The store path without the fence check (mutants only), in SQL on the
/// core's schema (core/migrations/0001_fenced_store.sql).
struct PgRawStore {
    store: PgFencedStore,
    op_timeout: Duration,
}

/// The unchecked write as one statement, so it commits or fails whole, as
/// `write_fenced` does: value and both fence columns set to the write's
/// fence whatever they were, the job completed (a redelivered job is
/// completed again: no idempotency check either), and the write logged
/// `accepted` — or `not_found`, changing nothing, without the resource.
const WRITE_UNCHECKED_SQL: &str = "\
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
        Ok(match LogOutcome::parse(&outcome) {
            Some(LogOutcome::Accepted) => WriteOutcome::Accepted,
            _ => WriteOutcome::NotFound,
        })
    }
}

impl World for RealWorld {
    fn kind(&self) -> WorldKind {
        WorldKind::Real
    }

    fn workers(&self) -> usize {
        self.slots.len()
    }

    fn spawn_worker(&mut self, index: usize, job: WorkerJob) -> Result<(), WorldError> {
        let clock = self.clock();
        let op_timeout = self.op_timeout;
        let slot = self.slot_mut(index)?;
        if slot.task.is_some() {
            return Err(WorldError::Failed(format!(
                "{} was already spawned",
                worker_name(index)
            )));
        }
        if slot.crashed.load(Ordering::SeqCst) {
            // As in the simulation: a worker crashed before it started
            // never runs its job.
            return Ok(());
        }
        let conns = slot.conns.take().ok_or_else(|| {
            WorldError::Failed(format!("{} has no connections", worker_name(index)))
        })?;
        let store = conns.store;
        let raw_store = PgRawStore {
            store: store.clone(),
            op_timeout,
        };
        let env = WorkerEnv {
            index,
            name: worker_name(index),
            redis: RedisConn::new(conns.redis),
            store: Arc::new(store.clone()) as Arc<dyn FencedStore>,
            raw_store: Arc::new(raw_store),
            store_fences: Arc::new(PostgresFences::new(store)) as Arc<dyn FenceSource>,
            tokens: Arc::new(RandomUuidTokens),
            jitter: Arc::new(ThreadRngJitter),
            clock,
        };
        let paused = slot.pause.wrap(job(env));
        let finished = slot.finished.clone();
        let local = self.local.as_ref().expect("present until dropped");
        let task = local.spawn_local(async move {
            paused.await;
            finished.store(true, Ordering::SeqCst);
        });
        *self.slots[index]
            .abort
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(task.abort_handle());
        self.slots[index].task = Some(task);
        Ok(())
    }

    fn run_for(&mut self, ms: u64) -> Result<(), WorldError> {
        // Made inside the runtime: a timer needs its context.
        self.block_on(async move { tokio::time::sleep(Duration::from_millis(ms)).await });
        Ok(())
    }

    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    fn clock(&self) -> Clock {
        let started = self.started;
        Clock::new(move || started.elapsed().as_millis() as u64)
    }

    fn worker_done(&self, index: usize) -> Result<bool, WorldError> {
        let slot = self.slot(index)?;
        Ok(slot.crashed.load(Ordering::SeqCst) || slot.finished.load(Ordering::SeqCst))
    }

    fn inject(&mut self, fault: &Fault) -> Result<(), WorldError> {
        if let Some(worker) = fault.worker() {
            self.slot(worker)?;
        }
        let injected = self.inject_now(fault);
        if let Fault::PartitionStore(w)
        | Fault::HealStore(w)
        | Fault::DropStoreReplies(w)
        | Fault::RestoreStoreReplies(w) = *fault
        {
            // Also after a failed fault (it may have got halfway): the
            // proxy's restart closed whatever was open on the path.
            self.slots[w].store_faulted.mark();
        }
        let closed = match *fault {
            Fault::PartitionRedis(w)
            | Fault::HealRedis(w)
            | Fault::DropRedisReplies(w)
            | Fault::RestoreRedisReplies(w)
            | Fault::RedisLatency { worker: w, .. } => w..w + 1,
            Fault::StopRedis | Fault::RestartRedis | Fault::FailOver => 0..self.slots.len(),
            _ => 0..0,
        };
        // Also after a failed fault: it may have got halfway.
        self.redis_connections_closed(closed);
        injected
    }

    fn trigger(&mut self, fault: &Fault) -> Result<Trigger, WorldError> {
        match *fault {
            Fault::PauseWorker(w) => {
                let pause = self.slot(w)?.pause.clone();
                Ok(Trigger::new(move || pause.freeze()))
            }
            Fault::CrashWorker(w) => {
                let slot = self.slot(w)?;
                let (crashed, abort) = (slot.crashed.clone(), slot.abort.clone());
                Ok(Trigger::new(move || {
                    crashed.store(true, Ordering::SeqCst);
                    // Fired inside the job: it is dropped when its current
                    // poll yields, closing its connections as a dying
                    // process would.
                    if let Some(abort) = &*abort.lock().unwrap_or_else(|e| e.into_inner()) {
                        abort.abort();
                    }
                }))
            }
            ref other => Err(WorldError::Unsupported {
                what: other.describe(),
                why: "only a pause or a crash can be armed on a phase".to_owned(),
            }),
        }
    }

    fn peek(&mut self, key: &str) -> Result<Option<String>, WorldError> {
        self.peek_primary(key)
    }

    fn truth(&mut self, lock_key: &str, resource: &str) -> Result<Truth, WorldError> {
        self.store_truth(lock_key, resource)
    }
}

impl RealWorld {
    /// [`World::inject`] without the bookkeeping.
    fn inject_now(&mut self, fault: &Fault) -> Result<(), WorldError> {
        match *fault {
            Fault::PauseWorker(w) => {
                self.slots[w].pause.freeze();
                Ok(())
            }
            Fault::ResumeWorker(w) => {
                self.slots[w].pause.thaw();
                Ok(())
            }
            Fault::CrashWorker(w) => {
                let slot = &mut self.slots[w];
                slot.crashed.store(true, Ordering::SeqCst);
                // Never spawned: its connections die with it.
                slot.conns = None;
                if let Some(task) = &slot.task {
                    task.abort();
                }
                // Let the local set drop the aborted job now, so its
                // connections close at the crash rather than at the next
                // step.
                self.block_on(tokio::task::yield_now());
                Ok(())
            }
            Fault::PartitionRedis(w) => self.cluster_op(|c| c.partition(w, Path::Redis)),
            Fault::HealRedis(w) => self.cluster_op(|c| c.heal(w, Path::Redis)),
            Fault::PartitionStore(w) => self.cluster_op(|c| c.partition(w, Path::Postgres)),
            Fault::HealStore(w) => self.cluster_op(|c| c.heal(w, Path::Postgres)),
            Fault::DropRedisReplies(w) => self.cluster_op(|c| c.drop_replies(w, Path::Redis)),
            Fault::RestoreRedisReplies(w) => self.cluster_op(|c| c.restore_replies(w, Path::Redis)),
            Fault::DropStoreReplies(w) => self.cluster_op(|c| c.drop_replies(w, Path::Postgres)),
            Fault::RestoreStoreReplies(w) => {
                self.cluster_op(|c| c.restore_replies(w, Path::Postgres))
            }
            Fault::RedisLatency { worker, latency_ms } => {
                let latency_ms = u32::try_from(latency_ms).map_err(|_| {
                    WorldError::Failed(format!("latency {latency_ms} ms is too large"))
                })?;
                self.cluster_op(|c| c.set_latency(worker, Path::Redis, latency_ms))
            }
            Fault::StopRedis => self.cluster_op(|c| c.stop_redis()),
            Fault::RestartRedis => self.cluster_op(|c| c.restart_redis()),
            Fault::CutReplication => {
                self.needs_replica(fault)?;
                self.cluster_op(|c| c.cut_replication())
            }
            Fault::RestoreReplication => {
                self.needs_replica(fault)?;
                self.cluster_op(|c| c.restore_replication())
            }
            Fault::FailOver => {
                self.needs_replica(fault)?;
                self.cluster_op(|c| c.fail_over())
            }
        }
    }

    /// [`World::peek`].
    fn peek_primary(&mut self, key: &str) -> Result<Option<String>, WorldError> {
        let cached = self.peek_conn.take();
        let cluster = self.cluster();
        let peeked = self.block_on(async {
            tokio::time::timeout(Duration::from_millis(PEEK_TIMEOUT_MS), async {
                let node = cluster.current_primary().await;
                let mut conn = match cached {
                    Some((cached_node, conn)) if cached_node == node => conn,
                    _ => {
                        let url = cluster.redis_node_url(node).ok_or_else(|| {
                            redis::RedisError::from((
                                redis::ErrorKind::Client,
                                "no direct URL for the primary",
                            ))
                        })?;
                        redis::Client::open(url)?
                            .get_multiplexed_async_connection()
                            .await?
                    }
                };
                let value: Option<String> =
                    redis::cmd("GET").arg(key).query_async(&mut conn).await?;
                Ok::<_, redis::RedisError>((node, conn, value))
            })
            .await
        });
        let peeked = match peeked {
            Ok(Ok((node, conn, value))) => {
                self.peek_conn = Some((node, conn));
                value
            }
            // The contract: `None` when Redis is down (stopped, restarting,
            // not answering); the connection is reopened at the next peek.
            Ok(Err(_)) | Err(_) => None,
        };
        Ok(peeked)
    }

    /// [`World::truth`].
    fn store_truth(&mut self, _lock_key: &str, resource: &str) -> Result<Truth, WorldError> {
        let name = ResourceName::new(resource)
            .map_err(|e| WorldError::Failed(format!("resource {resource:?}: {e}")))?;
        let log = self
            .block_on(self.admin_store.fence_log(&name))
            .map_err(|e| WorldError::Failed(format!("reading the fence log: {e}")))?;
        let store = log
            .into_iter()
            .map(|entry| FenceRecord {
                seq: entry.seq,
                at_ms: u64::try_from(entry.at_ms - self.started_wall_ms).unwrap_or(0),
                resource: entry.resource,
                fence: entry.fence,
                owner: entry.owner,
                job_id: entry.job_id,
                outcome: match entry.outcome {
                    LogOutcome::Accepted => FenceOutcome::Accepted,
                    LogOutcome::Stale => FenceOutcome::Stale,
                    LogOutcome::NotFound => FenceOutcome::NotFound,
                    LogOutcome::Duplicate => FenceOutcome::Duplicate,
                },
            })
            .collect();
        Ok(Truth {
            // Redis keeps no ownership log.
            redis: None,
            store: Some(store),
        })
    }
}

impl Drop for RealWorld {
    fn drop(&mut self) {
        // Workers' connections and pools may need the runtime to close.
        let _entered = self.rt.enter();
        drop(self.local.take());
        for slot in &mut self.slots {
            slot.conns = None;
        }
        self.peek_conn = None;
        if let Some(cluster) = self.cluster.take() {
            self.rt.block_on(cluster.shutdown());
        }
    }
}
