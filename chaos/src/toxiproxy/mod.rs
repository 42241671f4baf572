//! An embedded, Toxiproxy-compatible server: noxious's proxy core behind
//! Toxiproxy's REST API, listening on loopback only.
//!
//! No Toxiproxy binary or image can be had on machines without a registry,
//! and noxious publishes only its proxy core, so the REST layer is ours
//! ([`http`]) and so is the collection of proxies ([`registry`]). Any
//! Toxiproxy client (here `toxiproxy_rust`) drives it unchanged; the contract
//! test (`tests/toxiproxy_contract.rs`) holds it to Toxiproxy's documented
//! JSON. Toxics: latency, bandwidth, slow_close, timeout, slicer, limit_data,
//! noop; `reset_peer` is refused (noxious lacks it).
//!
//! The server runs on its own small runtime, so proxies keep forwarding
//! whatever the caller's runtime is doing (a scenario may hold its own
//! thread still to pause a worker).

pub mod http;
pub mod model;
pub mod registry;

use std::net::SocketAddr;
use std::sync::Arc;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::sync::{oneshot, Mutex};

use crate::error::{ChaosError, Result};
use crate::ports::loopback;
use registry::Registry;

/// Worker threads of the server's runtime: proxies move little data, but a
/// latency toxic's timers must fire while another connection is busy.
const RUNTIME_THREADS: usize = 2;
/// Connections the API serves at once; more wait in the accept queue.
const API_CONNECTIONS_MAX: usize = 64;

/// A running embedded Toxiproxy server. Dropping it stops every proxy.
pub struct EmbeddedToxiproxy {
    addr: SocketAddr,
    runtime: Option<tokio::runtime::Runtime>,
    shutdown: Option<oneshot::Sender<()>>,
}

impl std::fmt::Debug for EmbeddedToxiproxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedToxiproxy")
            .field("addr", &self.addr)
            .finish()
    }
}

impl EmbeddedToxiproxy {
    /// Starts the server on a free loopback port (see [`Self::addr`]).
    pub fn start() -> Result<Self> {
        Self::start_on(0)
    }

    /// Starts the server on `127.0.0.1:port` (Toxiproxy's own is 8474).
    /// Works from synchronous code and from inside any tokio runtime.
    pub fn start_on(port: u16) -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(RUNTIME_THREADS)
            .thread_name("embedded-toxiproxy")
            .enable_all()
            .build()
            .map_err(|e| ChaosError::io("starting the embedded toxiproxy runtime", e))?;
        let listener = std::net::TcpListener::bind(loopback(port))
            .map_err(|e| ChaosError::io(format!("binding the toxiproxy API on port {port}"), e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| ChaosError::io("reading the toxiproxy API address", e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| ChaosError::io("toxiproxy API listener", e))?;
        let listener = {
            let _context = runtime.enter();
            tokio::net::TcpListener::from_std(listener)
                .map_err(|e| ChaosError::io("toxiproxy API listener", e))?
        };
        let (shutdown, shutdown_rx) = oneshot::channel();
        runtime.spawn(serve(listener, shutdown_rx));
        Ok(Self {
            addr,
            runtime: Some(runtime),
            shutdown: Some(shutdown),
        })
    }

    /// The API's address, for `toxiproxy_rust::client::Client::new`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for EmbeddedToxiproxy {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        // Not a blocking shutdown: drop may run inside the caller's runtime,
        // where blocking is forbidden. Dropping the tasks closes every
        // listener and connection they own.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Accepts API connections until shutdown; then stops every proxy.
async fn serve(listener: tokio::net::TcpListener, mut shutdown: oneshot::Receiver<()>) {
    let registry = Arc::new(Mutex::new(Registry::default()));
    let slots = Arc::new(tokio::sync::Semaphore::new(API_CONNECTIONS_MAX));
    loop {
        let accepted = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _peer)) = accepted else {
            continue;
        };
        let Ok(slot) = slots.clone().acquire_owned().await else {
            break;
        };
        let registry = registry.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| http::handle(request, registry.clone()));
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
            drop(slot);
        });
    }
    registry.lock().await.stop_all().await;
}
