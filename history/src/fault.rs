//! The faults a scenario injects, typed, as histories record them.
//!
//! A fault is data: the runner applies it to a world, the recorder writes it
//! into the history ([`crate::FaultRecord`]), and reports draw it. Everything
//! that needs to know what a fault *is* — which worker it hits, whether it
//! crashes that worker, which later fault ends its window — asks this type,
//! never the fault's words.

use serde::{Deserialize, Serialize};

use crate::names::worker_name;

/// The faults a scenario can inject (each is recorded in the history with its words).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fault {
    /// Stop-the-world pause: the worker's job and its renewals freeze.
    PauseWorker(usize),
    /// Ends a pause.
    ResumeWorker(usize),
    /// The worker's process dies where it stands; it never runs again.
    CrashWorker(usize),
    /// Nothing gets through between the worker and Redis.
    PartitionRedis(usize),
    /// Ends a Redis partition.
    HealRedis(usize),
    /// Nothing gets through between the worker and the store.
    PartitionStore(usize),
    /// Ends a store partition.
    HealStore(usize),
    /// Requests reach Redis and run; the replies are lost.
    DropRedisReplies(usize),
    /// Ends dropping Redis replies.
    RestoreRedisReplies(usize),
    /// Requests reach the store and run; the replies are lost.
    DropStoreReplies(usize),
    /// Ends dropping store replies.
    RestoreStoreReplies(usize),
    /// Extra one-way latency on the worker's Redis path (0 removes it).
    RedisLatency {
        /// The worker.
        worker: usize,
        /// Added latency each way.
        latency_ms: u64,
    },
    /// The Redis primary crashes (`kill -9`): every key it held is gone,
    /// except what its last snapshot saved.
    StopRedis,
    /// The Redis primary writes a snapshot of its keys to disk now
    /// (`BGSAVE`, waited for); a later restart loads it.
    SnapshotRedis,
    /// The Redis primary starts again: from its last snapshot (what it
    /// held at [`Fault::SnapshotRedis`], writes since then lost), empty when
    /// it never took one.
    RestartRedis,
    /// The Redis primary's machine clock jumps forward: every lease it
    /// holds ends `jump_ms` early (leases set later last their length).
    JumpRedisClock {
        /// How far forward.
        jump_ms: u64,
    },
    /// The worker's own clock steps by `jump_ms` (forward, or back when
    /// negative): what its lock library reads for lease arithmetic is off
    /// by that much from then on. The harness's records stay true.
    JumpWorkerClock {
        /// The worker.
        worker: usize,
        /// The step, in milliseconds.
        jump_ms: i64,
    },
    /// The worker's own clock runs fast (positive) or slow by `drift_ppm`
    /// millionths from now on; 0 stops the drift (what it gained stays).
    DriftWorkerClock {
        /// The worker.
        worker: usize,
        /// The rate error, in millionths.
        drift_ppm: i64,
    },
    /// One of the Redis faults above (a partition, lost replies, latency,
    /// a crash, a restart, a snapshot, a clock jump) on master `master` of
    /// several independent ones, instead of on the primary (master 0).
    OnMaster {
        /// Which master.
        master: usize,
        /// The fault, as it would hit the primary.
        fault: Box<Fault>,
    },
    /// Replication from primary to replica stops getting through.
    CutReplication,
    /// Replication gets through again.
    RestoreReplication,
    /// The primary stops and the replica is promoted; workers follow.
    FailOver,
}

impl Fault {
    /// The fault in words, as histories and reports show it.
    pub fn describe(&self) -> String {
        match self {
            Fault::PauseWorker(w) => format!("pause {}", worker_name(*w)),
            Fault::ResumeWorker(w) => format!("resume {}", worker_name(*w)),
            Fault::CrashWorker(w) => format!("crash {}", worker_name(*w)),
            Fault::PartitionRedis(w) => format!("partition {} from redis", worker_name(*w)),
            Fault::HealRedis(w) => format!("heal {} to redis", worker_name(*w)),
            Fault::PartitionStore(w) => format!("partition {} from store", worker_name(*w)),
            Fault::HealStore(w) => format!("heal {} to store", worker_name(*w)),
            Fault::DropRedisReplies(w) => format!("drop redis replies to {}", worker_name(*w)),
            Fault::RestoreRedisReplies(w) => {
                format!("restore redis replies to {}", worker_name(*w))
            }
            Fault::DropStoreReplies(w) => format!("drop store replies to {}", worker_name(*w)),
            Fault::RestoreStoreReplies(w) => {
                format!("restore store replies to {}", worker_name(*w))
            }
            Fault::RedisLatency { worker, latency_ms } => {
                format!("redis latency {latency_ms} ms for {}", worker_name(*worker))
            }
            Fault::StopRedis => "stop redis".to_owned(),
            Fault::SnapshotRedis => "snapshot redis to disk".to_owned(),
            Fault::RestartRedis => "restart redis".to_owned(),
            Fault::JumpRedisClock { jump_ms } => {
                format!("redis clock jumps {jump_ms} ms forward")
            }
            Fault::JumpWorkerClock { worker, jump_ms } => {
                format!("{}'s clock jumps {jump_ms} ms", worker_name(*worker))
            }
            Fault::DriftWorkerClock { worker, drift_ppm } => {
                format!("{}'s clock drifts {drift_ppm} ppm", worker_name(*worker))
            }
            Fault::OnMaster { master, fault } => {
                format!("{} (master {master})", fault.describe())
            }
            Fault::CutReplication => "cut replication".to_owned(),
            Fault::RestoreReplication => "restore replication".to_owned(),
            Fault::FailOver => "fail over to the replica".to_owned(),
        }
    }

