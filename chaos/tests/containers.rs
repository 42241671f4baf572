//! The container provider with the image `scripts/images` builds, and the
//! proof that no container outlives its run: after shutdown, after a panic
//! while a cluster is held, and after its creating process died (reaper).
//!
//! Needs a Docker engine and the local image; without them these tests fail
//! with the error saying what to do (CI has Docker; scripts/test builds the
//! image first). Nothing is skipped.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::call;
use redfence_chaos::provider::containers::docker;
use redfence_chaos::reaper::{self, LABEL_CREATOR, LABEL_OWNER, LABEL_RUN, OWNER_VALUE};
use redfence_chaos::{ChaosConfig, Path, ProviderKind, RealCluster, RedisNode};

async fn container_cluster(workers: usize) -> RealCluster {
    RealCluster::start_with(&ChaosConfig::containers_local_image(), workers)
        .await
        .unwrap_or_else(|e| panic!("container cluster (run scripts/images first): {e}"))
}

async fn containers_of(run: &str) -> usize {
    let docker = docker().await.expect("docker");
    reaper::list_ours(&docker, Some(run))
        .await
        .expect("list")
        .len()
}

#[tokio::test]
async fn container_cluster_serves_faults_and_fails_over_then_leaves_nothing() {
    let cluster = container_cluster(2).await;
    assert_eq!(cluster.provider(), ProviderKind::Containers);
    let run = cluster.run_id().to_owned();
    assert_eq!(containers_of(&run).await, 3, "primary, replica, postgres");

    let w0 = cluster.worker_redis_url(0).unwrap();
    assert_eq!(call(&w0, "SET k v").await.unwrap(), "+OK\r\n");
    cluster
        .wait_for_replication(10_000)
        .await
        .expect("replica in sync");
    let replica = cluster.redis_node_url(RedisNode::Replica).unwrap();
    assert_eq!(call(&replica, "GET k").await.unwrap(), "$1\r\nv\r\n");
    let mut conn = common::pg(&cluster.worker_postgres_url(1).unwrap())
        .await
        .expect("pg");
    sqlx::Executor::execute(&mut conn, "SELECT 1 FROM resource_guards")
        .await
        .expect("migrated");

    cluster.partition(0, Path::Redis).await.unwrap();
    assert!(common::Raw::connect(&w0).await.is_err());
    cluster.heal(0, Path::Redis).await.unwrap();

    // The stopped primary answers nothing. Asked by what only it holds (a
    // key naming this run), not by PING: while it is down its host port is
    // free, and another suite's server can take that port and answer a PING
    // (seen once with a second suite starting servers beside this one).
    let primary = cluster.redis_node_url(RedisNode::Primary).unwrap();
    let marker = format!("SET stopped-primary {run}");
    assert_eq!(call(&primary, &marker).await.unwrap(), "+OK\r\n");
    cluster.stop_redis().await.unwrap();
    let asked = call(&primary, "GET stopped-primary").await;
    assert!(
        !matches!(&asked, Ok(reply) if reply.contains(run.as_str())),
        "the stopped primary still answers: {asked:?}"
    );
    cluster.restart_redis().await.unwrap();
    assert_eq!(
        call(&w0, "GET k").await.unwrap(),
        "$-1\r\n",
        "restarted empty"
    );

    // Snapshot-only persistence in a container: the snapshot survives the
    // kill in the container's writable layer and the restart loads it.
    assert_eq!(call(&w0, "SET saved 1").await.unwrap(), "+OK\r\n");
    cluster.snapshot_redis().await.unwrap();
    assert_eq!(call(&w0, "SET lost 1").await.unwrap(), "+OK\r\n");
    cluster.stop_redis().await.unwrap();
    cluster.restart_redis().await.unwrap();
    assert_eq!(
        call(&w0, "GET saved").await.unwrap(),
        "$1\r\n1\r\n",
        "written before the snapshot: loaded"
    );
    assert_eq!(
        call(&w0, "GET lost").await.unwrap(),
        "$-1\r\n",
        "written after the snapshot: lost"
    );

    cluster
        .wait_for_replication(15_000)
        .await
        .expect("replica resynced from the empty primary");
    assert_eq!(call(&w0, "SET after v2").await.unwrap(), "+OK\r\n");
    cluster.wait_for_replication(10_000).await.unwrap();
    cluster.fail_over().await.unwrap();
    assert_eq!(
        call(&w0, "GET after").await.unwrap(),
        "$2\r\nv2\r\n",
        "served by the promoted replica"
    );
    assert!(call(&replica, "INFO replication")
        .await
        .unwrap()
        .contains("role:master"));

    cluster.shutdown().await;
    assert_eq!(
        containers_of(&run).await,
        0,
        "shutdown removed every container"
    );
}

