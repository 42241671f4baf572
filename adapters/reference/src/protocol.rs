//! The lock-adapter protocol, version 1 (docs/adapter-protocol.md), adapter
//! side: the harness's messages, bounded line reading, one-line-per-message
//! output, and the table that matches `written` / `fence` replies to the
//! requests waiting for them by `id`.
//!
//! Why a module of its own: `main.rs` and the store over the protocol
//! (`remote.rs`) both talk to the harness, and every rule of the wire (the
//! 64 KiB line, unknown fields ignored, unknown types refused, ids unique
//! among outstanding requests) should be written down once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;

/// The protocol version this adapter speaks.
pub const PROTOCOL: u64 = 1;

/// Longest line either way, in bytes, newline excluded.
pub const LINE_MAX: usize = 64 * 1024;

/// Most requests (`write`, `next-fence`) awaiting a reply at once.
pub const PENDING_MAX: usize = 1024;

/// The lock settings of `init` (`lock`); unknown fields are ignored.
#[derive(Clone, Debug, Deserialize)]
pub struct LockSettings {
    /// The Redis key the lock must use, exactly.
    pub key: String,
    /// Where a Redis fence counter belongs.
    pub fence_key: String,
    /// The resource the jobs are about.
    pub resource: String,
    /// Lease length.
    pub lease_ms: u64,
    /// Renewal interval.
    pub renew_interval_ms: u64,
    /// Longest hold, renewals included.
    pub hold_ms_max: u64,
    /// Longest wait for the lock before retry-later.
    pub acquire_deadline_ms: u64,
    /// Bound of one Redis round trip.
    pub op_timeout_ms: u64,
    /// `redis-counter` or `store`.
    pub fence_source: String,
    /// Most renewals of one holding (absent: core's default).
    #[serde(default)]
    pub renewals_max: Option<u32>,
    /// Full-jitter backoff base between acquire attempts (absent: core's
    /// default).
    #[serde(default)]
    pub backoff_base_ms: Option<u64>,
    /// Full-jitter backoff cap (absent: core's default).
    #[serde(default)]
    pub backoff_cap_ms: Option<u64>,
    /// Most acquire attempts of one job (absent: core's default).
    #[serde(default)]
    pub attempts_max: Option<u32>,
}

/// The worker's Redis path in `init`.
#[derive(Clone, Debug, Deserialize)]
pub struct RedisAddress {
    /// `redis://HOST:PORT/0`.
    pub url: String,
}

/// The `init` message.
#[derive(Clone, Debug, Deserialize)]
pub struct Init {
    /// The worker's name.
    pub worker: String,
    /// The worker's Redis path.
    pub redis: RedisAddress,
    /// The scenario's lock settings.
    pub lock: LockSettings,
    /// With Sentinel deciding failovers: how to follow the master.
    #[serde(default)]
    pub sentinel: Option<SentinelInit>,
}

/// `init.sentinel`: ask `sentinels` where `master_name` is, then dial the
/// route for the address they name.
#[derive(Clone, Debug, Deserialize)]
pub struct SentinelInit {
    /// The name the sentinels monitor the master under.
    pub master_name: String,
    /// The sentinels, `host:port`, asked in order.
    pub sentinels: Vec<String>,
    /// One per data node.
    pub routes: Vec<Route>,
}

/// A data node's real address and the worker's path to it.
#[derive(Clone, Debug, Deserialize)]
pub struct Route {
    /// `host:port` as Sentinel names it.
    pub from: String,
    /// `host:port` to dial instead.
    pub to: String,
}

/// A `job` message.
#[derive(Clone, Debug, Deserialize)]
pub struct JobMessage {
    /// The job's id, echoed in `done` and sent with its `write`.
    pub job: String,
    /// The resource to lock.
    pub resource: String,
    /// How long the work takes while the lock is held.
    pub work_ms: u64,
}

