//! Loopback ports for servers and proxies.
//!
//! Ports come from a fixed range below Linux's ephemeral range (32768+), so
//! an outgoing connection can never take a port between our picking it and a
//! server binding it, and a proxy never collides with a client socket. Picks
//! are random (two concurrent runs rarely try the same port) and remembered
//! for the life of the process (two clusters in one test binary never get the
//! same port); a bind that still fails is retried by the caller on another
//! pick, a bounded number of times.

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::sync::Mutex;

use crate::error::{ChaosError, Result};

/// First port of the range (scripts/with-services uses 15000–22000 and
/// 25000–32000 for cluster buses, but only while its servers start).
pub const PORT_RANGE_START: u16 = 22_100;
/// One past the last port of the range (below 32768, the ephemeral start).
pub const PORT_RANGE_END: u16 = 32_000;
/// How many candidates one pick tries before giving up.
pub const PORT_PICK_ATTEMPTS_MAX: u32 = 200;

static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// The loopback address every server and proxy of ours binds.
pub const LOOPBACK: Ipv4Addr = Ipv4Addr::LOCALHOST;

/// A free loopback port, not handed out before in this process.
///
/// Free means a bind succeeded just now; the caller binds it next (or, for a
/// server process, starts it and retries with a new pick if it fails).
pub fn pick_port() -> Result<u16> {
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    let span = u32::from(PORT_RANGE_END - PORT_RANGE_START);
    for _ in 0..PORT_PICK_ATTEMPTS_MAX {
        // uuid's v4 is the randomness source we already depend on.
        let random = uuid::Uuid::new_v4().as_u128() as u32;
        let port = PORT_RANGE_START + (random % span) as u16;
        if handed_out.contains(&port) {
            continue;
        }
        if TcpListener::bind(SocketAddr::from((LOOPBACK, port))).is_ok() {
            handed_out.insert(port);
            return Ok(port);
        }
    }
    Err(ChaosError::io(
        format!("no free loopback port in {PORT_RANGE_START}..{PORT_RANGE_END}"),
        std::io::Error::from(std::io::ErrorKind::AddrInUse),
    ))
}

/// `127.0.0.1:port`.
pub fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from((LOOPBACK, port))
}
