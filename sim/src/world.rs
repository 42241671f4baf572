//! The simulated world: hosts, workers, faults and the clock, from one seed.
//!
//! Layout: host `redis` (the primary), optionally `replica` (replicating from
//! `redis`), host `store` (the fenced store), and one host per worker
//! (`w0`, `w1`, …, see `redfence_history::names::worker_name`) so a fault can hit one worker's traffic. Workers
//! run the unchanged `redfence-core` code over [`SimRedisConnection`] and
//! [`SimStoreClient`]; every fault is a method here, applied between steps.
//!
//! Defaults, documented once:
//!
//! | setting | default | bound |
//! |---|---|---|
//! | `seed` | — (required) | any `u64` |
//! | `tick_ms` | 1 | 1 ..= 100 |
//! | link latency | 1 ..= 3 ms, drawn from the seeded RNG | max ≤ 10 000 ms |
//! | `workers` | 2 | 1 ..= 64 |
//! | `replica` | off | |
//! | `duration_ms_max` | 600 000 (simulated) | 1 ..= 86 400 000 |
//! | `store_op_timeout_ms` | 500 | 1 ..= 60 000 |
//!
//! Time is turmoil's: every host's tokio clock is virtual, and `tokio::time`
//! (which the lock client and keeper use) follows it. The epoch is fixed, so
//! no wall-clock value ever enters a run.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, UNIX_EPOCH};

use redfence_core::{FreezeSwitch, LockClient, LockConfig, SeededJitter, SeededUuidTokens};

use crate::connection::{RedisDirectory, SimRedisConnection};
use crate::redis::{serve_turmoil, CommandLog, OwnershipLog, RedisConfig, RedisHandle, REDIS_PORT};
use crate::seeds::{self, stream};
use crate::store::{self, SimStoreClient, StoreState};
use crate::trace::Trace;

/// Host name of the Redis primary at the start of a run.
pub const PRIMARY_HOST: &str = "redis";
/// Host name of the replica, when there is one.
pub const REPLICA_HOST: &str = "replica";
/// Most Redis masters a world runs (master 0, the primary, included):
/// Redlock is deployed on 3 or 5.
pub const MASTERS_MAX: usize = 7;

/// The host of Redis master `master`: master 0 is [`PRIMARY_HOST`] (its
/// replica, once promoted, serves in its place); masters 1.. are
/// independent servers, `redis-1`, `redis-2`, …, with no replication
/// between them, as Redlock wants them.
pub fn master_host(master: usize) -> String {
    if master == 0 {
        PRIMARY_HOST.to_owned()
    } else {
        format!("{PRIMARY_HOST}-{master}")
    }
}
/// Host name of the fenced store.
pub const STORE_HOST: &str = "store";
/// Most workers one world lays out.
pub const WORKERS_MAX: usize = 64;

/// A world that cannot be built as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorldError {
    /// A setting is outside its bound.
    #[error("{field} = {value} is out of range {min}..={max}")]
    OutOfRange {
        /// Setting, unit last.
        field: &'static str,
        /// Value given.
        value: u64,
        /// Smallest allowed.
        min: u64,
        /// Largest allowed.
        max: u64,
    },
    /// The minimum latency exceeds the maximum.
    #[error("latency_min_ms = {min} exceeds latency_max_ms = {max}")]
    LatencyRange {
        /// Minimum.
        min: u64,
        /// Maximum.
        max: u64,
    },
    /// No such worker.
    #[error("worker {index} does not exist (the world has {workers})")]
    NoSuchWorker {
        /// Index asked for.
        index: usize,
        /// Workers laid out.
        workers: usize,
    },
    /// The replica was asked for, but the world was built without one.
    #[error("this world has no replica; build it with .replica(true)")]
    NoReplica,
    /// A worker slot runs one future at a time.
    #[error("worker {index} is already running")]
    WorkerBusy {
        /// Index.
        index: usize,
    },
    /// The simulation failed (a host returned an error, or ran past its duration).
    #[error("simulation failed: {0}")]
    Sim(String),
    /// No such Redis master.
    #[error("master {master} does not exist (the world has {masters})")]
    NoSuchMaster {
        /// Index asked for.
        master: usize,
        /// Masters laid out.
        masters: usize,
    },
    /// A Redis host that must be up for the operation is down.
    #[error("{host} is down: {what} needs it running")]
    RedisDown {
        /// The host.
        host: String,
        /// What was asked of it.
        what: &'static str,
    },
}

/// Builder for a [`World`]; see the module doc for defaults.
#[derive(Clone, Debug)]
pub struct WorldBuilder {
    seed: u64,
    tick_ms: u64,
    latency_min_ms: u64,
    latency_max_ms: u64,
    workers: usize,
    replica: bool,
    duration_ms_max: u64,
    store_op_timeout_ms: u64,
    masters: usize,
    idle_fast_path: bool,
    record_commands: bool,
}

