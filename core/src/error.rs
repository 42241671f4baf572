//! Typed errors. Each failure a caller can act on has its own variant, so that
//! bad input, a down server and a lost reply are never confused.

use std::time::Duration;

/// Input that the library refuses before anything is sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidInput {
    /// A resource name must not be empty.
    #[error("resource name is empty")]
    EmptyResourceName,
    /// A resource name longer than the bound.
    #[error("resource name is {len} bytes long; at most {len_max} are allowed")]
    ResourceNameTooLong {
        /// Length given.
        len: usize,
        /// Bound.
        len_max: usize,
    },
    /// Braces would move the Redis Cluster hash tag.
    #[error("resource name contains '{found}': braces would break the hash tag that keeps lock and fence keys in one cluster slot")]
    ResourceNameHashTag {
        /// The brace found.
        found: char,
    },
    /// Control characters are refused (they corrupt logs and keys).
    #[error("resource name contains control character U+{code_point:04X}")]
    ResourceNameControl {
        /// The offending code point.
        code_point: u32,
    },
    /// A resource type must be 1..=64 bytes of `[a-z0-9_-]`.
    #[error("resource type {resource_type:?} must be 1..=64 bytes of [a-z0-9_-]")]
    ResourceType {
        /// The type given.
        resource_type: String,
    },
    /// A key prefix must be non-empty, bounded, without braces or control characters.
    #[error("key prefix {prefix:?} must be 1..=64 bytes without braces or control characters")]
    KeyPrefix {
        /// The prefix given.
        prefix: String,
    },
    /// Lock and fence prefixes must differ, or the keys would collide.
    #[error("lock and fence key prefixes are both {prefix:?}; they must differ")]
    KeyPrefixesEqual {
        /// The shared prefix.
        prefix: String,
    },
    /// A job id must be non-empty and bounded.
    #[error("job id must be 1..=200 bytes without control characters")]
    JobId,
    /// An owner token must be non-empty and bounded.
    #[error("owner token must be 1..=128 bytes without control characters")]
    OwnerToken,
    /// A fence must be positive.
    #[error("fence must be positive, got {value}")]
    Fence {
        /// The value given.
        value: i64,
    },
}

/// A [`crate::LockConfig`] that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A value is outside its allowed range.
    #[error("{field} = {value} is out of range {min}..={max}")]
    OutOfRange {
        /// Field name, unit last (`lease_ms`).
        field: &'static str,
        /// Value given.
        value: u64,
        /// Smallest allowed.
        min: u64,
        /// Largest allowed.
        max: u64,
    },
    /// Renewal must come before the lease runs out, with room for one retry.
    #[error("renew_interval_ms = {renew_interval_ms} must be less than lease_ms = {lease_ms}")]
    RenewIntervalNotBelowLease {
        /// Renew interval.
        renew_interval_ms: u64,
        /// Lease.
        lease_ms: u64,
    },
    /// A per-operation timeout as long as the lease makes "acquired" meaningless:
    /// the lease could be gone before the reply arrives.
    #[error("op_timeout_ms = {op_timeout_ms} must be less than lease_ms = {lease_ms}")]
    OpTimeoutNotBelowLease {
        /// Operation timeout.
        op_timeout_ms: u64,
        /// Lease.
        lease_ms: u64,
    },
    /// The maximum hold time must cover at least one lease.
    #[error("hold_ms_max = {hold_ms_max} must be at least lease_ms = {lease_ms}")]
    HoldBelowLease {
        /// Maximum hold.
        hold_ms_max: u64,
        /// Lease.
        lease_ms: u64,
    },
    /// Backoff base must not exceed the cap.
    #[error(
        "backoff_base_ms = {backoff_base_ms} must not exceed backoff_cap_ms = {backoff_cap_ms}"
    )]
    BackoffBaseAboveCap {
        /// Base.
        backoff_base_ms: u64,
        /// Cap.
        backoff_cap_ms: u64,
    },
    /// A key prefix was refused.
    #[error(transparent)]
    Keys(#[from] InvalidInput),
    /// The configuration asks for a fence source that was not supplied.
    #[error("fence_source = {kind} but no such source was given to the lock client builder")]
    FenceSourceMissing {
        /// The kind asked for.
        kind: &'static str,
    },
    /// The supplied fence source is not the kind the configuration names.
    #[error("fence_source = {configured} but the supplied source is {supplied}")]
    FenceSourceMismatch {
        /// The kind in the configuration.
        configured: &'static str,
        /// The kind supplied.
        supplied: &'static str,
    },
}

/// Why talking to Redis failed.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Input refused before anything was sent.
    #[error(transparent)]
    InvalidInput(#[from] InvalidInput),
    /// Redis could not be reached, or refused the command (for example
    /// WRONGTYPE on the fence key): the library fails closed, and no protected
    /// write may happen.
    #[error("redis error: {0}")]
    Redis(#[source] redis::RedisError),
    /// The command may or may not have run (timeout or connection loss after
    /// sending) and bounded re-asks did not settle it. Never "acquired".
    #[error("outcome unknown after {reasks} re-asks within {elapsed:?}: {last}")]
    Indeterminate {
        /// Re-asks made with the same owner token.
        reasks: u32,
        /// Time spent.
        elapsed: Duration,
        /// The last error seen.
        last: String,
    },
    /// Redis answered something the scripts never return.
    #[error("unexpected reply from redis: {0}")]
    Protocol(String),
    /// The external fence source (Postgres) failed after the lease was taken;
    /// the lease has been released again.
    #[error("fence source failed: {0}")]
    FenceSource(#[source] StoreError),
}

/// Why the fenced store failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Input refused before anything was sent.
    #[error(transparent)]
    InvalidInput(#[from] InvalidInput),
    /// The database failed or could not be reached.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// Applying the schema failed.
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// The call did not finish within its timeout; it may or may not have committed.
    #[error("store operation timed out after {0:?}; outcome unknown")]
    Timeout(Duration),
    /// A mutation supplied by the caller failed; the transaction was rolled back.
    #[error("mutation failed, transaction rolled back: {0}")]
    Mutation(String),
    /// Nothing of the request left this process (connect failed or timed
    /// out, request too large, connection busy): it definitely had no effect.
    #[error("store transport: request not sent: {0}")]
    NotSent(String),
    /// The store received the request and refused to run it (malformed, or a
    /// reply too large): it definitely had no effect.
    #[error("store transport: request refused by the store, not run: {0}")]
    Refused(String),
    /// The request was sent and then the connection broke or the reply was
    /// garbled: it may or may not have taken effect.
    #[error("store transport: request sent, outcome unknown: {0}")]
    OutcomeUnknown(String),
    /// The store answered something the protocol does not allow (an
    /// unexpected reply, an unknown outcome in its log): whether the request
    /// took effect cannot be told.
    #[error("store protocol: {0}")]
    Protocol(String),
}

impl StoreError {
    /// Whether the failed call definitely had no effect on the store: refused
    /// input, a rolled-back mutation, a request never sent or refused by the
    /// store. Every other error (a timeout, a broken connection, a database
    /// error) leaves the outcome unknown, and a caller must treat the write
    /// as possibly applied.
    pub fn definitely_not_applied(&self) -> bool {
        matches!(
            self,
            StoreError::InvalidInput(_)
                | StoreError::Mutation(_)
                | StoreError::NotSent(_)
                | StoreError::Refused(_)
        )
    }
}
