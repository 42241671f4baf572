//! redfence's real-server world: Redis (primary + replica, and up to six
//! more independent masters on demand) and PostgreSQL
//! provisioned as containers, local processes or external servers, with a
//! Toxiproxy-compatible proxy per worker and per path, so faults hit one
//! worker's traffic, and with real failover.
//!
//! - [`config`]: what to build, from `REDFENCE_*` variables.
//! - [`toxiproxy`]: the embedded Toxiproxy-compatible server (noxious core).
//! - [`provider`]: running the servers (containers, local, external).
//! - [`faults`]: the Toxiproxy API through `toxiproxy_rust`.
//! - [`monitor`]: the `MONITOR` tape of each Redis node, the raw material of
//!   the real world's Redis-side truth.
//! - [`topology`]: [`RealCluster`], the operations a real `World` calls.
//! - [`sentinel`]: Redis Sentinel deciding the failover, and the address
//!   map that keeps a worker on its proxies.
//! - [`reaper`]: removing what a killed run left behind (containers, local
//!   servers and their folders).
//! - [`spawn`]: starting local servers that die with this process.
//! - [`live`]: what this process started and not yet stopped, and the
//!   teardown a signal calls.
//!
//! This crate knows nothing of scenarios; the `World` implementation on top
//! of [`RealCluster`] lives with the scenarios.

pub mod config;
pub mod error;
pub mod faults;
pub mod live;
pub mod monitor;
pub mod ports;
pub mod probe;
pub mod provider;
pub mod reaper;
pub mod sentinel;
pub mod spawn;
pub mod topology;
pub mod toxiproxy;
pub mod wait;

pub use config::{ChaosConfig, FailoverKind, Images, ProviderKind, ToxiproxyChoice};
pub use error::{ChaosError, Result};
pub use provider::{last_started, RedisNode, ServerInfo, Servers, MASTERS_MAX};
pub use topology::{replica_proxy_name, NodeTape, Path, PrimaryWatch, RealCluster};
