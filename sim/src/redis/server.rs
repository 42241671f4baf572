//! One running server instance: its keyspace, script engine, replication
//! state, clock and client bookkeeping.
//!
//! This file holds the instance's state and the operations on it alone;
//! what drives it lives beside it, each depending on this file and never
//! the other way round: command dispatch (`dispatch.rs`), the handlers'
//! context (`exec.rs`), starting and promoting (`instance.rs`), replication
//! (`replication.rs`).
//!
//! Single-threaded by construction: the server lives in an `Rc`, state in
//! `RefCell`s, and no borrow is held across an `.await` or across a call
//! into Lua (a script's `redis.call` re-enters dispatch).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::{Rc, Weak};

use super::clock::Clock;
use super::frame::Frame;
use super::keyspace::Keyspace;
use super::repl_state::Replication;
use super::script_cache::Scripting;
use super::transport::Transport;
use super::{OwnershipLog, RedisConfig};

/// Active expiry runs every 100 ms, like Redis's default `hz 10`.
pub(crate) const ACTIVE_EXPIRE_PERIOD_MS: u64 = 100;

/// Most channels one client may subscribe to (Redis has no such bound).
pub(crate) const SUBSCRIBED_CHANNELS_MAX: usize = 10_000;
/// Most bytes of pushed messages waiting for one subscriber before it is
/// disconnected (Redis: `client-output-buffer-limit pubsub 32mb`).
pub(crate) const PUBSUB_OUTPUT_BYTES_MAX: usize = 32 * 1024 * 1024;

/// One client connection's state.
pub(crate) struct Client {
    pub id: u64,
    pub db: usize,
    pub addr: String,
    pub name: Option<Vec<u8>>,
    /// The open transaction (MULTI … EXEC), if any.
    pub multi: Option<Multi>,
    /// WATCHed (db, key)s, in the order watched.
    pub watched: Vec<(usize, Vec<u8>)>,
    /// Subscribed channels; non-empty means RESP2 subscribed mode.
    pub channels: BTreeSet<Vec<u8>>,
    /// Messages published to this client, waiting for its connection.
    pub outbox: Rc<Outbox>,
}

impl Client {
    /// A command was refused while a transaction is open: EXEC will
    /// answer EXECABORT (Redis's `flagTransaction`).
    pub(crate) fn flag_transaction(&mut self) {
        if let Some(multi) = &mut self.multi {
            multi.aborted = true;
        }
    }
}

/// Most commands one transaction may queue (Redis has no such bound).
pub(crate) const MULTI_QUEUE_LEN_MAX: usize = 10_000;

/// An open transaction (see `cmd/transactions.rs`).
#[derive(Debug, Default)]
pub(crate) struct Multi {
    /// Queued commands, in order.
    pub queue: Vec<Vec<Vec<u8>>>,
    /// A command was refused while queueing: EXEC will answer EXECABORT.
    pub aborted: bool,
}

impl Multi {
    /// Queues `args`, or refuses (and aborts the transaction) past the bound.
    pub(crate) fn queue(&mut self, args: &[Vec<u8>]) -> Frame {
        if self.queue.len() >= MULTI_QUEUE_LEN_MAX {
            self.aborted = true;
            return Frame::error("ERR MULTI queue is full");
        }
        self.queue.push(args.to_vec());
        Frame::simple("QUEUED")
    }
}

/// Pushed frames waiting to be written to one connection (pub/sub).
#[derive(Default)]
pub(crate) struct Outbox {
    pub bytes: RefCell<Vec<u8>>,
    /// Wakes the connection (bytes queued, or overflowed).
    pub notify: tokio::sync::Notify,
    /// Past [`PUBSUB_OUTPUT_BYTES_MAX`]: the connection must close.
    pub overflowed: Cell<bool>,
}

