//! Acquire, release and renew against a real redis-server.

use redfence_core::*;

use crate::support::*;

fn config() -> LockConfig {
    LockConfig::builder()
        .lease_ms(300)
        .op_timeout_ms(200)
        .acquire_deadline_ms(100)
        .backoff_base_ms(5)
        .backoff_cap_ms(20)
        .build()
        .unwrap()
}

async fn client() -> LockClient<redis::aio::MultiplexedConnection> {
    LockClient::new(redis().await, config()).unwrap()
}

fn acquired(outcome: AcquireOutcome) -> Lease {
    match outcome {
        AcquireOutcome::Acquired(lease) => lease,
        other => panic!("expected the lease, got {other:?}"),
    }
}

#[tokio::test]
async fn fences_increase_across_owners_and_keys_share_a_tag() {
    let lock = client().await;
    let mut conn = redis().await;
    let resource = fresh_resource("fences");
    let mut last = 0;
    for _ in 0..5 {
        let lease = acquired(lock.acquire(&resource).await.unwrap());
        assert!(
            lease.fence().get() > last,
            "fence must grow with every ownership"
        );
        last = lease.fence().get();
        let key = format!("lock:{{{resource}}}");
        assert_eq!(
            get(&mut conn, &key).await.as_deref(),
            Some(lease.owner().as_str())
        );
        assert!(lock.release(&lease).await.unwrap());
        assert_eq!(get(&mut conn, &key).await, None);
    }
    let fence_key = format!("fence:{{{resource}}}");
    assert_eq!(get(&mut conn, &fence_key).await, Some(last.to_string()));
}

/// The script returns the fence as INCR's integer below 2^53 and as the
/// counter's string from there on (a Lua number is a double); across that
/// boundary every fence must still be the counter's exact value — 2^53 + 1
/// is the first integer a double cannot hold.
#[tokio::test]
async fn fences_stay_exact_across_two_to_the_53() {
    let lock = client().await;
    let mut conn = redis().await;
    let resource = fresh_resource("fences-2-53");
    let fence_key = format!("fence:{{{resource}}}");
    let start: i64 = (1 << 53) - 3;
    let _: () = redis::cmd("SET")
        .arg(&fence_key)
        .arg(start)
        .query_async(&mut conn)
        .await
        .unwrap();
    for expected in start + 1..=start + 5 {
        let owner = lock.next_owner_token();
        let Attempt::Acquired(lease) = lock.attempt(&resource, &owner).await.unwrap() else {
            panic!("uncontended resource");
        };
        assert_eq!(lease.fence().get(), expected);
        // The idempotent re-ask reads the counter back: the same exact fence.
        let Attempt::Acquired(again) = lock.attempt(&resource, &owner).await.unwrap() else {
            panic!("the holder's re-ask must report the lease as held");
        };
        assert_eq!(again.fence(), lease.fence());
        assert!(lock.release(&lease).await.unwrap());
    }
    assert_eq!(
        get(&mut conn, &fence_key).await,
        Some((start + 5).to_string())
    );
}

#[tokio::test]
async fn every_acquire_uses_a_fresh_owner_token() {
    let lock = client().await;
    let resource = fresh_resource("tokens");
    let a = acquired(lock.acquire(&resource).await.unwrap());
    lock.release(&a).await.unwrap();
    let b = acquired(lock.acquire(&resource).await.unwrap());
    assert_ne!(a.owner(), b.owner());
    lock.release(&b).await.unwrap();
}

#[tokio::test]
async fn contended_acquire_returns_retry_later_within_bounds() {
    let lock = client().await;
    let resource = fresh_resource("contended");
    let held = acquired(lock.acquire(&resource).await.unwrap());
    match lock.acquire(&resource).await.unwrap() {
        AcquireOutcome::RetryLater { attempts, .. } => {
            assert!(attempts >= 1 && attempts <= config().attempts_max())
        }
        other => panic!("second owner must not get the lease: {other:?}"),
    }
    lock.release(&held).await.unwrap();
}

#[tokio::test]
async fn attempts_bound_the_retry_loop() {
    let config = LockConfig::builder()
        .lease_ms(5_000)
        .acquire_deadline_ms(60_000)
        .attempts_max(3)
        .backoff_base_ms(1)
        .backoff_cap_ms(2)
        .build()
        .unwrap();
    let lock = LockClient::new(redis().await, config).unwrap();
    let resource = fresh_resource("attempts");
    let held = acquired(lock.acquire(&resource).await.unwrap());
    assert!(matches!(
        lock.acquire(&resource).await.unwrap(),
        AcquireOutcome::RetryLater { attempts: 3, .. }
    ));
    lock.release(&held).await.unwrap();
}

