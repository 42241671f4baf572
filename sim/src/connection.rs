//! A redis-rs connection over turmoil's simulated TCP that reconnects, and
//! follows the world's idea of which server is the primary.
//!
//! The lock client is the unchanged `redfence-core` code; it only needs a
//! `redis::aio::ConnectionLike`. Underneath is redis-rs's own
//! `MultiplexedConnection`, built on a turmoil `TcpStream` with
//! `new_with_config` (its driver future is spawned here, or every request
//! would hang). Like a production `ConnectionManager`, this wrapper drops a
//! connection after an I/O error *or* an abandoned request (a caller's timeout):
//! after a lost reply the stream's state is unknown, and reusing it could pair
//! a late reply with the wrong request.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::{Cmd, ErrorKind, Pipeline, RedisError, RedisFuture, Value};

/// How long a connect may take before it counts as failed. turmoil's connect
/// to a held or partitioned host hangs forever, so this bound is what turns a
/// partition into an error.
pub const CONNECT_TIMEOUT_MS: u64 = 200;

/// Where the workers' Redis traffic goes: the world re-points it on failover,
/// as a Sentinel-aware client or a DNS switch would.
#[derive(Clone, Debug)]
pub struct RedisDirectory {
    primary: Arc<Mutex<(String, u16)>>,
}

impl RedisDirectory {
    /// A directory pointing at `host:port`.
    pub fn new(host: impl Into<String>, port: u16) -> Self {
        Self {
            primary: Arc::new(Mutex::new((host.into(), port))),
        }
    }

    /// The current primary.
    pub fn primary(&self) -> (String, u16) {
        self.primary
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Re-points every connection made from now on.
    pub fn set_primary(&self, host: impl Into<String>, port: u16) {
        *self.primary.lock().unwrap_or_else(|e| e.into_inner()) = (host.into(), port);
    }
}

/// A reconnecting redis-rs connection inside the simulation. Cheap to clone;
/// clones share the underlying connection, like clones of a multiplexed one.
#[derive(Clone)]
pub struct SimRedisConnection {
    directory: RedisDirectory,
    current: Arc<Mutex<Option<(u64, MultiplexedConnection)>>>,
    generation: Arc<Mutex<u64>>,
}

impl SimRedisConnection {
    /// A connection that follows `directory`; it connects on first use.
    pub fn new(directory: RedisDirectory) -> Self {
        Self {
            directory,
            current: Arc::new(Mutex::new(None)),
            generation: Arc::new(Mutex::new(0)),
        }
    }

    async fn connection(&self) -> Result<(u64, MultiplexedConnection), RedisError> {
        if let Some(existing) = self
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
        {
            return Ok(existing);
        }
        let (host, port) = self.directory.primary();
        let connect = turmoil::net::TcpStream::connect((host.as_str(), port));
        let stream = tokio::time::timeout(Duration::from_millis(CONNECT_TIMEOUT_MS), connect)
            .await
            .map_err(|_| io_error(std::io::ErrorKind::TimedOut, "connect timed out"))?
            .map_err(|e| {
                // turmoil's refusal carries only the address; say what a
                // real socket says (a stopped server's port is closed).
                if e.kind() == std::io::ErrorKind::ConnectionRefused {
                    RedisError::from(std::io::Error::new(
                        e.kind(),
                        format!("Connection refused by {host}:{port}"),
                    ))
                } else {
                    RedisError::from(e)
                }
            })?;
        // No response timeout of redis-rs's own: the lock client bounds every
        // call itself, and a second, different timer would make the outcome
        // depend on which fires first.
        let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
        let info = redis::RedisConnectionInfo::default();
        let (conn, driver) = MultiplexedConnection::new_with_config(&info, stream, config).await?;
        tokio::spawn(driver);
        let generation = {
            let mut g = self.generation.lock().unwrap_or_else(|e| e.into_inner());
            *g += 1;
            *g
        };
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Some((generation, conn.clone()));
        Ok((generation, conn))
    }

    /// Forgets connection `generation` (if still current) so the next request reconnects.
    fn discard(&self, generation: u64) {
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if current.as_ref().is_some_and(|(g, _)| *g == generation) {
            *current = None;
        }
    }
}

/// Discards the connection unless disarmed: a request future dropped before
/// it completed (the caller's timeout fired) leaves the stream in an unknown state.
struct AbandonGuard<'a> {
    conn: &'a SimRedisConnection,
    generation: u64,
    armed: bool,
}

impl Drop for AbandonGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.conn.discard(self.generation);
        }
    }
}

impl SimRedisConnection {
    fn settle<T>(&self, guard: &mut AbandonGuard<'_>, result: &Result<T, RedisError>) {
        guard.armed = false;
        if let Err(e) = result {
            // A server's error reply leaves the stream in sync; anything else does not.
            if !matches!(e.kind(), ErrorKind::Server(_) | ErrorKind::Extension) {
                self.discard(guard.generation);
            }
        }
    }
}

impl ConnectionLike for SimRedisConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let (generation, mut conn) = self.connection().await?;
            let mut guard = AbandonGuard {
                conn: self,
                generation,
                armed: true,
            };
            let result = conn.req_packed_command(cmd).await;
            self.settle(&mut guard, &result);
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
            let mut guard = AbandonGuard {
                conn: self,
                generation,
                armed: true,
            };
            let result = conn.req_packed_commands(pipeline, offset, count).await;
            self.settle(&mut guard, &result);
            result
        })
    }

    fn get_db(&self) -> i64 {
        0
    }
}

fn io_error(kind: std::io::ErrorKind, what: &'static str) -> RedisError {
    RedisError::from(std::io::Error::new(kind, what))
}
