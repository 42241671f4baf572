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
//! ([`FEED_BACKLOG_BYTES_MAX`]); overflowing it drops that replica, which
//! then reconnects and resyncs (Redis's client-output-buffer-limit).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::rc::{Rc, Weak};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::connection::Io;
use super::frame::{parse_frame, Frame};
use super::keyspace::{Effect, Entry, Value, DB_COUNT};
use super::server::Server;

/// Most bytes queued for one replica before it is dropped.
pub(crate) const FEED_BACKLOG_BYTES_MAX: usize = 64 * 1024 * 1024;
/// How long a replica waits for a connection to its primary.
pub(crate) const CONNECT_TIMEOUT_MS: u64 = 1_000;
/// Pause between reconnection attempts (Redis's replicationCron runs 1/s).
pub(crate) const RECONNECT_DELAY_MS: u64 = 1_000;
/// WAIT with timeout 0 ("forever") gives up after this long.
pub(crate) const WAIT_FOREVER_CAP_MS: u64 = 3_600_000;
/// Largest read buffer on a replication link.
const LINK_BUFFER_BYTES_MAX: usize = 2 * super::frame::BULK_BYTES_MAX;

/// A replica's link state, as ROLE names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LinkState {
    Connect,
    Connecting,
    Sync,
    Connected,
}

impl LinkState {
    fn as_str(self) -> &'static str {
        match self {
            LinkState::Connect => "connect",
            LinkState::Connecting => "connecting",
            LinkState::Sync => "sync",
            LinkState::Connected => "connected",
        }
    }
}

/// Primary or replica.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    Primary,
    Replica {
        host: String,
        port: u16,
        state: LinkState,
        /// Whether a full sync completed (ROLE shows offset -1 before).
        synced: bool,
    },
}

/// Bytes waiting to be written to one replica.
#[derive(Default)]
pub(crate) struct FeedQueue {
    bytes: RefCell<VecDeque<u8>>,
    /// Wakes the writer (bytes queued, or closed).
    notify: tokio::sync::Notify,
    closed: Cell<bool>,
    /// Wakes the ack reader when the feed is dropped.
    closed_notify: tokio::sync::Notify,
}

impl FeedQueue {
    fn push(&self, bytes: &[u8]) {
        self.bytes.borrow_mut().extend(bytes);
        self.notify.notify_one();
    }

    fn close(&self) {
        self.closed.set(true);
        self.notify.notify_one();
        self.closed_notify.notify_waiters();
    }

    /// Resolves once the queue is closed.
    async fn wait_closed(&self) {
        loop {
            let notified = self.closed_notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.closed.get() {
                return;
            }
            notified.await;
        }
    }
}

/// One connected replica, as the primary sees it.
struct Feed {
    addr: String,
    listening_port: u16,
    acked: u64,
    queue: Rc<FeedQueue>,
}

/// A full sync in progress: (offset, keys expected, keys received).
type PendingSnapshot = Option<(u64, usize, Vec<(usize, Vec<u8>, Entry)>)>;

/// Replication state of one instance.
pub(crate) struct Replication {
    pub role: Role,
    /// Primary: bytes of effects produced. Replica: bytes applied. Kept
    /// across promotion, as Redis keeps its offset.
    pub offset: u64,
    feeds: BTreeMap<u64, Feed>,
    next_feed_id: u64,
    link_task: Option<tokio::task::JoinHandle<()>>,
}

impl Default for Replication {
    fn default() -> Self {
        Self {
            role: Role::Primary,
            offset: 0,
            feeds: BTreeMap::new(),
            next_feed_id: 1,
            link_task: None,
        }
    }
}

impl Replication {
    pub(crate) fn is_primary(&self) -> bool {
        self.role == Role::Primary
    }

    /// Ships one command's effects to every replica, as one batch.
    pub(crate) fn propagate(&mut self, effects: &[Effect]) {
        if !self.is_primary() {
            // Replicas apply effects without producing any.
            return;
        }
        let encoded: Vec<Frame> = effects.iter().map(encode_effect).collect();
        let size: usize = encoded.iter().map(|f| f.to_bytes().len()).sum();
        self.offset += size as u64;
        if self.feeds.is_empty() {
            return;
        }
        let mut items = vec![Frame::bulk("BATCH"), Frame::Integer(self.offset as i64)];
        items.extend(encoded);
        let bytes = Frame::Array(items).to_bytes();
        self.feeds.retain(|_, feed| {
            if feed.queue.bytes.borrow().len() + bytes.len() > FEED_BACKLOG_BYTES_MAX {
                feed.queue.close();
                return false;
            }
            feed.queue.push(&bytes);
            true
        });
    }

    /// Replicas whose acknowledged offset reached `offset`.
    pub(crate) fn acked_count(&self, offset: u64) -> usize {
        self.feeds.values().filter(|f| f.acked >= offset).count()
    }

    fn drop_feeds(&mut self) {
        for feed in self.feeds.values() {
            feed.queue.close();
        }
        self.feeds.clear();
    }

    /// The instance died: stop everything.
    pub(crate) fn shutdown(&mut self) {
        self.drop_feeds();
        if let Some(task) = self.link_task.take() {
            task.abort();
        }
    }

