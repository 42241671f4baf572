//! The stage: what a scenario script holds while it runs — the world, the
//! protocol under test, the lock configuration, the recorder and one probe
//! per worker.
//!
//! Scripts call [`Stage::spawn`] to start workers on the standard flow (see
//! `driver`), [`Stage::run_for`] / [`Stage::run_until`] to let time pass,
//! and [`Stage::fault`] to inject faults, which are recorded in the history
//! with their time. [`Stage::finish`] collects the servers' ground truth and
//! returns the history the checker judges.

use std::sync::Arc;

use redfence_core::LockConfig;
use redfence_history::majority::majority_view;
use redfence_sim::world::master_host;

use crate::conn::RedisConn;
use crate::driver::{run_worker, Phase, Probe, WorkerPlan};
use crate::history::{ContentionBounds, FaultRecord, History, Limits};
use crate::protocol::{Plug, Protocol};
use crate::recorder::Recorder;
use crate::whole_worker::{run_whole_worker, Observer};
use crate::world::{Fault, Trigger, WorkerEnv, WorkerFuture, World, WorldError};

/// Step of [`Stage::run_until`]: fine enough to land a fault within a few
/// milliseconds of a worker reaching a phase.
pub const POLL_STEP_MS: u64 = 2;

/// Everything a scenario script works with.
pub struct Stage<'w> {
    world: &'w mut dyn World,
    protocol: Arc<dyn Protocol>,
    config: LockConfig,
    resource: String,
    recorder: Recorder,
    probes: Vec<Probe>,
    tolerance_ms: u64,
    contention: Option<ContentionBounds>,
}

impl<'w> Stage<'w> {
    /// A stage on `world` for `protocol` configured by `config`, contending
    /// for `resource`. `tolerance_ms` is the slack the checker grants time
    /// bounds (network delay and clock granularity in this world).
    pub fn new(
        world: &'w mut dyn World,
        protocol: Arc<dyn Protocol>,
        config: LockConfig,
        resource: &str,
        tolerance_ms: u64,
    ) -> Self {
        let recorder = Recorder::new(world.clock());
        let probes = (0..world.workers()).map(|_| Probe::default()).collect();
        Self {
            world,
            protocol,
            config,
            resource: resource.to_owned(),
            recorder,
            probes,
            tolerance_ms,
            contention: None,
        }
    }

    /// The protected resource.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The lock configuration of the run.
    pub fn config(&self) -> &LockConfig {
        &self.config
    }

    /// The recorder (for scripts that record their own steps).
    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    /// Worker `index`'s probe.
    pub fn probe(&self, index: usize) -> &Probe {
        &self.probes[index]
    }

    /// Worker `index`'s phase.
    pub fn phase(&self, index: usize) -> Phase {
        self.probes[index].phase()
    }

    /// Milliseconds since the run started.
    pub fn now_ms(&self) -> u64 {
        self.world.now_ms()
    }

    /// Whether worker `index`'s job has ended (finished or crashed).
    pub fn world_done(&self, index: usize) -> Result<bool, WorldError> {
        self.world.worker_done(index)
    }

    /// How many workers the world has.
    pub fn workers(&self) -> usize {
        self.world.workers()
    }

    /// Starts worker `index` on `plan`: at the step level through the
    /// harness's flow (`driver`), at the whole-worker level through the
    /// protocol's own (`whole_worker`), whichever the protocol plugs in at.
    pub fn spawn(&mut self, index: usize, plan: WorkerPlan) -> Result<(), WorldError> {
        let protocol = self.protocol.clone();
        let config = self.config.clone();
        let recorder = self.recorder.clone();
        let probe = self.probes[index].clone();
        let lock_key = self.lock_key()?;
        let peek = self.world.peeker(self.lock_masters());
        plan.check();
        self.world.spawn_worker(
            index,
            Box::new(move |env: WorkerEnv| {
                let warm_up = warm_up(env.redis.clone(), config.op_timeout_ms());
                let observer = Observer::new(
                    &env.name,
                    plan.jobs_at_once,
                    recorder.clone(),
                    probe.clone(),
                );
                let observed = observer.observe(env);
                let flow: WorkerFuture = match protocol.plug(&observed, &config) {
                    Plug::Steps(first) => {
                        // One session per job slot: the harness's flow runs
                        // in each, over the worker's shared handles.
                        let mut sessions = vec![first];
                        for _ in 1..plan.jobs_at_once {
                            match protocol.plug(&observed, &config) {
                                Plug::Steps(session) => sessions.push(session),
                                Plug::Worker(_) => {
                                    panic!("a protocol plugs in at one level for every worker")
                                }
                            }
                        }
                        Box::pin(run_worker(observed, sessions, recorder, probe, plan))
                    }
                    Plug::Worker(runner) => Box::pin(run_whole_worker(
                        observed, runner, observer, peek, lock_key, plan,
                    )),
                };
                Box::pin(async move {
                    warm_up.await;
                    flow.await;
                })
            }),
        )
    }

