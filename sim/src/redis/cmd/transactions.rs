//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH.
//!
//! State is per connection (`Client::multi`, `Client::watched`); dispatch
//! queues every command but EXEC, DISCARD, MULTI and WATCH while a
//! transaction is open, answering `+QUEUED`, and a command refused at queue
//! time (unknown, wrong arity, OOM, READONLY) marks the transaction so that
//! EXEC answers EXECABORT — Redis 7.0's `flagTransaction`. EXEC runs the
//! queue through the same handlers in one go: nothing interleaves (one
//! thread), every effect goes out in the command's one replication batch,
//! and blocking commands answer at once (BLPOP nil, WAIT the current count).
//!
//! WATCH: the keyspace marks a watcher dirty whenever a watched key's entry
//! changes — by a command of any client, an expiry, a replicated effect or a
//! FLUSH — and EXEC also fails when a key that was alive at WATCH is
//! logically expired now, which is Redis 7.0's rule (a key already expired
//! at WATCH and then deleted is no change). A failed EXEC answers a nil
//! array. EXEC and DISCARD unwatch everything.
//!
//! Deviations (bounds Redis does not have): at most
//! `MULTI_QUEUE_LEN_MAX` (`server.rs`) queued commands (past it the command is refused
//! and the transaction aborts) and `WATCHED_KEYS_MAX` watched keys per
//! client.

use super::super::exec::Exec;
use super::super::frame::Frame;
use super::super::keyspace::WATCHED_KEYS_MAX;
use super::super::server::{Client, Multi};
use super::{lookup, Flags, Outcome};

/// Whether a command runs immediately even inside MULTI.
pub(crate) fn runs_inside_multi(name: &str) -> bool {
    matches!(name, "exec" | "discard" | "multi" | "watch")
}

fn not_from_script() -> Outcome {
    Frame::error("ERR This Redis command is not allowed from script").into()
}

/// Forgets every key `client` watches.
fn unwatch_all(exec: &Exec<'_>, client: &mut Client) {
    exec.keyspace().unwatch_all(client.id, &client.watched);
    client.watched.clear();
}

pub(super) fn multi(exec: &mut Exec<'_>, _args: &[Vec<u8>]) -> Outcome {
    let Some(client) = exec.client.as_deref_mut() else {
        return not_from_script();
    };
    if client.multi.is_some() {
        return Frame::error("ERR MULTI calls can not be nested").into();
    }
    client.multi = Some(Multi::default());
    Frame::ok().into()
}

pub(super) fn discard(exec: &mut Exec<'_>, _args: &[Vec<u8>]) -> Outcome {
    let Some(client) = exec.client.take() else {
        return not_from_script();
    };
    let reply = match client.multi.take() {
        None => Frame::error("ERR DISCARD without MULTI"),
        Some(_) => {
            unwatch_all(exec, client);
            Frame::ok()
        }
    };
    exec.client = Some(client);
    reply.into()
}

pub(super) fn watch(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    let Some(client) = exec.client.take() else {
        return not_from_script();
    };
    let reply = if client.multi.is_some() {
        Frame::error("ERR WATCH inside MULTI is not allowed")
    } else {
        let mut reply = Frame::ok();
        let mut ks = exec.keyspace();
        for key in &args[1..] {
            if client.watched.len() >= WATCHED_KEYS_MAX {
                reply = Frame::error("ERR too many watched keys");
                break;
            }
            if ks.watch(client.id, exec.db, key, exec.now_ms) {
                client.watched.push((exec.db, key.clone()));
            }
        }
        reply
    };
    exec.client = Some(client);
    reply.into()
}

pub(super) fn unwatch(exec: &mut Exec<'_>, _args: &[Vec<u8>]) -> Outcome {
    let Some(client) = exec.client.take() else {
        return not_from_script();
    };
    unwatch_all(exec, client);
    exec.client = Some(client);
    Frame::ok().into()
}

pub(super) fn exec(exec: &mut Exec<'_>, _args: &[Vec<u8>]) -> Outcome {
    let Some(client) = exec.client.take() else {
        return not_from_script();
    };
    let Some(multi) = client.multi.take() else {
        exec.client = Some(client);
        return Frame::error("ERR EXEC without MULTI").into();
    };
    let watch_failed = exec
        .keyspace()
        .watch_failed(client.id, &client.watched, exec.now_ms);
    unwatch_all(exec, client);
    exec.client = Some(client);
    if multi.aborted {
        return Frame::error("EXECABORT Transaction discarded because of previous errors.").into();
    }
    if watch_failed {
        return Frame::NullArray.into();
    }
    let writes = multi
        .queue
        .iter()
        .any(|args| lookup(&args[0]).is_some_and(|c| c.flags.contains(Flags::WRITE)));
    if writes && !exec.server.is_primary() {
        return Frame::error(
            "ERR Transaction contains write commands but instance is now a read-only replica. EXEC aborted.",
        )
        .into();
    }
    let deny_blocking = std::mem::replace(&mut exec.deny_blocking, true);
    let mut replies = Vec::with_capacity(multi.queue.len());
    for args in &multi.queue {
        // Checked when queued; the table does not change.
        let Some(command) = lookup(&args[0]) else {
            replies.push(Frame::error("ERR unknown command"));
            continue;
        };
        match (command.handler)(exec, args) {
            Outcome::Reply(frame) => replies.push(frame),
            Outcome::Replies(frames) => replies.extend(frames),
            Outcome::Wait { .. } => {
                let repl = exec.server.repl.borrow();
                replies.push(Frame::Integer(repl.acked_count(repl.offset) as i64));
            }
            Outcome::Block { .. } | Outcome::Sync { .. } => {
                debug_assert!(false, "blocking outcome inside EXEC");
                replies.push(Frame::NullArray);
            }
        }
    }
    exec.deny_blocking = deny_blocking;
    Frame::Array(replies).into()
}
