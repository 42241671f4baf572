//! The deployment a report judges readiness for: the protocol the team
//! ships, where its fences come from and how its Redis is replicated — told
//! on the command line, or assumed (and labelled so) when not.
//!
//! Its own module because both the report document (which records it) and
//! the readiness rules (which read it) need it, and neither should import
//! the other for it.

use redfence_history::sweep::{Expectation, Sweep};
use redfence_history::FenceSourceKind;
use serde::{Deserialize, Serialize};

/// How the deployment's Redis is replicated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Replication {
    /// A replica that can be promoted (Redis replication is asynchronous).
    Async,
    /// A single Redis server.
    None,
}

/// The deployment the readiness verdicts judge.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deployment {
    /// The protocol the team ships (its cells must pass).
    pub protocol: String,
    /// Fence source.
    pub fence_source: FenceSourceKind,
    /// Redis replication.
    pub replication: Replication,
    /// Whether these are defaults rather than what the user said.
    pub assumed: bool,
}

impl Deployment {
    /// The defaults for `sweep`: its first protocol that must pass (the
    /// reference or a team's own), the library's default fence source (the
    /// Redis counter), and a promotable replica, as most production Redis
    /// deployments run.
    pub fn assumed_for(sweep: &Sweep) -> Self {
        Self {
            protocol: deployed_protocol(sweep),
            fence_source: FenceSourceKind::RedisCounter,
            replication: Replication::Async,
            assumed: true,
        }
    }
}

/// The protocol a sweep is about: the first whose cells are expected to
/// pass, else the first protocol.
pub fn deployed_protocol(sweep: &Sweep) -> String {
    sweep
        .cells
        .iter()
        .find(|c| c.expectation == Expectation::Pass)
        .map(|c| c.protocol.clone())
        .or_else(|| sweep.protocols.first().map(|p| p.name.clone()))
        .unwrap_or_default()
}
