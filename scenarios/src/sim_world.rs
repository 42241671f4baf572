//! `SimWorld`: the deterministic simulation (`redfence-sim`) as a [`World`].
//!
//! A thin adapter: the simulation already lays out one host per worker, the
//! Redis primary (and replica), the fenced store, and implements every fault;
//! this module maps the contract onto it and turns the simulated servers'
//! logs into the history's ground truth. Same seed, same run: the world's
//! turmoil RNG, owner tokens and jitter all derive from the seed.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use redfence_core::{FencedStore, ResourceName, StoreError, WriteOutcome};
use redfence_sim::store::{SimStoreClient, SimStoreFences};
use redfence_sim::world::{World as Sim, WorldBuilder};

use crate::conn::RedisConn;
use crate::run::{WorldFactory, WorldSpec};
use crate::world::{
    worker_name, Clock, ClockError, Fault, Peek, RawStore, Spawner, Trigger, Truth, WorkerEnv,
    WorkerJob, World, WorldError, WorldKind,
};

/// Applies a Redis fault to master `master` of the simulation.
fn on_master(sim: &mut Sim, master: usize, fault: &Fault) -> Result<(), WorldError> {
    let applied = match *fault {
        Fault::PartitionRedis(w) => sim.partition_worker_master(w, master),
        Fault::HealRedis(w) => sim.heal_worker_master(w, master),
        Fault::DropRedisReplies(w) => sim.drop_master_replies(w, master),
        Fault::RestoreRedisReplies(w) => sim.restore_master_replies(w, master),
        Fault::RedisLatency { worker, latency_ms } => {
            sim.set_master_latency(worker, master, Duration::from_millis(latency_ms))
        }
        Fault::StopRedis => sim.stop_master(master),
        Fault::RestartRedis => sim.restart_master(master),
        Fault::SnapshotRedis => sim.snapshot_master(master),
        Fault::JumpRedisClock { jump_ms } => sim.jump_master_clock(master, jump_ms),
        ref other => {
            return Err(WorldError::Unsupported {
                what: other.describe(),
                why: "only a Redis fault can hit one master".to_owned(),
            })
        }
    };
    applied.map_err(sim_error)
}

/// Builds simulated worlds.
#[derive(Clone, Copy, Debug, Default)]
pub struct SimWorlds;

impl WorldFactory for SimWorlds {
    fn kind(&self) -> WorldKind {
        WorldKind::Sim
    }

    fn build(&self, spec: &WorldSpec) -> Result<Box<dyn World>, WorldError> {
        Ok(Box::new(SimWorld::new(spec)?))
    }
}

/// Builds simulated worlds that poll every host every tick, as turmoil does
/// by itself: the same runs, byte for byte, as [`SimWorlds`] (which skips
/// the poll of a host with nothing to do), only slower. The baseline of the
/// harness bench and of the sweep-digest test.
#[derive(Clone, Copy, Debug, Default)]
pub struct PolledSimWorlds;

impl WorldFactory for PolledSimWorlds {
    fn kind(&self) -> WorldKind {
        WorldKind::Sim
    }

    fn build(&self, spec: &WorldSpec) -> Result<Box<dyn World>, WorldError> {
        Ok(Box::new(SimWorld::build(spec, false)?))
    }
}

/// The simulation behind the [`World`] contract.
pub struct SimWorld {
    sim: Sim,
    /// Per worker: the spawner its tasks go through, made up front so a
    /// crash armed before the worker starts still reaches its tasks.
    spawners: Vec<Spawner>,
    /// Per worker: its own clock's error (the worker clock faults).
    clock_errors: Vec<ClockError>,
}

impl SimWorld {
    /// A simulated world laid out as `spec` asks.
    pub fn new(spec: &WorldSpec) -> Result<Self, WorldError> {
        Self::build(spec, true)
    }

    /// [`SimWorld::new`], with the idle fast path on or off
    /// ([`WorldBuilder::idle_fast_path`]).
    fn build(spec: &WorldSpec, idle_fast_path: bool) -> Result<Self, WorldError> {
        // Nothing here reads the servers' command log: the history is the
        // recorder's and the ownership log's.
        let sim = WorldBuilder::new(spec.seed)
            .idle_fast_path(idle_fast_path)
            .record_commands(false)
            .tick_for_lease(spec.lease_ms)
            .latency_ms(spec.latency_ms.0, spec.latency_ms.1)
            .workers(spec.workers)
            .replica(spec.replica)
            .masters(spec.masters)
            .duration_ms_max(spec.duration_ms_max)
            .store_op_timeout_ms(spec.op_timeout_ms)
            .build()
            .map_err(sim_error)?;
        let spawners = (0..sim.worker_count())
            .map(|index| {
                let (pause, _) = sim.worker_switches(index).map_err(sim_error)?;
                Ok(Spawner::new(pause))
            })
            .collect::<Result<Vec<_>, WorldError>>()?;
        // One each: cloning one would share it (it is a shared handle).
        let clock_errors = (0..spawners.len()).map(|_| ClockError::default()).collect();
        Ok(Self {
            sim,
            spawners,
            clock_errors,
        })
    }

