//! The `World` contract: what a scenario may ask of its environment.
//!
//! A scenario is written once against [`World`] and never learns which world
//! runs it: the deterministic simulation (`SimWorld`, in this crate's
//! `sim_world` module) or real Redis and Postgres behind Toxiproxy
//! (`RealWorld`, in the `real_world` module, on the chaos crate's
//! `RealCluster`). A world lays out one Redis path and one store path *per worker*,
//! so a [`Fault`] can hit one worker's traffic, and it drives time: the
//! scenario script spawns workers, lets time pass, injects faults, and at the
//! end asks the servers for their ground truth.
//!
//! Worker futures are `!Send` and run on the world's single thread (turmoil
//! hosts in the simulation, a `LocalSet` in the real world), because a
//! stop-the-world pause must freeze a worker's job and its renewals together.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use redfence_core::freeze::FreezeSwitch;
use redfence_core::{FenceSource, FencedStore, Jitter, StoreError, TokenSource, WriteOutcome};
use tokio::task::{AbortHandle, JoinHandle};

use crate::conn::RedisConn;
use crate::history::{FenceRecord, OwnershipRecord};

pub use redfence_history::fault::Fault;
pub use redfence_history::names::worker_name;
pub use redfence_history::record::WorldKind;

/// A worker's job, as the world runs it.
pub type WorkerFuture = Pin<Box<dyn Future<Output = ()>>>;

/// Builds a worker's job from the environment the world gives it.
pub type WorkerJob = Box<dyn FnOnce(WorkerEnv) -> WorkerFuture>;

/// Milliseconds since the run started, on the world's clock (virtual in the
/// simulation, monotonic wall time in the real world).
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> u64 + Send + Sync>);

impl Clock {
    /// A clock reading `now_ms`.
    pub fn new(now_ms: impl Fn() -> u64 + Send + Sync + 'static) -> Self {
        Self(Arc::new(now_ms))
    }

    /// The time now.
    pub fn now_ms(&self) -> u64 {
        (self.0)()
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Clock")
    }
}

/// Millionths in one.
const PPM: i128 = 1_000_000;

/// A worker's clock error: how far its own clock is off the world's and how
/// fast it drifts. Shared by the world (its clock faults set it) and the
/// worker's [`WorkerEnv::own_clock`] (which reads through it).
#[derive(Clone, Debug, Default)]
pub struct ClockError(Arc<Mutex<ClockErrorState>>);

#[derive(Clone, Copy, Debug, Default)]
struct ClockErrorState {
    /// Milliseconds ahead of the world's clock at `since_ms` (behind when
    /// negative).
    offset_ms: i64,
    /// Rate error from `since_ms` on, in millionths.
    drift_ppm: i64,
    /// World time the current drift started.
    since_ms: u64,
}

impl ClockErrorState {
    /// The error at world time `world_ms`.
    fn error_ms(&self, world_ms: u64) -> i64 {
        let elapsed = i128::from(world_ms.saturating_sub(self.since_ms));
        let drifted = elapsed * i128::from(self.drift_ppm) / PPM;
        i64::try_from(i128::from(self.offset_ms) + drifted).unwrap_or(i64::MAX)
    }
}

impl ClockError {
    fn state(&self) -> std::sync::MutexGuard<'_, ClockErrorState> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The clock steps by `jump_ms` at world time `now_ms`.
    pub fn jump(&self, now_ms: u64, jump_ms: i64) {
        let mut state = self.state();
        state.offset_ms = state.error_ms(now_ms).saturating_add(jump_ms);
        state.since_ms = now_ms;
    }

    /// From world time `now_ms` on, the clock drifts `drift_ppm`
    /// millionths (what it gained or lost so far stays).
    pub fn drift(&self, now_ms: u64, drift_ppm: i64) {
        let mut state = self.state();
        state.offset_ms = state.error_ms(now_ms);
        state.drift_ppm = drift_ppm;
        state.since_ms = now_ms;
    }

    /// What the erring clock reads at world time `world_ms` (never below 0).
    pub fn read(&self, world_ms: u64) -> u64 {
        let error_ms = self.state().error_ms(world_ms);
        u64::try_from(i128::from(world_ms) + i128::from(error_ms)).unwrap_or(0)
    }

