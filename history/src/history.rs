//! The history model: what one run records, independent of the world that ran it.
//!
//! The simulation and the real-server world both produce a [`History`]; the
//! checker reads nothing else. A history holds the client-side operations
//! (invoke + completion, as the workers saw them) and, where the world can
//! provide it, ground truth from the servers: the Redis ownership log and the
//! fenced store's append-only log. Truth a world cannot provide is `None`, and
//! the properties that need it answer `Undecided` instead of guessing.
//!
//! Times are milliseconds since the start of the run on one clock (virtual in
//! the simulation). Everything derives `Serialize`/`Deserialize`, because
//! reports render run results from JSON.

use serde::{Deserialize, Serialize};

use crate::fault::Fault;

/// Most operations one history may hold. Far above any scenario; a history
/// beyond it is a runaway recorder, and refusing it keeps the checker bounded.
pub const OPS_MAX: usize = 1_000_000;

/// Most records one truth log (ownership or fence) may hold, for the same reason.
pub const TRUTH_RECORDS_MAX: usize = 10_000_000;

/// A worker's final word on a job. The kebab-case spelling is the JSON one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JobReport {
    /// The job was applied.
    Success,
    /// The job had completed before (redelivery); nothing was written.
    AlreadyDone,
    /// The worker was contended and requeued the job.
    RetryLater,
    /// The worker's write was rejected as stale: it lost ownership.
    OwnershipLost,
    /// The worker failed (closed).
    Failed,
}

impl JobReport {
    /// Every report, in declaration order.
    pub const ALL: [JobReport; 5] = [
        JobReport::Success,
        JobReport::AlreadyDone,
        JobReport::RetryLater,
        JobReport::OwnershipLost,
        JobReport::Failed,
    ];

    /// The kebab-case name (the JSON spelling).
    pub fn name(self) -> &'static str {
        match self {
            JobReport::Success => "success",
            JobReport::AlreadyDone => "already-done",
            JobReport::RetryLater => "retry-later",
            JobReport::OwnershipLost => "ownership-lost",
            JobReport::Failed => "failed",
        }
    }
}

impl std::fmt::Display for JobReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One run's record: operations, ground truth where available, faults.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct History {
    /// The protected resource. A history covers one resource: every op is
    /// about it, even where the store names it differently.
    pub resource: String,
    /// The lock's configured limits, which some properties measure against.
    pub limits: Limits,
    /// Client-side operations, in any order (ids are unique).
    pub ops: Vec<Op>,
    /// The Redis servers' ownership log, in each server's execution order;
    /// `None` when the world could not recover one.
    pub redis_truth: Option<Vec<OwnershipRecord>>,
    /// Why `redis_truth` is `None`, when the world can say (a real server's
    /// recording had a gap): verdicts that needed the log quote it. Absent
    /// from JSON when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redis_truth_gap: Option<String>,
    /// The fenced store's append-only log, in commit (`seq`) order; `None`
    /// when the world cannot read it.
    pub store_truth: Option<Vec<FenceRecord>>,
    /// Faults the world injected, in time order.
    pub faults: Vec<FaultRecord>,
    /// What the servers' own machinery did on its own initiative, in time
    /// order (a Sentinel marking the primary down, promoting a replica):
    /// told in the timeline and the report, judged by no property. Absent
    /// from JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_events: Vec<ServerEvent>,
    /// When recording stopped; no op is invoked or completes after it.
    pub end_ms: u64,
    /// What the scenario allows contention to cost, if it bounds it (the
    /// `contention` property); `None` for scenarios that do not.
    #[serde(default)]
    pub contention: Option<ContentionBounds>,
}

/// Something the servers did on their own (see [`History::server_events`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerEvent {
    /// When, on the world's clock.
    pub at_ms: u64,
    /// What, in words (`Sentinel promoted redis-replica at replication
    /// offset 4242`).
    pub what: String,
}

/// What contention may cost in a scenario built to create it, written as
/// numbers in the scenario catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContentionBounds {
    /// Most acquire attempts per successful acquisition, on average.
    pub attempts_per_acquisition_max: u64,
    /// Longest 99th-percentile wait from a job's first attempt to its
    /// acquisition.
    pub wait_ms_p99_max: u64,
}

