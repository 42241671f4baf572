//! The driver: the worker flow every scenario runs, over any [`Session`].
//!
//! It is the design article's `process` — acquire with full-jitter retries
//! under bounded attempts, renew while the job runs (in the job's own task,
//! so a stop-the-world pause freezes both), write through the protocol,
//! release, report — with every step recorded. The harness owns the flow so
//! that a protocol only has to say what each step does on the wire, and so
//! every protocol is judged on the same flow.
//!
//! A [`Probe`] per worker tells the scenario script where the worker is
//! (acquiring, holding, writing…), so faults can land at exact points, and
//! keeps per-job statistics for load scenarios.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redfence_core::backoff::backoff_window_ms;

use crate::history::{JobReport, OkValue, OpKind, Outcome};
use crate::protocol::{Acquire, Held, Session, StepError, WriteResult};
pub use crate::record::JobStat;
use crate::recorder::Recorder;
use crate::world::{Trigger, WorkerEnv};

/// Most jobs one worker plan may hold.
pub const JOBS_MAX: usize = 10_000;

/// Most faults armed on one worker at a time.
pub const ARMED_MAX: usize = 16;

/// Where a worker is in its flow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Phase {
    /// Not started, or between jobs.
    #[default]
    Idle,
    /// Trying to acquire.
    Acquiring,
    /// Holding the lease, doing the job's work.
    Holding,
    /// The protected write is on its way.
    Writing,
    /// The release is on its way.
    Releasing,
    /// Every job is done.
    Done,
}

#[derive(Debug, Default)]
struct ProbeState {
    phase: Phase,
    /// Jobs that reached `Holding`.
    acquisitions: u32,
    stats: Vec<JobStat>,
    /// Faults to fire, once, when the worker enters a phase.
    armed: Vec<(Phase, Trigger)>,
    /// Armed faults that fired.
    fired: u32,
}

/// A worker's position and statistics, shared with the scenario script.
#[derive(Clone, Debug, Default)]
pub struct Probe(Arc<Mutex<ProbeState>>);

impl Probe {
    fn lock(&self) -> std::sync::MutexGuard<'_, ProbeState> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Where the worker is.
    pub fn phase(&self) -> Phase {
        self.lock().phase
    }

    /// How many times the worker has held the lease.
    pub fn acquisitions(&self) -> u32 {
        self.lock().acquisitions
    }

    /// Per-job statistics so far.
    pub fn stats(&self) -> Vec<JobStat> {
        self.lock().stats.clone()
    }

    /// Arms `trigger` to fire, once, the moment the worker enters `phase`.
    pub fn arm(&self, phase: Phase, trigger: Trigger) {
        let mut state = self.lock();
        assert!(
            state.armed.len() < ARMED_MAX,
            "at most {ARMED_MAX} armed faults"
        );
        state.armed.push((phase, trigger));
    }

    /// How many armed faults have fired.
    pub fn fired(&self) -> u32 {
        self.lock().fired
    }

    pub(crate) fn set(&self, phase: Phase) {
        let due: Vec<Trigger> = {
            let mut state = self.lock();
            if phase == Phase::Holding {
                state.acquisitions += 1;
            }
            state.phase = phase;
            let (due, rest) = std::mem::take(&mut state.armed)
                .into_iter()
                .partition(|(at, _)| *at == phase);
            state.armed = rest;
            state.fired += due.len() as u32;
            due.into_iter().map(|(_, trigger)| trigger).collect()
        };
        // Outside the lock: a trigger records the fault, which reads state.
        for trigger in due {
            trigger.fire();
        }
    }

    pub(crate) fn stat(&self, stat: JobStat) {
        self.lock().stats.push(stat);
    }
}

/// Retry policy between contended attempts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// First window.
    pub base_ms: u64,
    /// Largest window.
    pub cap_ms: u64,
    /// Most attempts per job before `retry-later`.
    pub attempts_max: u32,
    /// Full jitter (`random(0, window)`) when true; the whole window when false.
    pub jitter: bool,
}

/// One job: an idempotency key and how long its work takes while holding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobSpec {
    /// The idempotency key.
    pub job_id: String,
    /// Work inside the critical section.
    pub work_ms: u64,
}

