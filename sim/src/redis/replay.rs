//! Re-executing what a real Redis server applied, to recover its ownership
//! log.
//!
//! Why it exists: a real `redis-server` keeps no record of who held a lock
//! key when, and the properties that reason about holdings (unlock safety,
//! renewal safety, fail-closed, bounded liveness, overlapping holders,
//! lease continuity) need one. `MONITOR` streams every command the server
//! ran, in its execution order and with its microsecond time — the commands
//! a script ran too, as `[0 lua]` lines — but not their effects, and not
//! expiries (a lease that lapses is no command). Feeding that stream,
//! command by command at the server's own times, through this simulated
//! server's command engine (the one `sim/tests/differential.rs` holds to
//! `redis-server` 7.0.15, with Redis's expiry rules) rebuilds the keyspace
//! and so every change of a lock key's holder, expiries included, as the
//! same [`OwnershipRecord`](super::OwnershipRecord)s the simulation logs.
//!
//! What is and is not re-executed, and why:
//!
//! - `EVAL`/`EVALSHA`/`FCALL` lines are skipped: the commands their script
//!   ran follow them as `lua` lines and are executed one by one. The
//!   script's text never runs here, so a script that reads `TIME` or
//!   branches on anything is replayed by what it did, not by what it is.
//! - `MULTI`/`EXEC`/`DISCARD`/`WATCH`/`UNWATCH` are skipped: Redis shows a
//!   transaction's commands when `EXEC` runs them (a queued command that a
//!   `DISCARD` or a failed `WATCH` dropped is never shown), so they run here
//!   in that order, as plain commands.
//! - A command the engine does not know is counted
//!   ([`Replay::unknown_commands`]): the real server accepted it (MONITOR
//!   shows only commands that passed its checks), so its effect is missing
//!   here and the caller must say so instead of trusting the log.
//! - A blocking pop that had to wait (`BLPOP` on an empty list) takes its
//!   element later, on the server's own initiative; that pop is not
//!   streamed and the list keeps the element here. Lock keys are strings,
//!   so holdings are unaffected; only a signalling list can differ.
//!
//! Expiry: before each command every key whose deadline passed is expired
//! (logged `Expired` at its deadline, as the simulation's active cycle
//! does), so the log is in the server's order. [`Replay::stop`] loses the
//! keyspace as a crash without persistence does (`Lost`), and
//! [`Replay::start`] brings up an empty instance.
//!
//! Time: the caller gives each command's time in milliseconds on its own
//! timeline (a world's clock) and that timeline's 0 in Unix milliseconds,
//! for the absolute forms (`PXAT`, `PEXPIREAT`). Times that run backwards
//! (two commands in one millisecond, rounded) are held at the latest.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::rc::Rc;

use super::clock::Clock;
use super::cmd::Outcome;
use super::frame::Frame;
use super::server::{Client, Server};
use super::transport::Transport;
use super::{OwnershipLog, RedisConfig};

/// Commands whose effects arrive as other lines of the stream (see the
/// module doc), in lower case.
const SKIPPED: [&str; 11] = [
    "eval",
    "evalsha",
    "eval_ro",
    "evalsha_ro",
    "fcall",
    "fcall_ro",
    "multi",
    "exec",
    "discard",
    "watch",
    "unwatch",
];

/// Commands that change no key, which the engine need not know: a real
/// server ran them (the recorder's own `ECHO`, `INFO` and `SCAN` among
/// them, and the connection handshakes of client libraries in other
/// languages — redis-py's `HELLO` — run by lock adapters) and nothing of
/// the keyspace follows from them. Any other command the engine does not
/// know is counted (module doc).
const READS_UNKNOWN_OK: [&str; 30] = [
    "hello",
    "auth",
    "quit",
    "readonly",
    "readwrite",
    "echo",
    "info",
    "scan",
    "keys",
    "dbsize",
    "time",
    "lastsave",
    "memory",
    "object",
    "randomkey",
    "strlen",
    "mget",
    "hmget",
    "hkeys",
    "hvals",
    "hlen",
    "hstrlen",
    "lindex",
    "llen",
    "lrange",
    "lpos",
    "command",
    "role",
    "slowlog",
    "latency",
];

