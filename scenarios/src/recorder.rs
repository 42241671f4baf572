//! The recorder: turns what workers do into a history's operations.
//!
//! Every step the driver takes is recorded twice — at invoke and at
//! completion — on the world's clock. An op whose completion never comes
//! (the worker crashed, or the run ended while it waited) stays
//! indeterminate with no completion, which is exactly what the checker must
//! assume about it. Ids are assigned in record order, which is
//! deterministic because every worker runs on the world's single thread,
//! and it is invoke order at both plug-in levels (the whole-worker level,
//! `whole_worker`, records a request as it leaves and completes it with
//! the time its answer came).

use std::sync::{Arc, Mutex};

use crate::history::{FaultRecord, JobReport, OkValue, Op, OpKind, Outcome, OPS_MAX};
use crate::world::{Clock, Fault};

/// Why an op that never completed is indeterminate.
pub const NO_ANSWER: &str = "no answer before the worker stopped or the run ended";

#[derive(Debug, Default)]
struct Inner {
    ops: Vec<Op>,
    faults: Vec<FaultRecord>,
    /// Ops refused past [`OPS_MAX`]; a runaway worker must not eat memory.
    dropped: u64,
}

/// Records ops and faults of one run. Cheap to clone; clones share the record.
#[derive(Clone, Debug)]
pub struct Recorder {
    inner: Arc<Mutex<Inner>>,
    clock: Clock,
}

/// Names a recorded op so its completion can be filled in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpHandle(Option<u64>);

impl Recorder {
    /// An empty record on `clock`.
    pub fn new(clock: Clock) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner::default())),
            clock,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panicking worker must not hide the rest of the history.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The clock the record is kept on.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Records the invoke of an op now.
    pub fn invoke(&self, worker: &str, owner: Option<&str>, kind: OpKind) -> OpHandle {
        let now_ms = self.clock.now_ms();
        let unanswered = Outcome::Indeterminate(NO_ANSWER.to_owned());
        self.record(worker, owner, kind, now_ms, None, unanswered)
    }

    /// Records the completion of `op` now, with `outcome`.
    pub fn complete(&self, op: OpHandle, outcome: Outcome) {
        let Some(id) = op.0 else { return };
        let now_ms = self.clock.now_ms();
        let mut inner = self.lock();
        let entry = &mut inner.ops[(id - 1) as usize];
        assert!(entry.complete_ms.is_none(), "op {id} completed twice");
        entry.complete_ms = Some(now_ms.max(entry.invoke_ms));
        entry.outcome = outcome;
    }

    /// Records an op observed after the fact, with its own times
    /// (`complete_ms: None` leaves it uncompleted and `outcome` must then
    /// be indeterminate).
    pub fn record(
        &self,
        worker: &str,
        owner: Option<&str>,
        kind: OpKind,
        invoke_ms: u64,
        complete_ms: Option<u64>,
        outcome: Outcome,
    ) -> OpHandle {
        assert!(
            complete_ms.is_some() || matches!(outcome, Outcome::Indeterminate(_)),
            "an uncompleted op has no definite outcome"
        );
        let mut inner = self.lock();
        if inner.ops.len() >= OPS_MAX {
            inner.dropped += 1;
            return OpHandle(None);
        }
        let id = inner.ops.len() as u64 + 1;
        inner.ops.push(Op {
            id,
            worker: worker.to_owned(),
            owner: owner.map(str::to_owned),
            kind,
            invoke_ms,
            complete_ms: complete_ms.map(|at_ms| at_ms.max(invoke_ms)),
            outcome,
        });
        OpHandle(Some(id))
    }

    /// Gives the latest acquisition of `owner` by `worker` the fence its
    /// first write carried, if it has none yet (the whole-worker level
    /// learns an acquisition's fence from what reached the store).
    pub fn amend_acquire(&self, worker: &str, owner: &str, fence: i64) {
        let mut inner = self.lock();
        let latest = inner.ops.iter_mut().rev().find(|op| {
            op.kind == OpKind::Acquire
                && op.worker == worker
                && op.owner.as_deref() == Some(owner)
                && matches!(op.outcome, Outcome::Ok(OkValue::Acquired { .. }))
        });
        if let Some(op) = latest {
            if let Outcome::Ok(OkValue::Acquired {
                fence: issued @ None,
            }) = &mut op.outcome
            {
                *issued = Some(fence);
            }
        }
    }

    /// Records the completion of `op` at `at_ms` (observed earlier than
    /// now), with `outcome`.
    pub fn complete_at(&self, op: OpHandle, at_ms: u64, outcome: Outcome) {
        let Some(id) = op.0 else { return };
        let mut inner = self.lock();
        let entry = &mut inner.ops[(id - 1) as usize];
        assert!(entry.complete_ms.is_none(), "op {id} completed twice");
        entry.complete_ms = Some(at_ms.max(entry.invoke_ms));
        entry.outcome = outcome;
    }

    /// Records a worker's final word on a job, now.
    pub fn report(&self, worker: &str, job_id: Option<&str>, outcome: JobReport) {
        let kind = OpKind::Report {
            outcome,
            job_id: job_id.map(str::to_owned),
        };
        let op = self.invoke(worker, None, kind);
        self.complete(op, Outcome::Ok(OkValue::Reported));
    }

    /// Records `fault`, injected at `at_ms`, in the world's words for it
    /// (`World::fault_words`).
    pub fn fault(&self, at_ms: u64, fault: &Fault, what: String) {
        let mut record = FaultRecord::new(at_ms, fault.clone());
        record.what = what;
        self.lock().faults.push(record);
    }

    /// How many ops were refused past the bound.
    pub fn dropped(&self) -> u64 {
        self.lock().dropped
    }

    /// The ops and faults so far (ops in id order, faults in time order).
    pub fn snapshot(&self) -> (Vec<Op>, Vec<FaultRecord>) {
        let inner = self.lock();
        (inner.ops.clone(), inner.faults.clone())
    }
}

impl Recorder {
    /// Records that the worker stopped waiting for `op` without a definite
    /// answer (timeout, lost connection): it stays indeterminate *and*
    /// uncompleted, because the request may still take effect later.
    pub fn give_up(&self, op: OpHandle, why: String) {
        let Some(id) = op.0 else { return };
        let mut inner = self.lock();
        inner.ops[(id - 1) as usize].outcome = Outcome::Indeterminate(why);
    }
}
