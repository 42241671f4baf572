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
use std::rc::{Rc, Weak};

use super::clock::Clock;
use super::keyspace::Keyspace;
use super::repl_state::Replication;
use super::scripting::Scripting;
use super::transport::Transport;
use super::{OwnershipLog, RedisConfig};

/// Active expiry runs every 100 ms, like Redis's default `hz 10`.
pub(crate) const ACTIVE_EXPIRE_PERIOD_MS: u64 = 100;

/// One client connection's state.
pub(crate) struct Client {
    pub id: u64,
    pub db: usize,
    pub addr: String,
    pub name: Option<Vec<u8>>,
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
        let keyspace = Keyspace::new(log, &config.name, &config.lock_key_prefix);
        Server {
            config,
            clock,
            transport,
            keyspace: RefCell::new(keyspace),
            scripting: RefCell::new(Scripting::new()),
            repl: RefCell::new(Replication::default()),
            acks: tokio::sync::Notify::new(),
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
        }
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
