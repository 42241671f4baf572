//! The store client: [`redfence_core::FencedStore`] over the simulated network,
//! so the unchanged core worker flow writes through partitions and lost replies.
//!
//! One connection per client, one request in flight on it (a `tokio` mutex),
//! connected lazily. Every call is bounded by the client's `op_timeout`,
//! connecting included: turmoil's `connect` to a held or partitioned host
//! never returns on its own.
//!
//! Errors say whether the request could have run, because a history must tell
//! "failed" from "unknown":
//!
//! - nothing sent (connect failed or timed out, request too large, the
//!   connection was busy until the deadline) → [`StoreError::NotSent`]; the
//!   store did not run it;
//! - sent, no reply within the deadline → [`StoreError::Timeout`]; it may have
//!   run (and under a `hold` it may still run later, when the held segments arrive);
//! - sent, then the connection broke → [`StoreError::OutcomeUnknown`];
//! - refused by the store (malformed, or a reply too large for a frame) →
//!   [`StoreError::Refused`].
//!
//! After any failure the connection is dropped and the next call reconnects: a
//! stream whose request timed out may still deliver that request's reply, and
//! reading it as the next request's answer would be a silent, wrong result.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use redfence_core::{
    FenceLogEntry, FencedStore, FencedWrite, JobId, JobOutcome, JobWrite, ResourceName, StoreError,
    WriteOutcome,
};
use tokio::sync::Mutex;
use tokio::time::{timeout_at, Instant};
use turmoil::net::TcpStream;

use super::frame::{read_frame, write_frame, FRAME_BODY_LEN_MAX};
use super::protocol::{decode_reply, encode_request, Reply, Request};
use super::STORE_PORT;

/// A connection idle this long is not reused; a fresh one is opened instead.
/// Well under the server's idle close (`CONNECTION_IDLE_MS_MAX`, 120 s), so a
/// request never races the server closing the connection under it.
pub const CONNECTION_REUSE_IDLE_MS_MAX: u64 = 30_000;

/// The store client. Cheap to clone; clones share one connection. It belongs
/// to the turmoil host it is first used on (a connection is a host's socket).
#[derive(Clone, Debug)]
pub struct SimStoreClient {
    host: Arc<str>,
    op_timeout: Duration,
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug)]
struct Inner {
    connection: Option<Connection>,
    /// Next request id; ids start at 1 (0 is the server's "unknown").
    next_request_id: u64,
}

#[derive(Debug)]
struct Connection {
    stream: TcpStream,
    last_used: Instant,
}

impl SimStoreClient {
    /// A client of the store served on `host` (a turmoil host name) at
    /// [`STORE_PORT`]; every call is bounded by `op_timeout`. Connects on first use.
    pub fn new(host: impl Into<String>, op_timeout: Duration) -> Self {
        let host: String = host.into();
        assert!(!host.is_empty(), "store host name must not be empty");
        assert!(!op_timeout.is_zero(), "op_timeout must be positive");
        Self {
            host: host.into(),
            op_timeout,
            inner: Arc::new(Mutex::new(Inner {
                connection: None,
                next_request_id: 1,
            })),
        }
    }

    /// The per-call timeout.
    pub fn op_timeout(&self) -> Duration {
        self.op_timeout
    }

    /// Sends `request` and waits for its reply, all within `op_timeout`.
    async fn call(&self, request: Request) -> Result<Reply, StoreError> {
        let deadline = Instant::now() + self.op_timeout;
        let Ok(mut inner) = timeout_at(deadline, self.inner.lock()).await else {
            return Err(not_sent(
                "another call held the connection until the deadline",
            ));
        };
        let id = inner.next_request_id;
        inner.next_request_id += 1;
        let body = encode_request(id, &request);
        if body.len() > FRAME_BODY_LEN_MAX {
            return Err(not_sent(format!(
                "request of {} bytes exceeds the {FRAME_BODY_LEN_MAX}-byte frame bound",
                body.len()
            )));
        }
        // Taken out of the slot for the exchange: if this future is dropped
        // mid-request (a caller's own timeout), the connection goes with it
        // instead of staying behind with a reply still owed.
        let reusable = inner.connection.take().filter(|c| {
            c.last_used.elapsed() < Duration::from_millis(CONNECTION_REUSE_IDLE_MS_MAX)
        });
        let mut connection = match reusable {
            Some(connection) => connection,
            None => self.connect(deadline).await?,
        };
        let reply_body = match timeout_at(deadline, exchange(&mut connection.stream, &body)).await {
            Ok(Ok(reply_body)) => reply_body,
            Ok(Err(e)) => {
                tracing::debug!(host = &*self.host, id, error = %e, "store connection broke");
                return Err(StoreError::OutcomeUnknown(e.to_string()));
            }
            Err(_) => {
                tracing::debug!(host = &*self.host, id, "store request timed out");
                return Err(StoreError::Timeout(self.op_timeout));
            }
        };
        let (reply_id, reply) = decode_reply(&reply_body)
            .map_err(|e| StoreError::OutcomeUnknown(format!("bad reply: {e}")))?;
        if reply_id != id {
            return Err(StoreError::OutcomeUnknown(format!(
                "reply for request {reply_id}, expected {id}"
            )));
        }
        if let Reply::Error(message) = reply {
            // The server closes after refusing a request; so does the client.
            return Err(StoreError::Refused(message));
        }
        connection.last_used = Instant::now();
        inner.connection = Some(connection);
        Ok(reply)
    }

