//! The Toxiproxy API's JSON shapes, and their translation to noxious.
//!
//! Shapes follow Toxiproxy's README ("HTTP API"): a proxy is `name`,
//! `listen`, `upstream`, `enabled`, `toxics`; a toxic is `name`, `type`,
//! `stream` (`upstream` | `downstream`), `toxicity`, `attributes`; an error
//! is `{"error": message, "status": code}`. noxious serializes its own types
//! differently (`direction` instead of `stream`), so the API has its own
//! types and converts at this one border.

use std::collections::BTreeMap;

use noxious::toxic::{StreamDirection, Toxic, ToxicKind};
use serde::{Deserialize, Serialize};

/// A proxy as the API shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProxyJson {
    /// Unique name.
    pub name: String,
    /// `host:port` it listens on (the real port when 0 was asked for).
    pub listen: String,
    /// `host:port` it connects to.
    pub upstream: String,
    /// `false`: down (not listening, connections closed).
    pub enabled: bool,
    /// Active toxics, in the order they were added.
    pub toxics: Vec<ToxicJson>,
}

/// A proxy as a client sends it (create, update, populate): every field
/// optional, so an update changes only what it names.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ProxyInput {
    /// Name (required on create).
    #[serde(default)]
    pub name: Option<String>,
    /// Listen address (default `127.0.0.1:0`).
    #[serde(default)]
    pub listen: Option<String>,
    /// Upstream (required on create).
    #[serde(default)]
    pub upstream: Option<String>,
    /// Enabled (default `true` on create).
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// A toxic as the API shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToxicJson {
    /// Unique per proxy; defaults to `<type>_<stream>`.
    pub name: String,
    /// The toxic's type (`latency`, `timeout`, …).
    #[serde(rename = "type")]
    pub kind: String,
    /// `upstream` (client → server) or `downstream` (server → client).
    pub stream: String,
    /// Probability that a connection gets the toxic.
    pub toxicity: f32,
    /// Type-specific numbers (milliseconds, bytes, KB/s).
    pub attributes: BTreeMap<String, u64>,
}

/// A toxic as a client sends it.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ToxicInput {
    /// Name.
    #[serde(default)]
    pub name: Option<String>,
    /// Type (required on create).
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// Stream (default `downstream`).
    #[serde(default)]
    pub stream: Option<String>,
    /// Toxicity (default 1.0).
    #[serde(default)]
    pub toxicity: Option<f32>,
    /// Attributes (missing ones are 0, as in Toxiproxy).
    #[serde(default)]
    pub attributes: Option<BTreeMap<String, serde_json::Value>>,
}

/// An API error: an HTTP status and Toxiproxy's message for it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ApiError {
    /// The message.
    #[serde(rename = "error")]
    pub message: String,
    /// The HTTP status.
    pub status: u16,
}

impl ApiError {
    /// An error with `status`.
    pub fn new(status: u16, message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            status,
        }
    }

    /// 400 `bad request body: …`.
    pub fn bad_body(detail: impl std::fmt::Display) -> Self {
        Self::new(400, format!("bad request body: {detail}"))
    }

    /// 400 `missing required field: …`.
    pub fn missing_field(field: &str) -> Self {
        Self::new(400, format!("missing required field: {field}"))
    }

    /// 404 `proxy not found`.
    pub fn proxy_not_found() -> Self {
        Self::new(404, "proxy not found")
    }

    /// 404 `toxic not found`.
    pub fn toxic_not_found() -> Self {
        Self::new(404, "toxic not found")
    }

    /// 500 with the cause.
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        Self::new(500, detail.to_string())
    }
}

/// The toxic types this server runs, each with its attributes in order.
/// `reset_peer` is missing: noxious has no implementation of it.
pub const TOXIC_TYPES: &[(&str, &[&str])] = &[
    ("latency", &["latency", "jitter"]),
    ("bandwidth", &["rate"]),
    ("slow_close", &["delay"]),
    ("timeout", &["timeout"]),
    ("slicer", &["average_size", "size_variation", "delay"]),
    ("limit_data", &["bytes"]),
    ("noop", &[]),
];

/// The attribute names of a toxic type, or why it is refused.
fn attribute_names(kind: &str) -> Result<&'static [&'static str], ApiError> {
    match TOXIC_TYPES.iter().find(|(name, _)| *name == kind) {
        Some((_, attributes)) => Ok(attributes),
        None if kind == "reset_peer" => Err(ApiError::new(
            400,
            "invalid toxic type: reset_peer is not supported by this embedded server \
             (noxious has no reset_peer); use timeout or a disabled proxy instead",
        )),
        None => Err(ApiError::new(400, format!("invalid toxic type: {kind}"))),
    }
}

/// Reads attribute values as whole numbers, as Toxiproxy's Go structs do.
fn attribute_values(
    names: &[&str],
    given: Option<&BTreeMap<String, serde_json::Value>>,
    base: Option<&BTreeMap<String, u64>>,
) -> Result<BTreeMap<String, u64>, ApiError> {
    let mut values = BTreeMap::new();
    for name in names {
        let value = match given.and_then(|g| g.get(*name)) {
            Some(value) => value.as_u64().ok_or_else(|| {
                ApiError::bad_body(format!("attribute {name} must be a whole number >= 0"))
            })?,
            None => base.and_then(|b| b.get(*name)).copied().unwrap_or(0),
        };
        values.insert((*name).to_owned(), value);
    }
    Ok(values)
}

