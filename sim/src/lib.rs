//! # redfence-sim
//!
//! The deterministic simulation world. The unchanged `redfence-core` lock and
//! the real `redis` crate client run inside a turmoil simulation, speaking
//! RESP over simulated TCP to a simulated Redis that executes the very same
//! Lua files from `core/lua/`, and writing through a simulated fenced store
//! with the Postgres store's semantics. Network, clock and every random
//! choice follow one `u64` seed: the same seed gives a byte-identical trace.
//!
//! Start at [`world::WorldBuilder`].

// Without this cfg turmoil cannot seed tokio's RNG, and an unbiased
// `select!` anywhere below would make one seed give two traces. A `RUSTFLAGS`
// variable replaces `.cargo/config.toml`'s flags silently; refuse to build.
#[cfg(not(tokio_unstable))]
compile_error!(
    "redfence-sim needs `--cfg tokio_unstable` so that one seed gives one run. In the \
     crate that depends on redfence (yours), create `.cargo/config.toml` next to its \
     Cargo.toml with:\n\n[build]\nrustflags = [\"--cfg\", \"tokio_unstable\"]\n\
     rustdocflags = [\"--cfg\", \"tokio_unstable\"]\n\n(one full rebuild of your \
     dependencies follows). If you set RUSTFLAGS, it replaces that file's flags: add \
     `--cfg tokio_unstable` to it. See the README section \"Verify your own lock from \
     your crate\"."
);

pub mod connection;
pub mod redis;
pub mod seeds;
pub mod store;
pub mod trace;
pub mod workload;
pub mod world;

// The README's code (the lock library and the world) compiles, or the
// doctests fail. It lives here because this crate sees both.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