/// Most distinct client addresses kept; a stream with more reuses the
/// last slot (addresses only carry a connection's selected database and
/// name, and every line names its database).
const CLIENTS_MAX: usize = 4_096;

/// A simulated server fed a real server's command stream. See the module
/// doc.
pub struct Replay {
    config: RedisConfig,
    log: OwnershipLog,
    now_ms: Rc<Cell<u64>>,
    unix_base_ms: i64,
    /// `None` while the real server is down.
    server: Option<Server>,
    clients: BTreeMap<String, Client>,
    unknown: BTreeMap<String, u64>,
    applied: u64,
}

impl Replay {
    /// An empty, running instance named `server` (the name its ownership
    /// records carry) that logs holder changes of keys starting with
    /// `lock_key_prefix` into `log`; timeline 0 is `unix_base_ms`.
    pub fn new(server: &str, lock_key_prefix: &str, log: OwnershipLog, unix_base_ms: i64) -> Self {
        let mut config = RedisConfig::new(server);
        config.lock_key_prefix = lock_key_prefix.to_owned();
        let mut replay = Self {
            config,
            log,
            now_ms: Rc::new(Cell::new(0)),
            unix_base_ms,
            server: None,
            clients: BTreeMap::new(),
            unknown: BTreeMap::new(),
            applied: 0,
        };
        replay.start(0);
        replay
    }

    fn advance(&mut self, at_ms: u64) {
        self.now_ms.set(self.now_ms.get().max(at_ms));
        if let Some(server) = &self.server {
            // Bounded: each pass removes up to its bound, and the loop
            // ends when a pass removes nothing.
            while server.keyspace.borrow_mut().expire_due(self.now_ms.get()) > 0 {}
            server.flush_effects();
        }
    }

    /// Runs `args` as the real server did at `at_ms`, for the client at
    /// `client` (an address, or `lua` inside a script) on database `db`.
    /// Ignored while the instance is down: a stopped server runs nothing.
    pub fn apply(&mut self, at_ms: u64, db: usize, client: &str, args: &[Vec<u8>]) {
        let Some(name) = args.first() else {
            return;
        };
        let name = String::from_utf8_lossy(name).to_ascii_lowercase();
        if SKIPPED.contains(&name.as_str()) {
            return;
        }
        self.advance(at_ms);
        let Some(server) = &self.server else {
            return;
        };
        if !self.clients.contains_key(client) && self.clients.len() >= CLIENTS_MAX {
            let last = self.clients.keys().next_back().cloned().unwrap_or_default();
            let reused = self.clients.remove(&last);
            if let Some(mut gone) = reused {
                server.client_gone(&mut gone);
            }
        }
        let conn = self
            .clients
            .entry(client.to_owned())
            .or_insert_with(|| server.new_client(client.to_owned()));
        conn.db = db.min(super::keyspace::DB_COUNT - 1);
        // A transaction's commands arrive as plain lines (module doc).
        conn.multi = None;
        let outcome = server.execute(conn, args);
        self.applied += 1;
        if let Outcome::Reply(Frame::Error(text)) = outcome {
            if text.starts_with(b"ERR unknown command")
                && !READS_UNKNOWN_OK.contains(&name.as_str())
            {
                *self.unknown.entry(name).or_insert(0) += 1;
            }
        }
    }

    /// The real server stopped at `at_ms` without persistence: every lock
    /// key still held is logged `Lost` (expired ones `Expired`).
    pub fn stop(&mut self, at_ms: u64) {
        self.advance(at_ms);
        if let Some(server) = self.server.take() {
            server.crashed();
        }
        self.clients.clear();
    }