impl WorldBuilder {
    /// A builder for the run seeded by `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            tick_ms: 1,
            latency_min_ms: 1,
            latency_max_ms: 3,
            workers: 2,
            replica: false,
            duration_ms_max: 600_000,
            store_op_timeout_ms: 500,
            masters: 1,
            idle_fast_path: true,
            record_commands: true,
        }
    }

    /// Number of Redis masters (default 1): masters 1.. are independent
    /// servers beside the primary, for locks that span several (Redlock).
    pub fn masters(mut self, masters: usize) -> Self {
        self.masters = masters;
        self
    }

    /// Simulated time per step. Every host is polled every tick, so a
    /// coarser tick runs faster; keep it well below the lease (≤ 1%).
    pub fn tick_ms(mut self, tick_ms: u64) -> Self {
        self.tick_ms = tick_ms;
        self
    }

    /// The coarsest tick that still resolves `lease_ms` to 1%: a lease of
    /// 1 s runs at 10 ms steps, ten times faster than the 1 ms default,
    /// while every lease deadline still falls within a hundredth of a lease.
    pub fn tick_for_lease(self, lease_ms: u64) -> Self {
        self.tick_ms((lease_ms / 100).clamp(1, 100))
    }

    /// Link latency range; each message draws from it with the seeded RNG.
    pub fn latency_ms(mut self, min_ms: u64, max_ms: u64) -> Self {
        self.latency_min_ms = min_ms;
        self.latency_max_ms = max_ms;
        self
    }

    /// Number of worker hosts.
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers;
        self
    }

    /// Adds a replica of the primary (needed for failover).
    pub fn replica(mut self, replica: bool) -> Self {
        self.replica = replica;
        self
    }

    /// Longest simulated time a run may take before it fails.
    pub fn duration_ms_max(mut self, duration_ms_max: u64) -> Self {
        self.duration_ms_max = duration_ms_max;
        self
    }

    /// Timeout of one call to the simulated store.
    pub fn store_op_timeout_ms(mut self, store_op_timeout_ms: u64) -> Self {
        self.store_op_timeout_ms = store_op_timeout_ms;
        self
    }

    /// Whether a host with nothing to do in a step (no task ready, no timer
    /// due within it) is advanced without a poll of its runtime (default:
    /// on). The run is byte for byte the same either way; off polls every
    /// host every tick, as turmoil does, and is the baseline the harness
    /// bench and the sweep-digest test compare against. Built outside this
    /// workspace (a team's crate gets turmoil from crates.io, without the
    /// patch) every host is polled whatever this says.
    pub fn idle_fast_path(mut self, on: bool) -> Self {
        self.idle_fast_path = on;
        self
    }

    /// Whether the servers log every command they execute, as text
    /// ([`World::commands`]; default: on). Off, the log stays empty.
    pub fn record_commands(mut self, on: bool) -> Self {
        self.record_commands = on;
        self
    }

    /// Validates and lays out the hosts.
    pub fn build(self) -> Result<World, WorldError> {
        in_range("tick_ms", self.tick_ms, 1, 100)?;
        in_range("latency_max_ms", self.latency_max_ms, 0, 10_000)?;
        if self.latency_min_ms > self.latency_max_ms {
            return Err(WorldError::LatencyRange {
                min: self.latency_min_ms,
                max: self.latency_max_ms,
            });
        }
        in_range("workers", self.workers as u64, 1, WORKERS_MAX as u64)?;
        in_range("masters", self.masters as u64, 1, MASTERS_MAX as u64)?;
        in_range("duration_ms_max", self.duration_ms_max, 1, 86_400_000)?;
        in_range("store_op_timeout_ms", self.store_op_timeout_ms, 1, 60_000)?;
        Ok(World::new(self))
    }
}

fn in_range(field: &'static str, value: u64, min: u64, max: u64) -> Result<(), WorldError> {
    if value < min || value > max {
        return Err(WorldError::OutOfRange {
            field,
            value,
            min,
            max,
        });
    }
    Ok(())
}

/// What the world hands a worker's future: its own connections, seeded
/// randomness, and the trace.
pub struct WorkerCtx {
    /// Worker index.
    pub index: usize,
    /// Host name (`w<index>`).
    pub name: String,
    /// This worker's Redis connection (follows failover).
    pub redis: SimRedisConnection,
    /// One connection per Redis master, in master order: master 0 is
    /// `redis` itself, masters 1.. the independent servers.
    pub masters: Vec<SimRedisConnection>,
    /// This worker's store client.
    pub store: SimStoreClient,
    /// Owner tokens from the run's seed.
    pub tokens: Arc<SeededUuidTokens>,
    /// Jitter from the run's seed.
    pub jitter: Arc<SeededJitter>,
    /// The run's trace.
    pub trace: Trace,
}

impl WorkerCtx {
    /// Records an event for this worker.
    pub fn log(&self, what: impl Into<String>) {
        self.trace.record(&self.name, what);
    }

