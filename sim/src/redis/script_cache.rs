//! One server instance's scripting state: the Lua engine (created on first
//! use) and the cache of compiled scripts by sha1, with its bound.
//!
//! Apart from `scripting.rs` (EVAL, EVALSHA, SCRIPT), which runs scripts
//! against the server: the server owns this state and depends on this file
//! only, so the server and the command handlers never import each other.

use std::collections::BTreeMap;

use mlua::Function;

use super::err;
use super::frame::Frame;
use super::lua::{LuaEngine, Rand48};
use super::lua_pool;

/// Most scripts cached at once; loading more is refused (OOM) rather than
/// letting a runaway client grow the cache without bound.
pub(crate) const SCRIPTS_MAX: usize = 100_000;

pub(crate) const NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";

/// One server instance's scripting state.
pub(crate) struct Scripting {
    /// Created on first use; dropped by SCRIPT FLUSH.
    pub(crate) engine: Option<LuaEngine>,
    /// sha1 (lowercase hex) → compiled function.
    pub(crate) cache: BTreeMap<String, Function>,
    pub(crate) rand: Rand48,
}

impl Scripting {
    pub(crate) fn new() -> Self {
        Self {
            engine: None,
            cache: BTreeMap::new(),
            rand: Rand48::new(),
        }
    }

    pub(crate) fn engine(&mut self) -> Result<&LuaEngine, Frame> {
        if self.engine.is_none() {
            let engine = lua_pool::take(&self.rand)
                .map_err(|e| Frame::error(format!("ERR cannot start Lua: {e}")))?;
            self.engine = Some(engine);
        }
        self.engine
            .as_ref()
            .ok_or_else(|| Frame::error("ERR cannot start Lua"))
    }

    /// Compiles and caches `body`; returns its sha1.
    pub(crate) fn load(&mut self, body: &[u8]) -> Result<String, Frame> {
        let sha = sha1_smol::Sha1::from(body).digest().to_string();
        if self.cache.contains_key(&sha) {
            return Ok(sha);
        }
        if self.cache.len() >= SCRIPTS_MAX {
            return Err(Frame::error(err::OOM));
        }
        let function = self.engine()?.compile(body).map_err(|msg| {
            Frame::error(format!("ERR Error compiling script (new function): {msg}"))
        })?;
        self.cache.insert(sha.clone(), function);
        Ok(sha)
    }

    pub(crate) fn flush(&mut self) {
        // Functions reference the Lua state: drop them before it.
        self.cache.clear();
        if let Some(engine) = self.engine.take() {
            lua_pool::give_back(engine);
        }
    }
}

impl Drop for Scripting {
    /// The instance ends (its server is dropped or restarted): its engine
    /// goes back to the thread's pool for the next instance.
    fn drop(&mut self) {
        self.flush();
    }
}
