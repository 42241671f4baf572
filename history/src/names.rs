//! One definition of every built-in name: scenarios, mutants, the reference
//! protocol, workers.
//!
//! A name is an identity: JSON, reports, the readiness checklist, the
//! mutation table, the CLI and replay lines all refer to a scenario or
//! mutant by it, so each is spelled once, here, and everything else uses the
//! constant (tests may spell names out, to pin them). Property names live
//! with [`crate::Property`]. A protocol's name in JSON stays an open string:
//! teams plug in locks of their own, whose names are theirs.

/// The built-in scenarios' names, in catalog order ([`scenario::ALL`]).
pub mod scenario {
    /// Two workers process jobs one after another on one resource.
    pub const MUTUAL_EXCLUSION: &str = "mutual-exclusion";
    /// A worker pauses past its lease and writes after its successor.
    pub const STALE_WORKER_PAUSE: &str = "stale-worker-pause";
    /// A worker releases after its lease lapsed and a successor took it.
    pub const LATE_UNLOCK: &str = "late-unlock";
    /// The acquire reply is lost on the way back.
    pub const LOST_ACQUIRE_REPLY: &str = "lost-acquire-reply";
    /// A job outlives the bound on renewals.
    pub const RENEWAL_LIMITS: &str = "renewal-limits";
    /// A worker crashes right after acquiring.
    pub const CRASH_AFTER_ACQUIRE: &str = "crash-after-acquire";
    /// A worker crashes while its write is on the wire.
    pub const CRASH_MID_MUTATION: &str = "crash-mid-mutation";
    /// A worker crashes after its write, before acknowledging the job.
    pub const CRASH_BEFORE_ACK: &str = "crash-before-ack";
    /// Redis is unreachable or answers errors for a while.
    pub const REDIS_UNAVAILABLE: &str = "redis-unavailable";
    /// A stale fence reaches the store, which must refuse it.
    pub const FENCE_REJECTED: &str = "fence-rejected";
    /// A failover loses counter increments that were not replicated.
    pub const FAILOVER_COUNTER_REGRESSION: &str = "failover-counter-regression";
    /// Many workers contend for one hot resource.
    pub const HOTSPOT_LOAD: &str = "hotspot-load";
    /// Each worker runs several jobs on one resource at once.
    pub const CONCURRENT_JOBS: &str = "concurrent-jobs";
    /// Redlock over N masters: one master's clock jumps past the lease and
    /// a second client gathers a majority while the first holds one.
    pub const REDLOCK_CLOCK_JUMP: &str = "redlock-clock-jump";
    /// Redlock over N masters: a master crashes, restarts from a snapshot
    /// taken before the lock was granted, and grants it again.
    pub const REDLOCK_MASTER_RESTART: &str = "redlock-master-restart";
    /// Redlock over N masters: the holder pauses past its validity as its
    /// write begins, and writes after a successor.
    pub const REDLOCK_PAUSE: &str = "redlock-pause";
    /// Redlock over N masters: a worker reaches only a minority of them;
    /// the lock must stay safe.
    pub const REDLOCK_MINORITY_PARTITION: &str = "redlock-minority-partition";
    /// Random fault schedules (exploration), not part of the catalog.
    pub const RANDOM_FAULTS: &str = "random-faults";

    /// The catalog's scenarios, in order (without [`RANDOM_FAULTS`], which
    /// only exploration runs).
    pub const ALL: [&str; 17] = [
        MUTUAL_EXCLUSION,
        STALE_WORKER_PAUSE,
        LATE_UNLOCK,
        LOST_ACQUIRE_REPLY,
        RENEWAL_LIMITS,
        CRASH_AFTER_ACQUIRE,
        CRASH_MID_MUTATION,
        CRASH_BEFORE_ACK,
        REDIS_UNAVAILABLE,
        FENCE_REJECTED,
        FAILOVER_COUNTER_REGRESSION,
        HOTSPOT_LOAD,
        CONCURRENT_JOBS,
        REDLOCK_CLOCK_JUMP,
        REDLOCK_MASTER_RESTART,
        REDLOCK_PAUSE,
        REDLOCK_MINORITY_PARTITION,
    ];
}