/// The lock's limits, as configured for the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Lease (TTL) one acquire or renew grants.
    pub lease_ms: u64,
    /// Longest an owner may keep the lock by renewing.
    pub hold_ms_max: u64,
    /// Most successful renewals per acquisition.
    pub renewals_max: u32,
    /// Slack for clock granularity and network delay, added to every time bound.
    pub tolerance_ms: u64,
    /// How long one acquire may keep retrying before it gives up (0 in
    /// histories written before it was recorded: then only the lease counts).
    #[serde(default)]
    pub acquire_deadline_ms: u64,
}

/// One operation: invoke, completion and outcome, as the worker saw it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Op {
    /// Unique within the history; verdict slices refer to ops by it.
    pub id: u64,
    /// The worker (process / task) that ran the op.
    pub worker: String,
    /// The owner token the op used, if it had one.
    pub owner: Option<String>,
    /// What was asked.
    pub kind: OpKind,
    /// When the op was invoked.
    pub invoke_ms: u64,
    /// When the answer arrived; `None` if it never did (crash, end of run).
    pub complete_ms: Option<u64>,
    /// What the worker learned.
    pub outcome: Outcome,
}

/// What an operation asked for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OpKind {
    /// Acquire the lock (and a fence).
    Acquire,
    /// Extend the lease.
    Renew,
    /// Give the lock back.
    Release,
    /// A Redis command that carried the owner's token after it acquired,
    /// recorded at the whole-worker level as it went, unclassified: the
    /// harness does not guess whether a team's command renewed, released or
    /// only read; the Redis ownership log says what it did to the key.
    Command,
    /// A fenced write to the protected resource.
    Write {
        /// The fence the write carried.
        fence: i64,
        /// The job (idempotency key) the write completes, if any.
        job_id: Option<String>,
    },
    /// The worker's final word on a job.
    Report {
        /// What the worker reported.
        outcome: JobReport,
        /// The job reported on, if any.
        job_id: Option<String>,
    },
}

/// How an operation ended, from the worker's point of view.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// A definite answer.
    Ok(OkValue),
    /// A definite failure: the op did not take effect.
    Fail(String),
    /// Unknown whether it took effect (lost reply, timeout, crash).
    Indeterminate(String),
}

/// The definite answers an operation can get.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OkValue {
    /// The lock was acquired, with the fence the protocol issued (if any).
    Acquired {
        /// The fence issued with the lease; `None` if the protocol gave none.
        fence: Option<i64>,
    },
    /// Another owner holds the lock.
    Contended,
    /// The lease was extended.
    Renewed,
    /// The renew found the lock no longer ours.
    RenewLost,
    /// The release ran; `true` if it deleted the key.
    Released(bool),
    /// The store accepted the write.
    WriteAccepted,
    /// The store rejected the write as stale.
    WriteStale {
        /// The fence the store had already seen.
        last_fence: i64,
    },
    /// The store did not know the resource.
    WriteNotFound,
    /// The job had completed before; nothing was written.
    AlreadyDone,
    /// The report was recorded.
    Reported,
    /// A [`OpKind::Command`] was answered (what it did is in the servers' logs).
    Answered,
}

/// One change of a lock key's holder on one Redis server (mirrors the
/// simulated Redis's ownership log).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnershipRecord {
    /// When it happened; for `Expired`, the logical deadline.
    pub at_ms: u64,
    /// The server's name.
    pub server: String,
    /// The lock key.
    pub key: String,
    /// What happened.
    pub change: OwnershipChange,
}

/// What happened to a lock key's holder.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OwnershipChange {
    /// The key was created with value `owner`.
    Set {
        /// The new holder.
        owner: String,
    },
    /// The value was replaced while the key existed.
    Overwritten {
        /// The previous holder.
        from: String,
        /// The new holder.
        to: String,
    },
    /// The TTL ran out (at the logical deadline).
    Expired {
        /// The holder whose lease ended.
        owner: String,
    },
    /// Deleted by a command (or a replica resync).
    Deleted {
        /// The holder that was removed.
        owner: String,
    },
    /// The server stopped without persistence while the key existed.
    Lost {
        /// The holder whose lease vanished with the server.
        owner: String,
    },
}

impl OwnershipChange {
    /// The holder whose holding this change ends, if it ends one.
    pub fn ended_owner(&self) -> Option<&str> {
        match self {
            OwnershipChange::Set { .. } => None,
            OwnershipChange::Overwritten { from, .. } => Some(from),
            OwnershipChange::Expired { owner }
            | OwnershipChange::Deleted { owner }
            | OwnershipChange::Lost { owner } => Some(owner),
        }
    }

