//! The simulated fenced store: the Postgres store's semantics, served over
//! simulated TCP so that partitions and lost replies hit storage too.
//!
//! - [`state`]: the durable tables and the operations, mirroring
//!   `core/src/pg_store.rs` statement by statement;
//! - [`frame`] and [`protocol`]: a small request/response protocol
//!   (length-prefixed frames of length-prefixed text fields);
//! - [`server`]: [`serve`] runs on a turmoil host; a request executes when it
//!   arrives, whether or not its reply makes it back;
//! - [`client`]: [`SimStoreClient`] implements [`redfence_core::FencedStore`],
//!   so the unchanged core worker flow writes through the simulated network.
//!
//! ```
//! use std::time::{Duration, UNIX_EPOCH};
//! use redfence_core::{FencedStore, ResourceName};
//! use redfence_sim::store::{serve, SimStoreClient, StoreState};
//!
//! let state = StoreState::default();
//! let mut sim = turmoil::Builder::new().rng_seed(7).epoch(UNIX_EPOCH).build();
//! let served = state.clone();
//! sim.host("store", move || serve(served.clone()));
//! sim.client("worker", async move {
//!     let store = SimStoreClient::new("store", Duration::from_millis(500));
//!     store.ensure_resource(&ResourceName::new("r")?).await?;
//!     Ok(())
//! });
//! sim.run().unwrap();
//! assert_eq!(state.read("r"), Some((String::new(), 0)));
//! ```
//!
//! Fence-log times (`at_ms`) are simulated milliseconds since the start of
//! the simulation (`turmoil::sim_elapsed`), the clock the world's trace uses.

pub mod client;
pub mod frame;
pub mod protocol;
pub mod server;
pub mod state;

pub use client::{SimStoreClient, SimStoreFences};
pub use server::serve;
pub use state::StoreState;

/// The port the store listens on (Postgres's, for familiarity).
pub const STORE_PORT: u16 = 5432;
