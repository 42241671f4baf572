//! The command handlers' execution context: what one command may touch (the
//! server instance, the selected database, the calling connection, the
//! command's time) and where it came from.
//!
//! It lives apart from `server.rs` and `dispatch.rs` so that the handlers in
//! `cmd/` and the script engine depend on this context, not on the
//! dispatcher: the dispatcher builds an [`Exec`] and calls a handler, and a
//! handler never imports the dispatcher's module; the server's state, for
//! its part, imports neither.

use super::keyspace::Keyspace;
use super::server::{Client, Server};

/// Where a command comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Caller {
    /// A client connection.
    Client,
    /// `redis.call` / `redis.pcall` inside a script.
    Script,
}

/// Everything a command handler may touch.
pub(crate) struct Exec<'a> {
    pub server: &'a Server,
    /// Selected database (SELECT changes it; a script's SELECT does not
    /// leak to its caller).
    pub db: usize,
    /// The connection (None inside scripts).
    pub client: Option<&'a mut Client>,
    /// Time of the command (fixed for a whole script, as in Redis).
    pub now_ms: u64,
    /// Inside a script or EXEC: a blocking command must answer at once
    /// (Redis's `CLIENT_DENY_BLOCKING`), e.g. BLPOP with a nil, WAIT with
    /// the current count.
    pub deny_blocking: bool,
}

impl Exec<'_> {
    /// Unix milliseconds now, as Redis's `mstime()` (see `clock.rs`).
    pub fn unix_now_ms(&self) -> i64 {
        self.server.clock.unix_base_ms() + self.now_ms as i64
    }

    /// Unix milliseconds of a deadline on the timeline.
    pub fn unix_ms_of(&self, deadline_ms: u64) -> i64 {
        self.server.clock.unix_base_ms() + deadline_ms as i64
    }

    /// The timeline deadline of a Unix time; `None` when it lies before
    /// timeline 0 (so certainly in the past).
    pub fn deadline_of_unix(&self, unix_ms: i64) -> Option<u64> {
        u64::try_from(unix_ms.checked_sub(self.server.clock.unix_base_ms())?).ok()
    }

    /// The keyspace, borrowed for the duration of one handler step.
    pub fn keyspace(&self) -> std::cell::RefMut<'_, Keyspace> {
        self.server.keyspace.borrow_mut()
    }
}
