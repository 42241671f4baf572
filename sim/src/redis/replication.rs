//! Primary → replica replication: a full snapshot, then a stream of write
//! effects, acknowledged by offset; and WAIT.
//!
//! The wire protocol is our own, in RESP frames (Redis's PSYNC/RDB would
//! add nothing the simulation needs):
//!
//! ```text
//! replica → primary   SYNC <listening-port>
//! primary → replica   FULLSYNC <offset> <nkeys>, then nkeys × PUT frames
//! primary → replica   BATCH <offset-after> <effect>...     (one per command)
//! replica → primary   REPLCONF ACK <offset>                (after each apply)
//! effect = PUT <db> <key> <deadline-ms|-1> string <value>
//!        | PUT <db> <key> <deadline-ms|-1> list <elem>...
//!        | PUT <db> <key> <deadline-ms|-1> hash (<field> <value>)...
//!        | DEL <db> <key> | EXPIRED <db> <key> <deadline-ms> | FLUSH <db|-1>
//! ```
//!
//! Why effects and not commands: a script's writes then replicate as the
//! state they produced (Redis 7's effects replication), one atomic batch per
//! client command, and the replica needs no Lua. The offset counts bytes of
//! encoded effects, so it means the same on both sides.
//!
//! Asynchronous by design: the primary queues a batch per replica and never
//! waits (except a client's WAIT). When turmoil holds the link, the replica
//! simply lags; that is how an INCR deterministically fails to reach the
//! replica before a failover. Each replica's queue is bounded
//! ([`FEED_BACKLOG_BYTES_MAX`](super::repl_state::FEED_BACKLOG_BYTES_MAX)); overflowing it drops that replica, which
//! then reconnects and resyncs (Redis's client-output-buffer-limit).
//!
//! The state this drives lives in `repl_state.rs`.

use std::rc::{Rc, Weak};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::frame::{parse_frame, Frame};
use super::keyspace::{Effect, Entry};
use super::repl_state::{
    bulk, decode_effect, encode_effect, int_at, link_err, Feed, FeedQueue, LinkState,
    PendingSnapshot, Role,
};
use super::server::Server;
use super::transport::Io;
/// How long a replica waits for a connection to its primary.
pub(crate) const CONNECT_TIMEOUT_MS: u64 = 1_000;
/// Pause between reconnection attempts (Redis's replicationCron runs 1/s).
pub(crate) const RECONNECT_DELAY_MS: u64 = 1_000;
/// WAIT with timeout 0 ("forever") gives up after this long.
pub(crate) const WAIT_FOREVER_CAP_MS: u64 = 3_600_000;
/// Largest read buffer on a replication link.
const LINK_BUFFER_BYTES_MAX: usize = 2 * super::frame::BULK_BYTES_MAX;

/// `REPLICAOF host port` (or a configured replica at start): keep the data
/// until the primary's snapshot replaces it; stop expiring keys; drop our
/// own replicas; connect.
pub(crate) fn become_replica(server: &Rc<Server>, host: String, port: u16) {
    {
        let mut repl = server.repl.borrow_mut();
        repl.shutdown();
        repl.role = Role::Replica {
            host: host.clone(),
            port,
            state: LinkState::Connect,
            synced: false,
        };
    }
    server.keyspace.borrow_mut().set_expire_keys(false);
    let task = tokio::task::spawn_local(link_loop(Rc::downgrade(server), host, port));
    server.repl.borrow_mut().link_task = Some(task);
}

/// `REPLICAOF NO ONE` / failover: keep the data, accept writes, expire keys.
pub(crate) fn become_primary(server: &Rc<Server>) {
    let mut repl = server.repl.borrow_mut();
    if repl.is_primary() {
        return;
    }
    if let Some(task) = repl.link_task.take() {
        task.abort();
    }
    repl.role = Role::Primary;
    drop(repl);
    server.keyspace.borrow_mut().set_expire_keys(true);
}

/// Replica side: connect, sync, apply, reconnect on failure, forever.
async fn link_loop(server: Weak<Server>, host: String, port: u16) {
    loop {
        let Some(s) = server.upgrade().filter(|s| s.is_alive()) else {
            return;
        };
        s.repl.borrow_mut().set_link_state(LinkState::Connecting);
        let transport = s.transport;
        drop(s);
        let connect = tokio::time::timeout(
            Duration::from_millis(CONNECT_TIMEOUT_MS),
            transport.connect(&host, port),
        )
        .await;
        if let Ok(Ok(stream)) = connect {
            let result = run_link(&server, stream).await;
            tracing::debug!(?result, %host, port, "replication link ended");
        }
        let Some(s) = server.upgrade() else { return };
        s.repl.borrow_mut().set_link_state(LinkState::Connect);
        drop(s);
        tokio::time::sleep(Duration::from_millis(RECONNECT_DELAY_MS)).await;
    }
}