    /// The reference lock client over this worker's connection, with seeded
    /// tokens and jitter.
    pub fn lock_client(&self, config: LockConfig) -> LockClient<SimRedisConnection> {
        LockClient::builder(self.redis.clone(), config)
            .tokens(self.tokens.clone())
            .jitter(self.jitter.clone())
            .build()
            .expect("a redis-counter config needs no other fence source")
    }

    /// The reference lock client with fences from the store's durable
    /// counter (the simulation's Postgres fence source); `config` must say
    /// `FenceSourceKind::Store`.
    pub fn lock_client_with_store_fences(
        &self,
        config: LockConfig,
    ) -> Result<LockClient<SimRedisConnection>, redfence_core::ConfigError> {
        LockClient::builder(self.redis.clone(), config)
            .tokens(self.tokens.clone())
            .jitter(self.jitter.clone())
            .fence_source(Arc::new(crate::store::SimStoreFences::new(
                self.store.clone(),
            )))
            .build()
    }
}

/// Crashes one worker when called (see [`World::worker_switches`]).
#[derive(Clone, Debug)]
pub struct WorkerKill(CrashSwitch);

impl WorkerKill {
    /// The worker's future is dropped at its next poll, never to run again.
    pub fn kill(&self) {
        self.0.crash();
    }
}

/// Kills a worker's future the way a crash kills a process: it is dropped
/// where it stands (its sockets close), never to run again.
#[derive(Clone, Debug, Default)]
struct CrashSwitch {
    state: Arc<Mutex<(bool, Option<Waker>)>>,
}

impl CrashSwitch {
    fn crash(&self) {
        let waker = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            state.0 = true;
            state.1.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    fn is_crashed(&self) -> bool {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).0
    }
}

struct Crashable<F> {
    inner: Option<Pin<Box<F>>>,
    switch: CrashSwitch,
}

impl<F: Future<Output = ()>> Future for Crashable<F> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        {
            let mut state = self.switch.state.lock().unwrap_or_else(|e| e.into_inner());
            if state.0 {
                drop(state);
                // Dropping the future closes its connections, as process death does.
                self.inner = None;
                return Poll::Ready(());
            }
            state.1 = Some(cx.waker().clone());
        }
        match self.inner.as_mut() {
            Some(inner) => inner.as_mut().poll(cx),
            None => Poll::Ready(()),
        }
    }
}

/// A fault on a worker's links, kept until the worker's host exists:
/// turmoil creates a host's links when the host is registered, which for a
/// worker is when its job is spawned.
type LinkFault = Box<dyn FnOnce(&mut turmoil::Sim<'static>)>;

struct WorkerSlot {
    name: String,
    pending: Vec<LinkFault>,
    pause: FreezeSwitch,
    crash: CrashSwitch,
    done: Arc<Mutex<bool>>,
    spawned: bool,
}

/// The simulated world. Build it with [`WorldBuilder`].
pub struct World {
    sim: turmoil::Sim<'static>,
    config: WorldBuilder,
    trace: Trace,
    ownership: OwnershipLog,
    store: StoreState,
    primary: RedisHandle,
    replica: Option<RedisHandle>,
    /// Masters 1.. (independent servers), in order.
    extra_masters: Vec<RedisHandle>,
    directory: RedisDirectory,
    workers: Vec<WorkerSlot>,
    promoted: Arc<AtomicBool>,
    /// Faults in force on each (worker index, peer host) link. turmoil's
    /// `hold`/`release` set both directions and would undo a one-way reply
    /// drop; every change recomputes the link from this state instead.
    links: BTreeMap<(usize, String), LinkFaults>,
    commands: CommandLog,
}

/// The faults in force on one worker's link to one peer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct LinkFaults {
    /// Both directions held (a partition TCP rides out).
    held: bool,
    /// Peer → worker segments dropped (lost replies).
    replies_dropped: bool,
}