impl Outbox {
    fn push(&self, frame: &Frame) {
        if self.overflowed.get() {
            return;
        }
        let mut bytes = self.bytes.borrow_mut();
        let before = bytes.len();
        frame.encode(&mut bytes);
        if bytes.len() > PUBSUB_OUTPUT_BYTES_MAX {
            bytes.truncate(before);
            self.overflowed.set(true);
        }
        self.notify.notify_one();
    }
}

/// One channel's subscribers: client id → outbox.
pub(crate) type Subscribers = BTreeMap<u64, Rc<Outbox>>;

/// A connection blocked in BLPOP.
pub(crate) struct Blocked {
    pub db: usize,
    pub keys: Vec<Vec<u8>>,
    pub reply: Rc<BlockedReply>,
}

impl Blocked {
    /// Hands the blocked connection its reply.
    pub(crate) fn wake(self, frame: Frame) {
        *self.reply.frame.borrow_mut() = Some(frame);
        self.reply.notify.notify_one();
    }
}

/// Where a blocked connection finds its reply.
#[derive(Default)]
pub(crate) struct BlockedReply {
    pub frame: RefCell<Option<Frame>>,
    pub notify: tokio::sync::Notify,
}

/// One server instance.
pub(crate) struct Server {
    pub config: RedisConfig,
    pub clock: Clock,
    pub transport: Transport,
    pub keyspace: RefCell<Keyspace>,
    pub scripting: RefCell<Scripting>,
    pub repl: RefCell<Replication>,
    /// Wakes WAIT callers when a replica acknowledges.
    pub acks: tokio::sync::Notify,
    /// Channel → subscribed client id → its outbox.
    pub pubsub: RefCell<BTreeMap<Vec<u8>, Subscribers>>,
    /// Connections blocked in BLPOP, by blocking order.
    pub blocked: RefCell<BTreeMap<u64, Blocked>>,
    next_block_seq: Cell<u64>,
    /// A list push happened during the current command: blocked clients
    /// may be served once it ends.
    pub lists_pushed: Cell<bool>,
    alive: Cell<bool>,
    next_client_id: Cell<u64>,
    /// This instance's own `Rc` (role changes spawn tasks that hold it).
    pub(crate) me: Weak<Server>,
    /// Background tasks (expiry cycle, heartbeat, replica link), aborted
    /// when the instance dies.
    pub(crate) tasks: RefCell<Vec<tokio::task::JoinHandle<()>>>,
}

impl Server {
    /// The instance without background tasks (unit tests drive it).
    pub(crate) fn new(
        config: RedisConfig,
        log: OwnershipLog,
        clock: Clock,
        transport: Transport,
    ) -> Server {
        let mut keyspace = Keyspace::new(log, &config.name, &config.lock_key_prefix);
        if let Some(skew) = clock.skew() {
            keyspace.set_skew(skew.clone());
        }
        Server {
            config,
            clock,
            transport,
            keyspace: RefCell::new(keyspace),
            scripting: RefCell::new(Scripting::new()),
            repl: RefCell::new(Replication::default()),
            acks: tokio::sync::Notify::new(),
            pubsub: RefCell::new(BTreeMap::new()),
            blocked: RefCell::new(BTreeMap::new()),
            next_block_seq: Cell::new(1),
            lists_pushed: Cell::new(false),
            alive: Cell::new(true),
            next_client_id: Cell::new(1),
            me: Weak::new(),
            tasks: RefCell::new(Vec::new()),
        }
    }

    /// This instance's `Rc`, if it was created by [`Server::start`].
    pub(crate) fn self_rc(&self) -> Option<Rc<Server>> {
        self.me.upgrade()
    }

    pub(crate) fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    pub(crate) fn is_alive(&self) -> bool {
        self.alive.get()
    }

    pub(crate) fn new_client(&self, addr: String) -> Client {
        let id = self.next_client_id.get();
        self.next_client_id.set(id + 1);
        Client {
            id,
            db: 0,
            addr,
            name: None,
            multi: None,
            watched: Vec::new(),
            channels: BTreeSet::new(),
            outbox: Rc::new(Outbox::default()),
        }
    }

