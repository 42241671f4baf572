//! The store's durable state and the operations on it, with the Postgres
//! store's semantics (`core/src/pg_store.rs`, `core/migrations/`).
//!
//! The state lives outside the store host (in an `Rc` the world keeps), the way
//! a database's data lives on disk: a host restart loses connections and
//! in-flight requests, never committed rows. Every operation runs to completion
//! inside one `RefCell` borrow with no `.await`, so each is atomic and the
//! simulation's order is the commit order — the serializable history the
//! Postgres statements and row locks give.
//!
//! The tables are mirrored one to one, because their differences matter:
//! `write_fenced` checks and raises `shared_resources.last_fence`; `apply_job`
//! checks the greater of it and the guard row's fence and raises both, so a
//! resource has one fence whichever path writes it (as the Postgres store). Only `BTreeMap`s and a
//! `Vec` are used, so every iteration order is fixed.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use redfence_core::{FenceLogEntry, FenceOutcome, JobOutcome, WriteOutcome};

use super::protocol::{Reply, Request};

/// Most fence-log rows one store keeps. The log is append-only by design, so
/// the bound is a memory guard far above any scenario: a run that reaches it
/// is a runaway loop, and failing loudly beats exhausting the machine.
pub const FENCE_LOG_ENTRIES_MAX: usize = 10_000_000;

/// A `shared_resources` row: the value fenced writes protect.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct SharedResource {
    value: String,
    last_fence: i64,
}

/// A `job_completions` row. Only the key is read back; the rest is kept
/// because the Postgres row has it and a debugger may want it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(dead_code)]
struct JobCompletion {
    resource: String,
    fence: i64,
    owner: String,
    completed_at_ms: i64,
}

#[derive(Debug, Default)]
struct Tables {
    /// `shared_resources`: value and the single-statement fence.
    shared_resources: BTreeMap<String, SharedResource>,
    /// `resource_guards`: the guard row's `last_fence`, used by `apply_job`.
    resource_guards: BTreeMap<String, i64>,
    /// `job_completions`, keyed by job id (the primary key).
    job_completions: BTreeMap<String, JobCompletion>,
    /// `fence_log`, in `seq` order: `fence_log[i].seq == i + 1`.
    fence_log: Vec<FenceLogEntry>,
    /// `fence_counters`: the durable fence source, one counter per resource.
    fence_counters: BTreeMap<String, i64>,
}

impl Tables {
    /// Appends a fence-log row (`BIGSERIAL` seq from 1, strictly increasing).
    fn log(
        &mut self,
        resource: &str,
        fence: i64,
        owner: &str,
        job_id: Option<&str>,
        outcome: FenceOutcome,
        at_ms: i64,
    ) {
        assert!(
            self.fence_log.len() < FENCE_LOG_ENTRIES_MAX,
            "fence log reached its bound of {FENCE_LOG_ENTRIES_MAX} rows"
        );
        let seq = i64::try_from(self.fence_log.len()).expect("bounded") + 1;
        if let Some(last) = self.fence_log.last() {
            assert!(last.seq < seq, "fence log seq must strictly increase");
        }
        self.fence_log.push(FenceLogEntry {
            seq,
            resource: resource.to_owned(),
            fence,
            owner: owner.to_owned(),
            job_id: job_id.map(str::to_owned),
            outcome,
            at_ms,
            at_us: None,
        });
    }
}

/// The durable database: lives outside the host so it survives a host restart
/// (like a database's disk). Cheap to clone; clones share the tables. Not
/// `Send`: it belongs to the simulation's single thread.
#[derive(Clone, Debug, Default)]
pub struct StoreState(Rc<RefCell<Tables>>);

impl StoreState {
    /// The fence log of one resource, in `seq` order.
    pub fn fence_log(&self, resource: &str) -> Vec<FenceLogEntry> {
        self.0
            .borrow()
            .fence_log
            .iter()
            .filter(|entry| entry.resource == resource)
            .cloned()
            .collect()
    }

    /// The whole fence log, every resource, in `seq` order.
    pub fn all_fence_log(&self) -> Vec<FenceLogEntry> {
        self.0.borrow().fence_log.clone()
    }

    /// The resource's current value and `last_fence` (`shared_resources`), if
    /// it exists.
    pub fn read(&self, resource: &str) -> Option<(String, i64)> {
        self.0
            .borrow()
            .shared_resources
            .get(resource)
            .map(|row| (row.value.clone(), row.last_fence))
    }

