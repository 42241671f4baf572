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
//! - **Redis-side truth is recorded, not kept.** Real Redis keeps no
//!   ownership log: every node's `MONITOR` stream is recorded from the
//!   world's start (a connection of the world's own, never a worker's) and
//!   re-executed through the simulated server's engine at the end
//!   (`redis_truth`), giving [`Truth::redis`] in the simulation's form. A
//!   recording with a gap gives `None`, and the gap is the reason the
//!   verdicts that needed it give. PostgreSQL's append-only `fence_log` is
//!   the store truth.
//!
//! A world whose script asks for no replica still runs one (the providers
//! always start it); it refuses the replication faults, as the simulation
//! does without a replica, and its tape is left out of the truth (its copy
//! of a lock is nobody's lease).
//!
//! A script may ask for several independent Redis masters
//! (`WorldSpec::masters`, up to 7, as in the simulation): masters 1.. are
//! servers of their own (no replica), each recorded and reached by every
//! worker through a proxy of its own, so [`Fault::OnMaster`] hits one
//! master, or one worker's path to it, alone. Their records carry the
//! simulation's host names (`redis`, `redis-1`, …), so the run is judged on
//! the majority view, and a peek from inside a worker reads every master
//! and answers what a strict majority holds. The external provider refuses
//! several masters (its servers are not ours to add to).
//!
//! The module is split by concern: `connect` makes a worker's Redis and
//! store paths, `redis_path` keeps a worker's Redis connection alive across
//! proxy restarts, `raw_store` is the unchecked store path the mutants use,
//! `redis_truth` turns the nodes' recordings into the ownership log, and
//! `contract` implements the [`World`] contract (faults, peeks, truth).

mod connect;
mod contract;
mod raw_store;
mod redis_path;
mod redis_truth;

use connect::connect_worker;
use raw_store::{PgRawStore, WRITE_UNCHECKED_SQL};
use redis_path::{Reconnecting, ReconnectingInner};

use std::future::Future;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redfence_chaos::{ChaosConfig, ChaosError, ProviderKind, RealCluster, RedisNode, MASTERS_MAX};
use redfence_core::{FreezeSwitch, PgFencedStore};
use redis::aio::MultiplexedConnection;
use sqlx::postgres::PgPoolOptions;
use tokio::runtime::Runtime;
use tokio::task::{JoinHandle, LocalSet};

use crate::run::{WorldFactory, WorldSpec};
use crate::world::{Fault, World, WorldError, WorldKind};

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
/// Timeout of a read on the replica: once per replication cut, and a
/// replica that merely answers slowly under load must not count as
/// lacking the lock (the script would cut again for nothing).
const REPLICA_PEEK_TIMEOUT_MS: u64 = 2_000;
/// Longest wait for a restored replication link to be up and caught up: a
/// replica retries its master about once a second, and a slow machine
/// needs more (the chaos tests allow 15 s as well).
const RESTORE_WAIT_MS: u64 = 15_000;
/// Keys the ownership log follows: the lock keys every protocol's
/// resource names (`lock:{resource}`), as in the simulation.
const LOCK_KEY_PREFIX: &str = "lock:";
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
    /// To masters 1.. (index `m - 1`), as `redis` is to master 0.
    masters: Vec<Reconnecting>,
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
    /// The worker's own tasks: frozen by `pause`, aborted by a crash.
    spawner: crate::world::Spawner,
    /// The last fault on the worker's store path.
    store_faulted: FaultClock,
    /// Taken when the worker is spawned: from then on its job owns them, so
    /// a crash (dropping the job) closes them as a dying process would.
    conns: Option<WorkerConns>,
    /// The worker's Redis connection to each master (master 0 first),
    /// without keeping it alive (a crashed worker's connection must close),
    /// so a fault that closed it can have it replaced at once.
    redis_links: Vec<std::sync::Weak<ReconnectingInner>>,
    task: Option<JoinHandle<()>>,
    /// Shared with armed crash triggers, which fire inside the worker.
    crashed: Arc<AtomicBool>,
    /// The running job's abort handle, for triggers armed before it ran.
    abort: Arc<std::sync::Mutex<Option<tokio::task::AbortHandle>>>,
    finished: Arc<AtomicBool>,
    /// The worker's own clock's error (the worker clock faults).
    clock_error: crate::world::ClockError,
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
    /// How many Redis masters (`WorldSpec::masters`).
    masters: usize,
    /// Timeout of one store operation on a worker's path.
    op_timeout: Duration,
    /// Direct to PostgreSQL (no proxy): the store's ground truth.
    admin_store: PgFencedStore,
    /// Direct to the current Redis primary, for peeks; reopened after an
    /// error or a failover.
    peek_conn: Option<(RedisNode, MultiplexedConnection)>,
    started: Instant,
    /// Wall time at `started` in microseconds, to put the servers' own
    /// timestamps (Redis's recording, PostgreSQL's fence log) on the
    /// world's clock: a whole millisecond of offset would put a server's
    /// deletion after the reply that reported it, or a commit after the
    /// deletion that followed it.
    started_wall_us: i64,
    /// Last: everything above may need the runtime to drop.
    rt: Runtime,
}

