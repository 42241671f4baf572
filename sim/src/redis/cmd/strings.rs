//! String commands: GET, GETDEL, SET (NX XX GET EX PX EXAT PXAT KEEPTTL),
//! SETNX, SETEX, PSETEX, INCR, INCRBY, DECR, DECRBY — the lock's data path
//! and the counters fence schemes use.
//!
//! Option parsing and error precedence follow Redis 7.0's
//! `parseExtendedStringArgumentsOrReply`, `getExpireMillisecondsOrReply` and
//! `setGenericCommand`: options are validated first (one expire kind only,
//! though the same kind may repeat, the last one winning), then the expire
//! time, then (with GET) the old value's type, and only then NX/XX decide.
//! EXAT/PXAT take Unix times (see `clock.rs` for what "Unix" means here).
//!
//! A SET whose EXAT/PXAT lies already in the past stores the key anyway,
//! logically expired, as Redis 7.0 does (DBSIZE counts it until it is
//! noticed); a lock key's ownership log then shows the new holder `Set` and
//! `Expired` at its deadline, which lies before the `Set` (a Unix time
//! before the timeline's start counts as its first millisecond).

use super::super::exec::Exec;
use super::super::frame::Frame;
use super::super::keyspace::{Entry, Value};
use super::{err, int_arg, is, parse_i64, Outcome};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    Seconds,
    Millis,
}

/// An expire option: relative (EX/PX) or absolute (EXAT/PXAT).
#[derive(Clone, Copy, PartialEq, Eq)]
struct ExpireKind {
    unit: Unit,
    absolute: bool,
}

const EX: ExpireKind = ExpireKind {
    unit: Unit::Seconds,
    absolute: false,
};
const PX: ExpireKind = ExpireKind {
    unit: Unit::Millis,
    absolute: false,
};
const EXAT: ExpireKind = ExpireKind {
    unit: Unit::Seconds,
    absolute: true,
};
const PXAT: ExpireKind = ExpireKind {
    unit: Unit::Millis,
    absolute: true,
};

/// Redis's `getExpireMillisecondsOrReply`: the argument as a deadline on
/// the timeline, or `invalid expire time in '<cmd>' command`.
fn expire_deadline(
    exec: &Exec<'_>,
    arg: &[u8],
    kind: ExpireKind,
    command: &str,
) -> Result<u64, Frame> {
    let invalid = || Frame::error(format!("ERR invalid expire time in '{command}' command"));
    let amount = int_arg(arg)?;
    if amount <= 0 || (kind.unit == Unit::Seconds && amount > i64::MAX / 1000) {
        return Err(invalid());
    }
    let ms = if kind.unit == Unit::Seconds {
        amount * 1000
    } else {
        amount
    };
    let now_unix_ms = exec.unix_now_ms();
    let when_unix_ms = if kind.absolute {
        ms
    } else {
        ms.checked_add(now_unix_ms).ok_or_else(invalid)?
    };
    Ok(exec.deadline_of_unix(when_unix_ms).unwrap_or(0))
}

/// The string value of `key`, `Ok(None)` when missing, WRONGTYPE otherwise.
fn get_string(exec: &Exec<'_>, key: &[u8]) -> Result<Option<Vec<u8>>, Frame> {
    match exec.keyspace().lookup(exec.db, key, exec.now_ms) {
        None => Ok(None),
        Some(Entry {
            value: Value::Str(s),
            ..
        }) => Ok(Some(s.clone())),
        Some(_) => Err(Frame::error(err::WRONGTYPE)),
    }
}

pub(super) fn get(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    match get_string(exec, &args[1]) {
        Ok(Some(value)) => Frame::Bulk(value),
        Ok(None) => Frame::Null,
        Err(e) => e,
    }
    .into()
}

/// GETDEL: GET, then DEL when there was a string (a lock key logs
/// `Deleted`, as DEL does).
pub(super) fn getdel(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    match get_string(exec, &args[1]) {
        Ok(Some(value)) => {
            exec.keyspace().delete(exec.db, &args[1], exec.now_ms);
            Frame::Bulk(value)
        }
        Ok(None) => Frame::Null,
        Err(e) => e,
    }
    .into()
}

#[derive(Default)]
struct SetOptions {
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    /// (argument index, kind) of EX/PX/EXAT/PXAT.
    expire: Option<(usize, ExpireKind)>,
}