impl World {
    fn new(config: WorldBuilder) -> Self {
        let mut builder = turmoil::Builder::new();
        builder
            .rng_seed(seeds::derive(config.seed, stream::TURMOIL))
            .epoch(UNIX_EPOCH + Duration::from_secs(1_700_000_000))
            .tick_duration(Duration::from_millis(config.tick_ms))
            .min_message_latency(Duration::from_millis(config.latency_min_ms))
            .max_message_latency(Duration::from_millis(config.latency_max_ms))
            .simulation_duration(Duration::from_millis(config.duration_ms_max));
        // Only the workspace's patched turmoil has the fast path (build.rs).
        #[cfg(turmoil_idle_fast_path)]
        builder.idle_fast_path(config.idle_fast_path);
        #[cfg(not(turmoil_idle_fast_path))]
        let _ = config.idle_fast_path;
        let mut sim = builder.build();
        let trace = Trace::new();
        let ownership = OwnershipLog::default();
        let store = StoreState::default();
        let primary = RedisHandle::default();

        let commands = if config.record_commands {
            CommandLog::new()
        } else {
            CommandLog::off()
        };
        let (log, handle, cmds) = (ownership.clone(), primary.clone(), commands.clone());
        sim.host(PRIMARY_HOST, move || {
            serve_turmoil(
                RedisConfig {
                    name: PRIMARY_HOST.to_owned(),
                    port: REDIS_PORT,
                    replica_of: None,
                    lock_key_prefix: "lock:".to_owned(),
                    command_log: Some(cmds.clone()),
                },
                log.clone(),
                handle.clone(),
            )
        });
        // Once promoted, a restart of the replica host must bring back a
        // primary, not a replica of the dead one.
        let promoted = Arc::new(AtomicBool::new(false));
        let replica = config.replica.then(|| {
            let handle = RedisHandle::default();
            let (log, h, p) = (ownership.clone(), handle.clone(), promoted.clone());
            let cmds = commands.clone();
            sim.host(REPLICA_HOST, move || {
                let replica_of =
                    (!p.load(Ordering::SeqCst)).then(|| (PRIMARY_HOST.to_owned(), REDIS_PORT));
                serve_turmoil(
                    RedisConfig {
                        name: REPLICA_HOST.to_owned(),
                        port: REDIS_PORT,
                        replica_of,
                        lock_key_prefix: "lock:".to_owned(),
                        command_log: Some(cmds.clone()),
                    },
                    log.clone(),
                    h.clone(),
                )
            });
            handle
        });
        let extra_masters: Vec<RedisHandle> = (1..config.masters)
            .map(|master| {
                let handle = RedisHandle::default();
                let (log, h, cmds) = (ownership.clone(), handle.clone(), commands.clone());
                let host = master_host(master);
                let name = host.clone();
                sim.host(host.as_str(), move || {
                    serve_turmoil(
                        RedisConfig {
                            name: name.clone(),
                            port: REDIS_PORT,
                            replica_of: None,
                            lock_key_prefix: "lock:".to_owned(),
                            command_log: Some(cmds.clone()),
                        },
                        log.clone(),
                        h.clone(),
                    )
                });
                handle
            })
            .collect();
        let state = store.clone();
        sim.host(STORE_HOST, move || store::serve(state.clone()));

        let workers = (0..config.workers)
            .map(|i| WorkerSlot {
                name: redfence_history::names::worker_name(i),
                pending: Vec::new(),
                pause: FreezeSwitch::new(),
                crash: CrashSwitch::default(),
                done: Arc::new(Mutex::new(false)),
                spawned: false,
            })
            .collect();
        Self {
            sim,
            config,
            trace,
            ownership,
            store,
            primary,
            replica,
            extra_masters,
            directory: RedisDirectory::new(PRIMARY_HOST, REDIS_PORT),
            workers,
            promoted,
            links: BTreeMap::new(),
            commands,
        }
    }

    /// The run's seed.
    pub fn seed(&self) -> u64 {
        self.config.seed
    }

    /// Simulated time since the start.
    pub fn elapsed(&self) -> Duration {
        self.sim.elapsed()
    }

    /// Host ticks advanced without a poll because the host had nothing to
    /// do (see [`WorldBuilder::idle_fast_path`]).
    /// Always 0 outside this workspace, where turmoil is unpatched.
    pub fn idle_ticks_unpolled(&self) -> u64 {
        #[cfg(turmoil_idle_fast_path)]
        return self.sim.idle_ticks_unpolled();
        #[cfg(not(turmoil_idle_fast_path))]
        0
    }

    /// The run's trace.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// The Redis servers' ownership log: ground truth of who held each lock key.
    pub fn ownership(&self) -> &OwnershipLog {
        &self.ownership
    }

    /// Every command the Redis servers executed for clients, in order.
    pub fn commands(&self) -> &CommandLog {
        &self.commands
    }

    /// The store's durable state (fence log, values, completions).
    pub fn store(&self) -> &StoreState {
        &self.store
    }

    /// The primary's handle.
    pub fn primary(&self) -> &RedisHandle {
        &self.primary
    }

    /// The replica's handle.
    pub fn replica(&self) -> Result<&RedisHandle, WorldError> {
        self.replica.as_ref().ok_or(WorldError::NoReplica)
    }

    /// Number of worker hosts.
    pub fn worker_count(&self) -> usize {
        self.workers.len()
    }

    /// Host name of worker `index`.
    pub fn worker_name(&self, index: usize) -> Result<&str, WorldError> {
        Ok(&self.slot(index)?.name)
    }

    fn slot(&self, index: usize) -> Result<&WorkerSlot, WorldError> {
        let workers = self.workers.len();
        self.workers
            .get(index)
            .ok_or(WorldError::NoSuchWorker { index, workers })
    }