/// One replication session on an open stream.
async fn run_link(server: &Weak<Server>, mut stream: Box<dyn Io>) -> std::io::Result<()> {
    let gone = || std::io::Error::new(std::io::ErrorKind::NotConnected, "server gone");
    let listening_port = server.upgrade().ok_or_else(gone)?.config.port;
    stream
        .write_all(&Frame::request(["SYNC", &listening_port.to_string()]))
        .await?;
    let mut buf: Vec<u8> = Vec::new();
    let mut snapshot: PendingSnapshot = None;
    loop {
        // Apply every complete frame, then read more.
        while let Some((frame, used)) = parse_frame(&buf).map_err(|e| link_err(e.0))? {
            buf.drain(..used);
            let s = server.upgrade().filter(|s| s.is_alive()).ok_or_else(gone)?;
            let ack = handle_link_frame(&s, frame, &mut snapshot)?;
            if let Some(offset) = ack {
                stream
                    .write_all(&Frame::request(["REPLCONF", "ACK", &offset.to_string()]))
                    .await?;
            }
        }
        if buf.len() > LINK_BUFFER_BYTES_MAX {
            return Err(link_err("replication frame too large"));
        }
        let mut chunk = [0u8; 16 * 1024];
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "primary closed the link",
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Applies one frame from the primary; returns the offset to acknowledge.
fn handle_link_frame(
    server: &Server,
    frame: Frame,
    snapshot: &mut PendingSnapshot,
) -> std::io::Result<Option<u64>> {
    let now_ms = server.now_ms();
    let Frame::Array(items) = frame else {
        return Err(link_err("expected an array"));
    };
    if let Some((offset, expected, entries)) = snapshot.as_mut() {
        match decode_effect(&items)? {
            Effect::Put { db, key, entry } => entries.push((db, key, entry)),
            _ => return Err(link_err("snapshot holds only PUT frames")),
        }
        if entries.len() == *expected {
            let offset = *offset;
            let entries = std::mem::take(entries);
            *snapshot = None;
            return Ok(Some(load_snapshot(server, offset, entries, now_ms)));
        }
        return Ok(None);
    }
    let tag = items.first().and_then(bulk).unwrap_or_default();
    match tag {
        b"FULLSYNC" => {
            let offset = int_at(&items, 1)?;
            let nkeys = int_at(&items, 2)?;
            let offset = u64::try_from(offset).map_err(|_| link_err("bad offset"))?;
            let nkeys = usize::try_from(nkeys).map_err(|_| link_err("bad key count"))?;
            server.repl.borrow_mut().set_link_state(LinkState::Sync);
            if nkeys == 0 {
                return Ok(Some(load_snapshot(server, offset, Vec::new(), now_ms)));
            }
            *snapshot = Some((offset, nkeys, Vec::with_capacity(nkeys.min(1024))));
            Ok(None)
        }
        b"BATCH" => {
            let offset = u64::try_from(int_at(&items, 1)?).map_err(|_| link_err("bad offset"))?;
            let mut effects = Vec::with_capacity(items.len().saturating_sub(2));
            for item in &items[2.min(items.len())..] {
                let Frame::Array(parts) = item else {
                    return Err(link_err("effect is not an array"));
                };
                effects.push(decode_effect(parts)?);
            }
            let mut ks = server.keyspace.borrow_mut();
            for effect in effects {
                ks.apply(effect, now_ms);
            }
            drop(ks);
            server.repl.borrow_mut().offset = offset;
            Ok(Some(offset))
        }
        other => Err(link_err(format!(
            "unexpected replication frame {}",
            String::from_utf8_lossy(other)
        ))),
    }
}

fn load_snapshot(
    server: &Server,
    offset: u64,
    entries: Vec<(usize, Vec<u8>, Entry)>,
    now_ms: u64,
) -> u64 {
    server.keyspace.borrow_mut().load_snapshot(entries, now_ms);
    let mut repl = server.repl.borrow_mut();
    repl.offset = offset;
    repl.set_link_state(LinkState::Connected);
    offset
}

/// Primary side of SYNC: registers the feed and returns the snapshot bytes
/// and the queue, in one synchronous step so that no batch is missed or
/// sent twice.
pub(crate) fn start_feed(
    server: &Server,
    addr: String,
    listening_port: u16,
) -> (u64, Vec<u8>, Rc<FeedQueue>) {
    let snapshot = server.keyspace.borrow().snapshot();
    let mut repl = server.repl.borrow_mut();
    let mut bytes = Frame::Array(vec![
        Frame::bulk("FULLSYNC"),
        Frame::Integer(repl.offset as i64),
        Frame::Integer(snapshot.len() as i64),
    ])
    .to_bytes();
    for (db, key, entry) in snapshot {
        encode_effect(&Effect::Put { db, key, entry }).encode(&mut bytes);
    }
    let queue = Rc::new(FeedQueue::default());
    let id = repl.next_feed_id;
    repl.next_feed_id += 1;
    repl.feeds.insert(
        id,
        Feed {
            addr,
            listening_port,
            acked: 0,
            queue: queue.clone(),
        },
    );
    (id, bytes, queue)
}

/// Primary side: serves one replica until either direction fails.
pub(crate) async fn serve_feed<S>(
    server: Rc<Server>,
    stream: S,
    addr: String,
    listening_port: u16,
    pending: Vec<u8>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + 'static,
{
    let (id, snapshot, queue) = start_feed(&server, addr, listening_port);
    let (mut reader, mut writer) = tokio::io::split(stream);
    let writer_queue = queue.clone();
    let writer_task = tokio::task::spawn_local(async move {
        if writer.write_all(&snapshot).await.is_err() {
            return;
        }
        loop {
            let chunk: Vec<u8> = writer_queue.bytes.borrow_mut().drain(..).collect();
            if chunk.is_empty() {
                if writer_queue.closed.get() {
                    return;
                }
                writer_queue.notify.notified().await;
                continue;
            }
            if writer.write_all(&chunk).await.is_err() {
                return;
            }
        }
    });
    // Read acknowledgements until the replica goes away or is dropped.
    let mut buf = pending;
    let mut chunk = [0u8; 4096];
    'feed: loop {
        while let Ok(Some((args, used))) = super::frame::parse_request(&buf) {
            buf.drain(..used);
            let is_ack = args.len() == 3
                && args[0].eq_ignore_ascii_case(b"REPLCONF")
                && args[1].eq_ignore_ascii_case(b"ACK");
            let offset = is_ack.then(|| super::cmd::parse_i64(&args[2])).flatten();
            if let Some(offset) = offset.and_then(|o| u64::try_from(o).ok()) {
                if let Some(feed) = server.repl.borrow_mut().feeds.get_mut(&id) {
                    feed.acked = feed.acked.max(offset);
                }
                server.acks.notify_waiters();
            }
        }
        if buf.len() > LINK_BUFFER_BYTES_MAX || queue.closed.get() {
            break 'feed;
        }
        tokio::select! {
            biased;
            read = reader.read(&mut chunk) => match read {
                Ok(0) | Err(_) => break 'feed,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            },
            _ = queue.wait_closed() => break 'feed,
        }
    }
    server.repl.borrow_mut().feeds.remove(&id);
    queue.close();
    writer_task.abort();
    server.acks.notify_waiters();
}

/// WAIT: how many replicas acknowledged the offset current at the call,
/// waiting up to `timeout_ms` (0 = until [`WAIT_FOREVER_CAP_MS`]) for
/// `numreplicas` of them.
pub(crate) async fn wait(server: &Server, numreplicas: u64, timeout_ms: u64) -> Frame {
    let target = server.repl.borrow().offset;
    let timeout_ms = if timeout_ms == 0 {
        WAIT_FOREVER_CAP_MS
    } else {
        timeout_ms.min(WAIT_FOREVER_CAP_MS)
    };
    let deadline = tokio::time::Instant::now() + Duration::from_millis(timeout_ms);
    loop {
        let notified = server.acks.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let count = server.repl.borrow().acked_count(target) as u64;
        if count >= numreplicas || tokio::time::Instant::now() >= deadline || !server.is_alive() {
            return Frame::Integer(count as i64);
        }
        tokio::select! {
            biased;
            _ = &mut notified => {}
            _ = tokio::time::sleep_until(deadline) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;
    use crate::redis::keyspace::Value;

    #[test]
    fn effects_round_trip() {
        let effects = vec![
            Effect::Put {
                db: 3,
                key: b"k".to_vec(),
                entry: Entry {
                    value: Value::Str(b"v".to_vec()),
                    expires_at_ms: Some(10),
                },
            },
            Effect::Put {
                db: 0,
                key: b"l".to_vec(),
                entry: Entry {
                    value: Value::List(VecDeque::from(vec![b"a".to_vec(), b"b".to_vec()])),
                    expires_at_ms: None,
                },
            },
            Effect::Put {
                db: 2,
                key: b"h".to_vec(),
                entry: Entry {
                    value: Value::Hash(vec![
                        (b"w2".to_vec(), b"3".to_vec()),
                        (b"w1".to_vec(), b"".to_vec()),
                    ]),
                    expires_at_ms: Some(7),
                },
            },
            Effect::Put {
                db: 0,
                key: b"h".to_vec(),
                entry: Entry {
                    value: Value::Hash(Vec::new()),
                    expires_at_ms: None,
                },
            },
            Effect::Del {
                db: 1,
                key: b"k".to_vec(),
            },
            Effect::Expired {
                db: 0,
                key: b"k".to_vec(),
                deadline_ms: 5,
            },
            Effect::Flush { db: None },
            Effect::Flush { db: Some(9) },
        ];
        for effect in effects {
            let Frame::Array(items) = encode_effect(&effect) else {
                panic!()
            };
            assert_eq!(decode_effect(&items).unwrap(), effect);
        }
        assert!(decode_effect(&[Frame::bulk("PUT"), Frame::Integer(99)]).is_err());
        // A hash with a field but no value is refused, not half-applied.
        let odd = [
            Frame::bulk("PUT"),
            Frame::Integer(0),
            Frame::bulk("h"),
            Frame::Integer(-1),
            Frame::bulk("hash"),
            Frame::bulk("f"),
        ];
        assert!(decode_effect(&odd).is_err());
        assert!(decode_effect(&[]).is_err());
    }
}
