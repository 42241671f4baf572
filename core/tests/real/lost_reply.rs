//! Lost replies: the acquire script ran on Redis, but its answer never reached
//! the client. The outcome must be treated as unknown, then settled by
//! re-asking with the same owner token — never guessed.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use redfence_core::*;

use crate::support::*;

/// A sleeper that, the first time the client pauses (which it does between a
/// lost reply and its re-ask), lets replies through again.
#[derive(Debug)]
struct HealOnFirstSleep {
    proxy: ReplyLosingProxy,
    sleeps: AtomicU32,
}

impl Sleeper for HealOnFirstSleep {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        if self.sleeps.fetch_add(1, Ordering::SeqCst) == 0 {
            self.proxy.deliver_replies();
        }
        Box::pin(tokio::time::sleep(duration))
    }
}

fn config(reasks_max: u32) -> LockConfig {
    LockConfig::builder()
        .lease_ms(5_000)
        .op_timeout_ms(500)
        .backoff_base_ms(5)
        .backoff_cap_ms(20)
        .reasks_max(reasks_max)
        .build()
        .unwrap()
}

#[tokio::test]
async fn lost_acquire_reply_is_settled_by_reasking_with_the_same_token() {
    let metrics = Metrics::install();
    let proxy = ReplyLosingProxy::start(redis_addr()).await;
    // A connection manager reconnects after the broken connection, as a
    // production client must.
    let conn = redis::Client::open(proxy.url())
        .unwrap()
        .get_connection_manager()
        .await
        .unwrap();
    let sleeper = Arc::new(HealOnFirstSleep {
        proxy: proxy.clone(),
        sleeps: AtomicU32::new(0),
    });
    let lock = LockClient::builder(conn, config(3))
        .sleeper(sleeper.clone())
        .build()
        .unwrap();
    let resource = fresh_resource("lost-reply");
    let mut direct = redis().await;

    proxy.lose_next_reply();
    let lease = match lock.acquire(&resource).await.unwrap() {
        AcquireOutcome::Acquired(lease) => lease,
        other => panic!("the first attempt won; the re-ask must find out: {other:?}"),
    };
    assert!(
        sleeper.sleeps.load(Ordering::SeqCst) >= 1,
        "a re-ask happened"
    );
    // The script ran exactly once: one fence was issued and it is ours.
    let fence_key = format!("fence:{{{resource}}}");
    assert_eq!(
        get(&mut direct, &fence_key).await,
        Some(lease.fence().to_string())
    );
    assert_eq!(lease.fence().get(), 1);
    let lock_key = format!("lock:{{{resource}}}");
    assert_eq!(
        get(&mut direct, &lock_key).await.as_deref(),
        Some(lease.owner().as_str())
    );
    assert_eq!(
        metrics.counter("lock_reask_total", &[("result", "held")]),
        1,
        "the re-ask settled the outcome as held"
    );
    assert!(lock.release(&lease).await.unwrap());
}

#[tokio::test]
async fn unsettled_lost_reply_is_an_error_never_acquired() {
    let proxy = ReplyLosingProxy::start(redis_addr()).await;
    let conn = redis::Client::open(proxy.url())
        .unwrap()
        .get_connection_manager()
        .await
        .unwrap();
    // No re-asks allowed: the client cannot know, so it must not claim the lease.
    let lock = LockClient::new(conn, config(0)).unwrap();
    // One whole acquire and release first, so that nothing is still owed on
    // the connection (the handshake, a NOSCRIPT answer and the script load)
    // and the reply lost is the acquire script's own. Without it, a run
    // under nextest (every test in a process of its own) once lost another
    // reply: the script never ran and the fence key stayed unset.
    let warm = fresh_resource("lost-reply-unsettled-warm");
    match lock.acquire(&warm).await.unwrap() {
        AcquireOutcome::Acquired(lease) => assert!(lock.release(&lease).await.unwrap()),
        other => panic!("uncontended resource: {other:?}"),
    }
    let resource = fresh_resource("lost-reply-unsettled");
    let mut direct = redis().await;
    proxy.lose_next_reply();
    let err = lock.acquire(&resource).await.unwrap_err();
    assert!(
        matches!(err, LockError::Indeterminate { reasks: 0, .. }),
        "got {err:?}"
    );
    // The client gave back the lease its lost attempt may have taken.
    let lock_key = format!("lock:{{{resource}}}");
    assert_eq!(get(&mut direct, &lock_key).await, None);
    let fence_key = format!("fence:{{{resource}}}");
    assert_eq!(
        get(&mut direct, &fence_key).await.as_deref(),
        Some("1"),
        "the script did run"
    );
}

/// On a redis-rs multiplexed connection the client leaves the per-operation
/// bound to the connection's own response timeout, set to `op_timeout` on
/// the client's handle only. A reply held past it must still be an
/// indeterminate outcome, never "acquired" — and the caller's handle of the
/// same connection must keep its own timeout.
#[tokio::test]
async fn reply_held_past_op_timeout_on_a_multiplexed_connection_is_indeterminate() {
    // A server of the test's own: CLIENT PAUSE would stall every other test.
    let own = OwnRedis::start().await;
    let client = redis::Client::open(own.url.as_str()).unwrap();
    let no_timeout = redis::AsyncConnectionConfig::new().set_response_timeout(None);
    let conn = client
        .get_multiplexed_async_connection_with_config(&no_timeout)
        .await
        .unwrap();
    let config = LockConfig::builder()
        .lease_ms(5_000)
        .op_timeout_ms(200)
        .reasks_max(0)
        .build()
        .unwrap();
    let lock = LockClient::new(conn.clone(), config).unwrap();
    let resource = fresh_resource("held-reply");
    // Load the scripts first, so that the held command is the EVALSHA itself.
    match lock.acquire(&resource).await.unwrap() {
        AcquireOutcome::Acquired(lease) => assert!(lock.release(&lease).await.unwrap()),
        other => panic!("uncontended resource: {other:?}"),
    }
    let mut admin = client.get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(1_500)
        .arg("ALL")
        .query_async(&mut admin)
        .await
        .unwrap();
    let err = lock
        .attempt(&resource, &lock.next_owner_token())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, LockError::Indeterminate { reasks: 0, last, .. }
            if last.contains("no reply within 200ms")),
        "got {err:?}"
    );
    // Still paused: the caller's handle, which has no response timeout,
    // waits the pause out instead of failing at the lock's 200 ms.
    let mut callers = conn.clone();
    let pong: String = redis::cmd("PING").query_async(&mut callers).await.unwrap();
    assert_eq!(pong, "PONG");
}
