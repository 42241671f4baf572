//! `contention`: under load, what acquiring costs stays within the bounds
//! the scenario wrote down.
//!
//! A lock that is safe can still fall over under load: workers that retry
//! on the same schedule collide again at every retry (a retry storm — the
//! classic cause is a backoff without jitter, or a fixed retry delay), and
//! every acquisition costs many round trips and a long wait. The design
//! article asks for full jitter for exactly this. A scenario built to
//! create contention (`hotspot-load`) writes its bounds as numbers in the
//! catalog ([`ContentionBounds`]); this property holds a run to them.
//!
//! **The rule** (from the ops). Attempts are all `Acquire` ops, however
//! they ended; acquisitions are the ones answered "acquired". A wait runs
//! from a worker's first attempt after its previous acquisition or report
//! to the attempt that acquired. Violated when attempts per acquisition
//! exceed `attempts_per_acquisition_max`, or the 99th-percentile wait
//! (nearest rank) exceeds `wait_ms_p99_max`. Not exercised when the
//! scenario sets no bounds or nothing was acquired.

use std::collections::BTreeMap;

use crate::history::{History, Op, OpKind};
use crate::property::Property;
use crate::verdict::{HistorySlice, Verdict};

const PROPERTY: Property = Property::Contention;

/// Judges `contention`.
pub(super) fn check(history: &History) -> Verdict {
    let Some(bounds) = history.contention else {
        return Verdict::not_exercised(PROPERTY, "the scenario sets no contention bounds");
    };
    let mut by_worker: BTreeMap<&str, Vec<&Op>> = BTreeMap::new();
    for op in &history.ops {
        if matches!(op.kind, OpKind::Acquire | OpKind::Report { .. }) {
            by_worker.entry(op.worker.as_str()).or_default().push(op);
        }
    }
    let mut attempts = 0_u64;
    // (wait, the acquiring op)
    let mut waits: Vec<(u64, &Op)> = Vec::new();
    for ops in by_worker.values_mut() {
        ops.sort_by_key(|op| (op.invoke_ms, op.id));
        let mut waiting_since: Option<u64> = None;
        for op in ops.iter() {
            if op.kind != OpKind::Acquire {
                waiting_since = None;
                continue;
            }
            attempts += 1;
            let since_ms = *waiting_since.get_or_insert(op.invoke_ms);
            if op.acquired_fence().is_some() {
                let acquired_ms = op.end_or(history.end_ms);
                waits.push((acquired_ms.saturating_sub(since_ms), op));
                waiting_since = None;
            }
        }
    }
    let acquisitions = waits.len() as u64;
    if acquisitions == 0 {
        return Verdict::not_exercised(PROPERTY, "nothing was acquired");
    }
    waits.sort_by_key(|(wait_ms, op)| (*wait_ms, op.id));
    // Nearest rank: the smallest wait at or above 99% of them.
    let rank = (acquisitions * 99).div_ceil(100).max(1) as usize;
    let (p99_ms, _) = waits[rank - 1];
    let per_acquisition = attempts as f64 / acquisitions as f64;
    let measured = format!(
        "{acquisitions} acquisitions took {per_acquisition:.1} attempts each and a p99 wait of \
         {p99_ms} ms (bounds: {} attempts, {} ms)",
        bounds.attempts_per_acquisition_max, bounds.wait_ms_p99_max
    );
    let too_many = attempts > bounds.attempts_per_acquisition_max * acquisitions;
    let too_long = p99_ms > bounds.wait_ms_p99_max;
    if !too_many && !too_long {
        return Verdict::held(PROPERTY, measured);
    }
    let (longest_ms, longest) = waits[waits.len() - 1];
    Verdict::violated(
        PROPERTY,
        format!(
            "under contention {measured}; the longest wait was {longest_ms} ms ({} acquired at \
             {} ms): waiters retry too often or in lockstep — a retry storm on Redis; back off \
             exponentially with full jitter",
            longest.worker,
            longest.end_or(history.end_ms),
        ),
        HistorySlice::default().with_op(longest),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{ContentionBounds, HistoryBuilder, JobReport};
    use crate::verdict::Status;

    fn builder() -> HistoryBuilder {
        super::super::testing::builder().contention(ContentionBounds {
            attempts_per_acquisition_max: 3,
            wait_ms_p99_max: 500,
        })
    }

    #[test]
    fn cheap_acquisitions_hold() {
        let history = builder()
            .contended("w1", "b", (0, 10))
            .acquired("w1", "b", (50, 60), 2)
            .acquired("w0", "a", (0, 10), 1)
            .build();
        let verdict = check(&history);
        assert_eq!(verdict.status, Status::Held, "{}", verdict.explanation);
        assert!(
            verdict
                .explanation
                .starts_with("2 acquisitions took 1.5 attempts each"),
            "{}",
            verdict.explanation
        );
    }

    #[test]
    fn a_retry_storm_is_caught() {
        let mut b = builder().acquired("w0", "a", (0, 10), 1);
        for n in 0..6_u64 {
            b = b.contended("w1", "b", (100 * n, 100 * n + 10));
        }
        let history = b
            .acquired("w1", "b", (700, 710), 2)
            .report("w1", Some("j"), JobReport::Success, 800)
            .build();
        let verdict = check(&history);
        assert_eq!(verdict.status, Status::Violated, "{}", verdict.explanation);
        assert!(
            verdict.explanation.contains("4.0 attempts each"),
            "{}",
            verdict.explanation
        );
        assert!(
            verdict.explanation.contains("p99 wait of 710 ms"),
            "{}",
            verdict.explanation
        );
    }

    #[test]
    fn a_scenario_without_bounds_exercises_nothing() {
        let mut history = builder().acquired("w0", "a", (0, 10), 1).build();
        history.contention = None;
        assert_eq!(check(&history).status, Status::NotExercised);
    }
}