    fn clock_error(&self, index: usize) -> Result<&ClockError, WorldError> {
        self.clock_errors
            .get(index)
            .ok_or(WorldError::NoSuchWorker {
                index,
                workers: self.clock_errors.len(),
            })
    }

    fn spawner(&self, index: usize) -> Result<&Spawner, WorldError> {
        self.spawners.get(index).ok_or(WorldError::NoSuchWorker {
            index,
            workers: self.spawners.len(),
        })
    }

    /// The simulation itself (its trace and command log, for replays).
    pub fn sim(&self) -> &Sim {
        &self.sim
    }
}

fn sim_error(error: redfence_sim::world::WorldError) -> WorldError {
    use redfence_sim::world::WorldError as E;
    match error {
        E::NoSuchWorker { index, workers } => WorldError::NoSuchWorker { index, workers },
        E::NoReplica => WorldError::Unsupported {
            what: "fail over or touch replication".to_owned(),
            why: "the scenario's world has no replica".to_owned(),
        },
        other => WorldError::Failed(other.to_string()),
    }
}

/// The simulated store without the fence check (mutants only).
struct SimRawStore(SimStoreClient);

#[async_trait]
impl RawStore for SimRawStore {
    async fn read_fence(&self, resource: &str) -> Result<i64, StoreError> {
        let name = ResourceName::new(resource)?;
        Ok(self.0.read(&name).await?.map_or(0, |(_, fence)| fence))
    }

    async fn write_unchecked(
        &self,
        resource: &str,
        fence: i64,
        owner: &str,
        job_id: Option<&str>,
        value: &str,
    ) -> Result<WriteOutcome, StoreError> {
        self.0
            .write_unchecked(resource, fence, owner, job_id, value)
            .await
    }
}

impl World for SimWorld {
    fn kind(&self) -> WorldKind {
        WorldKind::Sim
    }

    fn workers(&self) -> usize {
        self.sim.worker_count()
    }

    fn masters(&self) -> usize {
        self.sim.master_count()
    }

    fn spawn_worker(&mut self, index: usize, job: WorkerJob) -> Result<(), WorldError> {
        let clock = self.clock();
        let spawner = self.spawner(index)?.clone();
        let own_clock = self.clock_errors[index].clock(clock.clone());
        self.sim
            .spawn_worker(index, move |ctx| {
                let env = WorkerEnv {
                    index,
                    name: worker_name(index),
                    redis: RedisConn::new(ctx.redis.clone()),
                    masters: ctx.masters.iter().cloned().map(RedisConn::new).collect(),
                    store: Arc::new(ctx.store.clone()) as Arc<dyn FencedStore>,
                    raw_store: Arc::new(SimRawStore(ctx.store.clone())),
                    store_fences: Arc::new(SimStoreFences::new(ctx.store.clone())),
                    tokens: ctx.tokens.clone(),
                    jitter: ctx.jitter.clone(),
                    clock,
                    own_clock,
                    spawner,
                    paths: None,
                    wire_tap: None,
                };
                job(env)
            })
            .map_err(sim_error)
    }

    fn run_for(&mut self, ms: u64) -> Result<(), WorldError> {
        self.sim
            .run_for(Duration::from_millis(ms))
            .map_err(sim_error)
    }

    fn now_ms(&self) -> u64 {
        self.sim.elapsed().as_millis() as u64
    }

    fn clock(&self) -> Clock {
        Clock::new(redfence_sim::trace::now_ms)
    }

    fn worker_done(&self, index: usize) -> Result<bool, WorldError> {
        self.sim.worker_done(index).map_err(sim_error)
    }

