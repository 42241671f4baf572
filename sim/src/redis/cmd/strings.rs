//! String commands: GET, SET (NX XX GET EX PX KEEPTTL), SETNX, SETEX,
//! PSETEX, INCR — the lock's data path.
//!
//! Option parsing and error precedence follow Redis 7.0's
//! `parseExtendedStringArgumentsOrReply` and `setGenericCommand`: options
//! are validated first, then the expire time, then (with GET) the old
//! value's type, and only then NX/XX decide. EXAT/PXAT are not supported
//! (a syntax error here), because nothing in redfence sends them.

use super::super::clock::WALL_CLOCK_BASE_MS;
use super::super::exec::Exec;
use super::super::frame::Frame;
use super::super::keyspace::{Entry, Value};
use super::{err, int_arg, is, parse_i64, Outcome};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    Seconds,
    Millis,
}

/// Turns a relative expire argument into a timeline deadline, or Redis's
/// `invalid expire time in '<cmd>' command`.
fn relative_deadline(exec: &Exec<'_>, arg: &[u8], unit: Unit, command: &str) -> Result<u64, Frame> {
    let invalid = || Frame::error(format!("ERR invalid expire time in '{command}' command"));
    let amount = int_arg(arg)?;
    if amount <= 0 || (unit == Unit::Seconds && amount > i64::MAX / 1000) {
        return Err(invalid());
    }
    let ms = if unit == Unit::Seconds {
        amount * 1000
    } else {
        amount
    };
    let now_wall_ms = WALL_CLOCK_BASE_MS + exec.now_ms as i64;
    let when_wall_ms = ms.checked_add(now_wall_ms).ok_or_else(invalid)?;
    // `amount > 0`, so the deadline lies after now on the timeline.
    let deadline_ms = u64::try_from(when_wall_ms - WALL_CLOCK_BASE_MS).map_err(|_| invalid())?;
    debug_assert!(deadline_ms > exec.now_ms);
    Ok(deadline_ms)
}

/// The string value of `key`, `Ok(None)` when missing, WRONGTYPE for lists.
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

#[derive(Default)]
struct SetOptions {
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    /// (argument, unit) of EX/PX.
    expire: Option<(usize, Unit)>,
}

fn parse_set_options(args: &[Vec<u8>]) -> Result<SetOptions, Frame> {
    let mut o = SetOptions::default();
    let mut j = 3;
    while j < args.len() {
        let opt = &args[j];
        let has_next = j + 1 < args.len();
        let has_px = matches!(o.expire, Some((_, Unit::Millis)));
        let has_ex = matches!(o.expire, Some((_, Unit::Seconds)));
        if is(opt, "NX") && !o.xx {
            o.nx = true;
        } else if is(opt, "XX") && !o.nx {
            o.xx = true;
        } else if is(opt, "GET") {
            o.get = true;
        } else if is(opt, "KEEPTTL") && o.expire.is_none() {
            o.keepttl = true;
        } else if is(opt, "EX") && !o.keepttl && !has_px && has_next {
            o.expire = Some((j + 1, Unit::Seconds));
            j += 1;
        } else if is(opt, "PX") && !o.keepttl && !has_ex && has_next {
            o.expire = Some((j + 1, Unit::Millis));
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
    expire: Option<(&[u8], Unit)>,
    command: &str,
) -> Frame {
    let deadline_ms = match expire {
        Some((arg, unit)) => match relative_deadline(exec, arg, unit, command) {
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
    let expires_at_ms = if o.keepttl {
        existing.and_then(|e| e.expires_at_ms)
    } else {
        deadline_ms
    };
    let entry = Entry {
        value: Value::Str(value.to_vec()),
        expires_at_ms,
    };
    ks.put(exec.db, key, entry, exec.now_ms);
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
    let expire = o.expire.map(|(i, unit)| (args[i].as_slice(), unit));
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
    set_generic(
        exec,
        &args[1],
        &args[3],
        &o,
        Some((&args[2], Unit::Seconds)),
        "setex",
    )
    .into()
}

pub(super) fn psetex(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    let o = SetOptions::default();
    set_generic(
        exec,
        &args[1],
        &args[3],
        &o,
        Some((&args[2], Unit::Millis)),
        "psetex",
    )
    .into()
}

pub(super) fn incr(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    let key = &args[1];
    let mut ks = exec.keyspace();
    let (current, expires_at_ms) = match ks.lookup(exec.db, key, exec.now_ms) {
        None => (0, None),
        Some(Entry {
            value: Value::Str(s),
            expires_at_ms,
        }) => match parse_i64(s) {
            Some(n) => (n, *expires_at_ms),
            None => return Frame::error(err::NOT_INTEGER).into(),
        },
        Some(_) => return Frame::error(err::WRONGTYPE).into(),
    };
    let Some(next) = current.checked_add(1) else {
        return Frame::error(err::OVERFLOW).into();
    };
    let entry = Entry {
        value: Value::Str(next.to_string().into_bytes()),
        expires_at_ms,
    };
    ks.put(exec.db, key, entry, exec.now_ms);
    Frame::Integer(next).into()
}
