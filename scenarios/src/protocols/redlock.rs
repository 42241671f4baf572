//! Redlock — a lock kept on a majority of N independent Redis masters —
//! written from the algorithm as published ("Distributed locks with Redis",
//! redis.io), at the whole-worker level, in three forms:
//!
//! - `redlock` (a mutant: unsafe by design): the algorithm alone, no fence.
//!   The store behind it has nothing to check, as the stores behind
//!   redlock-py, node-redlock or Redisson's `RedissonRedLock` users have.
//! - `redlock-fenced`: the same lock, and a fence from the durable store
//!   (`WorkerEnv::store_fences`, a counter in PostgreSQL), checked by the
//!   store on the write — the remedy the algorithm's critics and the
//!   design article ask for. The fence is drawn *before* each attempt's
//!   `SET`s: drawn after, a pause between the lock and the fence would let
//!   a stale holder draw a fence above its successor's and defeat it.
//! - `redlock-half-quorum` (a mutant): fenced, but the lock counts as held
//!   on `N/2` masters instead of `N/2 + 1` — the off-by-one of a quorum
//!   written as `n / 2` that Redlock ports have shipped and fixed. Two
//!   clients on the two sides of a partition both hold it.
//!
//! Each job, as the algorithm says:
//!
//! 1. (fenced) draw a fence; draw a random owner value; read the worker's
//!    own clock (`own_clock`: a jump or a drift of the worker's machine
//!    clock reaches the lease arithmetic, as it does a real library);
//! 2. `SET key value NX PX lease` on every master at once (the published
//!    text's advice: multiplexing), each with a short timeout
//!    (a tenth of the lease, [`MASTER_TIMEOUT_PER_LEASE`]) so a dead
//!    master costs little;
//! 3. held when a quorum said OK and time is left: `validity = lease −
//!    elapsed − drift`, drift = 1% of the lease + 2 ms (the factor the
//!    reference implementations use);
//! 4. otherwise unlock on **every** master (also those that did not
//!    answer: the SET may have landed) and retry after a random delay, at
//!    most `attempts_max` times;
//! 5. while the job runs, extend the lock every `renew_interval_ms` from a
//!    task of the worker's own (as the published text describes and
//!    Redisson's watchdog or node-redlock's auto-extension do): a
//!    compare-and-`PEXPIRE` on every master at once, good only on a quorum;
//!    a failed extension means the lock is lost; the extensions stop at
//!    the hold limit, the last one shortened to end there;
//! 6. after the work, write unless an extension found the lock lost —
//!    without other checks, as the libraries' documented usage does (a
//!    check only narrows the window: a pause right after it is the same);
//! 7. unlock on every master (compare-and-delete).
//!
//! What it cannot do, and the scenarios show: a pause during the work, a
//! master's clock that jumps, a master that restarts and forgets — each
//! lets a second client gather a majority while the first still believes
//! it holds the lock. Only the fence stops the stale write.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use redfence_core::{
    Fence, FenceSource, FencedStore, FencedWrite, Jitter, JobId, JobOutcome, JobWrite, LockConfig,
    OwnerToken, ResourceName, TokenSource, WriteOutcome,
};

use crate::conn::RedisConn;
use crate::history::JobReport;
use crate::job_slot::{join_all, SlotFuture};
use crate::names;
use crate::protocol::{Job, JobRunner, Plug, Protocol};
use crate::world::{Clock, RawStore, Spawner, WorkerEnv};

/// How long one master may take to answer a `SET`, an extension or an
/// unlock, as a fraction of the lease: small against it, so a dead master
/// does not eat the validity (the published text: 5–50 ms for a 10 s
/// lease), and enough for a fresh connection (a connect and the client's
/// handshake take three round trips; at 50 ms for a 1 s lease the
/// simulation's 10 ms steps timed out every reconnect, and each timeout
/// drops the connection).
pub const MASTER_TIMEOUT_PER_LEASE: u64 = 10;
/// The clock drift allowance, per mille of the lease (the reference
/// implementations' factor 0.01).
const DRIFT_PER_MILLE: u64 = 10;
/// Added to the drift allowance (the reference implementations' 2 ms).
const DRIFT_FLOOR_MS: u64 = 2;
/// Retries wait a random delay up to this (redlock-py's `retry_delay`).
pub const RETRY_DELAY_MS_MAX: u64 = 200;