impl RealWorld {
    /// Worker `index`'s paths as addresses a process of its own dials (a
    /// lock adapter). With Sentinel, its Redis path is the one to the
    /// primary it starts with, and the sentinel part says how to follow
    /// the master from there through the worker's own proxies.
    fn wire_paths(&self, index: usize) -> Result<Option<crate::world::WirePaths>, WorldError> {
        let cluster = self.cluster.as_ref().expect("present until dropped");
        let redis_url = cluster.worker_redis_url(index).map_err(chaos_error)?;
        let redis_addr = redis_url
            .trim_start_matches("redis://")
            .trim_end_matches('/')
            .to_owned();
        let postgres_url = cluster.worker_postgres_url(index).map_err(chaos_error)?;
        let sentinel = cluster
            .worker_address_map(index)
            .map(|map| crate::world::SentinelPaths {
                master_name: redfence_chaos::sentinel::MASTER_NAME.to_owned(),
                sentinels: map.sentinels,
                routes: map.routes,
            });
        Ok(Some(crate::world::WirePaths {
            redis_addr,
            postgres_url,
            sentinel,
        }))
    }

    /// Starts servers and proxies as `config` says, laid out as `spec` asks,
    /// and connects every worker's paths.
    pub fn start(config: &ChaosConfig, spec: &WorldSpec) -> Result<Self, WorldError> {
        // Checked before any server starts.
        if spec.masters == 0 || spec.masters > MASTERS_MAX {
            return Err(WorldError::Unsupported {
                what: format!("{} Redis masters", spec.masters),
                why: format!("a world runs 1 to {MASTERS_MAX} Redis masters"),
            });
        }
        if spec.masters > 1 && config.provider == Some(ProviderKind::External) {
            return Err(WorldError::Unsupported {
                what: format!("{} Redis masters", spec.masters),
                why: "the external provider's servers are not ours to add to: several masters \
                      run on local processes or containers (REDFENCE_PROVIDER=local or \
                      containers)"
                    .to_owned(),
            });
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| WorldError::Failed(format!("tokio runtime: {e}")))?;
        let local = LocalSet::new();
        // Sentinel decides failovers only where the script has a replica
        // to fail over to: elsewhere it would promote the replica when a
        // scenario stops Redis on purpose.
        let mut config = config.clone();
        if !spec.replica {
            config.failover = redfence_chaos::FailoverKind::Scripted;
        }
        let cluster = local
            .block_on(
                &rt,
                RealCluster::start_with_masters(&config, spec.workers, spec.masters),
            )
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
            .map(|conns| {
                let pause = FreezeSwitch::new();
                Slot {
                    spawner: crate::world::Spawner::new(pause.clone()),
                    redis_links: std::iter::once(&conns.redis)
                        .chain(&conns.masters)
                        .map(|path| Arc::downgrade(&path.0))
                        .collect(),
                    store_faulted: conns.store_faulted.clone(),
                    pause,
                    conns: Some(conns),
                    task: None,
                    crashed: Arc::new(AtomicBool::new(false)),
                    abort: Arc::default(),
                    finished: Arc::new(AtomicBool::new(false)),
                    clock_error: crate::world::ClockError::default(),
                }
            })
            .collect();
        // The world's clock and its Unix time, read together: server
        // timestamps (µs) are put on the world's clock with this offset.
        let started = Instant::now();
        let started_wall_us = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64);
        Ok(Self {
            local: Some(local),
            cluster: Some(cluster),
            slots,
            replica: spec.replica,
            masters: spec.masters,
            op_timeout,
            admin_store: admin_store.with_op_timeout(Duration::from_millis(ADMIN_TIMEOUT_MS)),
            peek_conn: None,
            started,
            started_wall_us,
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

    /// The fault just injected closed the connections of `workers` to
    /// Redis master `master` (the embedded Toxiproxy restarts a proxy on
    /// every change; a stopped, restarted or failed-over Redis drops them):
    /// their next request connects anew instead of failing on a dead
    /// socket, as it would not with a real Toxiproxy, where only the fault
    /// itself acts.
    fn redis_connections_closed(&self, master: usize, workers: impl IntoIterator<Item = usize>) {
        for worker in workers {
            let link = self
                .slots
                .get(worker)
                .and_then(|s| s.redis_links.get(master))
                .and_then(std::sync::Weak::upgrade);
            if let Some(inner) = link {
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
