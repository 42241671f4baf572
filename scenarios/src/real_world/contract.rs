//! [`World`] for [`RealWorld`]: spawning workers, letting time pass,
//! injecting faults through the cluster and its proxies (on the primary or
//! on one of several masters), peeking at Redis (with several masters, at
//! what a strict majority of them holds), and reading the ground truth the
//! servers keep.

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

    fn masters(&self) -> usize {
        self.masters
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
            masters: std::iter::once(conns.redis.clone())
                .chain(conns.masters)
                .map(RedisConn::new)
                .collect(),
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
        // The report must not pass the emulation off as the real thing.
        let emulated = |jump_ms: u64, server: &str| {
            format!(
                "{} (emulated: the real server's clock cannot be moved here, so every \
                 key's remaining lifetime on {server} was cut by {jump_ms} ms at once)",
                fault.describe()
            )
        };
        match fault {
            Fault::JumpRedisClock { jump_ms } => emulated(*jump_ms, "it"),
            Fault::OnMaster { master, fault: on } => match **on {
                Fault::JumpRedisClock { jump_ms } => emulated(
                    jump_ms,
                    &format!(
                        "master {master} ({}) alone",
                        redfence_sim::world::master_host(*master)
                    ),
                ),
                // `describe` names the master: "stop redis (master 2)".
                _ => fault.describe(),
            },
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
        let (master, redis_fault) = match fault {
            Fault::OnMaster { master, fault } => (*master, &**fault),
            other => (0, other),
        };
        let closed = match *redis_fault {
            Fault::PartitionRedis(w)
            | Fault::HealRedis(w)
            | Fault::DropRedisReplies(w)
            | Fault::RestoreRedisReplies(w)
            | Fault::RedisLatency { worker: w, .. } => w..w + 1,
            Fault::StopRedis | Fault::RestartRedis | Fault::FailOver => 0..self.slots.len(),
            _ => 0..0,
        };
        // Also after a failed fault: it may have got halfway.
        self.redis_connections_closed(master, closed);
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

    fn peek_replica(&mut self, key: &str) -> Result<Option<String>, WorldError> {
        if !self.replica {
            return Err(WorldError::Unsupported {
                what: format!("reading {key} on the replica"),
                why: "the scenario's world has no replica".to_owned(),
            });
        }
        let url = self
            .cluster()
            .redis_node_url(RedisNode::Replica)
            .ok_or_else(|| WorldError::Failed("no direct URL for the replica".to_owned()))?;
        // A connection of its own: the read is rare (once per cut), and the
        // primary's cached one must not be re-pointed for it.
        let peeked = self.block_on(async {
            tokio::time::timeout(Duration::from_millis(REPLICA_PEEK_TIMEOUT_MS), async {
                let mut conn = redis::Client::open(url)?
                    .get_multiplexed_async_connection()
                    .await?;
                redis::cmd("GET")
                    .arg(key)
                    .query_async::<Option<String>>(&mut conn)
                    .await
            })
            .await
        });
        // The contract: `None` when the replica does not answer.
        Ok(match peeked {
            Ok(Ok(value)) => value,
            Ok(Err(_)) | Err(_) => None,
        })
    }

    fn peeker(&mut self, masters: usize) -> Peek {
        // The masters the lock is kept on (1 for a lock on master 0 alone).
        let masters = masters.clamp(1, self.masters);
        // Read where the workers' traffic goes at the moment of each peek:
        // a failover re-points the proxies while the stage is still inside
        // it.
        let watch = self.cluster().primary_watch();
        if masters == 1 {
            let cached = PeekConn::default();
            return Peek::new(move |key| {
                let url = watch.url();
                let cached = cached.clone();
                Box::pin(async move { cached.get(url?, &key).await })
            });
        }
        // Several masters: each read directly (never through a worker's
        // proxy, which a fault may hold), master 0 wherever it serves now.
        let others: Vec<Option<String>> = (1..masters)
            .map(|m| self.cluster().redis_node_url(RedisNode::Master(m)))
            .collect();
        let cached: Vec<PeekConn> = (0..masters).map(|_| PeekConn::default()).collect();
        Peek::new(move |key| {
            let urls: Vec<Option<String>> =
                std::iter::once(watch.url()).chain(others.clone()).collect();
            let cached = cached.clone();
            Box::pin(async move {
                let mut values = Vec::with_capacity(urls.len());
                for (url, conn) in urls.into_iter().zip(&cached) {
                    if let Some(url) = url {
                        values.push(conn.get(url, &key).await);
                    }
                }
                majority_value(values, cached.len())
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
            Fault::OnMaster { master, ref fault } => self.inject_on_master(master, fault),
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
                // Restored means what it means in the simulation, where the
                // held writes arrive at once: the replica follows again and
                // has everything the primary wrote. A real replica
                // reconnects on its own schedule (about once a second), so
                // wait for that, bounded; a promoted replica follows no one.
                self.cluster_op(|c| async move {
                    c.restore_replication().await?;
                    if c.current_primary().await == RedisNode::Replica {
                        return Ok(());
                    }
                    c.wait_for_replication(RESTORE_WAIT_MS).await
                })
            }
            Fault::FailOver => {
                self.needs_replica(fault)?;
                self.cluster_op(|c| c.fail_over())
            }
        }
    }

    /// A Redis fault on master `master` alone (0: the primary, wherever it
    /// serves now). Refused as the simulation refuses them: a master that
    /// does not exist, and faults that are not about one master's server or
    /// one worker's path to it (replication, failover, workers, the store).
    fn inject_on_master(&mut self, master: usize, fault: &Fault) -> Result<(), WorldError> {
        if master >= self.masters {
            // The simulation's words for it.
            return Err(WorldError::Failed(format!(
                "master {master} does not exist (the world has {})",
                self.masters
            )));
        }
        let path = Path::master(master);
        match *fault {
            Fault::PartitionRedis(w) => self.cluster_op(|c| c.partition(w, path)),
            Fault::HealRedis(w) => self.cluster_op(|c| c.heal(w, path)),
            Fault::DropRedisReplies(w) => self.cluster_op(|c| c.drop_replies(w, path)),
            Fault::RestoreRedisReplies(w) => self.cluster_op(|c| c.restore_replies(w, path)),
            Fault::RedisLatency { worker, latency_ms } => {
                let latency_ms = u32::try_from(latency_ms).map_err(|_| {
                    WorldError::Failed(format!("latency {latency_ms} ms is too large"))
                })?;
                self.cluster_op(|c| c.set_latency(worker, path, latency_ms))
            }
            Fault::StopRedis => self.cluster_op(|c| c.stop_master(master)),
            Fault::RestartRedis => self.cluster_op(|c| c.restart_master(master)),
            Fault::SnapshotRedis => self.cluster_op(|c| c.snapshot_master(master)),
            Fault::JumpRedisClock { jump_ms } => {
                self.cluster_op(|c| c.emulate_master_clock_jump(master, jump_ms))
            }
            ref other => Err(WorldError::Unsupported {
                what: other.describe(),
                why: "only a Redis fault can hit one master".to_owned(),
            }),
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
        let mut tapes = self.block_on(self.cluster().redis_tapes());
        if !self.replica {
            // The providers start a replica for every world; one the script
            // did not ask for is invisible to it (no client uses it, no fault
            // reaches it, nothing promotes it), as in the simulation, which
            // has none. Its copy of a lock is no lease: a holder whose key
            // died with the primary does not hold it on the replica.
            tapes.retain(|tape| tape.node != RedisNode::Replica);
        }
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

/// Reads of one peek of one server before it gives up (each within the
/// timeout).
const PEEK_ATTEMPTS_MAX: usize = 3;

/// A peek's connection to one server, kept between peeks (a worker peeks
/// after every command) and replaced when it broke or the server moved.
#[derive(Clone, Default)]
struct PeekConn(Rc<RefCell<Option<(String, MultiplexedConnection)>>>);

impl PeekConn {
    /// `GET key` on the server at `url`; `None` when it is absent or the
    /// server does not answer.
    async fn get(&self, url: String, key: &str) -> Option<String> {
        // The reply the worker just got came from this server, so it is up:
        // a cached connection that broke (a restart, a failover) is
        // replaced and the read tried again.
        for _ in 0..PEEK_ATTEMPTS_MAX {
            let conn = self.0.borrow_mut().take();
            let read = tokio::time::timeout(Duration::from_millis(PEEK_TIMEOUT_MS), async {
                let mut conn = match conn {
                    Some((at, conn)) if at == url => conn,
                    _ => {
                        redis::Client::open(url.as_str())?
                            .get_multiplexed_async_connection()
                            .await?
                    }
                };
                let value: Option<String> =
                    redis::cmd("GET").arg(key).query_async(&mut conn).await?;
                Ok::<_, redis::RedisError>((conn, value))
            })
            .await;
            if let Ok(Ok((conn, value))) = read {
                *self.0.borrow_mut() = Some((url, conn));
                return value;
            }
        }
        None
    }
}

/// The value a strict majority of `masters` masters holds, of the values
/// read (`None` for a key absent or a master down, which count for no
/// value); `None` when no value has a majority — as the majority view
/// (`redfence_history::majority`) decides who holds the lock.
fn majority_value(values: Vec<Option<String>>, masters: usize) -> Option<String> {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for value in values.into_iter().flatten() {
        match counts.iter_mut().find(|(v, _)| *v == value) {
            Some((_, n)) => *n += 1,
            None => counts.push((value, 1)),
        }
    }
    counts
        .into_iter()
        .find(|(_, n)| *n > masters / 2)
        .map(|(value, _)| value)
}

#[cfg(test)]
mod tests {
    use super::majority_value;

    #[test]
    fn the_majority_value_needs_a_strict_majority_of_all_masters() {
        let of = |vs: &[Option<&str>]| -> Vec<Option<String>> {
            vs.iter().map(|v| v.map(str::to_owned)).collect()
        };
        assert_eq!(
            majority_value(of(&[Some("a"), Some("a"), Some("b")]), 3),
            Some("a".to_owned())
        );
        assert_eq!(majority_value(of(&[Some("a"), None, Some("b")]), 3), None);
        // A master down counts against every value, not for one.
        assert_eq!(majority_value(of(&[Some("a"), Some("b")]), 3), None);
        assert_eq!(
            majority_value(of(&[Some("a"), Some("a")]), 3),
            Some("a".to_owned())
        );
        assert_eq!(
            majority_value(of(&[Some("a"), Some("a"), None, None]), 4),
            None,
            "half is not a majority"
        );
        assert_eq!(majority_value(of(&[None, None, None]), 3), None);
    }
}
