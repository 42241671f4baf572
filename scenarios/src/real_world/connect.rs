//! Connecting one worker's Redis and store paths through its proxies, when
//! the world starts (so a setup failure is reported before the script runs):
//! one Redis path per master, each through the worker's own proxy to it.

use std::time::Duration;

use redfence_chaos::RealCluster;
use redfence_core::PgFencedStore;
use redis::IntoConnectionInfo;
use sqlx::postgres::PgPoolOptions;

use crate::world::{worker_name, WorldError};

use super::*;

/// A client for `url` that sends nothing on connect: no `CLIENT SETINFO`, as
/// a connect that waits for an answer cannot open a connection on a path
/// whose replies are dropped, and the lost reply must hit the lock's own
/// commands.
pub(super) fn redis_client(url: &str) -> redis::RedisResult<redis::Client> {
    let info = url.into_connection_info()?;
    let settings = info.redis_settings().clone().set_skip_set_lib_name();
    redis::Client::open(info.set_redis_settings(settings))
}

/// Connects worker `index`'s Redis and store paths, through its proxies.
pub(super) async fn connect_worker(
    cluster: &RealCluster,
    index: usize,
    op_timeout: Duration,
) -> Result<WorkerConns, WorldError> {
    let failed = |what: &str, e: &dyn std::fmt::Display| {
        WorldError::Failed(format!("{}: {what}: {e}", worker_name(index)))
    };
    // One path per master, master 0's first; every one made as master 0's
    // is (masters 1.. have no Sentinel: nothing fails them over).
    let mut redis_paths = Vec::with_capacity(cluster.masters());
    for master in 0..cluster.masters() {
        let url = cluster
            .worker_master_url(index, master)
            .map_err(chaos_error)?;
        let client = redis_client(&url).map_err(|e| failed("redis client", &e))?;
        // With Sentinel the worker asks it for the master on every connect
        // and dials its own proxy for that node (`redfence_chaos::sentinel`).
        let sentinel = if master == 0 {
            cluster.worker_address_map(index)
        } else {
            None
        };
        let path = Reconnecting::new(client, sentinel);
        // Connected now, so a path that does not work is a setup error.
        path.connection()
            .await
            .map_err(|e| failed(&format!("redis master {master} through its proxy"), &e))?;
        redis_paths.push(path);
    }
    let redis = redis_paths.remove(0);
    let masters = redis_paths;
    let pg_url = cluster.worker_postgres_url(index).map_err(chaos_error)?;
    // A warm pool: every statement prepared when a connection opens and no
    // ping before lending one, so a one-statement write or read is one round
    // trip, all of it on the wire in the poll that starts it — as in the
    // simulated store. With sqlx's defaults (a ping, then a prepare on first
    // use) it took up to three, and a worker paused or crashed after the
    // first did something else than in the simulation: a protocol checking
    // the fence in the application looked safe (`stale-worker-pause` ×
    // `app-side-fence-check`) and a crash never let the write commit
    // (`crash-mid-mutation` × `no-fence-check`). The ping's other job, not
    // lending a connection a fault closed, is done by `store_faulted`.
    let store_faulted = FaultClock::default();
    let faulted = store_faulted.clone();
    let pool = PgPoolOptions::new()
        .max_connections(WORKER_STORE_CONNECTIONS_MAX)
        .acquire_timeout(Duration::from_millis(CONNECT_TIMEOUT_MS))
        .test_before_acquire(false)
        .after_connect(|conn, _| {
            Box::pin(async move {
                PgFencedStore::prepare(conn)
                    .await
                    .map_err(|e| sqlx::Error::Protocol(e.to_string()))?;
                sqlx::Executor::prepare(&mut *conn, WRITE_UNCHECKED_SQL).await?;
                Ok(())
            })
        })
        .before_acquire(move |_, meta| {
            // Opened before the last fault on this path: the proxy closed
            // it (the embedded Toxiproxy restarts on every change), so
            // open a fresh one rather than fail the next statement.
            let stale = faulted.opened_before_last_fault(meta.age);
            Box::pin(async move { Ok(!stale) })
        })
        .connect(&pg_url)
        .await
        .map_err(|e| failed("postgres through its proxy", &e))?;
    Ok(WorkerConns {
        redis,
        masters,
        store: PgFencedStore::from_pool(pool).with_op_timeout(op_timeout),
        store_faulted,
    })
}
