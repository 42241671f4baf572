//! What the real world is built from, read from the environment.
//!
//! One place decides which provider runs the servers, which images the
//! container provider uses, and where an external deployment lives, so the
//! variables are documented once (README, "Real-server world") and a typo in
//! one is an error rather than a silent default.

use std::path::PathBuf;

use crate::error::{ChaosError, Result};

/// Chooses the provider: `containers`, `local` or `external`; unset means
/// containers when a Docker engine answers and has the images, else local
/// processes.
pub const ENV_PROVIDER: &str = "REDFENCE_PROVIDER";
/// Image for Redis primary and replica (default [`DEFAULT_REDIS_IMAGE`]).
pub const ENV_REDIS_IMAGE: &str = "REDFENCE_REDIS_IMAGE";
/// Image for PostgreSQL (default [`DEFAULT_POSTGRES_IMAGE`]).
pub const ENV_POSTGRES_IMAGE: &str = "REDFENCE_POSTGRES_IMAGE";
/// Image for Toxiproxy when `REDFENCE_TOXIPROXY=container`.
pub const ENV_TOXIPROXY_IMAGE: &str = "REDFENCE_TOXIPROXY_IMAGE";
/// `embedded` (default) or `container`: who serves the Toxiproxy API.
pub const ENV_TOXIPROXY: &str = "REDFENCE_TOXIPROXY";
/// `host:port` of an already running Toxiproxy API; overrides the above.
pub const ENV_TOXIPROXY_ADDR: &str = "REDFENCE_TOXIPROXY_ADDR";
/// The redis-server binary for the local provider (scripts/with-services sets it).
pub const ENV_REDIS_SERVER_BIN: &str = "REDFENCE_REDIS_SERVER_BIN";
/// The folder holding `initdb` and `postgres` for the local provider.
pub const ENV_PG_BIN_DIR: &str = "REDFENCE_PG_BIN_DIR";
/// `scripted` (default) or `sentinel`: who decides a failover.
pub const ENV_FAILOVER: &str = "REDFENCE_FAILOVER";
/// External provider: the Redis primary.
pub const ENV_EXTERNAL_PRIMARY: &str = "REDFENCE_CHAOS_REDIS_PRIMARY_URL";
/// External provider: the Redis replica (optional; without it there is no
/// replication to cut and no failover).
pub const ENV_EXTERNAL_REPLICA: &str = "REDFENCE_CHAOS_REDIS_REPLICA_URL";
/// External provider: the PostgreSQL database (migrations are applied to it).
pub const ENV_EXTERNAL_DATABASE: &str = "REDFENCE_CHAOS_DATABASE_URL";

/// The image `scripts/images` builds from Debian packages (Redis and
/// PostgreSQL in one), usable with no registry.
pub const LOCAL_IMAGE: &str = "redfence/redis-pg:local";
/// The default Redis image: the one the project builds ([`LOCAL_IMAGE`]);
/// nothing is pulled from a registry.
pub const DEFAULT_REDIS_IMAGE: &str = LOCAL_IMAGE;
/// The default PostgreSQL image: the one the project builds.
pub const DEFAULT_POSTGRES_IMAGE: &str = LOCAL_IMAGE;
/// Shopify's Toxiproxy image.
pub const DEFAULT_TOXIPROXY_IMAGE: &str = "ghcr.io/shopify/toxiproxy:2.12.0";
/// The command that builds [`LOCAL_IMAGE`], named when it is missing.
pub const BUILD_IMAGE_COMMAND: &str = "scripts/images";

/// Which provider runs the servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProviderKind {
    /// Docker containers through testcontainers.
    Containers,
    /// `redis-server` and `postgres` processes on loopback.
    Local,
    /// Servers someone else runs; only proxies are ours.
    External,
}

impl ProviderKind {
    /// The name used in `REDFENCE_PROVIDER` and in messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::Containers => "containers",
            Self::Local => "local",
            Self::External => "external",
        }
    }
}

/// Who decides a failover.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FailoverKind {
    /// The harness stops the primary and promotes the replica
    /// (`REPLICAOF NO ONE`) at the scenario's moment: fast, the default.
    #[default]
    Scripted,
    /// Three Redis Sentinels watch the primary; the harness only stops it,
    /// and Sentinel decides when to promote and which replica (see
    /// `sentinel.rs`). Workers find the master through Sentinel.
    Sentinel,
}