/// The shipped mutants' names: each is the reference with one documented bug.
pub mod mutant {
    /// Releases with a plain `DEL`, without checking the owner.
    pub const DEL_UNLOCK: &str = "del-unlock";
    /// Releases with `GET` then `DEL`: two commands, not atomic.
    pub const GET_THEN_DEL: &str = "get-then-del";
    /// Renews with a plain `PEXPIRE`, without checking the owner.
    pub const RENEW_WITHOUT_OWNER_CHECK: &str = "renew-without-owner-check";
    /// The store accepts any fence.
    pub const NO_FENCE_CHECK: &str = "no-fence-check";
    /// The fence is checked in the application, then written separately.
    pub const APP_SIDE_FENCE_CHECK: &str = "app-side-fence-check";
    /// Every acquire uses the same owner token.
    pub const STATIC_OWNER: &str = "static-owner";
    /// Renews forever.
    pub const UNBOUNDED_RENEWAL: &str = "unbounded-renewal";
    /// `SETNX` then `EXPIRE`: two commands, a crash between leaves no TTL.
    pub const SETNX_THEN_EXPIRE: &str = "setnx-then-expire";
    /// The lock key has no TTL at all.
    pub const NO_TTL: &str = "no-ttl";
    /// Takes the lock, then asks for the fence in a second step.
    pub const LOCK_BEFORE_FENCE: &str = "lock-before-fence";
    /// Fences from the Redis counter, which a failover can regress.
    pub const REDIS_COUNTER_FENCES: &str = "redis-counter-fences";
    /// The plain lock most teams ship: `SET NX PX`, compare-and-delete, and
    /// no fence, so a holder paused past its lease still writes.
    pub const UNFENCED_SET_NX: &str = "unfenced-set-nx";
    /// `SET PX` without `NX`: every acquire takes the lock from its holder.
    pub const SET_WITHOUT_NX: &str = "set-without-nx";
    /// A whole worker whose renewal task renews once per lease, too late.
    pub const LATE_RENEWAL: &str = "late-renewal";
    /// A whole worker whose retries back off without jitter.
    pub const FIXED_BACKOFF: &str = "fixed-backoff";
    /// A whole worker that draws one owner token per process and reuses it
    /// for every job, so its jobs running at once all "hold" the lock.
    pub const PROCESS_WIDE_TOKEN: &str = "process-wide-token";
    /// Redlock as published (a majority of independent masters, validity
    /// = lease − elapsed − drift), without a fence: unsafe by design.
    pub const REDLOCK: &str = "redlock";
    /// Fenced Redlock whose quorum is one short of a majority.
    pub const REDLOCK_HALF_QUORUM: &str = "redlock-half-quorum";

    /// Every shipped mutant, in catalog order.
    pub const ALL: [&str; 18] = [
        DEL_UNLOCK,
        GET_THEN_DEL,
        RENEW_WITHOUT_OWNER_CHECK,
        NO_FENCE_CHECK,
        APP_SIDE_FENCE_CHECK,
        STATIC_OWNER,
        UNBOUNDED_RENEWAL,
        SETNX_THEN_EXPIRE,
        NO_TTL,
        LOCK_BEFORE_FENCE,
        REDIS_COUNTER_FENCES,
        UNFENCED_SET_NX,
        SET_WITHOUT_NX,
        LATE_RENEWAL,
        FIXED_BACKOFF,
        PROCESS_WIDE_TOKEN,
        REDLOCK,
        REDLOCK_HALF_QUORUM,
    ];
}

/// Protocol names that are not mutants.
pub mod protocol {
    /// The reference protocol: `redfence-core` as shipped, its own
    /// `Worker` running each job at the whole-worker level. Every scenario
    /// must pass it.
    pub const REFERENCE: &str = "reference";
    /// The same library one step at a time under the harness's flow (the
    /// base of the step-level mutants). Every scenario must pass it too.
    pub const REFERENCE_STEPS: &str = "reference-steps";
    /// Redlock over independent masters with a fence from the durable
    /// store, checked by the store: the remedy for Redlock's debated
    /// faults. It must pass every property but no-overlapping-holders and
    /// lease-continuity, which no lock over forgetful masters can keep.
    pub const REDLOCK_FENCED: &str = "redlock-fenced";
}

/// The name of worker number `index` (`w0`, `w1`, …), the one spelling used
/// in histories, hosts, proxies and reports.
pub fn worker_name(index: usize) -> String {
    format!("w{index}")
}

/// The name of job slot `slot` of a worker that runs several jobs at once
/// (`w0.1`): each slot is a holder of its own in the history — two jobs of
/// one process that both believe they hold the lock are two holders, as
/// much as two processes are. A worker that runs one job at a time records
/// under its own name.
pub fn task_name(worker: &str, slot: usize) -> String {
    format!("{worker}.{slot}")
}

/// The worker (process) a history name belongs to: `w0` for `w0` and for
/// its job slots `w0.1`. Faults (a pause, a crash, a partition) strike a
/// process, so every slot of it.
pub fn process_of(name: &str) -> &str {
    name.split_once('.').map_or(name, |(process, _)| process)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_belongs_to_its_process() {
        assert_eq!(task_name("w0", 1), "w0.1");
        assert_eq!(process_of("w0.1"), "w0");
        assert_eq!(process_of("w12"), "w12");
        assert_eq!(process_of(&task_name(&worker_name(3), 0)), "w3");
    }

    #[test]
    fn names_are_unique_kebab_case_and_distinct_from_properties() {
        let mut all: Vec<&str> = scenario::ALL.to_vec();
        all.push(scenario::RANDOM_FAULTS);
        all.extend(mutant::ALL);
        all.push(protocol::REFERENCE);
        all.push(protocol::REFERENCE_STEPS);
        all.extend(crate::Property::ALL.iter().map(|p| p.name()));
        let mut sorted = all.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), all.len(), "a name is used twice: {all:?}");
        for name in all {
            assert!(
                name.split('-')
                    .all(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase())),
                "{name} is not kebab-case"
            );
        }
    }

    #[test]
    fn workers_are_named_w_and_their_number() {
        assert_eq!(worker_name(0), "w0");
        assert_eq!(worker_name(12), "w12");
    }
}
