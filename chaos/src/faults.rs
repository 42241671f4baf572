//! Faults through the Toxiproxy HTTP API, with the `toxiproxy_rust` client.
//!
//! `toxiproxy_rust` is blocking (reqwest's blocking client, which owns a
//! runtime of its own and panics if created or dropped on an async thread),
//! so every call runs on tokio's blocking pool, with a fresh client made and
//! dropped there. It also never looks at HTTP status codes, so each change is
//! read back and checked: a fault that did not take effect is an error, not
//! a silent no-op. Two operations it lacks — re-pointing a proxy's upstream
//! and removing one toxic by name — go through reqwest directly, to the same
//! API.

use std::net::SocketAddr;
use std::time::Duration;

use toxiproxy_rust::client::Client;
use toxiproxy_rust::proxy::ProxyPack;

use crate::error::{ChaosError, Result};

/// Per-request timeout of the direct (reqwest) calls.
const API_REQUEST_TIMEOUT_MS: u64 = 10_000;

/// A toxic to add, with its stream and attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToxicSpec {
    /// Delay every chunk by `latency_ms` (± `jitter_ms`).
    Latency {
        /// Direction.
        stream: Stream,
        /// Added delay.
        latency_ms: u32,
        /// Random variation.
        jitter_ms: u32,
    },
    /// Let nothing through; close after `timeout_ms` (0: never close).
    Timeout {
        /// Direction.
        stream: Stream,
        /// When to close the connection (0: keep it open, data dropped).
        timeout_ms: u32,
    },
    /// Close the connection after `bytes` bytes.
    LimitData {
        /// Direction.
        stream: Stream,
        /// Bytes that pass.
        bytes: u32,
    },
    /// At most `rate_kb_per_s`.
    Bandwidth {
        /// Direction.
        stream: Stream,
        /// KB/s.
        rate_kb_per_s: u32,
    },
}

/// A direction through a proxy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Client → server (requests).
    Upstream,
    /// Server → client (replies).
    Downstream,
}

impl Stream {
    /// Toxiproxy's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Upstream => "upstream",
            Self::Downstream => "downstream",
        }
    }
}

impl ToxicSpec {
    /// The name `toxiproxy_rust` gives the toxic (`<type>_<stream>`).
    pub fn toxic_name(&self) -> String {
        let (kind, stream) = match self {
            Self::Latency { stream, .. } => ("latency", stream),
            Self::Timeout { stream, .. } => ("timeout", stream),
            Self::LimitData { stream, .. } => ("limit_data", stream),
            Self::Bandwidth { stream, .. } => ("bandwidth", stream),
        };
        format!("{kind}_{}", stream.name())
    }
}

/// A proxy as the API reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProxyState {
    /// Name.
    pub name: String,
    /// Listen address (the real port).
    pub listen: String,
    /// Upstream address.
    pub upstream: String,
    /// Up or down.
    pub enabled: bool,
    /// Names of the active toxics.
    pub toxics: Vec<String>,
}

impl From<ProxyPack> for ProxyState {
    fn from(pack: ProxyPack) -> Self {
        Self {
            name: pack.name,
            listen: pack.listen,
            upstream: pack.upstream,
            enabled: pack.enabled,
            toxics: pack.toxics.into_iter().map(|t| t.name).collect(),
        }
    }
}

/// An async handle on a Toxiproxy API (embedded or real).
#[derive(Clone, Debug)]
pub struct Toxiproxy {
    addr: SocketAddr,
}

impl Toxiproxy {
    /// A handle on the API at `addr`.
    pub fn new(addr: SocketAddr) -> Self {
        Self { addr }
    }

    /// The API's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Runs `f` with a `toxiproxy_rust` client, off the async threads.
    async fn with_client<T, F>(&self, operation: String, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Client) -> Result<T, String> + Send + 'static,
    {
        let addr = self.addr;
        let what = operation.clone();
        tokio::task::spawn_blocking(move || f(&Client::new(addr)))
            .await
            // toxiproxy_rust panics (rather than returning) when a toxic
            // cannot be posted; the blocking pool turns that into a JoinError.
            .map_err(|e| ChaosError::toxiproxy(what, format!("client panicked: {e}")))?
            .map_err(|message| ChaosError::toxiproxy(operation, message))
    }

    /// Runs a direct HTTP request, for what `toxiproxy_rust` cannot do.
    async fn direct(
        &self,
        operation: String,
        method: reqwest_blocking::Method,
        path: String,
        body: Option<serde_json::Value>,
    ) -> Result<(u16, String)> {
        let url = format!("http://{}/{path}", self.addr);
        let what = operation.clone();
        tokio::task::spawn_blocking(move || {
            let client = reqwest_blocking::blocking::Client::builder()
                .timeout(Duration::from_millis(API_REQUEST_TIMEOUT_MS))
                .build()
                .map_err(|e| e.to_string())?;
            let mut request = client.request(method, url);
            if let Some(body) = body {
                request = request.json(&body);
            }
            let response = request.send().map_err(|e| e.to_string())?;
            let status = response.status().as_u16();
            let text = response.text().map_err(|e| e.to_string())?;
            Ok::<_, String>((status, text))
        })
        .await
        .map_err(|e| ChaosError::toxiproxy(what, format!("request task failed: {e}")))?
        .map_err(|message| ChaosError::toxiproxy(operation, message))
    }

    /// Whether the API answers (`GET /version`).
    pub async fn version(&self) -> Result<String> {
        self.with_client("version".into(), |c| c.version()).await
    }

