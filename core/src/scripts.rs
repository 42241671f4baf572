//! The three Lua scripts, kept as files in `core/lua/` so that the simulation
//! can run the very same text, and loaded here with `include_str!`.
//!
//! They are sent with EVALSHA; on `NOSCRIPT` (first use, or after a server
//! restart emptied the script cache) redis-rs loads the script and retries.

use std::sync::OnceLock;

/// Source of `lua/acquire.lua`: lease + fence in one atomic step, idempotent per owner token.
pub const ACQUIRE_LUA: &str = include_str!("../lua/acquire.lua");
/// Source of `lua/release.lua`: compare-and-delete.
pub const RELEASE_LUA: &str = include_str!("../lua/release.lua");
/// Source of `lua/renew.lua`: compare-and-PEXPIRE.
pub const RENEW_LUA: &str = include_str!("../lua/renew.lua");

/// The compiled scripts (with their SHA1s), built once per process because
/// hashing the text on every call would waste the hot path.
pub(crate) struct Scripts {
    pub acquire: redis::Script,
    pub release: redis::Script,
    pub renew: redis::Script,
}

pub(crate) fn scripts() -> &'static Scripts {
    static SCRIPTS: OnceLock<Scripts> = OnceLock::new();
    SCRIPTS.get_or_init(|| Scripts {
        acquire: redis::Script::new(ACQUIRE_LUA),
        release: redis::Script::new(RELEASE_LUA),
        renew: redis::Script::new(RENEW_LUA),
    })
}