impl FailoverKind {
    /// The name used in `REDFENCE_FAILOVER`, messages and reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Scripted => "scripted",
            Self::Sentinel => "sentinel",
        }
    }

    /// Parses a name as [`Self::name`] spells it.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "scripted" => Some(Self::Scripted),
            "sentinel" => Some(Self::Sentinel),
            _ => None,
        }
    }
}

/// Container images; Redis and PostgreSQL default to [`LOCAL_IMAGE`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Images {
    /// Redis primary and replica.
    pub redis: String,
    /// PostgreSQL.
    pub postgres: String,
    /// Toxiproxy (only with [`ToxiproxyChoice::Container`]).
    pub toxiproxy: String,
}

impl Default for Images {
    fn default() -> Self {
        Self {
            redis: DEFAULT_REDIS_IMAGE.to_owned(),
            postgres: DEFAULT_POSTGRES_IMAGE.to_owned(),
            toxiproxy: DEFAULT_TOXIPROXY_IMAGE.to_owned(),
        }
    }
}

impl Images {
    /// The defaults, overridden by `REDFENCE_*_IMAGE`.
    pub fn from_env() -> Self {
        let pick = |var, default: &str| env_nonempty(var).unwrap_or_else(|| default.to_owned());
        Self {
            redis: pick(ENV_REDIS_IMAGE, DEFAULT_REDIS_IMAGE),
            postgres: pick(ENV_POSTGRES_IMAGE, DEFAULT_POSTGRES_IMAGE),
            toxiproxy: pick(ENV_TOXIPROXY_IMAGE, DEFAULT_TOXIPROXY_IMAGE),
        }
    }

    /// The locally built image ([`LOCAL_IMAGE`]) for Redis and PostgreSQL.
    pub fn local() -> Self {
        Self {
            redis: LOCAL_IMAGE.to_owned(),
            postgres: LOCAL_IMAGE.to_owned(),
            ..Self::default()
        }
    }
}

/// Who serves the Toxiproxy API.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToxiproxyChoice {
    /// The noxious-based server inside this process (no image needed).
    Embedded,
    /// A Toxiproxy container from [`Images::toxiproxy`] (host network).
    Container,
    /// A Toxiproxy already listening at `host:port`.
    Running(String),
}

/// External servers' URLs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalUrls {
    /// `redis://host:port/` of the primary.
    pub redis_primary: String,
    /// `redis://host:port/` of the replica, if there is one.
    pub redis_replica: Option<String>,
    /// `postgres://…` of the database.
    pub database: String,
}

/// Binaries for the local provider.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LocalBinaries {
    /// `redis-server`; `None` looks on `PATH`.
    pub redis_server: Option<PathBuf>,
    /// Folder with `initdb` and `postgres`; `None` looks on `PATH`, then in
    /// Debian's `/usr/lib/postgresql/<newest>/bin`.
    pub pg_bin_dir: Option<PathBuf>,
}

/// Everything needed to build a real world.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChaosConfig {
    /// `None`: containers if Docker answers, else local processes.
    pub provider: Option<ProviderKind>,
    /// Images for the container provider.
    pub images: Images,
    /// Who serves the Toxiproxy API.
    pub toxiproxy: ToxiproxyChoice,
    /// Binaries for the local provider.
    pub local: LocalBinaries,
    /// URLs for the external provider (required when it is chosen).
    pub external: Option<ExternalUrls>,
    /// Who decides a failover.
    pub failover: FailoverKind,
}

impl Default for ChaosConfig {
    fn default() -> Self {
        Self {
            provider: None,
            images: Images::default(),
            toxiproxy: ToxiproxyChoice::Embedded,
            local: LocalBinaries::default(),
            external: None,
            failover: FailoverKind::Scripted,
        }
    }
}

