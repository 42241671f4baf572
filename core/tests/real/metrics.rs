//! The article's metrics, asserted through a debugging recorder.

use std::sync::Arc;
use std::time::Duration;

use redfence_core::*;

use crate::support::*;

#[tokio::test]
async fn metrics_follow_the_articles_names_and_labels() {
    let m = Metrics::install();
    let config = LockConfig::builder()
        .lease_ms(300)
        .renew_interval_ms(100)
        .renewals_max(1)
        .op_timeout_ms(100)
        .acquire_deadline_ms(60)
        .backoff_base_ms(5)
        .backoff_cap_ms(10)
        .build()
        .unwrap();
    let lock = LockClient::new(redis().await, config.clone()).unwrap();
    let resource = ResourceName::new(format!("inv-{}", uuid::Uuid::new_v4()))
        .unwrap()
        .with_type("invoice")
        .unwrap();
    let invoice = [("resource_type", "invoice")];

    let AcquireOutcome::Acquired(lease) = lock.acquire(&resource).await.unwrap() else {
        panic!("free resource");
    };
    assert_eq!(
        m.counter("lock_acquire_total", &[("result", "acquired"), invoice[0]]),
        1
    );

    // A second owner contends, backs off and gives up: retry later.
    let w = Worker::new(
        LockClient::new(redis().await, config).unwrap(),
        Arc::new(store().await),
    );
    let job = JobId::new(format!("metrics-{}", uuid::Uuid::new_v4())).unwrap();
    let outcome = w
        .process(&resource, &job, |_| async { Ok(String::new()) })
        .await;
    assert!(matches!(outcome, ProcessOutcome::RetryLater));
    let contended = m.counter("lock_acquire_total", &[("result", "contended")]);
    assert!(contended >= 2, "contended {contended}");
    assert_eq!(m.counter("lock_contention_total", &invoice), contended);
    assert_eq!(m.counter("lock_acquire_total", &[("result", "timeout")]), 1);
    assert_eq!(
        m.counter("lock_acquire_retries_total", &invoice),
        contended - 1
    );
    assert_eq!(m.counter("lock_jobs_requeued_total", &invoice), 1);

    // Renew once (the limit), then lose the lease.
    let held = lock
        .hold(&lease, |signal| async move { signal.wait_lost().await })
        .await;
    assert!(matches!(
        held.output,
        LeaseLost::LimitReached { renewals: 1, .. }
    ));
    assert_eq!(m.counter("lock_renew_total", &[("result", "renewed")]), 1);
    assert_eq!(
        m.counter("lock_lease_lost_total", &[("reason", "limit_reached")]),
        1
    );
    lock.release(&lease).await.unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert!(m.samples("lock_hold_duration_seconds", &invoice) >= 1);

    // An owner-mismatch renewal is counted by its result.
    let AcquireOutcome::Acquired(stale) = lock.acquire(&resource).await.unwrap() else {
        panic!("free again");
    };
    lock.release(&stale).await.unwrap();
    assert_eq!(
        lock.renew(&stale, 1_000).await.unwrap(),
        Renewal::OwnerMismatch
    );

    assert_eq!(
        m.counter("lock_renew_total", &[("result", "owner_mismatch")]),
        1
    );

    // A write under a fence storage has already passed is rejected and counted.
    let store = store().await;
    store.ensure_resource(&resource).await.unwrap();
    let ahead = Fence::new(1_000_000).unwrap();
    let owner = OwnerToken::new("newer-owner").unwrap();
    let GuardCheck::Open(tx) = store.begin_guarded(&resource, ahead, &owner).await.unwrap() else {
        panic!("fence 1e6 is newer than 0");
    };
    tx.commit().await.unwrap();
    let rejected = w
        .process(
            &resource,
            &JobId::new(format!("metrics-{}", uuid::Uuid::new_v4())).unwrap(),
            |_| async { Ok(String::new()) },
        )
        .await;
    assert!(matches!(
        rejected,
        ProcessOutcome::OwnershipLost(OwnershipLost::FenceRejected { .. })
    ));
    assert_eq!(m.counter("fence_rejected_total", &invoice), 1);
    assert_eq!(
        m.counter("lock_lease_lost_total", &[("reason", "fence_rejected")]),
        1
    );
    assert!(m.samples("lock_acquire_duration_seconds", &invoice) >= 1);

    // Labels carry the resource type, never the id.
    let values = m.label_values();
    assert!(values.iter().any(|v| v == "invoice"));
    assert!(!values.iter().any(|v| v == resource.as_str()));
}
