//! The tap: a byte-for-byte relay in front of a worker's Redis proxy that
//! reports every request naming the lock key, and how it ended, to the
//! whole-worker observer.
//!
//! An adapter runs a library we cannot wrap, so what its worker sends is
//! read off the wire. The relay forwards every byte unchanged, in both
//! directions, one upstream connection per adapter connection (a library's
//! blocking `BLPOP` or its renewal thread's connection behaves exactly as
//! against the proxy itself); beside the bytes it splits the client's
//! stream into requests and the server's into replies, which RESP pairs in
//! order. A connection whose stream it cannot follow (a malformed frame,
//! `SUBSCRIBE`, `MONITOR`, `CLIENT REPLY`) is still forwarded, just no
//! longer reported. The tap's tasks are the network's, not the worker's:
//! a paused adapter's bytes in flight keep travelling, as on a real wire.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;

use std::sync::Arc;

use crate::world::{WireAnswer, WireObserver, WireRequest};

/// Most bytes of one direction held while waiting for a frame's end:
/// lock traffic is small; past this the connection is forwarded but no
/// longer reported.
pub const FRAME_BYTES_MAX: usize = 4 * 1024 * 1024;
/// Most elements of one frame, and most nesting, the scanner follows.
const FRAME_ITEMS_MAX: usize = 1 << 20;
const FRAME_DEPTH_MAX: usize = 16;
/// Most requests of one connection waiting for their replies.
pub const REQUESTS_PENDING_MAX: usize = 4_096;
/// Most adapter connections open through one tap at once.
pub const CONNECTIONS_MAX: usize = 64;
/// How long a connect to the proxy may take (loopback: well under one).
const UPSTREAM_CONNECT_TIMEOUT_MS: u64 = 1_000;
/// Pause after a failed accept.
const ACCEPT_RETRY_MS: u64 = 10;
/// Bytes read at a time.
const READ_CHUNK_BYTES: usize = 16 * 1024;

/// What one complete frame is.
#[derive(Debug, PartialEq, Eq)]
enum Frame {
    /// A reply that is not an error.
    Reply,
    /// An error reply, with its text.
    Error(String),
    /// A RESP3 push (`>`): not the answer to a request.
    Push,
    /// A RESP3 attribute (`|`): comes before a reply, not instead of it.
    Attribute,
}

/// The end of the line starting at `from`, past its `\r\n`.
fn line_end(buf: &[u8], from: usize) -> Option<usize> {
    buf.get(from..)?
        .windows(2)
        .position(|w| w == b"\r\n")
        .map(|at| from + at + 2)
}

fn number(buf: &[u8], from: usize, end: usize) -> Result<i64, ()> {
    std::str::from_utf8(&buf[from..end - 2])
        .ok()
        .and_then(|n| n.parse().ok())
        .ok_or(())
}

/// The length of the complete frame at `from`: `Ok(None)` while it is
/// incomplete, `Err` when it is not RESP.
fn scan(buf: &[u8], from: usize, depth: usize) -> Result<Option<(usize, Frame)>, ()> {
    if depth > FRAME_DEPTH_MAX {
        return Err(());
    }
    let Some(&kind) = buf.get(from) else {
        return Ok(None);
    };
    let Some(end) = line_end(buf, from) else {
        return Ok(None);
    };
    match kind {
        b'+' | b':' | b'_' | b',' | b'#' | b'(' => Ok(Some((end, Frame::Reply))),
        b'-' => {
            let text = String::from_utf8_lossy(&buf[from + 1..end - 2]).into_owned();
            Ok(Some((end, Frame::Error(text))))
        }
        b'$' | b'!' | b'=' => {
            let len = number(buf, from + 1, end)?;
            if len < 0 {
                return Ok(Some((end, Frame::Reply)));
            }
            let body_end = end + len as usize + 2;
            if buf.len() < body_end {
                return Ok(None);
            }
            let frame = if kind == b'!' {
                Frame::Error(String::from_utf8_lossy(&buf[end..body_end - 2]).into_owned())
            } else {
                Frame::Reply
            };
            Ok(Some((body_end, frame)))
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let count = number(buf, from + 1, end)?;
            if count < 0 {
                return Ok(Some((end, Frame::Reply)));
            }
            let items = match kind {
                b'%' | b'|' => count as usize * 2,
                _ => count as usize,
            };
            if items > FRAME_ITEMS_MAX {
                return Err(());
            }
            let mut at = end;
            for _ in 0..items {
                match scan(buf, at, depth + 1)? {
                    Some((next, _)) => at = next,
                    None => return Ok(None),
                }
            }
            let frame = match kind {
                b'>' => Frame::Push,
                b'|' => Frame::Attribute,
                _ => Frame::Reply,
            };
            Ok(Some((at, frame)))
        }
        _ => Err(()),
    }
}