/// What one worker does in a scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerPlan {
    /// The protected resource.
    pub resource: String,
    /// Jobs, in order.
    pub jobs: Vec<JobSpec>,
    /// Retry policy.
    pub backoff: Backoff,
    /// Pause before each job (spreads workers' starts).
    pub start_delay_ms: u64,
    /// How many of the jobs run at once (at least 1): a worker process
    /// with a pool of job tasks sharing its connections and its lock
    /// client. Job `i` runs in slot `i % jobs_at_once`, each slot's jobs
    /// one after another; each slot is a holder of its own in the history
    /// (`w0.0`, `w0.1`, …) when this is above 1.
    pub jobs_at_once: usize,
    /// Closed by the scenario when the workload is over: no job starts
    /// after that (the default never closes: every job runs).
    pub workload: Workload,
    /// Opened as this worker's first job starts (after its start delay):
    /// what another worker's [`WorkerPlan::waits_for`] names. The default
    /// opens nothing.
    pub opens: StartGate,
    /// Waited for before the first job's start delay, once the worker is
    /// set up (connected): the start delay then counts from the moment the
    /// gate opened. The default is open.
    pub waits_for: StartGate,
    /// A job the script holds back until it is ready for it. The default
    /// holds none.
    pub hold: JobHold,
}

/// A job held back by the script: job `job` (its index in the plan)
/// starts, once its start delay is over, only when `gate` is open.
///
/// Why: a script that must set something up between two jobs of a worker
/// (a fault aimed at the next acquire, `lost-acquire-reply`) has the start
/// delay to do it in. The simulation always makes it, and its schedule
/// stays as it was (the gate is open by the time the worker looks); a
/// loaded real machine can take longer than the delay to notice the job
/// that ended and to inject the fault, and the worker then ran the job the
/// fault was meant for unharmed. The default holds nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobHold {
    /// The held job's index in the plan.
    pub job: usize,
    /// Opened by the script when the job may start.
    pub gate: StartGate,
}

impl JobHold {
    /// Waits (bounded, see [`StartGate::wait`]) if `job` is the held job.
    pub async fn before(&self, job: usize) {
        if job == self.job {
            self.gate.wait().await;
        }
    }
}

/// Longest a worker waits at a [`StartGate`] before it starts anyway, in
/// polls of [`GATE_POLL_MS`] (a poll can take longer on a loaded real
/// machine, so the wall-clock bound is looser): far beyond any setup (a
/// few hundred milliseconds on a loaded machine); a gate that never opens
/// (its opener crashed before its first job) must not hang the worker.
pub const GATE_WAIT_MS_MAX: u64 = 10_000;
/// How often a waiting worker looks at its gate: one simulated tick, so a
/// wait ends at most one tick after the gate opened.
const GATE_POLL_MS: u64 = 1;

/// Orders two workers' first jobs: one worker's plan opens the gate as its
/// first job starts, another's waits for it before its own start delay.
///
/// Why: a head start counted from the spawn includes both workers'
/// connection setup, which takes the same simulated time in the
/// simulation and anything on a loaded real machine, so "`w1` asks 30 ms
/// after `w0`" could become "`w1` asks first" there
/// (`redlock-minority-partition`). Gating on the other worker's first job,
/// after each worker's own setup, keeps the order in both worlds. A gate
/// that waits on the stage instead (spawning the second worker once the
/// first holds its key) moves the second worker by its whole setup.
#[derive(Clone, Debug, Default)]
pub struct StartGate(Option<Arc<AtomicBool>>);

impl StartGate {
    /// A closed gate.
    pub fn closed() -> Self {
        Self(Some(Arc::new(AtomicBool::new(false))))
    }

    /// Opens it (again is a no-op).
    pub fn open(&self) {
        if let Some(open) = &self.0 {
            open.store(true, Ordering::SeqCst);
        }
    }

    /// Whether it is open (the default gate always is).
    pub fn is_open(&self) -> bool {
        self.0
            .as_ref()
            .is_none_or(|open| open.load(Ordering::SeqCst))
    }