impl ChaosConfig {
    /// Reads the `REDFENCE_*` variables (README, "Real-server world").
    pub fn from_env() -> Result<Self> {
        let provider = match env_nonempty(ENV_PROVIDER).as_deref() {
            None | Some("auto") => None,
            Some("containers") => Some(ProviderKind::Containers),
            Some("local") => Some(ProviderKind::Local),
            Some("external") => Some(ProviderKind::External),
            Some(other) => {
                return Err(ChaosError::BadConfig {
                    var: ENV_PROVIDER,
                    value: other.to_owned(),
                    expected: "containers, local, external or auto",
                })
            }
        };
        let toxiproxy = match (
            env_nonempty(ENV_TOXIPROXY_ADDR),
            env_nonempty(ENV_TOXIPROXY).as_deref(),
        ) {
            (Some(addr), _) => ToxiproxyChoice::Running(addr),
            (None, None | Some("embedded")) => ToxiproxyChoice::Embedded,
            (None, Some("container")) => ToxiproxyChoice::Container,
            (None, Some(other)) => {
                return Err(ChaosError::BadConfig {
                    var: ENV_TOXIPROXY,
                    value: other.to_owned(),
                    expected: "embedded or container",
                })
            }
        };
        let failover = failover_from(env_nonempty(ENV_FAILOVER), provider)?;
        let external = if provider == Some(ProviderKind::External) {
            Some(ExternalUrls {
                redis_primary: env_nonempty(ENV_EXTERNAL_PRIMARY)
                    .ok_or(ChaosError::MissingExternal(ENV_EXTERNAL_PRIMARY))?,
                redis_replica: env_nonempty(ENV_EXTERNAL_REPLICA),
                database: env_nonempty(ENV_EXTERNAL_DATABASE)
                    .ok_or(ChaosError::MissingExternal(ENV_EXTERNAL_DATABASE))?,
            })
        } else {
            None
        };
        Ok(Self {
            provider,
            images: Images::from_env(),
            toxiproxy,
            local: LocalBinaries {
                redis_server: env_nonempty(ENV_REDIS_SERVER_BIN).map(PathBuf::from),
                pg_bin_dir: env_nonempty(ENV_PG_BIN_DIR).map(PathBuf::from),
            },
            external,
            failover,
        })
    }

    /// The local provider with binaries from the environment.
    pub fn local_from_env() -> Result<Self> {
        Ok(Self {
            provider: Some(ProviderKind::Local),
            ..Self::from_env()?
        })
    }

    /// The container provider with the image `scripts/images` builds.
    pub fn containers_local_image() -> Self {
        Self {
            provider: Some(ProviderKind::Containers),
            images: Images::local(),
            ..Self::default()
        }
    }
}

/// `REDFENCE_FAILOVER`'s value, checked against the provider: the
/// external provider's Sentinel (if any) is not ours to start.
fn failover_from(value: Option<String>, provider: Option<ProviderKind>) -> Result<FailoverKind> {
    let failover = match value {
        None => FailoverKind::Scripted,
        Some(name) => FailoverKind::parse(&name).ok_or(ChaosError::BadConfig {
            var: ENV_FAILOVER,
            value: name,
            expected: "scripted or sentinel",
        })?,
    };
    if failover == FailoverKind::Sentinel && provider == Some(ProviderKind::External) {
        return Err(ChaosError::BadConfig {
            var: ENV_FAILOVER,
            value: "sentinel".to_owned(),
            expected: "scripted with REDFENCE_PROVIDER=external (its Sentinel is not ours)",
        });
    }
    Ok(failover)
}

/// A variable's value, treating empty as unset (as shells often export).
pub(crate) fn env_nonempty(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.is_empty())
}

#[cfg(test)]
mod failover_tests {
    use super::*;

    #[test]
    fn the_failover_setting_is_checked_before_anything_starts() {
        assert_eq!(failover_from(None, None).unwrap(), FailoverKind::Scripted);
        assert_eq!(
            failover_from(Some("sentinel".into()), Some(ProviderKind::Local)).unwrap(),
            FailoverKind::Sentinel
        );
        let typo = failover_from(Some("sentinels".into()), None).unwrap_err();
        assert!(typo.to_string().contains("REDFENCE_FAILOVER"), "{typo}");
        assert!(typo.to_string().contains("scripted or sentinel"), "{typo}");
        let external =
            failover_from(Some("sentinel".into()), Some(ProviderKind::External)).unwrap_err();
        assert!(external.to_string().contains("not ours"), "{external}");
    }
}
