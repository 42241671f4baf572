//! Loopback ports for servers and proxies.
//!
//! Ports come from a fixed range below Linux's ephemeral range (32768+), so
//! an outgoing connection can never take a port between our picking it and a
//! server binding it, and a proxy never collides with a client socket. Picks
//! are random; a port is not handed out again while its cluster lives, nor
//! for a minute after ([`PORT_REST_MS`]), so no client of an old cluster
//! reaches a new server there. Remembering them for good, as before, would
//! use up the range's ~9,900 ports after about a thousand real runs of one
//! process (the agreement command over every cell, 3 seeds: about ten
//! ports a run). A bind that still fails is retried by the caller on
//! another pick, a bounded number of times.
//!
//! A picked port is also **claimed machine-wide** until its cluster is torn
//! down ([`release_port`]) and while it rests after, so that another of
//! our processes never picks it while it is free but still ours: a stopped
//! server's port before its restart, a disabled proxy's before it is
//! enabled again, a released one an old client may still reach. Without the
//! claim, two suites (or a suite and the agreement command) on one machine
//! collided there: a proxy could not be enabled again ("still
//! enabled=false") and a stopped primary's port answered for another
//! suite's server. The claim is an abstract Unix socket named after the
//! port (`redfence-port-<port>`): the kernel frees it when its process
//! ends, however it ends, so a `kill -9` leaves nothing to clean up.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::os::unix::net::UnixListener;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::{ChaosError, Result};

/// First port of the range (scripts/with-services keeps below it: its
/// servers on 5000–11999 and their cluster buses on 15000–21999).
pub const PORT_RANGE_START: u16 = 22_100;
/// One past the last port of the range (below 32768, the ephemeral start).
pub const PORT_RANGE_END: u16 = 32_000;
/// How many candidates one pick tries before giving up.
pub const PORT_PICK_ATTEMPTS_MAX: u32 = 200;

/// Every port this process handed out: `None` while its cluster lives,
/// `Some(when)` once released.
static HANDED_OUT: Mutex<BTreeMap<u16, Option<Instant>>> = Mutex::new(BTreeMap::new());
/// How long a released port rests before this process hands it out again:
/// long past the end of its cluster's runtime, so no client of the old
/// cluster can still be connecting to it when a new server listens there.
pub const PORT_REST_MS: u64 = 60_000;
/// The machine-wide claims this process holds, by port (see the module doc).
static CLAIMS: Mutex<BTreeMap<u16, UnixListener>> = Mutex::new(BTreeMap::new());
/// The claims of released ports, kept while they rest: the rest then holds
/// for every process of ours, not only this one, so another suite does not
/// start a server on a port that a client of this one's old cluster (an
/// adapter in its shutdown grace, a late task) may still reach, and write
/// lock keys into another run.
static RESTING: Mutex<BTreeMap<u16, UnixListener>> = Mutex::new(BTreeMap::new());
/// At most this many resting claims (one descriptor each); past it the
/// oldest rests in this process's books only. An agreement run releases
/// about ten ports a run, a run takes seconds: a minute's releases fit.
pub const RESTING_CLAIMS_MAX: usize = 512;

/// The name of the machine-wide claim on `port`.
fn claim_name(port: u16) -> String {
    format!("redfence-port-{port}")
}

/// Claims `port` machine-wide: `Some` with the claim, `None` when another
/// socket (another process of ours) holds it. Abstract Unix sockets live in
/// the network namespace, which every server, proxy and container of ours
/// shares (containers run on the host network).
pub fn claim(port: u16) -> Option<UnixListener> {
    use std::os::linux::net::SocketAddrExt;
    let name = claim_name(port);
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).ok()?;
    UnixListener::bind_addr(&addr).ok()
}

/// Gives up `port` (a no-op for a port this process did not pick): its
/// cluster is gone, so the claim goes and a later pick may hand it out
/// again.
pub fn release_port(port: u16) {
    // The same lock order as `pick_from`: handed out, then claims.
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    let mut claims = CLAIMS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(claimed) = claims.remove(&port) {
        handed_out.insert(port, Some(Instant::now()));
        let mut resting = RESTING.lock().unwrap_or_else(|e| e.into_inner());
        end_rests(&handed_out, &mut resting);
        if resting.len() >= RESTING_CLAIMS_MAX {
            // The one released longest ago (bounded: at most the map).
            let oldest = resting
                .keys()
                .copied()
                .min_by_key(|p| handed_out.get(p).copied().flatten());
            if let Some(oldest) = oldest {
                resting.remove(&oldest);
            }
        }
        resting.insert(port, claimed);
        debug_assert!(resting.len() <= RESTING_CLAIMS_MAX);
    }
}

/// Whether a port released at `released` is still resting.
fn rests(released: &Option<Instant>) -> bool {
    released.is_none_or(|at| at.elapsed() < Duration::from_millis(PORT_REST_MS))
}

/// Lets go of the claims of released ports whose rest is over (or that
/// this process's books no longer hold), so any process may pick them.
fn end_rests(
    handed_out: &BTreeMap<u16, Option<Instant>>,
    resting: &mut BTreeMap<u16, UnixListener>,
) {
    resting.retain(|port, _| {
        handed_out
            .get(port)
            .is_some_and(|released| released.is_some() && rests(released))
    });
}

/// Whether this process holds a claim on `port`.
pub fn is_claimed_here(port: u16) -> bool {
    let claims = CLAIMS.lock().unwrap_or_else(|e| e.into_inner());
    claims.contains_key(&port)
}

