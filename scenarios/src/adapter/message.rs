//! The adapter protocol's messages (version 1, `docs/adapter-protocol.md`):
//! what the harness sends, what an adapter may send, and the typed error
//! for a line that is not one of them.
//!
//! Parsing is strict where a guess would change a verdict (an unknown
//! `type`, a missing field, a report the protocol does not name) and
//! lenient where the protocol promises it (unknown fields are ignored, so
//! a version can add some).

use serde::{Deserialize, Serialize};

use crate::history::JobReport;

/// The protocol version this harness speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// Longest line either side may send, newline excluded.
pub const LINE_BYTES_MAX: usize = 64 * 1024;

/// The lock settings `init` carries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LockSettings {
    /// The Redis key the lock must use.
    pub key: String,
    /// Where a lock that counts fences in Redis keeps its counter.
    pub fence_key: String,
    /// The protected resource's name.
    pub resource: String,
    /// Lease length.
    pub lease_ms: u64,
    /// How often a renewing lock renews.
    pub renew_interval_ms: u64,
    /// Longest hold, renewals included.
    pub hold_ms_max: u64,
    /// How long an acquire may keep trying.
    pub acquire_deadline_ms: u64,
    /// Timeout of one call to a server.
    pub op_timeout_ms: u64,
    /// Most renewals of one holding.
    pub renewals_max: u32,
    /// Full-jitter backoff between acquire attempts: base and cap.
    pub backoff_base_ms: u64,
    /// See `backoff_base_ms`.
    pub backoff_cap_ms: u64,
    /// Most acquire attempts of one job.
    pub attempts_max: u32,
    /// Where the scenario expects fences from (`redis-counter`, `store`).
    pub fence_source: String,
}

/// A worker's Redis path as `init` gives it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RedisPath {
    /// Host to dial.
    pub host: String,
    /// Port to dial.
    pub port: u16,
    /// The same as `redis://host:port/0`.
    pub url: String,
}

/// A worker's PostgreSQL path as `init` gives it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PostgresPath {
    /// `postgres://…` through the worker's proxy.
    pub url: String,
}

/// With Sentinel deciding failovers, how the adapter finds the master
/// (`init.sentinel`): ask the sentinels for `master_name`, then dial the
/// route for the address they name, never the address itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SentinelInit {
    /// The name the sentinels monitor the master under.
    pub master_name: String,
    /// The sentinels, `host:port`, asked in order.
    pub sentinels: Vec<String>,
    /// One per data node: its real address and the worker's path to it.
    pub routes: Vec<Route>,
}

/// A data node's real address, as Sentinel names it, and the worker's
/// path to that node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Route {
    /// `host:port` as Sentinel answers it.
    pub from: String,
    /// `host:port` to dial instead.
    pub to: String,
}