    /// Creates the resource (value `""`, `last_fence` 0, guard 0) if absent;
    /// an existing resource is left as it is. Logs nothing, like Postgres.
    pub fn ensure_resource(&self, resource: &str) {
        let mut tables = self.0.borrow_mut();
        // Two independent `INSERT … ON CONFLICT DO NOTHING`s, as in Postgres.
        tables
            .shared_resources
            .entry(resource.to_owned())
            .or_default();
        tables
            .resource_guards
            .entry(resource.to_owned())
            .or_insert(0);
    }

    /// The durable fence counter: `INSERT … ON CONFLICT DO UPDATE SET value
    /// = value + 1 RETURNING value`, as `PgFencedStore::next_fence`.
    pub(crate) fn next_fence(&self, resource: &str) -> i64 {
        let mut tables = self.0.borrow_mut();
        let counter = tables
            .fence_counters
            .entry(resource.to_owned())
            .or_insert(0);
        *counter = counter
            .checked_add(1)
            .expect("a fence counter cannot reach i64::MAX");
        *counter
    }

    /// Whether `job_id` has completed.
    pub fn is_completed(&self, job_id: &str) -> bool {
        self.0.borrow().job_completions.contains_key(job_id)
    }

    /// Ids of every completed job, in id order.
    pub fn completed_jobs(&self) -> Vec<String> {
        self.0.borrow().job_completions.keys().cloned().collect()
    }

    /// The single-statement fenced update: accepted only if `fence` is greater
    /// than `shared_resources.last_fence`. Every outcome, rejections included,
    /// is logged (without a job id), as the Postgres statement's `logged` CTE does.
    pub(crate) fn write_fenced(
        &self,
        resource: &str,
        fence: i64,
        owner: &str,
        value: &str,
        at_ms: i64,
    ) -> WriteOutcome {
        let mut tables = self.0.borrow_mut();
        let (outcome, log_outcome) = match tables.shared_resources.get_mut(resource) {
            None => (WriteOutcome::NotFound, FenceOutcome::NotFound),
            Some(row) if row.last_fence < fence => {
                row.value = value.to_owned();
                row.last_fence = fence;
                (WriteOutcome::Accepted, FenceOutcome::Accepted)
            }
            Some(row) => {
                // Postgres reports `max(prev, fence)` to cover a concurrent
                // raise after its snapshot; here nothing interleaves, so the
                // previous fence already is at least this write's.
                assert!(row.last_fence >= fence);
                let last_fence = row.last_fence;
                (WriteOutcome::Stale { last_fence }, FenceOutcome::Stale)
            }
        };
        tables.log(resource, fence, owner, None, log_outcome, at_ms);
        outcome
    }

    /// Guard check, effect and idempotent completion, in Postgres's order:
    ///
    /// 1. guard row missing → `NotFound`, logged `not_found`;
    /// 2. `fence <= guard` → `Stale { last_fence: guard }`, logged `stale` —
    ///    checked *before* the completion, so a retry under the same fence is
    ///    stale even if the job completed;
    /// 3. job already completed → `AlreadyDone`, logged `duplicate`, nothing
    ///    changed (the guard is not raised);
    /// 4. otherwise the value is set, `shared_resources.last_fence` raised with
    ///    `GREATEST`, the completion recorded, the guard set to `fence`, and the
    ///    write logged `accepted` — all or nothing.
    ///
    /// Every log row carries the job id.
    pub(crate) fn apply_job(
        &self,
        job_id: &str,
        resource: &str,
        fence: i64,
        owner: &str,
        value: &str,
        at_ms: i64,
    ) -> JobOutcome {
        let mut tables = self.0.borrow_mut();
        let job = Some(job_id);
        // One fence per resource, as the Postgres store's joined guard check:
        // the guard row and `shared_resources.last_fence` together, and both
        // rows must exist.
        let guard = match (
            tables.resource_guards.get(resource),
            tables.shared_resources.get(resource),
        ) {
            (Some(&guard), Some(row)) => guard.max(row.last_fence),
            _ => {
                tables.log(resource, fence, owner, job, FenceOutcome::NotFound, at_ms);
                return JobOutcome::NotFound;
            }
        };
        if fence <= guard {
            tables.log(resource, fence, owner, job, FenceOutcome::Stale, at_ms);
            return JobOutcome::Stale { last_fence: guard };
        }
        if tables.job_completions.contains_key(job_id) {
            tables.log(resource, fence, owner, job, FenceOutcome::Duplicate, at_ms);
            return JobOutcome::AlreadyDone;
        }
        tables.job_completions.insert(
            job_id.to_owned(),
            JobCompletion {
                resource: resource.to_owned(),
                fence,
                owner: owner.to_owned(),
                completed_at_ms: at_ms,
            },
        );
        let row = tables
            .shared_resources
            .get_mut(resource)
            .expect("resource row checked above");
        assert!(row.last_fence < fence, "the fence only ever rises");
        row.value = value.to_owned();
        row.last_fence = fence;
        let raised = tables
            .resource_guards
            .insert(resource.to_owned(), fence)
            .expect("guard row checked above");
        assert!(raised < fence, "the guard only ever rises");
        tables.log(resource, fence, owner, job, FenceOutcome::Accepted, at_ms);
        JobOutcome::Applied
    }