/// The compare-and-`PEXPIRE` Redlock implementations extend with.
const EXTEND_LUA: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then \
                          return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";

/// The compare-and-delete every Redlock implementation releases with.
const UNLOCK_LUA: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then \
                          return redis.call('del', KEYS[1]) else return 0 end";

/// How a variant counts and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Variant {
    /// A fence from the durable store, checked by the store.
    fenced: bool,
    /// Held on `N/2` masters instead of `N/2 + 1` (the mutant).
    half_quorum: bool,
}

/// `redlock`: the published algorithm, no fence.
#[derive(Clone, Copy, Debug, Default)]
pub struct Redlock;

/// `redlock-fenced`: the published algorithm and a store-checked fence.
#[derive(Clone, Copy, Debug, Default)]
pub struct RedlockFenced;

/// `redlock-half-quorum`: fenced, and a quorum one short of a majority.
#[derive(Clone, Copy, Debug, Default)]
pub struct RedlockHalfQuorum;

impl Protocol for Redlock {
    fn name(&self) -> &str {
        names::mutant::REDLOCK
    }

    fn describe(&self) -> &str {
        "Redlock as published: SET NX PX on every master with a short timeout, held on a \
         majority with validity = lease − elapsed − drift, unlock everywhere; no fence, so a \
         holder that outlives its validity (a pause, a master's clock jump, a master that \
         forgets) still writes"
    }

    fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug {
        plug(
            env,
            config,
            Variant {
                fenced: false,
                half_quorum: false,
            },
        )
    }

    fn spans_masters(&self) -> bool {
        true
    }
}

impl Protocol for RedlockFenced {
    fn name(&self) -> &str {
        names::protocol::REDLOCK_FENCED
    }

    fn describe(&self) -> &str {
        "Redlock as published, plus a fence from the durable store drawn before each attempt \
         and checked by the store on the write: two holders can still overlap, a stale write \
         cannot land"
    }

    fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug {
        plug(
            env,
            config,
            Variant {
                fenced: true,
                half_quorum: false,
            },
        )
    }

    fn spans_masters(&self) -> bool {
        true
    }
}

impl Protocol for RedlockHalfQuorum {
    fn name(&self) -> &str {
        names::mutant::REDLOCK_HALF_QUORUM
    }

    fn describe(&self) -> &str {
        "fenced Redlock whose quorum is N/2 instead of N/2 + 1: a client that reaches only a \
         minority of the masters believes it holds the lock"
    }

    fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug {
        plug(
            env,
            config,
            Variant {
                fenced: true,
                half_quorum: true,
            },
        )
    }

    fn spans_masters(&self) -> bool {
        true
    }
}

fn plug(env: &WorkerEnv, config: &LockConfig, variant: Variant) -> Plug {
    assert!(!env.masters.is_empty(), "a world has at least one master");
    Plug::Worker(Box::new(RedlockWorker {
        masters: env.masters.clone(),
        store: env.store.clone(),
        raw_store: env.raw_store.clone(),
        fences: env.store_fences.clone(),
        tokens: env.tokens.clone(),
        jitter: env.jitter.clone(),
        own_clock: env.own_clock.clone(),
        lock_key_of: config.keys().clone(),
        lease_ms: config.lease_ms(),
        renew_interval_ms: config.renew_interval_ms(),
        hold_ms_max: config.hold_ms_max(),
        renewals_max: config.renewals_max(),
        attempts_max: config.attempts_max(),
        spawner: env.spawner.clone(),
        name: env.name.clone(),
        variant,
    }))
}

/// One worker's Redlock client.
struct RedlockWorker {
    masters: Vec<RedisConn>,
    store: Arc<dyn FencedStore>,
    raw_store: Arc<dyn RawStore>,
    fences: Arc<dyn FenceSource>,
    tokens: Arc<dyn TokenSource>,
    jitter: Arc<dyn Jitter>,
    own_clock: Clock,
    lock_key_of: redfence_core::KeyScheme,
    lease_ms: u64,
    renew_interval_ms: u64,
    hold_ms_max: u64,
    renewals_max: u32,
    attempts_max: u32,
    spawner: Spawner,
    name: String,
    variant: Variant,
}