    /// The ROLE reply.
    pub(crate) fn role_reply(&self) -> Frame {
        match &self.role {
            Role::Primary => Frame::Array(vec![
                Frame::bulk("master"),
                Frame::Integer(self.offset as i64),
                Frame::Array(
                    self.feeds
                        .values()
                        .map(|f| {
                            Frame::Array(vec![
                                Frame::bulk(f.addr.as_bytes()),
                                Frame::bulk(f.listening_port.to_string()),
                                Frame::bulk(f.acked.to_string()),
                            ])
                        })
                        .collect(),
                ),
            ]),
            Role::Replica {
                host,
                port,
                state,
                synced,
            } => Frame::Array(vec![
                Frame::bulk("slave"),
                Frame::bulk(host.as_bytes()),
                Frame::Integer(i64::from(*port)),
                Frame::bulk(state.as_str()),
                Frame::Integer(if *synced { self.offset as i64 } else { -1 }),
            ]),
        }
    }

    fn set_link_state(&mut self, new_state: LinkState) {
        if let Role::Replica { state, synced, .. } = &mut self.role {
            *state = new_state;
            if new_state == LinkState::Connected {
                *synced = true;
            }
        }
    }
}

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

fn link_err(msg: impl Into<String>) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, msg.into())
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

fn bulk(frame: &Frame) -> Option<&[u8]> {
    match frame {
        Frame::Bulk(b) => Some(b),
        _ => None,
    }
}

fn int_at(items: &[Frame], i: usize) -> std::io::Result<i64> {
    match items.get(i) {
        Some(Frame::Integer(n)) => Ok(*n),
        _ => Err(link_err("expected an integer")),
    }
}

fn bulk_at(items: &[Frame], i: usize) -> std::io::Result<Vec<u8>> {
    items
        .get(i)
        .and_then(bulk)
        .map(<[u8]>::to_vec)
        .ok_or_else(|| link_err("expected a bulk string"))
}

fn db_at(items: &[Frame], i: usize) -> std::io::Result<usize> {
    usize::try_from(int_at(items, i)?)
        .ok()
        .filter(|db| *db < DB_COUNT)
        .ok_or_else(|| link_err("bad db index"))
}

/// An effect as a RESP array (see the module doc for the grammar).
pub(crate) fn encode_effect(effect: &Effect) -> Frame {
    match effect {
        Effect::Put { db, key, entry } => {
            let mut items = vec![
                Frame::bulk("PUT"),
                Frame::Integer(*db as i64),
                Frame::bulk(key.clone()),
                Frame::Integer(entry.expires_at_ms.map_or(-1, |d| d as i64)),
            ];
            match &entry.value {
                Value::Str(s) => {
                    items.push(Frame::bulk("string"));
                    items.push(Frame::bulk(s.clone()));
                }
                Value::List(list) => {
                    items.push(Frame::bulk("list"));
                    items.extend(list.iter().map(|e| Frame::bulk(e.clone())));
                }
            }
            Frame::Array(items)
        }
        Effect::Del { db, key } => Frame::Array(vec![
            Frame::bulk("DEL"),
            Frame::Integer(*db as i64),
            Frame::bulk(key.clone()),
        ]),
        Effect::Expired {
            db,
            key,
            deadline_ms,
        } => Frame::Array(vec![
            Frame::bulk("EXPIRED"),
            Frame::Integer(*db as i64),
            Frame::bulk(key.clone()),
            Frame::Integer(*deadline_ms as i64),
        ]),
        Effect::Flush { db } => Frame::Array(vec![
            Frame::bulk("FLUSH"),
            Frame::Integer(db.map_or(-1, |d| d as i64)),
        ]),
    }
}

/// The inverse of [`encode_effect`]; malformed input is an error (the link
/// is dropped and resynced), never a panic.
pub(crate) fn decode_effect(items: &[Frame]) -> std::io::Result<Effect> {
    let tag = items.first().and_then(bulk).unwrap_or_default();
    match tag {
        b"PUT" => {
            let db = db_at(items, 1)?;
            let key = bulk_at(items, 2)?;
            let deadline = int_at(items, 3)?;
            let expires_at_ms = if deadline < 0 {
                None
            } else {
                Some(deadline as u64)
            };
            let value = match bulk_at(items, 4)?.as_slice() {
                b"string" if items.len() == 6 => Value::Str(bulk_at(items, 5)?),
                b"list" => {
                    let mut list = VecDeque::with_capacity(items.len() - 5);
                    for i in 5..items.len() {
                        list.push_back(bulk_at(items, i)?);
                    }
                    Value::List(list)
                }
                _ => return Err(link_err("bad PUT value")),
            };
            Ok(Effect::Put {
                db,
                key,
                entry: Entry {
                    value,
                    expires_at_ms,
                },
            })
        }
        b"DEL" => Ok(Effect::Del {
            db: db_at(items, 1)?,
            key: bulk_at(items, 2)?,
        }),
        b"EXPIRED" => Ok(Effect::Expired {
            db: db_at(items, 1)?,
            key: bulk_at(items, 2)?,
            deadline_ms: u64::try_from(int_at(items, 3)?).map_err(|_| link_err("bad deadline"))?,
        }),
        b"FLUSH" => {
            let db = int_at(items, 1)?;
            let db = if db < 0 { None } else { Some(db_at(items, 1)?) };
            Ok(Effect::Flush { db })
        }
        _ => Err(link_err("unknown effect")),
    }
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
    use super::*;

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
        assert!(decode_effect(&[]).is_err());
    }
}
