//! Every topology operation against real Redis and PostgreSQL processes
//! (the local provider), each checked by what the servers themselves say.
//!
//! Run under scripts/with-services (it installs redis-server and
//! PostgreSQL); one cluster per test, so a fault never leaks between tests.

mod common;

use std::time::Duration;

use common::{call, local_cluster, median_ping, pg, Raw};
use redfence_chaos::{Path, ProviderKind, RedisNode};
use sqlx::{Connection, Executor, Row};

/// How long a reply that must not come is waited for.
const SILENCE_MS: u64 = 700;

#[tokio::test]
async fn worker_paths_reach_the_servers_and_the_database_is_migrated() {
    let cluster = local_cluster(2).await;
    assert_eq!(cluster.provider(), ProviderKind::Local);
    let primary = cluster.redis_node_url(RedisNode::Primary).unwrap();
    let replica = cluster.redis_node_url(RedisNode::Replica).unwrap();
    for worker in 0..2 {
        let url = cluster.worker_redis_url(worker).unwrap();
        assert_ne!(url, primary, "workers go through their proxy");
        assert_eq!(
            call(&url, &format!("SET k{worker} v{worker}"))
                .await
                .unwrap(),
            "+OK\r\n"
        );
        assert_eq!(
            call(&primary, &format!("GET k{worker}")).await.unwrap(),
            format!("$2\r\nv{worker}\r\n")
        );
    }
    cluster
        .wait_for_replication(5_000)
        .await
        .expect("replica catches up");
    assert_eq!(call(&replica, "GET k1").await.unwrap(), "$2\r\nv1\r\n");
    assert!(call(&replica, "INFO replication")
        .await
        .unwrap()
        .contains("role:slave"));

    let mut conn = pg(&cluster.worker_postgres_url(0).unwrap())
        .await
        .expect("pg through proxy");
    let tables: i64 = conn
        .fetch_one(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'resource_guards'",
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(tables, 1, "the core's migrations ran");
    assert!(cluster.worker_redis_url(2).is_err(), "no third worker");
    cluster.shutdown().await;
}

#[tokio::test]
async fn partition_and_heal_a_worker_from_redis() {
    let cluster = local_cluster(2).await;
    let (w0, w1) = (
        cluster.worker_redis_url(0).unwrap(),
        cluster.worker_redis_url(1).unwrap(),
    );
    let mut live = Raw::connect(&w0).await.unwrap();
    assert_eq!(live.call("PING").await.unwrap(), "+PONG\r\n");

    cluster.partition(0, Path::Redis).await.unwrap();
    let closed = live.call("PING").await;
    assert!(
        matches!(closed.as_deref(), Ok("") | Err(_)),
        "live connection closed: {closed:?}"
    );
    let refused = Raw::connect(&w0).await.map(|_| ()).unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
    assert_eq!(
        call(&w1, "PING").await.unwrap(),
        "+PONG\r\n",
        "worker 1 unaffected"
    );

    cluster.heal(0, Path::Redis).await.unwrap();
    assert_eq!(call(&w0, "PING").await.unwrap(), "+PONG\r\n");
    cluster.shutdown().await;
}

#[tokio::test]
async fn partition_and_heal_a_worker_from_postgres() {
    let cluster = local_cluster(2).await;
    let url0 = cluster.worker_postgres_url(0).unwrap();
    cluster.partition(0, Path::Postgres).await.unwrap();
    assert!(
        pg(&url0).await.is_err(),
        "no connection through a downed proxy"
    );
    assert!(
        pg(&cluster.worker_postgres_url(1).unwrap()).await.is_ok(),
        "worker 1 unaffected"
    );
    cluster.heal(0, Path::Postgres).await.unwrap();
    let mut conn = pg(&url0).await.expect("healed");
    conn.execute("SELECT 1").await.unwrap();
    cluster.shutdown().await;
}

#[tokio::test]
async fn dropped_redis_replies_lose_the_answer_but_the_command_runs() {
    let cluster = local_cluster(2).await;
    let w0 = cluster.worker_redis_url(0).unwrap();
    let primary = cluster.redis_node_url(RedisNode::Primary).unwrap();
    let mut live = Raw::connect(&w0).await.unwrap();
    assert_eq!(live.call("PING").await.unwrap(), "+PONG\r\n");

    cluster.drop_replies(0, Path::Redis).await.unwrap();
    // Installing the fault closed the live connection (embedded server: a
    // toxic change restarts the proxy); the client reconnects into it.
    let closed = live.call("PING").await;
    assert!(matches!(closed.as_deref(), Ok("") | Err(_)), "{closed:?}");
    let mut conn = Raw::connect(&w0).await.unwrap();
    conn.send("SET lost-reply executed").await.unwrap();
    let silence = conn.reply_within(SILENCE_MS).await;
    assert_eq!(
        silence.unwrap_err().kind(),
        std::io::ErrorKind::TimedOut,
        "no reply"
    );
    assert_eq!(
        call(&primary, "GET lost-reply").await.unwrap(),
        "$8\r\nexecuted\r\n",
        "it ran"
    );
    assert_eq!(
        call(&cluster.worker_redis_url(1).unwrap(), "PING")
            .await
            .unwrap(),
        "+PONG\r\n"
    );

    cluster.restore_replies(0, Path::Redis).await.unwrap();
    let after = conn.call("PING").await;
    assert!(
        matches!(after.as_deref(), Ok("") | Err(_)),
        "the out-of-step connection is closed: {after:?}"
    );
    assert_eq!(
        call(&w0, "GET lost-reply").await.unwrap(),
        "$8\r\nexecuted\r\n"
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn dropped_postgres_replies_close_live_connections_and_block_new_ones() {
    let cluster = local_cluster(2).await;
    let url = cluster.worker_postgres_url(0).unwrap();
    let mut conn = pg(&url).await.unwrap();
    conn.execute("SELECT 1").await.unwrap();

    cluster.drop_replies(0, Path::Postgres).await.unwrap();
    // The embedded server applies a toxic by restarting the proxy: the live
    // connection is closed, and a new one cannot finish PostgreSQL's
    // startup handshake, whose answers are dropped (README: with the
    // embedded server a Postgres lost reply shows as an unusable path).
    assert!(
        conn.execute("SELECT 1").await.is_err(),
        "live connection closed"
    );
    let blocked = tokio::time::timeout(
        Duration::from_millis(SILENCE_MS),
        sqlx::PgConnection::connect(&url),
    )
    .await;
    assert!(
        !matches!(blocked, Ok(Ok(_))),
        "no handshake completes while replies vanish"
    );
    assert!(
        pg(&cluster.worker_postgres_url(1).unwrap()).await.is_ok(),
        "worker 1 unaffected"
    );

    cluster.restore_replies(0, Path::Postgres).await.unwrap();
    let mut fresh = pg(&url).await.expect("replies flow again");
    fresh.execute("SELECT 1").await.unwrap();
    fresh.close().await.unwrap();
    cluster.shutdown().await;
}

#[tokio::test]
async fn latency_slows_only_that_worker_and_goes_away() {
    let cluster = local_cluster(2).await;
    let (w0, w1) = (
        cluster.worker_redis_url(0).unwrap(),
        cluster.worker_redis_url(1).unwrap(),
    );
    let before = median_ping(&w0, 5).await;
    cluster.set_latency(0, Path::Redis, 50).await.unwrap();
    let slowed = median_ping(&w0, 5).await;
    let other = median_ping(&w1, 5).await;
    cluster.set_latency(0, Path::Redis, 0).await.unwrap();
    let after = median_ping(&w0, 5).await;
    eprintln!("PING via proxy: {before:?}; +50 ms each way: {slowed:?}; other worker {other:?}; removed: {after:?}");
    assert!(
        slowed >= Duration::from_millis(100),
        "50 ms each way: {slowed:?}"
    );
    assert!(slowed < Duration::from_millis(400), "{slowed:?}");
    assert!(
        other < Duration::from_millis(50),
        "worker 1 unaffected: {other:?}"
    );
    assert!(
        after < Duration::from_millis(50),
        "latency removed: {after:?}"
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn stop_and_restart_redis_comes_back_empty() {
    let cluster = local_cluster(1).await;
    let w0 = cluster.worker_redis_url(0).unwrap();
    let primary = cluster.redis_node_url(RedisNode::Primary).unwrap();
    assert_eq!(call(&w0, "SET before-stop 1").await.unwrap(), "+OK\r\n");
    cluster.stop_redis().await.unwrap();
    assert!(call(&primary, "PING").await.is_err(), "primary down");
    let through = call(&w0, "PING").await;
    assert!(
        matches!(through.as_deref(), Ok("") | Err(_)),
        "no answer via the proxy: {through:?}"
    );
    cluster.restart_redis().await.unwrap();
    assert_eq!(call(&w0, "PING").await.unwrap(), "+PONG\r\n");
    assert_eq!(
        call(&primary, "GET before-stop").await.unwrap(),
        "$-1\r\n",
        "restarted empty"
    );
    cluster.shutdown().await;
}

/// Snapshot-only persistence, for real: a lock granted before a `BGSAVE`
/// survives a `kill -9` and restart (with what was left of its lease), one
/// granted after it is gone, and the recorder's tape says what the
/// restarted server loaded.
#[tokio::test]
async fn a_restart_after_a_snapshot_loses_exactly_the_writes_after_it() {
    let cluster = local_cluster(1).await;
    let w0 = cluster.worker_redis_url(0).unwrap();
    let primary = cluster.redis_node_url(RedisNode::Primary).unwrap();
    let set = "SET lock:{saved} owner-a PX 60000 NX";
    assert_eq!(call(&w0, set).await.unwrap(), "+OK\r\n");
    cluster.snapshot_redis().await.unwrap();
    let set = "SET lock:{lost} owner-b PX 60000 NX";
    assert_eq!(call(&w0, set).await.unwrap(), "+OK\r\n");
    cluster.stop_redis().await.unwrap();
    assert!(call(&primary, "PING").await.is_err(), "primary down");
    cluster.restart_redis().await.unwrap();
    assert_eq!(
        call(&w0, "GET lock:{saved}").await.unwrap(),
        "$7\r\nowner-a\r\n",
        "the lock granted before the snapshot is back"
    );
    let pttl = call(&w0, "PTTL lock:{saved}").await.unwrap();
    let left_ms: i64 = pttl.trim_start_matches(':').trim().parse().unwrap();
    assert!(
        (1..=60_000).contains(&left_ms),
        "with the rest of its lease: {pttl:?}"
    );
    assert_eq!(
        call(&w0, "GET lock:{lost}").await.unwrap(),
        "$-1\r\n",
        "the lock granted after the snapshot is gone"
    );
    let tapes = cluster.redis_tapes().await;
    let tape = tapes.iter().find(|t| t.node == RedisNode::Primary).unwrap();
    let loaded = tape.tape.entries.iter().rev().find_map(|e| match e {
        redfence_chaos::monitor::TapeEntry::Mark {
            mark: redfence_chaos::monitor::Mark::Loaded(snap),
            ..
        } => Some(snap.clone()),
        _ => None,
    });
    let keys: Vec<String> = loaded
        .expect("the restart is marked with what it loaded")
        .strings
        .iter()
        .map(|(key, _, _)| String::from_utf8_lossy(key).into_owned())
        .collect();
    assert_eq!(keys, vec!["lock:{saved}".to_owned()]);
    cluster.shutdown().await;
}

#[tokio::test]
async fn cut_replication_holds_writes_back_until_restored() {
    let cluster = local_cluster(1).await;
    let w0 = cluster.worker_redis_url(0).unwrap();
    let replica = cluster.redis_node_url(RedisNode::Replica).unwrap();
    cluster.cut_replication().await.unwrap();
    assert_eq!(call(&w0, "SET during-cut 1").await.unwrap(), "+OK\r\n");
    tokio::time::sleep(Duration::from_millis(SILENCE_MS)).await;
    assert_eq!(
        call(&replica, "GET during-cut").await.unwrap(),
        "$-1\r\n",
        "not replicated"
    );
    assert!(call(&replica, "INFO replication")
        .await
        .unwrap()
        .contains("master_link_status:down"));
    cluster.restore_replication().await.unwrap();
    cluster
        .wait_for_replication(15_000)
        .await
        .expect("caught up");
    assert_eq!(
        call(&replica, "GET during-cut").await.unwrap(),
        "$1\r\n1\r\n"
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn fail_over_promotes_the_replica_and_loses_unreplicated_writes() {
    let cluster = local_cluster(2).await;
    let w0 = cluster.worker_redis_url(0).unwrap();
    let primary = cluster.redis_node_url(RedisNode::Primary).unwrap();
    let replica = cluster.redis_node_url(RedisNode::Replica).unwrap();
    assert_eq!(call(&w0, "INCR fence").await.unwrap(), ":1\r\n");
    cluster.wait_for_replication(5_000).await.unwrap();
    cluster.cut_replication().await.unwrap();
    assert_eq!(
        call(&w0, "INCR fence").await.unwrap(),
        ":2\r\n",
        "acknowledged, never replicated"
    );

    cluster.fail_over().await.unwrap();
    assert_eq!(cluster.current_primary().await, RedisNode::Replica);
    assert!(call(&primary, "PING").await.is_err(), "old primary stopped");
    assert!(call(&replica, "INFO replication")
        .await
        .unwrap()
        .contains("role:master"));
    for worker in 0..2 {
        let url = cluster.worker_redis_url(worker).unwrap();
        // The counter regressed: the next INCR hands out 2 again.
        assert_eq!(
            call(&url, "GET fence").await.unwrap(),
            "$1\r\n1\r\n",
            "worker {worker}"
        );
    }
    assert_eq!(
        call(&w0, "INCR fence").await.unwrap(),
        ":2\r\n",
        "fence 2 issued twice"
    );

    // Stop/restart now act on the new primary.
    cluster.stop_redis().await.unwrap();
    assert!(call(&replica, "PING").await.is_err());
    cluster.restart_redis().await.unwrap();
    assert_eq!(call(&w0, "PING").await.unwrap(), "+PONG\r\n");
    assert!(cluster.fail_over().await.is_err(), "no second replica");
    cluster.shutdown().await;
}
