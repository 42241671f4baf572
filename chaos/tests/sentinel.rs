//! Sentinel failover on real servers, both providers: three
//! `redis-server --sentinel` processes (or containers) watch the primary;
//! the harness only stops it, Sentinel promotes the replica, and a worker
//! that asks Sentinel for the master reaches it through its own proxy — so
//! a fault on that worker's path after the failover still hits it.
//!
//! Run under scripts/with-services (local binaries); the container test
//! needs the image `scripts/images` builds (scripts/test builds it).

mod common;

use common::call;
use redfence_chaos::{ChaosConfig, FailoverKind, Path, RealCluster, RedisNode};

async fn sentinel_cluster(mut config: ChaosConfig) -> RealCluster {
    config.failover = FailoverKind::Sentinel;
    RealCluster::start_with(&config, 2)
        .await
        .unwrap_or_else(|e| panic!("sentinel cluster: {e}"))
}

async fn sentinel_promotes_and_faults_still_reach_the_worker(cluster: RealCluster) {
    assert_eq!(cluster.failover_kind(), FailoverKind::Sentinel);
    let map = cluster
        .worker_address_map(0)
        .expect("a Sentinel address map");
    let replica_url = cluster.redis_node_url(RedisNode::Replica).expect("replica");
    // Before: Sentinel names the primary; the worker reaches it through its
    // own proxy, and a write there replicates.
    let before = map.master_via_proxy().await.expect("master before");
    assert_eq!(
        format!("redis://{before}/"),
        cluster.worker_redis_url(0).unwrap()
    );
    let set = call(&format!("redis://{before}/"), "SET lock:x before").await;
    assert_eq!(set.expect("set through the proxy"), "+OK\r\n");
    cluster
        .wait_for_replication(10_000)
        .await
        .expect("replicated");

    cluster.fail_over().await.expect("Sentinel fails over");

    // Sentinel did it: it announced the switch to the replica, and the
    // replica is a master now.
    let events = cluster.sentinel_events(0);
    assert!(
        events.iter().any(|(_, what)| what.contains("+odown")),
        "{events:?}"
    );
    let promoted = events
        .iter()
        .find(|(_, what)| what.contains("+switch-master"))
        .unwrap_or_else(|| panic!("no switch announced: {events:?}"));
    let replica_addr = common::addr(&replica_url);
    assert!(promoted.1.contains(&replica_addr), "{promoted:?}");
    assert!(promoted.1.contains("replication offset"), "{promoted:?}");
    let role = call(&replica_url, "ROLE").await.expect("role");
    assert!(role.contains("master"), "{role}");
    assert_eq!(cluster.current_primary().await, RedisNode::Replica);

    // After: the worker, asking Sentinel, dials its proxy to the promoted
    // node (not the node's own address), and finds the replicated write.
    let after = map.master_via_proxy().await.expect("master after");
    assert_ne!(after, replica_addr, "the worker would bypass its proxy");
    assert_ne!(after, before);
    let url = format!("redis://{after}/");
    let got = call(&url, "GET lock:x").await.expect("get");
    assert!(got.contains("before"), "{got}");

    // A fault injected on worker 0's path now reaches worker 0 there…
    cluster.partition(0, Path::Redis).await.expect("partition");
    let cut = call(&url, "PING").await;
    assert!(
        !matches!(cut.as_deref(), Ok("+PONG\r\n")),
        "the partition did not reach w0 after the failover: {cut:?}"
    );
    // …and only it: worker 1's path to the new master works.
    let other = cluster
        .worker_address_map(1)
        .unwrap()
        .master_via_proxy()
        .await
        .unwrap();
    let pong = call(&format!("redis://{other}/"), "PING").await;
    assert_eq!(pong.expect("w1 ping"), "+PONG\r\n");
    cluster.heal(0, Path::Redis).await.expect("heal");
    let healed = call(&url, "PING").await;
    assert_eq!(healed.expect("w0 ping after heal"), "+PONG\r\n");

    // The replica's recording survived the promotion (Sentinel closes every
    // normal client, the monitor among them): no gap.
    let tapes = cluster.redis_tapes().await;
    for tape in &tapes {
        assert!(tape.tape.gaps.is_empty(), "{:?}", tape.tape.gaps);
    }
    cluster.shutdown().await;
}

#[tokio::test]
async fn local_sentinel_promotes_the_replica_and_faults_still_reach_the_worker() {
    let config = ChaosConfig::local_from_env().expect("config");
    sentinel_promotes_and_faults_still_reach_the_worker(sentinel_cluster(config).await).await;
}

#[tokio::test]
async fn container_sentinel_promotes_the_replica_and_faults_still_reach_the_worker() {
    let config = ChaosConfig::containers_local_image();
    sentinel_promotes_and_faults_still_reach_the_worker(sentinel_cluster(config).await).await;
}
