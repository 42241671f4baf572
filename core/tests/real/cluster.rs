//! The acquire, renew and release scripts on a real 3-node Redis Cluster: the
//! `{name}` hash tag keeps a resource's two keys in one slot.

use redfence_core::*;
use redis::cluster::ClusterClient;

use crate::support::*;

fn cluster_client() -> ClusterClient {
    let urls: Vec<String> = env("REDFENCE_REDIS_CLUSTER_URLS")
        .split(',')
        .map(str::to_owned)
        .collect();
    assert_eq!(urls.len(), 3, "the test command starts a 3-node cluster");
    ClusterClient::new(urls).unwrap()
}

#[tokio::test]
async fn scripts_work_on_a_cluster_for_resources_on_every_node() {
    let conn = cluster_client().get_async_connection().await.unwrap();
    let lock = LockClient::new(conn.clone(), LockConfig::default()).unwrap();
    let mut slots = std::collections::BTreeSet::new();
    // 32 random names land on all three nodes' slot ranges with near certainty.
    for _ in 0..32 {
        let resource = fresh_resource("cluster");
        let AcquireOutcome::Acquired(lease) = lock.acquire(&resource).await.unwrap() else {
            panic!("fresh resource must be free");
        };
        assert_eq!(lease.fence().get(), 1);
        assert!(matches!(
            lock.renew(&lease, 10_000).await.unwrap(),
            Renewal::Renewed { .. }
        ));
        assert!(lock.release(&lease).await.unwrap());
        let slot: i64 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(format!("lock:{{{resource}}}"))
            .query_async(&mut conn.clone())
            .await
            .unwrap();
        slots.insert(slot / 5462);
    }
    assert_eq!(
        slots.len(),
        3,
        "resources must have landed on all three nodes"
    );
}

#[tokio::test]
async fn without_the_hash_tag_the_cluster_refuses_the_script() {
    // The companion check: it is the tag, not luck, that makes the script work.
    let mut conn = cluster_client().get_async_connection().await.unwrap();
    let script = redis::Script::new(redfence_core::scripts::ACQUIRE_LUA);
    let err = script
        .key("lock:untagged-a")
        .key("fence:untagged-b-0")
        .arg("owner")
        .arg(1000)
        .arg("1")
        .invoke_async::<redis::Value>(&mut conn)
        .await
        .unwrap_err();
    // redis-rs refuses it before sending, with the server's own error name.
    assert!(
        err.to_string().to_lowercase().contains("crossslot"),
        "got {err}"
    );
}
