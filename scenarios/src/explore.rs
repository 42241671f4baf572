//! Exploration: random fault schedules thrown at a protocol, and the
//! smallest schedule that still breaks it.
//!
//! A [`Schedule`] is a world seed plus timed fault windows (pause, partition,
//! lost replies, latency, Redis restart, failover, crash). The
//! `random-faults` scenario ([`RandomFaults`]) plays one against three
//! workers; [`explore`] generates schedules with proptest and, on the first
//! one that makes the protocol violate a property, lets proptest **shrink**
//! it — fewer faults, shorter windows, earlier times. proptest's shrinking
//! is a heuristic, so [`minimize`] then makes the schedule **1-minimal**:
//! dropping any one fault, or shortening any one window by a millisecond,
//! makes the failure go away; the schedule is kept in time order. A schedule
//! has a one-line text form, so every finding replays with
//! `redfence replay random-faults --seed S --schedule '…'`.
//!
//! The generator is seeded: the same exploration seed tries the same
//! schedules in the same order. [`explore_parallel`] runs one exploration
//! seed per thread (consecutive seeds), stops them all at the first finding,
//! and reports progress.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use redfence_core::FenceSourceKind;

use crate::catalog::{jobs, plan, settle};
use crate::names;
use crate::property::Property;
use crate::protocol::Protocol;
use crate::run::{run_one, RunRecord, WorldFactory};
use crate::scenario::{Param, Scenario, ScenarioError, Setup};
use crate::stage::Stage;
use crate::world::{worker_name, Fault, WorldError};

/// Workers in `random-faults`.
pub const WORKERS: usize = 3;
/// Most fault windows in one schedule.
pub const FAULTS_MAX: usize = 8;
/// Faults start within this window from the run's start.
pub const WINDOW_MS: u64 = 4_000;
/// Longest one fault window lasts.
pub const FAULT_MS_MAX: u64 = 2_500;
/// Jobs per worker: they run past the fault window, so the run ends healthy.
const JOBS: usize = 10;
/// Work inside the critical section.
const WORK_MS: u64 = 150;
/// Pause before each job.
const GAP_MS: u64 = 300;

/// What one fault window does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// Stop-the-world pause of a worker.
    Pause,
    /// Partition a worker from Redis.
    PartitionRedis,
    /// Partition a worker from the store.
    PartitionStore,
    /// Lose Redis's replies to a worker.
    DropRedisReplies,
    /// Lose the store's replies to a worker.
    DropStoreReplies,
    /// Slow a worker's Redis path by `latency_ms` each way.
    Latency {
        /// Added latency.
        latency_ms: u64,
    },
    /// Redis primary down, then restarted empty.
    RestartRedis,
    /// Replication cut, then the primary dies and the replica takes over
    /// (the window is how long replication was cut first).
    FailOver,
    /// A worker crashes for good (the window is ignored).
    Crash,
}

impl FaultKind {
    fn name(self) -> &'static str {
        match self {
            FaultKind::Pause => "pause",
            FaultKind::PartitionRedis => "partition-redis",
            FaultKind::PartitionStore => "partition-store",
            FaultKind::DropRedisReplies => "drop-redis-replies",
            FaultKind::DropStoreReplies => "drop-store-replies",
            FaultKind::Latency { .. } => "latency",
            FaultKind::RestartRedis => "restart-redis",
            FaultKind::FailOver => "fail-over",
            FaultKind::Crash => "crash",
        }
    }

    fn targets_worker(self) -> bool {
        !matches!(self, FaultKind::RestartRedis | FaultKind::FailOver)
    }
}

/// One timed fault window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultWindow {
    /// When it starts.
    pub at_ms: u64,
    /// How long it lasts.
    pub for_ms: u64,
    /// The worker it hits (ignored by whole-world faults).
    pub worker: usize,
    /// What it does.
    pub kind: FaultKind,
}