    /// The holder whose holding this change starts, if it starts one.
    pub fn started_owner(&self) -> Option<&str> {
        match self {
            OwnershipChange::Set { owner } => Some(owner),
            OwnershipChange::Overwritten { to, .. } => Some(to),
            _ => None,
        }
    }
}

/// One row of the fenced store's append-only log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FenceRecord {
    /// Commit order; strictly increasing along the log.
    pub seq: i64,
    /// When the store committed it (may be on the store's own clock).
    pub at_ms: u64,
    /// The resource written.
    pub resource: String,
    /// The fence the write carried.
    pub fence: i64,
    /// The writer's owner token.
    pub owner: String,
    /// The job id, for job writes.
    pub job_id: Option<String>,
    /// What the store decided.
    pub outcome: FenceOutcome,
}

/// What the store decided about one write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FenceOutcome {
    /// Applied.
    Accepted,
    /// Refused: the fence was not above the last one seen.
    Stale,
    /// Refused: the resource did not exist.
    NotFound,
    /// Refused: the job had already completed.
    Duplicate,
}

impl FenceOutcome {
    /// Every outcome.
    pub const ALL: [FenceOutcome; 4] = [
        FenceOutcome::Accepted,
        FenceOutcome::Stale,
        FenceOutcome::NotFound,
        FenceOutcome::Duplicate,
    ];

    /// The spelling the store's log column keeps (the SQL migration's
    /// `CHECK` constraint lists these; SQL values are snake_case).
    pub fn log_spelling(self) -> &'static str {
        match self {
            FenceOutcome::Accepted => "accepted",
            FenceOutcome::Stale => "stale",
            FenceOutcome::NotFound => "not_found",
            FenceOutcome::Duplicate => "duplicate",
        }
    }

    /// The outcome a log row spells `text`, if any.
    pub fn from_log_spelling(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.log_spelling() == text)
    }
}

/// A fault the world injected.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultRecord {
    /// When it was injected.
    pub at_ms: u64,
    /// The fault itself.
    pub fault: Fault,
    /// What it was, in words (e.g. "pause w1"), as [`Fault::describe`] says it.
    pub what: String,
    /// The worker it hit, if it hit one.
    #[serde(default)]
    pub worker: Option<String>,
    /// Whether it crashed that worker for good (the checker excuses a
    /// crashed worker from having to acquire).
    #[serde(default)]
    pub crash: bool,
}

impl FaultRecord {
    /// The record of `fault` injected at `at_ms`: its words, the worker it
    /// hit and whether it crashed that worker all follow from the fault.
    pub fn new(at_ms: u64, fault: Fault) -> Self {
        Self {
            at_ms,
            what: fault.describe(),
            worker: fault.worker().map(crate::names::worker_name),
            crash: fault.is_crash(),
            fault,
        }
    }
}

/// Why a history is not well-formed (and so cannot be judged).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HistoryError {
    /// More ops than [`OPS_MAX`].
    #[error("{count} ops exceed the bound of {OPS_MAX}")]
    TooManyOps {
        /// How many there were.
        count: usize,
    },
    /// A truth log longer than [`TRUTH_RECORDS_MAX`].
    #[error("{count} truth records exceed the bound of {TRUTH_RECORDS_MAX}")]
    TooManyRecords {
        /// How many there were.
        count: usize,
    },
    /// A lease of zero makes every time bound meaningless.
    #[error("lease_ms must be positive")]
    LeaseZero,
    /// Two ops share an id, so slices would be ambiguous.
    #[error("op id {id} is used twice")]
    DuplicateOpId {
        /// The id.
        id: u64,
    },
    /// An op completed before it was invoked.
    #[error("op {id} completes at {complete_ms} ms, before its invoke at {invoke_ms} ms")]
    CompletesBeforeInvoke {
        /// The op.
        id: u64,
        /// Its invoke.
        invoke_ms: u64,
        /// Its completion.
        complete_ms: u64,
    },
    /// An op was invoked or completed after the end of the run.
    #[error("op {id} has a time after the end of the run at {end_ms} ms")]
    AfterEnd {
        /// The op.
        id: u64,
        /// The end of the run.
        end_ms: u64,
    },
    /// An op with a definite outcome has no completion.
    #[error("op {id} never completed but has a definite outcome")]
    DefiniteWithoutCompletion {
        /// The op.
        id: u64,
    },
    /// The fence log's `seq` does not strictly increase.
    #[error("fence log seq {seq} does not follow {previous}")]
    SeqNotIncreasing {
        /// The previous seq.
        previous: i64,
        /// The offending seq.
        seq: i64,
    },
}

