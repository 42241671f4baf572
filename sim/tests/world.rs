//! The world's promises: the same seed gives the same bytes, and each fault
//! does what it says — with the unchanged redfence-core lock in the loop.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use redfence_core::{
    AcquireOutcome, Attempt, FenceOutcome, FenceSourceKind, FencedStore, FencedWrite, JobId,
    JobOutcome, JobWrite, Lease, LockConfig, LockError, OwnerToken, ResourceName, WriteOutcome,
};
use redfence_sim::redis::OwnershipChange;
use redfence_sim::workload;
use redfence_sim::world::{WorldBuilder, WorldError};

/// Seeds the determinism test covers; the benchmark runs 1,000.
const DETERMINISM_SEEDS: u64 = 200;

fn resource() -> ResourceName {
    ResourceName::new(workload::RESOURCE).unwrap()
}

fn lock_key() -> String {
    format!("lock:{{{}}}", workload::RESOURCE)
}

fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[test]
fn same_seed_gives_a_byte_identical_trace() {
    let mut distinct = std::collections::BTreeSet::new();
    for seed in 0..DETERMINISM_SEEDS {
        let a = workload::contention(seed, 3, 2).unwrap();
        let b = workload::contention(seed, 3, 2).unwrap();
        assert_eq!(a.text, b.text, "seed {seed} diverged between two runs");
        // The workload really contends, pauses and loses replies.
        assert!(a.text.contains("pause w0"), "seed {seed}");
        assert!(a.text.contains("drop replies"), "seed {seed}");
        // The servers' inputs are part of what must repeat.
        assert!(a.text.contains("EVALSHA"), "seed {seed}");
        distinct.insert(fnv(&a.text));
    }
    // Different seeds give different interleavings.
    assert!(
        distinct.len() as u64 > DETERMINISM_SEEDS * 9 / 10,
        "only {} distinct traces in {DETERMINISM_SEEDS} seeds",
        distinct.len()
    );
}

/// The idle fast path (a host with nothing to do is advanced without a poll
/// of its runtime) changes no byte of a run: the trace, the commands the
/// servers ran and the ownership log are those of polling every host every
/// tick. And it is taken: most host ticks of this workload are idle.
#[test]
fn skipping_the_poll_of_idle_hosts_changes_no_byte() {
    let (mut unpolled, mut ticks_fast) = (0, 0);
    for seed in 0..DETERMINISM_SEEDS {
        let (fast, skipped) = workload::contention_with(seed, 3, 2, true).unwrap();
        let (polled, none) = workload::contention_with(seed, 3, 2, false).unwrap();
        assert_eq!(
            fast.text, polled.text,
            "seed {seed}: the fast path changed the run"
        );
        assert_eq!(
            none, 0,
            "seed {seed}: the fast path is off, every tick polls"
        );
        unpolled += skipped;
        ticks_fast += 1;
    }
    assert!(
        unpolled > ticks_fast * 1_000,
        "the fast path was taken {unpolled} times in {ticks_fast} runs"
    );
}

/// Set by the parent test: run one seed and print its trace hash.
const CHILD_SEED_VAR: &str = "REDFENCE_SIM_CHILD_SEED";

#[test]
fn same_seed_gives_the_same_trace_in_another_process() {
    if let Ok(seed) = std::env::var(CHILD_SEED_VAR) {
        let run = workload::contention(seed.parse().unwrap(), 3, 2).unwrap();
        println!("trace-hash={:016x}", fnv(&run.text));
        return;
    }
    for seed in [7_u64, 1234] {
        let here = fnv(&workload::contention(seed, 3, 2).unwrap().text);
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "same_seed_gives_the_same_trace_in_another_process",
                "--exact",
                "--nocapture",
            ])
            .env(CHILD_SEED_VAR, seed.to_string())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let expected = format!("trace-hash={here:016x}");
        assert!(
            stdout.contains(&expected),
            "seed {seed}: child printed {stdout:?}, expected {expected}"
        );
    }
}