    /// Waits until it is open, at most [`GATE_WAIT_MS_MAX`]; returns
    /// whether it opened.
    pub async fn wait(&self) -> bool {
        self.wait_at_most(GATE_WAIT_MS_MAX).await
    }

    /// Waits until it is open, at most `limit_ms`; returns whether it
    /// opened.
    pub async fn wait_at_most(&self, limit_ms: u64) -> bool {
        let mut waited_ms = 0;
        // Bounded by limit_ms.
        while !self.is_open() && waited_ms < limit_ms {
            tokio::time::sleep(Duration::from_millis(GATE_POLL_MS)).await;
            waited_ms += GATE_POLL_MS;
        }
        self.is_open()
    }
}

/// Two gates are equal when they are one gate (or neither is one).
impl PartialEq for StartGate {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for StartGate {}

/// A scenario's word to its workers that the workload is over: a worker
/// starts no job once it is closed; the job it is running finishes as
/// usual.
///
/// Why: the moment a scenario aims at (a failover, an outage) falls on a
/// different job in each world, since a simulated job lasts longer than a
/// real one (every hop takes a 10 ms tick). A fixed job count then leaves
/// work after that moment in one world and none in the other, and the
/// world with none has nothing to judge. A plan with more jobs than can
/// run, closed a fixed time after the moment, gives both worlds the same
/// stretch of work after it. In the simulation the close happens between
/// steps, so runs stay deterministic.
#[derive(Clone, Debug, Default)]
pub struct Workload(Option<Arc<AtomicBool>>);

impl Workload {
    /// A workload the scenario can close.
    pub fn closable() -> Self {
        Self(Some(Arc::new(AtomicBool::new(false))))
    }

    /// Ends the workload: no job starts from now on.
    pub fn close(&self) {
        let closable = self.0.as_ref();
        assert!(closable.is_some(), "only a closable workload is closed");
        if let Some(closed) = closable {
            closed.store(true, Ordering::SeqCst);
        }
    }

    /// Whether jobs may still start.
    pub fn is_open(&self) -> bool {
        self.0
            .as_ref()
            .is_none_or(|closed| !closed.load(Ordering::SeqCst))
    }
}

/// Two plans are equal when they share one workload (or neither has one).
impl PartialEq for Workload {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for Workload {}

pub use crate::job_slot::JOBS_AT_ONCE_MAX;

impl WorkerPlan {
    /// Asserts the plan's bounds: at most [`JOBS_MAX`] jobs, between 1 and
    /// [`JOBS_AT_ONCE_MAX`] at once.
    pub fn check(&self) {
        assert!(
            self.jobs.len() <= JOBS_MAX,
            "a plan holds at most {JOBS_MAX} jobs"
        );
        assert!(
            (1..=JOBS_AT_ONCE_MAX).contains(&self.jobs_at_once),
            "a worker runs 1 to {JOBS_AT_ONCE_MAX} jobs at once, not {}",
            self.jobs_at_once
        );
    }

    /// The history name of slot `slot` of worker `worker` under this plan:
    /// the worker's own name when it runs one job at a time.
    pub fn slot_name(&self, worker: &str, slot: usize) -> String {
        if self.jobs_at_once > 1 {
            redfence_history::names::task_name(worker, slot)
        } else {
            worker.to_owned()
        }
    }