/// A complete request: its length in bytes and its arguments.
type Request = (usize, Vec<Vec<u8>>);

/// The complete request at the start of `buf`: `Ok(None)` while
/// incomplete, `Err` when it is not a request.
fn request(buf: &[u8]) -> Result<Option<Request>, ()> {
    match buf.first() {
        None => Ok(None),
        Some(b'*') => {
            let Some(end) = line_end(buf, 0) else {
                return Ok(None);
            };
            let count = number(buf, 1, end)?;
            if !(0..=FRAME_ITEMS_MAX as i64).contains(&count) {
                return Err(());
            }
            let mut args = Vec::with_capacity(count as usize);
            let mut at = end;
            for _ in 0..count {
                if buf.get(at).is_none() {
                    return Ok(None);
                }
                if buf[at] != b'$' {
                    return Err(());
                }
                let Some(len_end) = line_end(buf, at) else {
                    return Ok(None);
                };
                let len = number(buf, at + 1, len_end)?;
                if len < 0 {
                    return Err(());
                }
                let body_end = len_end + len as usize + 2;
                if buf.len() < body_end {
                    return Ok(None);
                }
                args.push(buf[len_end..body_end - 2].to_vec());
                at = body_end;
            }
            Ok(Some((at, args)))
        }
        // An inline command: one line, split on spaces.
        Some(_) => {
            let Some(end) = buf.iter().position(|&b| b == b'\n').map(|at| at + 1) else {
                return Ok(None);
            };
            let text = &buf[..end];
            let args = text
                .split(|&b| b == b' ' || b == b'\r' || b == b'\n')
                .filter(|a| !a.is_empty())
                .map(<[u8]>::to_vec)
                .collect();
            Ok(Some((end, args)))
        }
    }
}

/// Whether a request ends the tap's ability to pair replies on its
/// connection.
fn unfollowable(args: &[Vec<u8>]) -> bool {
    let Some(name) = args.first() else {
        return false;
    };
    let is = |n: &[u8]| name.eq_ignore_ascii_case(n);
    is(b"SUBSCRIBE")
        || is(b"PSUBSCRIBE")
        || is(b"SSUBSCRIBE")
        || is(b"MONITOR")
        || (is(b"CLIENT")
            && args
                .get(1)
                .is_some_and(|a| a.eq_ignore_ascii_case(b"REPLY")))
}

/// One connection's requests waiting for replies (`None`: not reported).
#[derive(Default)]
struct Pairing {
    waiting: VecDeque<Option<Box<dyn WireRequest>>>,
    /// Reporting stopped on this connection.
    lost: bool,
}

impl Pairing {
    /// Stops reporting: everything waiting ends unknown.
    fn lose(&mut self, why: &str) {
        self.lost = true;
        for pending in self.waiting.drain(..).flatten() {
            pending.answered(WireAnswer::Lost(why.to_owned()));
        }
    }
}

/// A tap's settings.
#[derive(Clone)]
pub struct TapConfig {
    /// The worker's Redis proxy, `host:port`.
    pub upstream: String,
    /// The lock key whose requests are reported.
    pub lock_key: Vec<u8>,
    /// Where they are reported.
    pub tap: Arc<dyn WireObserver>,
}