#[test]
fn stale_worker_is_rejected_by_the_sim_store() {
    let run = workload::stale_worker(42, 1, 300).unwrap();
    let text = &run.text;
    assert!(
        text.contains("w1-job-0: success fence=2"),
        "B takes over with a newer fence:\n{text}"
    );
    assert!(
        text.contains("w0-job-0: ownership-lost FenceRejected"),
        "A's write is rejected, and A says so:\n{text}"
    );
    assert!(text.contains("fence=1") && text.contains("Stale"), "{text}");
}

fn config() -> LockConfig {
    LockConfig::builder()
        .lease_ms(300)
        .renew_interval_ms(100)
        .op_timeout_ms(50)
        .backoff_base_ms(5)
        .backoff_cap_ms(20)
        .build()
        .unwrap()
}

type Slot<T> = Arc<Mutex<Option<T>>>;

fn slot<T>() -> Slot<T> {
    Arc::new(Mutex::new(None))
}

/// Worker 0 connects (acquire + release on another resource, so later
/// requests reach the server), waits 100 ms — the test injects its faults
/// meanwhile — then makes one acquire attempt with re-asks disabled and
/// records the owner token and the result.
fn spawn_connected_attempt(
    world: &mut redfence_sim::world::World,
    seen: Slot<Result<Attempt, LockError>>,
    owner_seen: Slot<OwnerToken>,
) -> Result<(), WorldError> {
    world.spawn_worker(0, move |ctx| async move {
        // Re-asks disabled: a lost reply stays unknown, and nothing may guess.
        let config = LockConfig::builder()
            .reasks_max(0)
            .op_timeout_ms(50)
            .build()
            .unwrap();
        let lock = ctx.lock_client(config);
        let warm = ResourceName::new("warm-up").unwrap();
        let AcquireOutcome::Acquired(l) = lock.acquire(&warm).await.unwrap() else {
            panic!("free resource");
        };
        lock.release(&l).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let owner = lock.next_owner_token();
        *owner_seen.lock().unwrap() = Some(owner.clone());
        let r = lock.attempt(&resource(), &owner).await;
        *seen.lock().unwrap() = Some(r);
    })
}

#[test]
fn dropped_reply_leaves_the_lock_on_the_server_and_the_client_unsure() -> Result<(), WorldError> {
    let mut world = WorldBuilder::new(1).workers(1).build()?;
    let seen: Slot<Result<Attempt, LockError>> = slot();
    let owner_seen: Slot<OwnerToken> = slot();
    spawn_connected_attempt(&mut world, seen.clone(), owner_seen.clone())?;
    world.run_for(Duration::from_millis(50))?;
    world.drop_redis_replies(0)?;
    world.run_until_workers_done(Duration::from_secs(5))?;
    let result = seen.lock().unwrap().take().unwrap();
    assert!(
        matches!(&result, Err(LockError::Indeterminate { .. })),
        "the client saw a timeout, never 'acquired': {result:?}"
    );
    let owner = owner_seen.lock().unwrap().take().unwrap();
    assert_eq!(
        world.primary().get(&lock_key()).as_deref(),
        Some(owner.as_str().as_bytes()),
        "the request ran: the lock exists on the server"
    );
    Ok(())
}

#[test]
fn paused_worker_does_not_renew() -> Result<(), WorldError> {
    let mut world = WorldBuilder::new(2).workers(1).build()?;
    let held: Slot<Lease> = slot();
    let h = held.clone();
    world.spawn_worker(0, move |ctx| async move {
        let lock = ctx.lock_client(config());
        let AcquireOutcome::Acquired(lease) = lock.acquire(&resource()).await.unwrap() else {
            panic!("free resource");
        };
        *h.lock().unwrap() = Some(lease.clone());
        // Would renew every 100 ms for as long as the job runs.
        lock.hold(&lease, |_| tokio::time::sleep(Duration::from_secs(2)))
            .await;
    })?;
    world.run_for(Duration::from_millis(250))?;
    assert!(world.primary().get(&lock_key()).is_some(), "renewed so far");
    world.pause_worker(0)?;
    world.run_for(Duration::from_millis(600))?;
    assert_eq!(
        world.primary().get(&lock_key()),
        None,
        "paused: no renewal ran, the lease expired"
    );
    let expired = world
        .ownership()
        .events()
        .into_iter()
        .filter(|e| matches!(e.change, OwnershipChange::Expired { .. }))
        .count();
    assert_eq!(expired, 1);
    assert!(held.lock().unwrap().is_some());
    Ok(())
}

