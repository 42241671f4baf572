//! redfence's real-server world: Redis (primary + replica) and PostgreSQL
//! provisioned as containers, local processes or external servers, with a
//! Toxiproxy-compatible proxy per worker and per path, so faults hit one
//! worker's traffic, and with real failover.
//!
//! - [`config`]: what to build, from `REDFENCE_*` variables.
//! - [`toxiproxy`]: the embedded Toxiproxy-compatible server (noxious core).
//! - [`provider`]: running the servers (containers, local, external).
//! - [`faults`]: the Toxiproxy API through `toxiproxy_rust`.
//! - [`topology`]: [`RealCluster`], the operations a real `World` calls.
//! - [`reaper`]: removing containers a killed run left behind.
//!
//! This crate knows nothing of scenarios; the `World` implementation on top
//! of [`RealCluster`] lives with the scenarios.

pub mod config;
pub mod error;
pub mod faults;
pub mod ports;
pub mod probe;
pub mod provider;
pub mod reaper;
pub mod topology;
pub mod toxiproxy;
pub mod wait;

pub use config::{ChaosConfig, Images, ProviderKind, ToxiproxyChoice};
pub use error::{ChaosError, Result};
pub use provider::{RedisNode, Servers};
pub use topology::{Path, RealCluster};