/// A lock held, as the algorithm hands it back.
struct Held {
    owner: OwnerToken,
    /// What is left of the lease after the acquisition, by the worker's
    /// own clock (`lease − elapsed − drift`).
    validity_ms: u64,
    /// The fenced variants' fence, drawn before the attempt's `SET`s.
    fence: Option<Fence>,
}

/// Why an attempt did not hold the lock.
enum Missed {
    /// Contended, too slow, or a master short: try again.
    NotHeld,
    /// No fence could be drawn: fail closed, nothing was taken.
    NoFence,
}

impl RedlockWorker {
    /// How long one master may take to answer.
    fn master_timeout_ms(&self) -> u64 {
        (self.lease_ms / MASTER_TIMEOUT_PER_LEASE).max(1)
    }

    /// Masters that must say OK.
    fn quorum(&self) -> usize {
        let n = self.masters.len();
        if self.variant.half_quorum {
            // The bug: at least one, but one short of a majority for odd N.
            (n / 2).max(1)
        } else {
            n / 2 + 1
        }
    }

    /// One acquisition round (steps 1–4).
    async fn try_lock(&self, key: &str, resource: &ResourceName) -> Result<Held, Missed> {
        let fence = if self.variant.fenced {
            match self.fences.fence_for(resource, None).await {
                Ok(fence) => Some(fence),
                Err(_) => return Err(Missed::NoFence),
            }
        } else {
            None
        };
        let owner = self.tokens.next_token();
        let started_ms = self.own_clock.now_ms();
        let set = redis::cmd("SET")
            .arg(key)
            .arg(owner.as_str())
            .arg("NX")
            .arg("PX")
            .arg(self.lease_ms)
            .to_owned();
        let oks = on_every_master(
            &self.masters,
            self.master_timeout_ms(),
            |mut conn| {
                let set = set.clone();
                async move { set.query_async(&mut conn).await }
            },
            |reply| *reply == redis::Value::Okay,
        )
        .await;
        let elapsed_ms = self.own_clock.now_ms().saturating_sub(started_ms);
        let drift_ms = self.lease_ms * DRIFT_PER_MILLE / 1_000 + DRIFT_FLOOR_MS;
        let validity_ms = self.lease_ms.saturating_sub(elapsed_ms + drift_ms);
        if oks >= self.quorum() && validity_ms > 0 {
            return Ok(Held {
                owner,
                validity_ms,
                fence,
            });
        }
        self.unlock(key, &owner).await;
        Err(Missed::NotHeld)
    }

    /// Starts the task that extends `held` on every master until the hold
    /// limit (step 5); `lost` is set when an extension misses the quorum.
    fn keep_extended(
        &self,
        key: &str,
        held: &Held,
        lost: &Rc<Cell<bool>>,
    ) -> tokio::task::JoinHandle<()> {
        let (masters, quorum) = (self.masters.clone(), self.quorum());
        let timeout_ms = self.master_timeout_ms();
        let (key, owner, lost) = (key.to_owned(), held.owner.clone(), lost.clone());
        let interval = Duration::from_millis(self.renew_interval_ms);
        let (lease_ms, hold_ms_max) = (self.lease_ms, self.hold_ms_max);
        let renewals_max = self.renewals_max;
        self.spawner.spawn(async move {
            let started = tokio::time::Instant::now();
            let script = redis::Script::new(EXTEND_LUA);
            // Bounded by the renewal limit.
            for _ in 0..renewals_max {
                tokio::time::sleep(interval).await;
                let held_ms = started.elapsed().as_millis() as u64;
                let left_ms = hold_ms_max.saturating_sub(held_ms);
                if left_ms == 0 {
                    return;
                }
                let ttl_ms = lease_ms.min(left_ms);
                let oks = on_every_master(
                    &masters,
                    timeout_ms,
                    |mut conn| {
                        let mut invocation = script.key(&key);
                        invocation.arg(owner.as_str()).arg(ttl_ms);
                        async move { invocation.invoke_async(&mut conn).await }
                    },
                    |reply| *reply == redis::Value::Int(1),
                )
                .await;
                if oks < quorum {
                    lost.set(true);
                    return;
                }
            }
        })
    }

    /// Compare-and-delete on every master, each bounded by the timeout:
    /// best effort, as every implementation does (a key left behind
    /// expires).
    async fn unlock(&self, key: &str, owner: &OwnerToken) {
        let script = redis::Script::new(UNLOCK_LUA);
        // Best effort: what a master answered changes nothing.
        on_every_master(
            &self.masters,
            self.master_timeout_ms(),
            |mut conn| {
                let mut invocation = script.key(key);
                invocation.arg(owner.as_str());
                async move { invocation.invoke_async(&mut conn).await }
            },
            |_| true,
        )
        .await;
    }

