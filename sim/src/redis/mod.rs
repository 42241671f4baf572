//! A simulated Redis server: RESP2 over turmoil's simulated TCP (or a real
//! tokio listener), executing the very same Lua scripts as production.
//!
//! Why it exists: the lock protocol under test is only as trustworthy as the
//! Redis it talks to. Here the unchanged `redfence-core` client and the real
//! `redis` crate speak the real wire protocol to a server whose clock is
//! turmoil's, whose network faults are turmoil's, and whose behaviour is a
//! pure function of its inputs, so a seed replays byte for byte. The server
//! also records ground truth that a real Redis cannot give: every change of a
//! lock key's holder ([`OwnershipLog`]).
//!
//! Layout (one concern per module, in the style of tokio-rs/mini-redis):
//! [`frame`] RESP2 parse/encode; `connection` one client's read–execute–
//! write loop; `keyspace` keys, values, expiry, the ownership hooks and
//! WATCH;
//! `cmd` one file per command group, `err` their error texts; `exec` a
//! handler's context; `dispatch` the checks before a handler (and MULTI
//! queueing); `scripting` + `lua` EVAL and the Lua sandbox over
//! `script_cache` (engine and compiled scripts), whose engines come warm
//! from `lua_pool`; `replication`
//! primary→replica effects stream and WAIT over `repl_state` (role, feeds,
//! offsets, effects on the wire); `instance` starting and promoting;
//! `transport` the networks an instance lives on; `server` the state of one
//! running instance (with its clients' transactions, subscriptions and
//! BLPOP waiters), which imports none of what drives it; `replay` the same
//! engine fed a real server's `MONITOR` stream, to recover the ownership log
//! a real Redis does not keep.
//!
//! Commands: strings, keys, lists (with blocking BLPOP), hashes,
//! transactions (MULTI/EXEC/WATCH), pub/sub, scripts, connection and
//! replication commands — the list is in `cmd/mod.rs`; anything else is an
//! unknown command in Redis 7.0's words.
//!
//! Fidelity is checked against a real redis-server 7.0.15 by
//! `sim/tests/differential.rs`; deliberate deviations are listed in the
//! module docs where they live (bounds, `CLIENT SETINFO`, script limits,
//! hash order past 128 fields, pub/sub and BLPOP details).

mod clock;
pub use clock::Skew;
mod cmd;
mod connection;
mod dispatch;
pub(crate) mod err;
mod exec;
pub mod frame;
mod instance;
mod keyspace;
mod lua;
mod lua_pool;
mod repl_state;
mod replay;
mod replication;
mod script_cache;
mod scripting;
mod server;
mod transport;

use std::cell::RefCell;
use std::rc::Rc;

pub use frame::Frame;
pub use replay::Replay;

use clock::Clock;
use server::Server;

/// The port a simulated server listens on unless configured otherwise.
pub const REDIS_PORT: u16 = 6379;

/// What one server instance is.
#[derive(Clone, Debug)]
pub struct RedisConfig {
    /// Host name in the sim, e.g. `"redis"` or `"replica"`; names the server
    /// in the ownership log.
    pub name: String,
    /// Listening port (default [`REDIS_PORT`]).
    pub port: u16,
    /// Start as a replica of this primary `(host, port)`.
    pub replica_of: Option<(String, u16)>,
    /// Keys starting with this prefix are lock keys for the ownership log
    /// (default `"lock:"`).
    pub lock_key_prefix: String,
    /// Where to record every command clients send (default: nowhere).
    pub command_log: Option<CommandLog>,
}

impl RedisConfig {
    /// A primary called `name` on [`REDIS_PORT`] with lock prefix `"lock:"`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            port: REDIS_PORT,
            replica_of: None,
            lock_key_prefix: "lock:".to_string(),
            command_log: None,
        }
    }

    /// The same configuration, starting as a replica of `host:port`.
    pub fn replica_of(mut self, host: impl Into<String>, port: u16) -> Self {
        self.replica_of = Some((host.into(), port));
        self
    }
}

impl Default for RedisConfig {
    fn default() -> Self {
        Self::new("redis")
    }
}

/// Most commands one [`CommandLog`] keeps; past it, commands are counted,
/// not stored, so a runaway run cannot exhaust memory.
pub const COMMAND_LOG_EVENTS_MAX: usize = 1_000_000;

/// Longest rendering of one command kept in the log, in bytes.
pub const COMMAND_TEXT_LEN_MAX: usize = 160;

/// Every command clients sent, in execution order, for the run's trace: the
/// determinism check then compares the servers' inputs too, not only what
/// the workers chose to log. A log made with [`CommandLog::off`] records
/// nothing (a scenario run never reads it, and building each command's
/// text was 2% of a run).
#[derive(Clone)]
pub struct CommandLog(Rc<RefCell<(Vec<CommandEvent>, u64)>>, bool);