fn parse_set_options(args: &[Vec<u8>]) -> Result<SetOptions, Frame> {
    let mut o = SetOptions::default();
    let mut j = 3;
    while j < args.len() {
        let opt = &args[j];
        let has_next = j + 1 < args.len();
        // An expire kind may repeat but never mix with another one or
        // with KEEPTTL.
        let expire_ok =
            |kind: ExpireKind| !o.keepttl && o.expire.is_none_or(|(_, k)| k == kind) && has_next;
        let kind = [("EX", EX), ("PX", PX), ("EXAT", EXAT), ("PXAT", PXAT)]
            .into_iter()
            .find(|(name, _)| is(opt, name))
            .map(|(_, kind)| kind);
        if is(opt, "NX") && !o.xx {
            o.nx = true;
        } else if is(opt, "XX") && !o.nx {
            o.xx = true;
        } else if is(opt, "GET") {
            o.get = true;
        } else if is(opt, "KEEPTTL") && o.expire.is_none() {
            o.keepttl = true;
        } else if let Some(kind) = kind.filter(|k| expire_ok(*k)) {
            o.expire = Some((j + 1, kind));
            j += 1;
        } else {
            return Err(Frame::error(err::SYNTAX));
        }
        j += 1;
    }
    Ok(o)
}

/// Redis's `setGenericCommand`.
fn set_generic(
    exec: &mut Exec<'_>,
    key: &[u8],
    value: &[u8],
    o: &SetOptions,
    expire: Option<(&[u8], ExpireKind)>,
    command: &str,
) -> Frame {
    let deadline = match expire {
        Some((arg, kind)) => match expire_deadline(exec, arg, kind, command) {
            Ok(d) => Some(d),
            Err(e) => return e,
        },
        None => None,
    };
    let old = if o.get {
        match get_string(exec, key) {
            Ok(old) => Some(old),
            Err(e) => return e,
        }
    } else {
        None
    };
    let mut ks = exec.keyspace();
    let existing = ks.lookup(exec.db, key, exec.now_ms).cloned();
    let found = existing.is_some();
    if (o.nx && found) || (o.xx && !found) {
        return match old {
            Some(Some(v)) => Frame::Bulk(v),
            _ => Frame::Null,
        };
    }
    let expires_at_ms = match deadline {
        Some(d) => Some(d),
        None if o.keepttl => existing.and_then(|e| e.expires_at_ms),
        None => None,
    };
    let entry = Entry {
        value: Value::Str(value.to_vec()),
        expires_at_ms,
    };
    ks.put(exec.db, key, entry, exec.now_ms);
    reply_after_set(old)
}

fn reply_after_set(old: Option<Option<Vec<u8>>>) -> Frame {
    match old {
        Some(Some(v)) => Frame::Bulk(v),
        Some(None) => Frame::Null,
        None => Frame::ok(),
    }
}

pub(super) fn set(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    let o = match parse_set_options(args) {
        Ok(o) => o,
        Err(e) => return e.into(),
    };
    let expire = o.expire.map(|(i, kind)| (args[i].as_slice(), kind));
    set_generic(exec, &args[1], &args[2], &o, expire, "set").into()
}

pub(super) fn setnx(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    let mut ks = exec.keyspace();
    if ks.lookup(exec.db, &args[1], exec.now_ms).is_some() {
        return Frame::Integer(0).into();
    }
    let entry = Entry {
        value: Value::Str(args[2].clone()),
        expires_at_ms: None,
    };
    ks.put(exec.db, &args[1], entry, exec.now_ms);
    Frame::Integer(1).into()
}

pub(super) fn setex(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    let o = SetOptions::default();
    set_generic(exec, &args[1], &args[3], &o, Some((&args[2], EX)), "setex").into()
}

pub(super) fn psetex(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    let o = SetOptions::default();
    set_generic(exec, &args[1], &args[3], &o, Some((&args[2], PX)), "psetex").into()
}

/// Redis's `incrDecrCommand`: the value must be a string holding an
/// integer; the TTL is kept.
fn incr_decr(exec: &mut Exec<'_>, key: &[u8], by: i64) -> Frame {
    let mut ks = exec.keyspace();
    let (current, expires_at_ms) = match ks.lookup(exec.db, key, exec.now_ms) {
        None => (0, None),
        Some(Entry {
            value: Value::Str(s),
            expires_at_ms,
        }) => match parse_i64(s) {
            Some(n) => (n, *expires_at_ms),
            None => return Frame::error(err::NOT_INTEGER),
        },
        Some(_) => return Frame::error(err::WRONGTYPE),
    };
    let Some(next) = current.checked_add(by) else {
        return Frame::error(err::OVERFLOW);
    };
    let entry = Entry {
        value: Value::Str(next.to_string().into_bytes()),
        expires_at_ms,
    };
    ks.put(exec.db, key, entry, exec.now_ms);
    Frame::Integer(next)
}

pub(super) fn incr(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    incr_decr(exec, &args[1], 1).into()
}

pub(super) fn decr(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    incr_decr(exec, &args[1], -1).into()
}

pub(super) fn incrby(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    match int_arg(&args[2]) {
        Ok(by) => incr_decr(exec, &args[1], by),
        Err(e) => e,
    }
    .into()
}

/// DECRBY refuses `i64::MIN` before looking at the key (its negation would
/// overflow), with its own text.
pub(super) fn decrby(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    match int_arg(&args[2]) {
        Ok(i64::MIN) => Frame::error("ERR decrement would overflow"),
        Ok(by) => incr_decr(exec, &args[1], -by),
        Err(e) => e,
    }
    .into()
}