/// A world seed and fault windows. Text form (what replay lines carry):
/// `300 pause w0 1200; 900 latency=80 w1 400; 2000 fail-over 300`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Schedule {
    /// The fault windows, in any order.
    pub faults: Vec<FaultWindow>,
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .faults
            .iter()
            .map(|w| {
                let kind = match w.kind {
                    FaultKind::Latency { latency_ms } => format!("latency={latency_ms}"),
                    other => other.name().to_owned(),
                };
                if w.kind.targets_worker() {
                    format!("{} {kind} {} {}", w.at_ms, worker_name(w.worker), w.for_ms)
                } else {
                    format!("{} {kind} {}", w.at_ms, w.for_ms)
                }
            })
            .collect();
        f.write_str(&parts.join("; "))
    }
}

/// A schedule text that does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "bad schedule entry {entry:?}: {why} (expected e.g. \"300 pause w0 1200; 2000 fail-over 300\")"
)]
pub struct ScheduleError {
    /// The entry.
    pub entry: String,
    /// What is wrong with it.
    pub why: String,
}

impl FromStr for Schedule {
    type Err = ScheduleError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut faults = Vec::new();
        for entry in text.split(';').map(str::trim).filter(|e| !e.is_empty()) {
            let bad = |why: &str| ScheduleError {
                entry: entry.to_owned(),
                why: why.to_owned(),
            };
            let words: Vec<&str> = entry.split_whitespace().collect();
            let number = |word: Option<&&str>, what: &str| -> Result<u64, ScheduleError> {
                word.ok_or_else(|| bad(&format!("missing {what}")))?
                    .parse()
                    .map_err(|_| bad(&format!("{what} is not a number")))
            };
            let at_ms = number(words.first(), "start time (ms)")?;
            let kind_word = words.get(1).ok_or_else(|| bad("missing fault kind"))?;
            let kind = match *kind_word {
                "pause" => FaultKind::Pause,
                "partition-redis" => FaultKind::PartitionRedis,
                "partition-store" => FaultKind::PartitionStore,
                "drop-redis-replies" => FaultKind::DropRedisReplies,
                "drop-store-replies" => FaultKind::DropStoreReplies,
                "restart-redis" => FaultKind::RestartRedis,
                "fail-over" => FaultKind::FailOver,
                "crash" => FaultKind::Crash,
                other => match other.strip_prefix("latency=") {
                    Some(ms) => FaultKind::Latency {
                        latency_ms: ms.parse().map_err(|_| bad("latency is not a number"))?,
                    },
                    None => return Err(bad("unknown fault kind")),
                },
            };
            let (worker, rest) = if kind.targets_worker() {
                let word = words
                    .get(2)
                    .ok_or_else(|| bad("missing worker (w0, w1, …)"))?;
                let worker: usize = word
                    .strip_prefix('w')
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n < WORKERS)
                    .ok_or_else(|| bad(&format!("worker must be w0..w{}", WORKERS - 1)))?;
                (worker, 3)
            } else {
                (0, 2)
            };
            let for_ms = number(words.get(rest), "duration (ms)")?;
            if words.len() > rest + 1 {
                return Err(bad("unexpected words after the duration"));
            }
            if at_ms > WINDOW_MS * 10 || for_ms > FAULT_MS_MAX * 10 {
                return Err(bad("time out of range"));
            }
            faults.push(FaultWindow {
                at_ms,
                for_ms,
                worker,
                kind,
            });
        }
        if faults.len() > FAULTS_MAX * 4 {
            return Err(ScheduleError {
                entry: text.to_owned(),
                why: format!("more than {} faults", FAULTS_MAX * 4),
            });
        }
        Ok(Self { faults })
    }
}

/// The `random-faults` scenario: one [`Schedule`] against three workers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RandomFaults {
    /// The faults to play.
    pub schedule: Schedule,
}

impl RandomFaults {
    /// Whether the schedule fails over (the world then has a replica).
    fn fails_over(&self) -> bool {
        self.schedule
            .faults
            .iter()
            .any(|w| w.kind == FaultKind::FailOver)
    }

