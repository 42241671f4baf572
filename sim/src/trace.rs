//! The run's trace: every event, stamped with simulated time and host.
//!
//! The trace is how determinism is proven (the same seed must give the same
//! bytes) and how a failure is explained (`replay` prints it). It is shared by
//! every host of the world through an `Arc<Mutex<…>>`; the simulation runs
//! all hosts on one thread, so the lock is never contended and its order is
//! the simulation's order.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

/// Most events one trace keeps; a run that logs more is truncated (and says
/// so) rather than growing without bound.
pub const TRACE_EVENTS_MAX: usize = 1_000_000;

/// One traced event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    /// Simulated milliseconds since the start of the run.
    pub at_ms: u64,
    /// Host (or `world` for faults the world injects).
    pub host: String,
    /// What happened, one line.
    pub what: String,
}

/// A shared, append-only trace.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    inner: Arc<Mutex<TraceInner>>,
}

#[derive(Debug, Default)]
struct TraceInner {
    events: Vec<TraceEvent>,
    dropped: u64,
}

impl Trace {
    /// An empty trace.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends an event at the current simulated time.
    pub fn record(&self, host: &str, what: impl Into<String>) {
        self.record_at(now_ms(), host, what);
    }

    /// Appends an event at `at_ms`.
    pub fn record_at(&self, at_ms: u64, host: &str, what: impl Into<String>) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if inner.events.len() >= TRACE_EVENTS_MAX {
            inner.dropped += 1;
            return;
        }
        inner.events.push(TraceEvent {
            at_ms,
            host: host.to_owned(),
            what: what.into(),
        });
    }

    /// A copy of every event, in recording order.
    pub fn events(&self) -> Vec<TraceEvent> {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .events
            .clone()
    }

    /// The trace as text, one event per line: `   1234ms w0  acquired fence 3`.
    pub fn to_text(&self) -> String {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = String::new();
        for e in &inner.events {
            let _ = writeln!(out, "{:>8}ms {:<10} {}", e.at_ms, e.host, e.what);
        }
        if inner.dropped > 0 {
            let _ = writeln!(
                out,
                "... {} events dropped past the trace bound",
                inner.dropped
            );
        }
        out
    }
}

/// Simulated milliseconds since the run started (0 outside a simulation).
pub fn now_ms() -> u64 {
    turmoil::sim_elapsed()
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
