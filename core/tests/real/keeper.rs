//! The renewal keeper: renews on its interval, stops at its limits, and
//! signals a lost lease so the job can stop.

use std::time::Duration;

use redfence_core::*;
use tokio::time::Instant;

use crate::support::*;

async fn acquire(lock: &LockClient<redis::aio::MultiplexedConnection>, r: &ResourceName) -> Lease {
    match lock.acquire(r).await.unwrap() {
        AcquireOutcome::Acquired(lease) => lease,
        other => panic!("fresh resource must be free: {other:?}"),
    }
}

#[tokio::test]
async fn keeper_renews_while_the_job_runs_past_one_lease() {
    let config = LockConfig::builder()
        .lease_ms(300)
        .renew_interval_ms(100)
        .op_timeout_ms(100)
        .build()
        .unwrap();
    let lock = LockClient::new(redis().await, config).unwrap();
    let mut conn = redis().await;
    let resource = fresh_resource("keeper-renews");
    let lease = acquire(&lock, &resource).await;
    let key = format!("lock:{{{resource}}}");
    let held = lock
        .hold(&lease, |signal| async move {
            // Three leases long: only renewal can keep the key alive.
            tokio::time::sleep(Duration::from_millis(900)).await;
            signal.lost()
        })
        .await;
    assert_eq!(held.output, None, "the lease was never lost");
    assert_eq!(held.lease_lost, None);
    assert_eq!(
        get(&mut conn, &key).await.as_deref(),
        Some(lease.owner().as_str())
    );
    assert!(lock.release(&lease).await.unwrap());
}

#[tokio::test]
async fn keeper_stops_at_the_renewal_limit_and_signals() {
    let config = LockConfig::builder()
        .lease_ms(300)
        .renew_interval_ms(100)
        .renewals_max(2)
        .op_timeout_ms(100)
        .build()
        .unwrap();
    let lock = LockClient::new(redis().await, config).unwrap();
    let mut conn = redis().await;
    let resource = fresh_resource("keeper-renewals");
    let lease = acquire(&lock, &resource).await;
    let key = format!("lock:{{{resource}}}");
    let held = lock
        .hold(&lease, |signal| async move { signal.wait_lost().await })
        .await;
    assert_eq!(
        held.output,
        LeaseLost::LimitReached {
            renewals: 2,
            held_ms: match &held.output {
                LeaseLost::LimitReached { held_ms, .. } => *held_ms,
                _ => 0,
            }
        }
    );
    assert_eq!(held.lease_lost, Some(held.output.clone()));
    // The signal fires at the earliest instant the lease may have ended (the
    // send time of the last renewal plus the lease); Redis started its TTL a
    // transit later (bounded by the 100 ms operation timeout), so allow that
    // long before checking the key is gone.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        get(&mut conn, &key).await,
        None,
        "the lease ran out after the last renewal"
    );
}

#[tokio::test]
async fn keeper_never_extends_past_the_hold_limit() {
    let config = LockConfig::builder()
        .lease_ms(300)
        .renew_interval_ms(100)
        .hold_ms_max(500)
        .renewals_max(1_000)
        .op_timeout_ms(100)
        .build()
        .unwrap();
    let lock = LockClient::new(redis().await, config).unwrap();
    let mut conn = redis().await;
    let resource = fresh_resource("keeper-hold");
    let key = format!("lock:{{{resource}}}");
    let lease = acquire(&lock, &resource).await;
    let acquired = lease.sent_at();
    let held = lock
        .hold(&lease, |signal| async move {
            let mut end_ms_max = 0u128;
            // Sample the key's end of life while the keeper renews; bounded.
            for _ in 0..100 {
                if signal.lost().is_some() {
                    break;
                }
                let ttl = pttl(&mut conn, &key).await;
                if ttl > 0 {
                    let end = Instant::now() + Duration::from_millis(ttl as u64);
                    end_ms_max = end_ms_max.max((end - acquired).as_millis());
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            end_ms_max
        })
        .await;
    assert!(matches!(
        held.lease_lost,
        Some(LeaseLost::LimitReached { .. })
    ));
    // The last renewal is cut to end at the hold limit as seen when it was
    // sent; Redis starts the TTL on arrival, so the key may outlive the limit
    // by that transit time, which the operation timeout (100 ms) bounds.
    assert!(
        held.output <= 500 + 100,
        "the lock must not outlive acquire + hold_ms_max: it lasted until {} ms",
        held.output
    );
    assert!(
        held.output > 300,
        "renewal must have extended the first lease"
    );
}

#[tokio::test]
async fn keeper_signals_when_another_owner_took_the_lock() {
    let config = LockConfig::builder()
        .lease_ms(300)
        .renew_interval_ms(100)
        .op_timeout_ms(100)
        .build()
        .unwrap();
    let lock = LockClient::new(redis().await, config).unwrap();
    let mut conn = redis().await;
    let resource = fresh_resource("keeper-mismatch");
    let key = format!("lock:{{{resource}}}");
    let lease = acquire(&lock, &resource).await;
    // Someone else's token now sits in the key (as after an expiry and takeover).
    let _: () = redis::cmd("SET")
        .arg(&key)
        .arg("someone-else")
        .arg("PX")
        .arg(10_000)
        .query_async(&mut conn)
        .await
        .unwrap();
    let held = lock
        .hold(&lease, |signal| async move { signal.wait_lost().await })
        .await;
    assert_eq!(held.output, LeaseLost::OwnerMismatch);
    assert_eq!(get(&mut conn, &key).await.as_deref(), Some("someone-else"));
    assert!(
        pttl(&mut conn, &key).await > 5_000,
        "the other owner's TTL is untouched"
    );
}