/// Three acquisitions on a world with a replica: one replicated, one while
/// the replication link is held, one after failing over. Returns the
/// fences issued and what the replica's Redis counter said before failover.
fn fences_across_failover(durable: bool) -> Result<(Vec<i64>, Option<Vec<u8>>), WorldError> {
    let mut world = WorldBuilder::new(3).workers(1).replica(true).build()?;
    let fences: Arc<Mutex<Vec<i64>>> = Arc::new(Mutex::new(Vec::new()));
    let step = Arc::new(tokio::sync::Notify::new());
    let (f, n) = (fences.clone(), step.clone());
    world.spawn_worker(0, move |ctx| async move {
        let lock = if durable {
            let config = LockConfig::builder()
                .lease_ms(300)
                .op_timeout_ms(50)
                .backoff_base_ms(5)
                .backoff_cap_ms(20)
                .fence_source(FenceSourceKind::Store)
                .build()
                .unwrap();
            ctx.lock_client_with_store_fences(config).unwrap()
        } else {
            ctx.lock_client(config())
        };
        // Bounded: three acquisitions, one per world step below.
        for _ in 0..3 {
            n.notified().await;
            let lease = loop {
                match lock.acquire(&resource()).await {
                    Ok(AcquireOutcome::Acquired(lease)) => break lease,
                    Ok(_) | Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            };
            f.lock().unwrap().push(lease.fence().get());
            let _ = lock.release(&lease).await;
        }
    })?;
    world.run_for(Duration::from_millis(100))?;
    step.notify_one();
    world.run_for(Duration::from_millis(300))?;
    world.cut_replication()?;
    step.notify_one();
    world.run_for(Duration::from_millis(300))?;
    let replica_counter = world
        .replica()?
        .get(&format!("fence:{{{}}}", workload::RESOURCE));
    world.fail_over()?;
    step.notify_one();
    world.run_until_workers_done(Duration::from_secs(10))?;
    let fences = fences.lock().unwrap().clone();
    Ok((fences, replica_counter))
}

#[test]
fn held_replication_then_failover_issues_a_fence_twice() -> Result<(), WorldError> {
    let (fences, replica_counter) = fences_across_failover(false)?;
    assert_eq!(
        replica_counter.as_deref(),
        Some(&b"1"[..]),
        "the held link kept fence 2 from the replica"
    );
    assert_eq!(
        fences,
        vec![1, 2, 2],
        "after failover the regressed counter issues fence 2 again"
    );
    Ok(())
}

#[test]
fn failover_with_a_durable_fence_source_issues_no_fence_twice() -> Result<(), WorldError> {
    let (fences, replica_counter) = fences_across_failover(true)?;
    assert_eq!(
        replica_counter, None,
        "the Redis counter is not used at all"
    );
    assert_eq!(
        fences,
        vec![1, 2, 3],
        "the store's counter does not regress when Redis fails over"
    );
    Ok(())
}

#[test]
fn late_unlock_cannot_delete_another_owners_lock() -> Result<(), WorldError> {
    let mut world = WorldBuilder::new(4).workers(1).build()?;
    let out: Slot<(bool, String)> = slot();
    let o = out.clone();
    world.spawn_worker(0, move |ctx| async move {
        let lock = ctx.lock_client(config());
        let AcquireOutcome::Acquired(a) = lock.acquire(&resource()).await.unwrap() else {
            panic!("free");
        };
        tokio::time::sleep(Duration::from_millis(400)).await;
        let AcquireOutcome::Acquired(b) = lock.acquire(&resource()).await.unwrap() else {
            panic!("a expired");
        };
        let released = lock.release(&a).await.unwrap();
        *o.lock().unwrap() = Some((released, b.owner().to_string()));
    })?;
    world.run_until_workers_done(Duration::from_secs(5))?;
    let (released, b_owner) = out.lock().unwrap().take().unwrap();
    assert!(!released, "A's late release deleted nothing");
    assert_eq!(
        world.primary().get(&lock_key()).as_deref(),
        Some(b_owner.as_bytes()),
        "B still holds the lock"
    );
    Ok(())
}

fn write(fence: i64, value: &str) -> FencedWrite {
    FencedWrite {
        resource: resource(),
        fence: redfence_core::Fence::new(fence).unwrap(),
        owner: OwnerToken::new(format!("o{fence}")).unwrap(),
        value: value.into(),
    }
}

fn job(fence: i64, value: &str) -> JobWrite {
    JobWrite {
        job_id: JobId::new("job-1").unwrap(),
        write: write(fence, value),
    }
}

#[test]
fn lost_store_reply_still_applies_the_write() -> Result<(), WorldError> {
    let mut world = WorldBuilder::new(5).workers(1).build()?;
    world.store().ensure_resource(workload::RESOURCE);
    let out: Slot<String> = slot();
    let o = out.clone();
    world.drop_store_replies(0)?;
    world.spawn_worker(0, move |ctx| async move {
        let r = ctx.store.apply_job(&job(5, "v5")).await;
        *o.lock().unwrap() = Some(format!("{:?}", r.map_err(|e| e.to_string())));
    })?;
    world.run_until_workers_done(Duration::from_secs(5))?;
    let seen = out.lock().unwrap().take().unwrap();
    assert!(
        seen.contains("timed out"),
        "the client saw no answer: {seen}"
    );
    assert_eq!(
        world.store().read(workload::RESOURCE),
        Some(("v5".into(), 5))
    );
    let log = world.store().fence_log(workload::RESOURCE);
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].outcome, FenceOutcome::Accepted);
    Ok(())
}

