//! One client connection: read bytes, parse pipelined requests, execute
//! them in order, write the replies.
//!
//! Generic over any `AsyncRead + AsyncWrite + Unpin` stream, so turmoil's
//! simulated TCP and tokio's real TCP share every line of it. Requests of
//! one connection run strictly in order (a WAIT blocks only its own
//! connection, as in Redis); a protocol error is answered with Redis's
//! `-ERR Protocol error: ...` and the connection is closed; a SYNC turns the
//! connection into a replica feed.
//!
//! Bounds: the unparsed input is at most [`QUERY_BUFFER_BYTES_MAX`] (Redis
//! closes a client past its query-buffer limit too), and replies are
//! flushed whenever [`REPLY_FLUSH_BYTES`] accumulate.

use std::net::SocketAddr;
use std::rc::Rc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::cmd::Outcome;
use super::frame::parse_request;
use super::replication;
use super::server::Server;

/// Largest unparsed input kept for one client before it is disconnected.
pub(crate) const QUERY_BUFFER_BYTES_MAX: usize = 2 * super::frame::BULK_BYTES_MAX + 64 * 1024;
/// Replies are written out once this many bytes are pending.
pub(crate) const REPLY_FLUSH_BYTES: usize = 64 * 1024;
/// Bytes read per `read` call.
const READ_CHUNK_BYTES: usize = 16 * 1024;

/// Serves one client until it disconnects, breaks the protocol, or the
/// instance dies.
pub(crate) async fn serve_client<S>(server: Rc<Server>, mut stream: S, peer: SocketAddr)
where
    S: AsyncRead + AsyncWrite + Unpin + 'static,
{
    let mut client = server.new_client(peer.ip().to_string());
    let mut buf: Vec<u8> = Vec::new();
    let mut out: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; READ_CHUNK_BYTES];
    loop {
        let mut start = 0;
        loop {
            if !server.is_alive() {
                return;
            }
            let (args, used) = match parse_request(&buf[start..]) {
                Ok(Some(parsed)) => parsed,
                Ok(None) => break,
                Err(e) => {
                    e.reply().encode(&mut out);
                    let _ = stream.write_all(&out).await;
                    return;
                }
            };
            debug_assert!(used > 0, "a parsed request consumes bytes");
            start += used;
            if args.is_empty() {
                continue; // `*0` / `*-1`: Redis skips empty requests.
            }
            match server.execute(&mut client, &args) {
                Outcome::Reply(reply) => reply.encode(&mut out),
                Outcome::Wait {
                    numreplicas,
                    timeout_ms,
                } => {
                    if stream.write_all(&out).await.is_err() {
                        return;
                    }
                    out.clear();
                    replication::wait(&server, numreplicas, timeout_ms)
                        .await
                        .encode(&mut out);
                }
                Outcome::Sync { listening_port } => {
                    if stream.write_all(&out).await.is_err() {
                        return;
                    }
                    let pending = buf.split_off(start);
                    replication::serve_feed(server, stream, client.addr, listening_port, pending)
                        .await;
                    return;
                }
            }
            if out.len() >= REPLY_FLUSH_BYTES {
                if stream.write_all(&out).await.is_err() {
                    return;
                }
                out.clear();
            }
        }
        buf.drain(..start);
        if !out.is_empty() {
            if stream.write_all(&out).await.is_err() {
                return;
            }
            out.clear();
        }
        if buf.len() > QUERY_BUFFER_BYTES_MAX {
            return;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}
