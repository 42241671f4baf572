//! Integration tests of `redfence-core` against real servers: the design
//! article's test plan, minus the items that need network fault injection
//! (those run in the simulation and the real-server chaos world).
//!
//! Run with `scripts/test`, which starts a throwaway redis-server, a 3-node
//! Redis Cluster and PostgreSQL, and points these tests at them.

mod support;

mod cluster;
mod keeper;
mod lock;
mod lost_reply;
mod metrics;
mod store;
mod worker;