    fn inject(&mut self, fault: &Fault) -> Result<(), WorldError> {
        let sim = &mut self.sim;
        match *fault {
            Fault::PauseWorker(w) => sim.pause_worker(w),
            Fault::ResumeWorker(w) => sim.resume_worker(w),
            Fault::CrashWorker(w) => {
                if let Some(spawner) = self.spawners.get(w) {
                    spawner.kill();
                }
                sim.crash_worker(w)
            }
            Fault::PartitionRedis(w) => sim.partition_worker_redis(w),
            Fault::HealRedis(w) => sim.heal_worker_redis(w),
            Fault::PartitionStore(w) => sim.partition_worker_store(w),
            Fault::HealStore(w) => sim.heal_worker_store(w),
            Fault::DropRedisReplies(w) => sim.drop_redis_replies(w),
            Fault::RestoreRedisReplies(w) => sim.restore_redis_replies(w),
            Fault::DropStoreReplies(w) => sim.drop_store_replies(w),
            Fault::RestoreStoreReplies(w) => sim.restore_store_replies(w),
            Fault::RedisLatency { worker, latency_ms } => {
                sim.set_redis_latency(worker, Duration::from_millis(latency_ms))
            }
            Fault::StopRedis => {
                sim.stop_redis();
                Ok(())
            }
            Fault::SnapshotRedis => sim.snapshot_redis(),
            Fault::JumpRedisClock { jump_ms } => {
                sim.jump_redis_clock(jump_ms);
                Ok(())
            }
            Fault::OnMaster { master, ref fault } => return on_master(sim, master, fault),
            Fault::JumpWorkerClock { worker, jump_ms } => {
                let now_ms = sim.elapsed().as_millis() as u64;
                self.clock_error(worker)?.jump(now_ms, jump_ms);
                self.sim
                    .trace()
                    .record_at(now_ms, "world", fault.describe());
                Ok(())
            }
            Fault::DriftWorkerClock { worker, drift_ppm } => {
                let now_ms = sim.elapsed().as_millis() as u64;
                self.clock_error(worker)?.drift(now_ms, drift_ppm);
                self.sim
                    .trace()
                    .record_at(now_ms, "world", fault.describe());
                Ok(())
            }
            Fault::RestartRedis => {
                sim.restart_redis();
                Ok(())
            }
            Fault::CutReplication => sim.cut_replication(),
            Fault::RestoreReplication => sim.restore_replication(),
            Fault::FailOver => sim.fail_over(),
        }
        .map_err(sim_error)
    }

    fn trigger(&mut self, fault: &Fault) -> Result<Trigger, WorldError> {
        match *fault {
            Fault::PauseWorker(w) => {
                let (pause, _) = self.sim.worker_switches(w).map_err(sim_error)?;
                Ok(Trigger::new(move || pause.freeze()))
            }
            Fault::CrashWorker(w) => {
                let (_, kill) = self.sim.worker_switches(w).map_err(sim_error)?;
                let spawner = self.spawner(w)?.clone();
                Ok(Trigger::new(move || {
                    spawner.kill();
                    kill.kill();
                }))
            }
            ref other => Err(WorldError::Unsupported {
                what: other.describe(),
                why: "only a pause or a crash can be armed on a phase".to_owned(),
            }),
        }
    }

    fn peek(&mut self, key: &str) -> Result<Option<String>, WorldError> {
        let primary = match self.sim.replica() {
            Ok(replica) if replica.is_primary() => replica,
            _ => self.sim.primary(),
        };
        Ok(primary
            .get(key)
            .map(|value| String::from_utf8_lossy(&value).into_owned()))
    }

    fn peek_replica(&mut self, key: &str) -> Result<Option<String>, WorldError> {
        let replica = self.sim.replica().map_err(sim_error)?;
        Ok(replica
            .get(key)
            .map(|value| String::from_utf8_lossy(&value).into_owned()))
    }

    fn peeker(&mut self, masters: usize) -> Peek {
        let primary = self.sim.primary().clone();
        let replica = self.sim.replica().ok().cloned();
        // Masters 1.. (none with one master): independent servers.
        let others: Vec<_> = (1..masters.min(self.sim.master_count()))
            .filter_map(|m| self.sim.master(m).ok().cloned())
            .collect();
        Peek::new(move |key| {
            // The same choice as `peek`: a promoted replica is the primary.
            let server = match &replica {
                Some(replica) if replica.is_primary() => replica,
                _ => &primary,
            };
            let read = |server: &redfence_sim::redis::RedisHandle| {
                server
                    .get(&key)
                    .map(|value| String::from_utf8_lossy(&value).into_owned())
            };
            let values: Vec<Option<String>> = std::iter::once(server)
                .chain(others.iter())
                .map(read)
                .collect();
            Box::pin(std::future::ready(majority_value(values)))
        })
    }

    fn truth(&mut self, lock_key: &str, resource: &str) -> Result<Truth, WorldError> {
        let redis = self
            .sim
            .ownership()
            .events()
            .into_iter()
            .filter(|record| record.key == lock_key)
            .collect();
        let store = self
            .sim
            .store()
            .fence_log(resource)
            .into_iter()
            // The simulated store's clock starts with the run.
            .map(|entry| entry.into_record(0))
            .collect();
        Ok(Truth {
            redis: Some(redis),
            redis_gap: None,
            events: Vec::new(),
            store: Some(store),
        })
    }
}

/// The value a strict majority of `values` (one per master) holds, if any:
/// who holds a lock kept on several masters (with one, its value).
pub(crate) fn majority_value(values: Vec<Option<String>>) -> Option<String> {
    let quorum = values.len() / 2 + 1;
    let mut counts: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for value in values.into_iter().flatten() {
        *counts.entry(value).or_default() += 1;
    }
    counts
        .into_iter()
        .find(|&(_, count)| count >= quorum)
        .map(|(value, _)| value)
}