    /// Starts `job` on worker `index`'s host. The job gets its own
    /// connections, seeded tokens and jitter; pause and crash act on it.
    pub fn spawn_worker<F, Fut>(&mut self, index: usize, job: F) -> Result<(), WorldError>
    where
        F: FnOnce(WorkerCtx) -> Fut,
        Fut: Future<Output = ()> + 'static,
    {
        self.slot(index)?;
        if self.workers[index].spawned {
            return Err(WorldError::WorkerBusy { index });
        }
        let seed = self.config.seed;
        let slot = &mut self.workers[index];
        slot.spawned = true;
        let redis = SimRedisConnection::new(self.directory.clone());
        let mut masters = vec![redis.clone()];
        masters.extend((1..self.config.masters).map(|master| {
            SimRedisConnection::new(RedisDirectory::new(master_host(master), REDIS_PORT))
        }));
        let ctx = WorkerCtx {
            index,
            name: slot.name.clone(),
            redis,
            masters,
            store: SimStoreClient::new(
                STORE_HOST,
                Duration::from_millis(self.config.store_op_timeout_ms),
            ),
            tokens: Arc::new(SeededUuidTokens::new(seeds::derive(
                seed,
                stream::TOKENS_BASE + index as u64,
            ))),
            jitter: Arc::new(SeededJitter::new(seeds::derive(
                seed,
                stream::JITTER_BASE + index as u64,
            ))),
            trace: self.trace.clone(),
        };
        let done = slot.done.clone();
        let paused = slot.pause.wrap(job(ctx));
        let crashable = Crashable {
            inner: Some(Box::pin(paused)),
            switch: slot.crash.clone(),
        };
        let name = slot.name.clone();
        let pending = std::mem::take(&mut slot.pending);
        self.sim.client(name, async move {
            crashable.await;
            *done.lock().unwrap_or_else(|e| e.into_inner()) = true;
            Ok(())
        });
        for fault in pending {
            fault(&mut self.sim);
        }
        Ok(())
    }

    /// Applies a link fault now, or when worker `index`'s host exists.
    fn link_fault(
        &mut self,
        index: usize,
        fault: impl FnOnce(&mut turmoil::Sim<'static>) + 'static,
    ) -> Result<(), WorldError> {
        self.slot(index)?;
        let slot = &mut self.workers[index];
        if slot.spawned {
            fault(&mut self.sim);
        } else {
            slot.pending.push(Box::new(fault));
        }
        Ok(())
    }

    /// Whether worker `index`'s job has returned (or was crashed).
    pub fn worker_done(&self, index: usize) -> Result<bool, WorldError> {
        Ok(*self
            .slot(index)?
            .done
            .lock()
            .unwrap_or_else(|e| e.into_inner()))
    }

    /// Advances the simulation by `duration` (rounded up to whole ticks).
    pub fn run_for(&mut self, duration: Duration) -> Result<(), WorldError> {
        let until = self.sim.elapsed() + duration;
        while self.sim.elapsed() < until {
            self.sim
                .step()
                .map_err(|e| WorldError::Sim(e.to_string()))?;
        }
        self.sync_server_clocks();
        Ok(())
    }

    /// Tells the Redis servers what time it is (see [`RedisHandle::observe_time`]).
    fn sync_server_clocks(&self) {
        let now_ms = self.sim.elapsed().as_millis() as u64;
        self.primary.observe_time(now_ms);
        if let Some(replica) = &self.replica {
            replica.observe_time(now_ms);
        }
        for master in &self.extra_masters {
            master.observe_time(now_ms);
        }
    }

    /// Steps until every spawned worker has finished, or `limit` of simulated
    /// time has passed. Returns whether they all finished.
    pub fn run_until_workers_done(&mut self, limit: Duration) -> Result<bool, WorldError> {
        let until = self.sim.elapsed() + limit;
        loop {
            let all_done = self
                .workers
                .iter()
                .filter(|w| w.spawned)
                .all(|w| *w.done.lock().unwrap_or_else(|e| e.into_inner()));
            if all_done {
                self.sync_server_clocks();
                return Ok(true);
            }
            if self.sim.elapsed() >= until {
                self.sync_server_clocks();
                return Ok(false);
            }
            self.sim
                .step()
                .map_err(|e| WorldError::Sim(e.to_string()))?;
        }
    }

    fn fault(&self, what: impl Into<String>) {
        self.trace
            .record_at(self.sim.elapsed().as_millis() as u64, "world", what);
    }

    fn current_primary_host(&self) -> String {
        self.directory.primary().0
    }

    // ---- faults ---------------------------------------------------------

    /// Stop-the-world pause: neither the worker's job nor its renewal runs;
    /// bytes already sent keep travelling.
    pub fn pause_worker(&mut self, index: usize) -> Result<(), WorldError> {
        let slot = self.slot(index)?;
        slot.pause.freeze();
        self.fault(format!("pause {}", slot.name));
        Ok(())
    }

    /// Ends a pause.
    pub fn resume_worker(&mut self, index: usize) -> Result<(), WorldError> {
        let slot = self.slot(index)?;
        slot.pause.thaw();
        self.fault(format!("resume {}", slot.name));
        Ok(())
    }

    /// Kills the worker: its job is dropped where it stands.
    pub fn crash_worker(&mut self, index: usize) -> Result<(), WorldError> {
        let slot = self.slot(index)?;
        slot.crash.crash();
        self.fault(format!("crash {}", slot.name));
        Ok(())
    }

    /// Worker `index`'s pause switch and kill handle, to apply a pause or a
    /// crash from inside the worker's own task the moment it reaches a point
    /// (a fault aimed at a phase too short to hit between steps). Freezing
    /// or killing takes effect when the worker's current poll yields.
    pub fn worker_switches(&self, index: usize) -> Result<(FreezeSwitch, WorkerKill), WorldError> {
        let slot = self.slot(index)?;
        Ok((slot.pause.clone(), WorkerKill(slot.crash.clone())))
    }

    /// Whether worker `index` was crashed.
    pub fn is_worker_crashed(&self, index: usize) -> Result<bool, WorldError> {
        Ok(self.slot(index)?.crash.is_crashed())
    }

    /// Changes the faults on (worker `index`, `peer`) and re-derives the
    /// link's turmoil state from all faults in force on it.
    fn update_link(
        &mut self,
        index: usize,
        peer: &str,
        change: impl FnOnce(&mut LinkFaults),
    ) -> Result<(), WorldError> {
        let name = self.slot(index)?.name.clone();
        let faults = self.links.entry((index, peer.to_owned())).or_default();
        change(faults);
        let faults = *faults;
        let peer = peer.to_owned();
        self.link_fault(index, move |sim| {
            if faults.held {
                sim.hold(name.as_str(), peer.as_str());
            } else {
                // Delivers what was held, then both directions healthy.
                sim.release(name.as_str(), peer.as_str());
                sim.repair(name.as_str(), peer.as_str());
            }
            if faults.replies_dropped {
                sim.partition_oneway(peer.as_str(), name.as_str());
            }
        })
    }

    /// The Redis hosts a worker may have a faulted link to (after a
    /// failover the worker talks to the replica, but the old link's faults
    /// are still in force).
    fn redis_hosts(&self) -> Vec<&'static str> {
        let mut hosts = vec![PRIMARY_HOST];
        if self.replica.is_some() {
            hosts.push(REPLICA_HOST);
        }
        hosts
    }