#[test]
fn sim_store_recognises_a_retry_and_refuses_a_stale_fence() -> Result<(), WorldError> {
    let mut world = WorldBuilder::new(6).workers(1).build()?;
    world.store().ensure_resource(workload::RESOURCE);
    let out: Slot<(JobOutcome, JobOutcome, WriteOutcome)> = slot();
    let o = out.clone();
    world.spawn_worker(0, move |ctx| async move {
        let first = ctx.store.apply_job(&job(5, "first")).await.unwrap();
        let again = ctx.store.apply_job(&job(6, "again")).await.unwrap();
        let stale = ctx.store.write_fenced(&write(4, "stale")).await.unwrap();
        *o.lock().unwrap() = Some((first, again, stale));
    })?;
    world.run_until_workers_done(Duration::from_secs(5))?;
    let (first, again, stale) = out.lock().unwrap().take().unwrap();
    assert_eq!(first, JobOutcome::Applied);
    assert_eq!(again, JobOutcome::AlreadyDone);
    assert_eq!(stale, WriteOutcome::Stale { last_fence: 5 });
    assert_eq!(
        world.store().read(workload::RESOURCE),
        Some(("first".into(), 5))
    );
    Ok(())
}

#[test]
fn bad_world_settings_are_typed_errors() {
    assert!(matches!(
        WorldBuilder::new(0).tick_ms(0).build(),
        Err(WorldError::OutOfRange {
            field: "tick_ms",
            ..
        })
    ));
    assert!(matches!(
        WorldBuilder::new(0).workers(0).build(),
        Err(WorldError::OutOfRange {
            field: "workers",
            ..
        })
    ));
    assert!(matches!(
        WorldBuilder::new(0).latency_ms(5, 1).build(),
        Err(WorldError::LatencyRange { min: 5, max: 1 })
    ));
    let mut world = WorldBuilder::new(0).build().unwrap();
    assert!(matches!(
        world.cut_replication(),
        Err(WorldError::NoReplica)
    ));
    assert!(matches!(
        world.pause_worker(9),
        Err(WorldError::NoSuchWorker {
            index: 9,
            workers: 2
        })
    ));
}

