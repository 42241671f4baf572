//! Shared fixtures for the real-server tests: connections to the throwaway
//! Redis, Redis Cluster and PostgreSQL that `scripts/with-services` starts,
//! a private redis-server a test may kill, a reply-losing TCP proxy, and a
//! per-test metrics recorder.
//!
//! A missing variable is a hard failure, never a skip: a suite that quietly
//! skips its real-server tests proves nothing.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use redfence_core::{PgFencedStore, ResourceName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: run the suite with `scripts/test` (it starts Redis and PostgreSQL)"
        )
    })
}

pub fn redis_url() -> String {
    env("REDFENCE_REDIS_URL")
}

pub async fn redis() -> redis::aio::MultiplexedConnection {
    redis::Client::open(redis_url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .expect("connect to the test redis-server")
}

pub async fn store() -> PgFencedStore {
    PgFencedStore::connect(&env("REDFENCE_DATABASE_URL"))
        .await
        .expect("connect to the test PostgreSQL")
}

/// A resource name no other test (or earlier run) uses.
pub fn fresh_resource(prefix: &str) -> ResourceName {
    ResourceName::new(format!("{prefix}-{}", uuid::Uuid::new_v4()))
        .unwrap()
        .with_type("test")
        .unwrap()
}

pub async fn get(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> Option<String> {
    redis::cmd("GET").arg(key).query_async(conn).await.unwrap()
}

pub async fn pttl(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> i64 {
    redis::cmd("PTTL").arg(key).query_async(conn).await.unwrap()
}

/// A redis-server of the test's own, on a free loopback port, so that the
/// test can stop it. Killed on drop.
pub struct OwnRedis {
    child: Child,
    pub url: String,
}

impl OwnRedis {
    pub async fn start() -> Self {
        let port = free_port();
        let child = Command::new(env("REDFENCE_REDIS_SERVER_BIN"))
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
            ])
            .args(["--appendonly", "no", "--protected-mode", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn redis-server");
        let url = format!("redis://127.0.0.1:{port}/");
        let this = Self { child, url };
        // Bounded: a server that is not up after 5 s will not come up.
        for _ in 0..100 {
            if TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return this;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("own redis-server did not start on port {port}");
    }

    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.stop();
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// `host:port` of the test Redis.
pub fn redis_addr() -> String {
    redis_url()
        .trim_start_matches("redis://")
        .trim_end_matches('/')
        .to_owned()
}

/// A TCP proxy in front of the test Redis that can lose replies: the request
/// reaches Redis and runs, the answer never reaches the client, and the
/// connection breaks (what a crashed link looks like: TCP never loses bytes
/// silently, so a lost reply always comes with a broken connection).
#[derive(Clone, Debug)]
pub struct ReplyLosingProxy {
    pub addr: SocketAddr,
    lose: Arc<AtomicBool>,
}

impl ReplyLosingProxy {
    pub async fn start(upstream: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let lose = Arc::new(AtomicBool::new(false));
        let lose_flag = lose.clone();
        tokio::spawn(async move {
            // Bounded: a test opens a handful of connections at most.
            for _ in 0..64 {
                let Ok((client, _)) = listener.accept().await else {
                    return;
                };
                let upstream = TcpStream::connect(upstream.as_str()).await.unwrap();
                tokio::spawn(pump(client, upstream, lose_flag.clone()));
            }
        });
        Self { addr, lose }
    }

    pub fn url(&self) -> String {
        format!("redis://{}/", self.addr)
    }

    /// From now on, the next reply Redis sends is lost and the client's
    /// connection is broken.
    pub fn lose_next_reply(&self) {
        self.lose.store(true, Ordering::SeqCst);
    }

    /// Replies flow again (for connections made from now on).
    pub fn deliver_replies(&self) {
        self.lose.store(false, Ordering::SeqCst);
    }
}

async fn pump(client: TcpStream, upstream: TcpStream, lose: Arc<AtomicBool>) {
    let (mut client_rx, mut client_tx) = client.into_split();
    let (mut upstream_rx, mut upstream_tx) = upstream.into_split();
    let requests = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut client_rx, &mut upstream_tx).await;
    });
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match upstream_rx.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if lose.load(Ordering::SeqCst) {
            // The reply has arrived from Redis (so the command ran); drop it
            // and break the client's connection.
            lose.store(false, Ordering::SeqCst);
            break;
        }
        if client_tx.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    requests.abort();
}

/// Installs a debugging recorder for this thread (tests run on a
/// current-thread runtime, so every task of the test records into it).
///
/// The recorder's snapshots drain counters and histograms, so every read
/// folds the drained values into running totals kept here.
pub struct Metrics {
    snapshotter: metrics_util::debugging::Snapshotter,
    totals: std::sync::Mutex<Vec<(metrics::Key, u64)>>,
    _guard: metrics::LocalRecorderGuard<'static>,
}

impl Metrics {
    pub fn install() -> Self {
        let recorder = Box::leak(Box::new(metrics_util::debugging::DebuggingRecorder::new()));
        let snapshotter = recorder.snapshotter();
        let guard = metrics::set_default_local_recorder(recorder);
        Self {
            snapshotter,
            totals: std::sync::Mutex::new(Vec::new()),
            _guard: guard,
        }
    }

    /// Folds the latest snapshot in; counters add their value, histograms
    /// their number of samples.
    fn totals(&self) -> std::sync::MutexGuard<'_, Vec<(metrics::Key, u64)>> {
        use metrics_util::debugging::DebugValue;
        let mut totals = self.totals.lock().unwrap();
        for (key, _, _, value) in self.snapshotter.snapshot().into_vec() {
            let n = match value {
                DebugValue::Counter(n) => n,
                DebugValue::Histogram(v) => v.len() as u64,
                DebugValue::Gauge(_) => 0,
            };
            let key = key.key().clone();
            match totals.iter_mut().find(|(k, _)| *k == key) {
                Some((_, total)) => *total += n,
                None => totals.push((key, n)),
            }
        }
        totals
    }

    /// Sum of counter (or histogram sample count) `name` over every series
    /// whose labels include all of `labels`.
    pub fn counter(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        self.totals()
            .iter()
            .filter(|(key, _)| key.name() == name && has_labels(key, labels))
            .map(|(_, n)| n)
            .sum()
    }

    /// Number of samples recorded in histogram `name` with all of `labels`.
    pub fn samples(&self, name: &str, labels: &[(&str, &str)]) -> usize {
        self.counter(name, labels) as usize
    }

    /// Every label value recorded so far.
    pub fn label_values(&self) -> Vec<String> {
        self.totals()
            .iter()
            .flat_map(|(key, _)| {
                key.labels()
                    .map(|l| l.value().to_owned())
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

fn has_labels(key: &metrics::Key, labels: &[(&str, &str)]) -> bool {
    labels
        .iter()
        .all(|(k, v)| key.labels().any(|l| l.key() == *k && l.value() == *v))
}