    /// Cuts the worker off from the current Redis primary. Segments are
    /// held, not dropped, the way TCP rides out an outage: what was sent
    /// arrives after [`World::heal_worker_redis`].
    pub fn partition_worker_redis(&mut self, index: usize) -> Result<(), WorldError> {
        let primary = self.current_primary_host();
        self.update_link(index, &primary, |f| f.held = true)?;
        self.fault(format!(
            "partition {} from {primary}",
            self.slot(index)?.name
        ));
        Ok(())
    }

    /// Ends every partition between the worker and a Redis host.
    pub fn heal_worker_redis(&mut self, index: usize) -> Result<(), WorldError> {
        for host in self.redis_hosts() {
            if self
                .links
                .get(&(index, host.to_owned()))
                .is_some_and(|f| f.held)
            {
                self.update_link(index, host, |f| f.held = false)?;
            }
        }
        self.fault(format!("heal {} to redis", self.slot(index)?.name));
        Ok(())
    }

    /// Cuts the worker off from the store (held, as above).
    pub fn partition_worker_store(&mut self, index: usize) -> Result<(), WorldError> {
        self.update_link(index, STORE_HOST, |f| f.held = true)?;
        self.fault(format!(
            "partition {} from {STORE_HOST}",
            self.slot(index)?.name
        ));
        Ok(())
    }

    /// Ends a partition from the store.
    pub fn heal_worker_store(&mut self, index: usize) -> Result<(), WorldError> {
        self.update_link(index, STORE_HOST, |f| f.held = false)?;
        self.fault(format!("heal {} to {STORE_HOST}", self.slot(index)?.name));
        Ok(())
    }

    /// Loses every reply from the current Redis primary to the worker:
    /// requests arrive and run, answers never come back (the connection is
    /// dead for good afterwards, as after a real reset; the client reconnects).
    pub fn drop_redis_replies(&mut self, index: usize) -> Result<(), WorldError> {
        let primary = self.current_primary_host();
        self.update_link(index, &primary, |f| f.replies_dropped = true)?;
        self.fault(format!(
            "drop replies {primary} -> {}",
            self.slot(index)?.name
        ));
        Ok(())
    }

    /// Replies from every Redis host flow to the worker again.
    pub fn restore_redis_replies(&mut self, index: usize) -> Result<(), WorldError> {
        for host in self.redis_hosts() {
            let dropped = self
                .links
                .get(&(index, host.to_owned()))
                .is_some_and(|f| f.replies_dropped);
            if dropped {
                self.update_link(index, host, |f| f.replies_dropped = false)?;
            }
        }
        self.fault(format!(
            "restore replies redis -> {}",
            self.slot(index)?.name
        ));
        Ok(())
    }

    /// Loses every reply from the store to the worker.
    pub fn drop_store_replies(&mut self, index: usize) -> Result<(), WorldError> {
        self.update_link(index, STORE_HOST, |f| f.replies_dropped = true)?;
        self.fault(format!(
            "drop replies {STORE_HOST} -> {}",
            self.slot(index)?.name
        ));
        Ok(())
    }

