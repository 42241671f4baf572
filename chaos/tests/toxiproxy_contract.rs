//! The embedded Toxiproxy server against Toxiproxy's documented API.
//!
//! Two halves: the raw JSON of every endpoint, checked field by field
//! against the shapes and status codes Toxiproxy documents (README, "HTTP
//! API"; its API server's handlers); and the `toxiproxy_rust` client driving
//! the server end to end over a real TCP echo server: a latency toxic slows
//! round trips by what it says, a disabled proxy refuses and closes
//! connections, reset and re-pointing work. One documented difference is
//! asserted too: a toxic change closes the proxy's live connections. No async here: the server runs
//! on its own runtime and the client is blocking, as a Toxiproxy user's
//! tests would be.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use redfence_chaos::toxiproxy::EmbeddedToxiproxy;
use reqwest_blocking::blocking::Client as Http;
use serde_json::{json, Value};
use toxiproxy_rust::client::Client;
use toxiproxy_rust::proxy::ProxyPack;

/// Connections one echo server answers before its thread ends.
const ECHO_CONNECTIONS_MAX: usize = 64;
/// Socket timeout of the test's own reads, so a broken proxy fails the test
/// instead of hanging it.
const READ_TIMEOUT_MS: u64 = 5_000;

/// A TCP echo server on loopback: every connection gets its bytes back.
fn echo_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind echo");
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for stream in listener.incoming().take(ECHO_CONNECTIONS_MAX) {
            let Ok(mut stream) = stream else { continue };
            thread::spawn(move || {
                let mut buf = [0u8; 4096];
                loop {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            if stream.write_all(&buf[..n]).is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    addr
}

fn connect(addr: &str) -> std::io::Result<TcpStream> {
    let stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_millis(READ_TIMEOUT_MS)))?;
    Ok(stream)
}

/// One echo round trip; returns how long it took.
fn round_trip(stream: &mut TcpStream) -> Duration {
    let started = Instant::now();
    stream.write_all(b"ping").expect("write");
    let mut buf = [0u8; 4];
    stream.read_exact(&mut buf).expect("echo reply");
    assert_eq!(&buf, b"ping");
    started.elapsed()
}

/// One round trip, or `None` if the connection was closed.
fn catch_round_trip(stream: &mut TcpStream) -> Option<Duration> {
    let started = Instant::now();
    stream.write_all(b"ping").ok()?;
    let mut buf = [0u8; 4];
    stream.read_exact(&mut buf).ok()?;
    Some(started.elapsed())
}

/// The median of `n` round trips, robust to one slow scheduling hiccup.
fn median_round_trip(stream: &mut TcpStream, n: usize) -> Duration {
    let mut times: Vec<Duration> = (0..n).map(|_| round_trip(stream)).collect();
    times.sort();
    times[n / 2]
}

struct Api {
    http: Http,
    base: String,
}

impl Api {
    fn new(server: &EmbeddedToxiproxy) -> Self {
        Self {
            http: Http::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .unwrap(),
            base: format!("http://{}", server.addr()),
        }
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let method = reqwest_blocking::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().expect("API answers");
        let status = response.status().as_u16();
        let text = response.text().unwrap();
        let value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: not JSON ({e}): {text}"))
        };
        (status, value)
    }
}

/// The keys of a JSON object, sorted.
fn keys(value: &Value) -> Vec<String> {
    let mut keys: Vec<String> = value
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {value}"))
        .keys()
        .cloned()
        .collect();
    keys.sort();
    keys
}

const PROXY_KEYS: [&str; 5] = ["enabled", "listen", "name", "toxics", "upstream"];
const TOXIC_KEYS: [&str; 5] = ["attributes", "name", "stream", "toxicity", "type"];

