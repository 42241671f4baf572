//! Bounded readiness polling.
//!
//! Servers become ready at their own pace; every wait here has a deadline
//! and a fixed poll interval, and reports the last error it saw, so a server
//! that never comes up fails the run with a reason instead of hanging it.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::error::{ChaosError, Result, ServerName};

/// How long a server may take to accept connections after its start
/// (initdb plus PostgreSQL's start is the slowest, ~2 s here; containers
/// on a loaded 2-core machine more).
pub const READY_TIMEOUT_MS: u64 = 60_000;
/// Interval between two readiness probes.
pub const POLL_INTERVAL_MS: u64 = 50;

/// Polls `probe` until it returns `Ok`, for at most `timeout_ms`.
///
/// A probe returning `Err(Fatal)` (e.g. the process died) stops at once.
pub async fn until_ready<T, F, Fut>(server: ServerName, timeout_ms: u64, mut probe: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Probe>>,
{
    let started = Instant::now();
    let deadline = started + Duration::from_millis(timeout_ms);
    let polls_max = timeout_ms / POLL_INTERVAL_MS + 1;
    let mut last_error = String::from("never probed");
    for _ in 0..polls_max {
        match probe().await {
            Ok(value) => return Ok(value),
            Err(Probe::Fatal(err)) => return Err(err),
            Err(Probe::NotYet(why)) => last_error = why,
        }
        if Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(POLL_INTERVAL_MS)).await;
    }
    Err(ChaosError::NotReady {
        server,
        waited: started.elapsed(),
        last_error,
    })
}

/// A failed probe: try again, or give up now.
#[derive(Debug)]
pub enum Probe {
    /// Not ready yet, for this reason.
    NotYet(String),
    /// Will never be ready.
    Fatal(ChaosError),
}
