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

    // Every port of the cluster, servers and proxies, is claimed for it
    // machine-wide while it lives (no other process of ours picks one,
    // even while a server is stopped or a proxy disabled), and the claims
    // go with it.
    let port_of = |url: &str| -> u16 {
        let rest = &url[url.find("127.0.0.1:").expect("a loopback url") + 10..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().expect("a port")
    };
    let mut ports = vec![port_of(&primary), port_of(&replica)];
    for worker in 0..2 {
        ports.push(port_of(&cluster.worker_redis_url(worker).unwrap()));
        ports.push(port_of(&cluster.worker_postgres_url(worker).unwrap()));
    }
    for port in &ports {
        assert!(
            redfence_chaos::ports::is_claimed_here(*port),
            "{port} unclaimed"
        );
        assert!(redfence_chaos::ports::claim(*port).is_none(), "{port}");
    }
    cluster.shutdown().await;
    // The proxies' claims go as their server's tasks are dropped, which
    // the embedded server's runtime does in the background: bounded wait.
    let released = |ports: &[u16]| {
        ports
            .iter()
            .all(|p| !redfence_chaos::ports::is_claimed_here(*p))
    };
    for _ in 0..100 {
        if released(&ports) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(released(&ports), "claims kept after shutdown: {ports:?}");
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
    assert_refused(&w0, "via the proxy, as by the dead server itself").await;
    cluster.restart_redis().await.unwrap();
    assert_eq!(call(&w0, "PING").await.unwrap(), "+PONG\r\n");
    assert_eq!(
        call(&primary, "GET before-stop").await.unwrap(),
        "$-1\r\n",
        "restarted empty"
    );
    cluster.shutdown().await;
}

/// A connect through `url` is refused outright (not accepted and then
/// closed, which a client can only read as an indeterminate failure).
async fn assert_refused(url: &str, why: &str) {
    let error = call(url, "PING").await.expect_err(why);
    assert_eq!(
        error.kind(),
        std::io::ErrorKind::ConnectionRefused,
        "{why}: {error}"
    );
}

/// A stop and a partition are separate reasons for a path to be down:
/// healing while Redis is down does not open a path to a dead server, and
/// the restart does not end a partition made during the outage.
#[tokio::test]
async fn a_partition_and_an_outage_each_keep_a_path_down_until_they_end() {
    let cluster = local_cluster(2).await;
    let (w0, w1) = (
        cluster.worker_redis_url(0).unwrap(),
        cluster.worker_redis_url(1).unwrap(),
    );
    cluster.partition(0, Path::Redis).await.unwrap();
    cluster.stop_redis().await.unwrap();
    cluster.heal(0, Path::Redis).await.unwrap();
    assert_refused(&w0, "healed, but its server is down").await;
    cluster.partition(1, Path::Redis).await.unwrap();
    cluster.restart_redis().await.unwrap();
    assert_eq!(
        call(&w0, "PING").await.unwrap(),
        "+PONG\r\n",
        "up with its server"
    );
    assert_refused(&w1, "partitioned during the outage, still after it").await;
    cluster.heal(1, Path::Redis).await.unwrap();
    assert_eq!(call(&w1, "PING").await.unwrap(), "+PONG\r\n");
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

/// A snapshot asked for while another RDB child runs (as a replica's full
/// sync forks one after every restart of the primary) waits for it and
/// takes its own: Redis refuses that BGSAVE, SCHEDULE or not, and the other
/// child's snapshot predates the last write.
#[tokio::test]
async fn a_snapshot_during_another_save_waits_for_it_and_takes_its_own() {
    let cluster = local_cluster(1).await;
    let w0 = cluster.worker_redis_url(0).unwrap();
    let primary = cluster.redis_node_url(RedisNode::Primary).unwrap();
    for i in 0..4 {
        assert_eq!(
            call(&w0, &format!("SET filler{i} x")).await.unwrap(),
            "+OK\r\n"
        );
    }
    // The premise needs the primary free of RDB children first: the
    // replica's full sync at the cluster's start forks one, and a BGSAVE
    // sent while it runs is refused (seen once in the real-suite loop).
    // Bounded: at most 200 polls 50 ms apart.
    let mut idle = false;
    for _ in 0..200 {
        let info = call(&primary, "INFO persistence").await.unwrap();
        if info.contains("rdb_bgsave_in_progress:0") {
            idle = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(idle, "the replica's sync child never ended");
    // A child that takes about 0.2 s a key: the delay is read at the fork,
    // so setting it back right after leaves only this child slow.
    let slow = "CONFIG SET rdb-key-save-delay 200000";
    assert_eq!(call(&primary, slow).await.unwrap(), "+OK\r\n");
    let started = call(&primary, "BGSAVE").await.unwrap();
    assert!(
        started.starts_with("+Background saving started"),
        "{started:?}"
    );
    let fast = "CONFIG SET rdb-key-save-delay 0";
    assert_eq!(call(&primary, fast).await.unwrap(), "+OK\r\n");
    let refused = call(&primary, "BGSAVE SCHEDULE").await.unwrap();
    assert!(
        refused.contains("Background save already in progress"),
        "the premise: Redis refuses a second RDB child: {refused:?}"
    );
    assert_eq!(call(&w0, "SET saved 1").await.unwrap(), "+OK\r\n");
    cluster.snapshot_redis().await.unwrap();
    cluster.stop_redis().await.unwrap();
    cluster.restart_redis().await.unwrap();
    assert_eq!(
        call(&w0, "GET saved").await.unwrap(),
        "$1\r\n1\r\n",
        "the snapshot taken after the other child holds the last write"
    );
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

/// A cut divides the writes where the harness decided it: a write the
/// primary answered before the cut reaches the replica even when the
/// replication link is slow. The link here is held 400 ms back, so without
/// the catch-up the write would still be inside the proxy when it goes
/// down, and be lost.
#[tokio::test]
async fn a_cut_keeps_the_writes_answered_before_it() {
    use redfence_chaos::faults::{Stream, ToxicSpec};
    use redfence_chaos::topology::REPLICATION_PROXY;
    let cluster = local_cluster(1).await;
    let w0 = cluster.worker_redis_url(0).unwrap();
    let replica = cluster.redis_node_url(RedisNode::Replica).unwrap();
    cluster.wait_for_replication(5_000).await.unwrap();
    let slow = ToxicSpec::Latency {
        stream: Stream::Downstream,
        latency_ms: 400,
        jitter_ms: 0,
    };
    cluster
        .toxiproxy()
        .add_toxic(REPLICATION_PROXY, slow)
        .await
        .unwrap();
    // The proxy may drop the link as the toxic goes on: wait until the
    // replica is back and caught up, through the slow link.
    cluster.wait_for_replication(15_000).await.unwrap();
    assert_eq!(call(&w0, "SET before-cut 1").await.unwrap(), "+OK\r\n");
    cluster.cut_replication().await.unwrap();
    assert_eq!(
        call(&replica, "GET before-cut").await.unwrap(),
        "$1\r\n1\r\n",
        "answered before the cut, so on the replica"
    );
    assert_eq!(call(&w0, "SET after-cut 1").await.unwrap(), "+OK\r\n");
    tokio::time::sleep(Duration::from_millis(SILENCE_MS)).await;
    assert_eq!(
        call(&replica, "GET after-cut").await.unwrap(),
        "$-1\r\n",
        "made after the cut, so not replicated"
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

/// Three independent masters: each keeps its own keys, and every fault on
/// master 2 (partition, lost replies, latency, snapshot, crash, restart,
/// clock jump) reaches master 2 alone — seen through the workers' own
/// proxies, as a worker sees it — while masters 0 and 1 answer as before.
#[tokio::test]
async fn three_masters_keep_their_own_keys_and_a_fault_on_one_stays_there() {
    let config = redfence_chaos::ChaosConfig::local_from_env().expect("config");
    let cluster = redfence_chaos::RealCluster::start_with_masters(&config, 2, 3)
        .await
        .unwrap_or_else(|e| panic!("local cluster with 3 masters: {e}"));
    assert_eq!(cluster.masters(), 3);
    assert!(
        matches!(
            cluster.worker_master_url(0, 3),
            Err(redfence_chaos::ChaosError::NoSuchMaster {
                master: 3,
                masters: 3
            })
        ),
        "no fourth master"
    );
    let path = |worker: usize, master: usize| cluster.worker_master_url(worker, master).unwrap();
    assert_eq!(path(0, 0), cluster.worker_redis_url(0).unwrap());
    let direct = |master: usize| {
        let node = match master {
            0 => RedisNode::Primary,
            m => RedisNode::Master(m),
        };
        cluster.redis_node_url(node).unwrap()
    };

    // Each master its own value of one key, written through worker 0's
    // proxies, read back through worker 1's and directly.
    for master in 0..3 {
        let set = format!("SET k m{master}");
        assert_eq!(call(&path(0, master), &set).await.unwrap(), "+OK\r\n");
    }
    let holds = |master: usize| format!("$2\r\nm{master}\r\n");
    for master in 0..3 {
        assert_eq!(
            call(&path(1, master), "GET k").await.unwrap(),
            holds(master)
        );
        assert_eq!(call(&direct(master), "GET k").await.unwrap(), holds(master));
    }

    // Partition: worker 0 loses master 2 alone.
    cluster.partition(0, Path::Master(2)).await.unwrap();
    let refused = Raw::connect(&path(0, 2)).await.map(|_| ()).unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
    for (worker, master) in [(0, 0), (0, 1), (1, 2)] {
        assert_eq!(
            call(&path(worker, master), "PING").await.unwrap(),
            "+PONG\r\n",
            "w{worker} to master {master} unaffected"
        );
    }
    cluster.heal(0, Path::Master(2)).await.unwrap();
    assert_eq!(call(&path(0, 2), "PING").await.unwrap(), "+PONG\r\n");

    // Lost replies on worker 0's path to master 2: the command runs there.
    cluster.drop_replies(0, Path::Master(2)).await.unwrap();
    let mut conn = Raw::connect(&path(0, 2)).await.unwrap();
    conn.send("SET lost-reply executed").await.unwrap();
    let silence = conn.reply_within(SILENCE_MS).await;
    assert_eq!(
        silence.unwrap_err().kind(),
        std::io::ErrorKind::TimedOut,
        "no reply from master 2"
    );
    assert_eq!(
        call(&path(1, 2), "GET lost-reply").await.unwrap(),
        "$8\r\nexecuted\r\n",
        "it ran on master 2"
    );
    for master in [0, 1] {
        assert_eq!(
            call(&path(0, master), "GET lost-reply").await.unwrap(),
            "$-1\r\n",
            "master {master} answers worker 0, and never saw the write"
        );
    }
    cluster.restore_replies(0, Path::Master(2)).await.unwrap();
    assert_eq!(
        call(&path(0, 2), "GET lost-reply").await.unwrap(),
        "$8\r\nexecuted\r\n"
    );

    // Latency on worker 0's path to master 2 alone.
    cluster.set_latency(0, Path::Master(2), 50).await.unwrap();
    let slowed = median_ping(&path(0, 2), 3).await;
    let other = median_ping(&path(0, 1), 3).await;
    cluster.set_latency(0, Path::Master(2), 0).await.unwrap();
    assert!(slowed >= Duration::from_millis(100), "{slowed:?}");
    assert!(other < Duration::from_millis(50), "master 1: {other:?}");

    // Snapshot, crash and restart of master 2: it comes back with what it
    // held at the snapshot; the others never stopped.
    assert_eq!(
        call(&path(0, 2), "SET lock:{saved} a PX 60000")
            .await
            .unwrap(),
        "+OK\r\n"
    );
    cluster.snapshot_master(2).await.unwrap();
    assert_eq!(
        call(&path(0, 2), "SET lock:{lost} b PX 60000")
            .await
            .unwrap(),
        "+OK\r\n"
    );
    cluster.stop_master(2).await.unwrap();
    assert!(call(&direct(2), "PING").await.is_err(), "master 2 down");
    let through = call(&path(1, 2), "PING").await;
    assert!(
        matches!(through.as_deref(), Ok("") | Err(_)),
        "no answer via the proxy: {through:?}"
    );
    for master in [0, 1] {
        assert_eq!(
            call(&path(1, master), "GET k").await.unwrap(),
            holds(master),
            "master {master} still up, with its key"
        );
    }
    cluster.restart_master(2).await.unwrap();
    assert_eq!(
        call(&path(1, 2), "GET lock:{saved}").await.unwrap(),
        "$1\r\na\r\n",
        "the snapshot's lock is back on master 2"
    );
    assert_eq!(
        call(&path(1, 2), "GET lock:{lost}").await.unwrap(),
        "$-1\r\n",
        "the lock set after the snapshot is gone"
    );

    // An emulated clock jump on master 2 shortens its leases only.
    for master in [1, 2] {
        assert_eq!(
            call(&path(0, master), "SET lease x PX 60000")
                .await
                .unwrap(),
            "+OK\r\n"
        );
    }
    cluster.emulate_master_clock_jump(2, 30_000).await.unwrap();
    let pttl = |reply: String| -> i64 { reply.trim_start_matches(':').trim().parse().unwrap() };
    let on_2 = pttl(call(&path(0, 2), "PTTL lease").await.unwrap());
    let on_1 = pttl(call(&path(0, 1), "PTTL lease").await.unwrap());
    assert!((1..=30_000).contains(&on_2), "master 2 jumped: {on_2}");
    assert!(on_1 > 50_000, "master 1 did not: {on_1}");

    // Every master has its own tape; master 2's says what it loaded.
    let tapes = cluster.redis_tapes().await;
    let nodes: Vec<RedisNode> = tapes.iter().map(|t| t.node).collect();
    assert_eq!(
        nodes,
        [
            RedisNode::Primary,
            RedisNode::Replica,
            RedisNode::Master(1),
            RedisNode::Master(2)
        ]
    );
    let loaded: Vec<Vec<String>> = tapes[3]
        .tape
        .entries
        .iter()
        .filter_map(|e| match e {
            redfence_chaos::monitor::TapeEntry::Mark {
                mark: redfence_chaos::monitor::Mark::Loaded(snap),
                ..
            } => Some(
                snap.strings
                    .iter()
                    .map(|(key, _, _)| String::from_utf8_lossy(key).into_owned())
                    .collect(),
            ),
            _ => None,
        })
        .collect();
    assert_eq!(loaded.len(), 2, "at the start and at the restart");
    assert!(loaded[0].is_empty(), "started empty: {loaded:?}");
    assert!(
        loaded[1].contains(&"lock:{saved}".to_owned())
            && !loaded[1].contains(&"lock:{lost}".to_owned()),
        "{loaded:?}"
    );
    assert!(tapes.iter().all(|t| t.tape.gaps.is_empty()));
    cluster.shutdown().await;
}
