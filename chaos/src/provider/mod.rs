//! Running the servers: one type, [`Servers`], over three providers.
//!
//! The provider is chosen by configuration ([`crate::config`]): Docker
//! containers ([`containers`]), local processes ([`local`]), or servers
//! someone else runs (external: only their addresses are ours). Unset, the
//! choice is containers when a Docker engine answers and has the images
//! (`scripts/images` builds them), else local processes when the binaries
//! are installed, else an error saying what to install or set. Every
//! provider gives the same thing: a Redis primary, a Redis replica (not yet
//! replicating — the topology points it at the primary through a proxy) and
//! PostgreSQL with an empty database, all on addresses the proxies can reach
//! on loopback; containers and local processes also start independent
//! Redis masters on demand ([`Servers::start_master`], up to
//! [`MASTERS_MAX`] with the primary: no replica, no replication), which the
//! external provider refuses. External servers are checked at start: one
//! that does not answer is an error naming the server, its address and the
//! variable.
//!
//! Each start records what it ran on ([`ServerInfo`]: the provider and the
//! servers' own versions), readable by the command that reports the run
//! ([`last_started`]).

pub mod containers;
pub mod local;

use std::sync::Mutex;
use std::time::Duration;

use sqlx::{Connection, Executor};

use crate::config::{
    ChaosConfig, ExternalUrls, ProviderKind, ENV_EXTERNAL_DATABASE, ENV_EXTERNAL_PRIMARY,
    ENV_EXTERNAL_REPLICA,
};
use crate::error::{ChaosError, Result};

/// A Redis server of the topology.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RedisNode {
    /// The primary the workers start on (master 0).
    Primary,
    /// The replica (of the primary, through the replication proxy), the
    /// failover target.
    Replica,
    /// Independent master `m` (1 ≤ m < [`MASTERS_MAX`]): no replica, no
    /// replication, for locks that span several masters (Redlock).
    Master(usize),
}

/// Most Redis masters a topology runs, the primary included.
pub const MASTERS_MAX: usize = 7;

/// Names of the independent masters, by master number (0 is the primary).
const MASTER_NAMES: [&str; MASTERS_MAX] = [
    "redis-primary",
    "redis-master-1",
    "redis-master-2",
    "redis-master-3",
    "redis-master-4",
    "redis-master-5",
    "redis-master-6",
];

impl RedisNode {
    /// The node's place in per-node tables: primary, replica, then the
    /// masters 1.. in order.
    pub(crate) fn index(self) -> usize {
        match self {
            Self::Primary => 0,
            Self::Replica => 1,
            Self::Master(m) => {
                assert!((1..MASTERS_MAX).contains(&m), "master {m} out of range");
                1 + m
            }
        }
    }

    /// The node at `index` of per-node tables.
    pub(crate) fn at(index: usize) -> Self {
        match index {
            0 => Self::Primary,
            1 => Self::Replica,
            i => Self::Master(i - 1),
        }
    }

    /// The node's name in messages and container labels.
    pub fn name(self) -> &'static str {
        match self {
            Self::Primary => "redis-primary",
            Self::Replica => "redis-replica",
            Self::Master(m) => MASTER_NAMES[m],
        }
    }
}

/// Creates `database` (it is new: the server just started).
pub(crate) async fn create_database(admin_url: &str, database: &str) -> Result<()> {
    let mut conn = sqlx::PgConnection::connect(admin_url)
        .await
        .map_err(|e| ChaosError::Postgres(format!("connecting to {admin_url}: {e}")))?;
    conn.execute(format!("CREATE DATABASE \"{database}\"").as_str())
        .await
        .map_err(|e| ChaosError::Postgres(format!("creating database {database}: {e}")))?;
    conn.close()
        .await
        .map_err(|e| ChaosError::Postgres(e.to_string()))
}

/// `host:port` of a `redis://host:port/...` URL.
fn redis_url_addr(url: &str, var: &'static str) -> Result<String> {
    let bad = || ChaosError::BadConfig {
        var,
        value: url.to_owned(),
        expected: "redis://host:port/ (no password: the proxies forward raw TCP)",
    };
    let rest = url.strip_prefix("redis://").ok_or_else(bad)?;
    let host_port = rest.split('/').next().unwrap_or_default();
    if host_port.contains('@') || !host_port.contains(':') {
        return Err(bad());
    }
    Ok(host_port.to_owned())
}