    /// `world` read through this error: a worker's own clock.
    pub fn clock(&self, world: Clock) -> Clock {
        let error = self.clone();
        Clock::new(move || error.read(world.now_ms()))
    }
}

/// Storage access *without* the fence check, for protocols that skip it
/// (the `no-fence-check` and `app-side-fence-check` mutants). Writes still go
/// to the store's append-only log, so the checker sees what they did.
#[async_trait]
pub trait RawStore: Send + Sync {
    /// The resource's current fence (0 if it has none).
    async fn read_fence(&self, resource: &str) -> Result<i64, StoreError>;

    /// Writes `value` and sets the resource's fence to `fence`, whatever the
    /// fence was before; logged as accepted. Completes `job_id` if given.
    /// `NotFound` when the resource does not exist.
    async fn write_unchecked(
        &self,
        resource: &str,
        fence: i64,
        owner: &str,
        job_id: Option<&str>,
        value: &str,
    ) -> Result<WriteOutcome, StoreError>;
}

/// What a worker's job is given: its own connections, seeded randomness and
/// the world's clock.
#[derive(Clone)]
pub struct WorkerEnv {
    /// Worker index, `0..World::workers()`.
    pub index: usize,
    /// The worker's name in histories and traces (`w<index>`).
    pub name: String,
    /// This worker's Redis path (follows failover).
    pub redis: RedisConn,
    /// One Redis path per master, in master order (`Setup::masters`):
    /// master 0 is `redis` itself, masters 1.. independent servers.
    pub masters: Vec<RedisConn>,
    /// This worker's path to the fenced store.
    pub store: Arc<dyn FencedStore>,
    /// The same path, without the fence check (mutants only).
    pub raw_store: Arc<dyn RawStore>,
    /// A durable fence counter in the store (the Postgres fence source).
    pub store_fences: Arc<dyn FenceSource>,
    /// Owner tokens (seeded in the simulation).
    pub tokens: Arc<dyn TokenSource>,
    /// Backoff jitter (seeded in the simulation).
    pub jitter: Arc<dyn Jitter>,
    /// The world's clock: the harness records by it.
    pub clock: Clock,
    /// The worker's own clock, as its lock library reads the machine's:
    /// the world's clock plus the worker's clock error (the
    /// `JumpWorkerClock` and `DriftWorkerClock` faults), for lease-validity
    /// arithmetic. Never used for the history, which stays on `clock`.
    pub own_clock: Clock,
    /// Starts the worker's own tasks (a renewal task, say): they pause with
    /// the worker and die with it.
    pub spawner: Spawner,
    /// The worker's paths as addresses another process can dial, for a
    /// worker that is a process of its own (a lock adapter); `None` in the
    /// simulation, whose network only its own hosts can reach.
    pub paths: Option<WirePaths>,
    /// Where a worker's raw Redis traffic is reported to the whole-worker
    /// observer, for traffic that does not pass through [`WorkerEnv::redis`]
    /// (a lock adapter's own connections); set by the observer.
    pub wire_tap: Option<Arc<dyn WireObserver>>,
}

/// Takes a worker's raw Redis requests from something that carries them
/// byte for byte (a lock adapter's tap) and records them: implemented by
/// the whole-worker observer (`whole_worker::WireTap`).
pub trait WireObserver {
    /// Records `args` (one request, its command name first) if it names
    /// `lock_key`; the caller completes it when its reply, or the end of
    /// its connection, comes.
    fn request(&self, args: &[&[u8]], lock_key: &[u8]) -> Option<Box<dyn WireRequest>>;
}

/// A recorded request on its way.
pub trait WireRequest {
    /// Completes it with what came back.
    fn answered(self: Box<Self>, answer: WireAnswer);
}

/// How a request a [`WireObserver`] recorded ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireAnswer {
    /// A reply that is not an error.
    Replied,
    /// An error reply (a definite no).
    Error(String),
    /// The connection ended before the reply: the request may have run.
    Lost(String),
}

/// One worker's fault-injected paths, as addresses a separate process can
/// dial: what the real world hands a lock adapter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WirePaths {
    /// The worker's own Redis proxy, `host:port`.
    pub redis_addr: String,
    /// The worker's own PostgreSQL proxy, as a connection URL.
    pub postgres_url: String,
    /// With Sentinel deciding failovers: how the worker finds the master.
    pub sentinel: Option<SentinelPaths>,
}

