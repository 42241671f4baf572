//! The lock client: acquire with bounded full-jitter retry, compare-and-delete
//! release, compare-and-PEXPIRE renewal, and honest handling of lost replies.
//!
//! A timeout or a connection error after a command was sent does not mean the
//! command failed: Redis may have run it. Such an outcome is *indeterminate*,
//! never "acquired". The client re-asks with the same owner token a bounded
//! number of times; because the acquire script answers "you already hold it"
//! to the token that holds the lease, the re-ask tells whether the first
//! attempt won.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::{ErrorKind, RedisError, Value};
use tokio::time::Instant;

use crate::backoff::{backoff_window_ms, Jitter, Sleeper, ThreadRngJitter, TokioSleeper};
use crate::config::{FenceSourceKind, LockConfig};
use crate::error::{ConfigError, LockError};
use crate::fence::Fence;
use crate::fence_source::{FenceSource, PostgresFences, RedisCounterFences};
use crate::owner::{OwnerToken, RandomUuidTokens, TokenSource};
use crate::pg_store::PgFencedStore;
use crate::resource::ResourceName;
use crate::scripts::{self, parse_acquire_reply, scripts, AcquireReply};
use crate::telemetry::{self, *};

/// A lease this process holds (as far as it knows).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    resource: ResourceName,
    owner: OwnerToken,
    fence: Fence,
    sent_at: Instant,
    lease_ms: u64,
}

impl Lease {
    /// The resource.
    pub fn resource(&self) -> &ResourceName {
        &self.resource
    }
    /// This acquisition's owner token.
    pub fn owner(&self) -> &OwnerToken {
        &self.owner
    }
    /// This acquisition's fence: send it with every protected write.
    pub fn fence(&self) -> Fence {
        self.fence
    }
    /// When the acquiring command was sent. Redis set the TTL no earlier, so
    /// `sent_at + lease` is a safe lower bound on when the lease ends.
    pub fn sent_at(&self) -> Instant {
        self.sent_at
    }
    /// Lease length asked for.
    pub fn lease_ms(&self) -> u64 {
        self.lease_ms
    }
    /// The latest instant at which this process may still assume it holds the
    /// lease without a renewal.
    pub fn valid_until(&self) -> Instant {
        self.sent_at + Duration::from_millis(self.lease_ms)
    }
}

/// One acquire attempt's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// The lease is ours (now, or already from an earlier attempt with this token).
    Acquired(Lease),
    /// Another owner holds it.
    Contended,
}

/// What [`LockClient::acquire`] ends with when Redis answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AcquireOutcome {
    /// The lease is held.
    Acquired(Lease),
    /// Deadline or attempts ran out while others held the lock: hand the job
    /// back to the queue with a delay rather than hold a thread waiting.
    RetryLater {
        /// Attempts made.
        attempts: u32,
        /// Time spent.
        waited: Duration,
    },
}

/// A renewal's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Renewal {
    /// Extended; the lease now lasts at least until `valid_until`.
    Renewed {
        /// New safe lower bound of the lease end.
        valid_until: Instant,
    },
    /// The lease is gone or belongs to another owner.
    OwnerMismatch,
}

/// The lock client. Cheap to clone; generic over any redis-rs async
/// connection (multiplexed, cluster, or a simulated stream).
///
/// Every Redis call is bounded by the configuration's `op_timeout`. On a
/// redis-rs [`MultiplexedConnection`] the client sets its own handle's
/// response timeout to `op_timeout` and lets the connection keep that bound;
/// on any other connection it puts a tokio timer around each call.
#[derive(Clone)]
pub struct LockClient<C> {
    conn: C,
    timer: Timer,
    config: LockConfig,
    tokens: Arc<dyn TokenSource>,
    jitter: Arc<dyn Jitter>,
    sleeper: Arc<dyn Sleeper>,
    fences: Arc<dyn FenceSource>,
}

impl<C> std::fmt::Debug for LockClient<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockClient")
            .field("config", &self.config)
            .field("fences", &self.fences)
            .finish_non_exhaustive()
    }
}

/// Builder for [`LockClient`]; defaults: random UUID tokens, thread-RNG
/// jitter, tokio sleep, and the fence source the configuration names.
pub struct LockClientBuilder<C> {
    conn: C,
    config: LockConfig,
    tokens: Arc<dyn TokenSource>,
    jitter: Arc<dyn Jitter>,
    sleeper: Arc<dyn Sleeper>,
    fences: Option<Arc<dyn FenceSource>>,
}