    /// The timed begin/end faults of the schedule, in time order (stable).
    fn timeline(&self) -> Vec<(u64, Vec<Fault>)> {
        let mut events: Vec<(u64, usize, Vec<Fault>)> = Vec::new();
        for (i, w) in self.schedule.faults.iter().enumerate() {
            let end_ms = w.at_ms + w.for_ms;
            let worker = w.worker;
            let (begin, end) = match w.kind {
                FaultKind::Pause => (
                    vec![Fault::PauseWorker(worker)],
                    vec![Fault::ResumeWorker(worker)],
                ),
                FaultKind::PartitionRedis => (
                    vec![Fault::PartitionRedis(worker)],
                    vec![Fault::HealRedis(worker)],
                ),
                FaultKind::PartitionStore => (
                    vec![Fault::PartitionStore(worker)],
                    vec![Fault::HealStore(worker)],
                ),
                FaultKind::DropRedisReplies => (
                    vec![Fault::DropRedisReplies(worker)],
                    vec![Fault::RestoreRedisReplies(worker)],
                ),
                FaultKind::DropStoreReplies => (
                    vec![Fault::DropStoreReplies(worker)],
                    vec![Fault::RestoreStoreReplies(worker)],
                ),
                FaultKind::Latency { latency_ms } => (
                    vec![Fault::RedisLatency { worker, latency_ms }],
                    vec![Fault::RedisLatency {
                        worker,
                        latency_ms: 0,
                    }],
                ),
                FaultKind::RestartRedis => (vec![Fault::StopRedis], vec![Fault::RestartRedis]),
                FaultKind::FailOver => (vec![Fault::CutReplication], vec![Fault::FailOver]),
                FaultKind::Crash => (vec![Fault::CrashWorker(worker)], vec![]),
            };
            events.push((w.at_ms, 2 * i, begin));
            if !end.is_empty() {
                events.push((end_ms, 2 * i + 1, end));
            }
        }
        events.sort_by_key(|(at, order, _)| (*at, *order));
        events.into_iter().map(|(at, _, f)| (at, f)).collect()
    }
}

impl Scenario for RandomFaults {
    fn name(&self) -> &'static str {
        names::scenario::RANDOM_FAULTS
    }

    fn describe(&self) -> &'static str {
        "Three workers process ten jobs each while a schedule of random faults plays: \
         pauses, partitions from Redis or the store, lost replies, latency, a Redis \
         restart, a failover, a crash. Fences come from \
         the durable store counter. \
         Every property must hold; exploration shrinks a failing schedule to a minimal one."
    }

    fn targets(&self) -> &'static [Property] {
        &Property::ALL
    }

    fn setup(&self) -> Setup {
        let mut setup = Setup {
            workers: WORKERS,
            replica: self.fails_over(),
            fence_source: FenceSourceKind::Store,
            ..Setup::default()
        };
        setup.backoff.attempts_max = 60;
        setup
    }

    fn params(&self) -> Vec<Param> {
        vec![
            Param::new(
                crate::record::SCHEDULE_PARAM,
                &self.schedule,
                "the fault windows played",
            ),
            Param::new("jobs-per-worker", JOBS, "jobs each worker processes"),
            Param::new("work-ms", WORK_MS, "work inside the critical section"),
            Param::new("gap-ms", GAP_MS, "pause before each job"),
        ]
    }

    fn replay_schedule(&self) -> Option<String> {
        Some(self.schedule.to_string())
    }

    fn run(&self, stage: &mut Stage<'_>) -> Result<(), ScenarioError> {
        let setup = self.setup();
        for worker in 0..WORKERS {
            stage.spawn(worker, plan(&setup, jobs(worker, JOBS, WORK_MS), GAP_MS))?;
        }
        let mut failed_over = false;
        for (at_ms, faults) in self.timeline() {
            let now_ms = stage.now_ms();
            if at_ms > now_ms {
                stage.run_for(at_ms - now_ms)?;
            }
            for fault in faults {
                // One failover per run: the world has one replica.
                if fault == Fault::FailOver || fault == Fault::CutReplication {
                    if failed_over {
                        continue;
                    }
                    failed_over |= fault == Fault::FailOver;
                }
                match stage.fault(fault) {
                    Ok(()) | Err(WorldError::Unsupported { .. }) => {}
                    Err(other) => return Err(other.into()),
                }
            }
        }
        // Every window has closed by now (each pause has its resume).
        settle(stage)
    }
}