/// A message from the harness to an adapter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ToAdapter {
    /// The first line: who the adapter is and what it may use.
    Init {
        /// [`PROTOCOL_VERSION`].
        protocol: u32,
        /// The worker's name (`w0`).
        worker: String,
        /// The worker's Redis path.
        redis: RedisPath,
        /// The worker's PostgreSQL path.
        postgres: PostgresPath,
        /// The scenario's lock settings.
        lock: Box<LockSettings>,
        /// With Sentinel only: how to follow the master.
        #[serde(skip_serializing_if = "Option::is_none")]
        sentinel: Option<SentinelInit>,
    },
    /// Run one job.
    Job {
        /// The job's id (its idempotency key).
        job: String,
        /// The protected resource.
        resource: String,
        /// How long the work inside the lock takes.
        work_ms: u64,
    },
    /// The answer to a `write`.
    Written {
        /// The adapter's request id.
        id: u64,
        /// `accepted`, `already-done`, `stale`, `not-found` or `error`.
        outcome: String,
        /// With `stale`: the fence that won.
        #[serde(skip_serializing_if = "Option::is_none")]
        last_fence: Option<i64>,
        /// With `error`: whether it certainly did not take effect.
        #[serde(skip_serializing_if = "Option::is_none")]
        definite: Option<bool>,
        /// With `error`: what went wrong.
        #[serde(skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// The answer to a `next-fence`.
    Fence {
        /// The adapter's request id.
        id: u64,
        /// The fence, unless `error` says why not.
        #[serde(skip_serializing_if = "Option::is_none")]
        fence: Option<i64>,
        /// Why there is no fence.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// Stop: exit with 0 within the grace period.
    Shutdown,
}

impl ToAdapter {
    /// The message as one line, newline included.
    pub fn line(&self) -> String {
        let mut line = serde_json::to_string(self).expect("harness messages serialise");
        line.push('\n');
        line
    }
}

/// A message from an adapter to the harness.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum FromAdapter {
    /// The answer to `init`.
    Ready {
        /// The protocol version the adapter speaks.
        protocol: u32,
        /// The lock library's name.
        library: String,
        /// Its version, as installed.
        #[serde(default)]
        library_version: Option<String>,
        /// Whether the lock issues fencing tokens.
        fences: bool,
    },
    /// A job ended.
    Done {
        /// The job's id, as sent.
        job: String,
        /// What the adapter's flow reported.
        report: ReportName,
        /// Free text.
        #[serde(default)]
        detail: Option<String>,
    },
    /// The protected write, made by the harness on the worker's path.
    Write {
        /// The adapter's request id.
        id: u64,
        /// The job the write completes.
        job: String,
        /// The value the lock put on its key for this holding.
        owner: String,
        /// The fencing token, if the lock has one.
        #[serde(default)]
        fence: Option<i64>,
    },
    /// The next fence from the durable store.
    NextFence {
        /// The adapter's request id.
        id: u64,
    },
    /// The adapter could not go on.
    Error {
        /// Why.
        message: String,
    },
}

/// A job report's protocol spelling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReportName {
    /// `success`
    Success,
    /// `already-done`
    AlreadyDone,
    /// `retry-later`
    RetryLater,
    /// `ownership-lost`
    OwnershipLost,
    /// `failed`
    Failed,
}

impl From<ReportName> for JobReport {
    fn from(name: ReportName) -> Self {
        match name {
            ReportName::Success => JobReport::Success,
            ReportName::AlreadyDone => JobReport::AlreadyDone,
            ReportName::RetryLater => JobReport::RetryLater,
            ReportName::OwnershipLost => JobReport::OwnershipLost,
            ReportName::Failed => JobReport::Failed,
        }
    }
}

/// A line from an adapter that the protocol does not allow.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{worker}'s adapter sent {problem}: {quoted}")]
pub struct BadLine {
    /// The worker whose adapter sent it.
    pub worker: String,
    /// What is wrong with it.
    pub problem: String,
    /// The line, cut to 200 characters.
    pub quoted: String,
}

/// Longest part of a bad line quoted in an error.
const QUOTED_CHARS_MAX: usize = 200;

