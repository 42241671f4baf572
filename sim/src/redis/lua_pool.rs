//! Warm Lua engines, kept per thread between server instances.
//!
//! Why: every simulated run starts its servers afresh, and each server's
//! first script made a Lua state, ran the prelude and loaded the lock's
//! scripts — about a tenth of a simulated run (profiled: `LuaEngine::new`,
//! `Scripting::load` and the state's drop under the harness bench). An
//! engine handed back when its server instance ends (dropped, restarted or
//! `SCRIPT FLUSH`ed) is reset and given to the next instance on the thread,
//! with the functions it compiled still in it.
//!
//! Why the reuse cannot carry state from one instance to the next: scripts
//! run in the sandbox, whose globals and library tables are read-only even
//! to `rawset` (see `lua.rs`), so a script leaves nothing behind but
//! garbage and the collector's settings (`collectgarbage('stop')`, a pause,
//! a step), which the reset puts back to Lua's defaults; `KEYS` and `ARGV`
//! are removed by the reset; `math.random` reads
//! the generator of the instance that holds the engine (swapped on take);
//! a compiled script is a closure over the read-only sandbox, pure as its
//! text; and what the last instance left is unreachable garbage, which the
//! incremental collector frees as the next instance's scripts run (a full
//! collection is made on return only above `RESET_HEAP_BYTES_MAX`, so the
//! garbage an engine carries is bounded far below the heap cap, and a
//! thread's pool keeps at most `POOL_MAX` times that). What a script can
//! still observe of an engine's past is what Redis also lets it see of a
//! long-lived server's: `collectgarbage('count')` and weak tables. Kept
//! bounded: at most [`POOL_MAX`] engines a thread, each with at
//! most `COMPILED_MAX` compiled scripts (see `lua.rs`). The sweep-digest
//! test (every cell of the default sweep, byte for byte against a golden
//! file) and `sim/tests/differential.rs` run with the pool in use.

use std::cell::RefCell;

use super::lua::{LuaEngine, Rand48};

/// Most engines kept per thread. A world has at most a handful of server
/// instances alive at once (a primary, replicas, Redlock masters), and
/// each returns its engine when it ends.
const POOL_MAX: usize = 16;

thread_local! {
    /// Engines handed back on this thread, ready to be taken. `Lua` is not
    /// `Send`, hence per thread.
    static POOL: RefCell<Vec<LuaEngine>> = const { RefCell::new(Vec::new()) };
}

/// An engine for a new instance whose `math.random` is `rand`: a warm one
/// from this thread's pool, or a new one.
pub(crate) fn take(rand: &Rand48) -> mlua::Result<LuaEngine> {
    // `try_with`: during a thread's teardown the pool may be gone already.
    let warm = POOL
        .try_with(|pool| pool.try_borrow_mut().ok().and_then(|mut pool| pool.pop()))
        .ok()
        .flatten();
    let engine = match warm {
        Some(engine) => engine,
        None => LuaEngine::new()?,
    };
    engine.use_rand(rand.clone());
    Ok(engine)
}

