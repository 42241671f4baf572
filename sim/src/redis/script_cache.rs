//! One server instance's scripting state: the Lua engine (created on first
//! use) and the cache of compiled scripts by sha1, with its bound.
//!
//! Apart from `scripting.rs` (EVAL, EVALSHA, SCRIPT), which runs scripts
//! against the server: the server owns this state and depends on this file
//! only, so the server and the command handlers never import each other.

use std::cell::RefCell;
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

/// Most script bodies whose sha1 a thread remembers (see [`sha1_hex`]).
const SHA1_MEMO_MAX: usize = 256;
/// Longest body whose sha1 is remembered: with [`SHA1_MEMO_MAX`], at most
/// 4 MiB of bodies a thread. A lock's scripts are a few KB.
const SHA1_MEMO_BODY_BYTES_MAX: usize = 16 * 1024;

thread_local! {
    /// sha1 (lowercase hex) by script body, for [`sha1_hex`].
    static SHA1_MEMO: RefCell<BTreeMap<Vec<u8>, String>> = const { RefCell::new(BTreeMap::new()) };
}

/// The sha1 of `body`, in lowercase hex, remembered per thread.
///
/// Why: every simulated run starts its servers afresh and each worker loads
/// its scripts into each one, so the same few bodies are hashed again and
/// again: about 18,000 instructions a load for the Redlock scripts, 2.4% of
/// a `redlock-minority-partition` run (callgrind, harness bench). A lookup
/// compares bytes instead. Bounded: past [`SHA1_MEMO_MAX`] bodies, or for a
/// body longer than [`SHA1_MEMO_BODY_BYTES_MAX`], the sha1 is computed and
/// not kept.
pub(crate) fn sha1_hex(body: &[u8]) -> String {
    let hash = || sha1_smol::Sha1::from(body).digest().to_string();
    if body.len() > SHA1_MEMO_BODY_BYTES_MAX {
        return hash();
    }
    SHA1_MEMO
        .try_with(|memo| {
            let Ok(mut memo) = memo.try_borrow_mut() else {
                return hash();
            };
            if let Some(sha) = memo.get(body) {
                return sha.clone();
            }
            let sha = hash();
            if memo.len() < SHA1_MEMO_MAX {
                memo.insert(body.to_vec(), sha.clone());
            }
            sha
        })
        .unwrap_or_else(|_| hash())
}

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
        let sha = sha1_hex(body);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remembered_sha1_is_the_sha1() {
        // Redis's sha1 of `return 1` (SCRIPT LOAD answers it).
        const RETURN_ONE: &str = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db";
        assert_eq!(sha1_hex(b"return 1"), RETURN_ONE, "computed");
        let kept = SHA1_MEMO.with(|memo| memo.borrow().get(&b"return 1"[..]).cloned());
        assert_eq!(kept.as_deref(), Some(RETURN_ONE), "kept");
        assert_eq!(sha1_hex(b"return 1"), RETURN_ONE, "remembered");
        assert_ne!(sha1_hex(b"return 2"), RETURN_ONE, "by body");
    }

    #[test]
    fn a_long_body_is_hashed_and_not_kept() {
        let body = vec![b' '; SHA1_MEMO_BODY_BYTES_MAX + 1];
        assert_eq!(
            sha1_hex(&body),
            sha1_smol::Sha1::from(&body).digest().to_string()
        );
        assert!(SHA1_MEMO.with(|memo| !memo.borrow().contains_key(&body)));
    }

    #[test]
    fn the_memo_is_bounded() {
        for i in 0..SHA1_MEMO_MAX + 10 {
            let body = format!("return {i}");
            assert_eq!(
                sha1_hex(body.as_bytes()),
                sha1_smol::Sha1::from(body.as_bytes()).digest().to_string()
            );
        }
        assert_eq!(SHA1_MEMO.with(|memo| memo.borrow().len()), SHA1_MEMO_MAX);
    }
}
