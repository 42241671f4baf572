//! Replication commands: WAIT, REPLICAOF/SLAVEOF, ROLE, and the internal
//! SYNC / REPLCONF of our replication protocol (see `replication`).
//!
//! Texts are redis-server 7.0.15's (`Invalid master port`, `+OK Already
//! connected to specified master`, WAIT's replica refusal, ROLE's shape).

use super::super::exec::Exec;
use super::super::frame::Frame;
use super::super::replication::{become_primary, become_replica};
use super::{int_arg, is, parse_i64, Outcome};

pub(super) fn wait(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    if !exec.server.is_primary() {
        return Frame::error(
            "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.",
        )
        .into();
    }
    let numreplicas = match int_arg(&args[1]) {
        Ok(n) => n,
        Err(e) => return e.into(),
    };
    let Some(timeout_ms) = parse_i64(&args[2]) else {
        return Frame::error("ERR timeout is not an integer or out of range").into();
    };
    if timeout_ms < 0 {
        return Frame::error("ERR timeout is negative").into();
    }
    Outcome::Wait {
        // A negative count is already satisfied, as in Redis.
        numreplicas: u64::try_from(numreplicas).unwrap_or(0),
        timeout_ms: timeout_ms as u64,
    }
}

pub(super) fn replicaof(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    // `Server` methods that change role need the `Rc`; the handle is kept
    // by the replication module, so go through the server's own entry.
    let server = exec.server;
    if is(&args[1], "NO") && is(&args[2], "ONE") {
        if let Some(rc) = server.self_rc() {
            become_primary(&rc);
        }
        return Frame::ok().into();
    }
    let port = match parse_i64(&args[2]).and_then(|p| u16::try_from(p).ok()) {
        Some(port) => port,
        None => return Frame::error("ERR Invalid master port").into(),
    };
    let host = String::from_utf8_lossy(&args[1]).into_owned();
    if let super::super::repl_state::Role::Replica {
        host: h, port: p, ..
    } = &server.repl.borrow().role
    {
        if h.eq_ignore_ascii_case(&host) && *p == port {
            return Frame::simple("OK Already connected to specified master").into();
        }
    }
    if let Some(rc) = server.self_rc() {
        become_replica(&rc, host, port);
    }
    Frame::ok().into()
}

pub(super) fn role(exec: &mut Exec<'_>, _args: &[Vec<u8>]) -> Outcome {
    exec.server.repl.borrow().role_reply().into()
}

pub(super) fn sync(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    if !exec.server.is_primary() {
        return Frame::error("NOMASTERLINK Can't SYNC while not connected with my master").into();
    }
    let listening_port = args
        .get(1)
        .and_then(|p| parse_i64(p))
        .and_then(|p| u16::try_from(p).ok())
        .unwrap_or(0);
    Outcome::Sync { listening_port }
}

pub(super) fn replconf(_exec: &mut Exec<'_>, _args: &[Vec<u8>]) -> Outcome {
    // Acknowledgements are read by the replica feed itself; on an ordinary
    // connection REPLCONF options are accepted and ignored.
    Frame::ok().into()
}