impl<C> LockClientBuilder<C> {
    /// Owner-token generator (seeded in simulation).
    pub fn tokens(mut self, tokens: Arc<dyn TokenSource>) -> Self {
        self.tokens = tokens;
        self
    }
    /// Jitter source (seeded in simulation).
    pub fn jitter(mut self, jitter: Arc<dyn Jitter>) -> Self {
        self.jitter = jitter;
        self
    }
    /// Sleeper.
    pub fn sleeper(mut self, sleeper: Arc<dyn Sleeper>) -> Self {
        self.sleeper = sleeper;
        self
    }
    /// Fences from Postgres (for `fence_source = postgres`).
    pub fn postgres_fences(self, store: PgFencedStore) -> Self {
        self.fence_source(Arc::new(PostgresFences::new(store)))
    }
    /// Any fence source; its kind must match the configuration.
    pub fn fence_source(mut self, fences: Arc<dyn FenceSource>) -> Self {
        self.fences = Some(fences);
        self
    }
    /// Checks that the fence source matches the configuration.
    pub fn build(mut self) -> Result<LockClient<C>, ConfigError>
    where
        C: 'static,
    {
        let configured = self.config.fence_source();
        let fences: Arc<dyn FenceSource> = match (self.fences, configured) {
            (Some(f), _) if f.kind() == configured => f,
            (Some(f), _) => {
                return Err(ConfigError::FenceSourceMismatch {
                    configured: configured.name(),
                    supplied: f.kind().name(),
                })
            }
            (None, FenceSourceKind::RedisCounter) => Arc::new(RedisCounterFences),
            (None, FenceSourceKind::Store) => {
                return Err(ConfigError::FenceSourceMissing {
                    kind: configured.name(),
                })
            }
        };
        let timer = match (&mut self.conn as &mut dyn Any).downcast_mut::<MultiplexedConnection>() {
            Some(conn) => {
                // Only this client's handle changes: a clone carries its own
                // timeout, so the caller's connection keeps theirs.
                conn.set_response_timeout(self.config.op_timeout());
                Timer::Connection
            }
            None => Timer::Own,
        };
        Ok(LockClient {
            conn: self.conn,
            timer,
            config: self.config,
            tokens: self.tokens,
            jitter: self.jitter,
            sleeper: self.sleeper,
            fences,
        })
    }
}

/// What bounds a Redis call by the configuration's `op_timeout`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Timer {
    /// A tokio timer around every call: works on any connection.
    Own,
    /// The multiplexed connection's own response timeout, set to
    /// `op_timeout` on this client's handle of it. Why: that connection
    /// times every command already (500 ms unless configured), so a second
    /// timer per command only costs — registering and clearing a timer was
    /// about 1% of an uncontended acquire+release cycle in the core bench.
    Connection,
}

/// How a failed Redis call is to be read.
enum Failure {
    /// Redis answered with an error, or the command never left: a definite "no".
    Definite(RedisError),
    /// Sent, then silence or a broken connection: Redis may have run it.
    Indeterminate(String),
}