    /// Opens a connection, giving up at `deadline`.
    async fn connect(&self, deadline: Instant) -> Result<Connection, StoreError> {
        let connect = TcpStream::connect((&*self.host, STORE_PORT));
        match timeout_at(deadline, connect).await {
            Ok(Ok(stream)) => Ok(Connection {
                stream,
                last_used: Instant::now(),
            }),
            Ok(Err(e)) => Err(not_sent(format!(
                "connect to {}:{STORE_PORT} failed: {e}",
                self.host
            ))),
            Err(_) => Err(not_sent(format!(
                "connect to {}:{STORE_PORT} timed out",
                self.host
            ))),
        }
    }
}

/// A failure before any byte of the request left: the store did not run it.
fn not_sent(why: impl std::fmt::Display) -> StoreError {
    StoreError::NotSent(why.to_string())
}

/// Writes one request frame and reads the one reply frame.
async fn exchange(stream: &mut TcpStream, body: &[u8]) -> std::io::Result<Vec<u8>> {
    write_frame(stream, body).await?;
    read_frame(stream).await?.ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "store closed the connection before replying",
        )
    })
}

fn unexpected(reply: Reply, request: &str) -> StoreError {
    StoreError::Protocol(format!("unexpected reply to {request}: {reply:?}"))
}

impl SimStoreClient {
    /// The store's durable fence counter for `resource` (the simulated
    /// `fence_counters` row).
    pub async fn next_fence(&self, resource: &ResourceName) -> Result<i64, StoreError> {
        let request = Request::NextFence {
            resource: resource.as_str().to_owned(),
        };
        match self.call(request).await? {
            Reply::Fence(fence) => Ok(fence),
            other => Err(unexpected(other, "next_fence")),
        }
    }

    /// A write with no fence or idempotency check (broken protocols only):
    /// the store takes `fence` as the new last fence whatever it was.
    pub async fn write_unchecked(
        &self,
        resource: &str,
        fence: i64,
        owner: &str,
        job_id: Option<&str>,
        value: &str,
    ) -> Result<WriteOutcome, StoreError> {
        let request = Request::WriteUnchecked {
            resource: resource.to_owned(),
            fence,
            owner: owner.to_owned(),
            job_id: job_id.unwrap_or_default().to_owned(),
            value: value.to_owned(),
        };
        match self.call(request).await? {
            Reply::Write(outcome) => Ok(outcome),
            other => Err(unexpected(other, "write_unchecked")),
        }
    }
}

/// Fences from the simulated store's durable counter: the simulation's
/// counterpart of core's `PostgresFences`, so a scenario can compare a Redis
/// counter that regresses across failover with a durable one.
#[derive(Clone, Debug)]
pub struct SimStoreFences {
    store: SimStoreClient,
}

impl SimStoreFences {
    /// Fences from `store`'s counter.
    pub fn new(store: SimStoreClient) -> Self {
        Self { store }
    }
}

#[async_trait]
impl redfence_core::FenceSource for SimStoreFences {
    fn kind(&self) -> redfence_core::FenceSourceKind {
        redfence_core::FenceSourceKind::Store
    }

    async fn fence_for(
        &self,
        resource: &ResourceName,
        _from_script: Option<redfence_core::Fence>,
    ) -> Result<redfence_core::Fence, redfence_core::LockError> {
        let value = self
            .store
            .next_fence(resource)
            .await
            .map_err(redfence_core::LockError::FenceSource)?;
        redfence_core::Fence::new(value)
            .map_err(|e| redfence_core::LockError::FenceSource(StoreError::InvalidInput(e)))
    }
}

#[async_trait]
impl FencedStore for SimStoreClient {
    async fn ensure_resource(&self, resource: &ResourceName) -> Result<(), StoreError> {
        let request = Request::EnsureResource {
            resource: resource.as_str().to_owned(),
        };
        match self.call(request).await? {
            Reply::Done => Ok(()),
            other => Err(unexpected(other, "ensure_resource")),
        }
    }

    async fn write_fenced(&self, write: &FencedWrite) -> Result<WriteOutcome, StoreError> {
        let request = Request::WriteFenced {
            resource: write.resource.as_str().to_owned(),
            fence: write.fence.get(),
            owner: write.owner.as_str().to_owned(),
            value: write.value.clone(),
        };
        match self.call(request).await? {
            Reply::Write(outcome) => Ok(outcome),
            other => Err(unexpected(other, "write_fenced")),
        }
    }

    async fn apply_job(&self, job: &JobWrite) -> Result<JobOutcome, StoreError> {
        let request = Request::ApplyJob {
            job_id: job.job_id.as_str().to_owned(),
            resource: job.write.resource.as_str().to_owned(),
            fence: job.write.fence.get(),
            owner: job.write.owner.as_str().to_owned(),
            value: job.write.value.clone(),
        };
        match self.call(request).await? {
            Reply::Job(outcome) => Ok(outcome),
            other => Err(unexpected(other, "apply_job")),
        }
    }

    async fn is_completed(&self, job_id: &JobId) -> Result<bool, StoreError> {
        let request = Request::IsCompleted {
            job_id: job_id.as_str().to_owned(),
        };
        match self.call(request).await? {
            Reply::Completed(completed) => Ok(completed),
            other => Err(unexpected(other, "is_completed")),
        }
    }

    async fn read(&self, resource: &ResourceName) -> Result<Option<(String, i64)>, StoreError> {
        let request = Request::Read {
            resource: resource.as_str().to_owned(),
        };
        match self.call(request).await? {
            Reply::Value(value) => Ok(value),
            other => Err(unexpected(other, "read")),
        }
    }

    async fn fence_log(&self, resource: &ResourceName) -> Result<Vec<FenceLogEntry>, StoreError> {
        let request = Request::FenceLog {
            resource: resource.as_str().to_owned(),
        };
        match self.call(request).await? {
            Reply::FenceLog(entries) => Ok(entries),
            other => Err(unexpected(other, "fence_log")),
        }
    }
}
