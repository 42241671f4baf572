//! # redfence-core
//!
//! A Redis lease lock with fencing tokens, done right:
//!
//! - a fresh random owner token per acquire ([`owner`]);
//! - lease and fence issued in one atomic Lua script, idempotent per owner
//!   token so a lost reply can be re-asked ([`client`], `core/lua/`);
//! - compare-and-delete release and compare-and-PEXPIRE renewal;
//! - bounded renewal in the job's own task ([`keeper`]);
//! - full-jitter retries under a deadline ([`backoff`]);
//! - fences from the Redis counter or a durable Postgres counter ([`fence_source`]);
//! - a Postgres store that refuses stale fences and records job completion
//!   idempotently ([`pg_store`]);
//! - the article's worker flow ([`worker`]), metrics and structured logs ([`telemetry`]).
//!
//! ```no_run
//! use redfence_core::{AcquireOutcome, LockClient, LockConfig, ResourceName};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let redis = redis::Client::open("redis://127.0.0.1:6379/")?;
//! let conn = redis.get_multiplexed_async_connection().await?;
//! let lock = LockClient::new(conn, LockConfig::builder().lease_ms(10_000).build()?)?;
//! let resource = ResourceName::new("invoice-42")?.with_type("invoice")?;
//! match lock.acquire(&resource).await? {
//!     AcquireOutcome::Acquired(lease) => {
//!         // Send lease.fence() with every protected write; storage rejects stale fences.
//!         println!("holding {} with fence {}", resource, lease.fence());
//!         lock.release(&lease).await?;
//!     }
//!     AcquireOutcome::RetryLater { .. } => println!("busy; requeue the job"),
//! }
//! # Ok(()) }
//! ```

pub mod backoff;
pub mod client;
pub mod config;
pub mod error;
pub mod fence;
pub mod fence_source;
pub mod freeze;
pub mod keeper;
pub mod owner;
pub mod pg_store;
pub mod resource;
pub mod scripts;
pub mod store;
pub mod telemetry;
pub mod worker;

pub use backoff::{Jitter, NoJitter, SeededJitter, Sleeper, ThreadRngJitter, TokioSleeper};
pub use client::{AcquireOutcome, Attempt, Lease, LockClient, LockClientBuilder, Renewal};
pub use config::{FenceSourceKind, LockConfig, LockConfigBuilder};
pub use error::{ConfigError, InvalidInput, LockError, StoreError};
pub use fence::Fence;
pub use fence_source::{FenceSource, PostgresFences, RedisCounterFences};
pub use freeze::{Freezable, FreezeSwitch};
pub use keeper::{Held, LeaseLost, LeaseSignal};
pub use owner::{OwnerToken, RandomUuidTokens, SeededUuidTokens, TokenSource};
pub use pg_store::{GuardCheck, GuardedTx, PgFencedStore};
pub use resource::{KeyScheme, ResourceName};
pub use store::{
    FenceLogEntry, FenceOutcome, FencedStore, FencedWrite, JobId, JobOutcome, JobWrite,
    WriteOutcome,
};
pub use worker::{JobError, OwnershipLost, ProcessOutcome, Worker};
