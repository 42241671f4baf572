//! Two canned workloads of the full redfence stack in the world, shared by
//! the determinism tests and the benchmark (scenarios proper live in
//! `redfence-scenarios`).
//!
//! - [`stale_worker`]: worker 0 takes the lease and is paused past it;
//!   worker 1 takes over and writes; worker 0 resumes and writes with its old
//!   fence, which the store rejects.
//! - [`contention`]: several workers process jobs on one resource while the
//!   world pauses one of them and loses some replies.
//!
//! Each returns the run's full text — trace, Redis ownership log and store
//! fence log — which is what "byte-identical for the same seed" compares.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use redfence_core::{JobId, LockConfig, ProcessOutcome, ResourceName, Worker};

use crate::world::{WorkerCtx, World, WorldBuilder, WorldError};

/// The resource every canned workload contends for.
pub const RESOURCE: &str = "account-7";

/// The outcome of a canned run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunText {
    /// Trace, ownership log and fence log as text.
    pub text: String,
    /// Simulated time the run covered, in milliseconds.
    pub sim_ms: u64,
}

fn resource() -> ResourceName {
    ResourceName::new(RESOURCE)
        .and_then(|r| r.with_type("account"))
        .expect("constant name is valid")
}

/// Runs the job loop of one worker: `jobs` jobs, each one `process` call.
/// `inside` is raised while the worker is in its critical section, so the
/// world can pause it exactly there.
async fn run_jobs(
    ctx: WorkerCtx,
    config: LockConfig,
    jobs: usize,
    work_ms: u64,
    inside: Arc<AtomicBool>,
) {
    let resource = resource();
    let lock = ctx.lock_client(config);
    let worker = Worker::new(lock, Arc::new(ctx.store.clone()));
    // Bounded: `jobs` is the caller's, and each job's acquire is bounded by
    // the lock configuration.
    for job in 0..jobs {
        let job_id = JobId::new(format!("{}-job-{job}", ctx.name)).expect("valid job id");
        let trace = ctx.trace.clone();
        let name = ctx.name.clone();
        let flag = inside.clone();
        let outcome = worker
            .process(&resource, &job_id, |fence| async move {
                trace.record(&name, format!("critical section start fence={fence}"));
                flag.store(true, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(work_ms)).await;
                flag.store(false, Ordering::SeqCst);
                trace.record(&name, format!("critical section end fence={fence}"));
                Ok(format!("{name} job {job} under fence {fence}"))
            })
            .await;
        ctx.log(format!("{job_id}: {}", describe(&outcome)));
    }
}

fn describe(outcome: &ProcessOutcome) -> String {
    match outcome {
        ProcessOutcome::Success { fence } => format!("success fence={fence}"),
        ProcessOutcome::OwnershipLost(why) => format!("ownership-lost {why:?}"),
        ProcessOutcome::Failed(cause) => format!("failed: {cause}"),
        other => other.name().to_owned(),
    }
}

/// The stale-worker workload: lease `lease_ms`, worker 0 paused for 1.5
/// leases inside its critical section — past its lease, and long enough for
/// worker 1 (whose backoff is capped at a tenth of the lease) to acquire and
/// write before worker 0 resumes and writes.
pub fn stale_worker(seed: u64, tick_ms: u64, lease_ms: u64) -> Result<RunText, WorldError> {
    let mut world = WorldBuilder::new(seed)
        .tick_ms(tick_ms)
        .workers(2)
        .build()?;
    world.store().ensure_resource(RESOURCE);
    let config = LockConfig::builder()
        .lease_ms(lease_ms)
        .op_timeout_ms((lease_ms / 4).max(1))
        .acquire_deadline_ms(lease_ms * 4)
        .backoff_base_ms((lease_ms / 20).max(1))
        .backoff_cap_ms((lease_ms / 10).max(1))
        .build()
        .expect("derived from a valid lease");
    let work_ms = lease_ms / 5;
    let c0 = config.clone();
    let inside = Arc::new(AtomicBool::new(false));
    let flag = inside.clone();
    world.spawn_worker(0, move |ctx| run_jobs(ctx, c0, 1, work_ms, flag))?;
    // Stop the world for worker 0 inside its critical section: its write
    // then leaves with a fence that expired during the pause.
    run_until_inside(&mut world, &inside, lease_ms)?;
    world.pause_worker(0)?;
    let idle = Arc::new(AtomicBool::new(false));
    world.spawn_worker(1, move |ctx| run_jobs(ctx, config, 1, work_ms, idle))?;
    world.run_for(Duration::from_millis(lease_ms * 3 / 2))?;
    world.resume_worker(0)?;
    world.run_until_workers_done(Duration::from_millis(lease_ms * 10))?;
    Ok(finish(&world))
}

