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

/// How far a machine's clock runs ahead of the world's, and since when: a
/// server clock that jumped forward. The machine's, not one process's: a
/// restarted server keeps it. Its deadlines are on its own clock (a lease
/// set before a jump of `offset_ms` expires `offset_ms` early), while its
/// ownership log stays on the world's timeline, where the history lives.
#[derive(Clone, Debug, Default)]
pub struct Skew(Rc<Cell<SkewState>>);

#[derive(Clone, Copy, Debug, Default)]
struct SkewState {
    /// Milliseconds the clock is ahead of the world's.
    offset_ms: u64,
    /// World time of the last jump.
    since_ms: u64,
}

impl Skew {
    /// The clock jumps `jump_ms` forward at world time `at_ms`.
    pub fn jump(&self, at_ms: u64, jump_ms: u64) {
        let state = self.0.get();
        self.0.set(SkewState {
            offset_ms: state.offset_ms.saturating_add(jump_ms),
            since_ms: at_ms,
        });
    }

    /// Milliseconds ahead of the world's clock.
    pub fn offset_ms(&self) -> u64 {
        self.0.get().offset_ms
    }

    /// A time on the machine's clock, on the world's timeline: never before
    /// the last jump (a lease the jump cut short ended at the jump).
    pub(crate) fn to_world_ms(&self, server_ms: u64) -> u64 {
        let state = self.0.get();
        if state.offset_ms == 0 {
            return server_ms;
        }
        server_ms
            .saturating_sub(state.offset_ms)
            .max(state.since_ms.min(server_ms))
    }
}

/// Where time comes from.
#[derive(Clone)]
pub(crate) enum Clock {
    /// turmoil's simulated time since the simulation started, plus the
    /// machine's skew.
    Turmoil {
        /// The last time observed, for when no host context is available
        /// (the world peeking between steps, or the crash hook).
        last_seen_ms: Rc<Cell<u64>>,
        /// How far this machine's clock is ahead of turmoil's.
        skew: Skew,
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
    pub(crate) fn turmoil(skew: Skew) -> Self {
        let clock = Clock::Turmoil {
            last_seen_ms: Rc::new(Cell::new(0)),
            skew,
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
            Clock::Turmoil { last_seen_ms, skew } => match turmoil::sim_elapsed() {
                Some(elapsed) => {
                    let now_ms = u64::try_from(elapsed.as_millis())
                        .unwrap_or(u64::MAX)
                        .saturating_add(skew.offset_ms());
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
            Clock::Turmoil { last_seen_ms, .. } => last_seen_ms.get(),
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
        if let Clock::Turmoil { last_seen_ms, skew } = self {
            let now_ms = now_ms.saturating_add(skew.offset_ms());
            last_seen_ms.set(last_seen_ms.get().max(now_ms));
        }
    }

    /// The machine's skew (none outside turmoil).
    pub(crate) fn skew(&self) -> Option<&Skew> {
        match self {
            Clock::Turmoil { skew, .. } => Some(skew),
            _ => None,
        }
    }
}
