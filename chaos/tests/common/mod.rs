//! Helpers the real-server tests share: starting clusters and talking to
//! Redis and PostgreSQL without a client library's retries or timeouts
//! getting between the test and what the network did.

#![allow(dead_code)] // each test binary uses a different part

use std::time::{Duration, Instant};

use redfence_chaos::{ChaosConfig, RealCluster};
use sqlx::Connection;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a test waits for a reply that should come.
pub const REPLY_TIMEOUT_MS: u64 = 3_000;

/// A cluster of `workers` on local processes (scripts/with-services puts
/// the binaries in place; without them this fails, saying what to install).
pub async fn local_cluster(workers: usize) -> RealCluster {
    let config = ChaosConfig::local_from_env().expect("config");
    RealCluster::start_with(&config, workers)
        .await
        .unwrap_or_else(|e| panic!("local cluster: {e}"))
}

/// `host:port` of a `redis://host:port/` URL.
pub fn addr(url: &str) -> String {
    url.trim_start_matches("redis://")
        .trim_end_matches('/')
        .to_owned()
}

/// An inline-command Redis connection, raw.
pub struct Raw {
    pub stream: TcpStream,
}

impl Raw {
    pub async fn connect(url: &str) -> std::io::Result<Self> {
        let stream = tokio::time::timeout(
            Duration::from_millis(REPLY_TIMEOUT_MS),
            TcpStream::connect(addr(url)),
        )
        .await
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
        Ok(Self { stream })
    }

    pub async fn send(&mut self, command: &str) -> std::io::Result<()> {
        self.stream
            .write_all(format!("{command}\r\n").as_bytes())
            .await
    }

    /// The next reply line, or `Err(TimedOut)` after `wait_ms`; `Ok("")`
    /// when the connection was closed.
    pub async fn reply_within(&mut self, wait_ms: u64) -> std::io::Result<String> {
        let mut buf = vec![0u8; 512];
        let n = tokio::time::timeout(Duration::from_millis(wait_ms), self.stream.read(&mut buf))
            .await
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
        Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
    }

    pub async fn call(&mut self, command: &str) -> std::io::Result<String> {
        self.send(command).await?;
        self.reply_within(REPLY_TIMEOUT_MS).await
    }
}

/// One command on a fresh raw connection.
pub async fn call(url: &str, command: &str) -> std::io::Result<String> {
    Raw::connect(url).await?.call(command).await
}

/// Median round trip of `PING` over one connection.
pub async fn median_ping(url: &str, n: usize) -> Duration {
    let mut raw = Raw::connect(url).await.expect("connect");
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        assert_eq!(raw.call("PING").await.expect("pong"), "+PONG\r\n");
        times.push(started.elapsed());
    }
    times.sort();
    times[n / 2]
}

/// A PostgreSQL connection with a bounded connect.
pub async fn pg(url: &str) -> Result<sqlx::PgConnection, String> {
    tokio::time::timeout(
        Duration::from_millis(REPLY_TIMEOUT_MS),
        sqlx::PgConnection::connect(url),
    )
    .await
    .map_err(|_| "connect timed out".to_owned())?
    .map_err(|e| e.to_string())
}
