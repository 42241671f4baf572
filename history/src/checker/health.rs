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
/// stopped — or a moment that moves, empties or ages Redis (a failover, a
/// restart, a server clock jump), counted as unhealthy for one lease
/// after it; on any master.
pub(super) fn unhealthy<'h>(
    history: &'h History,
    worker: &str,
    paths: Paths,
    from_ms: u64,
    to_ms: u64,
) -> Option<&'h Fault> {
    let store = paths == Paths::RedisAndStore;
    let matters = |fault: &Fault| matters(fault, store);
    for (index, record) in history.faults.iter().enumerate() {
        let fault = &record.fault;
        let concerns = record.worker.is_none()
            || record.worker.as_deref() == Some(crate::names::process_of(worker));
        if !concerns {
            continue;
        }
        if moves_redis(fault) {
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

/// Whether `fault` stands in a worker's way while its window is open: a
/// pause, a partition, dropped replies or latency on one of its paths,
/// Redis stopped — on any master (a lock over several masters needs
/// them; for a lock on one, a fault on another is counted too, which
/// only excuses more).
fn matters(fault: &Fault, store: bool) -> bool {
    match fault {
        Fault::PauseWorker(_)
        | Fault::PartitionRedis(_)
        | Fault::DropRedisReplies(_)
        | Fault::RedisLatency { .. }
        | Fault::StopRedis => true,
        Fault::PartitionStore(_) | Fault::DropStoreReplies(_) => store,
        Fault::OnMaster { fault, .. } => matters(fault, store),
        _ => false,
    }
}

/// Whether `fault` is a moment that moves, empties or ages Redis's keys
/// (a failover, a restart, a server clock jump), on any master: unhealthy
/// for one lease after it.
fn moves_redis(fault: &Fault) -> bool {
    match fault {
        Fault::FailOver | Fault::RestartRedis | Fault::JumpRedisClock { .. } => true,
        Fault::OnMaster { fault, .. } => moves_redis(fault),
        _ => false,
    }
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

    #[test]
    fn faults_on_one_master_and_clock_jumps_count_too() {
        let on = |master, fault| Fault::OnMaster {
            master,
            fault: Box::new(fault),
        };
        let history = builder()
            .fault(100, on(2, Fault::PartitionRedis(0)))
            .fault(200, on(2, Fault::HealRedis(0)))
            .fault(1_000, on(1, Fault::JumpRedisClock { jump_ms: 5_000 }))
            .build();
        assert!(unhealthy(&history, "w0", Paths::Redis, 150, 160).is_some());
        assert!(unhealthy(&history, "w0", Paths::Redis, 201, 900).is_none());
        assert!(unhealthy(&history, "w1", Paths::Redis, 150, 160).is_none());
        assert!(unhealthy(&history, "w1", Paths::Redis, 1_500, 1_600).is_some());
        assert!(unhealthy(&history, "w1", Paths::Redis, 2_100, 2_200).is_none());
    }
}
