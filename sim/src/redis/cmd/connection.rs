//! Connection commands: PING (also in subscribed mode), SELECT, CLIENT.
//!
//! CLIENT is minimal: SETINFO (sent by redis-rs on every connect) answers
//! `+OK` like Redis 7.2 — redis-server 7.0.15 does not know it and answers
//! `unknown subcommand`, but redis-rs ignores either answer; ID, GETNAME and
//! SETNAME work; everything else is an unknown subcommand.

use super::super::exec::Exec;
use super::super::frame::Frame;
use super::super::keyspace::DB_COUNT;
use super::{is, unknown_subcommand, wrong_arity, Outcome};

pub(super) fn ping(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    // RESP2 subscribed mode: PING answers as a push, `pong` and the message.
    let subscribed = exec
        .client
        .as_deref()
        .is_some_and(|c| !c.channels.is_empty());
    if subscribed && args.len() <= 2 {
        let message = args.get(1).cloned().unwrap_or_default();
        return Frame::Array(vec![Frame::bulk("pong"), Frame::Bulk(message)]).into();
    }
    match args.len() {
        1 => Frame::simple("PONG"),
        2 => Frame::Bulk(args[1].clone()),
        _ => wrong_arity("ping"),
    }
    .into()
}

pub(super) fn select(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    // Redis parses an int (getIntFromObjectOrReply), then checks the range.
    let index = match super::parse_i64(&args[1]) {
        Some(n) if i32::try_from(n).is_ok() => n,
        _ => return Frame::error(super::err::NOT_INTEGER).into(),
    };
    match usize::try_from(index) {
        Ok(db) if db < DB_COUNT => {
            exec.db = db;
            Frame::ok().into()
        }
        _ => Frame::error("ERR DB index is out of range").into(),
    }
}

pub(super) fn client(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    let sub = &args[1];
    let argc = args.len();
    let Some(client) = exec.client.as_deref_mut() else {
        return Frame::error("ERR This Redis command is not allowed from script").into();
    };
    if is(sub, "SETINFO") {
        if argc != 4 {
            return wrong_arity("client|setinfo").into();
        }
        return Frame::ok().into();
    }
    if is(sub, "ID") {
        if argc != 2 {
            return wrong_arity("client|id").into();
        }
        return Frame::Integer(client.id as i64).into();
    }
    if is(sub, "GETNAME") {
        if argc != 2 {
            return wrong_arity("client|getname").into();
        }
        return match &client.name {
            Some(name) => Frame::Bulk(name.clone()),
            None => Frame::Null,
        }
        .into();
    }
    if is(sub, "SETNAME") {
        if argc != 3 {
            return wrong_arity("client|setname").into();
        }
        let name = &args[2];
        if name.iter().any(|&b| b <= b' ' || b > b'~') {
            return Frame::error(
                "ERR Client names cannot contain spaces, newlines or special characters.",
            )
            .into();
        }
        client.name = (!name.is_empty()).then(|| name.clone());
        return Frame::ok().into();
    }
    unknown_subcommand("client", sub).into()
}
