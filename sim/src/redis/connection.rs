//! One client connection: read bytes, parse pipelined requests, execute
//! them in order, write the replies.
//!
//! Generic over any `AsyncRead + AsyncWrite + Unpin` stream, so turmoil's
//! simulated TCP and tokio's real TCP share every line of it. Requests of
//! one connection run strictly in order (a WAIT or a BLPOP blocks only its
//! own connection, as in Redis); a protocol error is answered with Redis's
//! `-ERR Protocol error: ...` and the connection is closed; a SYNC turns the
//! connection into a replica feed.
//!
//! Blocked in BLPOP, the connection keeps reading (requests pile up in its
//! buffer, as in Redis) so that a client that hangs up is noticed and stops
//! waiting for an element it would never receive. Messages published to a
//! subscribed client sit in its outbox and are written before its next
//! reply, or as soon as they arrive while it idles. When the connection
//! ends, its watches and subscriptions are forgotten.
//!
//! Bounds: the unparsed input is at most [`QUERY_BUFFER_BYTES_MAX`] (Redis
//! closes a client past its query-buffer limit too), and replies are
//! flushed whenever [`REPLY_FLUSH_BYTES`] accumulate.

use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::cmd::Outcome;
use super::frame::{parse_request, Frame};
use super::replication;
use super::server::{Client, Server};

/// Largest unparsed input kept for one client before it is disconnected.
pub(crate) const QUERY_BUFFER_BYTES_MAX: usize = 2 * super::frame::BULK_BYTES_MAX + 64 * 1024;
/// Replies are written out once this many bytes are pending.
pub(crate) const REPLY_FLUSH_BYTES: usize = 64 * 1024;
/// Bytes read per `read` call.
const READ_CHUNK_BYTES: usize = 16 * 1024;

/// How a connection's request loop ended.
enum End {
    /// Closed, broken, or the instance died.
    Closed,
    /// SYNC: the stream becomes a replica feed, with the unparsed rest.
    Sync {
        listening_port: u16,
        pending: Vec<u8>,
    },
}

/// Serves one client until it disconnects, breaks the protocol, or the
/// instance dies.
pub(crate) async fn serve_client<S>(server: Rc<Server>, mut stream: S, peer: SocketAddr)
where
    S: AsyncRead + AsyncWrite + Unpin + 'static,
{
    let mut client = server.new_client(peer.ip().to_string());
    let end = serve(&server, &mut stream, &mut client).await;
    server.client_gone(&mut client);
    if let End::Sync {
        listening_port,
        pending,
    } = end
    {
        replication::serve_feed(server, stream, client.addr, listening_port, pending).await;
    }
}

/// Moves messages published to `client` into `out`.
fn take_pushed(client: &Client, out: &mut Vec<u8>) {
    let mut pushed = client.outbox.bytes.borrow_mut();
    if !pushed.is_empty() {
        out.append(&mut pushed);
    }
}

async fn serve<S>(server: &Rc<Server>, stream: &mut S, client: &mut Client) -> End
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut buf: Vec<u8> = Vec::new();
    let mut out: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; READ_CHUNK_BYTES];
    loop {
        let mut start = 0;
        loop {
            if !server.is_alive() || client.outbox.overflowed.get() {
                return End::Closed;
            }
            let (args, used) = match parse_request(&buf[start..]) {
                Ok(Some(parsed)) => parsed,
                Ok(None) => break,
                Err(e) => {
                    take_pushed(client, &mut out);
                    e.reply().encode(&mut out);
                    let _ = stream.write_all(&out).await;
                    return End::Closed;
                }
            };
            debug_assert!(used > 0, "a parsed request consumes bytes");
            start += used;
            if args.is_empty() {
                continue; // `*0` / `*-1`: Redis skips empty requests.
            }
            let outcome = server.execute(client, &args);
            take_pushed(client, &mut out);
            match outcome {
                Outcome::Reply(reply) => reply.encode(&mut out),
                Outcome::Replies(replies) => replies.iter().for_each(|r| r.encode(&mut out)),
                Outcome::Wait {
                    numreplicas,
                    timeout_ms,
                } => {
                    if stream.write_all(&out).await.is_err() {
                        return End::Closed;
                    }
                    out.clear();
                    replication::wait(server, numreplicas, timeout_ms)
                        .await
                        .encode(&mut out);
                }
                Outcome::Block { keys, timeout_ms } => {
                    if stream.write_all(&out).await.is_err() {
                        return End::Closed;
                    }
                    out.clear();
                    let Some(reply) = block(
                        server, stream, client.db, keys, timeout_ms, &mut buf, &mut chunk,
                    )
                    .await
                    else {
                        return End::Closed;
                    };
                    reply.encode(&mut out);
                }
                Outcome::Sync { listening_port } => {
                    if stream.write_all(&out).await.is_err() {
                        return End::Closed;
                    }
                    return End::Sync {
                        listening_port,
                        pending: buf.split_off(start),
                    };
                }
            }
            if out.len() >= REPLY_FLUSH_BYTES {
                if stream.write_all(&out).await.is_err() {
                    return End::Closed;
                }
                out.clear();
            }
        }
        buf.drain(..start);
        take_pushed(client, &mut out);
        if !out.is_empty() {
            if stream.write_all(&out).await.is_err() {
                return End::Closed;
            }
            out.clear();
        }
        if buf.len() > QUERY_BUFFER_BYTES_MAX {
            return End::Closed;
        }
        // A subscriber also wakes for published messages.
        let subscribed = !client.channels.is_empty();
        tokio::select! {
            biased;
            read = stream.read(&mut chunk) => match read {
                Ok(0) | Err(_) => return End::Closed,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            },
            _ = client.outbox.notify.notified(), if subscribed => {}
        }
    }
}

/// BLPOP's wait: registers with the server, then waits for an element, the
/// timeout, or the client hanging up (`None`: stop serving it). Bytes read
/// meanwhile are kept in `buf` for after the reply.
async fn block<S>(
    server: &Server,
    stream: &mut S,
    db: usize,
    keys: Vec<Vec<u8>>,
    timeout_ms: u64,
    buf: &mut Vec<u8>,
    chunk: &mut [u8],
) -> Option<Frame>
where
    S: AsyncRead + Unpin,
{
    let (seq, reply) = server.block(db, keys);
    let deadline = tokio::time::Instant::now() + Duration::from_millis(timeout_ms);
    let mut open = true;
    // Bounded by the deadline (and by the query buffer bound).
    while open && reply.frame.borrow().is_none() && server.is_alive() {
        tokio::select! {
            biased;
            _ = reply.notify.notified() => {}
            _ = tokio::time::sleep_until(deadline) => break,
            read = stream.read(chunk), if buf.len() <= QUERY_BUFFER_BYTES_MAX => match read {
                Ok(0) | Err(_) => open = false,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            },
        }
    }
    server.unblock(seq);
    let served = reply.frame.borrow_mut().take();
    match (served, open) {
        (Some(frame), _) => Some(frame),
        (None, true) => Some(Frame::NullArray),
        (None, false) => None,
    }
}