    /// Starts worker `index` on a custom job (for steps outside the
    /// standard flow, e.g. an operator corrupting a key).
    pub fn spawn_job(
        &mut self,
        index: usize,
        job: crate::world::WorkerJob,
    ) -> Result<(), WorldError> {
        self.world.spawn_worker(index, job)
    }

    /// Lets `ms` pass.
    pub fn run_for(&mut self, ms: u64) -> Result<(), WorldError> {
        self.world.run_for(ms)
    }

    /// Lets time pass until `done` says so or `limit_ms` has passed;
    /// returns whether `done` became true.
    pub fn run_until(
        &mut self,
        limit_ms: u64,
        done: impl Fn(&Stage<'_>) -> bool,
    ) -> Result<bool, WorldError> {
        let deadline_ms = self.world.now_ms() + limit_ms;
        // Bounded by the deadline: each turn advances time by a step.
        while self.world.now_ms() < deadline_ms {
            if done(self) {
                return Ok(true);
            }
            self.world.run_for(POLL_STEP_MS)?;
        }
        Ok(done(self))
    }

    /// Lets time pass until the lock key exists on the Redis primary (or
    /// `limit_ms`); returns whether it does.
    pub fn run_until_locked(&mut self, limit_ms: u64) -> Result<bool, WorldError> {
        let key = self.lock_key()?;
        let deadline_ms = self.world.now_ms() + limit_ms;
        // Bounded by the deadline.
        while self.world.now_ms() < deadline_ms {
            if self.world.peek(&key)?.is_some() {
                return Ok(true);
            }
            self.world.run_for(POLL_STEP_MS)?;
        }
        Ok(self.world.peek(&key)?.is_some())
    }

    /// Whether the replica holds the resource's lock key (read out of
    /// band): after a replication cut, whether a failover would promote a
    /// server on which someone holds the lock.
    pub fn replica_holds_lock(&mut self) -> Result<bool, WorldError> {
        let key = self.lock_key()?;
        Ok(self.world.peek_replica(&key)?.is_some())
    }

    /// The lock key of the resource.
    pub fn lock_key(&self) -> Result<String, WorldError> {
        let name = crate::protocols::resource_name(&self.resource)
            .map_err(|e| WorldError::Failed(format!("resource {:?}: {e}", self.resource)))?;
        Ok(self.config.keys().lock_key(&name))
    }

    /// Lets time pass until worker `index` reaches `phase` (or `limit_ms`).
    pub fn run_until_phase(
        &mut self,
        index: usize,
        phase: Phase,
        limit_ms: u64,
    ) -> Result<bool, WorldError> {
        self.run_until(limit_ms, |stage| stage.phase(index) == phase)
    }

    /// Lets time pass until every worker is done (or `limit_ms`).
    pub fn run_until_done(&mut self, limit_ms: u64) -> Result<bool, WorldError> {
        let workers = self.world.workers();
        let deadline_ms = self.world.now_ms() + limit_ms;
        // Bounded by the deadline.
        while self.world.now_ms() < deadline_ms {
            let mut all = true;
            for index in 0..workers {
                all &= self.world.worker_done(index)?;
            }
            if all {
                return Ok(true);
            }
            self.world.run_for(POLL_STEP_MS.max(10))?;
        }
        Ok(false)
    }

    /// Arms `fault` (a pause or a crash of worker `index`) to fire inside
    /// the worker the moment it enters `phase`, once, and be recorded then.
    /// A write or an unlock lasts about a millisecond on real servers —
    /// shorter than any polling step — so faults aimed at them are armed,
    /// not polled for. See [`Probe::fired`].
    pub fn arm(&mut self, index: usize, phase: Phase, fault: Fault) -> Result<(), WorldError> {
        assert_eq!(
            fault.worker(),
            Some(index),
            "an armed fault hits its own worker"
        );
        let trigger = self.world.trigger(&fault)?;
        let recorder = self.recorder.clone();
        let clock = self.world.clock();
        let words = self.world.fault_words(&fault);
        self.probes[index].arm(
            phase,
            Trigger::new(move || {
                recorder.fault(clock.now_ms(), &fault, words.clone());
                trigger.fire();
            }),
        );
        Ok(())
    }

    /// Holds the run to `bounds` on what contention may cost (the
    /// `contention` property); scenarios built to create load set them.
    pub fn bound_contention(&mut self, bounds: ContentionBounds) {
        self.contention = Some(bounds);
    }

    /// Injects `fault` now and records it.
    pub fn fault(&mut self, fault: Fault) -> Result<(), WorldError> {
        self.world.inject(&fault)?;
        let words = self.world.fault_words(&fault);
        self.recorder.fault(self.world.now_ms(), &fault, words);
        Ok(())
    }

    /// The masters the lock under test is kept on: all of the world's for
    /// a lock that spans them, else master 0 alone.
    fn lock_masters(&self) -> usize {
        if self.protocol.spans_masters() {
            self.world.masters()
        } else {
            1
        }
    }

    /// Ends the run: collects the servers' truth and builds the history.
    pub fn finish(self) -> Result<History, WorldError> {
        let lock_key = self.lock_key()?;
        let truth = self.world.truth(&lock_key, &self.resource)?;
        // Several masters: the lock is held where a majority holds it.
        let masters = self.lock_masters();
        let (ops, faults) = self.recorder.snapshot();
        let redis_truth = truth.redis.map(|log| {
            if masters > 1 {
                let names: Vec<String> = (0..masters).map(master_host).collect();
                let restarts = master_restarts(&faults);
                majority_view(&log, &names, &restarts, self.config.lease_ms())
            } else {
                log
            }
        });
        let mut end_ms = self.world.now_ms();
        for op in &ops {
            end_ms = end_ms.max(op.invoke_ms).max(op.complete_ms.unwrap_or(0));
        }
        Ok(History {
            resource: self.resource,
            limits: Limits {
                lease_ms: self.config.lease_ms(),
                hold_ms_max: self.config.hold_ms_max(),
                renewals_max: self.config.renewals_max(),
                tolerance_ms: self.tolerance_ms,
                acquire_deadline_ms: self.config.acquire_deadline_ms(),
            },
            ops,
            redis_truth,
            redis_truth_gap: truth.redis_gap,
            server_events: truth.events,
            store_truth: truth.store,
            faults,
            end_ms,
            contention: self.contention,
        })
    }
}

/// Opens a worker's Redis connection before its first job, as a service's
/// connection is up before it takes work: a fault a script injects right
/// after spawning then hits the lock's own commands, not the connection's
/// handshake. Bounded by one operation timeout; a failure is left for the
/// lock to meet (it reconnects on its first command).
async fn warm_up(redis: RedisConn, op_timeout_ms: u64) {
    let mut conn = redis;
    let ping = redis::cmd("PING");
    let _ = tokio::time::timeout(
        std::time::Duration::from_millis(op_timeout_ms),
        redis::aio::ConnectionLike::req_packed_command(&mut conn, &ping),
    )
    .await;
}

/// When each master was restarted (its host name, the moment), from the
/// recorded faults: a crashed master's copy of the lock counts for the
/// majority view until then (see `redfence_history::majority`).
fn master_restarts(faults: &[FaultRecord]) -> Vec<(String, u64)> {
    faults
        .iter()
        .filter_map(|record| match &record.fault {
            Fault::RestartRedis => Some((master_host(0), record.at_ms)),
            Fault::OnMaster { master, fault } if **fault == Fault::RestartRedis => {
                Some((master_host(*master), record.at_ms))
            }
            _ => None,
        })
        .collect()
}
