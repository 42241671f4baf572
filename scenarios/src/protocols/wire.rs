//! The mutants' own calls on the wire, held to the reference's rules.
//!
//! A mutant is the reference with one thing broken, so everything else it
//! does must behave as redfence-core does, or a scenario would catch a
//! difference that is not the bug. Every Redis call here is bounded by the
//! configuration's `op_timeout` and classified as the lock client classifies
//! it: no reply in time or a broken connection is
//! [`StepError::Indeterminate`] (Redis may have run it), an error reply or a
//! refused connection is [`StepError::Failed`] (it did not).

use redfence_core::{Fence, JobOutcome, LockConfig, StoreError, WriteOutcome};
use redis::{Cmd, ErrorKind, RedisResult, ScriptInvocation, Value};

use super::{resource_name, store_error};
use crate::conn::RedisConn;
use crate::protocol::{Acquire, Held, StepError, WriteResult};
use crate::world::{RawStore, WorkerEnv};

/// Reads a bounded call's result the way redfence-core's client does.
fn classify(
    result: Result<RedisResult<Value>, tokio::time::error::Elapsed>,
    config: &LockConfig,
) -> Result<Value, StepError> {
    match result {
        Err(_) => Err(StepError::Indeterminate(format!(
            "no reply within {} ms",
            config.op_timeout_ms()
        ))),
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => {
            let answered = matches!(e.kind(), ErrorKind::Server(_) | ErrorKind::Extension);
            if answered || e.is_connection_refusal() {
                Err(StepError::Failed(format!("redis: {e}")))
            } else {
                Err(StepError::Indeterminate(format!("redis: {e}")))
            }
        }
    }
}

/// A worker's Redis path as a mutant uses it: its connection and the lock
/// configuration (keys, `op_timeout`).
#[derive(Clone, Debug)]
pub struct Wire {
    redis: RedisConn,
    config: LockConfig,
}

impl Wire {
    /// `env`'s Redis path under `config`.
    pub fn new(env: &WorkerEnv, config: &LockConfig) -> Self {
        Self {
            redis: env.redis.clone(),
            config: config.clone(),
        }
    }

    /// The lock configuration.
    pub fn config(&self) -> &LockConfig {
        &self.config
    }

    /// The lock and fence keys of `resource`.
    pub fn keys(&self, resource: &str) -> Result<(String, String), StepError> {
        let name = resource_name(resource)?;
        let keys = self.config.keys();
        Ok((keys.lock_key(&name), keys.fence_key(&name)))
    }

    /// One command, bounded by `op_timeout`.
    pub async fn query(&self, cmd: &Cmd) -> Result<Value, StepError> {
        let mut conn = self.redis.clone();
        let result = tokio::time::timeout(
            self.config.op_timeout(),
            cmd.query_async::<Value>(&mut conn),
        )
        .await;
        classify(result, &self.config)
    }

    /// One script call, bounded by `op_timeout`.
    pub async fn invoke(&self, invocation: &ScriptInvocation<'_>) -> Result<Value, StepError> {
        let mut conn = self.redis.clone();
        let result = tokio::time::timeout(
            self.config.op_timeout(),
            invocation.invoke_async::<Value>(&mut conn),
        )
        .await;
        classify(result, &self.config)
    }

    /// The answer to an acquire whose lock command found the key taken, for
    /// mutants that take the lock in several commands: the token that holds
    /// the key already won (a re-ask after a lost reply, answered as the
    /// reference's script answers it) and gets the counter's current fence;
    /// anyone else is contended (`None`).
    pub async fn taken(&self, resource: &str, owner: &str) -> Result<Option<i64>, StepError> {
        let (lock_key, fence_key) = self.keys(resource)?;
        let holder = self.query(redis::cmd("GET").arg(lock_key)).await?;
        if !holds(&holder, owner) {
            return Ok(None);
        }
        let current = self.query(redis::cmd("GET").arg(fence_key)).await?;
        fence("GET fence", &current).map(Some)
    }
}

/// A reply Redis should not have given. Definite, as the reference treats
/// a malformed reply: nothing may be built on it.
pub fn unexpected(what: &str, value: &Value) -> StepError {
    StepError::Failed(format!("{what} returned {value:?}"))
}

/// An integer reply.
pub fn int(what: &str, value: &Value) -> Result<i64, StepError> {
    match value {
        Value::Int(n) => Ok(*n),
        other => Err(unexpected(what, other)),
    }
}

/// A fence as Redis returns it: `INCR`'s integer, or the counter's decimal
/// string from a `GET`; it must be a valid (positive) fence.
pub fn fence(what: &str, value: &Value) -> Result<i64, StepError> {
    let number = match value {
        Value::Int(n) => Some(*n),
        Value::BulkString(bytes) => std::str::from_utf8(bytes)
            .ok()
            .and_then(|text| text.parse::<i64>().ok()),
        _ => None,
    };
    number
        .and_then(|n| Fence::new(n).ok())
        .map(Fence::get)
        .ok_or_else(|| unexpected(what, value))
}

/// Whether a `GET` of the lock key names `owner`.
pub fn holds(value: &Value, owner: &str) -> bool {
    matches!(value, Value::BulkString(bytes) if bytes.as_slice() == owner.as_bytes())
}

/// The answer to an acquire that took the lease with `fence`.
pub fn acquired(resource: &str, owner: &str, fence: i64) -> Acquire {
    Acquire::Acquired(Held {
        resource: resource.to_owned(),
        owner: owner.to_owned(),
        fence: Some(fence),
    })
}

/// The fence `held` carries; a protocol under test that issued none
/// cannot make a fenced write.
pub fn held_fence(held: &Held) -> Result<i64, StepError> {
    held.fence
        .ok_or_else(|| StepError::Failed(format!("owner {} holds no fence", held.owner)))
}

/// A store's answer to a job write, as a step outcome (the reference's
/// reading of it).
pub fn job_result(outcome: Result<JobOutcome, StoreError>) -> Result<WriteResult, StepError> {
    match outcome {
        Ok(JobOutcome::Applied) => Ok(WriteResult::Applied),
        Ok(JobOutcome::AlreadyDone) => Ok(WriteResult::AlreadyDone),
        Ok(JobOutcome::Stale { last_fence }) => Ok(WriteResult::Stale { last_fence }),
        Ok(JobOutcome::NotFound) => Ok(WriteResult::NotFound),
        Err(e) => Err(store_error(e)),
    }
}

/// A write straight to storage with neither the fence check nor the
/// idempotency check: the store takes the fence it is given, completes the
/// job, and logs the write as accepted.
pub async fn write_unchecked(
    raw_store: &dyn RawStore,
    held: &Held,
    job_id: &str,
    value: &str,
) -> Result<WriteResult, StepError> {
    let fence = held_fence(held)?;
    match raw_store
        .write_unchecked(&held.resource, fence, &held.owner, Some(job_id), value)
        .await
    {
        Ok(WriteOutcome::Accepted) => Ok(WriteResult::Applied),
        Ok(WriteOutcome::Stale { last_fence }) => Ok(WriteResult::Stale { last_fence }),
        Ok(WriteOutcome::NotFound) => Ok(WriteResult::NotFound),
        Err(e) => Err(store_error(e)),
    }
}