    /// A write with no fence check and no idempotency check: the value and
    /// the last fence become the writer's, whatever they were (the fence may
    /// go down), the job is marked completed, and the write is logged
    /// `accepted`. Only broken protocols (mutants) send this; the log shows
    /// the checker what they did.
    pub(crate) fn write_unchecked(
        &self,
        resource: &str,
        fence: i64,
        owner: &str,
        job_id: Option<&str>,
        value: &str,
        at_ms: i64,
    ) -> WriteOutcome {
        let mut tables = self.0.borrow_mut();
        let Some(row) = tables.shared_resources.get_mut(resource) else {
            tables.log(
                resource,
                fence,
                owner,
                job_id,
                FenceOutcome::NotFound,
                at_ms,
            );
            return WriteOutcome::NotFound;
        };
        row.value = value.to_owned();
        row.last_fence = fence;
        if let Some(guard) = tables.resource_guards.get_mut(resource) {
            *guard = fence;
        }
        if let Some(job_id) = job_id {
            tables.job_completions.insert(
                job_id.to_owned(),
                JobCompletion {
                    resource: resource.to_owned(),
                    fence,
                    owner: owner.to_owned(),
                    completed_at_ms: at_ms,
                },
            );
        }
        tables.log(
            resource,
            fence,
            owner,
            job_id,
            FenceOutcome::Accepted,
            at_ms,
        );
        WriteOutcome::Accepted
    }