#[test]
fn every_endpoint_speaks_toxiproxy_json() {
    let server = EmbeddedToxiproxy::start().expect("server starts");
    let api = Api::new(&server);
    let echo = echo_server();

    // GET /version: {"version": "..."}
    let (status, version) = api.call("GET", "/version", None);
    assert_eq!(status, 200);
    assert_eq!(keys(&version), ["version"]);
    assert!(version["version"].is_string());

    // POST /proxies: 201 and the proxy; listen port 0 becomes the real one.
    let create = json!({"name": "echo", "listen": "127.0.0.1:0", "upstream": echo.to_string()});
    let (status, proxy) = api.call("POST", "/proxies", Some(create.clone()));
    assert_eq!(status, 201, "{proxy}");
    assert_eq!(keys(&proxy), PROXY_KEYS);
    assert_eq!(proxy["name"], "echo");
    assert_eq!(proxy["upstream"], echo.to_string());
    assert_eq!(proxy["enabled"], true);
    assert_eq!(proxy["toxics"], json!([]));
    let listen = proxy["listen"].as_str().unwrap().to_owned();
    assert!(!listen.ends_with(":0"), "real port reported: {listen}");

    // Errors: {"error", "status"} with Toxiproxy's codes and messages.
    let (status, err) = api.call("POST", "/proxies", Some(create));
    assert_eq!(
        (status, err.clone()),
        (409, json!({"error": "proxy already exists", "status": 409}))
    );
    let (status, err) = api.call("GET", "/proxies/nope", None);
    assert_eq!(
        (status, err),
        (404, json!({"error": "proxy not found", "status": 404}))
    );
    let (status, err) = api.call("POST", "/proxies", Some(json!({"name": "x"})));
    assert_eq!(status, 400);
    assert_eq!(err["error"], "missing required field: upstream");
    let (status, _) = api.call(
        "POST",
        "/proxies",
        Some(json!({"name": "wide", "listen": "0.0.0.0:0", "upstream": echo.to_string()})),
    );
    assert_eq!(status, 400, "only loopback listen addresses");

    // GET /proxies: an object keyed by name.
    let (status, all) = api.call("GET", "/proxies", None);
    assert_eq!(status, 200);
    assert_eq!(keys(&all), ["echo"]);
    assert_eq!(keys(&all["echo"]), PROXY_KEYS);

    // POST /proxies/{p}/toxics: 200 and the toxic with defaults filled in.
    let (status, toxic) = api.call(
        "POST",
        "/proxies/echo/toxics",
        Some(json!({"type": "latency", "attributes": {"latency": 30}})),
    );
    assert_eq!(status, 200, "{toxic}");
    assert_eq!(keys(&toxic), TOXIC_KEYS);
    assert_eq!(
        toxic,
        json!({"name": "latency_downstream", "type": "latency", "stream": "downstream",
               "toxicity": 1.0, "attributes": {"latency": 30, "jitter": 0}})
    );
    let (status, err) = api.call(
        "POST",
        "/proxies/echo/toxics",
        Some(json!({"type": "latency", "attributes": {"latency": 30}})),
    );
    assert_eq!(
        (status, err["error"].clone()),
        (409, json!("toxic already exists"))
    );
    let (status, err) = api.call(
        "POST",
        "/proxies/echo/toxics",
        Some(json!({"type": "latency", "stream": "both"})),
    );
    assert_eq!(status, 400);
    assert_eq!(
        err["error"],
        "stream was invalid, can be either upstream or downstream"
    );
    let (status, err) = api.call(
        "POST",
        "/proxies/echo/toxics",
        Some(json!({"type": "reset_peer"})),
    );
    assert_eq!(status, 400, "reset_peer is refused, loudly: {err}");

    // Every supported type round-trips with its documented attributes.
    for (kind, attributes) in [
        ("timeout", json!({"timeout": 0})),
        ("bandwidth", json!({"rate": 100})),
        ("slow_close", json!({"delay": 10})),
        (
            "slicer",
            json!({"average_size": 64, "size_variation": 8, "delay": 10}),
        ),
        ("limit_data", json!({"bytes": 1024})),
    ] {
        let body = json!({"name": kind, "type": kind, "stream": "upstream",
                          "toxicity": 0.5, "attributes": attributes});
        let (status, toxic) = api.call("POST", "/proxies/echo/toxics", Some(body.clone()));
        assert_eq!((status, toxic), (200, body));
    }

    // GET list and one; update; delete.
    let (status, list) = api.call("GET", "/proxies/echo/toxics", None);
    assert_eq!(status, 200);
    assert_eq!(list.as_array().unwrap().len(), 6);
    let (status, one) = api.call("GET", "/proxies/echo/toxics/latency_downstream", None);
    assert_eq!(
        (status, one["attributes"]["latency"].clone()),
        (200, json!(30))
    );
    let (status, updated) = api.call(
        "POST",
        "/proxies/echo/toxics/latency_downstream",
        Some(json!({"attributes": {"latency": 40}})),
    );
    assert_eq!(status, 200);
    assert_eq!(updated["attributes"], json!({"latency": 40, "jitter": 0}));
    for name in ["timeout", "bandwidth", "slow_close", "slicer", "limit_data"] {
        let (status, body) = api.call("DELETE", &format!("/proxies/echo/toxics/{name}"), None);
        assert_eq!((status, body), (204, Value::Null));
    }
    let (status, err) = api.call("GET", "/proxies/echo/toxics/timeout", None);
    assert_eq!(
        (status, err),
        (404, json!({"error": "toxic not found", "status": 404}))
    );

    // POST /proxies/{p}: enabled false takes it down (toxics kept).
    let (status, down) = api.call("POST", "/proxies/echo", Some(json!({"enabled": false})));
    assert_eq!((status, down["enabled"].clone()), (200, json!(false)));
    assert_eq!(down["toxics"].as_array().unwrap().len(), 1);
    let refused = connect(&listen).map(|_| ()).unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::ConnectionRefused);

    // POST /reset: every proxy up again, no toxics, 204.
    let (status, body) = api.call("POST", "/reset", None);
    assert_eq!((status, body), (204, Value::Null));
    let (_, proxy) = api.call("GET", "/proxies/echo", None);
    assert_eq!(
        (proxy["enabled"].clone(), proxy["toxics"].clone()),
        (json!(true), json!([]))
    );
    assert_eq!(
        proxy["listen"],
        listen.as_str(),
        "comes back on the same port"
    );
    let mut stream = connect(&listen).expect("up again");
    round_trip(&mut stream);

    // Re-pointing the upstream restarts the proxy on the same listen port.
    let other = echo_server();
    let (status, moved) = api.call(
        "POST",
        "/proxies/echo",
        Some(json!({"upstream": other.to_string()})),
    );
    assert_eq!(
        (status, moved["upstream"].clone()),
        (200, json!(other.to_string()))
    );
    assert_eq!(moved["listen"], listen.as_str());
    round_trip(&mut connect(&listen).expect("re-pointed proxy works"));

    // POST /populate: 201, {"proxies": [...]}; identical entries are kept.
    let entry = json!({"name": "pop", "listen": "127.0.0.1:0", "upstream": echo.to_string()});
    let (status, populated) = api.call("POST", "/populate", Some(json!([entry])));
    assert_eq!(status, 201);
    assert_eq!(keys(&populated), ["proxies"]);
    assert_eq!(keys(&populated["proxies"][0]), PROXY_KEYS);

    // DELETE /proxies/{p}: 204, then gone.
    let (status, _) = api.call("DELETE", "/proxies/pop", None);
    assert_eq!(status, 204);
    let (status, _) = api.call("DELETE", "/proxies/pop", None);
    assert_eq!(status, 404);

    // Unknown route and wrong method.
    assert_eq!(api.call("GET", "/nothing", None).0, 404);
    assert_eq!(api.call("DELETE", "/version", None).0, 405);
}