#[test]
fn a_heal_does_not_undo_a_reply_drop() -> Result<(), WorldError> {
    let mut world = WorldBuilder::new(7).workers(1).build()?;
    let seen: Slot<Result<Attempt, LockError>> = slot();
    spawn_connected_attempt(&mut world, seen.clone(), slot())?;
    world.run_for(Duration::from_millis(50))?;
    world.drop_redis_replies(0)?;
    world.partition_worker_redis(0)?;
    world.heal_worker_redis(0)?;
    world.run_until_workers_done(Duration::from_secs(5))?;
    let seen = seen.lock().unwrap().take().unwrap();
    assert!(
        matches!(&seen, Err(LockError::Indeterminate { .. })),
        "replies must still be dropped: {seen:?}"
    );
    assert!(
        world.primary().get(&lock_key()).is_some(),
        "the request ran"
    );
    Ok(())
}

#[test]
fn restart_after_failover_brings_back_a_primary() -> Result<(), WorldError> {
    let mut world = WorldBuilder::new(8).workers(1).replica(true).build()?;
    world.run_for(Duration::from_millis(50))?;
    world.fail_over()?;
    world.restart_redis();
    let seen: Slot<Result<AcquireOutcome, LockError>> = slot();
    let s = seen.clone();
    world.spawn_worker(0, move |ctx| async move {
        let lock = ctx.lock_client(config());
        let r = lock.acquire(&resource()).await;
        *s.lock().unwrap() = Some(r);
    })?;
    world.run_until_workers_done(Duration::from_secs(5))?;
    let seen = seen.lock().unwrap().take().unwrap();
    assert!(
        matches!(seen, Ok(AcquireOutcome::Acquired(_))),
        "the restarted host takes writes: {seen:?}"
    );
    assert!(world.replica()?.is_primary());
    Ok(())
}

/// A primary restarted empty (no persistence) is resynced by its replica, as
/// Redis's replica does a full resync when its primary comes back as a new
/// instance: the replica must not keep a fence counter the primary lost,
/// ready to be promoted later with state nobody else has.
#[test]
fn replica_resyncs_from_a_primary_restarted_empty() -> Result<(), WorldError> {
    let mut world = WorldBuilder::new(11).workers(1).replica(true).build()?;
    world.spawn_worker(0, move |ctx| async move {
        let lock = ctx.lock_client(config());
        if let Ok(AcquireOutcome::Acquired(lease)) = lock.acquire(&resource()).await {
            let _ = lock.release(&lease).await;
        }
    })?;
    world.run_until_workers_done(Duration::from_secs(5))?;
    world.run_for(Duration::from_millis(100))?;
    let fence_key = format!("fence:{{{}}}", resource());
    assert_eq!(
        world.replica()?.get(&fence_key),
        Some(b"1".to_vec()),
        "replicated before the restart"
    );
    world.restart_redis();
    world.run_for(Duration::from_secs(5))?;
    assert_eq!(world.primary().get(&fence_key), None, "restarted empty");
    assert_eq!(
        world.replica()?.get(&fence_key),
        None,
        "the replica resynced from the empty primary"
    );
    Ok(())
}

