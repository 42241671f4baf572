//! Verify *your* lock protocol: implement [`Protocol`] and [`Session`] for
//! it, then put it through every scenario with one call, [`verify`].
//!
//! The lock here is a small one a team might write: `SET NX PX` plus an
//! `INCR`ed fence in one Lua script, compare-and-delete and
//! compare-and-PEXPIRE scripts, and writes through the store's fenced,
//! idempotent `apply_job`. It is written from scratch (it does not use
//! redfence-core's lock client) to show what a team plugs in. The same
//! shape wraps a third-party crate: each method does one step on the wire.
//!
//! The lock has two bugs hand-written locks often have, and the run finds
//! exactly those (see [`FINDINGS`] for each and its fix): that is what
//! putting your own lock through redfence looks like. Run it:
//! `cargo run -p redfence-scenarios --example own_protocol`. It prints one
//! line per scenario — failures with the violated property, why, and the
//! command that replays it — and exits non-zero if the findings differ from
//! the two documented here (the test suite runs it). (It also gives up at
//! once when an acquire's reply is lost; that is failing closed during a
//! fault, which is safe, and the harness does not count it against it.)

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use redfence_core::{
    Fence, FencedStore, FencedWrite, JobId, JobOutcome, JobWrite, LockConfig, OwnerToken,
    ResourceName, TokenSource,
};
use redfence_scenarios::conn::RedisConn;
use redfence_scenarios::protocol::{
    Acquire, Held, Plug, Protocol, RenewalPolicy, Session, StepError, WriteResult,
};
use redfence_scenarios::sweep::verify;
use redfence_scenarios::world::WorkerEnv;
use redfence_scenarios::{names, Property};
use redis::{Script, Value};

#[path = "common/findings.rs"]
mod findings;

/// Lock + fence in one step; answers `{fence}` or nothing when held.
const ACQUIRE: &str = r#"
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return tonumber(redis.call('GET', KEYS[2]))
end
return false
"#;
const RELEASE: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"#;
const RENEW: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"#;

/// The protocol: a name, and a step-level session per worker.
struct TeamLock;

impl Protocol for TeamLock {
    fn name(&self) -> &str {
        "team-lock"
    }

    fn describe(&self) -> &str {
        "an example team's own lock: SET NX PX + INCR in one script, scripted unlock and renew"
    }

    fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug {
        Plug::Steps(Box::new(TeamSession {
            redis: env.redis.clone(),
            store: env.store.clone(),
            tokens: env.tokens.clone(),
            config: config.clone(),
        }))
    }
}

struct TeamSession {
    redis: RedisConn,
    store: Arc<dyn FencedStore>,
    tokens: Arc<dyn TokenSource>,
    config: LockConfig,
}

impl TeamSession {
    fn keys(&self, resource: &str) -> Result<(String, String), StepError> {
        let name = ResourceName::new(resource).map_err(|e| StepError::Failed(e.to_string()))?;
        Ok((
            self.config.keys().lock_key(&name),
            self.config.keys().fence_key(&name),
        ))
    }

    /// One script call, bounded by the operation timeout; a timeout or a
    /// broken connection is indeterminate, an error reply definite.
    async fn call(&self, script: &str, keys: &[&str], args: &[String]) -> Result<Value, StepError> {
        let script = Script::new(script);
        let mut invocation = script.prepare_invoke();
        for key in keys {
            invocation.key(*key);
        }
        for arg in args {
            invocation.arg(arg);
        }
        let mut conn = self.redis.clone();
        let timeout = Duration::from_millis(self.config.op_timeout_ms());
        match tokio::time::timeout(timeout, invocation.invoke_async::<Value>(&mut conn)).await {
            Err(_) => Err(StepError::Indeterminate("no reply in time".into())),
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e))
                if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ResponseError) =>
            {
                Err(StepError::Failed(e.to_string()))
            }
            Ok(Err(e)) if e.is_connection_refusal() => Err(StepError::Failed(e.to_string())),
            Ok(Err(e)) => Err(StepError::Indeterminate(e.to_string())),
        }
    }
}

#[async_trait(?Send)]
impl Session for TeamSession {
    fn next_owner(&mut self) -> String {
        self.tokens.next_token().as_str().to_owned()
    }

    async fn acquire(&mut self, resource: &str, owner: &str) -> Result<Acquire, StepError> {
        let (lock, fence) = self.keys(resource)?;
        let lease = self.config.lease_ms().to_string();
        match self
            .call(ACQUIRE, &[&lock, &fence], &[owner.into(), lease])
            .await?
        {
            Value::Int(fence) => Ok(Acquire::Acquired(Held {
                resource: resource.to_owned(),
                owner: owner.to_owned(),
                fence: Some(fence),
            })),
            Value::Nil => Ok(Acquire::Contended),
            other => Err(StepError::Failed(format!(
                "unexpected acquire reply {other:?}"
            ))),
        }
    }

    async fn renew(&mut self, held: &Held, lease_ms: u64) -> Result<bool, StepError> {
        let (lock, _) = self.keys(&held.resource)?;
        let reply = self
            .call(RENEW, &[&lock], &[held.owner.clone(), lease_ms.to_string()])
            .await?;
        Ok(reply == Value::Int(1))
    }

    async fn release(&mut self, held: &Held) -> Result<bool, StepError> {
        let (lock, _) = self.keys(&held.resource)?;
        let reply = self
            .call(RELEASE, &[&lock], std::slice::from_ref(&held.owner))
            .await?;
        Ok(reply == Value::Int(1))
    }

    async fn write(
        &mut self,
        held: &Held,
        job_id: &str,
        value: &str,
    ) -> Result<WriteResult, StepError> {
        let failed = |e: &dyn std::fmt::Display| StepError::Failed(e.to_string());
        let job = JobWrite {
            job_id: JobId::new(job_id).map_err(|e| failed(&e))?,
            write: FencedWrite {
                resource: ResourceName::new(held.resource.as_str()).map_err(|e| failed(&e))?,
                fence: Fence::new(held.fence.unwrap_or(0)).map_err(|e| failed(&e))?,
                owner: OwnerToken::new(held.owner.as_str()).map_err(|e| failed(&e))?,
                value: value.to_owned(),
            },
        };
        match self.store.apply_job(&job).await {
            Ok(JobOutcome::Applied) => Ok(WriteResult::Applied),
            Ok(JobOutcome::AlreadyDone) => Ok(WriteResult::AlreadyDone),
            Ok(JobOutcome::Stale { last_fence }) => Ok(WriteResult::Stale { last_fence }),
            Ok(JobOutcome::NotFound) => Ok(WriteResult::NotFound),
            // Whether a failed store call committed is unknown to the client.
            Err(e) => Err(StepError::Indeterminate(e.to_string())),
        }
    }

    fn renewal(&self) -> RenewalPolicy {
        RenewalPolicy {
            interval_ms: self.config.renew_interval_ms(),
            lease_ms: self.config.lease_ms(),
            hold_ms_max: Some(self.config.hold_ms_max()),
            renewals_max: Some(self.config.renewals_max()),
        }
    }
}

/// What the run finds in `TeamLock` — two classic bugs a lock written by
/// hand tends to have — and how to fix each.
const FINDINGS: &[findings::Finding] = &[
    (
        names::scenario::REDIS_UNAVAILABLE,
        Property::FailClosed,
        "the script SETs before it INCRs, and Redis does not roll back a script that errors \
         halfway: INCR the fence first, then SET",
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
    let result = verify(Arc::new(TeamLock), 20);
    findings::judge(&result, FINDINGS, "team-lock", "two")
}