#[test]
fn a_panic_while_holding_a_cluster_leaves_no_container() {
    let (tx, rx) = std::sync::mpsc::channel();
    let holder = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let cluster = container_cluster(1).await;
            tx.send(cluster.run_id().to_owned()).unwrap();
            panic!("a test failing while it holds a cluster");
        })
    });
    let run = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("cluster started");
    assert!(holder.join().is_err(), "the holder panicked");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    assert_eq!(
        runtime.block_on(containers_of(&run)),
        0,
        "drop during unwinding removed them"
    );
}

/// `docker run -d` of a sleeping container with our labels.
fn labelled_container(run: &str, creator: &str) -> String {
    let output = std::process::Command::new("docker")
        .args(["run", "-d", "--network", "none"])
        .args(["--label", &format!("{LABEL_OWNER}={OWNER_VALUE}")])
        .args(["--label", &format!("{LABEL_RUN}={run}")])
        .args(["--label", &format!("{LABEL_CREATOR}={creator}")])
        .args([redfence_chaos::config::LOCAL_IMAGE, "sleep", "300"])
        .output()
        .expect("docker client");
    assert!(
        output.status.success(),
        "docker run: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// Another suite on this machine reaps the same orphan when it starts a
/// cluster (its start runs this same code; two real-suite loops side by side
/// did, between the `docker run` and this test's count). So the test judges
/// the outcome, whichever start removed the dead run's container: gone
/// after this reap returns, and the live process's container kept.
#[tokio::test]
async fn the_next_start_reaps_containers_of_dead_runs_only() {
    // A run whose process is gone: a child that has exited.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = format!("{}:{}", child.id(), 1);
    child.wait().unwrap();
    let run = uuid::Uuid::new_v4().simple().to_string();
    let orphan = labelled_container(&run, &dead);
    let live = labelled_container(&run, &reaper::own_identity());

    let docker = docker().await.unwrap();
    let listed = |list: &[(String, HashMap<String, String>)], id: &str| {
        list.iter().any(|(listed, _)| listed == id)
    };
    assert!(
        listed(
            &reaper::list_ours(&docker, Some(&run)).await.unwrap(),
            &live
        ),
        "no reaper removes a live process's container"
    );
    let reaped = reaper::reap_orphans(&docker).await.unwrap();
    let left = reaper::list_ours(&docker, Some(&run)).await.unwrap();
    assert!(
        !listed(&left, &orphan),
        "the dead run's container is still there after a reap that removed {reaped}"
    );
    assert_eq!(left.len(), 1, "the live process's container stays");
    assert!(listed(&left, &live));
    assert_eq!(left[0].1[LABEL_CREATOR], reaper::own_identity());
    reaper::remove(&docker, &left[0].0).await.unwrap();
    assert_eq!(containers_of(&run).await, 0);
}

/// Two removers of one container at once (two starts reaping the same
/// orphan, as two suites on one machine do): whichever returns, the
/// container is gone by then, not still listed as being removed.
#[tokio::test]
async fn a_container_removed_twice_at_once_is_gone_when_either_returns() {
    let run = uuid::Uuid::new_v4().simple().to_string();
    let id = labelled_container(&run, &reaper::own_identity());
    let docker = docker().await.unwrap();
    let remove_and_count = || async {
        reaper::remove(&docker, &id).await.expect("removed");
        containers_of(&run).await
    };
    let (first, second) = tokio::join!(remove_and_count(), remove_and_count());
    assert_eq!((first, second), (0, 0));
}

/// The container provider runs independent masters too: a third master is
/// a container of its own (with the run's label, so shutdown removes it),
/// reached through each worker's proxy, holding its own keys, and a crash
/// and restart of it leaves the primary alone.
#[tokio::test]
async fn container_cluster_runs_a_third_master_of_its_own() {
    let cluster = RealCluster::start_with_masters(&ChaosConfig::containers_local_image(), 1, 3)
        .await
        .unwrap_or_else(|e| panic!("container cluster (run scripts/images first): {e}"));
    let run = cluster.run_id().to_owned();
    assert_eq!(
        containers_of(&run).await,
        5,
        "primary, replica, postgres and masters 1 and 2"
    );
    for master in 0..3 {
        let url = cluster.worker_master_url(0, master).unwrap();
        assert_eq!(
            call(&url, &format!("SET k m{master}")).await.unwrap(),
            "+OK\r\n"
        );
    }
    let third = cluster.redis_node_url(RedisNode::Master(2)).unwrap();
    assert_eq!(call(&third, "GET k").await.unwrap(), "$2\r\nm2\r\n");

    cluster.stop_master(2).await.unwrap();
    assert!(call(&third, "PING").await.is_err(), "master 2 down");
    let w0 = cluster.worker_redis_url(0).unwrap();
    assert_eq!(
        call(&w0, "GET k").await.unwrap(),
        "$2\r\nm0\r\n",
        "the primary still serves"
    );
    cluster.restart_master(2).await.unwrap();
    assert_eq!(
        call(&cluster.worker_master_url(0, 2).unwrap(), "GET k")
            .await
            .unwrap(),
        "$-1\r\n",
        "master 2 restarted empty"
    );

    cluster.shutdown().await;
    assert_eq!(containers_of(&run).await, 0, "every container removed");
}