/// A `written` reply.
#[derive(Clone, Debug, Deserialize)]
pub struct Written {
    /// `accepted`, `already-done`, `stale`, `not-found` or `error`.
    pub outcome: String,
    /// With `stale`: the store's fence.
    pub last_fence: Option<i64>,
    /// With `error`: whether it certainly did not take effect.
    pub definite: Option<bool>,
    /// With `error`: what went wrong.
    pub detail: Option<String>,
}

/// A `fence` reply.
#[derive(Clone, Debug, Deserialize)]
pub struct FenceReply {
    /// The fence, when the harness had one.
    pub fence: Option<i64>,
    /// Why there is none.
    pub error: Option<String>,
}

/// A reply to one of this adapter's requests.
#[derive(Debug)]
pub enum Reply {
    /// To a `write`.
    Written(Written),
    /// To a `next-fence`.
    Fence(FenceReply),
}

/// A message from the harness after `init`.
#[derive(Debug)]
pub enum Incoming {
    /// Run a job.
    Job(JobMessage),
    /// A reply, with the id of the request it answers.
    Reply(u64, Reply),
    /// Stop (also what a closed stdin means).
    Shutdown,
    /// The harness could not understand this adapter.
    Error(String),
}

/// A line the harness sent that this adapter cannot understand; its text is
/// what the `error` message says.
#[derive(Debug)]
pub struct Malformed(pub String);

/// Reads one line of at most [`LINE_MAX`] bytes; `Ok(None)` at end of input.
pub async fn read_line<R: AsyncBufRead + Unpin>(
    input: &mut R,
    lineno: u64,
) -> Result<Option<Vec<u8>>, Malformed> {
    let mut line = Vec::new();
    let read = (&mut *input)
        .take(LINE_MAX as u64 + 1)
        .read_until(b'\n', &mut line)
        .await
        .map_err(|e| Malformed(format!("reading line {lineno} failed: {e}")))?;
    if read == 0 {
        return Ok(None);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    } else if line.len() > LINE_MAX {
        return Err(Malformed(format!("line {lineno} is over {LINE_MAX} bytes")));
    }
    Ok(Some(line))
}

/// Parses the first line, which must be a protocol-1 `init`.
pub fn parse_init(line: &[u8]) -> Result<Init, Malformed> {
    let value = parse_object(line, 1)?;
    let kind = value["type"].as_str().unwrap_or_default();
    if kind != "init" {
        return Err(Malformed(format!(
            "line 1 is a {kind:?} message; the first must be init"
        )));
    }
    if value["protocol"].as_u64() != Some(PROTOCOL) {
        return Err(Malformed(format!(
            "protocol {} is not spoken here (only {PROTOCOL})",
            value["protocol"]
        )));
    }
    serde_json::from_value(value).map_err(|e| Malformed(format!("line 1: bad init: {e}")))
}

/// Parses a line after `init`.
pub fn parse_incoming(line: &[u8], lineno: u64) -> Result<Incoming, Malformed> {
    let value = parse_object(line, lineno)?;
    let kind = value["type"].as_str().unwrap_or_default().to_owned();
    let bad = |e: serde_json::Error| Malformed(format!("line {lineno}: bad {kind}: {e}"));
    let id = || {
        value["id"]
            .as_u64()
            .ok_or_else(|| Malformed(format!("line {lineno}: {kind} without an integer id")))
    };
    Ok(match kind.as_str() {
        "job" => Incoming::Job(serde_json::from_value(value).map_err(bad)?),
        "written" => Incoming::Reply(
            id()?,
            Reply::Written(serde_json::from_value(value).map_err(bad)?),
        ),
        "fence" => Incoming::Reply(
            id()?,
            Reply::Fence(serde_json::from_value(value).map_err(bad)?),
        ),
        "shutdown" => Incoming::Shutdown,
        "error" => Incoming::Error(value["message"].as_str().unwrap_or_default().to_owned()),
        other => {
            return Err(Malformed(format!(
                "line {lineno} has unknown type {other:?}"
            )))
        }
    })
}

