//! Where a deployment takes its fencing tokens from: shared vocabulary of the
//! lock library (`redfence-core` re-exports it as its configuration), the
//! scenarios and the reports.

use serde::{Deserialize, Serialize};

/// Where fencing tokens come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FenceSourceKind {
    /// `INCR fence:{name}` inside the acquire script: one round trip, but the
    /// counter can regress if a Redis failover loses the increment.
    #[default]
    RedisCounter,
    /// A durable counter row per resource in the fenced store (Postgres),
    /// incremented with `... RETURNING` right after the Redis lease is
    /// taken: it survives a Redis failover.
    Store,
}

impl FenceSourceKind {
    /// Every kind.
    pub const ALL: [FenceSourceKind; 2] = [FenceSourceKind::RedisCounter, FenceSourceKind::Store];

    /// The kebab-case name (configuration, CLI and JSON spelling).
    pub fn name(self) -> &'static str {
        match self {
            FenceSourceKind::RedisCounter => "redis-counter",
            FenceSourceKind::Store => "store",
        }
    }

    /// The kind named `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl std::fmt::Display for FenceSourceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_spelling_is_the_name() {
        for kind in FenceSourceKind::ALL {
            assert_eq!(
                serde_json::to_string(&kind).unwrap(),
                format!("\"{}\"", kind.name())
            );
            assert_eq!(FenceSourceKind::from_name(kind.name()), Some(kind));
        }
    }
}