/// How a worker of its own process finds the master through Sentinel and
/// still reaches every data node through its own fault-injected paths:
/// Sentinel answers with a node's real address, which the worker
/// translates with `routes` before it dials (dialling the real address
/// would bypass its faults).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SentinelPaths {
    /// The name the sentinels monitor the master under.
    pub master_name: String,
    /// The sentinels' addresses, `host:port`, asked in order. Direct: a
    /// fault on a worker's path is on its data, not on its questions.
    pub sentinels: Vec<String>,
    /// `(a data node's real address, the worker's path to it)`, one per
    /// data node.
    pub routes: Vec<(String, String)>,
}

/// What happens to a worker as a whole, for parts of it that are not
/// futures the world can freeze or drop (a lock adapter's process).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkerSignal {
    /// A stop-the-world pause began.
    Pause,
    /// The pause ended.
    Resume,
    /// The worker crashed.
    Kill,
}

/// Told each [`WorkerSignal`] of one worker.
pub type SignalHook = Arc<dyn Fn(WorkerSignal) + Send + Sync>;

/// Most hooks one worker's [`Spawner`] may hold: one process per worker.
pub const SIGNAL_HOOKS_MAX: usize = 4;

/// Most live tasks one worker may have spawned at once (finished ones do
/// not count): a worker runs a job and a renewal task or two, not a pool.
pub const WORKER_TASKS_MAX: usize = 64;

#[derive(Default)]
struct Tasks {
    /// Set by a crash: every task was aborted, and later spawns are too.
    dead: bool,
    live: Vec<AbortHandle>,
    /// Told of a crash (see [`Spawner::on_signal`]).
    kill_hooks: Vec<SignalHook>,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks")
            .field("dead", &self.dead)
            .field("live", &self.live.len())
            .field("kill_hooks", &self.kill_hooks.len())
            .finish()
    }
}

/// Starts tasks that belong to one worker, as a process's threads belong to
/// it: each is frozen by the worker's stop-the-world pause (the same
/// [`FreezeSwitch`] as the worker's job) and aborted when the worker
/// crashes.
///
/// Why the world hands this out rather than letting code call
/// `tokio::task::spawn_local`: turmoil 0.7 has no way to stop a host, and
/// a pause that froze only the job's own future would let a spawned
/// renewal task keep the lease alive through the pause — hiding exactly
/// the failure fencing exists for. Wrapping each spawned future in the
/// worker's switch stops every task of the worker at once, in both worlds,
/// without patching turmoil. Tasks must be spawned from inside the worker
/// (its job or its tasks): they run on the worker's own executor.
#[derive(Clone, Debug)]
pub struct Spawner {
    pause: FreezeSwitch,
    tasks: Arc<Mutex<Tasks>>,
}

impl Spawner {
    /// A spawner whose tasks freeze with `pause`.
    pub fn new(pause: FreezeSwitch) -> Self {
        Self {
            pause,
            tasks: Arc::default(),
        }
    }

