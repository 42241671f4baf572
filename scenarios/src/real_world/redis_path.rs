//! A worker's Redis path: one multiplexed connection through the worker's
//! proxy, replaced by a fresh one on the request after it broke. With
//! Sentinel, each new connection first asks Sentinel for the master and
//! dials the worker's proxy for it, as a Sentinel-aware client does.

use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::{AsyncConnectionConfig, Cmd, Pipeline, RedisFuture, RedisResult, Value};

use super::*;

/// A worker's Redis connection: one multiplexed connection, replaced by a
/// fresh one on the request after it broke.
///
/// Why not redis-rs's `ConnectionManager`: it reconnects in the background
/// with retries, and requests made meanwhile fail with errors the lock can
/// only read as indeterminate (seen: "broken pipe" for the whole of a Redis
/// outage). Here the request after a break connects anew, so a partitioned
/// worker (its proxy down) gets a refused connection: the definite failure
/// the lock classifies as such (the command did not run). A stopped Redis
/// refuses too: the cluster takes its workers' proxies down with it (a live
/// proxy would accept the connection and then close it when the upstream
/// refuses, an indeterminate failure no client of a dead server sees).
#[derive(Clone)]
pub(super) struct Reconnecting(pub(super) Arc<ReconnectingInner>);

pub(super) struct ReconnectingInner {
    pub(super) client: redis::Client,
    /// With Sentinel: where the master is, through this worker's proxies.
    pub(super) sentinel: Option<redfence_chaos::sentinel::AddressMap>,
    pub(super) config: AsyncConnectionConfig,
    /// The live connection and its generation (so a failure on an old one
    /// never discards its replacement).
    pub(super) current: tokio::sync::Mutex<(u64, Option<MultiplexedConnection>)>,
}

impl Reconnecting {
    pub(super) fn new(
        client: redis::Client,
        sentinel: Option<redfence_chaos::sentinel::AddressMap>,
    ) -> Self {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(Duration::from_millis(CONNECT_TIMEOUT_MS)))
            // The lock bounds every call by its own `op_timeout`; a reply
            // that comes late must not break the connection.
            .set_response_timeout(None);
        Self(Arc::new(ReconnectingInner {
            client,
            sentinel,
            config,
            current: tokio::sync::Mutex::new((0, None)),
        }))
    }

    /// The live connection, connecting if there is none.
    pub(super) async fn connection(&self) -> RedisResult<(u64, MultiplexedConnection)> {
        let mut current = self.0.current.lock().await;
        if let (generation, Some(conn)) = &*current {
            return Ok((*generation, conn.clone()));
        }
        let retry_until =
            tokio::time::Instant::now() + Duration::from_millis(CONNECT_REFUSED_RETRY_MS);
        let attempts_max = CONNECT_REFUSED_RETRY_MS / CONNECT_RETRY_PAUSE_MS + 1;
        let mut attempt = 0;
        // Bounded by the attempts (and the deadline).
        let conn = loop {
            attempt += 1;
            let connected = match &self.0.sentinel {
                None => {
                    self.0
                        .client
                        .get_multiplexed_async_connection_with_config(&self.0.config)
                        .await
                }
                Some(map) => self.via_sentinel(map).await,
            };
            match connected {
                Err(error)
                    if error.is_connection_refusal()
                        && attempt < attempts_max
                        && tokio::time::Instant::now() < retry_until =>
                {
                    tokio::time::sleep(Duration::from_millis(CONNECT_RETRY_PAUSE_MS)).await;
                }
                other => break other?,
            }
        };
        current.0 += 1;
        current.1 = Some(conn.clone());
        Ok((current.0, conn))
    }

    /// A connection to the master Sentinel names, through this worker's
    /// proxy for it. Sentinel not answering, or naming a node no proxy of
    /// the worker leads to, is a refused connection: nothing was sent.
    async fn via_sentinel(
        &self,
        map: &redfence_chaos::sentinel::AddressMap,
    ) -> RedisResult<MultiplexedConnection> {
        let refused = |why: String| {
            redis::RedisError::from(std::io::Error::new(
                std::io::ErrorKind::ConnectionRefused,
                why,
            ))
        };
        let addr = map
            .master_via_proxy()
            .await
            .map_err(|e| refused(e.to_string()))?;
        super::connect::redis_client(&format!("redis://{addr}/"))?
            .get_multiplexed_async_connection_with_config(&self.0.config)
            .await
    }

    /// Drops the live connection, so the next request connects anew. If
    /// the worker is connecting right now (it holds the lock), its new
    /// connection is fresh anyway.
    pub(super) fn forget(inner: &ReconnectingInner) {
        if let Ok(mut current) = inner.current.try_lock() {
            current.1 = None;
        }
    }

    /// Drops connection `generation` if `result` shows it is broken.
    pub(super) async fn check<T>(&self, generation: u64, result: &RedisResult<T>) {
        let Err(error) = result else { return };
        if !(error.is_io_error() || error.is_unrecoverable_error()) {
            return;
        }
        let mut current = self.0.current.lock().await;
        if current.0 == generation {
            current.1 = None;
        }
    }
}

impl ConnectionLike for Reconnecting {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let (generation, mut conn) = self.connection().await?;
            let result = conn.req_packed_command(cmd).await;
            self.check(generation, &result).await;
            result
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let (generation, mut conn) = self.connection().await?;
            let result = conn.req_packed_commands(pipeline, offset, count).await;
            self.check(generation, &result).await;
            result
        })
    }

    fn get_db(&self) -> i64 {
        0
    }
}