/// `host:port` of a `postgres://user@host:port/db` URL, and the URL with
/// `host:port` replaced by `{addr}` (so workers get it through a proxy).
fn postgres_url_parts(url: &str) -> Result<(String, String)> {
    let bad = || ChaosError::BadConfig {
        var: crate::config::ENV_EXTERNAL_DATABASE,
        value: url.to_owned(),
        expected: "postgres://user[:password]@host:port/database",
    };
    let scheme_end = url.find("://").ok_or_else(bad)? + 3;
    let authority_end = url[scheme_end..]
        .find('/')
        .map_or(url.len(), |i| scheme_end + i);
    let authority = &url[scheme_end..authority_end];
    let host_start = authority.rfind('@').map_or(0, |i| i + 1);
    let addr = &authority[host_start..];
    if !addr.contains(':') {
        return Err(bad());
    }
    let template = format!(
        "{}{{addr}}{}",
        &url[..scheme_end + host_start],
        &url[authority_end..]
    );
    Ok((addr.to_owned(), template))
}

/// Servers someone else runs.
#[derive(Debug)]
pub struct ExternalServers {
    primary: String,
    replica: Option<String>,
    postgres: String,
    url_template: String,
}

impl ExternalServers {
    fn new(urls: &ExternalUrls) -> Result<Self> {
        let (postgres, url_template) = postgres_url_parts(&urls.database)?;
        Ok(Self {
            primary: redis_url_addr(&urls.redis_primary, crate::config::ENV_EXTERNAL_PRIMARY)?,
            replica: urls
                .redis_replica
                .as_deref()
                .map(|u| redis_url_addr(u, crate::config::ENV_EXTERNAL_REPLICA))
                .transpose()?,
            postgres,
            url_template,
        })
    }
}

enum Backend {
    Local(Box<local::LocalServers>),
    // Boxed: a container handle is large, and there is one per topology.
    Containers(Box<containers::ContainerServers>),
    External(ExternalServers),
}

/// The running servers of one topology. Dropping it stops and removes them
/// (prefer [`Servers::shutdown`] in async code: it waits for the removal).
pub struct Servers {
    backend: Backend,
    run_id: String,
    database: String,
}

impl std::fmt::Debug for Servers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Servers")
            .field("provider", &self.kind().name())
            .field("run_id", &self.run_id)
            .finish()
    }
}

/// The database the topology's PostgreSQL gets (local and containers).
pub const DATABASE: &str = "redfence";

/// How long asking a server its version may take.
const VERSION_TIMEOUT_MS: u64 = 3_000;

/// What a started topology runs on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerInfo {
    /// The provider.
    pub provider: ProviderKind,
    /// The primary's `redis_version` (`INFO server`), if it answered.
    pub redis_version: Option<String>,
    /// PostgreSQL's `SELECT version()`, if it answered.
    pub postgres_version: Option<String>,
}

static LAST_STARTED: Mutex<Option<ServerInfo>> = Mutex::new(None);