    /// The connection closed: forget its watches and subscriptions.
    pub(crate) fn client_gone(&self, client: &mut Client) {
        self.keyspace
            .borrow_mut()
            .unwatch_all(client.id, &client.watched);
        client.watched.clear();
        for channel in std::mem::take(&mut client.channels) {
            self.unsubscribe(client.id, &channel);
        }
        client.multi = None;
    }

    pub(crate) fn subscribe(&self, client: u64, channel: &[u8], outbox: &Rc<Outbox>) {
        self.pubsub
            .borrow_mut()
            .entry(channel.to_vec())
            .or_default()
            .insert(client, outbox.clone());
    }

    pub(crate) fn unsubscribe(&self, client: u64, channel: &[u8]) {
        let mut pubsub = self.pubsub.borrow_mut();
        if let Some(clients) = pubsub.get_mut(channel) {
            clients.remove(&client);
            if clients.is_empty() {
                pubsub.remove(channel);
            }
        }
    }

    /// PUBLISH: pushes a `message` to every subscriber; returns how many.
    pub(crate) fn publish(&self, channel: &[u8], message: &[u8]) -> usize {
        let pubsub = self.pubsub.borrow();
        let Some(clients) = pubsub.get(channel) else {
            return 0;
        };
        let frame = Frame::Array(vec![
            Frame::bulk("message"),
            Frame::Bulk(channel.to_vec()),
            Frame::Bulk(message.to_vec()),
        ]);
        for outbox in clients.values() {
            outbox.push(&frame);
        }
        clients.len()
    }

    /// Registers a connection blocked on `keys` of `db`; returns its place
    /// in line and where its reply will appear.
    pub(crate) fn block(&self, db: usize, keys: Vec<Vec<u8>>) -> (u64, Rc<BlockedReply>) {
        let seq = self.next_block_seq.get();
        self.next_block_seq.set(seq + 1);
        let reply = Rc::new(BlockedReply::default());
        self.blocked.borrow_mut().insert(
            seq,
            Blocked {
                db,
                keys,
                reply: reply.clone(),
            },
        );
        (seq, reply)
    }

    /// The blocked connection gave up (timeout or disconnect).
    pub(crate) fn unblock(&self, seq: u64) {
        self.blocked.borrow_mut().remove(&seq);
    }

    pub(crate) fn is_primary(&self) -> bool {
        self.repl.borrow().is_primary()
    }

    pub(crate) fn replication_offset(&self) -> u64 {
        self.repl.borrow().offset
    }

    /// `RedisHandle::get`: a string value in db 0, without side effects.
    pub(crate) fn peek(&self, key: &[u8]) -> Option<Vec<u8>> {
        let now_ms = self.now_ms();
        match self
            .keyspace
            .borrow()
            .peek(0, key, now_ms)
            .map(|e| &e.value)
        {
            Some(super::keyspace::Value::Str(s)) => Some(s.clone()),
            _ => None,
        }
    }

    /// Moves the instance's notion of "now" forward to `now_ms` (never back).
    pub(crate) fn observe_time(&self, now_ms: u64) {
        self.clock.observe(now_ms);
    }

    /// The instance died (crash or bounce): log `Lost`/`Expired` for what it
    /// held, stop its tasks. Idempotent. Reads no runtime clock.
    pub(crate) fn crashed(&self) {
        if !self.alive.replace(false) {
            return;
        }
        let now_ms = self.clock.last_seen_ms();
        self.keyspace.borrow_mut().crash(now_ms);
        for task in self.tasks.borrow_mut().drain(..) {
            task.abort();
        }
        self.repl.borrow_mut().shutdown();
    }

    /// One active expiry cycle, then ship its effects.
    pub(crate) fn active_expire_cycle(&self) {
        if !self.is_alive() {
            return;
        }
        let now_ms = self.now_ms();
        self.keyspace.borrow_mut().expire_due(now_ms);
        self.flush_effects();
    }