    /// Replies from the store flow again.
    pub fn restore_store_replies(&mut self, index: usize) -> Result<(), WorldError> {
        self.update_link(index, STORE_HOST, |f| f.replies_dropped = false)?;
        self.fault(format!(
            "restore replies {STORE_HOST} -> {}",
            self.slot(index)?.name
        ));
        Ok(())
    }

    /// Fixes the latency of the link between worker `index` and Redis.
    pub fn set_redis_latency(&mut self, index: usize, latency: Duration) -> Result<(), WorldError> {
        let name = self.slot(index)?.name.clone();
        let primary = self.current_primary_host();
        let (a, b) = (name.clone(), primary.clone());
        self.link_fault(index, move |sim| {
            sim.set_link_latency(a.as_str(), b.as_str(), latency)
        })?;
        self.fault(format!(
            "latency {name} <-> {primary} = {}ms",
            latency.as_millis()
        ));
        Ok(())
    }

    /// Stops the current primary (its data is lost: no persistence): its
    /// process is killed, its machine stays up, so clients are refused at
    /// once ([`RedisHandle::kill`]), as from a real `kill -9`.
    pub fn stop_redis(&mut self) {
        self.sync_server_clocks();
        let primary = self.current_primary_host();
        self.handle_of(&primary).kill();
        self.fault(format!("stop {primary}"));
    }

    /// `BGSAVE` on the current primary: what it holds now is what its next
    /// restart loads; writes after this are lost by a crash.
    pub fn snapshot_redis(&mut self) -> Result<(), WorldError> {
        self.sync_server_clocks();
        let primary = self.current_primary_host();
        let now_ms = self.sim.elapsed().as_millis() as u64;
        if !self.handle_of(&primary).save(now_ms) {
            return Err(WorldError::RedisDown {
                host: primary,
                what: "a snapshot",
            });
        }
        self.fault(format!("snapshot {primary} to disk"));
        Ok(())
    }

    /// Restarts the current primary: from its last snapshot
    /// ([`World::snapshot_redis`]), or empty when it never took one.
    pub fn restart_redis(&mut self) {
        self.sync_server_clocks();
        let primary = self.current_primary_host();
        let loads = match self.handle_of(&primary).saved_at_ms() {
            Some(at_ms) => format!("from its snapshot at {at_ms} ms"),
            None => "empty".to_owned(),
        };
        self.sim.bounce(primary.as_str());
        self.fault(format!("restart {primary} ({loads})"));
    }

    /// The current primary's machine clock jumps `jump_ms` forward: the
    /// deadlines it holds come that much sooner (a lease set before the
    /// jump expires early); leases set later last their full length.
    pub fn jump_redis_clock(&mut self, jump_ms: u64) {
        self.sync_server_clocks();
        let primary = self.current_primary_host();
        let now_ms = self.sim.elapsed().as_millis() as u64;
        self.handle_of(&primary).jump_clock(now_ms, jump_ms);
        self.fault(format!("{primary}'s clock jumps {jump_ms} ms forward"));
    }

    // ---- masters ----------------------------------------------------------

    /// Number of Redis masters.
    pub fn master_count(&self) -> usize {
        self.config.masters
    }

    /// Master `master`'s handle: for master 0, the server serving as
    /// primary (the replica once promoted).
    pub fn master(&self, master: usize) -> Result<&RedisHandle, WorldError> {
        let host = self.master_host_now(master)?;
        Ok(self.handle_of(&host))
    }

    /// The host serving master `master` now.
    fn master_host_now(&self, master: usize) -> Result<String, WorldError> {
        match master {
            0 => Ok(self.current_primary_host()),
            m if m < self.config.masters => Ok(master_host(m)),
            _ => Err(WorldError::NoSuchMaster {
                master,
                masters: self.config.masters,
            }),
        }
    }

    /// Cuts worker `index` off from master `master` only (held, as
    /// [`World::partition_worker_redis`]).
    pub fn partition_worker_master(
        &mut self,
        index: usize,
        master: usize,
    ) -> Result<(), WorldError> {
        if master == 0 {
            return self.partition_worker_redis(index);
        }
        let host = self.master_host_now(master)?;
        self.update_link(index, &host, |f| f.held = true)?;
        self.fault(format!("partition {} from {host}", self.slot(index)?.name));
        Ok(())
    }

    /// Ends worker `index`'s partition from master `master`.
    pub fn heal_worker_master(&mut self, index: usize, master: usize) -> Result<(), WorldError> {
        if master == 0 {
            return self.heal_worker_redis(index);
        }
        let host = self.master_host_now(master)?;
        self.update_link(index, &host, |f| f.held = false)?;
        self.fault(format!("heal {} to {host}", self.slot(index)?.name));
        Ok(())
    }

    /// Loses every reply from master `master` to worker `index`.
    pub fn drop_master_replies(&mut self, index: usize, master: usize) -> Result<(), WorldError> {
        if master == 0 {
            return self.drop_redis_replies(index);
        }
        let host = self.master_host_now(master)?;
        self.update_link(index, &host, |f| f.replies_dropped = true)?;
        self.fault(format!("drop replies {host} -> {}", self.slot(index)?.name));
        Ok(())
    }

