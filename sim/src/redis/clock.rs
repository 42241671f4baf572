//! The server's notion of "now", in milliseconds on one timeline.
//!
//! Why a type: deadlines, `PTTL` answers and ownership-log timestamps must
//! all come from the same clock, and in the simulation that clock is
//! turmoil's (`sim_elapsed`), never the wall clock. Outside turmoil (the
//! differential test) it is tokio's `Instant` since the server started. Unit
//! tests drive a manual clock.
//!
//! Redis checks expire-time overflow against Unix milliseconds, and
//! PEXPIREAT / SET EXAT|PXAT take absolute Unix times. Commands convert with
//! [`Clock::unix_base_ms`]: in the simulation (and unit tests) that is
//! [`WALL_CLOCK_BASE_MS`], a fixed, notional Unix time, so a seed replays
//! exactly; a server on a real listener (the differential test) reads the
//! wall clock once at start instead, because it is compared with a real
//! redis-server that answers absolute times against real Unix time.

use std::cell::Cell;
use std::rc::Rc;

/// Notional Unix time (ms) of timeline 0, used only so that overflow checks
/// on expire times behave like a real server's (which adds `mstime()`).
pub(crate) const WALL_CLOCK_BASE_MS: i64 = 1_700_000_000_000;

/// Where time comes from.
#[derive(Clone)]
pub(crate) enum Clock {
    /// turmoil's simulated time since the simulation started.
    Turmoil {
        /// The last time observed, for when no host context is available
        /// (the world peeking between steps, or the crash hook).
        last_seen_ms: Rc<Cell<u64>>,
    },
    /// tokio's clock since the server started (real time in practice).
    Tokio {
        /// When the server started.
        start: tokio::time::Instant,
        /// Unix milliseconds at `start` (never used under turmoil).
        unix_at_start_ms: i64,
    },
    /// Set by hand (unit tests).
    #[cfg_attr(not(test), allow(dead_code))]
    Manual(Rc<Cell<u64>>),
    /// Set by whoever feeds the server a recorded command stream
    /// (`replay.rs`): each command runs at the time the real server ran
    /// it, on a timeline whose 0 is `unix_base_ms` in Unix time.
    Replayed {
        /// The time of the command being re-executed.
        now_ms: Rc<Cell<u64>>,
        /// Unix milliseconds of timeline 0.
        unix_base_ms: i64,
    },
}

impl Clock {
    pub(crate) fn turmoil() -> Self {
        let clock = Clock::Turmoil {
            last_seen_ms: Rc::new(Cell::new(0)),
        };
        clock.now_ms();
        clock
    }

    pub(crate) fn tokio() -> Self {
        // The one wall-clock read of the simulated Redis, for a server on a
        // real listener only (see the module doc).
        let unix_at_start_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()
            .and_then(|d| i64::try_from(d.as_millis()).ok())
            .unwrap_or(WALL_CLOCK_BASE_MS);
        Clock::Tokio {
            start: tokio::time::Instant::now(),
            unix_at_start_ms,
        }
    }

    /// Unix milliseconds of timeline 0 (see the module doc).
    pub(crate) fn unix_base_ms(&self) -> i64 {
        match self {
            Clock::Tokio {
                unix_at_start_ms, ..
            } => *unix_at_start_ms,
            Clock::Turmoil { .. } | Clock::Manual(_) => WALL_CLOCK_BASE_MS,
            Clock::Replayed { unix_base_ms, .. } => *unix_base_ms,
        }
    }

    /// Milliseconds on this server's timeline. Under turmoil, outside a host
    /// context this is the last time seen inside one (never the OS clock).
    pub(crate) fn now_ms(&self) -> u64 {
        match self {
            Clock::Turmoil { last_seen_ms } => match turmoil::sim_elapsed() {
                Some(elapsed) => {
                    let now_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
                    // Time never runs backwards on one timeline.
                    let now_ms = now_ms.max(last_seen_ms.get());
                    last_seen_ms.set(now_ms);
                    now_ms
                }
                None => last_seen_ms.get(),
            },
            Clock::Tokio { start, .. } => {
                u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
            }
            Clock::Manual(now_ms) | Clock::Replayed { now_ms, .. } => now_ms.get(),
        }
    }

    /// The last time observed, without consulting any runtime: safe in
    /// `Drop` during a turmoil crash.
    pub(crate) fn last_seen_ms(&self) -> u64 {
        match self {
            Clock::Turmoil { last_seen_ms } => last_seen_ms.get(),
            Clock::Tokio { start, .. } => {
                u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
            }
            Clock::Manual(now_ms) | Clock::Replayed { now_ms, .. } => now_ms.get(),
        }
    }

    /// Records that simulated time has reached `now_ms`. The world calls it
    /// between steps (before a crash, before peeking), where no host context
    /// exists to read turmoil's clock; a per-tick heartbeat task did this
    /// before and cost a timer wake-up on every tick of every run.
    pub(crate) fn observe(&self, now_ms: u64) {
        if let Clock::Turmoil { last_seen_ms } = self {
            last_seen_ms.set(last_seen_ms.get().max(now_ms));
        }
    }
}
