//! The embedded server's REST layer: Toxiproxy's routes over hyper.
//!
//! Routes and status codes follow Toxiproxy's API server: `201` for a
//! created proxy and for populate, `204` for deletes and reset, `200`
//! otherwise; errors as `{"error", "status"}`. Requests are handled one at a
//! time (the registry sits behind one lock), as proxy changes must not
//! interleave.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::CONTENT_TYPE;
use hyper::{Method, Request, Response, StatusCode};
use serde::Serialize;
use tokio::sync::Mutex;

use super::model::{ApiError, ProxyInput, ToxicInput};
use super::registry::Registry;

/// Largest request body read (a populate of many proxies is a few KB).
const REQUEST_BODY_BYTES_MAX: usize = 1 << 20;
/// How long a client may take to send its request.
const REQUEST_READ_TIMEOUT_MS: u64 = 10_000;

/// The version `GET /version` reports: ours, marked as embedded.
pub const VERSION: &str = concat!("redfence-chaos-embedded-", env!("CARGO_PKG_VERSION"));

type Reply = Response<Full<Bytes>>;

fn json<T: Serialize>(status: StatusCode, value: &T) -> Reply {
    let body = serde_json::to_vec(value).unwrap_or_else(|e| {
        format!("{{\"error\":\"encoding response: {e}\",\"status\":500}}").into_bytes()
    });
    let mut reply = Response::new(Full::new(Bytes::from(body)));
    *reply.status_mut() = status;
    reply.headers_mut().insert(
        CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    reply
}

fn empty(status: StatusCode) -> Reply {
    let mut reply = Response::new(Full::new(Bytes::new()));
    *reply.status_mut() = status;
    reply
}

fn error(err: ApiError) -> Reply {
    let status = StatusCode::from_u16(err.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json(status, &err)
}

fn parse<T: serde::de::DeserializeOwned + Default>(body: &[u8]) -> Result<T, ApiError> {
    // An empty body is an empty object: `POST /reset` and bare updates send none.
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(body).map_err(ApiError::bad_body)
}

/// Answers one request.
pub async fn handle(
    request: Request<Incoming>,
    registry: Arc<Mutex<Registry>>,
) -> Result<Reply, Infallible> {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let body = Limited::new(request.into_body(), REQUEST_BODY_BYTES_MAX).collect();
    let body =
        match tokio::time::timeout(Duration::from_millis(REQUEST_READ_TIMEOUT_MS), body).await {
            Ok(Ok(collected)) => collected.to_bytes(),
            Ok(Err(e)) => return Ok(error(ApiError::bad_body(e))),
            Err(_) => {
                return Ok(error(ApiError::new(
                    408,
                    "request body not received in time",
                )))
            }
        };
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let mut registry = registry.lock().await;
    let reply = route(&method, &segments, &body, &mut registry).await;
    Ok(reply.unwrap_or_else(error))
}

async fn route(
    method: &Method,
    segments: &[&str],
    body: &[u8],
    registry: &mut Registry,
) -> Result<Reply, ApiError> {
    let update = method == Method::POST || method == Method::PATCH;
    match segments {
        ["version"] if method == Method::GET => Ok(json(
            StatusCode::OK,
            &serde_json::json!({ "version": VERSION }),
        )),
        ["reset"] if method == Method::POST => {
            registry.reset().await?;
            Ok(empty(StatusCode::NO_CONTENT))
        }
        ["populate"] if method == Method::POST => {
            let inputs: Vec<ProxyInput> =
                serde_json::from_slice(body).map_err(ApiError::bad_body)?;
            let (proxies, err) = registry.populate(inputs).await;
            let status = err.as_ref().map_or(201, |e| e.status);
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut reply = serde_json::json!({ "proxies": proxies });
            if let Some(err) = err {
                reply["error"] = err.message.into();
                reply["status"] = err.status.into();
            }
            Ok(json(status, &reply))
        }
        ["proxies"] if method == Method::GET => Ok(json(StatusCode::OK, &registry.list())),
        ["proxies"] if method == Method::POST => {
            let created = registry.create(parse(body)?).await?;
            Ok(json(StatusCode::CREATED, &created))
        }
        ["proxies", name] if method == Method::GET => {
            Ok(json(StatusCode::OK, &registry.get(name)?))
        }
        ["proxies", name] if update => {
            let updated = registry.update(name, parse(body)?).await?;
            Ok(json(StatusCode::OK, &updated))
        }
        ["proxies", name] if method == Method::DELETE => {
            registry.delete(name).await?;
            Ok(empty(StatusCode::NO_CONTENT))
        }
        ["proxies", name, "toxics"] if method == Method::GET => {
            Ok(json(StatusCode::OK, &registry.toxics(name)?))
        }
        ["proxies", name, "toxics"] if method == Method::POST => {
            let input: ToxicInput = parse(body)?;
            Ok(json(
                StatusCode::OK,
                &registry.add_toxic(name, input).await?,
            ))
        }
        ["proxies", name, "toxics", toxic] if method == Method::GET => {
            Ok(json(StatusCode::OK, &registry.toxic(name, toxic)?))
        }
        ["proxies", name, "toxics", toxic] if update => {
            let input: ToxicInput = parse(body)?;
            let updated = registry.update_toxic(name, toxic, input).await?;
            Ok(json(StatusCode::OK, &updated))
        }
        ["proxies", name, "toxics", toxic] if method == Method::DELETE => {
            registry.remove_toxic(name, toxic).await?;
            Ok(empty(StatusCode::NO_CONTENT))
        }
        ["version" | "reset" | "populate" | "proxies"]
        | ["proxies", _]
        | ["proxies", _, "toxics"]
        | ["proxies", _, "toxics", _] => Err(ApiError::new(405, "method not allowed")),
        _ => Err(ApiError::new(404, "not found")),
    }
}
