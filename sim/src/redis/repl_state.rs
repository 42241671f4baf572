//! The replication state one instance keeps — its role, its link to a
//! primary, the feeds to its replicas and their offsets — and the wire form
//! of write effects (see `replication.rs` for the protocol).
//!
//! Apart from the behaviour in `replication.rs` (linking, syncing, WAIT),
//! which drives a `Server` (`server.rs`): the server owns this state and
//! depends on this file only, so the two never import each other.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

use super::frame::Frame;
use super::keyspace::{Effect, Entry, Value, DB_COUNT};

/// Most bytes queued for one replica before it is dropped.
pub(crate) const FEED_BACKLOG_BYTES_MAX: usize = 64 * 1024 * 1024;

/// A replica's link state, as ROLE names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LinkState {
    Connect,
    Connecting,
    Sync,
    Connected,
}

impl LinkState {
    pub(crate) fn as_str(self) -> &'static str {
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
    pub(crate) bytes: RefCell<VecDeque<u8>>,
    /// Wakes the writer (bytes queued, or closed).
    pub(crate) notify: tokio::sync::Notify,
    pub(crate) closed: Cell<bool>,
    /// Wakes the ack reader when the feed is dropped.
    pub(crate) closed_notify: tokio::sync::Notify,
}

impl FeedQueue {
    pub(crate) fn push(&self, bytes: &[u8]) {
        self.bytes.borrow_mut().extend(bytes);
        self.notify.notify_one();
    }

    pub(crate) fn close(&self) {
        self.closed.set(true);
        self.notify.notify_one();
        self.closed_notify.notify_waiters();
    }

    /// Resolves once the queue is closed.
    pub(crate) async fn wait_closed(&self) {
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
pub(crate) struct Feed {
    pub(crate) addr: String,
    pub(crate) listening_port: u16,
    pub(crate) acked: u64,
    pub(crate) queue: Rc<FeedQueue>,
}

/// A full sync in progress: (offset, keys expected, keys received).
pub(crate) type PendingSnapshot = Option<(u64, usize, Vec<(usize, Vec<u8>, Entry)>)>;

/// Replication state of one instance.
pub(crate) struct Replication {
    pub role: Role,
    /// Primary: bytes of effects produced. Replica: bytes applied. Kept
    /// across promotion, as Redis keeps its offset.
    pub offset: u64,
    pub(crate) feeds: BTreeMap<u64, Feed>,
    pub(crate) next_feed_id: u64,
    pub(crate) link_task: Option<tokio::task::JoinHandle<()>>,
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
        // Each effect is encoded once: the offset counts its bytes, and the
        // batch (`BATCH`, the offset, then the effects) is that same text
        // behind a header. (Encoding each twice, and first to a buffer of
        // its own, was about half of this function.)
        let mut body = Vec::new();
        for effect in effects {
            encode_effect(effect).encode(&mut body);
        }
        self.offset += body.len() as u64;
        if self.feeds.is_empty() {
            return;
        }
        let mut bytes = Vec::with_capacity(body.len() + 48);
        super::frame::push_array_header(&mut bytes, 2 + effects.len());
        Frame::bulk("BATCH").encode(&mut bytes);
        Frame::Integer(self.offset as i64).encode(&mut bytes);
        bytes.extend_from_slice(&body);
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

    pub(crate) fn drop_feeds(&mut self) {
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

    pub(crate) fn set_link_state(&mut self, new_state: LinkState) {
        if let Role::Replica { state, synced, .. } = &mut self.role {
            *state = new_state;
            if new_state == LinkState::Connected {
                *synced = true;
            }
        }
    }
}

pub(crate) fn bulk(frame: &Frame) -> Option<&[u8]> {
    match frame {
        Frame::Bulk(b) => Some(b),
        _ => None,
    }
}

pub(crate) fn int_at(items: &[Frame], i: usize) -> std::io::Result<i64> {
    match items.get(i) {
        Some(Frame::Integer(n)) => Ok(*n),
        _ => Err(link_err("expected an integer")),
    }
}

pub(crate) fn bulk_at(items: &[Frame], i: usize) -> std::io::Result<Vec<u8>> {
    items
        .get(i)
        .and_then(bulk)
        .map(<[u8]>::to_vec)
        .ok_or_else(|| link_err("expected a bulk string"))
}

pub(crate) fn db_at(items: &[Frame], i: usize) -> std::io::Result<usize> {
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
                Value::Hash(fields) => {
                    items.push(Frame::bulk("hash"));
                    for (field, value) in fields {
                        items.push(Frame::bulk(field.clone()));
                        items.push(Frame::bulk(value.clone()));
                    }
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
                b"hash" if (items.len() - 5).is_multiple_of(2) => {
                    let mut fields = Vec::with_capacity((items.len() - 5) / 2);
                    for i in (5..items.len()).step_by(2) {
                        fields.push((bulk_at(items, i)?, bulk_at(items, i + 1)?));
                    }
                    Value::Hash(fields)
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

/// A malformed replication frame: the link is dropped and resynced.
pub(crate) fn link_err(msg: impl Into<String>) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, msg.into())
}