impl<C> LockClient<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    /// A builder over `conn` with `config`.
    pub fn builder(conn: C, config: LockConfig) -> LockClientBuilder<C> {
        LockClientBuilder {
            conn,
            config,
            tokens: Arc::new(RandomUuidTokens),
            jitter: Arc::new(ThreadRngJitter),
            sleeper: Arc::new(TokioSleeper),
            fences: None,
        }
    }

    /// A client with every default; fails if the configuration names a fence
    /// source that needs more than a Redis connection.
    pub fn new(conn: C, config: LockConfig) -> Result<Self, ConfigError> {
        Self::builder(conn, config).build()
    }

    /// The configuration.
    pub fn config(&self) -> &LockConfig {
        &self.config
    }

    /// A fresh owner token from this client's generator.
    pub fn next_owner_token(&self) -> OwnerToken {
        self.tokens.next_token()
    }

    /// Acquires under the configured deadline and attempt bound, sleeping
    /// `random(0, min(cap, base * 2^attempt))` between attempts. One fresh
    /// owner token serves every attempt of this call, so a retry after a lost
    /// reply is idempotent.
    ///
    /// `Err` means Redis failed or stayed indeterminate: fail closed.
    pub async fn acquire(&self, resource: &ResourceName) -> Result<AcquireOutcome, LockError> {
        let owner = self.tokens.next_token();
        self.acquire_as(resource, &owner).await
    }

    /// [`LockClient::acquire`] with a caller-chosen owner token (a harness
    /// driving its own token sequence). Production callers use `acquire`.
    pub async fn acquire_as(
        &self,
        resource: &ResourceName,
        owner: &OwnerToken,
    ) -> Result<AcquireOutcome, LockError> {
        let rtype = &resource.resource_type_shared();
        let started = Instant::now();
        let deadline = started + Duration::from_millis(self.config.acquire_deadline_ms());
        let attempts_max = self.config.attempts_max();
        let mut attempts = 0;
        while attempts < attempts_max {
            attempts += 1;
            if attempts > 1 {
                telemetry::count(LOCK_ACQUIRE_RETRIES_TOTAL, rtype);
            }
            match self.attempt_until(resource, owner, Some(deadline)).await {
                Ok(Attempt::Acquired(lease)) => {
                    telemetry::count_with(LOCK_ACQUIRE_TOTAL, rtype, "result", "acquired");
                    let waited = started.elapsed();
                    telemetry::observe_seconds(
                        LOCK_ACQUIRE_DURATION_SECONDS,
                        rtype,
                        waited.as_secs_f64(),
                    );
                    tracing::info!(
                        resource_type = &**rtype,
                        resource_hash = %resource.id_hash(),
                        owner = %owner,
                        fence = lease.fence.get(),
                        lease_ms = lease.lease_ms,
                        attempts,
                        waited_ms = waited.as_millis() as u64,
                        "lease acquired"
                    );
                    return Ok(AcquireOutcome::Acquired(lease));
                }
                Ok(Attempt::Contended) => {
                    telemetry::count_with(LOCK_ACQUIRE_TOTAL, rtype, "result", "contended");
                    telemetry::count(LOCK_CONTENTION_TOTAL, rtype);
                }
                Err(e) => {
                    telemetry::count_with(LOCK_ACQUIRE_TOTAL, rtype, "result", "redis_error");
                    tracing::warn!(
                        resource_type = &**rtype,
                        resource_hash = %resource.id_hash(),
                        owner = %owner,
                        error = %e,
                        "acquire failed; failing closed"
                    );
                    return Err(e);
                }
            }
            let now = Instant::now();
            if attempts >= attempts_max || now >= deadline {
                break;
            }
            let window_ms = backoff_window_ms(
                self.config.backoff_base_ms(),
                self.config.backoff_cap_ms(),
                attempts - 1,
            );
            let sleep = Duration::from_millis(self.jitter.draw_ms(window_ms)).min(deadline - now);
            telemetry::observe_seconds(LOCK_BACKOFF_SECONDS, rtype, sleep.as_secs_f64());
            self.sleeper.sleep(sleep).await;
            if Instant::now() >= deadline {
                break;
            }
        }
        debug_assert!(attempts >= 1 && attempts <= attempts_max);
        let waited = started.elapsed();
        telemetry::count_with(LOCK_ACQUIRE_TOTAL, rtype, "result", "timeout");
        telemetry::observe_seconds(LOCK_ACQUIRE_DURATION_SECONDS, rtype, waited.as_secs_f64());
        tracing::info!(
            resource_type = &**rtype,
            resource_hash = %resource.id_hash(),
            owner = %owner,
            attempts,
            waited_ms = waited.as_millis() as u64,
            "lock contended; retry later"
        );
        Ok(AcquireOutcome::RetryLater { attempts, waited })
    }

    /// One acquire attempt, including the bounded re-asks after an
    /// indeterminate reply. Never retries on contention.
    pub async fn attempt(
        &self,
        resource: &ResourceName,
        owner: &OwnerToken,
    ) -> Result<Attempt, LockError> {
        self.attempt_until(resource, owner, None).await
    }

    /// [`LockClient::attempt`] that stops re-asking once another round trip
    /// could not finish before `deadline`, so `acquire` keeps its deadline
    /// even when replies are lost.
    async fn attempt_until(
        &self,
        resource: &ResourceName,
        owner: &OwnerToken,
        deadline: Option<Instant>,
    ) -> Result<Attempt, LockError> {
        let rtype = &resource.resource_type_shared();
        let keys = self.config.keys();
        let issue_in_script = self.fences.kind() == FenceSourceKind::RedisCounter;
        let script = &scripts().acquire;
        let mut cmd = scripts::evalsha(script, 2);
        cmd.arg(keys.lock_key_arg(resource))
            .arg(keys.fence_key_arg(resource))
            .arg(owner.as_str())
            .arg(self.config.lease_ms())
            .arg(if issue_in_script { "1" } else { "0" });

        // The first send bounds the lease from below: a re-ask may learn of
        // a lease that the first attempt took.
        let mut first_send: Option<Instant> = None;
        let mut reasks = 0;
        let (reply, first_sent) = loop {
            let (sent, result) = self.call(script, &cmd).await;
            let first_sent = *first_send.get_or_insert(sent);
            match result {
                Ok(value) => {
                    if reasks > 0 {
                        let held = parse_acquire_reply(&value).is_ok_and(AcquireReply::held);
                        let result = if held { "held" } else { "not_held" };
                        telemetry::count_with(LOCK_REASK_TOTAL, rtype, "result", result);
                    }
                    break (value, first_sent);
                }
                Err(Failure::Definite(e)) => {
                    if reasks > 0 {
                        self.release_best_effort(resource, owner).await;
                    }
                    return Err(LockError::Redis(e));
                }
                Err(Failure::Indeterminate(last)) => {
                    if reasks > 0 {
                        telemetry::count_with(LOCK_REASK_TOTAL, rtype, "result", "indeterminate");
                    }
                    let past_deadline =
                        deadline.is_some_and(|d| Instant::now() + self.config.op_timeout() > d);
                    if reasks >= self.config.reasks_max() || past_deadline {
                        // Our first attempt may hold the lease; give it back
                        // rather than leave it to expire, then fail closed.
                        self.release_best_effort(resource, owner).await;
                        return Err(LockError::Indeterminate {
                            reasks,
                            elapsed: first_sent.elapsed(),
                            last,
                        });
                    }
                    reasks += 1;
                    tracing::warn!(
                        resource_type = &**rtype,
                        resource_hash = %resource.id_hash(),
                        owner = %owner,
                        reasks,
                        error = %last,
                        "acquire reply lost; re-asking with the same owner token"
                    );
                    let pause_ms = self.jitter.draw_ms(self.config.backoff_base_ms());
                    self.sleeper.sleep(Duration::from_millis(pause_ms)).await;
                }
            }
        };
        let reply = match parse_acquire_reply(&reply) {
            Ok(parsed) => parsed,
            Err(e) => {
                // The script may have taken the lease; a lease without a
                // usable fence must not outlive this call.
                self.release_best_effort(resource, owner).await;
                return Err(e);
            }
        };
        if !reply.held() {
            return Ok(Attempt::Contended);
        }
        let script_fence = reply.fence();
        let fence = match self.fences.fence_for(resource, script_fence).await {
            Ok(fence) => fence,
            Err(e) => {
                self.release_best_effort(resource, owner).await;
                return Err(e);
            }
        };
        let lease = Lease {
            resource: resource.clone(),
            owner: owner.clone(),
            fence,
            sent_at: first_sent,
            lease_ms: self.config.lease_ms(),
        };
        if script_fence.is_none() {
            // The fence came from outside Redis, after the lease was taken.
            // Had the lease ended meanwhile, a successor could hold a lower
            // fence than ours: confirm we still own it before using the fence.
            let confirmed = Instant::now() < lease.valid_until()
                && matches!(
                    self.renew(&lease, self.config.lease_ms()).await,
                    Ok(Renewal::Renewed { .. })
                );
            if !confirmed {
                self.release_best_effort(resource, owner).await;
                return Ok(Attempt::Contended);
            }
        }
        Ok(Attempt::Acquired(lease))
    }

    /// Compare-and-PEXPIRE for `lease_ms`: never touches another owner's lock.
    pub async fn renew(&self, lease: &Lease, lease_ms: u64) -> Result<Renewal, LockError> {
        if lease_ms == 0 {
            // PEXPIRE 0 would delete the key: never a renewal.
            return Err(LockError::Protocol("renewal of 0 ms refused".into()));
        }
        let keys = self.config.keys();
        let script = &scripts().renew;
        let mut cmd = scripts::evalsha(script, 1);
        cmd.arg(keys.lock_key_arg(&lease.resource))
            .arg(lease.owner.as_str())
            .arg(lease_ms);
        let (sent, result) = self.call(script, &cmd).await;
        let renewal = match result {
            Ok(Value::Int(1)) => Ok(Renewal::Renewed {
                valid_until: sent + Duration::from_millis(lease_ms),
            }),
            Ok(Value::Int(0)) => Ok(Renewal::OwnerMismatch),
            Ok(other) => Err(LockError::Protocol(format!("renew returned {other:?}"))),
            Err(Failure::Definite(e)) => Err(LockError::Redis(e)),
            Err(Failure::Indeterminate(last)) => Err(LockError::Indeterminate {
                reasks: 0,
                elapsed: sent.elapsed(),
                last,
            }),
        };
        let result = match &renewal {
            Ok(Renewal::Renewed { .. }) => "renewed",
            Ok(Renewal::OwnerMismatch) => "owner_mismatch",
            Err(_) => "error",
        };
        telemetry::count_with(
            LOCK_RENEW_TOTAL,
            &lease.resource.resource_type_shared(),
            "result",
            result,
        );
        renewal
    }

    /// Compare-and-delete. `Ok(true)`: this owner's lease was deleted;
    /// `Ok(false)`: it had expired or belongs to someone else (left untouched).
    pub async fn release(&self, lease: &Lease) -> Result<bool, LockError> {
        let released = self.release_token(&lease.resource, &lease.owner).await;
        let rtype = &lease.resource.resource_type_shared();
        let held = lease.sent_at.elapsed();
        telemetry::observe_seconds(LOCK_HOLD_DURATION_SECONDS, rtype, held.as_secs_f64());
        tracing::info!(
            resource_type = &**rtype,
            resource_hash = %lease.resource.id_hash(),
            owner = %lease.owner,
            fence = lease.fence.get(),
            held_ms = held.as_millis() as u64,
            released = ?released.as_ref().ok(),
            "lease released"
        );
        released
    }

    async fn release_token(
        &self,
        resource: &ResourceName,
        owner: &OwnerToken,
    ) -> Result<bool, LockError> {
        let script = &scripts().release;
        let mut cmd = scripts::evalsha(script, 1);
        cmd.arg(self.config.keys().lock_key_arg(resource))
            .arg(owner.as_str());
        let (sent, result) = self.call(script, &cmd).await;
        match result {
            Ok(Value::Int(n)) => Ok(n == 1),
            Ok(other) => Err(LockError::Protocol(format!("release returned {other:?}"))),
            Err(Failure::Definite(e)) => Err(LockError::Redis(e)),
            Err(Failure::Indeterminate(last)) => Err(LockError::Indeterminate {
                reasks: 0,
                elapsed: sent.elapsed(),
                last,
            }),
        }
    }

    /// Sends one script call under the per-operation timeout; returns when
    /// it was sent and how it ended. The deadline is taken from the send
    /// instant the caller needs anyway, rather than from a second clock read.
    async fn call(
        &self,
        script: &redis::Script,
        cmd: &redis::Cmd,
    ) -> (Instant, Result<Value, Failure>) {
        let mut conn = self.conn.clone();
        let sent = Instant::now();
        let op_timeout = self.config.op_timeout();
        let deadline = sent + op_timeout;
        let result = match self.timer {
            Timer::Own => {
                tokio::time::timeout_at(deadline, scripts::invoke(&mut conn, script, cmd)).await
            }
            Timer::Connection => match cmd.query_async::<Value>(&mut conn).await {
                // The reload and the resend share what is left of this
                // operation's time, so NOSCRIPT cannot stretch it.
                Err(e) if scripts::is_noscript(&e) => {
                    let resend = scripts::reload_and_send(&mut conn, script, cmd);
                    tokio::time::timeout_at(deadline, resend).await
                }
                answered => Ok(answered),
            },
        };
        (sent, classify(result, op_timeout))
    }

    async fn release_best_effort(&self, resource: &ResourceName, owner: &OwnerToken) {
        if let Err(e) = self.release_token(resource, owner).await {
            tracing::debug!(owner = %owner, error = %e, "best-effort release failed; the lease will expire");
        }
    }
}

fn classify(
    result: Result<redis::RedisResult<Value>, tokio::time::error::Elapsed>,
    op_timeout: Duration,
) -> Result<Value, Failure> {
    match result {
        Err(_) => Err(Failure::Indeterminate(format!(
            "no reply within {op_timeout:?}"
        ))),
        Ok(Ok(value)) => Ok(value),
        // The connection's own response timeout (see `Timer::Connection`).
        Ok(Err(e)) if e.is_timeout() => Err(Failure::Indeterminate(format!(
            "no reply within {op_timeout:?}"
        ))),
        Ok(Err(e)) => {
            let answered = matches!(e.kind(), ErrorKind::Server(_) | ErrorKind::Extension);
            if answered || e.is_connection_refusal() {
                Err(Failure::Definite(e))
            } else {
                Err(Failure::Indeterminate(e.to_string()))
            }
        }
    }
}