    /// The jobs slot `slot` runs, in order: every `jobs_at_once`-th job
    /// from the slot's own index, so jobs start in plan order as the slots
    /// start together; none once the workload is closed (asked as each job
    /// is about to start).
    pub fn slot_jobs(&self, slot: usize) -> impl Iterator<Item = &JobSpec> {
        self.jobs
            .iter()
            .skip(slot)
            .step_by(self.jobs_at_once.max(1))
            .take_while(|_| self.workload.is_open())
    }
}

fn outcome_of(error: &StepError) -> Outcome {
    match error {
        StepError::Failed(why) => Outcome::Fail(why.clone()),
        StepError::Indeterminate(why) => Outcome::Indeterminate(why.clone()),
    }
}

/// Runs `plan` for the worker in `env`, recording every step: one session
/// per job slot (`sessions.len() == plan.jobs_at_once`), the slots' flows
/// side by side in the worker's task.
pub async fn run_worker(
    env: WorkerEnv,
    sessions: Vec<Box<dyn Session>>,
    recorder: Recorder,
    probe: Probe,
    plan: WorkerPlan,
) {
    plan.check();
    assert_eq!(
        sessions.len(),
        plan.jobs_at_once,
        "one session per job slot"
    );
    // The store must know the resource; creating it is idempotent and not
    // part of the protocol under test, so it is not recorded.
    if let Ok(name) = redfence_core::ResourceName::new(plan.resource.as_str()) {
        let _ = env.store.ensure_resource(&name).await;
    }
    let flows = sessions.into_iter().enumerate().map(|(slot, session)| {
        let env = WorkerEnv {
            name: plan.slot_name(&env.name, slot),
            ..env.clone()
        };
        let (recorder, probe, plan) = (recorder.clone(), probe.clone(), plan.clone());
        let flow: crate::job_slot::SlotFuture<'_, ()> =
            Box::pin(crate::job_slot::scope(Some(slot), async move {
                run_slot(env, session, recorder, probe, plan, slot).await;
            }));
        flow
    });
    crate::job_slot::join_all(flows.collect()).await;
    probe.set(Phase::Done);
}

/// One job slot's jobs, one after another.
async fn run_slot(
    env: WorkerEnv,
    mut session: Box<dyn Session>,
    recorder: Recorder,
    probe: Probe,
    plan: WorkerPlan,
    slot: usize,
) {
    plan.waits_for.wait().await;
    for (nth, job) in plan.slot_jobs(slot).enumerate() {
        if plan.start_delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(plan.start_delay_ms)).await;
        }
        plan.hold.before(slot + nth * plan.jobs_at_once).await;
        plan.opens.open();
        let stat = process(&env, session.as_mut(), &recorder, &probe, &plan, job).await;
        recorder.report(&env.name, Some(&job.job_id), stat.report);
        probe.stat(stat);
        probe.set(Phase::Idle);
    }
}

/// One job through the flow; returns its statistics (with the report).
async fn process(
    env: &WorkerEnv,
    session: &mut dyn Session,
    recorder: &Recorder,
    probe: &Probe,
    plan: &WorkerPlan,
    job: &JobSpec,
) -> JobStat {
    let name = env.name.as_str();
    let mut stat = JobStat {
        job_id: job.job_id.clone(),
        attempts: 0,
        wait_ms: None,
        report: JobReport::Failed,
    };
    probe.set(Phase::Acquiring);
    let started_ms = env.clock.now_ms();
    let mut held: Option<(Held, u64)> = None;
    // Bounded by the plan's attempts.
    for attempt in 0..plan.backoff.attempts_max {
        stat.attempts = attempt + 1;
        let owner = session.next_owner();
        let op = recorder.invoke(name, Some(&owner), OpKind::Acquire);
        let invoked_ms = env.clock.now_ms();
        match session.acquire(&plan.resource, &owner).await {
            Ok(Acquire::Acquired(h)) => {
                let fence = h.fence;
                recorder.complete(op, Outcome::Ok(OkValue::Acquired { fence }));
                held = Some((h, invoked_ms));
                break;
            }
            Ok(Acquire::Contended) => {
                recorder.complete(op, Outcome::Ok(OkValue::Contended));
                let window_ms =
                    backoff_window_ms(plan.backoff.base_ms, plan.backoff.cap_ms, attempt);
                let pause_ms = if plan.backoff.jitter {
                    env.jitter.draw_ms(window_ms)
                } else {
                    window_ms
                };
                tokio::time::sleep(Duration::from_millis(pause_ms)).await;
            }
            Err(error @ StepError::Failed(_)) => {
                recorder.complete(op, outcome_of(&error));
                return stat;
            }
            Err(StepError::Indeterminate(why)) => {
                // Fail closed: we may hold the lease, but we cannot know, so
                // nothing is written; the lease expires on its own.
                recorder.give_up(op, why);
                return stat;
            }
        }
    }
    let Some((held, acquired_ms)) = held else {
        stat.report = JobReport::RetryLater;
        return stat;
    };
    stat.wait_ms = Some(env.clock.now_ms().saturating_sub(started_ms));
    probe.set(Phase::Holding);
    let lost = hold(env, session, recorder, &held, acquired_ms, job.work_ms).await;
    if !lost {
        probe.set(Phase::Writing);
        stat.report = write(env, session, recorder, &held, &job.job_id).await;
    } else {
        stat.report = JobReport::OwnershipLost;
    }
    probe.set(Phase::Releasing);
    let op = recorder.invoke(name, Some(&held.owner), OpKind::Release);
    match session.release(&held).await {
        Ok(deleted) => recorder.complete(op, Outcome::Ok(OkValue::Released(deleted))),
        Err(StepError::Indeterminate(why)) => recorder.give_up(op, why),
        Err(error) => recorder.complete(op, outcome_of(&error)),
    }
    stat
}

