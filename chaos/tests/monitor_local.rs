//! The `MONITOR` recorder against real Redis processes (the local
//! provider): what a worker's commands put on the primary's tape, in the
//! server's order — a script's own commands under `lua` right after it, a
//! transaction's commands as `EXEC` runs them, replicated commands on the
//! replica's tape — and that a recording which lost its connection says
//! so instead of passing for complete.
//!
//! Run under scripts/with-services (it installs redis-server and
//! PostgreSQL); one cluster per test.

mod common;

use common::{call, local_cluster};
use redfence_chaos::monitor::{Mark, TapeEntry};
use redfence_chaos::{NodeTape, RedisNode};

/// The commands on a tape, as `client: ARG ARG …`, without the cluster's
/// own reads (its snapshot and sync commands and the replica's link).
fn commands(tape: &NodeTape) -> Vec<String> {
    tape.tape
        .entries
        .iter()
        .filter_map(|e| match e {
            TapeEntry::Command(c) => {
                let words: Vec<String> = c
                    .args
                    .iter()
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect();
                let who = if c.client == "lua" { "lua" } else { "client" };
                Some(format!("{who}: {}", words.join(" ")))
            }
            TapeEntry::Mark { .. } => None,
        })
        .filter(|line| {
            let name = line
                .split(' ')
                .nth(1)
                .unwrap_or_default()
                .to_ascii_uppercase();
            !matches!(
                name.as_str(),
                "SCAN"
                    | "TYPE"
                    | "PTTL"
                    | "GET"
                    | "LRANGE"
                    | "HGETALL"
                    | "ECHO"
                    | "INFO"
                    | "PING"
                    | "REPLCONF"
                    | "CLIENT"
            )
        })
        .collect()
}

#[tokio::test]
async fn a_workers_commands_reach_the_tapes_in_server_order() {
    let cluster = local_cluster(1).await;
    let worker = cluster.worker_redis_url(0).unwrap();
    let mut conn = redis::Client::open(worker.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let script = redis::Script::new(
        "redis.call('INCR', KEYS[2]) return redis.call('SET', KEYS[1], ARGV[1], 'PX', 500)",
    );
    let _: () = script
        .key("lock:{r}")
        .key("fence:{r}")
        .arg("a \"quoted\"\nvalue")
        .invoke_async(&mut conn)
        .await
        .unwrap();
    let _: () = redis::pipe()
        .atomic()
        .cmd("DEL")
        .arg("lock:{r}")
        .cmd("INCR")
        .arg("fence:{r}")
        .query_async(&mut conn)
        .await
        .unwrap();
    cluster.wait_for_replication(5_000).await.unwrap();
    let tapes = cluster.redis_tapes().await;
    let primary = tapes.iter().find(|t| t.node == RedisNode::Primary).unwrap();
    assert!(primary.tape.gaps.is_empty(), "{:?}", primary.tape.gaps);
    let seen = commands(primary);
    let from = seen
        .iter()
        .position(|l| l.starts_with("client: EVALSHA"))
        .unwrap_or_else(|| panic!("{seen:#?}"));
    let tail: Vec<&str> = seen[from..]
        .iter()
        .map(String::as_str)
        .filter(|l| !l.starts_with("client: EVALSHA") && !l.starts_with("client: SCRIPT"))
        .collect();
    assert_eq!(
        tail,
        [
            "lua: INCR fence:{r}",
            "lua: SET lock:{r} a \"quoted\"\nvalue PX 500",
            "client: MULTI",
            "client: DEL lock:{r}",
            "client: INCR fence:{r}",
            "client: EXEC",
        ],
        "{seen:#?}"
    );
    // Every tape starts from the keyspace read at the world's start.
    assert!(matches!(
        primary.tape.entries.first(),
        Some(TapeEntry::Mark {
            mark: Mark::Loaded(_),
            ..
        })
    ));
    let (_, end) = primary.end.as_ref().expect("read at the end");
    assert!(
        end.strings
            .iter()
            .any(|(k, v, _)| k == b"fence:{r}" && v == b"2"),
        "{end:?}"
    );
    let replica = tapes.iter().find(|t| t.node == RedisNode::Replica).unwrap();
    let replicated = commands(replica);
    assert!(
        replicated.iter().any(|l| l.contains("SET lock:{r}")),
        "the replica shows what its primary sent: {replicated:#?}"
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_recording_that_lost_its_connection_names_the_gap() {
    let cluster = local_cluster(1).await;
    let primary = cluster.redis_node_url(RedisNode::Primary).unwrap();
    // The recorder's connection is the one running MONITOR.
    let clients = call(&primary, "CLIENT LIST").await.unwrap();
    let id = clients
        .lines()
        .find(|l| l.contains("cmd=monitor"))
        .and_then(|l| l.split(' ').find_map(|f| f.strip_prefix("id=")))
        .unwrap_or_else(|| panic!("a monitor client: {clients}"))
        .to_owned();
    call(&primary, &format!("CLIENT KILL ID {id}"))
        .await
        .unwrap();
    call(&primary, "SET lock:{r} unseen").await.unwrap();
    let tapes = cluster.redis_tapes().await;
    let tape = tapes.iter().find(|t| t.node == RedisNode::Primary).unwrap();
    assert!(
        tape.tape
            .gaps
            .iter()
            .any(|g| g.contains("MONITOR connection closed while the server ran")),
        "{:?}",
        tape.tape.gaps
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_stop_and_a_restart_are_marked_and_recording_goes_on() {
    let cluster = local_cluster(1).await;
    let primary = cluster.redis_node_url(RedisNode::Primary).unwrap();
    call(&primary, "SET lock:{r} before").await.unwrap();
    cluster.stop_redis().await.unwrap();
    cluster.restart_redis().await.unwrap();
    let worker = cluster.worker_redis_url(0).unwrap();
    call(&worker, "SET lock:{r} after").await.unwrap();
    let tapes = cluster.redis_tapes().await;
    let tape = tapes.iter().find(|t| t.node == RedisNode::Primary).unwrap();
    assert!(tape.tape.gaps.is_empty(), "{:?}", tape.tape.gaps);
    let marks: Vec<&Mark> = tape
        .tape
        .entries
        .iter()
        .filter_map(|e| match e {
            TapeEntry::Mark { mark, .. } => Some(mark),
            TapeEntry::Command(_) => None,
        })
        .collect();
    assert!(
        matches!(
            marks[..],
            [
                Mark::Loaded(_),
                Mark::Stopped,
                Mark::Started,
                Mark::Loaded(_)
            ]
        ),
        "{marks:?}"
    );
    let seen = commands(tape);
    let before = seen.iter().position(|l| l.ends_with("SET lock:{r} before"));
    let after = seen.iter().position(|l| l.ends_with("SET lock:{r} after"));
    assert!(before.is_some() && after > before, "{seen:#?}");
    cluster.shutdown().await;
}