/// Starts accepting on `listener` (bound beforehand, so the adapter could
/// be told its address) and relaying. Must run inside the world's
/// `LocalSet`; the returned handle stops accepting.
pub fn start(listener: std::net::TcpListener, config: TapConfig) -> std::io::Result<AbortHandle> {
    listener.set_nonblocking(true)?;
    let listener = TcpListener::from_std(listener)?;
    let open = Rc::new(RefCell::new(0usize));
    let task = tokio::task::spawn_local(async move {
        // Bounded by the adapter's connections (at most CONNECTIONS_MAX
        // at once); ends when the runner aborts it.
        loop {
            let client = match listener.accept().await {
                Ok((client, _)) => client,
                Err(error) => {
                    // Out of descriptors, say: wait rather than spin.
                    tracing::warn!("a lock adapter's tap could not accept: {error}");
                    tokio::time::sleep(Duration::from_millis(ACCEPT_RETRY_MS)).await;
                    continue;
                }
            };
            if *open.borrow() >= CONNECTIONS_MAX {
                tracing::warn!(
                    "a lock adapter opened more than {CONNECTIONS_MAX} connections at once; refused one"
                );
                drop(client);
                continue;
            }
            *open.borrow_mut() += 1;
            let (config, open) = (config.clone(), open.clone());
            tokio::task::spawn_local(async move {
                relay(client, &config).await;
                *open.borrow_mut() -= 1;
            });
        }
    });
    Ok(task.abort_handle())
}

/// Relays one adapter connection until either side closes it.
async fn relay(client: TcpStream, config: &TapConfig) {
    let connect = TcpStream::connect(config.upstream.as_str());
    let server =
        match tokio::time::timeout(Duration::from_millis(UPSTREAM_CONNECT_TIMEOUT_MS), connect)
            .await
        {
            Ok(Ok(server)) => server,
            // The proxy refused (a partition) or hung: the adapter's
            // connection closes with nothing sent, as a refused one would fail.
            _ => return,
        };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let pairing = RefCell::new(Pairing::default());
    let up = async {
        let mut buf = Vec::new();
        let mut chunk = vec![0u8; READ_CHUNK_BYTES];
        // Bounded by the connection: ends when the adapter closes it.
        loop {
            let n = match client_read.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            // Recorded before forwarded: a request is invoked before any
            // reply to it can arrive.
            requests_seen(&mut buf, &chunk[..n], &pairing, config);
            if server_write.write_all(&chunk[..n]).await.is_err() {
                break;
            }
        }
        let _ = server_write.shutdown().await;
    };
    let down = async {
        let mut buf = Vec::new();
        let mut chunk = vec![0u8; READ_CHUNK_BYTES];
        // Bounded by the connection: ends when the server side closes it.
        loop {
            let n = match server_read.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            replies_seen(&mut buf, &chunk[..n], &pairing);
            if client_write.write_all(&chunk[..n]).await.is_err() {
                break;
            }
        }
        let _ = client_write.shutdown().await;
    };
    // Either side closing ends the relay: a proxy restart (every fault
    // change) closes the server side, and the adapter must see its
    // connection break as it would against the proxy.
    tokio::select! {
        () = up => {}
        () = down => {}
    }
    pairing
        .borrow_mut()
        .lose("the connection closed before the reply");
}

fn requests_seen(buf: &mut Vec<u8>, bytes: &[u8], pairing: &RefCell<Pairing>, config: &TapConfig) {
    let mut pairing = pairing.borrow_mut();
    if pairing.lost {
        return;
    }
    buf.extend_from_slice(bytes);
    let mut at = 0;
    // Bounded by the bytes read.
    loop {
        match request(&buf[at..]) {
            Ok(Some((len, args))) => {
                at += len;
                if args.is_empty() {
                    continue;
                }
                if pairing.waiting.len() >= REQUESTS_PENDING_MAX {
                    pairing.lose("too many requests waiting for replies to follow");
                    break;
                }
                let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
                let pending = config.tap.request(&refs, &config.lock_key);
                pairing.waiting.push_back(pending);
                if unfollowable(&args) {
                    pairing.lose("the connection left request-reply mode");
                    break;
                }
            }
            Ok(None) => break,
            Err(()) => {
                pairing.lose("a request the tap could not parse");
                break;
            }
        }
    }
    keep_rest(
        buf,
        at,
        &mut pairing,
        "a request over the tap's frame bound",
    );
}