/// A schedule generator.
pub fn schedules() -> impl Strategy<Value = Schedule> {
    let kind = prop_oneof![
        3 => Just(FaultKind::Pause),
        2 => Just(FaultKind::PartitionRedis),
        2 => Just(FaultKind::PartitionStore),
        2 => Just(FaultKind::DropRedisReplies),
        2 => Just(FaultKind::DropStoreReplies),
        1 => (10_u64..400).prop_map(|latency_ms| FaultKind::Latency { latency_ms }),
        1 => Just(FaultKind::RestartRedis),
        1 => Just(FaultKind::FailOver),
        1 => Just(FaultKind::Crash),
    ];
    let window = (0..WINDOW_MS, 1..FAULT_MS_MAX, 0..WORKERS, kind).prop_map(
        |(at_ms, for_ms, worker, kind)| FaultWindow {
            at_ms,
            for_ms,
            worker,
            kind,
        },
    );
    prop::collection::vec(window, 0..=FAULTS_MAX).prop_map(|faults| Schedule { faults })
}

/// What exploration found.
#[derive(Clone, Debug)]
pub struct Exploration {
    /// Schedules tried (not counting shrink steps).
    pub cases: u64,
    /// The minimal failing schedule and its run, if one failed.
    pub found: Option<Found>,
}

/// A failing schedule, shrunk.
#[derive(Clone, Debug)]
pub struct Found {
    /// The world seed it fails with.
    pub seed: u64,
    /// The minimal schedule.
    pub schedule: Schedule,
    /// Its run (history, verdicts, replay line).
    pub record: RunRecord,
    /// Faults in the first failing schedule, before shrinking.
    pub faults_before_shrinking: usize,
    /// Whether `schedule` is proven 1-minimal and in time order (false when
    /// [`MINIMIZE_RUNS_MAX`] ran out first, or when time order lost the
    /// failure).
    pub minimal: bool,
    /// The properties shrinking kept to: the first failing run's violated
    /// ones. A candidate "still fails" when it violates one of these (the
    /// shrunk run may violate others besides); minimality is about them.
    pub target: Vec<Property>,
}

/// What `progress` is called with after each run while a finding is
/// being shrunk (otherwise it gets the number of schedules tried).
pub const SHRINKING: u64 = u64::MAX;

/// Calls its function when dropped: after a run, however it ended.
struct Defer<'a>(&'a dyn Fn());

impl Drop for Defer<'_> {
    fn drop(&mut self) {
        (self.0)();
    }
}

/// How long or how much to explore.
#[derive(Clone, Copy, Debug)]
pub enum Budget {
    /// Stop after this many schedules.
    Cases(u32),
    /// Stop once this much wall time has passed (shrinking may go beyond).
    Time(Duration),
}

/// Explores `protocol` with schedules from exploration seed `seed`.
pub fn explore(
    worlds: &dyn WorldFactory,
    protocol: Arc<dyn Protocol>,
    seed: u64,
    budget: Budget,
) -> Exploration {
    explore_until(
        worlds,
        protocol,
        seed,
        budget,
        &AtomicBool::new(false),
        &|_| {},
    )
}

/// Most threads [`explore_parallel`] starts.
pub const EXPLORE_JOBS_MAX: usize = 256;

/// Explores on `jobs` threads, thread `i` with exploration seed `seed + i`
/// and its share of `budget`; every thread stops at the first finding (or
/// when the budget is spent), and the finding is made 1-minimal. `progress`
/// is called with the schedules tried so far, after each, and with
/// [`SHRINKING`] after each run of the shrinking that follows a finding.
pub fn explore_parallel(
    worlds: &dyn WorldFactory,
    protocol: Arc<dyn Protocol>,
    seed: u64,
    jobs: usize,
    budget: Budget,
    progress: &(dyn Fn(u64) + Sync),
) -> Exploration {
    let jobs = jobs.clamp(1, EXPLORE_JOBS_MAX);
    let stop = AtomicBool::new(false);
    let tried = AtomicU64::new(0);
    let results: Vec<Exploration> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..jobs)
            .map(|i| {
                let share = match budget {
                    Budget::Cases(n) => {
                        // The first `n % jobs` threads take one case more.
                        let extra = u32::from(i < (n as usize % jobs));
                        Budget::Cases(n / jobs as u32 + extra)
                    }
                    time => time,
                };
                let protocol = protocol.clone();
                let (stop, tried) = (&stop, &tried);
                scope.spawn(move || {
                    let tick = |n: u64| {
                        if n == SHRINKING {
                            progress(SHRINKING);
                        } else {
                            progress(tried.fetch_add(1, Ordering::Relaxed) + 1);
                        }
                    };
                    explore_until(
                        worlds,
                        protocol,
                        seed.wrapping_add(i as u64),
                        share,
                        stop,
                        &tick,
                    )
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("an exploration thread panicked"))
            .collect()
    });
    let cases = results.iter().map(|r| r.cases).sum();
    // The first thread's finding among those that found one; which threads
    // find anything before the others stop depends on timing.
    let found = results.into_iter().find_map(|r| r.found);
    Exploration { cases, found }
}