impl Default for CommandLog {
    fn default() -> Self {
        Self(Rc::default(), true)
    }
}

/// One command a server executed for a client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandEvent {
    /// Simulated milliseconds.
    pub at_ms: u64,
    /// Server host name.
    pub server: String,
    /// The client's address.
    pub client: String,
    /// The command, arguments space-separated (lossy UTF-8, truncated).
    pub command: String,
}

impl CommandLog {
    /// A new, empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// A log that records nothing: its events stay empty.
    pub fn off() -> Self {
        Self(Rc::default(), false)
    }

    /// A copy of every stored event.
    pub fn events(&self) -> Vec<CommandEvent> {
        self.0.borrow().0.clone()
    }

    /// Commands seen past [`COMMAND_LOG_EVENTS_MAX`].
    pub fn dropped(&self) -> u64 {
        self.0.borrow().1
    }

    pub(crate) fn record(&self, at_ms: u64, server: &str, client: &str, args: &[Vec<u8>]) {
        if !self.1 {
            return;
        }
        let mut log = self.0.borrow_mut();
        if log.0.len() >= COMMAND_LOG_EVENTS_MAX {
            log.1 += 1;
            return;
        }
        let mut command = String::new();
        for (i, arg) in args.iter().enumerate() {
            if i > 0 {
                command.push(' ');
            }
            command.push_str(&String::from_utf8_lossy(arg));
            if command.len() > COMMAND_TEXT_LEN_MAX {
                let mut cut = COMMAND_TEXT_LEN_MAX;
                while !command.is_char_boundary(cut) {
                    cut -= 1;
                }
                command.truncate(cut);
                command.push('…');
                break;
            }
        }
        log.0.push(CommandEvent {
            at_ms,
            server: server.to_owned(),
            client: client.to_owned(),
            command,
        });
    }
}

impl std::fmt::Debug for CommandLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandLog")
            .field("events", &self.0.borrow().0.len())
            .finish()
    }
}

/// Ground truth: every change of a lock key's holder, in the order the
/// servers made them. Shared (`Rc`) so it survives server restarts; one log
/// can be given to several servers (primary and replica), each event names
/// its server.
///
/// Events are appended in execution order; `at_ms` of an `Expired` event is
/// the logical deadline, which may lie before the previous event's `at_ms`
/// when the expiry was noticed late (lazily, or by the next active cycle).
#[derive(Clone, Default)]
pub struct OwnershipLog(Rc<RefCell<Vec<OwnershipRecord>>>);

impl OwnershipLog {
    /// A new, empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// A copy of every event so far.
    pub fn events(&self) -> Vec<OwnershipRecord> {
        self.0.borrow().clone()
    }

    /// Number of events so far.
    pub fn len(&self) -> usize {
        self.0.borrow().len()
    }

    /// Whether no event was recorded yet.
    pub fn is_empty(&self) -> bool {
        self.0.borrow().is_empty()
    }

    pub(crate) fn push(&self, event: OwnershipRecord) {
        self.0.borrow_mut().push(event);
    }
}

impl std::fmt::Debug for OwnershipLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.borrow().iter()).finish()
    }
}

/// The ownership log speaks the history's vocabulary: what the simulated
/// server applied is the ground truth the checker reads, unconverted.
pub use redfence_history::{OwnershipChange, OwnershipRecord};

/// The world's handle on one server: survives restarts and points at the
/// live instance (if any).
#[derive(Clone, Default)]
pub struct RedisHandle(Rc<RefCell<HandleState>>);

#[derive(Default)]
struct HandleState {
    live: Option<Rc<Server>>,
    /// Processes killed so far ([`RedisHandle::kill`]): an instance started
    /// after the last kill serves on; one started before stops serving.
    kills: u64,
    /// Wakes the accept loop of the live instance when it is killed.
    killed: Rc<tokio::sync::Notify>,
    /// The last snapshot written to disk (`BGSAVE`): what the next start
    /// of this host loads, as `redis-server` loads its `dump.rdb`.
    saved: Option<Saved>,
    /// The machine's clock error, kept across restarts.
    skew: Skew,
}

/// A snapshot on disk: when it was taken and every key then, with its
/// absolute deadline (an RDB file stores expiry as a time, not a TTL).
struct Saved {
    at_ms: u64,
    entries: Vec<(usize, Vec<u8>, keyspace::Entry)>,
}

