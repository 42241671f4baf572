//! EVAL / EVALSHA / SCRIPT: the script cache and running a script
//! atomically against the server.
//!
//! Why atomicity is free here: the server is single-threaded and a script
//! runs to completion inside one command, so nothing interleaves; every
//! write it makes is collected by the keyspace and shipped to replicas as
//! one batch when the command ends (Redis 7's effects replication).
//!
//! The cache and Lua state belong to one server instance, so a restart or
//! `SCRIPT FLUSH` empties them (clients see NOSCRIPT and reload). The
//! `math.random` generator is process-global in Redis (`redisLrand48`), so
//! it survives `SCRIPT FLUSH` here too; it is seeded with 0 when the
//! instance starts, and never touched by anything but scripts.

use std::cell::Cell;

use super::cmd::{err, parse_i64};
use super::exec::Exec;
use super::frame::Frame;
use super::script_cache::NOSCRIPT;

/// EVAL (`by_sha = false`) and EVALSHA (`by_sha = true`).
pub(crate) fn eval(exec: &mut Exec<'_>, args: &[Vec<u8>], by_sha: bool) -> Frame {
    let Some(numkeys) = parse_i64(&args[2]) else {
        return Frame::error(err::NOT_INTEGER);
    };
    let available = (args.len() - 3) as i64;
    if numkeys > available {
        return Frame::error("ERR Number of keys can't be greater than number of args");
    }
    if numkeys < 0 {
        return Frame::error("ERR Number of keys can't be negative");
    }
    let split = 3 + numkeys as usize;
    let (keys, argv) = (&args[3..split], &args[split..]);
    let server = exec.server;
    let sha = if by_sha {
        if args[1].len() != 40 {
            return Frame::error(NOSCRIPT);
        }
        let sha = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
        if !server.scripting.borrow().cache.contains_key(&sha) {
            return Frame::error(NOSCRIPT);
        }
        sha
    } else {
        match server.scripting.borrow_mut().load(&args[1]) {
            Ok(sha) => sha,
            Err(e) => return e,
        }
    };
    let scripting = server.scripting.borrow();
    let (Some(engine), Some(function)) = (scripting.engine.as_ref(), scripting.cache.get(&sha))
    else {
        return Frame::error(NOSCRIPT);
    };
    // The script's own db (its SELECT does not leak to the caller) and its
    // fixed time (keys do not expire mid-script, as in Redis).
    let db = Cell::new(exec.db);
    let now_ms = exec.now_ms;
    let backend = |call_args: &[Vec<u8>]| {
        let mut current = db.get();
        let reply = server.execute_from_script(&mut current, now_ms, call_args);
        db.set(current);
        reply
    };
    engine.run(function, &sha, keys, argv, &backend)
}

/// SCRIPT LOAD | EXISTS | FLUSH | KILL | HELP.
pub(crate) fn script(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Frame {
    use super::cmd::{is, unknown_subcommand, wrong_arity};
    let sub = &args[1];
    let mut scripting = exec.server.scripting.borrow_mut();
    if is(sub, "LOAD") {
        if args.len() != 3 {
            return wrong_arity("script|load");
        }
        return match scripting.load(&args[2]) {
            Ok(sha) => Frame::Bulk(sha.into_bytes()),
            Err(e) => e,
        };
    }
    if is(sub, "EXISTS") {
        if args.len() < 3 {
            return wrong_arity("script|exists");
        }
        let found = args[2..]
            .iter()
            .map(|sha| {
                let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
                Frame::Integer(i64::from(scripting.cache.contains_key(&sha)))
            })
            .collect();
        return Frame::Array(found);
    }
    if is(sub, "FLUSH") {
        let mode_ok = match args.len() {
            2 => true,
            3 => is(&args[2], "SYNC") || is(&args[2], "ASYNC"),
            _ => false,
        };
        if !mode_ok {
            return Frame::error("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
        }
        scripting.flush();
        return Frame::ok();
    }
    if is(sub, "KILL") {
        if args.len() != 2 {
            return wrong_arity("script|kill");
        }
        return Frame::error("NOTBUSY No scripts in execution right now.");
    }
    if is(sub, "HELP") {
        if args.len() != 2 {
            return wrong_arity("script|help");
        }
        return Frame::Array(HELP.iter().map(Frame::simple).collect());
    }
    unknown_subcommand("script", sub)
}

/// `SCRIPT HELP`, as redis-server 7.0.15 prints it.
const HELP: &[&str] = &[
    "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DEBUG (YES|SYNC|NO)",
    "    Set the debug mode for subsequent scripts executed.",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
    "HELP",
    "    Prints this help.",
];