    /// Starts `task` on the worker's executor. Its handle can abort it, as
    /// a worker stops its renewal task when the job ends.
    ///
    /// Panics past [`WORKER_TASKS_MAX`] live tasks (a runaway loop).
    pub fn spawn<F>(&self, task: F) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        // The task works for the job that started it (a renewal task for its
        // job's lease): the observer attributes its requests to that slot.
        let slot = crate::job_slot::current();
        let handle = tokio::task::spawn_local(self.pause.wrap(crate::job_slot::scope(slot, task)));
        let mut tasks = self.lock();
        if tasks.dead {
            // A crashed worker starts nothing.
            handle.abort();
            return handle;
        }
        tasks.live.retain(|h| !h.is_finished());
        assert!(
            tasks.live.len() < WORKER_TASKS_MAX,
            "a worker may run at most {WORKER_TASKS_MAX} tasks at once"
        );
        tasks.live.push(handle.abort_handle());
        handle
    }

    /// Aborts every task spawned so far and every later one: the worker
    /// crashed. Hooks hear [`WorkerSignal::Kill`].
    pub fn kill(&self) {
        let (live, hooks) = {
            let mut tasks = self.lock();
            let first = !tasks.dead;
            tasks.dead = true;
            let hooks = if first {
                tasks.kill_hooks.clone()
            } else {
                Vec::new()
            };
            (std::mem::take(&mut tasks.live), hooks)
        };
        for hook in hooks {
            hook(WorkerSignal::Kill);
        }
        for task in live {
            task.abort();
        }
    }

    /// Tells `hook` of the worker's pauses, resumes and crash from now on:
    /// how a part of the worker that is not a future — a lock adapter's
    /// process — stops, goes on and dies with it. A worker that already
    /// crashed tells it [`WorkerSignal::Kill`] at once.
    ///
    /// Panics past [`SIGNAL_HOOKS_MAX`] hooks.
    pub fn on_signal(&self, hook: SignalHook) {
        let dead = {
            let mut tasks = self.lock();
            assert!(
                tasks.kill_hooks.len() < SIGNAL_HOOKS_MAX,
                "at most {SIGNAL_HOOKS_MAX} signal hooks a worker"
            );
            tasks.kill_hooks.push(hook.clone());
            tasks.dead
        };
        if dead {
            hook(WorkerSignal::Kill);
            return;
        }
        let paused = hook.clone();
        self.pause.on_change(Arc::new(move |frozen| {
            paused(if frozen {
                WorkerSignal::Pause
            } else {
                WorkerSignal::Resume
            })
        }));
        if self.pause.is_frozen() {
            hook(WorkerSignal::Pause);
        }
    }

    /// How many spawned tasks are still running.
    pub fn live_tasks(&self) -> usize {
        let mut tasks = self.lock();
        tasks.live.retain(|h| !h.is_finished());
        tasks.live.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tasks> {
        self.tasks.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The value of a key on the current Redis primary, read out of band — the
/// harness's own view of what reached the server, never a worker's path.
/// Used inside a worker's task (so it need not be `Send`); `None` when the
/// key is absent or Redis cannot be read.
#[derive(Clone)]
pub struct Peek(Rc<dyn Fn(String) -> PeekFuture>);

/// What a [`Peek`] returns: the key's value, once read.
pub type PeekFuture = Pin<Box<dyn Future<Output = Option<String>>>>;

impl Peek {
    /// A peek running `read`.
    pub fn new(read: impl Fn(String) -> PeekFuture + 'static) -> Self {
        Self(Rc::new(read))
    }

    /// The key's value now.
    pub async fn get(&self, key: &str) -> Option<String> {
        (self.0)(key.to_owned()).await
    }
}

impl std::fmt::Debug for Peek {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Peek")
    }
}

/// Applies a worker fault when called (see [`World::trigger`]).
#[derive(Clone)]
pub struct Trigger(Arc<dyn Fn() + Send + Sync>);

impl Trigger {
    /// A trigger running `apply`.
    pub fn new(apply: impl Fn() + Send + Sync + 'static) -> Self {
        Self(Arc::new(apply))
    }

    /// Applies the fault now.
    pub fn fire(&self) {
        (self.0)()
    }
}

impl std::fmt::Debug for Trigger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Trigger")
    }
}

/// What a world knows about the servers' side of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Truth {
    /// The Redis ownership log of the lock key, in execution order, or `None`
    /// when the world has no server-side ownership log.
    pub redis: Option<Vec<OwnershipRecord>>,
    /// Why `redis` is `None`, in words for a verdict, when the world knows
    /// (a gap in a real server's recording).
    pub redis_gap: Option<String>,
    /// The store's fence log of the resource, in commit order, or `None`.
    pub store: Option<Vec<FenceRecord>>,
    /// What the servers did on their own (a Sentinel's failover), in time
    /// order, for the timeline.
    pub events: Vec<crate::history::ServerEvent>,
}

/// What a world could not do.
#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    /// No worker with that index.
    #[error("no worker {index}: the world has {workers}")]
    NoSuchWorker {
        /// The index asked for.
        index: usize,
        /// How many workers there are.
        workers: usize,
    },
    /// The world cannot inject this fault (e.g. fail over without a replica).
    #[error("this world cannot {what}: {why}")]
    Unsupported {
        /// The fault, in words.
        what: String,
        /// Why not.
        why: String,
    },
    /// The world broke (a server crashed, a step failed).
    #[error("the world failed: {0}")]
    Failed(String),
}

