//! [`RedisConn`]: one Redis connection type for every world.
//!
//! Why: the reference lock (`LockClient<C>`) and the mutants are generic over
//! a redis-rs async connection, but a scenario must not know which world runs
//! it — the simulation hands out a connection over simulated TCP, the real
//! world a multiplexed connection through a Toxiproxy proxy. Erasing the type
//! here lets one `WorkerEnv` carry either, and lets protocols be written once.

use redis::aio::ConnectionLike;
use redis::{Cmd, Pipeline, RedisFuture, Value};

/// A connection that can be cloned behind a trait object.
trait CloneConn: ConnectionLike + Send + Sync {
    fn clone_box(&self) -> Box<dyn CloneConn>;
}

impl<T> CloneConn for T
where
    T: ConnectionLike + Clone + Send + Sync + 'static,
{
    fn clone_box(&self) -> Box<dyn CloneConn> {
        Box::new(self.clone())
    }
}

/// Any cloneable redis-rs async connection, type-erased. Clones share the
/// underlying connection exactly as the wrapped type's clones do.
pub struct RedisConn(Box<dyn CloneConn>);

impl RedisConn {
    /// Wraps a world's connection.
    pub fn new<C>(conn: C) -> Self
    where
        C: ConnectionLike + Clone + Send + Sync + 'static,
    {
        Self(Box::new(conn))
    }
}

impl Clone for RedisConn {
    fn clone(&self) -> Self {
        Self(self.0.clone_box())
    }
}

impl std::fmt::Debug for RedisConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RedisConn")
    }
}

impl ConnectionLike for RedisConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        self.0.req_packed_command(cmd)
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        self.0.req_packed_commands(pipeline, offset, count)
    }

    fn get_db(&self) -> i64 {
        self.0.get_db()
    }
}
