//! Is a server up? One cheap, bounded check per server kind.
//!
//! Redis gets an inline `PING` over a raw TCP socket (no client state to
//! set up or tear down between polls); PostgreSQL a real sqlx connection,
//! since only a completed startup handshake says it accepts queries.

use std::time::Duration;

use sqlx::Connection;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Timeout of one probe (connect plus answer).
pub const PROBE_TIMEOUT_MS: u64 = 1_000;

/// `Ok` when the Redis server at `addr` answers `PING` with `+PONG`.
pub async fn redis_ping(addr: &str) -> Result<(), String> {
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        stream
            .write_all(b"PING\r\n")
            .await
            .map_err(|e| e.to_string())?;
        let mut reply = [0u8; 7];
        stream
            .read_exact(&mut reply)
            .await
            .map_err(|e| e.to_string())?;
        if &reply == b"+PONG\r\n" {
            Ok(())
        } else {
            Err(format!(
                "unexpected reply {:?}",
                String::from_utf8_lossy(&reply)
            ))
        }
    };
    tokio::time::timeout(Duration::from_millis(PROBE_TIMEOUT_MS), exchange)
        .await
        .map_err(|_| "no answer in time".to_owned())?
}

/// `Ok` when PostgreSQL at `url` completes a connection.
pub async fn postgres_connect(url: &str) -> Result<(), String> {
    let connect = async {
        let conn = sqlx::PgConnection::connect(url)
            .await
            .map_err(|e| e.to_string())?;
        conn.close().await.map_err(|e| e.to_string())
    };
    tokio::time::timeout(Duration::from_millis(PROBE_TIMEOUT_MS * 3), connect)
        .await
        .map_err(|_| "no answer in time".to_owned())?
}