/// A scenario's environment. See the module doc.
pub trait World {
    /// Which kind of world this is.
    fn kind(&self) -> WorldKind;

    /// How many workers the world laid out.
    fn workers(&self) -> usize;

    /// How many independent Redis masters it runs (`WorldSpec::masters`).
    /// With more than one, the run is judged on their majority view
    /// (`redfence_history::majority`): the truth names master 0's records
    /// `redis` and master m's `redis-m`, as the simulation's hosts.
    fn masters(&self) -> usize {
        1
    }

    /// Starts worker `index` running `job` (each worker at most once).
    fn spawn_worker(&mut self, index: usize, job: WorkerJob) -> Result<(), WorldError>;

    /// Lets `ms` milliseconds pass (simulated or real).
    fn run_for(&mut self, ms: u64) -> Result<(), WorldError>;

    /// Milliseconds since the run started.
    fn now_ms(&self) -> u64;

    /// The clock workers read (the same timeline as [`World::now_ms`]).
    fn clock(&self) -> Clock;

    /// Whether worker `index`'s job has ended (finished or crashed).
    fn worker_done(&self, index: usize) -> Result<bool, WorldError>;

    /// Injects a fault now.
    fn inject(&mut self, fault: &Fault) -> Result<(), WorldError>;

    /// `fault` in the words the history records: what this world did,
    /// where that differs from the fault itself (an emulation says so).
    fn fault_words(&self, fault: &Fault) -> String {
        fault.describe()
    }

    /// A switch that applies `fault` — [`Fault::PauseWorker`] or
    /// [`Fault::CrashWorker`] — when called, from anywhere, including from
    /// inside the worker's own task. Scripts arm it on a phase (see
    /// `Stage::arm`), so a fault aimed at a phase shorter than a polling step
    /// (a write or an unlock takes about a millisecond on real servers) lands
    /// exactly there: the worker stops when its current poll yields.
    fn trigger(&mut self, fault: &Fault) -> Result<Trigger, WorldError>;

    /// The value of `key` on the current Redis primary, read out of band
    /// (not through any worker's path), so a script can act the moment a
    /// lock is set; `None` when the key does not exist or Redis is down.
    fn peek(&mut self, key: &str) -> Result<Option<String>, WorldError>;

    /// The value of `key` on the replica (the server that started as the
    /// replica), read out of band: what a failover would promote. A
    /// script reads it after cutting replication, to know what the
    /// promoted replica will hold. `None` when the key does not exist
    /// there or the replica does not answer; an error when the world has
    /// no replica.
    fn peek_replica(&mut self, key: &str) -> Result<Option<String>, WorldError>;

    /// [`World::peek`] as a handle usable inside a worker's task, where the
    /// whole-worker level reads which owner a command left holding the
    /// lock (`whole_worker`). With `masters` > 1 it reads the key on masters
    /// `0..masters` and returns the value a strict majority of them holds
    /// (`None` without one): who holds a lock kept on several masters.
    fn peeker(&mut self, masters: usize) -> Peek;

    /// The servers' ground truth for `lock_key` and `resource`.
    fn truth(&mut self, lock_key: &str, resource: &str) -> Result<Truth, WorldError>;
}

#[cfg(test)]
mod tests {
    use super::ClockError;

    #[test]
    fn a_clock_error_jumps_drifts_and_keeps_what_it_gained() {
        let error = ClockError::default();
        assert_eq!(error.read(1_000), 1_000, "no error by default");
        error.jump(1_000, 500);
        assert_eq!(error.read(1_000), 1_500);
        assert_eq!(error.read(3_000), 3_500, "a step, not a rate");
        // 10% fast from 3,000 ms on.
        error.drift(3_000, 100_000);
        assert_eq!(error.read(4_000), 4_600);
        // The drift stops; the 100 ms it gained stay.
        error.drift(4_000, 0);
        assert_eq!(error.read(10_000), 10_600);
        error.jump(10_000, -11_000);
        assert_eq!(
            error.read(10_000),
            0,
            "a clock stepped back reads 0 at worst"
        );
        // Half speed from there: 10,400 ms behind, losing 1 ms in 2.
        error.drift(10_000, -500_000);
        assert_eq!(error.read(12_000), 12_000 - 10_400 - 1_000);
        assert_eq!(error.read(30_000), 30_000 - 10_400 - 10_000);
    }
}