    /// The real server started (again) at `at_ms`, empty. No-op when up.
    pub fn start(&mut self, at_ms: u64) {
        self.advance(at_ms);
        if self.server.is_some() {
            return;
        }
        let clock = Clock::Replayed {
            now_ms: self.now_ms.clone(),
            unix_base_ms: self.unix_base_ms,
        };
        self.server = Some(Server::new(
            self.config.clone(),
            self.log.clone(),
            clock,
            Transport::Tokio,
        ));
    }

    /// Expires what was due by `at_ms`, the end of the recording.
    pub fn finish(&mut self, at_ms: u64) {
        self.advance(at_ms);
    }

    /// A string key's value and remaining lifetime at the replay's time
    /// (`None` when missing, expired, not a string, or the instance is
    /// down): the caller compares it with the real server's at the end.
    pub fn string_at_end(&self, db: usize, key: &[u8]) -> Option<(Vec<u8>, Option<u64>)> {
        let server = self.server.as_ref()?;
        let now_ms = self.now_ms.get();
        let keyspace = server.keyspace.borrow();
        let entry = keyspace.peek(db.min(super::keyspace::DB_COUNT - 1), key, now_ms)?;
        match &entry.value {
            super::keyspace::Value::Str(value) => Some((
                value.clone(),
                entry.expires_at_ms.map(|at| at.saturating_sub(now_ms)),
            )),
            _ => None,
        }
    }

    /// Every string key of database 0 at the replay's time, with its value
    /// and remaining lifetime, in key order (empty while down).
    pub fn strings_at_end(&self) -> Vec<(Vec<u8>, Vec<u8>, Option<u64>)> {
        let Some(server) = self.server.as_ref() else {
            return Vec::new();
        };
        let now_ms = self.now_ms.get();
        let snapshot = server.keyspace.borrow().snapshot();
        snapshot
            .into_iter()
            .filter(|(db, _, entry)| *db == 0 && entry.expires_at_ms.is_none_or(|at| now_ms <= at))
            .filter_map(|(_, key, entry)| match entry.value {
                super::keyspace::Value::Str(value) => Some((
                    key,
                    value,
                    entry.expires_at_ms.map(|at| at.saturating_sub(now_ms)),
                )),
                _ => None,
            })
            .collect()
    }

    /// Commands the engine did not know, by name, with how often each ran.
    pub fn unknown_commands(&self) -> &BTreeMap<String, u64> {
        &self.unknown
    }

    /// Commands re-executed so far (skipped lines not counted).
    pub fn applied(&self) -> u64 {
        self.applied
    }

