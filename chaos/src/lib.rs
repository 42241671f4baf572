//! redfence's real-server world: Redis (primary + replica) and PostgreSQL
//! provisioned as containers, local processes or external servers, with a
//! Toxiproxy-compatible proxy per worker and per path, so faults hit one
//! worker's traffic, and with real failover.
//!
//! - [`config`]: what to build, from `REDFENCE_*` variables.
//! - [`toxiproxy`]: the embedded Toxiproxy-compatible server (noxious core).
//! - [`faults`]: the Toxiproxy API through `toxiproxy_rust`.
//!
//! This crate knows nothing of scenarios; the `World` implementation on top
//! of it lives with the scenarios.

pub mod config;
pub mod error;
pub mod faults;
pub mod ports;
pub mod toxiproxy;
pub mod wait;

pub use error::{ChaosError, Result};