/// A primary that crashes after a snapshot comes back with what the
/// snapshot held — a lock granted before it is held again, by the same
/// owner, with its original deadline — and without the lock granted after
/// it: the "restart that forgets" of snapshot-only persistence. The
/// ownership log says so from the server's side.
#[test]
fn a_restart_loads_the_last_snapshot_and_forgets_the_writes_after_it() -> Result<(), WorldError> {
    let long = LockConfig::builder()
        .lease_ms(10_000)
        .renew_interval_ms(3_000)
        .op_timeout_ms(50)
        .backoff_base_ms(5)
        .backoff_cap_ms(20)
        .build()
        .unwrap();
    let other = ResourceName::new("other-resource").unwrap();
    let mut world = WorldBuilder::new(21).workers(1).build()?;
    let (lock_a, lock_b) = (long.clone(), long.clone());
    let other_name = other.clone();
    world.spawn_worker(0, move |ctx| async move {
        let lock = ctx.lock_client(lock_a);
        assert!(matches!(
            lock.acquire(&resource()).await,
            Ok(AcquireOutcome::Acquired(_))
        ));
        tokio::time::sleep(Duration::from_millis(200)).await;
        let lock = ctx.lock_client(lock_b);
        assert!(matches!(
            lock.acquire(&other_name).await,
            Ok(AcquireOutcome::Acquired(_))
        ));
    })?;
    world.run_for(Duration::from_millis(100))?;
    let before = world
        .primary()
        .get(&lock_key())
        .expect("held before the snapshot");
    world.snapshot_redis()?;
    world.run_until_workers_done(Duration::from_secs(2))?;
    let other_key = format!("lock:{{{}}}", other.as_str());
    assert!(
        world.primary().get(&other_key).is_some(),
        "granted after it"
    );
    world.stop_redis();
    world.restart_redis();
    world.run_for(Duration::from_millis(50))?;
    assert_eq!(
        world.primary().get(&lock_key()),
        Some(before.clone()),
        "the snapshot's lock is back, same owner"
    );
    assert_eq!(
        world.primary().get(&other_key),
        None,
        "the lock granted after the snapshot is forgotten"
    );
    let owner = String::from_utf8(before).unwrap();
    let changes: Vec<(String, OwnershipChange)> = world
        .ownership()
        .events()
        .into_iter()
        .map(|e| (e.key, e.change))
        .collect();
    let of = |key: &str| -> Vec<&OwnershipChange> {
        changes
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, c)| c)
            .collect()
    };
    assert_eq!(
        of(&lock_key()),
        vec![
            &OwnershipChange::Set {
                owner: owner.clone()
            },
            &OwnershipChange::Lost {
                owner: owner.clone()
            },
            &OwnershipChange::Set { owner },
        ],
        "held, lost in the crash, loaded again"
    );
    assert!(
        matches!(
            of(&other_key)[..],
            [OwnershipChange::Set { .. }, OwnershipChange::Lost { .. }]
        ),
        "held, lost for good: {:?}",
        of(&other_key)
    );
    assert!(
        world
            .trace()
            .to_text()
            .contains("restart redis (from its snapshot at 100 ms)"),
        "the trace names the snapshot the restart loaded"
    );
    Ok(())
}

/// A forward jump of the primary's clock ends the leases it holds early by
/// the jump — on the server's own clock — while the ownership log stays on
/// the world's timeline; a lease set after the jump lasts its length.
#[test]
fn a_server_clock_jump_ends_held_leases_early_by_the_jump() -> Result<(), WorldError> {
    let long = config_with_lease(2_000);
    let mut world = WorldBuilder::new(23).workers(2).build()?;
    let set_at: Slot<u64> = slot();
    let s = set_at.clone();
    world.spawn_worker(0, move |ctx| async move {
        let lock = ctx.lock_client(long);
        assert!(matches!(
            lock.acquire(&resource()).await,
            Ok(AcquireOutcome::Acquired(_))
        ));
        *s.lock().unwrap() = Some(redfence_sim::trace::now_ms());
    })?;
    world.run_until_workers_done(Duration::from_secs(1))?;
    world.run_for(Duration::from_millis(100))?;
    world.jump_redis_clock(1_500);
    assert!(world.primary().get(&lock_key()).is_some(), "not yet due");
    world.run_for(Duration::from_millis(600))?;
    assert_eq!(
        world.primary().get(&lock_key()),
        None,
        "expired 1,500 ms before its 2,000 ms lease ran out"
    );
    let expired: Vec<u64> = world
        .ownership()
        .events()
        .into_iter()
        .filter(|e| matches!(e.change, OwnershipChange::Expired { .. }))
        .map(|e| e.at_ms)
        .collect();
    let set_at = set_at.lock().unwrap().unwrap();
    assert_eq!(expired.len(), 1, "{expired:?}");
    assert!(
        expired[0] + 1_500 >= set_at + 2_000 - 20 && expired[0] + 1_500 <= set_at + 2_000 + 20,
        "on the world's timeline, 1,500 ms early: set at {set_at} ms, expired at {} ms",
        expired[0]
    );
    assert_eq!(world.primary().clock_offset_ms(), 1_500);
    let again = config_with_lease(2_000);
    world.spawn_worker(1, move |ctx| async move {
        let lock = ctx.lock_client(again);
        assert!(matches!(
            lock.acquire(&resource()).await,
            Ok(AcquireOutcome::Acquired(_))
        ));
    })?;
    world.run_until_workers_done(Duration::from_secs(1))?;
    world.run_for(Duration::from_millis(1_800))?;
    assert!(
        world.primary().get(&lock_key()).is_some(),
        "a lease set after the jump lasts its length"
    );
    world.run_for(Duration::from_millis(300))?;
    assert_eq!(world.primary().get(&lock_key()), None, "and no longer");
    Ok(())
}