    /// Hands the effects of the command (or expiry cycle) that just ended
    /// to replication, as one atomic batch.
    pub(crate) fn flush_effects(&self) {
        let effects = self.keyspace.borrow_mut().take_effects();
        if !effects.is_empty() {
            self.repl.borrow_mut().propagate(&effects);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::redis::clock::WALL_CLOCK_BASE_MS;
    use crate::redis::cmd::Outcome;
    use crate::redis::frame::Frame;
    use crate::redis::repl_state::{LinkState, Role};
    use crate::redis::OwnershipChange;

    fn server() -> (Server, Rc<Cell<u64>>, OwnershipLog) {
        let now_ms = Rc::new(Cell::new(1_000));
        let log = OwnershipLog::default();
        let server = Server::new(
            RedisConfig::new("redis"),
            log.clone(),
            Clock::Manual(now_ms.clone()),
            Transport::Tokio,
        );
        (server, now_ms, log)
    }

    fn run(server: &Server, client: &mut Client, args: &[&str]) -> Frame {
        let args: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
        match server.execute(client, &args) {
            Outcome::Reply(frame) => frame,
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn set_options_expiry_and_ttls_on_the_manual_clock() {
        let (s, now, _) = server();
        let mut c = s.new_client("test".into());
        assert_eq!(
            run(&s, &mut c, &["SET", "k", "v", "EX", "0"]),
            Frame::error("ERR invalid expire time in 'set' command")
        );
        assert_eq!(
            run(&s, &mut c, &["SET", "k", "v", "NX", "XX"]),
            Frame::error("ERR syntax error")
        );
        assert_eq!(
            run(&s, &mut c, &["SET", "k", "v", "PX", "100"]),
            Frame::ok()
        );
        assert_eq!(
            run(&s, &mut c, &["SET", "k", "v2", "NX", "GET"]),
            Frame::bulk("v")
        );
        assert_eq!(run(&s, &mut c, &["SET", "k", "v3", "KEEPTTL"]), Frame::ok());
        assert_eq!(run(&s, &mut c, &["PTTL", "k"]), Frame::Integer(100));
        now.set(1_100);
        assert_eq!(
            run(&s, &mut c, &["GET", "k"]),
            Frame::bulk("v3"),
            "alive at its deadline"
        );
        now.set(1_101);
        assert_eq!(run(&s, &mut c, &["GET", "k"]), Frame::Null);
        assert_eq!(run(&s, &mut c, &["PTTL", "k"]), Frame::Integer(-2));
        assert_eq!(
            run(&s, &mut c, &["SET", "n", "9223372036854775807"]),
            Frame::ok()
        );
        assert_eq!(
            run(&s, &mut c, &["INCR", "n"]),
            Frame::error("ERR increment or decrement would overflow")
        );
        assert_eq!(run(&s, &mut c, &["EXPIRE", "n", "-1"]), Frame::Integer(1));
        assert_eq!(run(&s, &mut c, &["EXISTS", "n", "n"]), Frame::Integer(0));
        assert_eq!(
            run(&s, &mut c, &["FOO", "a"]),
            Frame::error("ERR unknown command 'FOO', with args beginning with: 'a' ")
        );
        s.keyspace.borrow().check_invariants();
    }

    #[test]
    fn lock_key_writes_by_set_get_getdel_and_past_exat_log_like_set_and_del() {
        let (s, _, log) = server();
        let mut c = s.new_client("test".into());
        assert_eq!(
            run(&s, &mut c, &["SET", "lock:a", "w1", "GET"]),
            Frame::Null
        );
        assert_eq!(
            run(&s, &mut c, &["SET", "lock:a", "w2", "GET", "KEEPTTL"]),
            Frame::bulk("w1")
        );
        assert_eq!(run(&s, &mut c, &["GETDEL", "lock:a"]), Frame::bulk("w2"));
        assert_eq!(run(&s, &mut c, &["GETDEL", "lock:a"]), Frame::Null);
        run(&s, &mut c, &["SET", "lock:a", "w3"]);
        // A Unix deadline already past: stored, logically expired (Redis
        // 7.0 keeps it until noticed), expired at timeline 0.
        assert_eq!(
            run(&s, &mut c, &["SET", "lock:a", "w4", "PXAT", "1"]),
            Frame::ok()
        );
        assert_eq!(run(&s, &mut c, &["EXISTS", "lock:a"]), Frame::Integer(0));
        // An absolute deadline in the future: PTTL counts down to it.
        let at = (WALL_CLOCK_BASE_MS + 1_000 + 5_000).to_string();
        assert_eq!(
            run(&s, &mut c, &["SET", "lock:a", "w5", "PXAT", &at]),
            Frame::ok()
        );
        assert_eq!(run(&s, &mut c, &["PTTL", "lock:a"]), Frame::Integer(5_000));
        let at = (WALL_CLOCK_BASE_MS + 1_000 + 7_000).to_string();
        assert_eq!(
            run(&s, &mut c, &["PEXPIREAT", "lock:a", &at]),
            Frame::Integer(1)
        );
        assert_eq!(run(&s, &mut c, &["PTTL", "lock:a"]), Frame::Integer(7_000));
        let changes: Vec<OwnershipChange> = log.events().into_iter().map(|e| e.change).collect();
        assert_eq!(
            changes,
            vec![
                OwnershipChange::Set { owner: "w1".into() },
                OwnershipChange::Overwritten {
                    from: "w1".into(),
                    to: "w2".into()
                },
                OwnershipChange::Deleted { owner: "w2".into() },
                OwnershipChange::Set { owner: "w3".into() },
                OwnershipChange::Overwritten {
                    from: "w3".into(),
                    to: "w4".into()
                },
                OwnershipChange::Expired { owner: "w4".into() },
                OwnershipChange::Set { owner: "w5".into() },
            ]
        );
        s.keyspace.borrow().check_invariants();
    }

    #[test]
    fn watch_follows_redis_7_expiry_rules() {
        let (s, now, _) = server();
        let mut a = s.new_client("a".into());
        let mut b = s.new_client("b".into());
        // A key alive at WATCH that expires before EXEC fails it, even if
        // nobody noticed the expiry yet.
        run(&s, &mut b, &["SET", "k", "v", "PX", "100"]);
        assert_eq!(run(&s, &mut a, &["WATCH", "k"]), Frame::ok());
        now.set(1_200);
        assert_eq!(run(&s, &mut a, &["MULTI"]), Frame::ok());
        assert_eq!(run(&s, &mut a, &["INCR", "n"]), Frame::simple("QUEUED"));
        assert_eq!(run(&s, &mut a, &["EXEC"]), Frame::NullArray);
        // A key already expired (but not yet deleted) at WATCH: deleting it
        // is no change, so EXEC runs.
        run(&s, &mut b, &["SET", "j", "v", "PX", "100"]);
        now.set(1_400);
        assert_eq!(run(&s, &mut a, &["WATCH", "j"]), Frame::ok());
        assert_eq!(run(&s, &mut b, &["EXISTS", "j"]), Frame::Integer(0));
        run(&s, &mut a, &["MULTI"]);
        run(&s, &mut a, &["INCR", "n"]);
        assert_eq!(
            run(&s, &mut a, &["EXEC"]),
            Frame::Array(vec![Frame::Integer(1)])
        );
        // Another client's write, a FLUSHDB of a watched key, and a write
        // by the watcher itself all dirty it.
        for (writer, write) in [
            (true, &["HSET", "h", "f", "v"][..]),
            (true, &["FLUSHDB"]),
            (false, &["HSET", "h", "f", "v"]),
        ] {
            if write[0] == "FLUSHDB" {
                run(&s, &mut b, &["HSET", "h", "f", "v"]);
            }
            assert_eq!(run(&s, &mut a, &["WATCH", "h"]), Frame::ok());
            let client = if writer { &mut b } else { &mut a };
            run(&s, client, write);
            run(&s, &mut a, &["MULTI"]);
            assert_eq!(run(&s, &mut a, &["EXEC"]), Frame::NullArray, "{write:?}");
        }
        // A disconnected client's watches and dirty mark are gone: later
        // writes do not mark it again.
        run(&s, &mut a, &["WATCH", "h"]);
        run(&s, &mut b, &["HSET", "h", "f", "w"]);
        assert!(s.keyspace.borrow().watch_failed(a.id, &[], 0));
        s.client_gone(&mut a);
        run(&s, &mut b, &["HSET", "h", "f", "x"]);
        assert!(!s.keyspace.borrow().watch_failed(a.id, &[], 0));
        assert!(a.watched.is_empty());
        s.keyspace.borrow().check_invariants();
    }

    #[test]
    fn exec_replicates_as_one_batch_and_blpop_inside_it_does_not_block() {
        let (s, _, _) = server();
        let mut c = s.new_client("test".into());
        run(&s, &mut c, &["MULTI"]);
        for cmd in [
            &["RPUSH", "q", "a"][..],
            &["BLPOP", "q", "empty", "0"],
            &["BLPOP", "empty", "0"],
            &["SELECT", "3"],
            &["HSET", "h", "f", "1"],
        ] {
            assert_eq!(run(&s, &mut c, cmd), Frame::simple("QUEUED"));
        }
        let offset = s.replication_offset();
        let effects_before = s.keyspace.borrow_mut().take_effects();
        assert!(effects_before.is_empty());
        assert_eq!(
            run(&s, &mut c, &["EXEC"]),
            Frame::Array(vec![
                Frame::Integer(1),
                Frame::Array(vec![Frame::bulk("q"), Frame::bulk("a")]),
                Frame::NullArray,
                Frame::ok(),
                Frame::Integer(1),
            ])
        );
        // SELECT inside EXEC sticks, as in Redis.
        assert_eq!(c.db, 3);
        assert!(s.replication_offset() > offset);
        // A queued error aborts the whole transaction.
        run(&s, &mut c, &["MULTI"]);
        run(&s, &mut c, &["HSET", "h", "g", "2"]);
        assert!(run(&s, &mut c, &["HSET", "h", "g"]).is_error());
        assert_eq!(
            run(&s, &mut c, &["EXEC"]),
            Frame::error("EXECABORT Transaction discarded because of previous errors.")
        );
        assert_eq!(
            run(&s, &mut c, &["HGETALL", "h"]),
            Frame::Array(vec![Frame::bulk("f"), Frame::bulk("1")])
        );
        s.keyspace.borrow().check_invariants();
    }

    #[test]
    fn active_expiry_cycle_logs_the_deadline() {
        let (s, now, log) = server();
        let mut c = s.new_client("test".into());
        run(&s, &mut c, &["SET", "lock:a", "w1", "PX", "50"]);
        now.set(1_300);
        s.active_expire_cycle();
        let events = log.events();
        assert_eq!(
            events[1].change,
            OwnershipChange::Expired { owner: "w1".into() }
        );
        assert_eq!(events[1].at_ms, 1_050);
        assert_eq!(s.keyspace.borrow().keys_total(), 0);
    }

    #[test]
    fn lock_scripts_log_holders_and_renewals_log_nothing() {
        let (s, _, log) = server();
        let mut c = s.new_client("test".into());
        let acquire = redfence_core::scripts::ACQUIRE_LUA;
        let renew = redfence_core::scripts::RENEW_LUA;
        let release = redfence_core::scripts::RELEASE_LUA;
        let reply = run(
            &s,
            &mut c,
            &["EVAL", acquire, "2", "lock:r", "fence:r", "w1", "1000", "1"],
        );
        assert_eq!(
            reply,
            Frame::Array(vec![Frame::Integer(1), Frame::bulk("1")])
        );
        assert_eq!(
            run(&s, &mut c, &["EVAL", renew, "1", "lock:r", "w1", "5000"]),
            Frame::Integer(1)
        );
        assert_eq!(
            run(&s, &mut c, &["EVAL", release, "1", "lock:r", "w2"]),
            Frame::Integer(0)
        );
        assert_eq!(
            run(&s, &mut c, &["EVAL", release, "1", "lock:r", "w1"]),
            Frame::Integer(1)
        );
        let changes: Vec<OwnershipChange> = log.events().into_iter().map(|e| e.change).collect();
        assert_eq!(
            changes,
            vec![
                OwnershipChange::Set { owner: "w1".into() },
                OwnershipChange::Deleted { owner: "w1".into() },
            ]
        );
        // Every effect of a command was handed to replication at its end.
        assert!(s.keyspace.borrow_mut().take_effects().is_empty());
        assert!(s.replication_offset() > 0);
    }

    #[test]
    fn a_scripts_select_stays_in_the_script() {
        let (s, _, _) = server();
        let mut c = s.new_client("test".into());
        let body = "redis.call('select', '3'); redis.call('set', 'x', '1'); return 1";
        assert_eq!(run(&s, &mut c, &["EVAL", body, "0"]), Frame::Integer(1));
        assert_eq!(c.db, 0);
        assert_eq!(run(&s, &mut c, &["EXISTS", "x"]), Frame::Integer(0));
        assert_eq!(run(&s, &mut c, &["SELECT", "3"]), Frame::ok());
        assert_eq!(run(&s, &mut c, &["EXISTS", "x"]), Frame::Integer(1));
    }

    #[test]
    fn replicas_refuse_writes_including_from_scripts() {
        let (s, _, _) = server();
        s.repl.borrow_mut().role = Role::Replica {
            host: "redis".into(),
            port: 6379,
            state: LinkState::Connect,
            synced: false,
        };
        let mut c = s.new_client("test".into());
        let readonly = "READONLY You can't write against a read only replica.";
        assert_eq!(run(&s, &mut c, &["SET", "k", "v"]), Frame::error(readonly));
        assert_eq!(
            run(
                &s,
                &mut c,
                &["EVAL", "return redis.call('set','a','b')", "0"]
            ),
            Frame::error(format!(
                "{readonly} script: {}, on @user_script:1.",
                sha1_smol::Sha1::from("return redis.call('set','a','b')").digest()
            ))
        );
        assert_eq!(run(&s, &mut c, &["GET", "k"]), Frame::Null);
        assert!(run(&s, &mut c, &["WAIT", "0", "0"]).is_error());
    }

    #[test]
    fn script_cache_is_per_instance_and_flushable() {
        let (s, _, _) = server();
        let mut c = s.new_client("test".into());
        let sha = sha1_smol::Sha1::from("return 1").digest().to_string();
        let noscript = Frame::error("NOSCRIPT No matching script. Please use EVAL.");
        assert_eq!(run(&s, &mut c, &["EVALSHA", &sha, "0"]), noscript);
        assert_eq!(
            run(&s, &mut c, &["SCRIPT", "LOAD", "return 1"]),
            Frame::bulk(sha.clone())
        );
        assert_eq!(
            run(&s, &mut c, &["EVALSHA", &sha.to_uppercase(), "0"]),
            Frame::Integer(1)
        );
        assert_eq!(run(&s, &mut c, &["SCRIPT", "FLUSH"]), Frame::ok());
        assert_eq!(run(&s, &mut c, &["EVALSHA", &sha, "0"]), noscript);
        let (other, _, _) = server();
        let mut c2 = other.new_client("test".into());
        assert_eq!(run(&other, &mut c2, &["EVALSHA", &sha, "0"]), noscript);
    }
}