impl History {
    /// Checks the structural rules the checker relies on: bounds, unique op
    /// ids, completion not before invoke, no op time after `end_ms`, definite
    /// outcomes only on completed ops, and a strictly increasing fence-log seq.
    pub fn validate(&self) -> Result<(), HistoryError> {
        if self.ops.len() > OPS_MAX {
            return Err(HistoryError::TooManyOps {
                count: self.ops.len(),
            });
        }
        let redis_len = self.redis_truth.as_ref().map_or(0, Vec::len);
        let store_len = self.store_truth.as_ref().map_or(0, Vec::len);
        if redis_len.max(store_len) > TRUTH_RECORDS_MAX {
            return Err(HistoryError::TooManyRecords {
                count: redis_len.max(store_len),
            });
        }
        if self.limits.lease_ms == 0 {
            return Err(HistoryError::LeaseZero);
        }
        let mut ids = std::collections::BTreeSet::new();
        for op in &self.ops {
            if !ids.insert(op.id) {
                return Err(HistoryError::DuplicateOpId { id: op.id });
            }
            if op.invoke_ms > self.end_ms {
                return Err(HistoryError::AfterEnd {
                    id: op.id,
                    end_ms: self.end_ms,
                });
            }
            match op.complete_ms {
                Some(complete_ms) if complete_ms < op.invoke_ms => {
                    return Err(HistoryError::CompletesBeforeInvoke {
                        id: op.id,
                        invoke_ms: op.invoke_ms,
                        complete_ms,
                    });
                }
                Some(complete_ms) if complete_ms > self.end_ms => {
                    return Err(HistoryError::AfterEnd {
                        id: op.id,
                        end_ms: self.end_ms,
                    });
                }
                Some(_) => {}
                None if !matches!(op.outcome, Outcome::Indeterminate(_)) => {
                    return Err(HistoryError::DefiniteWithoutCompletion { id: op.id });
                }
                None => {}
            }
        }
        if let Some(log) = &self.store_truth {
            for pair in log.windows(2) {
                if pair[0].seq >= pair[1].seq {
                    return Err(HistoryError::SeqNotIncreasing {
                        previous: pair[0].seq,
                        seq: pair[1].seq,
                    });
                }
            }
        }
        Ok(())
    }

    /// The op with this id, if any.
    pub fn op(&self, id: u64) -> Option<&Op> {
        self.ops.iter().find(|op| op.id == id)
    }
}

impl Op {
    /// When the op stopped mattering: its completion, or `end_ms` if it never
    /// completed (it may have taken effect at any time until the run ended).
    pub fn end_or(&self, end_ms: u64) -> u64 {
        self.complete_ms.unwrap_or(end_ms)
    }

    /// Whether the op is owned by this token.
    pub fn is_owner(&self, owner: &str) -> bool {
        self.owner.as_deref() == Some(owner)
    }

    /// The fence of a completed successful acquire, if this is one.
    pub fn acquired_fence(&self) -> Option<Option<i64>> {
        match (&self.kind, &self.outcome, self.complete_ms) {
            (OpKind::Acquire, Outcome::Ok(OkValue::Acquired { fence }), Some(_)) => Some(*fence),
            _ => None,
        }
    }

    /// Whether this is a renew that the server confirmed.
    pub fn is_successful_renew(&self) -> bool {
        matches!(
            (&self.kind, &self.outcome),
            (OpKind::Renew, Outcome::Ok(OkValue::Renewed))
        )
    }
}

/// Builds histories for tests and examples so they read like a timeline.
///
/// Op ids are assigned 1, 2, 3, … in the order ops are added. Both truth logs
/// start as `Some(empty)`; [`HistoryBuilder::without_redis_truth`] and
/// [`HistoryBuilder::without_store_truth`] model worlds that lack them. Redis
/// records go to server [`HistoryBuilder::SERVER`] and key `lock:{resource}`
/// unless added with [`HistoryBuilder::ownership`]; fence records get the next
/// seq and the history's resource.
#[derive(Clone, Debug)]
pub struct HistoryBuilder {
    history: History,
    op_id_next: u64,
}

impl HistoryBuilder {
    /// The server name the shorthand Redis records use.
    pub const SERVER: &'static str = "redis-0";