/// Works for `work_ms` while renewing by the session's policy, in this task.
/// Returns whether a renewal learned that the lease is gone.
async fn hold(
    env: &WorkerEnv,
    session: &mut dyn Session,
    recorder: &Recorder,
    held: &Held,
    acquired_ms: u64,
    work_ms: u64,
) -> bool {
    let policy = session.renewal();
    assert!(policy.interval_ms > 0, "a renewal interval of 0 would spin");
    let work = tokio::time::sleep(Duration::from_millis(work_ms));
    tokio::pin!(work);
    let mut renewals: u32 = 0;
    let mut renewing = true;
    let mut lost = false;
    // Bounded: the work ends after `work_ms`; each turn waits an interval.
    loop {
        let next = tokio::time::sleep(Duration::from_millis(policy.interval_ms));
        tokio::select! {
            // Biased toward the work: a worker that wakes from a pause with
            // its job done writes at once, as a real process would; only
            // the store's fence check can stop that write.
            biased;
            _ = &mut work => return lost,
            _ = next, if renewing => {}
        }
        let elapsed_ms = env.clock.now_ms().saturating_sub(acquired_ms);
        let hold_left_ms = policy.hold_ms_max.map(|h| h.saturating_sub(elapsed_ms));
        let count_left = policy.renewals_max.is_none_or(|max| renewals < max);
        if !count_left || hold_left_ms == Some(0) {
            // The limit: let the lease run out rather than hold forever.
            renewing = false;
            continue;
        }
        let lease_ms = hold_left_ms.map_or(policy.lease_ms, |left| left.min(policy.lease_ms));
        let op = recorder.invoke(&env.name, Some(&held.owner), OpKind::Renew);
        match session.renew(held, lease_ms).await {
            Ok(true) => {
                renewals += 1;
                recorder.complete(op, Outcome::Ok(OkValue::Renewed));
            }
            Ok(false) => {
                recorder.complete(op, Outcome::Ok(OkValue::RenewLost));
                lost = true;
                renewing = false;
            }
            Err(StepError::Indeterminate(why)) => recorder.give_up(op, why),
            Err(error) => recorder.complete(op, outcome_of(&error)),
        }
    }
}