/// [`explore`], stopping early when `stop` is set (and setting it on a
/// finding), calling `tick` after each schedule tried.
fn explore_until(
    worlds: &dyn WorldFactory,
    protocol: Arc<dyn Protocol>,
    seed: u64,
    budget: Budget,
    stop: &AtomicBool,
    tick: &dyn Fn(u64),
) -> Exploration {
    let cases = match budget {
        Budget::Cases(n) => n,
        Budget::Time(_) => u32::MAX,
    };
    let config = Config {
        cases,
        failure_persistence: None,
        max_global_rejects: 0,
        max_shrink_iters: 512,
        ..Config::default()
    };
    let mut seed_bytes = [0_u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        config,
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes),
    );
    let started = Instant::now();
    let tried = AtomicU64::new(0);
    let found = AtomicBool::new(false);
    let first_faults = Mutex::new(0_usize);
    // The properties the first failing run violated: shrinking keeps to
    // them, so it never wanders off to another bug.
    let target: Mutex<Option<Vec<Property>>> = Mutex::new(None);
    // The world seed of each case comes with the schedule, so a shrunk
    // schedule keeps failing in the same world.
    let strategy = (any::<u32>(), schedules());
    let result = runner.run(&strategy, |(world_seed, schedule)| {
        if !found.load(Ordering::Relaxed) {
            if stop.load(Ordering::Relaxed) {
                return Err(TestCaseError::reject("another thread found a failure"));
            }
            if let Budget::Time(limit) = budget {
                if started.elapsed() > limit {
                    return Err(TestCaseError::reject("time budget spent"));
                }
            }
            tick(tried.fetch_add(1, Ordering::Relaxed) + 1);
        }
        let faults = schedule.faults.len();
        let record = run_one(
            worlds,
            &RandomFaults { schedule },
            protocol.clone(),
            u64::from(world_seed),
        );
        let fails = {
            let mut target = target.lock().unwrap_or_else(|e| e.into_inner());
            match target.as_ref() {
                None => record.failed(),
                Some(t) if t.is_empty() => record.failed(),
                Some(t) => record.violated().iter().any(|p| t.contains(p)),
            }
            .then(|| {
                target.get_or_insert_with(|| record.violated());
            })
            .is_some()
        };
        if fails {
            if !found.swap(true, Ordering::Relaxed) {
                stop.store(true, Ordering::Relaxed);
                *first_faults.lock().unwrap_or_else(|e| e.into_inner()) = faults;
            }
            return Err(TestCaseError::fail(record.replay.clone()));
        }
        Ok(())
    });
    let cases = tried.load(Ordering::Relaxed);
    match result {
        Err(TestError::Fail(_, (world_seed, schedule))) => {
            let seed = u64::from(world_seed);
            let shrunk = || tick(SHRINKING);
            let (schedule, record, minimal, target) =
                minimize_to(worlds, protocol, seed, schedule, &shrunk);
            Exploration {
                cases,
                found: Some(Found {
                    seed,
                    schedule,
                    record,
                    faults_before_shrinking: *first_faults
                        .lock()
                        .unwrap_or_else(|e| e.into_inner()),
                    minimal,
                    target,
                }),
            }
        }
        _ => Exploration { cases, found: None },
    }
}

/// Most runs [`minimize`] makes (a bound on shrinking; a schedule of
/// [`FAULTS_MAX`] windows needs far fewer).
pub const MINIMIZE_RUNS_MAX: u32 = 4_000;