    /// An empty history of `resource` under `limits`, ending at 0 ms until
    /// ops or [`HistoryBuilder::end`] move it.
    pub fn new(resource: &str, limits: Limits) -> Self {
        Self {
            history: History {
                resource: resource.to_owned(),
                limits,
                ops: Vec::new(),
                redis_truth: Some(Vec::new()),
                redis_truth_gap: None,
                server_events: Vec::new(),
                store_truth: Some(Vec::new()),
                faults: Vec::new(),
                end_ms: 0,
                contention: None,
            },
            op_id_next: 1,
        }
    }

    /// The lock key the shorthand Redis records use.
    pub fn key(&self) -> String {
        format!("lock:{}", self.history.resource)
    }

    /// Adds an op with the next id; `end_ms` grows to cover it.
    pub fn op(
        mut self,
        worker: &str,
        owner: Option<&str>,
        kind: OpKind,
        invoke_ms: u64,
        complete_ms: Option<u64>,
        outcome: Outcome,
    ) -> Self {
        let id = self.op_id_next;
        self.op_id_next += 1;
        let latest_ms = complete_ms.unwrap_or(invoke_ms).max(invoke_ms);
        self.history.end_ms = self.history.end_ms.max(latest_ms);
        self.history.ops.push(Op {
            id,
            worker: worker.to_owned(),
            owner: owner.map(str::to_owned),
            kind,
            invoke_ms,
            complete_ms,
            outcome,
        });
        self
    }

    /// A completed op of `owner` with a definite answer.
    fn ok(
        self,
        worker: &str,
        owner: &str,
        kind: OpKind,
        span_ms: (u64, u64),
        value: OkValue,
    ) -> Self {
        self.op(
            worker,
            Some(owner),
            kind,
            span_ms.0,
            Some(span_ms.1),
            Outcome::Ok(value),
        )
    }

    /// A successful acquire that issued `fence`.
    pub fn acquired(self, worker: &str, owner: &str, span_ms: (u64, u64), fence: i64) -> Self {
        let value = OkValue::Acquired { fence: Some(fence) };
        self.ok(worker, owner, OpKind::Acquire, span_ms, value)
    }

    /// An acquire that found the lock held.
    pub fn contended(self, worker: &str, owner: &str, span_ms: (u64, u64)) -> Self {
        self.ok(worker, owner, OpKind::Acquire, span_ms, OkValue::Contended)
    }

    /// A confirmed renew.
    pub fn renewed(self, worker: &str, owner: &str, span_ms: (u64, u64)) -> Self {
        self.ok(worker, owner, OpKind::Renew, span_ms, OkValue::Renewed)
    }

    /// A completed release; `deleted` says whether it removed the key.
    pub fn released(self, worker: &str, owner: &str, span_ms: (u64, u64), deleted: bool) -> Self {
        let value = OkValue::Released(deleted);
        self.ok(worker, owner, OpKind::Release, span_ms, value)
    }

    /// A completed fenced write with the store's answer.
    pub fn write(
        self,
        worker: &str,
        owner: &str,
        fence: i64,
        job_id: Option<&str>,
        span_ms: (u64, u64),
        value: OkValue,
    ) -> Self {
        let kind = OpKind::Write {
            fence,
            job_id: job_id.map(str::to_owned),
        };
        self.ok(worker, owner, kind, span_ms, value)
    }

    /// The worker's final report on a job, recorded at `at_ms`.
    pub fn report(
        self,
        worker: &str,
        job_id: Option<&str>,
        outcome: JobReport,
        at_ms: u64,
    ) -> Self {
        let kind = OpKind::Report {
            outcome,
            job_id: job_id.map(str::to_owned),
        };
        let value = Outcome::Ok(OkValue::Reported);
        self.op(worker, None, kind, at_ms, Some(at_ms), value)
    }

    /// Adds a Redis ownership record on any server and key.
    pub fn ownership(mut self, record: OwnershipRecord) -> Self {
        self.history.end_ms = self.history.end_ms.max(record.at_ms);
        self.history
            .redis_truth
            .get_or_insert_with(Vec::new)
            .push(record);
        self
    }

    /// A Redis record on the default server and key.
    pub fn redis(self, at_ms: u64, change: OwnershipChange) -> Self {
        let record = OwnershipRecord {
            at_ms,
            server: Self::SERVER.to_owned(),
            key: self.key(),
            change,
        };
        self.ownership(record)
    }

