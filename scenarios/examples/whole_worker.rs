//! Verify a team's *whole worker*: its own retry loop, its own renewal task,
//! its own job flow — plugged in at the whole-worker level
//! ([`Plug::Worker`]) and put through every scenario with one call,
//! [`verify`].
//!
//! The worker here is written the way many services write one: acquire with
//! a Lua script (`INCR` a fence counter, then `SET PX` the lock, only if
//! free) in a retry loop with exponential backoff and full jitter; once it
//! holds the lock, a renewal task **spawned** next to the job extends the
//! lease every interval with a compare-and-`PEXPIRE` and stops at the hold
//! limit; the job does its work, checks the renewal task's "lost" flag,
//! writes through the store's fenced, idempotent `apply_job`, then stops
//! the renewal task and releases with a compare-and-delete. It uses only
//! the handles the world gives it ([`WorkerEnv`]) — the task goes through
//! `env.spawner`, so a stop-the-world pause freezes it with the job.
//!
//! The harness owns none of that flow; it watches what reaches Redis and
//! the store. The run finds the two things this worker gets wrong (see
//! [`FINDINGS`], each with its fix); everything else holds. Run it:
//! `cargo run -p redfence-scenarios --example whole_worker`. It exits
//! non-zero if the findings differ (the test suite runs it).

use std::cell::Cell;
use std::process::ExitCode;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use redfence_core::{
    Fence, FencedStore, FencedWrite, Jitter, JobId, JobOutcome, JobWrite, LockConfig, OwnerToken,
    ResourceName, TokenSource,
};
use redfence_scenarios::conn::RedisConn;
use redfence_scenarios::history::JobReport;
use redfence_scenarios::protocol::{Job, JobRunner, Plug, Protocol};
use redfence_scenarios::sweep::verify;
use redfence_scenarios::world::{Spawner, WorkerEnv};
use redfence_scenarios::{names, Property};
use redis::{Script, Value};

#[path = "common/findings.rs"]
mod findings;

/// Fence first, lock second, only when free; answers the fence or nil.
const ACQUIRE: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 1 then return false end
local fence = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return fence
"#;

/// Extends the lease only if it is still ours.
const RENEW: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"#;

/// Deletes the lock only if it is still ours.
const RELEASE: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"#;

/// Most acquire attempts per job.
const ATTEMPTS_MAX: u32 = 30;

/// The protocol: a name, and a whole worker per worker.
struct QueueWorker;

impl Protocol for QueueWorker {
    fn name(&self) -> &str {
        "queue-worker"
    }

    fn describe(&self) -> &str {
        "an example team's worker: scripted acquire in a jittered retry loop, a spawned \
         renewal task, fenced idempotent write, compare-and-delete"
    }

    fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug {
        Plug::Worker(Box::new(Runner {
            redis: env.redis.clone(),
            store: env.store.clone(),
            tokens: env.tokens.clone(),
            jitter: env.jitter.clone(),
            spawner: env.spawner.clone(),
            config: config.clone(),
        }))
    }
}

struct Runner {
    redis: RedisConn,
    store: Arc<dyn FencedStore>,
    tokens: Arc<dyn TokenSource>,
    jitter: Arc<dyn Jitter>,
    spawner: Spawner,
    config: LockConfig,
}

/// Why a Redis call gave no usable answer.
enum CallError {
    /// It did not run (refused, error reply).
    Failed,
    /// It may have run (timeout, broken connection).
    Unknown,
}

/// One script call, bounded by the operation timeout.
async fn call(
    redis: &RedisConn,
    op_timeout_ms: u64,
    script: &str,
    keys: &[&str],
    args: &[String],
) -> Result<Value, CallError> {
    let script = Script::new(script);
    let mut invocation = script.prepare_invoke();
    for key in keys {
        invocation.key(*key);
    }
    for arg in args {
        invocation.arg(arg.as_str());
    }
    let mut conn = redis.clone();
    match tokio::time::timeout(
        Duration::from_millis(op_timeout_ms),
        invocation.invoke_async::<Value>(&mut conn),
    )
    .await
    {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) if e.is_timeout() || e.is_io_error() || e.is_connection_dropped() => {
            Err(CallError::Unknown)
        }
        Ok(Err(_)) => Err(CallError::Failed),
        Err(_) => Err(CallError::Unknown),
    }
}

