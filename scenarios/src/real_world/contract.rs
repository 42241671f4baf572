//! [`World`] for [`RealWorld`]: spawning workers, letting time pass,
//! injecting faults through the cluster and its proxies, peeking at Redis,
//! and reading the ground truth the servers keep.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use redfence_chaos::Path;
use redfence_core::{
    FenceSource, FencedStore, PostgresFences, RandomUuidTokens, ResourceName, ThreadRngJitter,
};

use crate::conn::RedisConn;
use std::cell::RefCell;
use std::rc::Rc;

use redis::aio::MultiplexedConnection;

use crate::world::{
    worker_name, Clock, Fault, Peek, Trigger, Truth, WorkerEnv, WorkerJob, World, WorldError,
    WorldKind,
};

use super::*;

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
        let paths = self.wire_paths(index)?;
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
            masters: vec![RedisConn::new(conns.redis.clone())],
            redis: RedisConn::new(conns.redis),
            store: Arc::new(store.clone()) as Arc<dyn FencedStore>,
            raw_store: Arc::new(raw_store),
            store_fences: Arc::new(PostgresFences::new(store)) as Arc<dyn FenceSource>,
            tokens: Arc::new(RandomUuidTokens),
            jitter: Arc::new(ThreadRngJitter),
            own_clock: slot.clock_error.clock(clock.clone()),
            clock,
            spawner: slot.spawner.clone(),
            paths,
            wire_tap: None,
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

    fn fault_words(&self, fault: &Fault) -> String {
        match *fault {
            // The report must not pass the emulation off as the real thing.
            Fault::JumpRedisClock { jump_ms } => format!(
                "{} (emulated: the real server's clock cannot be moved here, so every \
                 key's remaining lifetime on it was cut by {jump_ms} ms at once)",
                fault.describe()
            ),
            _ => fault.describe(),
        }
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
                let spawner = slot.spawner.clone();
                Ok(Trigger::new(move || {
                    crashed.store(true, Ordering::SeqCst);
                    spawner.kill();
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

    fn peeker(&mut self, masters: usize) -> Peek {
        // One master: the real world refuses more before it starts.
        debug_assert_eq!(masters, 1);
        /// Reads of one peek before it gives up (each within the timeout).
        const PEEK_ATTEMPTS_MAX: usize = 3;
        // Read where the workers' traffic goes at the moment of each peek:
        // a failover re-points the proxies while the stage is still inside
        // it.
        let watch = self.cluster().primary_watch();
        let cached: Rc<RefCell<Option<(String, MultiplexedConnection)>>> = Rc::default();
        Peek::new(move |key| {
            let url = watch.url();
            let cached = cached.clone();
            Box::pin(async move {
                let url = url?;
                // The reply the worker just got came from this server, so
                // it is up: a cached connection that broke (a restart, a
                // failover) is replaced and the read tried again.
                for _ in 0..PEEK_ATTEMPTS_MAX {
                    let conn = cached.borrow_mut().take();
                    let read =
                        tokio::time::timeout(Duration::from_millis(PEEK_TIMEOUT_MS), async {
                            let mut conn = match conn {
                                Some((at, conn)) if at == url => conn,
                                _ => {
                                    redis::Client::open(url.as_str())?
                                        .get_multiplexed_async_connection()
                                        .await?
                                }
                            };
                            let value: Option<String> =
                                redis::cmd("GET").arg(&key).query_async(&mut conn).await?;
                            Ok::<_, redis::RedisError>((conn, value))
                        })
                        .await;
                    if let Ok(Ok((conn, value))) = read {
                        *cached.borrow_mut() = Some((url, conn));
                        return value;
                    }
                }
                None
            })
        })
    }

    fn truth(&mut self, lock_key: &str, resource: &str) -> Result<Truth, WorldError> {
        self.read_truth(lock_key, resource)
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
                slot.spawner.kill();
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
            Fault::SnapshotRedis => self.cluster_op(|c| c.snapshot_redis()),
            Fault::JumpRedisClock { jump_ms } => {
                self.cluster_op(|c| c.emulate_redis_clock_jump(jump_ms))
            }
            // One master is all the real world runs yet: master 0 is the
            // primary; any other is refused when the world is built.
            Fault::OnMaster {
                master: 0,
                ref fault,
            } => self.inject_now(fault),
            Fault::OnMaster { master, .. } => Err(WorldError::Unsupported {
                what: fault.describe(),
                why: format!("the real world runs one Redis master, not master {master}"),
            }),
            Fault::JumpWorkerClock { worker, jump_ms } => {
                let now_ms = self.now_ms();
                self.slot(worker)?.clock_error.jump(now_ms, jump_ms);
                Ok(())
            }
            Fault::DriftWorkerClock { worker, drift_ppm } => {
                let now_ms = self.now_ms();
                self.slot(worker)?.clock_error.drift(now_ms, drift_ppm);
                Ok(())
            }
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

    /// [`World::truth`]: Redis's from the nodes' `MONITOR` tapes
    /// (`redis_truth.rs`), the store's from PostgreSQL's fence log.
    fn read_truth(&mut self, _lock_key: &str, resource: &str) -> Result<Truth, WorldError> {
        let tapes = self.block_on(self.cluster().redis_tapes());
        let (redis, redis_gap) = match super::redis_truth::ownership_log(
            &tapes,
            self.started_wall_us,
            LOCK_KEY_PREFIX,
        ) {
            Ok(log) => (Some(log), None),
            Err(gap) => (None, Some(gap)),
        };
        let name = ResourceName::new(resource)
            .map_err(|e| WorldError::Failed(format!("resource {resource:?}: {e}")))?;
        let log = self
            .block_on(self.admin_store.fence_log(&name))
            .map_err(|e| WorldError::Failed(format!("reading the fence log: {e}")))?;
        let store = log
            .into_iter()
            .map(|entry| entry.into_record_us(self.started_wall_us))
            .collect();
        let events = self
            .cluster()
            .sentinel_events(self.started_wall_us)
            .into_iter()
            .map(|(at_ms, what)| crate::history::ServerEvent { at_ms, what })
            .collect();
        Ok(Truth {
            redis,
            redis_gap,
            store: Some(store),
            events,
        })
    }
}