    /// The protected write: fenced through the store's check, or plain
    /// (idempotent by the job's id, checked just before it, as a team's
    /// store without fences would be).
    async fn write(&self, job: &Job, resource: &ResourceName, held: &Held) -> JobReport {
        debug_assert_eq!(held.fence.is_some(), self.variant.fenced);
        let Ok(job_id) = JobId::new(job.job_id.as_str()) else {
            return JobReport::Failed;
        };
        if let Some(fence) = held.fence {
            let write = JobWrite {
                job_id,
                write: FencedWrite {
                    resource: resource.clone(),
                    fence,
                    owner: held.owner.clone(),
                    value: job.value(&self.name, Some(fence.get())),
                },
            };
            return match self.store.apply_job(&write).await {
                Ok(JobOutcome::Applied) => JobReport::Success,
                Ok(JobOutcome::AlreadyDone) => JobReport::AlreadyDone,
                Ok(JobOutcome::Stale { .. }) => JobReport::OwnershipLost,
                Ok(JobOutcome::NotFound) | Err(_) => JobReport::Failed,
            };
        }
        match self.store.is_completed(&job_id).await {
            Ok(true) => return JobReport::AlreadyDone,
            Ok(false) => {}
            Err(_) => return JobReport::Failed,
        }
        match self
            .raw_store
            .write_unchecked(
                resource.as_str(),
                0,
                held.owner.as_str(),
                Some(job_id.as_str()),
                &job.value(&self.name, None),
            )
            .await
        {
            Ok(WriteOutcome::Accepted) => JobReport::Success,
            Ok(WriteOutcome::Stale { .. }) => JobReport::OwnershipLost,
            Ok(WriteOutcome::NotFound) | Err(_) => JobReport::Failed,
        }
    }
}

#[async_trait(?Send)]
impl JobRunner for RedlockWorker {
    async fn run(&self, job: &Job) -> JobReport {
        let Ok(resource) = ResourceName::new(job.resource.as_str()) else {
            return JobReport::Failed;
        };
        let key = self.lock_key_of.lock_key(&resource);
        let mut held = None;
        // Bounded by the configured attempts.
        for attempt in 0..self.attempts_max {
            if attempt > 0 {
                let delay_ms = self.jitter.draw_ms(RETRY_DELAY_MS_MAX);
                tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            }
            match self.try_lock(&key, &resource).await {
                Ok(lock) => {
                    held = Some(lock);
                    break;
                }
                Err(Missed::NotHeld) => {}
                Err(Missed::NoFence) => return JobReport::Failed,
            }
        }
        let Some(held) = held else {
            return JobReport::RetryLater;
        };
        debug_assert!(held.validity_ms > 0, "held only with time left");
        let lost = Rc::new(Cell::new(false));
        let extension = self.keep_extended(&key, &held, &lost);
        job.work().await;
        let report = if lost.get() {
            JobReport::OwnershipLost
        } else {
            self.write(job, &resource, &held).await
        };
        extension.abort();
        self.unlock(&key, &held.owner).await;
        report
    }
}

/// Sends `request` to every master at once — the published text's advice
/// (multiplexing): a dead master costs one timeout, not one each — each
/// bounded by `timeout_ms`; how many answered in time with a
/// reply `ok` accepts.
async fn on_every_master<F, Fut>(
    masters: &[RedisConn],
    timeout_ms: u64,
    request: F,
    ok: impl Fn(&redis::Value) -> bool,
) -> usize
where
    F: Fn(RedisConn) -> Fut,
    Fut: std::future::Future<Output = redis::RedisResult<redis::Value>>,
{
    let replies = masters.iter().map(|master| {
        let reply = request(master.clone());
        let bounded: SlotFuture<'_, Option<redis::Value>> = Box::pin(async move {
            let reply = tokio::time::timeout(Duration::from_millis(timeout_ms), reply).await;
            reply.ok().and_then(Result::ok)
        });
        bounded
    });
    join_all(replies.collect())
        .await
        .iter()
        .filter(|reply| reply.as_ref().is_some_and(&ok))
        .count()
}