    /// Replies from master `master` flow to worker `index` again.
    pub fn restore_master_replies(
        &mut self,
        index: usize,
        master: usize,
    ) -> Result<(), WorldError> {
        if master == 0 {
            return self.restore_redis_replies(index);
        }
        let host = self.master_host_now(master)?;
        self.update_link(index, &host, |f| f.replies_dropped = false)?;
        self.fault(format!(
            "restore replies {host} -> {}",
            self.slot(index)?.name
        ));
        Ok(())
    }

    /// Fixes the latency of the link between worker `index` and master
    /// `master`.
    pub fn set_master_latency(
        &mut self,
        index: usize,
        master: usize,
        latency: Duration,
    ) -> Result<(), WorldError> {
        if master == 0 {
            return self.set_redis_latency(index, latency);
        }
        let name = self.slot(index)?.name.clone();
        let host = self.master_host_now(master)?;
        let (a, b) = (name.clone(), host.clone());
        self.link_fault(index, move |sim| {
            sim.set_link_latency(a.as_str(), b.as_str(), latency)
        })?;
        self.fault(format!(
            "latency {name} <-> {host} = {}ms",
            latency.as_millis()
        ));
        Ok(())
    }

    /// Crashes master `master` (what it held is lost, except its last
    /// snapshot): a killed process, refused at once, as
    /// [`World::stop_redis`].
    pub fn stop_master(&mut self, master: usize) -> Result<(), WorldError> {
        let host = self.master_host_now(master)?;
        self.sync_server_clocks();
        self.handle_of(&host).kill();
        self.fault(format!("stop {host}"));
        Ok(())
    }

    /// Restarts master `master`: from its last snapshot, or empty.
    pub fn restart_master(&mut self, master: usize) -> Result<(), WorldError> {
        let host = self.master_host_now(master)?;
        self.sync_server_clocks();
        let loads = match self.handle_of(&host).saved_at_ms() {
            Some(at_ms) => format!("from its snapshot at {at_ms} ms"),
            None => "empty".to_owned(),
        };
        self.sim.bounce(host.as_str());
        self.fault(format!("restart {host} ({loads})"));
        Ok(())
    }

    /// `BGSAVE` on master `master`.
    pub fn snapshot_master(&mut self, master: usize) -> Result<(), WorldError> {
        let host = self.master_host_now(master)?;
        self.sync_server_clocks();
        let now_ms = self.sim.elapsed().as_millis() as u64;
        if !self.handle_of(&host).save(now_ms) {
            return Err(WorldError::RedisDown {
                host,
                what: "a snapshot",
            });
        }
        self.fault(format!("snapshot {host} to disk"));
        Ok(())
    }

    /// Master `master`'s machine clock jumps `jump_ms` forward.
    pub fn jump_master_clock(&mut self, master: usize, jump_ms: u64) -> Result<(), WorldError> {
        let host = self.master_host_now(master)?;
        self.sync_server_clocks();
        let now_ms = self.sim.elapsed().as_millis() as u64;
        self.handle_of(&host).jump_clock(now_ms, jump_ms);
        self.fault(format!("{host}'s clock jumps {jump_ms} ms forward"));
        Ok(())
    }

    /// The handle of the Redis host called `host`.
    fn handle_of(&self, host: &str) -> &RedisHandle {
        if let Some(extra) = host
            .strip_prefix(PRIMARY_HOST)
            .and_then(|rest| rest.strip_prefix('-'))
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|m| self.extra_masters.get(m.wrapping_sub(1)))
        {
            return extra;
        }
        match &self.replica {
            Some(replica) if host == REPLICA_HOST => replica,
            _ => &self.primary,
        }
    }

    /// Holds the replication link: writes stop reaching the replica.
    pub fn cut_replication(&mut self) -> Result<(), WorldError> {
        self.replica()?;
        self.sim.hold(PRIMARY_HOST, REPLICA_HOST);
        self.fault("cut replication redis -> replica");
        Ok(())
    }

    /// Releases the replication link.
    pub fn restore_replication(&mut self) -> Result<(), WorldError> {
        self.replica()?;
        self.sim.release(PRIMARY_HOST, REPLICA_HOST);
        self.fault("restore replication redis -> replica");
        Ok(())
    }

    /// Fails over: the primary is stopped, the replica promoted, and the
    /// workers' connections re-pointed at it.
    pub fn fail_over(&mut self) -> Result<(), WorldError> {
        let replica = self.replica()?.clone();
        self.sync_server_clocks();
        self.handle_of(PRIMARY_HOST).kill();
        replica.promote();
        self.promoted.store(true, Ordering::SeqCst);
        self.directory.set_primary(REPLICA_HOST, REDIS_PORT);
        self.fault("fail over: stop redis, promote replica, re-point clients");
        Ok(())
    }
}