fn config_with_lease(lease_ms: u64) -> LockConfig {
    LockConfig::builder()
        .lease_ms(lease_ms)
        .renew_interval_ms(lease_ms / 3)
        .op_timeout_ms(50)
        .backoff_base_ms(5)
        .backoff_cap_ms(20)
        .build()
        .unwrap()
}

/// Three independent masters: each keeps its own keys and ownership log,
/// and a fault on one master — a partition of one worker, a crash, a clock
/// jump — touches that master alone.
#[test]
fn independent_masters_keep_their_own_keys_and_their_own_faults() -> Result<(), WorldError> {
    let mut world = WorldBuilder::new(31).workers(2).masters(3).build()?;
    assert_eq!(world.master_count(), 3);
    assert!(matches!(
        WorldBuilder::new(31).masters(8).build(),
        Err(WorldError::OutOfRange {
            field: "masters",
            ..
        })
    ));
    assert!(matches!(
        world.stop_master(3),
        Err(WorldError::NoSuchMaster {
            master: 3,
            masters: 3
        })
    ));
    // w1 is cut off from master 1 before it starts.
    world.partition_worker_master(1, 1)?;
    let replies: Slot<Vec<Vec<Option<String>>>> = slot();
    for worker in 0..2 {
        let seen = replies.clone();
        world.spawn_worker(worker, move |ctx| async move {
            let mut got = Vec::new();
            for (master, conn) in ctx.masters.iter().enumerate() {
                let mut conn = conn.clone();
                let key = format!("lock:{{w{}-m{master}}}", ctx.index);
                let reply = tokio::time::timeout(
                    Duration::from_millis(200),
                    redis::cmd("SET")
                        .arg(&key)
                        .arg(format!("w{}", ctx.index))
                        .arg("NX")
                        .arg("PX")
                        .arg(10_000)
                        .query_async::<Option<String>>(&mut conn),
                )
                .await;
                got.push(reply.ok().and_then(Result::ok).flatten());
            }
            seen.lock().unwrap().get_or_insert_with(Vec::new).push(got);
        })?;
        world.run_until_workers_done(Duration::from_secs(2))?;
    }
    let replies = replies.lock().unwrap().take().unwrap();
    assert_eq!(
        replies,
        vec![
            vec![Some("OK".to_owned()); 3],
            // Master 1 is unreachable for w1, and only master 1.
            vec![Some("OK".to_owned()), None, Some("OK".to_owned())],
        ]
    );
    for master in 0..3 {
        assert_eq!(
            world.master(master)?.get(&format!("lock:{{w0-m{master}}}")),
            Some(b"w0".to_vec()),
            "master {master} holds w0's lock"
        );
        let other = (master + 1) % 3;
        assert_eq!(
            world.master(master)?.get(&format!("lock:{{w0-m{other}}}")),
            None,
            "no master holds another's keys"
        );
    }
    world.jump_master_clock(2, 20_000)?;
    world.stop_master(1)?;
    world.run_for(Duration::from_millis(50))?;
    assert_eq!(
        world.master(0)?.get("lock:{w0-m0}"),
        Some(b"w0".to_vec()),
        "untouched"
    );
    assert_eq!(world.master(1)?.get("lock:{w0-m1}"), None, "crashed");
    assert_eq!(
        world.master(2)?.get("lock:{w0-m2}"),
        None,
        "expired by the jump"
    );
    world.restart_master(1)?;
    world.run_for(Duration::from_millis(50))?;
    assert!(world.master(1)?.is_up());
    let servers: std::collections::BTreeSet<String> = world
        .ownership()
        .events()
        .into_iter()
        .map(|e| e.server)
        .collect();
    assert_eq!(
        servers.into_iter().collect::<Vec<_>>(),
        vec!["redis", "redis-1", "redis-2"],
        "one ownership log, each change named by its master"
    );
    Ok(())
}