impl RedisHandle {
    /// A handle with no instance yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn live(&self) -> Option<Rc<Server>> {
        self.0.borrow().live.clone()
    }

    /// `REPLICAOF NO ONE`: the replica becomes a primary that keeps its data
    /// and accepts writes. No-op when down or already a primary.
    pub fn promote(&self) {
        if let Some(server) = self.live() {
            server.promote();
        }
    }

    /// Whether the live instance is a primary (false when down).
    pub fn is_primary(&self) -> bool {
        self.live().is_some_and(|s| s.is_primary())
    }

    /// Peeks at `key` in db 0 (a string value), respecting logical expiry
    /// at the current simulated time; `None` when down, missing, expired or
    /// not a string. Never changes the keyspace.
    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.live().and_then(|s| s.peek(key.as_bytes()))
    }

    /// The live instance's replication offset: bytes of effects produced (a
    /// primary) or applied (a replica). 0 when down.
    pub fn replication_offset(&self) -> u64 {
        self.live().map_or(0, |s| s.replication_offset())
    }

    /// `kill -9` of the server process; its machine stays up. The instance
    /// dies now, between steps — the keys it held are recorded `Lost` at the
    /// time last observed ([`RedisHandle::observe_time`]), and it serves no
    /// request from here on — and its connections and listener close on the
    /// next step, so clients learn it as they do from a real kill: open
    /// connections are closed under them and new ones are refused, at once,
    /// instead of timing out as they do against a machine that is gone
    /// (`Sim::crash`, which delivers nothing until the host is bounced).
    /// A restart is a bounce of the host, as before.
    pub fn kill(&self) {
        let (server, killed) = {
            let mut state = self.0.borrow_mut();
            state.kills += 1;
            (state.live.take(), state.killed.clone())
        };
        if let Some(server) = server {
            server.crashed();
        }
        killed.notify_one();
    }

    /// Processes killed so far, and the notification a kill sends.
    fn kills(&self) -> (u64, Rc<tokio::sync::Notify>) {
        let state = self.0.borrow();
        (state.kills, state.killed.clone())
    }

    /// Whether an instance is running.
    pub fn is_up(&self) -> bool {
        self.live().is_some()
    }

    /// Tells the live instance that simulated time has reached `now_ms`.
    /// Between steps there is no host context to read turmoil's clock from,
    /// so the world calls this before it crashes the host (stamping `Lost`
    /// events exactly) and after every run of steps (so [`RedisHandle::get`]
    /// judges expiry at the right time).
    pub fn observe_time(&self, now_ms: u64) {
        if let Some(server) = self.live() {
            server.observe_time(now_ms);
        }
    }

    /// `BGSAVE` at `now_ms`: the live instance's keys become what the next
    /// start loads (writes after it are lost by a crash). Returns whether
    /// an instance was up to take it.
    pub fn save(&self, now_ms: u64) -> bool {
        let Some(server) = self.live() else {
            return false;
        };
        server.observe_time(now_ms);
        let entries = server.keyspace.borrow().snapshot();
        self.0.borrow_mut().saved = Some(Saved {
            at_ms: now_ms,
            entries,
        });
        true
    }

    /// The machine's clock jumps `jump_ms` forward at world time `now_ms`:
    /// every deadline it holds comes `jump_ms` sooner, on this instance and
    /// on any later one (the machine's clock, not the process's).
    pub fn jump_clock(&self, now_ms: u64, jump_ms: u64) {
        if let Some(server) = self.live() {
            server.observe_time(now_ms);
        }
        self.0.borrow().skew.jump(now_ms, jump_ms);
        if let Some(server) = self.live() {
            // Let time on the server's clock catch up at once: a key whose
            // deadline the jump passed is due now.
            server.observe_time(now_ms);
        }
    }

    /// How far the machine's clock is ahead of the world's.
    pub fn clock_offset_ms(&self) -> u64 {
        self.0.borrow().skew.offset_ms()
    }

    fn skew(&self) -> Skew {
        self.0.borrow().skew.clone()
    }

    /// When the snapshot the next start loads was taken, if there is one.
    pub fn saved_at_ms(&self) -> Option<u64> {
        self.0.borrow().saved.as_ref().map(|saved| saved.at_ms)
    }

    /// Loads the saved snapshot, if any, into `server` (just started):
    /// keys whose deadline has passed are skipped, as `redis-server`
    /// skips expired keys when a primary loads its RDB file.
    fn load_saved(&self, server: &Server) {
        let entries: Vec<(usize, Vec<u8>, keyspace::Entry)> = {
            let state = self.0.borrow();
            let Some(saved) = state.saved.as_ref() else {
                return;
            };
            let now_ms = server.now_ms();
            saved
                .entries
                .iter()
                .filter(|(_, _, entry)| entry.expires_at_ms.is_none_or(|at| now_ms < at))
                .cloned()
                .collect()
        };
        let now_ms = server.now_ms();
        server.keyspace.borrow_mut().load_snapshot(entries, now_ms);
    }

    /// Registers `server` as the live instance. A previous instance that
    /// was not shut down cleanly is recorded as crashed first.
    fn register(&self, server: Rc<Server>) {
        let previous = self.0.borrow_mut().live.replace(server);
        if let Some(previous) = previous {
            previous.crashed();
        }
    }

    /// Marks `server` down if it is the live instance.
    fn unregister(&self, server: &Rc<Server>) {
        let mut state = self.0.borrow_mut();
        if state.live.as_ref().is_some_and(|s| Rc::ptr_eq(s, server)) {
            state.live = None;
        }
    }
}