#[tokio::test]
async fn reacquire_with_the_same_owner_token_is_idempotent() {
    let lock = client().await;
    let mut conn = redis().await;
    let resource = fresh_resource("idempotent");
    let owner = lock.next_owner_token();
    let Attempt::Acquired(first) = lock.attempt(&resource, &owner).await.unwrap() else {
        panic!("first attempt must acquire");
    };
    let Attempt::Acquired(again) = lock.attempt(&resource, &owner).await.unwrap() else {
        panic!("a re-ask with the holder's token must report the lease as held");
    };
    assert_eq!(
        first.fence(),
        again.fence(),
        "a re-ask must not issue a new fence"
    );
    let fence_key = format!("fence:{{{resource}}}");
    assert_eq!(
        get(&mut conn, &fence_key).await,
        Some(first.fence().to_string())
    );
    let other = lock.next_owner_token();
    assert_eq!(
        lock.attempt(&resource, &other).await.unwrap(),
        Attempt::Contended
    );
    lock.release(&first).await.unwrap();
}

#[tokio::test]
async fn late_unlock_leaves_the_new_owners_lock() {
    let lock = client().await;
    let mut conn = redis().await;
    let resource = fresh_resource("late-unlock");
    let a = acquired(lock.acquire(&resource).await.unwrap());
    tokio::time::sleep(std::time::Duration::from_millis(a.lease_ms() + 50)).await;
    let b = acquired(lock.acquire(&resource).await.unwrap());
    assert!(b.fence() > a.fence());
    assert!(
        !lock.release(&a).await.unwrap(),
        "A's release must report nothing deleted"
    );
    let key = format!("lock:{{{resource}}}");
    assert_eq!(
        get(&mut conn, &key).await.as_deref(),
        Some(b.owner().as_str())
    );
    assert!(lock.release(&b).await.unwrap());
}

#[tokio::test]
async fn only_the_owner_can_renew() {
    let lock = client().await;
    let mut conn = redis().await;
    let resource = fresh_resource("renew-owner");
    let a = acquired(lock.acquire(&resource).await.unwrap());
    let key = format!("lock:{{{resource}}}");
    assert!(matches!(
        lock.renew(&a, 60_000).await.unwrap(),
        Renewal::Renewed { .. }
    ));
    assert!(
        pttl(&mut conn, &key).await > 30_000,
        "the owner's renewal extends the TTL"
    );
    lock.release(&a).await.unwrap();

    let b = acquired(lock.acquire(&resource).await.unwrap());
    // A's lease object is stale now: its renewal must not touch B's lock.
    assert_eq!(
        lock.renew(&a, 60_000).await.unwrap(),
        Renewal::OwnerMismatch
    );
    assert!(
        pttl(&mut conn, &key).await <= 300,
        "B's TTL must be untouched"
    );
    assert_eq!(
        get(&mut conn, &key).await.as_deref(),
        Some(b.owner().as_str())
    );
    lock.release(&b).await.unwrap();
}

#[tokio::test]
async fn wrongtype_on_the_fence_key_leaves_no_lock() {
    let lock = client().await;
    let mut conn = redis().await;
    let resource = fresh_resource("wrongtype");
    let fence_key = format!("fence:{{{resource}}}");
    let _: () = redis::cmd("LPUSH")
        .arg(&fence_key)
        .arg("not-a-counter")
        .query_async(&mut conn)
        .await
        .unwrap();
    let err = lock.acquire(&resource).await.unwrap_err();
    assert!(matches!(err, LockError::Redis(_)), "got {err:?}");
    assert!(err.to_string().contains("WRONGTYPE"), "got {err}");
    let exists: i64 = redis::cmd("EXISTS")
        .arg(format!("lock:{{{resource}}}"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(exists, 0, "a failed INCR must leave no lease behind");
}

#[tokio::test]
async fn scripts_survive_a_flushed_script_cache() {
    let lock = client().await;
    let mut conn = redis().await;
    let resource = fresh_resource("noscript");
    let a = acquired(lock.acquire(&resource).await.unwrap());
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut conn)
        .await
        .unwrap();
    // EVALSHA now answers NOSCRIPT; the client must load and retry.
    assert!(lock.release(&a).await.unwrap());
}

#[tokio::test]
async fn redis_down_fails_closed_with_a_typed_error() {
    let mut own = OwnRedis::start().await;
    let conn = redis::Client::open(own.url.as_str())
        .unwrap()
        .get_connection_manager()
        .await
        .unwrap();
    let lock = LockClient::new(conn, config()).unwrap();
    let resource = fresh_resource("down");
    let lease = acquired(lock.acquire(&resource).await.unwrap());
    lock.release(&lease).await.unwrap();
    own.stop();
    let err = lock.acquire(&resource).await.unwrap_err();
    assert!(
        matches!(err, LockError::Redis(_) | LockError::Indeterminate { .. }),
        "got {err:?}"
    );
}

#[tokio::test]
async fn builder_refuses_a_missing_or_mismatched_fence_source() {
    let postgres = LockConfig::builder()
        .fence_source(FenceSourceKind::Store)
        .build()
        .unwrap();
    assert_eq!(
        LockClient::new(redis().await, postgres).unwrap_err(),
        ConfigError::FenceSourceMissing { kind: "store" }
    );
    let err = LockClient::builder(redis().await, LockConfig::default())
        .postgres_fences(store().await)
        .build()
        .unwrap_err();
    assert_eq!(
        err,
        ConfigError::FenceSourceMismatch {
            configured: "redis-counter",
            supplied: "store"
        }
    );
}