    /// The worker the fault targets, if it targets one.
    pub fn worker(&self) -> Option<usize> {
        match self {
            Fault::PauseWorker(w)
            | Fault::ResumeWorker(w)
            | Fault::CrashWorker(w)
            | Fault::PartitionRedis(w)
            | Fault::HealRedis(w)
            | Fault::PartitionStore(w)
            | Fault::HealStore(w)
            | Fault::DropRedisReplies(w)
            | Fault::RestoreRedisReplies(w)
            | Fault::DropStoreReplies(w)
            | Fault::RestoreStoreReplies(w) => Some(*w),
            Fault::RedisLatency { worker, .. }
            | Fault::JumpWorkerClock { worker, .. }
            | Fault::DriftWorkerClock { worker, .. } => Some(*worker),
            Fault::OnMaster { fault, .. } => fault.worker(),
            _ => None,
        }
    }
}

impl Fault {
    /// Whether `later` ends the window this fault opens (a pause's resume, a
    /// partition's heal, a stop's restart, a latency change on the same
    /// path). `false` for faults that are moments (a crash, a failover).
    pub fn closed_by(&self, later: &Fault) -> bool {
        match (self, later) {
            (Fault::PauseWorker(a), Fault::ResumeWorker(b))
            | (Fault::PartitionRedis(a), Fault::HealRedis(b))
            | (Fault::PartitionStore(a), Fault::HealStore(b))
            | (Fault::DropRedisReplies(a), Fault::RestoreRedisReplies(b))
            | (Fault::DropStoreReplies(a), Fault::RestoreStoreReplies(b)) => a == b,
            (Fault::RedisLatency { worker: a, .. }, Fault::RedisLatency { worker: b, .. }) => {
                a == b
            }
            (
                Fault::OnMaster {
                    master: a,
                    fault: opened,
                },
                Fault::OnMaster {
                    master: b,
                    fault: closing,
                },
            ) => a == b && opened.closed_by(closing),
            (Fault::StopRedis, Fault::RestartRedis)
            | (Fault::CutReplication, Fault::RestoreReplication) => true,
            _ => false,
        }
    }

    /// Whether this fault opens a window that a later fault closes (it may
    /// stay open to the end of the run). A latency of 0 ms removes latency:
    /// it opens nothing.
    pub fn opens_window(&self) -> bool {
        match self {
            Fault::PauseWorker(_)
            | Fault::PartitionRedis(_)
            | Fault::PartitionStore(_)
            | Fault::DropRedisReplies(_)
            | Fault::DropStoreReplies(_)
            | Fault::StopRedis
            | Fault::CutReplication => true,
            Fault::RedisLatency { latency_ms, .. } => *latency_ms > 0,
            Fault::OnMaster { fault, .. } => fault.opens_window(),
            _ => false,
        }
    }

    /// Whether this fault only ends a window another one opened.
    pub fn ends_window(&self) -> bool {
        if let Fault::OnMaster { fault, .. } = self {
            return fault.ends_window();
        }
        matches!(
            self,
            Fault::ResumeWorker(_)
                | Fault::HealRedis(_)
                | Fault::HealStore(_)
                | Fault::RestoreRedisReplies(_)
                | Fault::RestoreStoreReplies(_)
                | Fault::RestartRedis
                | Fault::RestoreReplication
                | Fault::RedisLatency { latency_ms: 0, .. }
        )
    }

    /// Whether it kills the worker for good.
    pub fn is_crash(&self) -> bool {
        matches!(self, Fault::CrashWorker(_))
    }
}
