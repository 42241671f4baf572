//! Hash commands: HSET, HGET, HINCRBY, HDEL, HEXISTS, HGETALL — what
//! reentrant locks (Redisson-style: lock key → {owner: hold count}) send.
//!
//! Texts and order of checks are Redis 7.0's (`t_hash.c`): HSET checks its
//! pair count before the key; HINCRBY parses the increment before looking
//! the key up, says `hash value is not an integer` for a field that is not
//! one, and refuses to overflow. A hash whose last field is deleted is
//! deleted, as in Redis.
//!
//! Order: a hash keeps its fields in insertion order (an update keeps the
//! field's place, a deleted field leaves a gap that closes), which is the
//! order HGETALL answers and Redis's listpack order; Redis switches a hash
//! of more than 128 fields (or a value over 64 bytes) to a hash table whose
//! order cannot be reproduced, so HGETALL on such a hash deviates. Hashes are
//! bounded by [`HASH_FIELDS_MAX`] (Redis's OOM error past it).
//!
//! Ownership log: only string values under the lock prefix have a holder,
//! so hash writes never log (see `keyspace.rs`).

use super::super::exec::Exec;
use super::super::frame::Frame;
use super::super::keyspace::{Entry, Value, HASH_FIELDS_MAX};
use super::{err, int_arg, parse_i64, wrong_arity, Outcome};

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// The hash at `key` (empty and without deadline when missing), or
/// WRONGTYPE.
fn read(exec: &Exec<'_>, key: &[u8]) -> Result<(Fields, Option<u64>), Frame> {
    match exec.keyspace().lookup(exec.db, key, exec.now_ms) {
        None => Ok((Vec::new(), None)),
        Some(Entry {
            value: Value::Hash(fields),
            expires_at_ms,
        }) => Ok((fields.clone(), *expires_at_ms)),
        Some(_) => Err(Frame::error(err::WRONGTYPE)),
    }
}

fn write(exec: &Exec<'_>, key: &[u8], fields: Fields, expires_at_ms: Option<u64>) {
    let mut ks = exec.keyspace();
    if fields.is_empty() {
        ks.delete(exec.db, key, exec.now_ms);
        return;
    }
    let entry = Entry {
        value: Value::Hash(fields),
        expires_at_ms,
    };
    ks.put(exec.db, key, entry, exec.now_ms);
}

fn position(fields: &Fields, field: &[u8]) -> Option<usize> {
    fields.iter().position(|(f, _)| f == field)
}

/// Sets `field`, keeping its place if it exists; returns whether it is new.
fn set_field(fields: &mut Fields, field: &[u8], value: Vec<u8>) -> bool {
    match position(fields, field) {
        Some(i) => {
            fields[i].1 = value;
            false
        }
        None => {
            fields.push((field.to_vec(), value));
            true
        }
    }
}

pub(super) fn hset(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    if args.len() % 2 == 1 {
        return wrong_arity("hset").into();
    }
    let key = &args[1];
    let (mut fields, expires_at_ms) = match read(exec, key) {
        Ok(found) => found,
        Err(e) => return e.into(),
    };
    if fields.len() + (args.len() - 2) / 2 > HASH_FIELDS_MAX {
        return Frame::error(err::OOM).into();
    }
    let created = args[2..]
        .chunks_exact(2)
        .filter(|pair| set_field(&mut fields, &pair[0], pair[1].clone()))
        .count();
    write(exec, key, fields, expires_at_ms);
    Frame::Integer(created as i64).into()
}

pub(super) fn hget(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    match read(exec, &args[1]) {
        Ok((fields, _)) => match position(&fields, &args[2]) {
            Some(i) => Frame::Bulk(fields[i].1.clone()),
            None => Frame::Null,
        },
        Err(e) => e,
    }
    .into()
}

pub(super) fn hexists(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    match read(exec, &args[1]) {
        Ok((fields, _)) => Frame::Integer(i64::from(position(&fields, &args[2]).is_some())),
        Err(e) => e,
    }
    .into()
}

pub(super) fn hgetall(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    match read(exec, &args[1]) {
        Ok((fields, _)) => Frame::Array(
            fields
                .into_iter()
                .flat_map(|(f, v)| [Frame::Bulk(f), Frame::Bulk(v)])
                .collect(),
        ),
        Err(e) => e,
    }
    .into()
}

pub(super) fn hincrby(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    let by = match int_arg(&args[3]) {
        Ok(by) => by,
        Err(e) => return e.into(),
    };
    let key = &args[1];
    let (mut fields, expires_at_ms) = match read(exec, key) {
        Ok(found) => found,
        Err(e) => return e.into(),
    };
    let current = match position(&fields, &args[2]) {
        Some(i) => match parse_i64(&fields[i].1) {
            Some(n) => n,
            None => return Frame::error("ERR hash value is not an integer").into(),
        },
        None => 0,
    };
    let Some(next) = current.checked_add(by) else {
        return Frame::error(err::OVERFLOW).into();
    };
    if fields.len() >= HASH_FIELDS_MAX && position(&fields, &args[2]).is_none() {
        return Frame::error(err::OOM).into();
    }
    set_field(&mut fields, &args[2], next.to_string().into_bytes());
    write(exec, key, fields, expires_at_ms);
    Frame::Integer(next).into()
}

pub(super) fn hdel(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    let key = &args[1];
    let (mut fields, expires_at_ms) = match read(exec, key) {
        Ok(found) => found,
        Err(e) => return e.into(),
    };
    let mut deleted = 0;
    for field in &args[2..] {
        if let Some(i) = position(&fields, field) {
            fields.remove(i);
            deleted += 1;
        }
    }
    // Nothing deleted is no write (watchers stay clean, nothing replicates).
    if deleted > 0 {
        write(exec, key, fields, expires_at_ms);
    }
    Frame::Integer(deleted).into()
}
