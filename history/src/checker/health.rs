//! Health: whether a worker's paths were free of faults over a stretch of
//! time, from the recorded fault windows.
//!
//! Liveness-style properties ask a lock to behave only when nothing stood
//! in its way: a lease that lapsed while its holder was paused, or an
//! acquire that gave up while its replies were being dropped, is the
//! fault's doing (and failing closed then is correct). Both
//! `lease-continuity` and `bounded-liveness` ask the same question, so it
//! is answered once, here.

use crate::fault::Fault;
use crate::history::History;

/// Which of a worker's paths matter to the question.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Paths {
    /// The Redis path only (renewals).
    Redis,
    /// Redis and the store (an acquire whose fence comes from the store,
    /// a job that writes).
    RedisAndStore,
}

/// The first recorded fault that made `worker` unhealthy for `paths` at
/// some moment of `[from_ms, to_ms]`, if any: a pause of the worker, a
/// partition, dropped replies or added latency on one of its paths, Redis
/// stopped — or a moment that moves or empties Redis (a failover or a
/// restart), counted as unhealthy for one lease after it.
pub(super) fn unhealthy<'h>(
    history: &'h History,
    worker: &str,
    paths: Paths,
    from_ms: u64,
    to_ms: u64,
) -> Option<&'h Fault> {
    let store = paths == Paths::RedisAndStore;
    let matters = |fault: &Fault| match fault {
        Fault::PauseWorker(_)
        | Fault::PartitionRedis(_)
        | Fault::DropRedisReplies(_)
        | Fault::RedisLatency { .. }
        | Fault::StopRedis => true,
        Fault::PartitionStore(_) | Fault::DropStoreReplies(_) => store,
        _ => false,
    };
    for (index, record) in history.faults.iter().enumerate() {
        let fault = &record.fault;
        let concerns = record.worker.is_none()
            || record.worker.as_deref() == Some(crate::names::process_of(worker));
        if !concerns {
            continue;
        }
        if matches!(fault, Fault::FailOver | Fault::RestartRedis) {
            let until_ms = record.at_ms.saturating_add(history.limits.lease_ms);
            if record.at_ms <= to_ms && from_ms <= until_ms {
                return Some(fault);
            }
            continue;
        }
        if !(fault.opens_window() && matters(fault)) {
            continue;
        }
        let closed_ms = history.faults[index + 1..]
            .iter()
            .find(|later| fault.closed_by(&later.fault))
            .map_or(u64::MAX, |later| later.at_ms);
        if record.at_ms <= to_ms && from_ms <= closed_ms {
            return Some(fault);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::testing::builder;

    #[test]
    fn a_window_counts_only_for_its_worker_and_its_paths() {
        let history = builder()
            .fault(100, Fault::PartitionStore(0))
            .fault(200, Fault::HealStore(0))
            .fault(300, Fault::PauseWorker(1))
            .build();
        assert!(unhealthy(&history, "w0", Paths::RedisAndStore, 150, 160).is_some());
        assert!(unhealthy(&history, "w0", Paths::Redis, 150, 160).is_none());
        assert!(unhealthy(&history, "w0", Paths::RedisAndStore, 201, 900).is_none());
        // A pause never closed lasts to the end.
        assert!(unhealthy(&history, "w1", Paths::Redis, 5_000, 6_000).is_some());
        assert!(unhealthy(&history, "w0", Paths::Redis, 5_000, 6_000).is_none());
    }

    #[test]
    fn a_failover_is_unhealthy_for_a_lease_after_it() {
        let history = builder().fault(1_000, Fault::FailOver).build();
        assert!(unhealthy(&history, "w0", Paths::Redis, 1_500, 1_600).is_some());
        assert!(unhealthy(&history, "w0", Paths::Redis, 2_100, 2_200).is_none());
    }
}