/// Same seed, same trace, with several masters too.
#[test]
fn several_masters_replay_byte_identically() -> Result<(), WorldError> {
    let run = |seed: u64| -> Result<(String, String), WorldError> {
        let mut world = WorldBuilder::new(seed).workers(2).masters(5).build()?;
        world.set_master_latency(0, 3, Duration::from_millis(7))?;
        for worker in 0..2 {
            world.spawn_worker(worker, move |ctx| async move {
                for (master, conn) in ctx.masters.iter().enumerate() {
                    let mut conn = conn.clone();
                    let _: redis::RedisResult<Option<String>> = redis::cmd("SET")
                        .arg(format!("lock:{{m{master}}}"))
                        .arg(ctx.name.as_str())
                        .arg("NX")
                        .arg("PX")
                        .arg(300)
                        .query_async(&mut conn)
                        .await;
                    ctx.log(format!("tried master {master}"));
                }
            })?;
        }
        world.run_until_workers_done(Duration::from_secs(2))?;
        world.run_for(Duration::from_millis(500))?;
        let log = format!("{:?}", world.ownership().events());
        Ok((world.trace().to_text(), log))
    };
    let first = run(77)?;
    assert_eq!(first, run(77)?);
    assert!(first.1.contains("redis-4"), "{}", first.1);
    Ok(())
}

/// A stopped Redis is a killed process on a machine that stays up, as the
/// real world's `kill -9` makes it: a command on the connection opened
/// before the stop fails at once (the connection is closed under it), a
/// new connection is refused at once, and neither waits for a timeout —
/// a machine that is gone (a partition) is what times out. After the
/// restart, commands are answered again.
#[test]
fn a_stopped_redis_refuses_at_once_and_answers_after_its_restart() -> Result<(), WorldError> {
    let mut world = WorldBuilder::new(29).workers(1).build()?;
    // (ms after the stop when the command ended, whether it was answered,
    // its error).
    let seen: Arc<Mutex<Vec<(u64, bool, String)>>> = Arc::default();
    let log = seen.clone();
    world.spawn_worker(0, move |ctx| async move {
        let mut conn = ctx.redis.clone();
        let ping = |conn: &mut redfence_sim::connection::SimRedisConnection| {
            let mut conn = conn.clone();
            async move {
                let cmd = redis::cmd("PING");
                let reply = tokio::time::timeout(
                    Duration::from_millis(1_000),
                    cmd.query_async::<String>(&mut conn),
                )
                .await;
                match reply {
                    Ok(Ok(_)) => (true, String::new()),
                    Ok(Err(e)) => (false, e.to_string()),
                    Err(_) => (false, "timed out".to_owned()),
                }
            }
        };
        assert!(ping(&mut conn).await.0, "answered before the stop");
        // The stop comes at 100 ms, the restart at 500: ask on the open
        // connection at ~110 ms, on a new one 20 ms later, and at ~600.
        for wait_ms in [100_u64, 20, 470] {
            tokio::time::sleep(Duration::from_millis(wait_ms)).await;
            let start = tokio::time::Instant::now();
            let (answered, error) = ping(&mut conn).await;
            let took_ms = start.elapsed().as_millis() as u64;
            log.lock().unwrap().push((took_ms, answered, error));
        }
    })?;
    world.run_for(Duration::from_millis(100))?;
    world.stop_redis();
    world.run_for(Duration::from_millis(400))?;
    world.restart_redis();
    world.run_until_workers_done(Duration::from_secs(3))?;
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "{seen:?}");
    for (took_ms, answered, error) in &seen[..2] {
        assert!(!answered, "no answer while stopped: {seen:?}");
        assert!(*took_ms < 50, "failed at once, not by a timeout: {seen:?}");
        assert_ne!(error, "timed out", "{seen:?}");
    }
    assert!(
        seen[1].2.contains("Connection refused"),
        "a new connection is refused: {seen:?}"
    );
    assert!(seen[2].1, "answered after the restart: {seen:?}");
    Ok(())
}