/// The contention workload: `workers` workers, `jobs` each, on one resource;
/// worker 0 is paused past its lease once, and worker 1 loses its Redis
/// replies for a while.
pub fn contention(seed: u64, workers: usize, jobs: usize) -> Result<RunText, WorldError> {
    Ok(contention_with(seed, workers, jobs, true)?.0)
}

/// [`contention`] with the idle fast path on or off
/// ([`WorldBuilder::idle_fast_path`]); also returns how many host ticks
/// went unpolled.
pub fn contention_with(
    seed: u64,
    workers: usize,
    jobs: usize,
    idle_fast_path: bool,
) -> Result<(RunText, u64), WorldError> {
    let mut world = WorldBuilder::new(seed)
        .workers(workers)
        .idle_fast_path(idle_fast_path)
        .build()?;
    world.store().ensure_resource(RESOURCE);
    let config = LockConfig::builder()
        .lease_ms(300)
        .renew_interval_ms(100)
        .op_timeout_ms(50)
        .acquire_deadline_ms(5_000)
        .attempts_max(1_000)
        .backoff_base_ms(5)
        .backoff_cap_ms(80)
        .build()
        .expect("valid constants");
    for i in 0..workers {
        let c = config.clone();
        let flag = Arc::new(AtomicBool::new(false));
        world.spawn_worker(i, move |ctx| run_jobs(ctx, c, jobs, 20, flag))?;
    }
    world.run_for(Duration::from_millis(30))?;
    world.pause_worker(0)?;
    world.run_for(Duration::from_millis(450))?;
    world.resume_worker(0)?;
    if workers > 1 {
        world.drop_redis_replies(1)?;
        world.run_for(Duration::from_millis(120))?;
        world.restore_redis_replies(1)?;
    }
    world.run_until_workers_done(Duration::from_secs(60))?;
    Ok((finish(&world), world.idle_ticks_unpolled()))
}

/// Steps until `inside` is raised, at most `limit_ms` of simulated time.
fn run_until_inside(
    world: &mut World,
    inside: &AtomicBool,
    limit_ms: u64,
) -> Result<(), WorldError> {
    let step = Duration::from_millis(1);
    let until = world.elapsed() + Duration::from_millis(limit_ms);
    // Bounded by simulated time: every step advances at least one tick.
    while world.elapsed() < until {
        if inside.load(Ordering::SeqCst) {
            return Ok(());
        }
        world.run_for(step)?;
    }
    Err(WorldError::Sim(format!(
        "worker 0 did not reach its critical section within {limit_ms} ms"
    )))
}

/// The run as text: trace, then the two ground-truth logs.
pub fn finish(world: &World) -> RunText {
    let mut text = world.trace().to_text();
    text.push_str("-- redis commands\n");
    for c in world.commands().events() {
        let _ = writeln!(
            text,
            "{:>8}ms {:<10} {:<18} {}",
            c.at_ms, c.server, c.client, c.command
        );
    }
    text.push_str("-- redis ownership log\n");
    for e in world.ownership().events() {
        let _ = writeln!(
            text,
            "{:>8}ms {:<10} {} {:?}",
            e.at_ms, e.server, e.key, e.change
        );
    }
    text.push_str("-- store fence log\n");
    for e in world.store().all_fence_log() {
        let _ = writeln!(
            text,
            "{:>8}ms seq={} {} fence={} owner={} job={:?} {:?}",
            e.at_ms, e.seq, e.resource, e.fence, e.owner, e.job_id, e.outcome
        );
    }
    RunText {
        text,
        sim_ms: world.elapsed().as_millis() as u64,
    }
}