#[test]
fn toxiproxy_rust_drives_latency_down_and_reset_end_to_end() {
    let server = EmbeddedToxiproxy::start().expect("server starts");
    let client = Client::new(server.addr());
    assert!(client.is_running());
    assert!(client.version().expect("version").contains("version"));
    let echo = echo_server();

    let proxies = client
        .populate(vec![ProxyPack::new(
            "echo".into(),
            "127.0.0.1:0".into(),
            echo.to_string(),
        )])
        .expect("populate");
    assert_eq!(proxies.len(), 1);
    let listen = proxies[0].proxy_pack.listen.clone();
    let proxy = client.find_and_reset_proxy("echo").expect("find");

    // Baseline through the proxy, then a 100 ms downstream latency toxic.
    let mut stream = connect(&listen).expect("connect through proxy");
    let baseline = median_round_trip(&mut stream, 5);
    proxy.with_latency("downstream".into(), 100, 0, 1.0);
    let toxics = proxy.toxics().expect("toxics");
    assert_eq!(toxics.len(), 1);
    assert_eq!(toxics[0].name, "latency_downstream");
    // The one deliberate difference from Toxiproxy (see the registry's
    // doc): a toxic change closes live connections; clients reconnect.
    assert_eq!(
        catch_round_trip(&mut stream),
        None,
        "live connection closed"
    );
    let mut stream = connect(&listen).expect("reconnect");
    let slowed = median_round_trip(&mut stream, 5);
    eprintln!("echo round trip through the proxy: {baseline:?} -> {slowed:?} with +100 ms latency");
    assert!(
        slowed >= Duration::from_millis(100),
        "latency applied: {slowed:?}"
    );
    assert!(
        slowed < Duration::from_millis(400),
        "and not much more: {slowed:?}"
    );

    proxy.delete_all_toxics().expect("delete toxics");
    let mut stream = connect(&listen).expect("reconnect");
    let healed = median_round_trip(&mut stream, 5);
    eprintln!("after removing the toxic: {healed:?}");
    assert!(
        healed < Duration::from_millis(50),
        "latency gone: {healed:?}"
    );

    // Direction matters: an upstream timeout (requests dropped) lets no
    // byte reach the echo server, so nothing comes back; a downstream one
    // lets the request through and drops the echo.
    proxy.with_timeout("upstream".into(), 0, 1.0);
    let mut stream = connect(&listen).expect("reconnect");
    stream.write_all(b"ping").expect("write");
    let mut buf = [0u8; 4];
    stream
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    assert!(stream.read_exact(&mut buf).is_err(), "nothing through");
    proxy.delete_all_toxics().expect("delete toxics");
    let mut stream = connect(&listen).expect("reconnect");
    round_trip(&mut stream);

    // Down: the live connection is closed, new ones are refused.
    proxy.disable().expect("disable");
    stream.write_all(b"ping").ok();
    let mut buf = [0u8; 4];
    match stream.read(&mut buf) {
        Ok(0) => {}
        Ok(n) => panic!("read {n} bytes through a disabled proxy"),
        Err(e) => assert_ne!(e.kind(), ErrorKind::WouldBlock, "closed, not silent: {e}"),
    }
    let refused = connect(&listen).map(|_| ()).unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::ConnectionRefused);
    let all = client.all().expect("all");
    assert!(!all["echo"].proxy_pack.enabled);

    // with_down brings it back; so does reset.
    proxy
        .with_down(|| assert!(connect(&listen).is_err()))
        .expect("with_down");
    round_trip(&mut connect(&listen).expect("enabled again"));
    proxy.disable().expect("disable");
    client.reset().expect("reset");
    let mut stream = connect(&listen).expect("reset re-enables");
    round_trip(&mut stream);
    stream.shutdown(Shutdown::Both).ok();
}