impl std::fmt::Debug for RedisHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisHandle")
            .field("up", &self.is_up())
            .field("primary", &self.is_primary())
            .finish()
    }
}

/// Runs when the server's main future is dropped (turmoil crashed or
/// bounced the host): the instance's data is gone, so every lock key still
/// held is recorded as `Lost`, and the handle goes down. Nothing here reads
/// the clock: during a crash there is no runtime context, so the time used
/// is the last one the instance observed (the world reports it before a
/// crash through [`RedisHandle::observe_time`]).
struct CrashGuard {
    server: Rc<Server>,
    handle: RedisHandle,
}

impl Drop for CrashGuard {
    fn drop(&mut self) {
        self.server.crashed();
        self.handle.unregister(&self.server);
    }
}

/// Serves forever on `0.0.0.0:port` of the current turmoil host.
///
/// Call it inside `sim.host(name, || ...)`: every (re)start calls it again
/// with a fresh keyspace — empty, or the handle's saved snapshot
/// ([`RedisHandle::save`]) — and an empty script cache, and registers the
/// new instance in `handle`. When the host is crashed, the lock keys that
/// were held are recorded as `Lost` and the handle goes down.
pub async fn serve_turmoil(
    config: RedisConfig,
    log: OwnershipLog,
    handle: RedisHandle,
) -> turmoil::Result {
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", config.port)).await?;
    let clock = Clock::turmoil(handle.skew());
    let server = Server::start(config, log, clock, transport::Transport::Turmoil);
    handle.register(server.clone());
    handle.load_saved(&server);
    let (started_after, killed) = handle.kills();
    let guard = CrashGuard {
        server: server.clone(),
        handle: handle.clone(),
    };
    // Bounded by the kill (or the host's crash, which drops this future).
    loop {
        // Biased: a kill is seen before a connection queued in the same step
        // is accepted, and no random branch order enters a run.
        let accepted = tokio::select! {
            biased;
            () = killed.notified() => None,
            accepted = listener.accept() => Some(accepted?),
        };
        let Some((stream, peer)) = accepted else {
            if handle.kills().0 > started_after {
                break;
            }
            continue;
        };
        if !server.is_alive() {
            break;
        }
        // Tracked with the server's tasks, so a kill closes the connection.
        let task = tokio::task::spawn_local(connection::serve_client(server.clone(), stream, peer));
        let mut tasks = server.tasks.borrow_mut();
        tasks.retain(|t| !t.is_finished());
        tasks.push(task);
    }
    // Killed: the port closes (new connections are refused) and the host
    // idles until it is bounced (restarted).
    drop(listener);
    drop(guard);
    std::future::pending::<()>().await;
    Ok(())
}

/// The same server over a real tokio listener, for the differential test
/// against a real redis-server. Must run inside a tokio `LocalSet`.
pub async fn serve_tokio(
    listener: tokio::net::TcpListener,
    config: RedisConfig,
    log: OwnershipLog,
    handle: RedisHandle,
) -> std::io::Result<()> {
    let server = Server::start(config, log, Clock::tokio(), transport::Transport::Tokio);
    handle.register(server.clone());
    let _guard = CrashGuard {
        server: server.clone(),
        handle,
    };
    loop {
        let (stream, peer) = listener.accept().await?;
        // Replies are small and latency matters more than batching here.
        stream.set_nodelay(true)?;
        let server = server.clone();
        tokio::task::spawn_local(connection::serve_client(server, stream, peer));
    }
}

#[cfg(test)]
mod tests {
    use super::CommandLog;

    #[test]
    fn a_command_log_that_is_off_records_nothing() {
        let command = [b"GET".to_vec(), b"lock:{r}".to_vec()];
        let on = CommandLog::new();
        on.record(5, "redis", "10.0.0.2:4000", &command);
        assert_eq!(on.events().len(), 1);
        assert_eq!(on.events()[0].command, "GET lock:{r}");
        let off = CommandLog::off();
        let shared = off.clone();
        shared.record(5, "redis", "10.0.0.2:4000", &command);
        assert!(off.events().is_empty());
        assert_eq!(off.dropped(), 0, "nothing was recorded, so nothing dropped");
    }
}