/// The loopback address every server and proxy of ours binds.
pub const LOOPBACK: Ipv4Addr = Ipv4Addr::LOCALHOST;

/// A free loopback port that no live cluster of this process holds and no
/// other process of ours claims.
///
/// Free means a bind succeeded just now; the caller binds it next (or, for a
/// server process, starts it and retries with a new pick if it fails).
pub fn pick_port() -> Result<u16> {
    let span = u32::from(PORT_RANGE_END - PORT_RANGE_START);
    // uuid's v4 is the randomness source we already depend on.
    let candidates = (0..PORT_PICK_ATTEMPTS_MAX).map(|_| {
        let random = uuid::Uuid::new_v4().as_u128() as u32;
        PORT_RANGE_START + (random % span) as u16
    });
    pick_from(candidates)
}

/// The first of `candidates` that this process does not hold (or released
/// and has let rest), that no other process of ours claims, and that is
/// free: handed out and claimed.
fn pick_from(candidates: impl Iterator<Item = u16>) -> Result<u16> {
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    end_rests(
        &handed_out,
        &mut RESTING.lock().unwrap_or_else(|e| e.into_inner()),
    );
    // Bounded by the candidates (PORT_PICK_ATTEMPTS_MAX from pick_port).
    for port in candidates {
        if handed_out.get(&port).is_some_and(rests) {
            continue;
        }
        // Another process of ours holds it (free now, but still theirs).
        let Some(claimed) = claim(port) else {
            continue;
        };
        if TcpListener::bind(SocketAddr::from((LOOPBACK, port))).is_ok() {
            handed_out.insert(port, None);
            let mut claims = CLAIMS.lock().unwrap_or_else(|e| e.into_inner());
            claims.insert(port, claimed);
            return Ok(port);
        }
        // Taken by something that is not ours: the claim goes with the pick.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A picked port is claimed machine-wide until released: a claim made
    /// meanwhile elsewhere (here by a second socket, which is what another
    /// process's claim is: abstract names are shared by every process in
    /// the network namespace) fails, and succeeds once it is released.
    #[test]
    fn a_picked_port_is_claimed_until_released() {
        let port = pick_port().expect("a port");
        assert!(is_claimed_here(port));
        assert!(
            claim(port).is_none(),
            "another process could claim port {port} while it is ours"
        );
        release_port(port);
        assert!(!is_claimed_here(port));
        // While it rests, neither this process nor another hands it out
        // (a client of the old cluster may still reach it)...
        assert!(
            claim(port).is_none(),
            "another process could take port {port} while it rests"
        );
        assert!(pick_from([port].into_iter()).is_err());
        // ...and once it has rested, both may (a long run reuses the ports
        // of clusters it is done with).
        let long_ago = Instant::now()
            .checked_sub(Duration::from_millis(PORT_REST_MS + 1))
            .expect("a minute after boot");
        HANDED_OUT
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(port, Some(long_ago));
        end_rests(
            &HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner()),
            &mut RESTING.lock().unwrap_or_else(|e| e.into_inner()),
        );
        let other = claim(port).expect("claimable once rested");
        drop(other);
        assert_eq!(pick_from([port].into_iter()).expect("a port"), port);
        release_port(port);
    }

    /// Resting claims are bounded: past the bound the oldest goes.
    #[test]
    fn resting_claims_are_bounded() {
        let mut released = Vec::new();
        for _ in 0..RESTING_CLAIMS_MAX + 8 {
            let port = pick_port().expect("a port");
            release_port(port);
            released.push(port);
        }
        let resting = RESTING.lock().unwrap_or_else(|e| e.into_inner());
        assert!(resting.len() <= RESTING_CLAIMS_MAX, "{}", resting.len());
        assert!(
            resting.contains_key(released.last().unwrap()),
            "the newest rests"
        );
    }

    /// A port handed out and still held is never picked again by this
    /// process: two live clusters never share one.
    #[test]
    fn a_held_port_is_not_picked_twice() {
        let port = pick_port().expect("a port");
        // Without its claim too (so the books alone must refuse it): a
        // port whose claim failed to register is still not handed out
        // twice.
        let claim_here = CLAIMS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&port)
            .expect("claimed by the pick");
        drop(claim_here);
        assert!(pick_from([port].into_iter()).is_err());
        HANDED_OUT
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&port);
    }

    /// A port another process of ours holds is skipped, though it is free:
    /// the pick takes the next candidate.
    #[test]
    fn a_port_claimed_elsewhere_is_never_picked() {
        let first = pick_port().expect("a port");
        let second = pick_port().expect("a port");
        // Two free ports, unclaimed, rested: free them from this process's
        // books, then let "another process" (a socket of ours: the same
        // abstract name) claim the first.
        for port in [first, second] {
            release_port(port);
            HANDED_OUT
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&port);
        }
        end_rests(
            &HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner()),
            &mut RESTING.lock().unwrap_or_else(|e| e.into_inner()),
        );
        let elsewhere = claim(first).expect("claimable");
        assert_eq!(
            pick_from([first, second].into_iter()).expect("a port"),
            second
        );
        // Once the other process lets go, the port can be picked again.
        drop(elsewhere);
        assert_eq!(pick_from([first].into_iter()).expect("a port"), first);
        release_port(first);
        release_port(second);
    }
}