impl FromAdapter {
    /// Parses one line (without its newline) from `worker`'s adapter.
    pub fn parse(worker: &str, line: &str) -> Result<Self, BadLine> {
        let bad = |problem: String| BadLine {
            worker: worker.to_owned(),
            problem,
            quoted: line.chars().take(QUOTED_CHARS_MAX).collect(),
        };
        if line.len() > LINE_BYTES_MAX {
            return Err(bad(format!("a line over {LINE_BYTES_MAX} bytes")));
        }
        serde_json::from_str(line)
            .map_err(|e| bad(format!("a message the protocol does not have ({e})")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adapter_messages_parse_and_ignore_unknown_fields() {
        let ready = FromAdapter::parse(
            "w0",
            r#"{"type":"ready","protocol":1,"library":"redis-py","library_version":"5.2.1","fences":false,"extra":3}"#,
        )
        .unwrap();
        assert_eq!(
            ready,
            FromAdapter::Ready {
                protocol: 1,
                library: "redis-py".into(),
                library_version: Some("5.2.1".into()),
                fences: false
            }
        );
        let write = FromAdapter::parse(
            "w0",
            r#"{"type":"write","id":4,"job":"j1","owner":"abc","fence":null}"#,
        )
        .unwrap();
        assert_eq!(
            write,
            FromAdapter::Write {
                id: 4,
                job: "j1".into(),
                owner: "abc".into(),
                fence: None
            }
        );
        let done = FromAdapter::parse(
            "w0",
            r#"{"type":"done","job":"j1","report":"ownership-lost"}"#,
        )
        .unwrap();
        assert!(matches!(
            done,
            FromAdapter::Done {
                report: ReportName::OwnershipLost,
                ..
            }
        ));
    }

    #[test]
    fn a_bad_line_is_a_typed_error_quoting_it() {
        for line in [
            "not json",
            r#"{"type":"teleport"}"#,
            r#"{"type":"done","job":"j1","report":"great"}"#,
            r#"{"type":"write","id":1,"job":"j1"}"#,
        ] {
            let error = FromAdapter::parse("w1", line).unwrap_err();
            assert_eq!(error.worker, "w1");
            assert_eq!(error.quoted, line);
            assert!(
                error.to_string().starts_with("w1's adapter sent"),
                "{error}"
            );
        }
        let long = format!(
            r#"{{"type":"error","message":"{}"}}"#,
            "x".repeat(LINE_BYTES_MAX)
        );
        let error = FromAdapter::parse("w0", &long).unwrap_err();
        assert!(error.problem.contains("over"), "{error}");
        assert_eq!(error.quoted.chars().count(), QUOTED_CHARS_MAX);
    }

    #[test]
    fn harness_messages_are_one_line_with_the_protocol_spelling() {
        let line = ToAdapter::Written {
            id: 2,
            outcome: "stale".into(),
            last_fence: Some(9),
            definite: None,
            detail: None,
        }
        .line();
        assert_eq!(
            line,
            "{\"type\":\"written\",\"id\":2,\"outcome\":\"stale\",\"last_fence\":9}\n"
        );
        assert_eq!(ToAdapter::Shutdown.line(), "{\"type\":\"shutdown\"}\n");
    }

    /// `init.sentinel` is spelled as docs/adapter-protocol.md shows it, and
    /// absent (not null) without Sentinel.
    #[test]
    fn init_carries_the_sentinel_routes_only_with_sentinel() {
        let init = |sentinel| ToAdapter::Init {
            protocol: PROTOCOL_VERSION,
            worker: "w0".into(),
            redis: RedisPath {
                host: "127.0.0.1".into(),
                port: 40123,
                url: "redis://127.0.0.1:40123/0".into(),
            },
            postgres: PostgresPath {
                url: "postgres://x".into(),
            },
            lock: Box::new(LockSettings {
                key: "lock:{r}".into(),
                fence_key: "fence:{r}".into(),
                resource: "r".into(),
                lease_ms: 1000,
                renew_interval_ms: 300,
                hold_ms_max: 4000,
                acquire_deadline_ms: 2000,
                op_timeout_ms: 150,
                renewals_max: 20,
                backoff_base_ms: 10,
                backoff_cap_ms: 200,
                attempts_max: 50,
                fence_source: "redis-counter".into(),
            }),
            sentinel,
        };
        assert!(!init(None).line().contains("sentinel"));
        let line = init(Some(SentinelInit {
            master_name: "redfence".into(),
            sentinels: vec!["127.0.0.1:26380".into()],
            routes: vec![Route {
                from: "127.0.0.1:6379".into(),
                to: "127.0.0.1:40123".into(),
            }],
        }))
        .line();
        assert!(
            line.ends_with(
                ",\"sentinel\":{\"master_name\":\"redfence\",\"sentinels\":[\"127.0.0.1:26380\"],\
                 \"routes\":[{\"from\":\"127.0.0.1:6379\",\"to\":\"127.0.0.1:40123\"}]}}\n"
            ),
            "{line}"
        );
    }
}