    /// Creates (or keeps, if identical) a proxy through `POST /populate`;
    /// `listen` may use port 0. Returns it as the server reports it.
    pub async fn create_proxy(
        &self,
        name: &str,
        listen: &str,
        upstream: &str,
    ) -> Result<ProxyState> {
        let pack = ProxyPack::new(name.to_owned(), listen.to_owned(), upstream.to_owned());
        let wanted = name.to_owned();
        let proxies = self
            .with_client(format!("create proxy {name}"), move |c| {
                c.populate(vec![pack])
            })
            .await?;
        proxies
            .into_iter()
            .find(|p| p.proxy_pack.name == wanted)
            .map(|p| ProxyState::from(p.proxy_pack))
            .ok_or_else(|| {
                ChaosError::toxiproxy(format!("create proxy {name}"), "not in the reply")
            })
    }

    /// A proxy's current state.
    pub async fn proxy(&self, name: &str) -> Result<ProxyState> {
        let wanted = name.to_owned();
        self.with_client(format!("get proxy {name}"), move |c| {
            c.find_proxy(&wanted).map(|p| p.proxy_pack.into())
        })
        .await
    }

    /// Takes a proxy down (`enabled: false`: listener and connections
    /// closed) or brings it back, and checks that it happened.
    pub async fn set_enabled(&self, name: &str, enabled: bool) -> Result<()> {
        let wanted = name.to_owned();
        let state = self
            .with_client(format!("enable={enabled} {name}"), move |c| {
                let proxy = c.find_proxy(&wanted)?;
                if enabled {
                    proxy.enable()?;
                } else {
                    proxy.disable()?;
                }
                c.find_proxy(&wanted)
                    .map(|p| ProxyState::from(p.proxy_pack))
            })
            .await?;
        self.expect(name, state.enabled == enabled, || {
            format!("still enabled={}", state.enabled)
        })
    }

    /// Adds a toxic and checks it is active.
    pub async fn add_toxic(&self, name: &str, toxic: ToxicSpec) -> Result<()> {
        let wanted = name.to_owned();
        let toxic_name = toxic.toxic_name();
        let toxics = self
            .with_client(format!("add {toxic_name} to {name}"), move |c| {
                let proxy = c.find_proxy(&wanted)?;
                match toxic {
                    ToxicSpec::Latency {
                        stream,
                        latency_ms,
                        jitter_ms,
                    } => proxy.with_latency(stream.name().into(), latency_ms, jitter_ms, 1.0),
                    ToxicSpec::Timeout { stream, timeout_ms } => {
                        proxy.with_timeout(stream.name().into(), timeout_ms, 1.0)
                    }
                    ToxicSpec::LimitData { stream, bytes } => {
                        proxy.with_limit_data(stream.name().into(), bytes, 1.0)
                    }
                    ToxicSpec::Bandwidth {
                        stream,
                        rate_kb_per_s,
                    } => proxy.with_bandwidth(stream.name().into(), rate_kb_per_s, 1.0),
                };
                proxy.toxics()
            })
            .await?;
        let toxic_name = toxic.toxic_name();
        self.expect(name, toxics.iter().any(|t| t.name == toxic_name), || {
            format!("{toxic_name} not active after adding it")
        })
    }

    /// Removes one toxic by name (`DELETE /proxies/{name}/toxics/{toxic}`);
    /// a toxic that is not there is fine.
    pub async fn remove_toxic(&self, name: &str, toxic: &str) -> Result<()> {
        let (status, text) = self
            .direct(
                format!("remove {toxic} from {name}"),
                reqwest_blocking::Method::DELETE,
                format!("proxies/{name}/toxics/{toxic}"),
                None,
            )
            .await?;
        if status == 204 || (status == 404 && text.contains("toxic not found")) {
            Ok(())
        } else {
            Err(ChaosError::toxiproxy(
                format!("remove {toxic} from {name}"),
                format!("HTTP {status}: {text}"),
            ))
        }
    }

    /// Removes every toxic of a proxy.
    pub async fn clear_toxics(&self, name: &str) -> Result<()> {
        let wanted = name.to_owned();
        let left = self
            .with_client(format!("clear toxics of {name}"), move |c| {
                let proxy = c.find_proxy(&wanted)?;
                proxy.delete_all_toxics()?;
                proxy.toxics()
            })
            .await?;
        self.expect(name, left.is_empty(), || {
            format!("{} toxics left", left.len())
        })
    }

    /// Points a proxy at a new upstream (`POST /proxies/{name}`); the proxy
    /// restarts, so live connections through it are dropped.
    pub async fn set_upstream(&self, name: &str, upstream: &str) -> Result<()> {
        let operation = format!("re-point {name} to {upstream}");
        let (status, text) = self
            .direct(
                operation.clone(),
                reqwest_blocking::Method::POST,
                format!("proxies/{name}"),
                Some(serde_json::json!({ "upstream": upstream })),
            )
            .await?;
        if status != 200 {
            return Err(ChaosError::toxiproxy(
                operation,
                format!("HTTP {status}: {text}"),
            ));
        }
        let state = self.proxy(name).await?;
        self.expect(name, state.upstream == upstream, || {
            format!("upstream is still {}", state.upstream)
        })
    }

    /// `POST /reset`: every proxy up, every toxic gone.
    pub async fn reset(&self) -> Result<()> {
        self.with_client("reset".into(), |c| c.reset()).await
    }

    fn expect(&self, name: &str, ok: bool, why: impl FnOnce() -> String) -> Result<()> {
        if ok {
            Ok(())
        } else {
            Err(ChaosError::toxiproxy(format!("proxy {name}"), why()))
        }
    }
}