/// Makes a failing `schedule` 1-minimal in world `seed`: it still fails,
/// with a property it violated at the start (so shrinking never wanders off
/// to another bug), and dropping any one fault or shortening any one window
/// by a millisecond makes that failure go away. The result is in time order.
/// Returns the schedule, its run, and whether both claims hold (false when
/// [`MINIMIZE_RUNS_MAX`] ran out first, or when putting the faults in time
/// order lost the failure — equal start times are played in list order).
pub fn minimize(
    worlds: &dyn WorldFactory,
    protocol: Arc<dyn Protocol>,
    seed: u64,
    schedule: Schedule,
) -> (Schedule, RunRecord, bool) {
    let (schedule, record, minimal, _) = minimize_to(worlds, protocol, seed, schedule, &|| {});
    (schedule, record, minimal)
}

/// [`minimize`], also answering the properties it kept to (see
/// [`Found::target`]), and calling `after_run` after each run (so a
/// watchdog sees shrinking make progress).
fn minimize_to(
    worlds: &dyn WorldFactory,
    protocol: Arc<dyn Protocol>,
    seed: u64,
    schedule: Schedule,
    after_run: &dyn Fn(),
) -> (Schedule, RunRecord, bool, Vec<Property>) {
    let run = |schedule: &Schedule| {
        let _ran = Defer(after_run);
        run_one(
            worlds,
            &RandomFaults {
                schedule: schedule.clone(),
            },
            protocol.clone(),
            seed,
        )
    };
    let first = run(&schedule);
    let target = first.violated();
    // A run that broke without a violated property (an error) is matched by
    // failing at all.
    let fails = |record: &RunRecord| {
        if target.is_empty() {
            record.failed()
        } else {
            record.violated().iter().any(|p| target.contains(p))
        }
    };
    if !fails(&first) {
        return (schedule, first, false, target);
    }
    let mut best = (schedule, first);
    let runs = std::cell::Cell::new(1_u32);
    let try_candidate = |candidate: Schedule, best: &mut (Schedule, RunRecord)| -> bool {
        if runs.get() >= MINIMIZE_RUNS_MAX {
            return false;
        }
        runs.set(runs.get() + 1);
        let record = run(&candidate);
        if fails(&record) {
            *best = (candidate, record);
            true
        } else {
            false
        }
    };
    // Time order first, so every later candidate keeps it.
    let mut sorted = best.0.clone();
    sorted.faults.sort_by_key(|w| w.at_ms);
    if sorted != best.0 {
        try_candidate(sorted, &mut best);
    }
    // Bounded: each accepted step removes a fault or shortens a window, and
    // the loop ends when a full pass accepts none (or the run budget ends).
    loop {
        let mut changed = false;
        let mut i = 0;
        while i < best.0.faults.len() {
            let mut candidate = best.0.clone();
            candidate.faults.remove(i);
            if try_candidate(candidate, &mut best) {
                changed = true;
            } else {
                i += 1;
            }
        }
        for i in 0..best.0.faults.len() {
            if best.0.faults[i].kind == FaultKind::Crash {
                continue; // its window is ignored
            }
            // Binary search for the shortest window that still fails, then
            // make sure one millisecond less does not.
            let (mut low, mut high) = (1_u64, best.0.faults[i].for_ms);
            while low < high {
                let mid = low + (high - low) / 2;
                let mut candidate = best.0.clone();
                candidate.faults[i].for_ms = mid;
                if try_candidate(candidate, &mut best) {
                    high = mid;
                    changed = true;
                } else {
                    low = mid + 1;
                }
            }
            while best.0.faults[i].for_ms > 1 {
                let mut candidate = best.0.clone();
                candidate.faults[i].for_ms -= 1;
                if !try_candidate(candidate, &mut best) {
                    break;
                }
                changed = true;
            }
        }
        if !changed || runs.get() >= MINIMIZE_RUNS_MAX {
            break;
        }
    }
    let in_time_order = best.0.faults.windows(2).all(|w| w[0].at_ms <= w[1].at_ms);
    let minimal = in_time_order && runs.get() < MINIMIZE_RUNS_MAX;
    (best.0, best.1, minimal, target)
}