/// What the last topology this process started runs on (`None` before
/// the first start).
pub fn last_started() -> Option<ServerInfo> {
    LAST_STARTED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

/// `redis_version` from `INFO server` of the Redis at `addr`.
pub async fn redis_version(addr: &str) -> Result<String, String> {
    let ask = async {
        let client = redis::Client::open(format!("redis://{addr}/")).map_err(|e| e.to_string())?;
        let mut conn = client
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| e.to_string())?;
        let info: String = redis::cmd("INFO")
            .arg("server")
            .query_async(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
        info.lines()
            .find_map(|line| line.strip_prefix("redis_version:"))
            .map(|v| v.trim().to_owned())
            .ok_or_else(|| "INFO server has no redis_version".to_owned())
    };
    tokio::time::timeout(Duration::from_millis(VERSION_TIMEOUT_MS), ask)
        .await
        .map_err(|_| "no answer in time".to_owned())?
}

/// `SELECT version()` of the PostgreSQL at `url`.
pub async fn postgres_version(url: &str) -> Result<String, String> {
    let ask = async {
        let mut conn = sqlx::PgConnection::connect(url)
            .await
            .map_err(|e| e.to_string())?;
        let version: String = sqlx::query_scalar("SELECT version()")
            .fetch_one(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
        let _ = conn.close().await;
        Ok(version)
    };
    tokio::time::timeout(Duration::from_millis(VERSION_TIMEOUT_MS), ask)
        .await
        .map_err(|_| "no answer in time".to_owned())?
}

/// The provider the configuration asks for, or the automatic choice.
pub async fn choose(config: &ChaosConfig) -> Result<ProviderKind> {
    if let Some(kind) = config.provider {
        return Ok(kind);
    }
    let docker = match containers::docker().await {
        Ok(docker) => match containers::images_present(&docker, &config.images).await {
            Ok(()) => return Ok(ProviderKind::Containers),
            Err(missing) => {
                if local::LocalPrograms::find(&config.local).is_ok() {
                    note_once(&format!(
                        "Docker answers but {missing}; using local processes \
                         (REDFENCE_PROVIDER=local)"
                    ));
                }
                missing.to_string()
            }
        },
        Err(e) => e.to_string(),
    };
    match local::LocalPrograms::find(&config.local) {
        Ok(_) => Ok(ProviderKind::Local),
        Err(local) => Err(ChaosError::NoProvider {
            docker,
            local: local.to_string(),
        }),
    }
}

/// Prints `message` on stderr the first time only (the automatic choice is
/// made again for every world of a sweep).
fn note_once(message: &str) {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        eprintln!("redfence: {message}");
    }
}

/// Checks that external servers answer, naming the one that does not.
async fn check_external(servers: &ExternalServers) -> Result<()> {
    let unreachable = |server, addr: &str, var, cause| ChaosError::ExternalUnreachable {
        server,
        addr: addr.to_owned(),
        var,
        cause,
    };
    crate::probe::redis_ping(&servers.primary)
        .await
        .map_err(|e| unreachable("Redis primary", &servers.primary, ENV_EXTERNAL_PRIMARY, e))?;
    if let Some(replica) = &servers.replica {
        crate::probe::redis_ping(replica)
            .await
            .map_err(|e| unreachable("Redis replica", replica, ENV_EXTERNAL_REPLICA, e))?;
    }
    let url = servers.url_template.replace("{addr}", &servers.postgres);
    crate::probe::postgres_connect(&url)
        .await
        .map_err(|e| unreachable("PostgreSQL", &servers.postgres, ENV_EXTERNAL_DATABASE, e))
}

impl Servers {
    /// Starts the servers with the configured (or automatically chosen)
    /// provider.
    pub async fn start(config: &ChaosConfig) -> Result<Self> {
        let run_id = uuid::Uuid::new_v4().simple().to_string();
        let kind = choose(config).await?;
        let (backend, database) = match kind {
            ProviderKind::Local => {
                let programs = local::LocalPrograms::find(&config.local)?;
                let servers = local::LocalServers::start(programs, &run_id, DATABASE).await?;
                (Backend::Local(Box::new(servers)), DATABASE.to_owned())
            }
            ProviderKind::Containers => {
                let servers =
                    containers::ContainerServers::start(&config.images, &run_id, DATABASE).await?;
                (Backend::Containers(Box::new(servers)), DATABASE.to_owned())
            }
            ProviderKind::External => {
                let urls = config.external.as_ref().ok_or(ChaosError::MissingExternal(
                    crate::config::ENV_EXTERNAL_PRIMARY,
                ))?;
                let servers = ExternalServers::new(urls)?;
                check_external(&servers).await?;
                (Backend::External(servers), String::new())
            }
        };
        let servers = Self {
            backend,
            run_id,
            database,
        };
        servers.record_versions().await;
        Ok(servers)
    }

    /// Asks the servers their versions and records them for
    /// [`last_started`]; a server that does not say leaves `None`.
    async fn record_versions(&self) {
        let redis_version = match self.redis_addr(RedisNode::Primary) {
            Some(addr) => redis_version(&addr).await.ok(),
            None => None,
        };
        let postgres_version = postgres_version(&self.postgres_url_via(&self.postgres_addr()))
            .await
            .ok();
        *LAST_STARTED.lock().unwrap_or_else(|e| e.into_inner()) = Some(ServerInfo {
            provider: self.kind(),
            redis_version,
            postgres_version,
        });
    }

    /// Which provider runs them.
    pub fn kind(&self) -> ProviderKind {
        match self.backend {
            Backend::Local(_) => ProviderKind::Local,
            Backend::Containers(_) => ProviderKind::Containers,
            Backend::External(_) => ProviderKind::External,
        }
    }

    /// This run's id (the `redfence.run` label of its containers).
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// `host:port` of a Redis node; `None` for an external setup without a
    /// replica.
    pub fn redis_addr(&self, node: RedisNode) -> Option<String> {
        match &self.backend {
            Backend::Local(s) => Some(s.redis_addr(node)),
            Backend::Containers(s) => Some(s.redis_addr(node)),
            Backend::External(s) => match node {
                RedisNode::Primary => Some(s.primary.clone()),
                RedisNode::Replica => s.replica.clone(),
                RedisNode::Master(_) => None,
            },
        }
    }

    /// `host:port` of PostgreSQL.
    pub fn postgres_addr(&self) -> String {
        match &self.backend {
            Backend::Local(s) => s.postgres_addr(),
            Backend::Containers(s) => s.postgres_addr(),
            Backend::External(s) => s.postgres.clone(),
        }
    }

    /// The database URL with its server at `addr` (a proxy, or
    /// [`Self::postgres_addr`] for a direct connection).
    pub fn postgres_url_via(&self, addr: &str) -> String {
        match &self.backend {
            Backend::External(s) => s.url_template.replace("{addr}", addr),
            _ => format!("postgres://postgres@{addr}/{}", self.database),
        }
    }

    /// Kills a Redis node (`kill -9`): its data is lost, except a snapshot
    /// a `BGSAVE` wrote, which its next start loads.
    pub async fn stop_redis(&mut self, node: RedisNode) -> Result<()> {
        match &mut self.backend {
            Backend::Local(s) => s.stop_redis(node).await,
            Backend::Containers(s) => s.stop_redis(node).await,
            Backend::External(_) => Err(external_cannot("stopping Redis")),
        }
    }

    /// Starts a stopped Redis node again on the same address: empty, or
    /// from the snapshot a `BGSAVE` wrote.
    pub async fn start_redis(&mut self, node: RedisNode) -> Result<()> {
        match &mut self.backend {
            Backend::Local(s) => s.start_redis(node).await,
            Backend::Containers(s) => s.start_redis(node).await,
            Backend::External(_) => Err(external_cannot("restarting Redis")),
        }
    }

    /// Starts independent Redis master `master` (masters start in order,
    /// from 1). External servers: refused.
    pub async fn start_master(&mut self, config: &ChaosConfig, master: usize) -> Result<()> {
        match &mut self.backend {
            Backend::Local(s) => s.start_master(master).await,
            Backend::Containers(s) => s.start_master(&config.images, master).await,
            Backend::External(_) => Err(external_cannot("several Redis masters")),
        }
    }

    /// Starts the sentinels (`sentinel::SENTINELS` of them) monitoring the
    /// primary at `primary`; their addresses. External servers: refused
    /// (their Sentinel, if any, is not ours to configure).
    pub async fn start_sentinels(
        &mut self,
        config: &ChaosConfig,
        primary: &str,
    ) -> Result<Vec<String>> {
        match &mut self.backend {
            Backend::Local(s) => s.start_sentinels(primary).await,
            Backend::Containers(s) => s.start_sentinels(&config.images, primary).await,
            Backend::External(_) => Err(external_cannot("a Sentinel failover")),
        }
    }

    /// Stops and removes everything, waiting for it.
    pub async fn shutdown(self) {
        match self.backend {
            Backend::Local(s) => s.shutdown().await,
            Backend::Containers(s) => s.shutdown().await,
            Backend::External(_) => {}
        }
    }
}

fn external_cannot(operation: &'static str) -> ChaosError {
    ChaosError::Unsupported {
        operation,
        provider: "external",
        why: "the servers are not ours to stop; use containers or local",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_external_urls() {
        assert_eq!(
            redis_url_addr("redis://10.1.2.3:6379/", "V").unwrap(),
            "10.1.2.3:6379"
        );
        assert!(redis_url_addr("redis://:secret@h:6379/", "V").is_err());
        let (addr, template) =
            postgres_url_parts("postgres://app:pw@db.internal:5432/app?sslmode=disable").unwrap();
        assert_eq!(addr, "db.internal:5432");
        assert_eq!(
            template.replace("{addr}", "127.0.0.1:1"),
            "postgres://app:pw@127.0.0.1:1/app?sslmode=disable"
        );
    }
}