/// Drops the `at` bytes handled from `buf`, and everything once the
/// connection is no longer followed; the rest must fit the frame bound.
fn keep_rest(buf: &mut Vec<u8>, at: usize, pairing: &mut Pairing, over: &str) {
    buf.drain(..at.min(buf.len()));
    if buf.len() > FRAME_BYTES_MAX {
        pairing.lose(over);
    }
    if pairing.lost {
        buf.clear();
    }
}

fn replies_seen(buf: &mut Vec<u8>, bytes: &[u8], pairing: &RefCell<Pairing>) {
    let mut pairing = pairing.borrow_mut();
    if pairing.lost {
        return;
    }
    buf.extend_from_slice(bytes);
    let mut at = 0;
    // Bounded by the bytes read.
    loop {
        match scan(buf, at, 0) {
            Ok(Some((end, frame))) => {
                at = end;
                let answer = match frame {
                    Frame::Push | Frame::Attribute => continue,
                    Frame::Reply => WireAnswer::Replied,
                    Frame::Error(text) => WireAnswer::Error(text),
                };
                match pairing.waiting.pop_front() {
                    Some(Some(pending)) => pending.answered(answer),
                    Some(None) => {}
                    None => {
                        pairing.lose("a reply to no request");
                        break;
                    }
                }
            }
            Ok(None) => break,
            Err(()) => {
                pairing.lose("a reply the tap could not parse");
                break;
            }
        }
    }
    keep_rest(buf, at, &mut pairing, "a reply over the tap's frame bound");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_split_into_arguments_and_wait_for_their_end() {
        let wire = b"*3\r\n$3\r\nSET\r\n$6\r\nlock:r\r\n$2\r\nab\r\n*1\r\n$4\r\nPING\r\n";
        let (len, args) = request(wire).unwrap().unwrap();
        assert_eq!(
            args,
            vec![b"SET".to_vec(), b"lock:r".to_vec(), b"ab".to_vec()]
        );
        let (_, ping) = request(&wire[len..]).unwrap().unwrap();
        assert_eq!(ping, vec![b"PING".to_vec()]);
        for cut in 1..len {
            assert_eq!(request(&wire[..cut]).unwrap(), None, "cut at {cut}");
        }
        let (_, inline) = request(b"PING hello\r\n").unwrap().unwrap();
        assert_eq!(inline, vec![b"PING".to_vec(), b"hello".to_vec()]);
        assert!(request(b"*1\r\n:3\r\n").is_err());
    }

    #[test]
    fn replies_of_every_resp_type_are_framed_and_errors_named() {
        let cases: [(&[u8], Frame); 9] = [
            (b"+OK\r\n", Frame::Reply),
            (
                b"-NOSCRIPT No matching script\r\n",
                Frame::Error("NOSCRIPT No matching script".into()),
            ),
            (b":1\r\n", Frame::Reply),
            (b"$-1\r\n", Frame::Reply),
            (b"$3\r\nabc\r\n", Frame::Reply),
            (b"*2\r\n:1\r\n$1\r\nx\r\n", Frame::Reply),
            (b"%1\r\n+a\r\n:1\r\n", Frame::Reply),
            (b">2\r\n+a\r\n+b\r\n", Frame::Push),
            (b"!5\r\nERR x\r\n", Frame::Error("ERR x".into())),
        ];
        for (wire, frame) in cases {
            assert_eq!(scan(wire, 0, 0).unwrap(), Some((wire.len(), frame)));
            for cut in 1..wire.len() {
                assert_eq!(scan(&wire[..cut], 0, 0).unwrap(), None);
            }
        }
        assert!(scan(b"?what\r\n", 0, 0).is_err());
    }

    #[test]
    fn subscribing_and_monitoring_stop_the_pairing() {
        let args = |a: &[&str]| a.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        assert!(unfollowable(&args(&["subscribe", "x"])));
        assert!(unfollowable(&args(&["MONITOR"])));
        assert!(unfollowable(&args(&["CLIENT", "reply", "off"])));
        assert!(!unfollowable(&args(&[
            "CLIENT", "SETINFO", "LIB-NAME", "x"
        ])));
        assert!(!unfollowable(&args(&["BLPOP", "k", "1"])));
    }
}