#[async_trait(?Send)]
impl JobRunner for Runner {
    async fn run(&self, job: &Job) -> JobReport {
        let Ok(resource) = ResourceName::new(job.resource.as_str()) else {
            return JobReport::Failed;
        };
        let lock_key = self.config.keys().lock_key(&resource);
        let fence_key = self.config.keys().fence_key(&resource);
        let op_timeout_ms = self.config.op_timeout_ms();
        let lease_ms = self.config.lease_ms();

        // Acquire: our own retry loop, exponential backoff, full jitter.
        let owner = self.tokens.next_token();
        let args = [owner.as_str().to_owned(), lease_ms.to_string()];
        let mut fence = None;
        for attempt in 0..ATTEMPTS_MAX {
            match call(
                &self.redis,
                op_timeout_ms,
                ACQUIRE,
                &[&lock_key, &fence_key],
                &args,
            )
            .await
            {
                Ok(Value::Int(issued)) => {
                    fence = Some(issued);
                    break;
                }
                Ok(_) => {
                    let window_ms = (20_u64 << attempt.min(4)).min(200);
                    let pause_ms = self.jitter.draw_ms(window_ms);
                    tokio::time::sleep(Duration::from_millis(pause_ms)).await;
                }
                // Fail closed: we may hold the lock, but cannot know; the
                // lease expires on its own.
                Err(_) => return JobReport::Failed,
            }
        }
        let Some(fence) = fence else {
            return JobReport::RetryLater;
        };

        // Renew from a task of our own, spawned next to the job.
        let lost = Rc::new(Cell::new(false));
        let renewal = {
            let (redis, lost) = (self.redis.clone(), lost.clone());
            let (lock_key, owner) = (lock_key.clone(), owner.as_str().to_owned());
            let interval = Duration::from_millis(self.config.renew_interval_ms());
            let renewals_max = (self.config.hold_ms_max() / self.config.renew_interval_ms()).max(1);
            self.spawner.spawn(async move {
                for _ in 0..renewals_max {
                    tokio::time::sleep(interval).await;
                    let args = [owner.clone(), lease_ms.to_string()];
                    match call(&redis, op_timeout_ms, RENEW, &[&lock_key], &args).await {
                        Ok(Value::Int(1)) => {}
                        Ok(_) => {
                            lost.set(true);
                            return;
                        }
                        Err(_) => {}
                    }
                }
            })
        };

        job.work().await;
        let report = if lost.get() {
            JobReport::OwnershipLost
        } else {
            self.write(job, &resource, fence, &owner).await
        };

        renewal.abort();
        let args = [owner.as_str().to_owned()];
        // Best effort: a release that fails leaves a lease that expires.
        let _ = call(&self.redis, op_timeout_ms, RELEASE, &[&lock_key], &args).await;
        report
    }
}

impl Runner {
    async fn write(
        &self,
        job: &Job,
        resource: &ResourceName,
        fence: i64,
        owner: &OwnerToken,
    ) -> JobReport {
        let (Ok(job_id), Ok(fence_value)) = (JobId::new(job.job_id.as_str()), Fence::new(fence))
        else {
            return JobReport::Failed;
        };
        let write = JobWrite {
            job_id,
            write: FencedWrite {
                resource: resource.clone(),
                fence: fence_value,
                owner: owner.clone(),
                value: job.value("queue-worker", Some(fence)),
            },
        };
        match self.store.apply_job(&write).await {
            Ok(JobOutcome::Applied) => JobReport::Success,
            Ok(JobOutcome::AlreadyDone) => JobReport::AlreadyDone,
            Ok(JobOutcome::Stale { .. }) => JobReport::OwnershipLost,
            Ok(JobOutcome::NotFound) | Err(_) => JobReport::Failed,
        }
    }
}

/// What the run finds in this worker, and the fix for each.
const FINDINGS: &[findings::Finding] = &[
    (
        names::scenario::RENEWAL_LIMITS,
        Property::BoundedLiveness,
        "the renewal task stops after hold-ms-max / interval renewals, but each grants a whole \
         lease from when it runs, so the lock outlives the hold limit by up to a lease: \
         shorten the last renewal to end at acquire + hold-ms-max",
    ),
    (
        names::scenario::FAILOVER_COUNTER_REGRESSION,
        Property::FenceUniqueness,
        "fences come from a Redis counter, which regresses across a failover: take them \
         from a durable counter in the database",
    ),
];

fn main() -> ExitCode {
    // The one call: every scenario, 20 seeds each, in the simulation.
    let result = verify(Arc::new(QueueWorker), 20);
    findings::judge(&result, FINDINGS, "queue-worker", "two")
}