fn check_toxicity(toxicity: f32) -> Result<f32, ApiError> {
    if (0.0..=1.0).contains(&toxicity) {
        Ok(toxicity)
    } else {
        Err(ApiError::bad_body("toxicity must be between 0 and 1"))
    }
}

impl ToxicInput {
    /// The toxic a create request describes, with Toxiproxy's defaults.
    pub fn into_new_toxic(self) -> Result<ToxicJson, ApiError> {
        let kind = self.kind.ok_or_else(|| ApiError::missing_field("type"))?;
        let names = attribute_names(&kind)?;
        let stream = self.stream.unwrap_or_else(|| "downstream".to_owned());
        if stream != "upstream" && stream != "downstream" {
            return Err(ApiError::new(
                400,
                "stream was invalid, can be either upstream or downstream",
            ));
        }
        let attributes = attribute_values(names, self.attributes.as_ref(), None)?;
        let name = self
            .name
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| format!("{kind}_{stream}"));
        Ok(ToxicJson {
            name,
            kind,
            stream,
            toxicity: check_toxicity(self.toxicity.unwrap_or(1.0))?,
            attributes,
        })
    }

    /// `current` changed by an update request: toxicity and attributes only
    /// (a toxic's name, type and stream stay; Toxiproxy treats them alike).
    pub fn apply_update(self, current: &ToxicJson) -> Result<ToxicJson, ApiError> {
        let names = attribute_names(&current.kind)?;
        Ok(ToxicJson {
            toxicity: check_toxicity(self.toxicity.unwrap_or(current.toxicity))?,
            attributes: attribute_values(
                names,
                self.attributes.as_ref(),
                Some(&current.attributes),
            )?,
            ..current.clone()
        })
    }
}

impl ToxicJson {
    /// The noxious toxic that does what this one says.
    pub fn to_noxious(&self) -> Result<Toxic, ApiError> {
        let a = |name: &str| self.attributes.get(name).copied().unwrap_or(0);
        let kind = match self.kind.as_str() {
            "latency" => ToxicKind::Latency {
                latency: a("latency"),
                jitter: a("jitter"),
            },
            "bandwidth" => ToxicKind::Bandwidth { rate: a("rate") },
            "slow_close" => ToxicKind::SlowClose { delay: a("delay") },
            "timeout" => ToxicKind::Timeout {
                timeout: a("timeout"),
            },
            "slicer" => ToxicKind::Slicer {
                average_size: a("average_size"),
                size_variation: a("size_variation"),
                delay: a("delay"),
            },
            "limit_data" => ToxicKind::LimitData { bytes: a("bytes") },
            "noop" => ToxicKind::Noop,
            other => {
                return Err(attribute_names(other).err().unwrap_or_else(|| {
                    ApiError::internal(format!("toxic type {other} has no noxious counterpart"))
                }))
            }
        };
        let direction = match self.stream.as_str() {
            "upstream" => StreamDirection::Upstream,
            _ => StreamDirection::Downstream,
        };
        Ok(Toxic {
            kind,
            name: self.name.clone(),
            toxicity: self.toxicity,
            direction,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input(value: serde_json::Value) -> ToxicInput {
        serde_json::from_value(value).expect("valid input")
    }

    #[test]
    fn new_toxic_gets_toxiproxy_defaults() {
        let toxic = input(json!({"type": "latency", "attributes": {"latency": 100}}))
            .into_new_toxic()
            .expect("valid");
        assert_eq!(
            serde_json::to_value(&toxic).unwrap(),
            json!({"name": "latency_downstream", "type": "latency", "stream": "downstream",
                   "toxicity": 1.0, "attributes": {"latency": 100, "jitter": 0}})
        );
    }

    #[test]
    fn bad_stream_type_and_reset_peer_are_400() {
        let bad_stream = input(json!({"type": "latency", "stream": "sideways"}));
        assert_eq!(bad_stream.into_new_toxic().unwrap_err().status, 400);
        let unknown = input(json!({"type": "teleport"}));
        assert_eq!(
            unknown.into_new_toxic().unwrap_err().message,
            "invalid toxic type: teleport"
        );
        let reset = input(json!({"type": "reset_peer"})).into_new_toxic();
        assert!(reset
            .unwrap_err()
            .message
            .contains("reset_peer is not supported"));
    }

    #[test]
    fn update_keeps_unnamed_attributes() {
        let current =
            input(json!({"type": "slicer", "attributes": {"average_size": 64, "delay": 10}}))
                .into_new_toxic()
                .unwrap();
        let updated = input(json!({"attributes": {"delay": 20}, "toxicity": 0.5}))
            .apply_update(&current)
            .unwrap();
        assert_eq!(updated.attributes["average_size"], 64);
        assert_eq!(updated.attributes["delay"], 20);
        assert_eq!(updated.toxicity, 0.5);
        assert_eq!(updated.name, "slicer_downstream");
    }

    #[test]
    fn converts_every_type_to_noxious() {
        for (kind, _) in TOXIC_TYPES {
            let toxic = input(json!({"type": kind, "stream": "upstream"}))
                .into_new_toxic()
                .unwrap();
            let noxious = toxic.to_noxious().unwrap();
            assert_eq!(noxious.kind.get_name(), *kind);
            assert_eq!(noxious.direction, StreamDirection::Upstream);
        }
    }
}