/// Hands `engine` back when its instance ends. An engine in the middle of
/// a panic, or one the reset fails on, is dropped instead.
pub(crate) fn give_back(engine: LuaEngine) {
    if std::thread::panicking() || engine.reset().is_err() {
        return;
    }
    // `try_with`, `try_borrow_mut`: a thread being torn down may drop
    // servers (and so hand engines back) while its pool is already gone or
    // being dropped; then the engine is simply dropped.
    let _ = POOL.try_with(|pool| {
        if let Ok(mut pool) = pool.try_borrow_mut() {
            if pool.len() < POOL_MAX {
                pool.push(engine);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::frame::Frame;

    const COUNTER: &[u8] = b"math.randomseed(tonumber(ARGV[1])) \
        return {math.random(1000), #KEYS, ARGV[1]}";

    fn run(engine: &LuaEngine, body: &[u8], keys: &[&[u8]], argv: &[&[u8]]) -> Frame {
        let function = engine.compile(body).expect("compiles");
        let keys: Vec<Vec<u8>> = keys.iter().map(|k| k.to_vec()).collect();
        let argv: Vec<Vec<u8>> = argv.iter().map(|a| a.to_vec()).collect();
        engine.run(&function, "sha", &keys, &argv, &|_| Frame::ok())
    }

    /// What an instance's first scripts answer: the generator first, so
    /// a generator carried over from the last instance would show.
    fn battery(engine: &LuaEngine) -> Vec<Frame> {
        vec![
            run(engine, b"return math.random(50)", &[], &[]),
            run(engine, COUNTER, &[b"k"], &[b"7"]),
            run(engine, b"return redis.call('GET', KEYS[1])", &[b"k"], &[]),
            run(engine, b"x = 1", &[], &[]),
            run(engine, b"return rawset(_G, 'x', 1)", &[], &[]),
        ]
    }

    #[test]
    fn a_warm_engine_answers_as_a_fresh_one() {
        let fresh = LuaEngine::new().expect("lua");
        fresh.use_rand(Rand48::new());
        let expected = battery(&fresh);
        // Used by an instance that draws and reseeds, leaves KEYS and ARGV
        // set and tries to write globals; then handed back and taken again.
        let first = take(&Rand48::new()).expect("lua");
        let _ = run(&first, b"return math.random(50)", &[], &[]);
        let _ = run(&first, COUNTER, &[b"a", b"b", b"c"], &[b"99"]);
        let _ = run(&first, b"x = 1", &[], &[]);
        let _ = run(&first, b"string.rep = nil", &[], &[]);
        give_back(first);
        assert_eq!(POOL.with(|pool| pool.borrow().len()), 1, "handed back");
        let second = take(&Rand48::new()).expect("lua");
        assert_eq!(POOL.with(|pool| pool.borrow().len()), 0, "taken warm");
        assert_eq!(battery(&second), expected);
        let keys_left = run(&second, b"return type(KEYS)", &[], &[]);
        assert_eq!(
            keys_left,
            Frame::Bulk(b"table".to_vec()),
            "KEYS is set per call"
        );
        give_back(second);
        let third = take(&Rand48::new()).expect("lua");
        let globals = third.lua.globals();
        assert!(
            globals
                .raw_get::<mlua::Value>("KEYS")
                .expect("read")
                .is_nil()
                && globals
                    .raw_get::<mlua::Value>("ARGV")
                    .expect("read")
                    .is_nil(),
            "a handed-back engine keeps no KEYS or ARGV"
        );
    }

    #[test]
    fn a_handed_back_engine_carries_at_most_the_reset_bound() {
        use crate::redis::lua::RESET_HEAP_BYTES_MAX;
        let engine = take(&Rand48::new()).expect("lua");
        let warm_bytes = engine.heap_bytes();
        assert!(
            warm_bytes * 2 < RESET_HEAP_BYTES_MAX,
            "a warm engine ({warm_bytes} bytes) is well below the bound"
        );
        // A script that leaves megabytes of garbage behind (a local table of
        // 64 KB strings, unreachable once it returns).
        let garbage =
            b"local t = {} for i = 1, 64 do t[i] = string.rep('x', 65536) .. i end return #t";
        assert_eq!(run(&engine, garbage, &[], &[]), Frame::Integer(64));
        assert!(
            engine.heap_bytes() > RESET_HEAP_BYTES_MAX,
            "the script left more than the bound ({} bytes)",
            engine.heap_bytes()
        );
        give_back(engine);
        let again = take(&Rand48::new()).expect("lua");
        assert!(
            again.heap_bytes() <= RESET_HEAP_BYTES_MAX,
            "collected on return: {} bytes",
            again.heap_bytes()
        );
        // A little garbage is left for the incremental collector.
        let _ = run(
            &again,
            b"local s = string.rep('x', 1000) return #s",
            &[],
            &[],
        );
        let before = again.heap_bytes();
        give_back(again);
        let third = take(&Rand48::new()).expect("lua");
        assert!(
            third.heap_bytes() >= before,
            "no full collection below the bound: {} bytes after, {before} before",
            third.heap_bytes()
        );
    }

    #[test]
    fn a_collector_a_script_stopped_runs_again_in_the_next_instance() {
        // 20,000 short strings: about 1.2 MB of garbage if nothing collects
        // it; with the collector running the heap stays near its live size.
        const CHURN: &[u8] = b"for i = 1, 20000 do local s = 'churn-' .. i end return 1";
        let engine = take(&Rand48::new()).expect("lua");
        let live_bytes = engine.heap_bytes();
        let _ = run(&engine, b"collectgarbage('stop') return 1", &[], &[]);
        let _ = run(&engine, CHURN, &[], &[]);
        let stopped_bytes = engine.heap_bytes();
        give_back(engine);
        let next = take(&Rand48::new()).expect("lua");
        let _ = run(
            &next,
            b"collectgarbage('setpause', 1000) return 1",
            &[],
            &[],
        );
        give_back(next);
        let third = take(&Rand48::new()).expect("lua");
        let _ = run(&third, CHURN, &[], &[]);
        let running_bytes = third.heap_bytes();
        assert!(
            stopped_bytes > live_bytes + 1_000_000,
            "stopped, the collector freed nothing: {stopped_bytes} bytes from {live_bytes}"
        );
        assert!(
            running_bytes < live_bytes * 3,
            "the collector runs with the default pause again: {running_bytes} bytes, \
             {live_bytes} live"
        );
    }

    #[test]
    fn the_pool_is_bounded() {
        let engines: Vec<LuaEngine> = (0..POOL_MAX + 4)
            .map(|_| take(&Rand48::new()).expect("lua"))
            .collect();
        for engine in engines {
            give_back(engine);
        }
        assert_eq!(POOL.with(|pool| pool.borrow().len()), POOL_MAX);
    }
}
