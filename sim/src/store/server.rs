//! The store server: accepts connections on the store host and answers
//! requests against the shared [`StoreState`].
//!
//! A request executes the moment its frame is decoded, before the reply is
//! written: if the network then loses the reply, the effect stays — exactly
//! the "committed, but the client never heard" case fencing and idempotency
//! keys exist for. Each connection is served by its own local task, one
//! request at a time, in arrival order.
//!
//! Connections the network abandons (a client that gave up behind a
//! partition never gets its close through) would otherwise live forever, so
//! the server bounds both their number and their idle time.

use std::cell::Cell;
use std::net::Ipv4Addr;
use std::rc::Rc;
use std::time::Duration;

use turmoil::net::{TcpListener, TcpStream};

use super::frame::{read_frame, write_frame, FRAME_BODY_LEN_MAX};
use super::protocol::{decode_request, encode_reply, peek_request_id, Reply, REQUEST_ID_UNKNOWN};
use super::state::StoreState;
use super::STORE_PORT;

/// Most connections served at once; more are closed on accept. Far above any
/// world's worker count, it only bounds the pile-up of abandoned connections.
pub const CONNECTIONS_MAX: usize = 1_024;

/// A connection with no request for this long is closed. The client stops
/// reusing a connection well before this (`CONNECTION_REUSE_IDLE_MS_MAX`, plus
/// the world's largest link latency and op timeout), so a live client is never
/// cut off mid-request; abandoned connections go within two simulated minutes.
pub const CONNECTION_IDLE_MS_MAX: u64 = 120_000;

/// How long writing one reply may take before the connection is given up;
/// a reply only blocks when the peer stopped reading.
pub const REPLY_WRITE_MS_MAX: u64 = 60_000;

/// Serves forever on `0.0.0.0:STORE_PORT` of the current turmoil host; call it
/// inside `sim.host("store", || serve(state.clone()))`. Returns only if the
/// listener fails. A host restart drops the connections and any request not
/// yet executed; `state` is untouched.
pub async fn serve(state: StoreState) -> turmoil::Result {
    let listener = TcpListener::bind((Ipv4Addr::UNSPECIFIED, STORE_PORT)).await?;
    let connections_live = Rc::new(Cell::new(0usize));
    // A server loop: it ends with the host, not by a bound of its own.
    loop {
        let (stream, peer) = listener.accept().await?;
        if connections_live.get() >= CONNECTIONS_MAX {
            tracing::warn!(%peer, CONNECTIONS_MAX, "store refused a connection: too many open");
            drop(stream);
            continue;
        }
        connections_live.set(connections_live.get() + 1);
        let live = ConnectionSlot(connections_live.clone());
        let state = state.clone();
        tokio::task::spawn_local(async move {
            let _live = live;
            serve_connection(stream, &state).await;
        });
    }
}

/// Releases a connection's place in the count when its task ends, however it ends.
struct ConnectionSlot(Rc<Cell<usize>>);

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let live = self.0.get();
        assert!(live > 0, "connection count underflow");
        self.0.set(live - 1);
    }
}

/// The simulated time now, in ms since the start of the simulation.
fn now_ms() -> i64 {
    let elapsed = turmoil::sim_elapsed().expect("the store runs on a turmoil host");
    i64::try_from(elapsed.as_millis()).expect("simulated time fits in i64 ms")
}

/// Serves one connection until the peer closes it, it idles out, or it breaks.
async fn serve_connection(mut stream: TcpStream, state: &StoreState) {
    // Bounded by the idle timeout: every iteration either gets a request
    // within CONNECTION_IDLE_MS_MAX or ends the loop.
    loop {
        let idle_max = Duration::from_millis(CONNECTION_IDLE_MS_MAX);
        let body = match tokio::time::timeout(idle_max, read_frame(&mut stream)).await {
            Ok(Ok(Some(body))) => body,
            // Closed between frames, broken, oversized, or idle: done with it.
            Ok(Ok(None)) | Ok(Err(_)) | Err(_) => return,
        };
        assert!(body.len() <= FRAME_BODY_LEN_MAX);
        let (id, reply, keep_open) = match decode_request(&body) {
            Ok((id, request)) => {
                let reply = state.execute(&request, now_ms());
                (id, reply, true)
            }
            // Framing was intact but the content is not ours: say why, then
            // close, since a peer that sends this cannot be trusted to stay in sync.
            Err(e) => {
                let id = peek_request_id(&body).unwrap_or(REQUEST_ID_UNKNOWN);
                (id, Reply::Error(format!("malformed request: {e}")), false)
            }
        };
        let mut reply_body = encode_reply(id, &reply);
        if reply_body.len() > FRAME_BODY_LEN_MAX {
            // Only a fence log can grow this large; refuse it in a frame that fits.
            let message = format!(
                "reply of {} bytes exceeds the {FRAME_BODY_LEN_MAX}-byte frame bound",
                reply_body.len()
            );
            reply_body = encode_reply(id, &Reply::Error(message));
        }
        let write_max = Duration::from_millis(REPLY_WRITE_MS_MAX);
        match tokio::time::timeout(write_max, write_frame(&mut stream, &reply_body)).await {
            Ok(Ok(())) if keep_open => {}
            _ => return,
        }
    }
}