    /// `owner` set the key.
    pub fn set(self, at_ms: u64, owner: &str) -> Self {
        let owner = owner.to_owned();
        self.redis(at_ms, OwnershipChange::Set { owner })
    }

    /// `owner`'s key expired at its deadline `at_ms`.
    pub fn expired(self, at_ms: u64, owner: &str) -> Self {
        let owner = owner.to_owned();
        self.redis(at_ms, OwnershipChange::Expired { owner })
    }

    /// `owner`'s key was deleted.
    pub fn deleted(self, at_ms: u64, owner: &str) -> Self {
        let owner = owner.to_owned();
        self.redis(at_ms, OwnershipChange::Deleted { owner })
    }

    /// Adds a fence-log record with the next seq.
    pub fn fence_log(
        mut self,
        at_ms: u64,
        owner: &str,
        fence: i64,
        job_id: Option<&str>,
        outcome: FenceOutcome,
    ) -> Self {
        let resource = self.history.resource.clone();
        let log = self.history.store_truth.get_or_insert_with(Vec::new);
        let seq = log.last().map_or(1, |last| last.seq + 1);
        log.push(FenceRecord {
            seq,
            at_ms,
            resource,
            fence,
            owner: owner.to_owned(),
            job_id: job_id.map(str::to_owned),
            outcome,
        });
        self
    }

    /// Records `fault`, injected at `at_ms`.
    pub fn fault(mut self, at_ms: u64, fault: Fault) -> Self {
        self.history.end_ms = self.history.end_ms.max(at_ms);
        self.history.faults.push(FaultRecord::new(at_ms, fault));
        self
    }

    /// Records that worker number `worker` crashed for good at `at_ms`.
    pub fn crash(self, at_ms: u64, worker: usize) -> Self {
        self.fault(at_ms, Fault::CrashWorker(worker))
    }

    /// Models a world without a Redis ownership log.
    pub fn without_redis_truth(mut self) -> Self {
        self.history.redis_truth = None;
        self
    }

    /// Models a world without a readable store log.
    pub fn without_store_truth(mut self) -> Self {
        self.history.store_truth = None;
        self
    }

    /// Sets the end of the run (never earlier than what was recorded).
    pub fn end(mut self, end_ms: u64) -> Self {
        assert!(
            end_ms >= self.history.end_ms,
            "end_ms {end_ms} is before recorded time {}",
            self.history.end_ms
        );
        self.history.end_ms = end_ms;
        self
    }

    /// The id the next op will get.
    pub fn next_op_id(&self) -> u64 {
        self.op_id_next
    }

    /// Bounds contention as a scenario would.
    pub fn contention(mut self, bounds: ContentionBounds) -> Self {
        self.history.contention = Some(bounds);
        self
    }

    /// The history.
    pub fn build(self) -> History {
        self.history
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            lease_ms: 1_000,
            hold_ms_max: 5_000,
            renewals_max: 5,
            tolerance_ms: 10,
            acquire_deadline_ms: 10_000,
        }
    }

    #[test]
    fn builder_numbers_ops_and_grows_end() {
        let h = HistoryBuilder::new("r", limits())
            .acquired("w1", "o1", (0, 5), 1)
            .released("w1", "o1", (10, 12), true)
            .build();
        assert_eq!(h.ops.iter().map(|op| op.id).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(h.end_ms, 12);
        assert_eq!(h.validate(), Ok(()));
    }

    #[test]
    fn validate_rejects_malformed() {
        let mut h = HistoryBuilder::new("r", limits())
            .acquired("w1", "o1", (0, 5), 1)
            .build();
        h.ops.push(h.ops[0].clone());
        assert_eq!(h.validate(), Err(HistoryError::DuplicateOpId { id: 1 }));
        h.ops.pop();
        h.ops[0].complete_ms = None;
        assert_eq!(
            h.validate(),
            Err(HistoryError::DefiniteWithoutCompletion { id: 1 })
        );
        h.ops[0].complete_ms = Some(99);
        assert!(matches!(h.validate(), Err(HistoryError::AfterEnd { .. })));
    }

    #[test]
    fn enum_names_are_kebab_case() {
        let json = serde_json::to_string(&FenceOutcome::NotFound).unwrap();
        assert_eq!(json, "\"not-found\"");
        let json = serde_json::to_string(&Outcome::Ok(OkValue::WriteStale { last_fence: 3 }));
        assert_eq!(json.unwrap(), r#"{"ok":{"write-stale":{"last_fence":3}}}"#);
    }
}
