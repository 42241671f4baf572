//! Finding the master through Sentinel, as a service deployed with Sentinel
//! does: before each job, ask the sentinels where the master is
//! (`SENTINEL get-master-addr-by-name`), and keep one connection manager
//! per master address, so a failover moves the next job to the promoted
//! node. A job caught by the failover fails its Redis calls and fails
//! closed, as the lock library does on any unreachable server.
//!
//! Sentinel answers with a node's real address; `init.sentinel.routes`
//! maps it to this worker's own path to that node (the harness's tap and
//! fault proxy), and an address with no route is an error, never dialled.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::Mutex;

use crate::protocol::SentinelInit;

/// The master as Sentinel names it, reached through the worker's routes.
pub struct MasterFollower {
    sentinel: SentinelInit,
    /// Bound of each question to a sentinel and of each connect.
    op_timeout: Duration,
    /// The route dialled last and its manager.
    current: Mutex<Option<(String, ConnectionManager)>>,
}

impl MasterFollower {
    pub fn new(sentinel: SentinelInit, op_timeout: Duration) -> Self {
        Self {
            sentinel,
            op_timeout,
            current: Mutex::new(None),
        }
    }

    /// A connection to the master Sentinel names now, through its route.
    pub async fn master(&self) -> Result<ConnectionManager, String> {
        let real = self.ask().await?;
        let route = self
            .sentinel
            .routes
            .iter()
            .find(|r| r.from == real)
            .ok_or_else(|| {
                format!("Sentinel named {real} as the master, which no route of init leads to")
            })?;
        let mut current = self.current.lock().await;
        if let Some((to, conn)) = current.as_ref() {
            if *to == route.to {
                return Ok(conn.clone());
            }
        }
        let client = redis::Client::open(format!("redis://{}/0", route.to))
            .map_err(|e| format!("route {}: {e}", route.to))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(self.op_timeout))
            .set_response_timeout(Some(self.op_timeout))
            .set_number_of_retries(1);
        let conn = client
            .get_connection_manager_with_config(config)
            .await
            .map_err(|e| format!("connecting to the master at {real} via {}: {e}", route.to))?;
        *current = Some((route.to.clone(), conn.clone()));
        Ok(conn)
    }

    /// The master's real address, `host:port`, from the first sentinel
    /// that knows it. Bounded: one question per sentinel, each timed out.
    async fn ask(&self) -> Result<String, String> {
        let mut errors = Vec::with_capacity(self.sentinel.sentinels.len());
        for addr in &self.sentinel.sentinels {
            let asked = tokio::time::timeout(self.op_timeout, async {
                let client = redis::Client::open(format!("redis://{addr}/"))?;
                let mut conn = client.get_multiplexed_async_connection().await?;
                redis::cmd("SENTINEL")
                    .arg("get-master-addr-by-name")
                    .arg(&self.sentinel.master_name)
                    .query_async::<Option<(String, String)>>(&mut conn)
                    .await
            })
            .await;
            match asked {
                Ok(Ok(Some((host, port)))) => return Ok(format!("{host}:{port}")),
                Ok(Ok(None)) => errors.push(format!("{addr}: no master named so")),
                Ok(Err(e)) => errors.push(format!("{addr}: {e}")),
                Err(_) => errors.push(format!("{addr}: no answer within {:?}", self.op_timeout)),
            }
        }
        Err(format!(
            "no sentinel named the master {:?}: {}",
            self.sentinel.master_name,
            errors.join("; ")
        ))
    }
}