fn parse_object(line: &[u8], lineno: u64) -> Result<Value, Malformed> {
    let value: Value = serde_json::from_slice(line)
        .map_err(|e| Malformed(format!("line {lineno} is not JSON: {e}")))?;
    if !value["type"].is_string() {
        return Err(Malformed(format!(
            "line {lineno} is not a message with a type"
        )));
    }
    Ok(value)
}

/// Why a request got no reply.
#[derive(Debug)]
pub enum RequestError {
    /// [`PENDING_MAX`] requests already wait: nothing was sent.
    TooMany,
    /// Writing the request failed: nothing reached the harness.
    NotSent(String),
    /// Sent, and no reply came in time (or the adapter is stopping).
    NoReply(Duration),
}

/// The adapter's side of the wire: the output lock and the pending requests.
/// Shared by every job task.
#[derive(Default)]
pub struct Channel {
    out: tokio::sync::Mutex<Option<tokio::io::Stdout>>,
    pending: Mutex<HashMap<u64, oneshot::Sender<Reply>>>,
    last_id: AtomicU64,
    stopping: AtomicBool,
}

impl Channel {
    /// A channel writing to this process's stdout.
    pub fn stdout() -> Arc<Self> {
        Arc::new(Self {
            out: tokio::sync::Mutex::new(Some(tokio::io::stdout())),
            ..Self::default()
        })
    }

    /// Writes one message as one line and flushes it.
    pub async fn send(&self, message: &Value) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(message)?;
        if line.len() > LINE_MAX {
            return Err(std::io::Error::other(format!(
                "a {} message of {} bytes is over the line bound",
                message["type"],
                line.len()
            )));
        }
        line.push(b'\n');
        let mut out = self.out.lock().await;
        let out = out
            .as_mut()
            .ok_or_else(|| std::io::Error::other("no output"))?;
        out.write_all(&line).await?;
        out.flush().await
    }

    /// Sends `message` with a fresh `id` and waits up to `wait` for its reply.
    pub async fn request(&self, mut message: Value, wait: Duration) -> Result<Reply, RequestError> {
        let (tx, rx) = oneshot::channel();
        let id = {
            let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            if self.stopping.load(Ordering::SeqCst) {
                return Err(RequestError::NotSent("the adapter is stopping".into()));
            }
            if pending.len() >= PENDING_MAX {
                return Err(RequestError::TooMany);
            }
            let id = self.last_id.fetch_add(1, Ordering::SeqCst) + 1;
            pending.insert(id, tx);
            id
        };
        message["id"] = json!(id);
        if let Err(e) = self.send(&message).await {
            self.forget(id);
            return Err(RequestError::NotSent(e.to_string()));
        }
        let reply = tokio::time::timeout(wait, rx).await;
        self.forget(id);
        match reply {
            Ok(Ok(reply)) => Ok(reply),
            // Timed out, or the sender was dropped by `stop`.
            _ => Err(RequestError::NoReply(wait)),
        }
    }

    fn forget(&self, id: u64) {
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
    }

    /// Hands a reply to the request waiting for it. A reply for an id that
    /// was never sent is a protocol error; one for a request whose wait
    /// already ended is dropped (that request was reported indeterminate).
    pub fn dispatch(&self, id: u64, reply: Reply) -> Result<(), Malformed> {
        let waiter = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        match waiter {
            Some(tx) => {
                let _ = tx.send(reply);
                Ok(())
            }
            None if id == 0 || id > self.last_id.load(Ordering::SeqCst) => Err(Malformed(format!(
                "a reply for id {id}, which was never sent"
            ))),
            None => {
                tracing::warn!(id, "late reply ignored: its request already gave up");
                Ok(())
            }
        }
    }

    /// Stops: no new requests, and every waiting one ends now without a reply.
    pub fn stop(&self) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        self.stopping.store(true, Ordering::SeqCst);
        pending.clear();
    }
}