    /// Whether the instance is up.
    pub fn is_up(&self) -> bool {
        self.server.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::OwnershipChange;

    fn args(words: &[&str]) -> Vec<Vec<u8>> {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    fn changes(log: &OwnershipLog) -> Vec<(u64, OwnershipChange)> {
        log.events()
            .into_iter()
            .map(|r| (r.at_ms, r.change))
            .collect()
    }

    fn set(owner: &str) -> OwnershipChange {
        OwnershipChange::Set {
            owner: owner.to_owned(),
        }
    }

    /// The acquire script's own lines, as MONITOR shows them: EXISTS, INCR,
    /// PSETEX under `lua`, after the EVALSHA line.
    fn acquire(replay: &mut Replay, at_ms: u64, owner: &str, lease: &str) {
        let evalsha = args(&["EVALSHA", "abc", "2", "lock:{r}", "fence:{r}", owner, lease]);
        replay.apply(at_ms, 0, "127.0.0.1:5000", &evalsha);
        replay.apply(at_ms, 0, "lua", &args(&["EXISTS", "lock:{r}"]));
        replay.apply(at_ms, 0, "lua", &args(&["INCR", "fence:{r}"]));
        replay.apply(
            at_ms,
            0,
            "lua",
            &args(&["PSETEX", "lock:{r}", lease, owner]),
        );
    }

    #[test]
    fn a_scripts_lines_set_the_holder_and_its_lease_expires_at_the_deadline() {
        let log = OwnershipLog::new();
        let mut replay = Replay::new("redis", "lock:", log.clone(), 1_700_000_000_000);
        acquire(&mut replay, 10, "a", "100");
        // Nothing happens at 110 (alive at its deadline); the next command,
        // at 250, comes after the expiry.
        replay.apply(110, 0, "127.0.0.1:5001", &args(&["GET", "lock:{r}"]));
        acquire(&mut replay, 250, "b", "100");
        assert_eq!(
            changes(&log),
            vec![
                (10, set("a")),
                (
                    110,
                    OwnershipChange::Expired {
                        owner: "a".to_owned()
                    }
                ),
                (250, set("b")),
            ]
        );
        assert_eq!(
            replay.string_at_end(0, b"fence:{r}"),
            Some((b"2".to_vec(), None)),
            "the script's INCR ran twice"
        );
        assert_eq!(replay.applied(), 7, "EVALSHA lines are not executed");
    }

    #[test]
    fn a_release_deletes_a_stop_loses_and_a_start_is_empty() {
        let log = OwnershipLog::new();
        let mut replay = Replay::new("redis", "lock:", log.clone(), 0);
        acquire(&mut replay, 0, "a", "1000");
        replay.apply(5, 0, "lua", &args(&["GET", "lock:{r}"]));
        replay.apply(5, 0, "lua", &args(&["DEL", "lock:{r}"]));
        acquire(&mut replay, 6, "b", "1000");
        replay.stop(20);
        assert!(!replay.is_up());
        replay.apply(21, 0, "127.0.0.1:5000", &args(&["SET", "lock:{r}", "x"]));
        replay.start(30);
        assert_eq!(replay.string_at_end(0, b"fence:{r}"), None, "started empty");
        acquire(&mut replay, 40, "c", "1000");
        replay.finish(2_000);
        let deleted = |o: &str| OwnershipChange::Deleted {
            owner: o.to_owned(),
        };
        assert_eq!(
            changes(&log),
            vec![
                (0, set("a")),
                (5, deleted("a")),
                (6, set("b")),
                (
                    20,
                    OwnershipChange::Lost {
                        owner: "b".to_owned()
                    }
                ),
                (40, set("c")),
                (
                    1_040,
                    OwnershipChange::Expired {
                        owner: "c".to_owned()
                    }
                ),
            ]
        );
    }

    #[test]
    fn a_transactions_lines_run_as_plain_commands_and_unknown_ones_are_counted() {
        let log = OwnershipLog::new();
        let mut replay = Replay::new("redis", "lock:", log.clone(), 0);
        for line in [
            &["MULTI"][..],
            &["SET", "lock:{r}", "a", "NX", "PX", "500"],
            &["INCR", "fence:{r}"],
            &["EXEC"],
            &["HPEXPIRE", "h", "10", "FIELDS", "1", "f"],
            &["SCAN", "0", "COUNT", "1000"],
            &["INFO", "replication"],
            &["HELLO", "3"],
        ] {
            replay.apply(3, 0, "127.0.0.1:5000", &args(line));
        }
        assert_eq!(changes(&log), vec![(3, set("a"))]);
        assert_eq!(
            replay.unknown_commands().iter().collect::<Vec<_>>(),
            vec![(&"hpexpire".to_owned(), &1)],
            "a write the engine lacks is counted; reads it lacks are not"
        );
    }

    #[test]
    fn absolute_expiry_is_read_against_the_given_unix_base() {
        let log = OwnershipLog::new();
        let mut replay = Replay::new("redis", "lock:", log.clone(), 1_000_000);
        // PXAT 1_000_500 Unix ms is 500 ms on this timeline.
        let line = args(&["SET", "lock:{r}", "a", "PXAT", "1000500"]);
        replay.apply(100, 0, "127.0.0.1:5000", &line);
        assert_eq!(
            replay.string_at_end(0, b"lock:{r}"),
            Some((b"a".to_vec(), Some(400)))
        );
    }
}
