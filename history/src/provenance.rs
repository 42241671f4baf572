//! Where a result came from: which redfence built it, and for a real-world
//! run, which provider ran which servers.
//!
//! A verdict about real servers is only as good as knowing which servers
//! they were: the same sweep on Redis 6 and Redis 7 may differ. The CLI
//! fills this in ([`crate::sweep::Sweep::provenance`]); every field has a
//! serde default, so results written before it existed still read.

use serde::{Deserialize, Serialize};

/// What produced a result.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Provenance {
    /// The redfence version (`CARGO_PKG_VERSION` of the CLI).
    pub redfence_version: String,
    /// The git commit the CLI was built from, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The real-world provider (`containers`, `local`, `external`); `None`
    /// in the simulation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Redis's own `redis_version` (`INFO server`), when a real Redis ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redis_version: Option<String>,
    /// PostgreSQL's `SELECT version()`, when a real PostgreSQL ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub postgres_version: Option<String>,
    /// The machine: operating system and CPU architecture (`linux x86_64`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os: Option<String>,
    /// CPUs the process could use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<u32>,
    /// Wall time of the whole command, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wall_ms: Option<u64>,
    /// For each protocol that was a lock adapter, the library its `ready`
    /// named, its version and whether it fences (`redis-py 8.1.0, no
    /// fence`).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub libraries: std::collections::BTreeMap<String, String>,
}

impl Provenance {
    /// One line for a terminal or a report: `redfence 0.1.0 (abc1234),
    /// provider local, Redis 7.0.15, PostgreSQL 15.13 …`.
    pub fn line(&self) -> String {
        let mut line = format!("redfence {}", self.redfence_version);
        if let Some(commit) = &self.commit {
            line.push_str(&format!(" ({commit})"));
        }
        if let Some(provider) = &self.provider {
            line.push_str(&format!(", provider {provider}"));
        }
        if let Some(redis) = &self.redis_version {
            line.push_str(&format!(", Redis {redis}"));
        }
        if let Some(postgres) = &self.postgres_version {
            line.push_str(&format!(", {postgres}"));
        }
        line
    }

    /// The same build and servers as `other`: what must match for two
    /// results to be one (the machine and the wall time may differ, as
    /// shards of one sweep run on different CI runners).
    pub fn same_build(&self, other: &Provenance) -> bool {
        let key = |p: &Provenance| {
            (
                p.redfence_version.clone(),
                p.commit.clone(),
                p.provider.clone(),
                p.redis_version.clone(),
                p.postgres_version.clone(),
            )
        };
        key(self) == key(other)
    }

    /// The environment as label and value pairs, for a report's
    /// environment block: only what is known.
    pub fn facts(&self) -> Vec<(&'static str, String)> {
        let mut facts = vec![("redfence", self.redfence_version.clone())];
        let known = [
            ("commit", self.commit.clone()),
            ("provider", self.provider.clone()),
            ("Redis", self.redis_version.clone()),
            ("PostgreSQL", self.postgres_version.clone()),
            ("machine", self.os.clone()),
            ("CPUs", self.cpus.map(|n| n.to_string())),
            (
                "wall time",
                self.wall_ms
                    .map(|ms| format!("{:.1} s", ms as f64 / 1000.0)),
            ),
        ];
        facts.extend(
            known
                .into_iter()
                .filter_map(|(label, value)| value.map(|v| (label, v))),
        );
        facts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_older_result_without_fields_reads_and_a_line_names_what_is_known() {
        let old: Provenance = serde_json::from_str("{}").unwrap();
        assert_eq!(old, Provenance::default());
        let known = Provenance {
            redfence_version: "0.1.0".into(),
            commit: Some("abc1234".into()),
            provider: Some("local".into()),
            redis_version: Some("7.0.15".into()),
            postgres_version: Some("PostgreSQL 15.13".into()),
            ..Provenance::default()
        };
        assert_eq!(
            known.line(),
            "redfence 0.1.0 (abc1234), provider local, Redis 7.0.15, PostgreSQL 15.13"
        );
        let json = serde_json::to_string(&known).unwrap();
        assert_eq!(serde_json::from_str::<Provenance>(&json).unwrap(), known);
        let timed = Provenance {
            os: Some("linux x86_64".into()),
            cpus: Some(2),
            wall_ms: Some(14_240),
            ..known
        };
        let facts = timed.facts();
        assert!(facts.contains(&("CPUs", "2".to_owned())));
        assert!(facts.contains(&("wall time", "14.2 s".to_owned())));
        assert!(!Provenance::default()
            .facts()
            .iter()
            .any(|(l, _)| *l == "provider"));
    }
}
