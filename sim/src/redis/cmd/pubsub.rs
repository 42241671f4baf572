//! Pub/sub: SUBSCRIBE, UNSUBSCRIBE, PUBLISH — how lock libraries tell
//! waiters that a lock was released (RESP2 only; patterns and shard
//! channels are not implemented).
//!
//! A client with at least one channel is in RESP2 subscribed mode: dispatch
//! then refuses everything but SUBSCRIBE, UNSUBSCRIBE and PING (which
//! answers `pong` as a push), with Redis 7.0's text. PUBLISH appends a
//! `message` push to each subscriber's outbox (`server.rs`), which its
//! connection writes out before its next reply, so a subscriber sees
//! messages and replies in the order the server produced them.
//!
//! Deviations: UNSUBSCRIBE without arguments leaves channels in byte order
//! (Redis: its dict's order, which differs per process); messages are not
//! replicated to replicas' subscribers; a subscriber whose outbox passes
//! `PUBSUB_OUTPUT_BYTES_MAX` is disconnected (Redis's
//! client-output-buffer-limit for pubsub is of the same kind); SUBSCRIBE
//! inside EXEC puts its pushes into EXEC's array.

use super::super::exec::Exec;
use super::super::frame::Frame;
use super::super::server::SUBSCRIBED_CHANNELS_MAX;
use super::Outcome;

fn push(kind: &str, channel: Option<&[u8]>, count: usize) -> Frame {
    Frame::Array(vec![
        Frame::bulk(kind),
        channel.map_or(Frame::Null, |c| Frame::Bulk(c.to_vec())),
        Frame::Integer(count as i64),
    ])
}

pub(super) fn subscribe(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    let server = exec.server;
    let Some(client) = exec.client.as_deref_mut() else {
        return Frame::error("ERR This Redis command is not allowed from script").into();
    };
    let mut replies = Vec::with_capacity(args.len() - 1);
    for channel in &args[1..] {
        if !client.channels.contains(channel) {
            if client.channels.len() >= SUBSCRIBED_CHANNELS_MAX {
                replies.push(Frame::error("ERR too many subscribed channels"));
                continue;
            }
            client.channels.insert(channel.clone());
            server.subscribe(client.id, channel, &client.outbox);
        }
        replies.push(push("subscribe", Some(channel), client.channels.len()));
    }
    Outcome::Replies(replies)
}

pub(super) fn unsubscribe(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    let server = exec.server;
    let Some(client) = exec.client.as_deref_mut() else {
        return Frame::error("ERR This Redis command is not allowed from script").into();
    };
    let channels: Vec<Vec<u8>> = if args.len() > 1 {
        args[1..].to_vec()
    } else {
        client.channels.iter().cloned().collect()
    };
    if channels.is_empty() {
        return Outcome::Replies(vec![push("unsubscribe", None, 0)]);
    }
    let mut replies = Vec::with_capacity(channels.len());
    for channel in channels {
        if client.channels.remove(&channel) {
            server.unsubscribe(client.id, &channel);
        }
        replies.push(push("unsubscribe", Some(&channel), client.channels.len()));
    }
    Outcome::Replies(replies)
}

pub(super) fn publish(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Outcome {
    Frame::Integer(exec.server.publish(&args[1], &args[2]) as i64).into()
}