    /// Runs one protocol request at simulated time `at_ms` and returns its reply.
    pub(crate) fn execute(&self, request: &Request, at_ms: i64) -> Reply {
        match request {
            Request::EnsureResource { resource } => {
                self.ensure_resource(resource);
                Reply::Done
            }
            Request::WriteFenced {
                resource,
                fence,
                owner,
                value,
            } => Reply::Write(self.write_fenced(resource, *fence, owner, value, at_ms)),
            Request::ApplyJob {
                job_id,
                resource,
                fence,
                owner,
                value,
            } => Reply::Job(self.apply_job(job_id, resource, *fence, owner, value, at_ms)),
            Request::IsCompleted { job_id } => Reply::Completed(self.is_completed(job_id)),
            Request::Read { resource } => Reply::Value(self.read(resource)),
            Request::FenceLog { resource } => Reply::FenceLog(self.fence_log(resource)),
            Request::NextFence { resource } => Reply::Fence(self.next_fence(resource)),
            Request::WriteUnchecked {
                resource,
                fence,
                owner,
                job_id,
                value,
            } => {
                let job_id = (!job_id.is_empty()).then_some(job_id.as_str());
                Reply::Write(self.write_unchecked(resource, *fence, owner, job_id, value, at_ms))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcomes(state: &StoreState, resource: &str) -> Vec<(i64, FenceOutcome)> {
        state
            .fence_log(resource)
            .iter()
            .map(|e| (e.fence, e.outcome))
            .collect()
    }

    #[test]
    fn write_fenced_tells_stale_from_not_found() {
        let state = StoreState::default();
        assert_eq!(
            state.write_fenced("r", 1, "o1", "x", 5),
            WriteOutcome::NotFound
        );
        state.ensure_resource("r");
        assert_eq!(state.read("r"), Some((String::new(), 0)));
        assert_eq!(
            state.write_fenced("r", 41, "o41", "a", 6),
            WriteOutcome::Accepted
        );
        assert_eq!(
            state.write_fenced("r", 42, "o42", "b", 7),
            WriteOutcome::Accepted
        );
        assert_eq!(
            state.write_fenced("r", 41, "o41", "stale", 8),
            WriteOutcome::Stale { last_fence: 42 }
        );
        assert_eq!(
            state.write_fenced("r", 42, "o42", "same", 9),
            WriteOutcome::Stale { last_fence: 42 }
        );
        assert_eq!(state.read("r"), Some(("b".into(), 42)));
        assert_eq!(
            outcomes(&state, "r"),
            [
                (1, FenceOutcome::NotFound),
                (41, FenceOutcome::Accepted),
                (42, FenceOutcome::Accepted),
                (41, FenceOutcome::Stale),
                (42, FenceOutcome::Stale),
            ]
        );
        let log = state.fence_log("r");
        assert_eq!(
            log.iter().map(|e| e.seq).collect::<Vec<_>>(),
            [1, 2, 3, 4, 5]
        );
        assert_eq!(
            log.iter().map(|e| e.at_ms).collect::<Vec<_>>(),
            [5, 6, 7, 8, 9]
        );
        assert!(log.iter().all(|e| e.job_id.is_none()));
        assert_eq!(log[3].owner, "o41");
    }

    #[test]
    fn ensure_resource_keeps_existing_rows() {
        let state = StoreState::default();
        state.ensure_resource("r");
        state.write_fenced("r", 3, "o", "kept", 0);
        state.ensure_resource("r");
        assert_eq!(state.read("r"), Some(("kept".into(), 3)));
        assert!(state.all_fence_log().len() == 1, "ensure logs nothing");
    }

    #[test]
    fn apply_job_is_idempotent_and_the_duplicate_does_not_raise_the_guard() {
        let state = StoreState::default();
        assert_eq!(
            state.apply_job("j", "r", 1, "o", "v", 0),
            JobOutcome::NotFound
        );
        assert!(!state.is_completed("j"), "a refused job is not completed");
        state.ensure_resource("r");
        assert_eq!(
            state.apply_job("j", "r", 1, "o1", "first", 1),
            JobOutcome::Applied
        );
        assert!(state.is_completed("j"));
        // The same fence again is stale: the guard check comes first.
        assert_eq!(
            state.apply_job("j", "r", 1, "o1", "first", 2),
            JobOutcome::Stale { last_fence: 1 }
        );
        assert_eq!(
            state.apply_job("j", "r", 2, "o2", "second", 3),
            JobOutcome::AlreadyDone
        );
        assert_eq!(state.read("r"), Some(("first".into(), 1)));
        assert_eq!(
            state.apply_job("k", "r", 2, "o2", "other", 4),
            JobOutcome::Applied
        );
        assert_eq!(state.read("r"), Some(("other".into(), 2)));
        assert_eq!(
            outcomes(&state, "r"),
            [
                (1, FenceOutcome::NotFound),
                (1, FenceOutcome::Accepted),
                (1, FenceOutcome::Stale),
                (2, FenceOutcome::Duplicate),
                (2, FenceOutcome::Accepted),
            ]
        );
        assert!(state.fence_log("r").iter().all(|e| e.job_id.is_some()));
        assert_eq!(state.completed_jobs(), ["j", "k"]);
    }

    #[test]
    fn job_and_single_statement_writes_share_one_fence() {
        // A job under a lower fence than an accepted single-statement write
        // is stale, and the other way round.
        let state = StoreState::default();
        state.ensure_resource("r");
        assert_eq!(
            state.write_fenced("r", 5, "o5", "w", 0),
            WriteOutcome::Accepted
        );
        assert_eq!(
            state.apply_job("j", "r", 3, "o3", "job", 1),
            JobOutcome::Stale { last_fence: 5 }
        );
        assert_eq!(
            state.apply_job("k", "r", 6, "o6", "job", 2),
            JobOutcome::Applied
        );
        assert_eq!(
            state.write_fenced("r", 6, "o6b", "late", 3),
            WriteOutcome::Stale { last_fence: 6 }
        );
        assert_eq!(state.read("r"), Some(("job".into(), 6)));
    }

    #[test]
    fn a_guard_without_a_resource_row_is_not_found() {
        let state = StoreState::default();
        state.0.borrow_mut().resource_guards.insert("g".into(), 0);
        assert_eq!(
            state.apply_job("j", "g", 1, "o", "v", 0),
            JobOutcome::NotFound
        );
        assert!(!state.is_completed("j"));
    }

    #[test]
    fn all_fence_log_interleaves_resources_in_seq_order() {
        let state = StoreState::default();
        state.ensure_resource("a");
        state.ensure_resource("b");
        state.write_fenced("a", 1, "o", "v", 0);
        state.write_fenced("b", 1, "o", "v", 0);
        state.write_fenced("a", 2, "o", "v", 0);
        let all = state.all_fence_log();
        let seen: Vec<_> = all.iter().map(|e| (e.seq, e.resource.as_str())).collect();
        assert_eq!(seen, [(1, "a"), (2, "b"), (3, "a")]);
        assert_eq!(state.fence_log("b").len(), 1);
        assert_eq!(state.fence_log("missing"), []);
    }
}
