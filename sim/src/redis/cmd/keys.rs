//! Generic key commands: DEL, EXISTS, TYPE, EXPIRE, PEXPIRE, PEXPIREAT
//! (with NX XX GT LT), TTL, PTTL, DBSIZE, FLUSHDB, FLUSHALL.
//!
//! EXPIRE/PEXPIRE/PEXPIREAT follow Redis 7.0's `expireGenericCommand` step
//! by step: options first, then the integer, then overflow checks against
//! Unix milliseconds (the base is now for relative commands, 0 for
//! PEXPIREAT; see `clock.rs` for what "Unix" means here), then the key
//! lookup, then NX/XX/GT/LT, and a deadline already in the past deletes the
//! key (on a primary) and answers 1.

use super::super::exec::Exec;
use super::super::frame::Frame;
use super::super::keyspace::Entry;
use super::{c_str, err, int_arg, is, Outcome};

pub(super) fn del(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    let mut ks = exec.keyspace();
    let deleted = args[1..]
        .iter()
        .filter(|key| ks.delete(exec.db, key, exec.now_ms))
        .count();
    Frame::Integer(deleted as i64).into()
}

pub(super) fn exists(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    let mut ks = exec.keyspace();
    // Each argument counts, so a key named twice counts twice (as Redis).
    let found = args[1..]
        .iter()
        .filter(|key| ks.lookup(exec.db, key, exec.now_ms).is_some())
        .count();
    Frame::Integer(found as i64).into()
}

/// TYPE: `string`, `list`, `hash`, or `none` for a missing key.
pub(super) fn type_(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    let mut ks = exec.keyspace();
    let name = ks
        .lookup(exec.db, &args[1], exec.now_ms)
        .map_or("none", |e| e.value.type_name());
    Frame::simple(name).into()
}

pub(super) fn expire(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    expire_generic(exec, args, 1000, false, "expire").into()
}

pub(super) fn pexpire(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    expire_generic(exec, args, 1, false, "pexpire").into()
}

pub(super) fn pexpireat(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    expire_generic(exec, args, 1, true, "pexpireat").into()
}

#[derive(Default)]
struct ExpireFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

fn expire_flags(args: &[Vec<u8>]) -> Result<ExpireFlags, Frame> {
    let mut f = ExpireFlags::default();
    for opt in &args[3..] {
        if is(opt, "NX") {
            f.nx = true;
        } else if is(opt, "XX") {
            f.xx = true;
        } else if is(opt, "GT") {
            f.gt = true;
        } else if is(opt, "LT") {
            f.lt = true;
        } else {
            let mut text = b"ERR Unsupported option ".to_vec();
            text.extend_from_slice(c_str(opt));
            return Err(Frame::error(text));
        }
    }
    if f.nx && (f.xx || f.gt || f.lt) {
        return Err(Frame::error(
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if f.gt && f.lt {
        return Err(Frame::error(
            "ERR GT and LT options at the same time are not compatible",
        ));
    }
    Ok(f)
}

fn expire_generic(
    exec: &mut Exec<'_>,
    args: &[Vec<u8>],
    unit_ms: i64,
    absolute: bool,
    command: &str,
) -> Frame {
    let invalid = || Frame::error(format!("ERR invalid expire time in '{command}' command"));
    let flags = match expire_flags(args) {
        Ok(f) => f,
        Err(e) => return e,
    };
    let mut when = match int_arg(&args[2]) {
        Ok(n) => n,
        Err(e) => return e,
    };
    if unit_ms == 1000 {
        if !(i64::MIN / 1000..=i64::MAX / 1000).contains(&when) {
            return invalid();
        }
        when *= 1000;
    }
    let now_wall_ms = exec.unix_now_ms();
    let base_ms = if absolute { 0 } else { now_wall_ms };
    if when > i64::MAX - base_ms {
        return invalid();
    }
    let when_wall_ms = when + base_ms;
    let key = &args[1];
    let mut ks = exec.keyspace();
    let Some(entry) = ks.lookup(exec.db, key, exec.now_ms).cloned() else {
        return Frame::Integer(0);
    };
    // Current deadline in wall ms; -1 for "no TTL" as in Redis.
    let current = entry.expires_at_ms.map_or(-1, |d| exec.unix_ms_of(d));
    let refused = (flags.nx && current != -1)
        || (flags.xx && current == -1)
        || (flags.gt && (when_wall_ms <= current || current == -1))
        || (flags.lt && current != -1 && when_wall_ms >= current);
    if refused {
        return Frame::Integer(0);
    }
    if when_wall_ms <= now_wall_ms {
        // Already in the past: Redis deletes right away (primaries only;
        // replicas never get here since EXPIRE is a write).
        ks.delete(exec.db, key, exec.now_ms);
        return Frame::Integer(1);
    }
    let Some(deadline_ms) = exec.deadline_of_unix(when_wall_ms) else {
        return invalid();
    };
    ks.put(
        exec.db,
        key,
        Entry {
            value: entry.value,
            expires_at_ms: Some(deadline_ms),
        },
        exec.now_ms,
    );
    Frame::Integer(1)
}

fn ttl_generic(exec: &mut Exec<'_>, key: &[u8], output_ms: bool) -> Frame {
    let mut ks = exec.keyspace();
    let Some(entry) = ks.lookup(exec.db, key, exec.now_ms) else {
        return Frame::Integer(-2);
    };
    match entry.expires_at_ms {
        None => Frame::Integer(-1),
        Some(deadline_ms) => {
            let ttl_ms = deadline_ms.saturating_sub(exec.now_ms) as i64;
            Frame::Integer(if output_ms {
                ttl_ms
            } else {
                (ttl_ms + 500) / 1000
            })
        }
    }
}

pub(super) fn ttl(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    ttl_generic(exec, &args[1], false).into()
}

pub(super) fn pttl(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    ttl_generic(exec, &args[1], true).into()
}

pub(super) fn dbsize(exec: &mut Exec<'_>, _args: &[Vec<u8>]) -> Outcome {
    Frame::Integer(exec.keyspace().db_len(exec.db) as i64).into()
}

/// FLUSHDB/FLUSHALL accept an optional ASYNC or SYNC (both synchronous here).
fn flush_mode_ok(args: &[Vec<u8>]) -> Result<(), Frame> {
    match args.len() {
        1 => Ok(()),
        2 if is(&args[1], "SYNC") || is(&args[1], "ASYNC") => Ok(()),
        _ => Err(Frame::error(err::SYNTAX)),
    }
}

pub(super) fn flushdb(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    if let Err(e) = flush_mode_ok(args) {
        return e.into();
    }
    exec.keyspace().flush(Some(exec.db), exec.now_ms);
    Frame::ok().into()
}

pub(super) fn flushall(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    if let Err(e) = flush_mode_ok(args) {
        return e.into();
    }
    exec.keyspace().flush(None, exec.now_ms);
    Frame::ok().into()
}