/// The protected write; returns the report it leads to.
async fn write(
    env: &WorkerEnv,
    session: &mut dyn Session,
    recorder: &Recorder,
    held: &Held,
    job_id: &str,
) -> JobReport {
    let fence = held.fence.unwrap_or(0);
    let kind = OpKind::Write {
        fence,
        job_id: Some(job_id.to_owned()),
    };
    let op = recorder.invoke(&env.name, Some(&held.owner), kind);
    let value = format!("{} applied {job_id} under fence {fence}", env.name);
    match session.write(held, job_id, &value).await {
        Ok(WriteResult::Applied) => {
            recorder.complete(op, Outcome::Ok(OkValue::WriteAccepted));
            JobReport::Success
        }
        Ok(WriteResult::AlreadyDone) => {
            recorder.complete(op, Outcome::Ok(OkValue::AlreadyDone));
            JobReport::AlreadyDone
        }
        Ok(WriteResult::Stale { last_fence }) => {
            recorder.complete(op, Outcome::Ok(OkValue::WriteStale { last_fence }));
            JobReport::OwnershipLost
        }
        Ok(WriteResult::NotFound) => {
            recorder.complete(op, Outcome::Ok(OkValue::WriteNotFound));
            JobReport::Failed
        }
        Err(StepError::Indeterminate(why)) => {
            recorder.give_up(op, why);
            JobReport::Failed
        }
        Err(error) => {
            recorder.complete(op, outcome_of(&error));
            JobReport::Failed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_gate_and_a_job_hold_hold_their_waiter_until_opened_and_no_longer_than_the_bound() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a runtime");
        rt.block_on(async {
            // The default gate is open: a plan without one waits for nothing.
            assert!(StartGate::default().wait_at_most(0).await);
            // A closed gate holds its waiter until another task opens it.
            let gate = StartGate::closed();
            assert!(!gate.is_open());
            let opener = gate.clone();
            let started = std::time::Instant::now();
            let open_later = async move {
                tokio::time::sleep(Duration::from_millis(40)).await;
                opener.open();
            };
            let (opened, ()) = tokio::join!(gate.wait_at_most(5_000), open_later);
            assert!(opened);
            assert!(started.elapsed() >= Duration::from_millis(40));
            // Another waiter at the same, now open, gate passes at once.
            assert!(gate.clone().wait_at_most(0).await);
            // A gate nobody opens lets its waiter go at the bound, shut.
            let shut = StartGate::closed();
            assert!(!shut.wait_at_most(20).await);
            // A job hold holds its own job only, until the script opens it.
            let hold = JobHold {
                job: 1,
                gate: StartGate::closed(),
            };
            let started = std::time::Instant::now();
            hold.before(0).await;
            assert!(started.elapsed() < Duration::from_millis(1_000));
            let opener = hold.gate.clone();
            let open_later = async move {
                tokio::time::sleep(Duration::from_millis(30)).await;
                opener.open();
            };
            let started = std::time::Instant::now();
            let ((), ()) = tokio::join!(hold.before(1), open_later);
            assert!(started.elapsed() >= Duration::from_millis(30));
            // One gate, cloned, is equal to itself and to no other.
            assert_eq!(gate, gate.clone());
            assert_ne!(gate, shut);
            assert_ne!(gate, StartGate::default());
        });
    }

    fn plan(workload: Workload, jobs_at_once: usize) -> WorkerPlan {
        WorkerPlan {
            resource: "r".to_owned(),
            jobs: (0..6)
                .map(|n| JobSpec {
                    job_id: format!("job-{n}"),
                    work_ms: 1,
                })
                .collect(),
            backoff: Backoff {
                base_ms: 1,
                cap_ms: 1,
                attempts_max: 1,
                jitter: false,
            },
            start_delay_ms: 0,
            jobs_at_once,
            workload,
            opens: StartGate::default(),
            waits_for: StartGate::default(),
            hold: JobHold::default(),
        }
    }

    #[test]
    fn no_job_starts_once_the_workload_is_closed() {
        let workload = Workload::closable();
        let plan = plan(workload.clone(), 2);
        let mut slot0 = plan.slot_jobs(0);
        let mut slot1 = plan.slot_jobs(1);
        assert_eq!(slot0.next().map(|j| j.job_id.as_str()), Some("job-0"));
        assert_eq!(slot1.next().map(|j| j.job_id.as_str()), Some("job-1"));
        assert_eq!(slot0.next().map(|j| j.job_id.as_str()), Some("job-2"));
        workload.close();
        assert!(!workload.is_open());
        assert_eq!(slot0.next(), None, "closed: no next job");
        assert_eq!(slot1.next(), None, "closed for every slot");
    }

    #[test]
    fn a_plan_without_a_closable_workload_runs_every_job() {
        let plan = plan(Workload::default(), 1);
        assert_eq!(plan.slot_jobs(0).count(), 6);
        assert_eq!(plan, plan.clone(), "clones share the workload");
        assert_ne!(
            super::tests::plan(Workload::closable(), 1),
            super::tests::plan(Workload::closable(), 1),
            "two closable workloads are two"
        );
    }
}
