//! The worker flow end to end: mutual exclusion under contention, the stale
//! worker that is paused past its lease, redelivery, and failing closed.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use redfence_core::*;
use tokio::sync::{oneshot, Mutex, Notify};
use tokio::time::Instant;

use crate::support::*;

async fn worker(config: LockConfig) -> Worker<redis::aio::MultiplexedConnection> {
    let lock = LockClient::new(redis().await, config).unwrap();
    Worker::new(lock, Arc::new(store().await))
}

fn job() -> JobId {
    JobId::new(format!("job-{}", uuid::Uuid::new_v4())).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_workers_never_overlap_and_fences_only_grow() {
    const WORKERS: usize = 16;
    const JOBS_PER_WORKER: usize = 4;
    let config = LockConfig::builder()
        .lease_ms(2_000)
        .acquire_deadline_ms(20_000)
        .attempts_max(10_000)
        .backoff_base_ms(2)
        .backoff_cap_ms(40)
        .build()
        .unwrap();
    let resource = fresh_resource("mutex");
    store().await.ensure_resource(&resource).await.unwrap();
    let inside = Arc::new(AtomicU32::new(0));
    let sections = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for _ in 0..WORKERS {
        let w = worker(config.clone()).await;
        let (resource, inside, sections) = (resource.clone(), inside.clone(), sections.clone());
        tasks.push(tokio::spawn(async move {
            let mut successes = 0;
            for _ in 0..JOBS_PER_WORKER {
                let (inside, sections) = (inside.clone(), sections.clone());
                let outcome = w
                    .process(&resource, &job(), |fence| async move {
                        let entered = Instant::now();
                        let others = inside.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        inside.fetch_sub(1, Ordering::SeqCst);
                        sections
                            .lock()
                            .await
                            .push((entered, Instant::now(), fence.get()));
                        assert_eq!(others, 0, "two workers inside the critical section");
                        Ok(format!("written under {fence}"))
                    })
                    .await;
                match outcome {
                    ProcessOutcome::Success { .. } => successes += 1,
                    other => panic!("every job must succeed eventually: {other:?}"),
                }
            }
            successes
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    assert_eq!(total, WORKERS * JOBS_PER_WORKER);

    // Client-side view: sections ordered by fence never overlap in time.
    let mut sections = sections.lock().await.clone();
    sections.sort_by_key(|s| s.2);
    for pair in sections.windows(2) {
        assert!(
            pair[0].1 <= pair[1].0,
            "critical sections overlap: {pair:?}"
        );
    }
    // Storage's view: accepted fences strictly increase in commit order.
    let log = store().await.fence_log(&resource).await.unwrap();
    let accepted: Vec<i64> = log
        .iter()
        .filter(|e| e.outcome == FenceOutcome::Accepted)
        .map(|e| e.fence)
        .collect();
    assert_eq!(accepted.len(), WORKERS * JOBS_PER_WORKER);
    assert!(accepted.windows(2).all(|w| w[0] < w[1]), "log {accepted:?}");
}

#[tokio::test]
async fn stale_worker_is_rejected_by_storage_and_reports_ownership_lost() {
    let config = LockConfig::builder()
        .lease_ms(300)
        .renew_interval_ms(100)
        .op_timeout_ms(100)
        .acquire_deadline_ms(2_000)
        .build()
        .unwrap();
    let resource = fresh_resource("stale");
    let store = store().await;
    store.ensure_resource(&resource).await.unwrap();
    let a = worker(config.clone()).await;
    let b = worker(config.clone()).await;

    let (entered_tx, entered_rx) = oneshot::channel();
    let gate = Arc::new(Notify::new());
    let pause = FreezeSwitch::new();
    let a_gate = gate.clone();
    let a_resource = resource.clone();
    let a_job = job();
    let a_run = tokio::spawn(pause.wrap(async move {
        a.process(&a_resource, &a_job, |fence| async move {
            let _ = entered_tx.send(fence);
            a_gate.notified().await;
            Ok("A's stale result".to_owned())
        })
        .await
    }));
    let a_fence = entered_rx.await.unwrap();
    // Stop the world for A: neither its job nor its renewal runs.
    pause.freeze();
    tokio::time::sleep(Duration::from_millis(300 + 100)).await;

    let b_outcome = b
        .process(&resource, &job(), |_| async { Ok("B's result".to_owned()) })
        .await;
    let ProcessOutcome::Success { fence: b_fence } = b_outcome else {
        panic!("B must take over after A's lease ran out: {b_outcome:?}");
    };
    assert!(b_fence > a_fence);

    // A resumes: its write carries the old fence.
    gate.notify_one();
    pause.thaw();
    match a_run.await.unwrap() {
        ProcessOutcome::OwnershipLost(OwnershipLost::FenceRejected { fence, last_fence }) => {
            assert_eq!(fence, a_fence);
            assert_eq!(last_fence, b_fence.get());
        }
        other => panic!("A must be rejected and report ownership lost: {other:?}"),
    }
    assert_eq!(
        store.read(&resource).await.unwrap(),
        Some(("B's result".into(), b_fence.get()))
    );
    let log: Vec<_> = store
        .fence_log(&resource)
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.fence, e.outcome))
        .collect();
    assert_eq!(
        log,
        vec![
            (b_fence.get(), FenceOutcome::Accepted),
            (a_fence.get(), FenceOutcome::Stale)
        ]
    );
}

#[tokio::test]
async fn redelivered_job_reports_already_done_and_applies_once() {
    let w = worker(LockConfig::default()).await;
    let resource = fresh_resource("redelivery");
    let store = store().await;
    store.ensure_resource(&resource).await.unwrap();
    let job_id = job();
    let runs = Arc::new(AtomicU32::new(0));
    let first = w
        .process(&resource, &job_id, |_| {
            runs.fetch_add(1, Ordering::SeqCst);
            async { Ok("once".to_owned()) }
        })
        .await;
    assert!(matches!(first, ProcessOutcome::Success { .. }), "{first:?}");
    let again = w
        .process(&resource, &job_id, |_| {
            runs.fetch_add(1, Ordering::SeqCst);
            async { Ok("twice".to_owned()) }
        })
        .await;
    assert!(matches!(again, ProcessOutcome::AlreadyDone), "{again:?}");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "a completed job loads no input again"
    );
    assert_eq!(store.read(&resource).await.unwrap().unwrap().0, "once");
}

#[tokio::test]
async fn redis_down_means_no_protected_write() {
    let mut own = OwnRedis::start().await;
    let conn = redis::Client::open(own.url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let config = LockConfig::builder().op_timeout_ms(200).build().unwrap();
    let w = Worker::new(
        LockClient::new(conn, config).unwrap(),
        Arc::new(store().await),
    );
    let resource = fresh_resource("fail-closed");
    let store = store().await;
    store.ensure_resource(&resource).await.unwrap();
    own.stop();
    let loaded = Arc::new(AtomicU32::new(0));
    let outcome = w
        .process(&resource, &job(), |_| {
            loaded.fetch_add(1, Ordering::SeqCst);
            async { Ok("must never be written".to_owned()) }
        })
        .await;
    assert!(
        matches!(outcome, ProcessOutcome::Failed(JobError::Lock(_))),
        "{outcome:?}"
    );
    assert_eq!(loaded.load(Ordering::SeqCst), 0);
    assert!(store.fence_log(&resource).await.unwrap().is_empty());
    assert_eq!(
        store.read(&resource).await.unwrap(),
        Some((String::new(), 0))
    );
}

#[tokio::test]
async fn contended_job_is_handed_back_for_retry_later() {
    let config = LockConfig::builder()
        .lease_ms(5_000)
        .acquire_deadline_ms(50)
        .backoff_base_ms(5)
        .backoff_cap_ms(10)
        .build()
        .unwrap();
    let holder = LockClient::new(redis().await, config.clone()).unwrap();
    let resource = fresh_resource("requeue");
    let AcquireOutcome::Acquired(lease) = holder.acquire(&resource).await.unwrap() else {
        panic!("free resource");
    };
    let w = worker(config).await;
    let outcome = w
        .process(&resource, &job(), |_| async { Ok("no".to_owned()) })
        .await;
    assert!(matches!(outcome, ProcessOutcome::RetryLater), "{outcome:?}");
    holder.release(&lease).await.unwrap();
}
