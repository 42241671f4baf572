//! The real world's topology and the operations a scenario's `World` calls.
//!
//! ```text
//!  worker i ──▶ proxy w{i}-redis ─────▶ Redis primary ──┐ (after failover:
//!                                                       │  the replica)
//!  worker i ──▶ proxy w{i}-postgres ──▶ PostgreSQL      │
//!                                                       ▼
//!  Redis replica ──▶ proxy replication ──▶ Redis primary (REPLICAOF)
//!
//!  worker i ──▶ proxy w{i}-redis-{m} ───▶ Redis master m (m = 1.., optional)
//! ```
//!
//! One proxy per worker and path, so a fault hits one worker's traffic; one
//! proxy on the replication link, so replication can be cut. A topology may
//! run up to [`MASTERS_MAX`] independent Redis masters
//! ([`RealCluster::start_with_masters`]), for locks that span several
//! (Redlock): master 0 is the primary above (its replica stays its own),
//! masters 1.. are servers of their own with no replica and no replication,
//! each with its `MONITOR` recorder and one proxy per worker
//! ([`Path::Master`]). Every Redis fault below that is not about
//! replication also hits one master alone (`*_master`, the path's faults
//! through [`Path::Master`]); master 0 is whichever node serves the
//! primary's role now. Faults are Toxiproxy operations (the embedded server
//! unless configured otherwise):
//!
//! | operation | how |
//! |---|---|
//! | partition / heal | proxy disabled / enabled: connections closed, new ones refused |
//! | drop replies | `timeout` toxic downstream, 0 ms: requests arrive and run, replies vanish |
//! | restore replies | toxic removed, then the proxy bounced: a connection that lost a reply is out of step for good, so it is closed and clients reconnect |
//! | latency | `latency` toxics on both streams (each way, as in the simulation) |
//! | stop / restart Redis | the current primary's (or master m's) process or container killed / started, empty or from its own last snapshot; the workers' proxies to it are disabled from the kill until its recorder is attached after the start, so a worker's connect is refused as it would be by a dead server (a live proxy would accept it and then close it: an indeterminate failure no direct client sees) |
//! | snapshot / clock jump | `BGSAVE` / every key's lifetime cut at once, on the primary or on master m |
//! | cut / restore replication | the replication proxy disabled / enabled |
//! | fail over (scripted, the default) | primary stopped (its proxies down, as above), `REPLICAOF NO ONE` on the replica, every worker's Redis proxy re-pointed at it and brought up |
//! | fail over (`REDFENCE_FAILOVER=sentinel`) | primary stopped; three Sentinels mark it down and promote the replica; each worker finds the new master through Sentinel and reaches it through its own proxy for that node (see below) |
//!
//! With Sentinel, each worker has a second Redis proxy, `w{i}-redis-replica`,
//! to the replica, held down until Sentinel has promoted it (no worker may
//! write to a replica, and none can before the recorder is attached again:
//! Sentinel's promotion closes every normal client, the monitor among
//! them). A worker asks Sentinel for the master whenever it connects and
//! dials that worker's proxy for the address Sentinel named
//! ([`crate::sentinel::AddressMap`]), so a fault on the worker's Redis path
//! reaches it before and after the failover. Faults on the Redis path act
//! on the proxy that leads to the current master; latency and dropped
//! replies are set on both.
//!
//! All operations take `&self` (state changes sit behind locks), so a world
//! can share one [`RealCluster`] between its driver and its workers.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use redfence_core::PgFencedStore;
use tokio::sync::Mutex;

use crate::config::{ChaosConfig, FailoverKind, ProviderKind, ToxiproxyChoice};
use crate::error::{ChaosError, Result};
use crate::faults::{Stream, ToxicSpec, Toxiproxy};
use crate::monitor::{self, Mark, Recorder, Snapshot, Tape};
use crate::provider::{RedisNode, Servers, MASTERS_MAX};
use crate::sentinel::{self, AddressMap, Announcements, FailoverStory};
use crate::toxiproxy::EmbeddedToxiproxy;
use crate::wait::{until_ready, Probe};

/// How long the replica may take to (re)connect and catch up.
pub const REPLICATION_TIMEOUT_MS: u64 = 30_000;
/// Timeout of one orchestration Redis command (not a worker's).
const ADMIN_COMMAND_TIMEOUT_MS: u64 = 5_000;
/// Most workers one topology gets (two proxies each, one more per extra
/// master, each a port).
pub const WORKERS_MAX: usize = 64;

/// One worker's path: to Redis or to the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Path {
    /// Worker ↔ Redis (follows failover): master 0.
    Redis,
    /// Worker ↔ PostgreSQL.
    Postgres,
    /// Worker ↔ independent Redis master `m`; `Master(0)` is [`Path::Redis`].
    Master(usize),
}

impl Path {
    /// The path to Redis master `master` (0: [`Path::Redis`]).
    pub fn master(master: usize) -> Self {
        if master == 0 {
            Self::Redis
        } else {
            Self::Master(master)
        }
    }

    /// Whether this is the path to the primary (master 0).
    fn is_primary(self) -> bool {
        matches!(self, Self::Redis | Self::Master(0))
    }

    fn suffix(self) -> String {
        match self {
            Self::Redis | Self::Master(0) => "redis".to_owned(),
            Self::Postgres => "postgres".to_owned(),
            // The same spelling as the simulation's host `redis-{m}`.
            Self::Master(m) => format!("redis-{m}"),
        }
    }
}

/// The name of a worker's proxy on a path (`w0-redis`, `w0-redis-2`): the
/// worker's one spelling, then the path.
pub fn proxy_name(worker: usize, path: Path) -> String {
    format!(
        "{}-{}",
        redfence_history::names::worker_name(worker),
        path.suffix()
    )
}

/// The replication link's proxy.
pub const REPLICATION_PROXY: &str = "replication";

/// With Sentinel: the name of a worker's proxy to the replica
/// (`w0-redis-replica`).
pub fn replica_proxy_name(worker: usize) -> String {
    format!("{}-replica", proxy_name(worker, Path::Redis))
}

/// Longest a Sentinel failover waits for the monitor connection Sentinel's
/// promotion closes.
const MONITOR_CLOSE_WAIT_MS: u64 = 3_000;

/// Sentinel's part of a topology.
struct SentinelSide {
    /// The sentinels' addresses.
    addrs: Vec<String>,
    /// What they announced.
    announcements: Announcements,
    /// Each worker's proxy to the replica (listen address).
    replica_listens: Vec<String>,
    /// Each worker's Redis path is partitioned now (the replica proxy stays
    /// down at the promotion).
    partitioned: Vec<AtomicBool>,
    /// The failover, once Sentinel has done it.
    story: std::sync::Mutex<Option<FailoverStory>>,
}

/// Which worker proxies are down, and why. A proxy is up only when nothing
/// holds it down: a partition and its server's stop are separate reasons,
/// so healing a partition while the server is down does not open a path
/// to a dead server, and a restart does not end a partition.
#[derive(Debug, Default)]
struct ProxiesDown {
    /// Per node (indexed by [`RedisNode::index`]): the proxies its stop took
    /// down, brought up again when it is started or failed over.
    by_stop: Vec<Vec<String>>,
    /// Proxies a partition fault holds down.
    by_partition: BTreeSet<String>,
}

impl ProxiesDown {
    fn held_by_stop(&self, proxy: &str) -> bool {
        self.by_stop.iter().flatten().any(|p| p == proxy)
    }
}

/// Mutable state: the servers (stop/start) and which node is primary.
struct State {
    servers: Servers,
    primary: RedisNode,
    /// Which nodes are stopped now (indexed by [`RedisNode::index`]).
    stopped: Vec<bool>,
}

/// What a node's `MONITOR` recorder holds at the end of a run (see
/// [`RealCluster::redis_tapes`]).
#[derive(Clone, Debug)]
pub struct NodeTape {
    /// The node.
    pub node: RedisNode,
    /// Everything it ran and what was done to it, in time order.
    pub tape: Tape,
    /// Its keyspace read directly right after everything before was on the
    /// tape, and when (Unix µs): `None` when the node is down at the end.
    pub end: Option<(i64, Snapshot)>,
}

/// One worker's proxies: where it dials each path.
struct WorkerListens {
    redis: String,
    postgres: String,
    /// To masters 1.. (index `m - 1`).
    masters: Vec<String>,
}

/// Redis primary + replica (+ independent masters) and PostgreSQL behind
/// per-worker proxies.
pub struct RealCluster {
    state: Mutex<State>,
    /// Why proxies are down (a plain lock: never held across an await).
    down: std::sync::Mutex<ProxiesDown>,
    /// The embedded Toxiproxy server, if we run one (kept for its drop).
    embedded: Option<EmbeddedToxiproxy>,
    toxiproxy: Toxiproxy,
    provider: ProviderKind,
    run_id: String,
    workers: usize,
    /// Listen address of each worker's proxies.
    listens: Vec<WorkerListens>,
    /// How many Redis masters (the primary included).
    masters: usize,
    /// Direct address of each node (indexed by [`RedisNode::index`]).
    redis_addrs: Vec<Option<String>>,
    postgres_url: String,
    worker_postgres_urls: Vec<String>,
    /// Set the moment a failover starts re-pointing the workers' proxies at
    /// the replica (see [`PrimaryWatch`]).
    replica_serves: Arc<AtomicBool>,
    /// One `MONITOR` recorder per node (indexed by [`RedisNode::index`]):
    /// the Redis-side truth (`monitor.rs`).
    recorders: Vec<Recorder>,
    /// Sentinel, when it decides failovers.
    sentinel: Option<SentinelSide>,
}

/// Where the workers' Redis traffic goes *now*, readable from anywhere
/// without the cluster's lock: flipped to the replica before a failover
/// re-points the first proxy, so a reader that just saw a worker's reply
/// from the new primary never looks at the old one.
#[derive(Clone, Debug)]
pub struct PrimaryWatch {
    replica_serves: Arc<AtomicBool>,
    urls: [Option<String>; 2],
}

impl PrimaryWatch {
    /// The direct URL of the node the workers' proxies point at now.
    pub fn url(&self) -> Option<String> {
        let node = usize::from(self.replica_serves.load(Ordering::SeqCst));
        self.urls[node].clone()
    }
}

impl std::fmt::Debug for RealCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RealCluster")
            .field("provider", &self.provider.name())
            .field("run_id", &self.run_id)
            .field("workers", &self.workers)
            .field("toxiproxy", &self.toxiproxy.addr())
            .finish()
    }
}

/// Runs one command on a Redis node directly (not through a proxy).
async fn admin_command<T: redis::FromRedisValue>(
    addr: &str,
    node: RedisNode,
    command: redis::Cmd,
) -> Result<T> {
    let node_name = node.name();
    let run = async {
        let client = redis::Client::open(format!("redis://{addr}/"))?;
        let mut conn = client.get_multiplexed_async_connection().await?;
        command.query_async::<T>(&mut conn).await
    };
    match tokio::time::timeout(Duration::from_millis(ADMIN_COMMAND_TIMEOUT_MS), run).await {
        Ok(result) => result.map_err(|source| ChaosError::Redis {
            node: node_name,
            source,
        }),
        Err(_) => Err(ChaosError::NotReady {
            server: node_name,
            waited: Duration::from_millis(ADMIN_COMMAND_TIMEOUT_MS),
            last_error: "command got no answer".into(),
        }),
    }
}

/// [`monitor::snapshot`] of a node, directly, with the orchestration's
/// timeout.
async fn read_snapshot(addr: &str, node: RedisNode) -> Result<Snapshot> {
    let started = std::time::Instant::now();
    let run = async {
        let client = redis::Client::open(format!("redis://{addr}/"))?;
        let mut conn = client.get_multiplexed_async_connection().await?;
        let mut snap = monitor::snapshot(&mut conn).await?;
        snap.read_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        Ok(snap)
    };
    match tokio::time::timeout(Duration::from_millis(ADMIN_COMMAND_TIMEOUT_MS), run).await {
        Ok(result) => result.map_err(|source| ChaosError::Redis {
            node: node.name(),
            source,
        }),
        Err(_) => Err(ChaosError::NotReady {
            server: node.name(),
            waited: Duration::from_millis(ADMIN_COMMAND_TIMEOUT_MS),
            last_error: "reading its keyspace got no answer".into(),
        }),
    }
}

/// Cuts every key's remaining lifetime by `ARGV[1]` ms, atomically (see
/// `RealCluster::emulate_redis_clock_jump`). Bounded by the keyspace, which
/// SCAN walks once; returns how many keys had a lifetime.
const CLOCK_JUMP_SCRIPT: &str = r#"
local jump = tonumber(ARGV[1])
local cursor = "0"
local cut = 0
repeat
  local page = redis.call('SCAN', cursor, 'COUNT', 1000)
  cursor = page[1]
  for _, key in ipairs(page[2]) do
    local left = redis.call('PTTL', key)
    if left > 0 then
      redis.call('PEXPIRE', key, math.max(left - jump, 1))
      cut = cut + 1
    end
  end
until cursor == "0"
return cut
"#;

/// Longest a `BGSAVE` may take (a lock run's keyspace saves in
/// milliseconds; a fork on a loaded machine in tens).
const BGSAVE_TIMEOUT_MS: u64 = 10_000;
/// Between two looks at whether a `BGSAVE` finished.
const BGSAVE_POLL_MS: u64 = 5;
/// Redis's refusal of a BGSAVE while another RDB child runs.
const BGSAVE_IN_PROGRESS: &str = "Background save already in progress";

/// `BGSAVE` on the node at `addr`, waited for: done when `INFO
/// persistence` counts one more successful save than before it began.
async fn bgsave(addr: &str, node: RedisNode) -> Result<()> {
    let saves = |info: String| -> Option<u64> { info_field(&info, "rdb_saves")?.parse().ok() };
    let info = || {
        let mut command = redis::cmd("INFO");
        command.arg("persistence");
        command
    };
    // Redis refuses a BGSAVE while an RDB child already runs ("Background
    // save already in progress"), SCHEDULE or not: SCHEDULE only queues
    // behind other kinds of child (an AOF rewrite). A replica's full sync
    // forks such a child after every restart of the primary, and its
    // snapshot may predate what the caller just wrote, so wait for it to end
    // and ask again. The count of saves is read just before the BGSAVE that
    // is taken, so the other child's save is not mistaken for ours. Bounded
    // by the timeout.
    let mut refused_polls = 0;
    let before = loop {
        let before = saves(admin_command::<String>(addr, node, info()).await?);
        let Some(before) = before else {
            return Err(ChaosError::Process {
                server: node.name(),
                message: "INFO persistence has no rdb_saves (Redis 7.0 or later is needed)".into(),
            });
        };
        let mut save = redis::cmd("BGSAVE");
        save.arg("SCHEDULE");
        match admin_command::<()>(addr, node, save).await {
            Ok(()) => break before,
            Err(ChaosError::Redis { source, .. })
                if refused_polls < BGSAVE_TIMEOUT_MS / BGSAVE_POLL_MS
                    && source.to_string().contains(BGSAVE_IN_PROGRESS) =>
            {
                refused_polls += 1;
                tokio::time::sleep(Duration::from_millis(BGSAVE_POLL_MS)).await;
            }
            Err(e) => return Err(e),
        }
    };
    // Bounded by the timeout.
    for _ in 0..BGSAVE_TIMEOUT_MS / BGSAVE_POLL_MS {
        let now = admin_command::<String>(addr, node, info()).await?;
        let done = saves(now.clone()).is_some_and(|n| n > before)
            && info_field(&now, "rdb_bgsave_in_progress") == Some("0");
        if done {
            return match info_field(&now, "rdb_last_bgsave_status") {
                Some("ok") => Ok(()),
                status => Err(ChaosError::Process {
                    server: node.name(),
                    message: format!("BGSAVE failed (rdb_last_bgsave_status {status:?})"),
                }),
            };
        }
        tokio::time::sleep(Duration::from_millis(BGSAVE_POLL_MS)).await;
    }
    Err(ChaosError::NotReady {
        server: node.name(),
        waited: Duration::from_millis(BGSAVE_TIMEOUT_MS),
        last_error: "BGSAVE did not finish".into(),
    })
}

/// Longest a cut waits for the replica to notice its link is gone, and,
/// before that, for it to catch up with what the primary had written.
const CUT_WAIT_MS: u64 = 10_000;

/// `INFO replication` of `node` at `addr`, as a readiness probe sees it
/// (an error is "not yet").
async fn replication_info(addr: &str, node: RedisNode) -> std::result::Result<String, Probe> {
    let mut cmd = redis::cmd("INFO");
    cmd.arg("replication");
    admin_command::<String>(addr, node, cmd)
        .await
        .map_err(|e| Probe::NotYet(e.to_string()))
}

/// A field of `INFO replication`.
fn info_field<'a>(info: &'a str, field: &str) -> Option<&'a str> {
    info.lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .map(str::trim)
}

impl RealCluster {
    /// Builds a cluster for `workers` workers from the `REDFENCE_*`
    /// environment (README, "Real-server world").
    pub async fn start(workers: usize) -> Result<Self> {
        Self::start_with(&ChaosConfig::from_env()?, workers).await
    }

    /// Builds a cluster for `workers` workers: servers, proxies, replication
    /// through its proxy, the database with the core's migrations.
    pub async fn start_with(config: &ChaosConfig, workers: usize) -> Result<Self> {
        Self::start_with_masters(config, workers, 1).await
    }

    /// [`Self::start_with`] with `masters` independent Redis masters (1 to
    /// [`MASTERS_MAX`]; the primary is master 0): masters 1.. are servers of
    /// their own, each recorded and behind one proxy per worker. Refused by
    /// the external provider (its servers are not ours to add to).
    pub async fn start_with_masters(
        config: &ChaosConfig,
        workers: usize,
        masters: usize,
    ) -> Result<Self> {
        if workers == 0 || workers > WORKERS_MAX {
            return Err(ChaosError::BadConfig {
                var: "workers",
                value: workers.to_string(),
                expected: "1 to 64 workers",
            });
        }
        if masters == 0 || masters > MASTERS_MAX {
            return Err(ChaosError::BadConfig {
                var: "masters",
                value: masters.to_string(),
                expected: "1 to 7 Redis masters",
            });
        }
        if masters > 1 && config.provider == Some(ProviderKind::External) {
            return Err(ChaosError::Unsupported {
                operation: "several Redis masters",
                provider: "external",
                why: "its servers are not ours to add to; use containers or local",
            });
        }
        let mut servers = Servers::start(config).await?;
        for master in 1..masters {
            if let Err(error) = servers.start_master(config, master).await {
                servers.shutdown().await;
                return Err(error);
            }
        }
        let (embedded, toxiproxy) = match &config.toxiproxy {
            ToxiproxyChoice::Embedded => {
                let server = EmbeddedToxiproxy::start()?;
                let api = Toxiproxy::new(server.addr());
                (Some(server), api)
            }
            ToxiproxyChoice::Running(addr) => {
                let addr: SocketAddr = addr.parse().map_err(|_| ChaosError::BadConfig {
                    var: crate::config::ENV_TOXIPROXY_ADDR,
                    value: addr.clone(),
                    expected: "ip:port of a running Toxiproxy API",
                })?;
                (None, Toxiproxy::new(addr))
            }
            ToxiproxyChoice::Container => {
                return Err(ChaosError::Unsupported {
                    operation: "REDFENCE_TOXIPROXY=container",
                    provider: "this build",
                    why: "no Toxiproxy image is available to test it against; run Toxiproxy \
                          yourself and set REDFENCE_TOXIPROXY_ADDR, or use the embedded server",
                })
            }
        };
        toxiproxy.version().await?;
        // Primary, replica, then masters 1.. ([`RedisNode::index`] order).
        let redis_addrs: Vec<Option<String>> = (0..masters + 1)
            .map(|index| servers.redis_addr(RedisNode::at(index)))
            .collect();
        let mut master_addrs = Vec::with_capacity(masters - 1);
        for master in 1..masters {
            let node = RedisNode::Master(master);
            master_addrs.push(redis_addrs[node.index()].clone().ok_or_else(|| {
                ChaosError::toxiproxy("setup", format!("no address for {}", node.name()))
            })?);
        }
        let primary = redis_addrs[0].clone().ok_or_else(|| {
            ChaosError::toxiproxy("setup", "the provider gave no Redis primary address")
        })?;
        let postgres_addr = servers.postgres_addr();
        let postgres_url = servers.postgres_url_via(&postgres_addr);
        let run_id = servers.run_id().to_owned();
        let provider = servers.kind();
        // Recording starts before any proxy exists, so no worker command
        // can precede it; what an external server already holds is read
        // into the tape first.
        let recorders: Vec<Recorder> = redis_addrs.iter().map(|_| Recorder::new()).collect();
        for (index, addr) in redis_addrs.iter().enumerate() {
            let node = RedisNode::at(index);
            if let Some(addr) = addr {
                recorders[node.index()].attach(node.name(), addr).await?;
                let at_us = monitor::unix_us_now();
                let snap = read_snapshot(addr, node).await?;
                recorders[node.index()].mark_at(at_us, Mark::Loaded(snap));
            }
        }

        let mut listens = Vec::with_capacity(workers);
        for worker in 0..workers {
            let redis = toxiproxy
                .create_proxy(&proxy_name(worker, Path::Redis), "127.0.0.1:0", &primary)
                .await?;
            let postgres = toxiproxy
                .create_proxy(
                    &proxy_name(worker, Path::Postgres),
                    "127.0.0.1:0",
                    &postgres_addr,
                )
                .await?;
            let mut to_masters = Vec::with_capacity(master_addrs.len());
            for (m, addr) in master_addrs.iter().enumerate() {
                let name = proxy_name(worker, Path::Master(m + 1));
                let proxy = toxiproxy.create_proxy(&name, "127.0.0.1:0", addr).await?;
                to_masters.push(proxy.listen);
            }
            listens.push(WorkerListens {
                redis: redis.listen,
                postgres: postgres.listen,
                masters: to_masters,
            });
        }
        let worker_postgres_urls = listens
            .iter()
            .map(|l| servers.postgres_url_via(&l.postgres))
            .collect();
        let mut cluster = Self {
            state: Mutex::new(State {
                servers,
                primary: RedisNode::Primary,
                stopped: vec![false; redis_addrs.len()],
            }),
            down: std::sync::Mutex::new(ProxiesDown {
                by_stop: vec![Vec::new(); redis_addrs.len()],
                by_partition: BTreeSet::new(),
            }),
            embedded,
            toxiproxy,
            provider,
            run_id,
            workers,
            listens,
            masters,
            redis_addrs,
            postgres_url,
            worker_postgres_urls,
            replica_serves: Arc::new(AtomicBool::new(false)),
            recorders,
            sentinel: None,
        };
        if let Some(replica) = &cluster.redis_addrs[1] {
            let link = cluster
                .toxiproxy
                .create_proxy(REPLICATION_PROXY, "127.0.0.1:0", &primary)
                .await?;
            let (host, port) = link
                .listen
                .rsplit_once(':')
                .ok_or_else(|| ChaosError::toxiproxy("replication proxy", "bad listen address"))?;
            let mut replicaof = redis::cmd("REPLICAOF");
            replicaof.arg(host).arg(port);
            admin_command::<()>(replica, RedisNode::Replica, replicaof).await?;
        }
        PgFencedStore::connect(&cluster.postgres_url)
            .await
            .map_err(|e| ChaosError::Postgres(format!("migrations: {e}")))?
            .pool()
            .close()
            .await;
        if cluster.redis_addrs[1].is_some() {
            cluster.wait_for_replication(REPLICATION_TIMEOUT_MS).await?;
        }
        if config.failover == FailoverKind::Sentinel {
            let side = cluster.start_sentinel(config, &primary).await?;
            cluster.sentinel = Some(side);
        }
        Ok(cluster)
    }

    /// Starts the sentinels once replication runs (so they find the replica
    /// at once), the workers' replica proxies (down), and waits until every
    /// sentinel knows its peers and the replica: before that a failover
    /// could not reach a quorum.
    async fn start_sentinel(
        &mut self,
        config: &ChaosConfig,
        primary: &str,
    ) -> Result<SentinelSide> {
        let replica = self.node_addr(RedisNode::Replica)?.to_owned();
        let addrs = self
            .state
            .get_mut()
            .servers
            .start_sentinels(config, primary)
            .await?;
        let mut replica_listens = Vec::with_capacity(self.workers);
        for worker in 0..self.workers {
            let name = replica_proxy_name(worker);
            let proxy = self
                .toxiproxy
                .create_proxy(&name, "127.0.0.1:0", &replica)
                .await?;
            self.toxiproxy.set_enabled(&name, false).await?;
            replica_listens.push(proxy.listen);
        }
        for addr in &addrs {
            let addr = addr.clone();
            until_ready(
                "redis-sentinel discovery",
                sentinel::DISCOVERY_TIMEOUT_MS,
                || {
                    let addr = addr.clone();
                    async move {
                        match sentinel::known_peers(&addr).await {
                            Ok((peers, replicas))
                                if peers + 1 >= sentinel::SENTINELS && replicas >= 1 =>
                            {
                                Ok(())
                            }
                            Ok((peers, replicas)) => Err(Probe::NotYet(format!(
                                "{addr} knows {peers} other sentinel(s) and {replicas} replica(s)"
                            ))),
                            Err(e) => Err(Probe::NotYet(e.to_string())),
                        }
                    }
                },
            )
            .await?;
        }
        let announcements = Announcements::subscribe(&addrs).await?;
        Ok(SentinelSide {
            addrs,
            announcements,
            replica_listens,
            partitioned: (0..self.workers).map(|_| AtomicBool::new(false)).collect(),
            story: std::sync::Mutex::new(None),
        })
    }

    /// Who decides a failover in this topology.
    pub fn failover_kind(&self) -> FailoverKind {
        if self.sentinel.is_some() {
            FailoverKind::Sentinel
        } else {
            FailoverKind::Scripted
        }
    }

    /// With Sentinel: how worker `worker` finds the master and reaches it
    /// through its own proxies; `None` with the scripted failover (the
    /// worker's one proxy follows the failover).
    pub fn worker_address_map(&self, worker: usize) -> Option<AddressMap> {
        let side = self.sentinel.as_ref()?;
        let listens = self.listens.get(worker)?;
        let mut routes = Vec::with_capacity(2);
        if let Some(primary) = &self.redis_addrs[0] {
            routes.push((primary.clone(), listens.redis.clone()));
        }
        if let (Some(replica), Some(listen)) =
            (&self.redis_addrs[1], side.replica_listens.get(worker))
        {
            routes.push((replica.clone(), listen.clone()));
        }
        Some(AddressMap {
            sentinels: side.addrs.clone(),
            routes,
        })
    }

    /// With Sentinel, once it has failed over: what it did, in words, times
    /// in ms from `zero_us` (Unix µs).
    pub fn sentinel_failover(&self, zero_us: i64) -> Option<String> {
        let side = self.sentinel.as_ref()?;
        let story = side
            .story
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()?;
        Some(story.describe(zero_us, RedisNode::Replica.name()))
    }

    /// With Sentinel, once it has failed over: its steps as timed events
    /// (ms from `zero_us`, Unix µs); empty otherwise.
    pub fn sentinel_events(&self, zero_us: i64) -> Vec<(u64, String)> {
        let Some(side) = self.sentinel.as_ref() else {
            return Vec::new();
        };
        let story = side.story.lock().unwrap_or_else(|e| e.into_inner()).clone();
        story
            .map(|story| story.events(zero_us, RedisNode::Replica.name()))
            .unwrap_or_default()
    }

    /// Everything the sentinels announced so far, in arrival order (empty
    /// with the scripted failover).
    pub fn sentinel_announcements(&self) -> Vec<sentinel::Announcement> {
        self.sentinel
            .as_ref()
            .map(|side| side.announcements.seen())
            .unwrap_or_default()
    }

    /// The sentinels' addresses (empty with the scripted failover).
    pub fn sentinel_addrs(&self) -> Vec<String> {
        self.sentinel
            .as_ref()
            .map(|side| side.addrs.clone())
            .unwrap_or_default()
    }

    /// Which provider runs the servers.
    pub fn provider(&self) -> ProviderKind {
        self.provider
    }

    /// This run's id (containers carry it as label `redfence.run`).
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// How many workers the topology has proxies for.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// How many Redis masters it runs (the primary is master 0).
    pub fn masters(&self) -> usize {
        self.masters
    }

    /// The Toxiproxy API in use (for direct `toxiproxy_rust` calls).
    pub fn toxiproxy(&self) -> &Toxiproxy {
        &self.toxiproxy
    }

    /// Whether the Toxiproxy server is ours (embedded) rather than external.
    pub fn toxiproxy_is_embedded(&self) -> bool {
        self.embedded.is_some()
    }

    fn listen(&self, worker: usize, path: Path) -> Result<&str> {
        let listens = self.listens.get(worker).ok_or(ChaosError::NoSuchWorker {
            worker,
            workers: self.workers,
        })?;
        Ok(match path {
            Path::Redis | Path::Master(0) => &listens.redis,
            Path::Postgres => &listens.postgres,
            Path::Master(m) => listens.masters.get(m - 1).ok_or(ChaosError::NoSuchMaster {
                master: m,
                masters: self.masters,
            })?,
        })
    }

    fn proxy(&self, worker: usize, path: Path) -> Result<String> {
        self.listen(worker, path)?;
        Ok(proxy_name(worker, path))
    }

    /// `redis://…/` of worker `worker`'s Redis proxy (follows failover).
    pub fn worker_redis_url(&self, worker: usize) -> Result<String> {
        Ok(format!("redis://{}/", self.listen(worker, Path::Redis)?))
    }

    /// `redis://…/` of worker `worker`'s proxy to Redis master `master`
    /// (0: [`Self::worker_redis_url`], which follows failover).
    pub fn worker_master_url(&self, worker: usize, master: usize) -> Result<String> {
        Ok(format!(
            "redis://{}/",
            self.listen(worker, Path::master(master))?
        ))
    }

    /// `postgres://…` of worker `worker`'s store proxy.
    pub fn worker_postgres_url(&self, worker: usize) -> Result<String> {
        self.listen(worker, Path::Postgres)?;
        Ok(self.worker_postgres_urls[worker].clone())
    }

    /// The database, directly (ground truth: bypasses every proxy).
    pub fn postgres_url(&self) -> &str {
        &self.postgres_url
    }

    /// `redis://…/` of a node, directly (ground truth); `None` for an
    /// external setup without a replica.
    pub fn redis_node_url(&self, node: RedisNode) -> Option<String> {
        self.redis_addrs
            .get(node.index())?
            .as_ref()
            .map(|addr| format!("redis://{addr}/"))
    }

    /// `redis://…/` of Redis master `master`, directly (ground truth):
    /// master 0 is the node serving the primary's role now.
    pub async fn master_url(&self, master: usize) -> Result<String> {
        let node = {
            let state = self.state.lock().await;
            self.master_node(&state, master)?
        };
        Ok(format!("redis://{}/", self.node_addr(node)?))
    }

    /// A handle on where the workers' Redis traffic goes now, for readers
    /// outside the cluster's lock (see [`PrimaryWatch`]).
    pub fn primary_watch(&self) -> PrimaryWatch {
        PrimaryWatch {
            replica_serves: self.replica_serves.clone(),
            urls: [
                self.redis_node_url(RedisNode::Primary),
                self.redis_node_url(RedisNode::Replica),
            ],
        }
    }

    /// The node the workers' Redis proxies point at now.
    pub async fn current_primary(&self) -> RedisNode {
        self.state.lock().await.primary
    }

    /// The node that is master `master` now: the current primary for 0.
    fn master_node(&self, state: &State, master: usize) -> Result<RedisNode> {
        match master {
            0 => Ok(state.primary),
            m if m < self.masters => Ok(RedisNode::Master(m)),
            _ => Err(ChaosError::NoSuchMaster {
                master,
                masters: self.masters,
            }),
        }
    }

    fn node_addr(&self, node: RedisNode) -> Result<&str> {
        self.redis_addrs
            .get(node.index())
            .and_then(Option::as_deref)
            .ok_or(ChaosError::Unsupported {
                operation: "replication and failover",
                provider: "external",
                why: "no replica: set REDFENCE_CHAOS_REDIS_REPLICA_URL",
            })
    }

    /// Cuts worker `worker` off from `path`: its proxy goes down (live
    /// connections closed, new ones refused).
    pub async fn partition(&self, worker: usize, path: Path) -> Result<()> {
        let proxy = self.serving_proxy(worker, path)?;
        if let (Some(side), true) = (&self.sentinel, path.is_primary()) {
            side.partitioned[worker].store(true, Ordering::SeqCst);
        }
        self.down().by_partition.insert(proxy.clone());
        self.toxiproxy.set_enabled(&proxy, false).await
    }

    /// Ends a partition.
    pub async fn heal(&self, worker: usize, path: Path) -> Result<()> {
        let proxy = self.serving_proxy(worker, path)?;
        if let (Some(side), true) = (&self.sentinel, path.is_primary()) {
            side.partitioned[worker].store(false, Ordering::SeqCst);
        }
        let still_down = {
            let mut down = self.down();
            down.by_partition.remove(&proxy);
            down.held_by_stop(&proxy)
        };
        if still_down {
            // Its server is down: the proxy comes up with it.
            return Ok(());
        }
        self.toxiproxy.set_enabled(&proxy, true).await
    }

    fn down(&self) -> std::sync::MutexGuard<'_, ProxiesDown> {
        self.down.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes down every worker's proxy to master `master` (the one serving
    /// its traffic now), which `node`'s stop holds down until
    /// [`Self::release_proxies`].
    async fn hold_proxies(&self, node: RedisNode, master: usize) -> Result<()> {
        let path = Path::master(master);
        for worker in 0..self.workers {
            let proxy = self.serving_proxy(worker, path)?;
            let up = {
                let mut down = self.down();
                let up = !down.by_partition.contains(&proxy) && !down.held_by_stop(&proxy);
                down.by_stop[node.index()].push(proxy.clone());
                up
            };
            if up {
                self.toxiproxy.set_enabled(&proxy, false).await?;
            }
        }
        Ok(())
    }

    /// Brings up the proxies `node`'s stop held down, except those a
    /// partition still holds.
    async fn release_proxies(&self, node: RedisNode) -> Result<()> {
        let held = std::mem::take(&mut self.down().by_stop[node.index()]);
        for proxy in held {
            let up = {
                let down = self.down();
                !down.by_partition.contains(&proxy) && !down.held_by_stop(&proxy)
            };
            if up {
                self.toxiproxy.set_enabled(&proxy, true).await?;
            }
        }
        Ok(())
    }

    /// The proxy that carries worker `worker`'s traffic on `path` now: with
    /// Sentinel, after the failover, its proxy to the promoted replica.
    fn serving_proxy(&self, worker: usize, path: Path) -> Result<String> {
        let proxy = self.proxy(worker, path)?;
        if path.is_primary()
            && self.sentinel.is_some()
            && self.replica_serves.load(Ordering::SeqCst)
        {
            return Ok(replica_proxy_name(worker));
        }
        Ok(proxy)
    }

    /// Every proxy of worker `worker` on `path` (with Sentinel, two on the
    /// Redis path).
    fn all_proxies(&self, worker: usize, path: Path) -> Result<Vec<String>> {
        let proxy = self.proxy(worker, path)?;
        if path.is_primary() && self.sentinel.is_some() {
            return Ok(vec![proxy, replica_proxy_name(worker)]);
        }
        Ok(vec![proxy])
    }

    /// Requests from worker `worker` on `path` arrive and run; the replies
    /// are dropped (connections stay open: the client times out).
    ///
    /// With the embedded server, installing the fault closes the path's
    /// live connections (a toxic change restarts the proxy: see
    /// `toxiproxy::registry`), so the lost reply hits requests sent on a
    /// connection opened afterwards. A client whose connect waits for an
    /// answer (PostgreSQL's startup; redis-rs's `CLIENT SETINFO`, unless
    /// skipped) cannot open one: the path is then as good as cut.
    pub async fn drop_replies(&self, worker: usize, path: Path) -> Result<()> {
        let toxic = ToxicSpec::Timeout {
            stream: Stream::Downstream,
            timeout_ms: 0,
        };
        for proxy in self.all_proxies(worker, path)? {
            self.toxiproxy.add_toxic(&proxy, toxic).await?;
        }
        Ok(())
    }

    /// Replies flow again. Connections that lost a reply are closed (a
    /// RESP or Postgres connection that lost a reply is out of step for
    /// good), so clients reconnect.
    pub async fn restore_replies(&self, worker: usize, path: Path) -> Result<()> {
        let toxic = ToxicSpec::Timeout {
            stream: Stream::Downstream,
            timeout_ms: 0,
        };
        for proxy in self.all_proxies(worker, path)? {
            self.toxiproxy
                .remove_toxic(&proxy, &toxic.toxic_name())
                .await?;
        }
        let proxy = self.serving_proxy(worker, path)?;
        self.toxiproxy.set_enabled(&proxy, false).await?;
        self.toxiproxy.set_enabled(&proxy, true).await
    }

    /// Sets the added latency on worker `worker`'s `path`, each way
    /// (a round trip gains twice `latency_ms`); 0 removes it.
    pub async fn set_latency(&self, worker: usize, path: Path, latency_ms: u32) -> Result<()> {
        for proxy in self.all_proxies(worker, path)? {
            for stream in [Stream::Upstream, Stream::Downstream] {
                let toxic = ToxicSpec::Latency {
                    stream,
                    latency_ms,
                    jitter_ms: 0,
                };
                self.toxiproxy
                    .remove_toxic(&proxy, &toxic.toxic_name())
                    .await?;
                if latency_ms > 0 {
                    self.toxiproxy.add_toxic(&proxy, toxic).await?;
                }
            }
        }
        Ok(())
    }

    /// Kills the current primary (`kill -9`): what it held is lost, except
    /// what its last [`RealCluster::snapshot_redis`] wrote to disk.
    pub async fn stop_redis(&self) -> Result<()> {
        self.stop_master(0).await
    }

    /// Kills Redis master `master` (`kill -9`, 0: the current primary), as
    /// [`Self::stop_redis`] does the primary: what it held is lost, except
    /// what its last [`Self::snapshot_master`] wrote to disk.
    pub async fn stop_master(&self, master: usize) -> Result<()> {
        let mut state = self.state.lock().await;
        let node = self.master_node(&state, master)?;
        let stopped = self.stop_node(&mut state, node).await;
        // Also after a failed stop: a proxy held down needlessly comes up
        // at the restart.
        self.hold_proxies(node, master).await?;
        stopped
    }

    /// Stops `node` and marks its tape once it is down, so every command
    /// it ran comes before the mark.
    async fn stop_node(&self, state: &mut State, node: RedisNode) -> Result<()> {
        self.recorders[node.index()].expect_close();
        let stopped = state.servers.stop_redis(node).await;
        // Also after a failed stop: it may have got halfway, and a mark
        // for a server that still runs only closes holdings early.
        state.stopped[node.index()] = true;
        self.recorders[node.index()].mark(Mark::Stopped);
        stopped
    }

    /// Master `master` (0: the current primary) and its direct address, for
    /// `operation` on the server itself: refused for external servers,
    /// which are not ours to change.
    async fn own_master(
        &self,
        operation: &'static str,
        master: usize,
    ) -> Result<(RedisNode, String)> {
        if self.provider == ProviderKind::External {
            return Err(ChaosError::Unsupported {
                operation,
                provider: "external",
                why: "the servers are not ours to change; use containers or local",
            });
        }
        let node = {
            let state = self.state.lock().await;
            self.master_node(&state, master)?
        };
        Ok((node, self.node_addr(node)?.to_owned()))
    }

    /// `BGSAVE` on the current primary, waited for: its keys as of now are
    /// on disk, and its next restart loads them — a crash after this loses
    /// exactly the writes made since, as a machine running `redis-server`
    /// with snapshot-only persistence does. Refused for external servers.
    pub async fn snapshot_redis(&self) -> Result<()> {
        self.snapshot_master(0).await
    }

    /// [`Self::snapshot_redis`] on Redis master `master` (0: the current
    /// primary): its next restart loads what it held now.
    pub async fn snapshot_master(&self, master: usize) -> Result<()> {
        let (node, addr) = self
            .own_master("a Redis snapshot and restart", master)
            .await?;
        bgsave(&addr, node).await
    }

    /// Emulates a forward jump of `jump_ms` of the current primary's clock
    /// by its effect on expiry: one script cuts every key's remaining
    /// lifetime by `jump_ms` (a key left with none expires a millisecond
    /// later, as an expiry, not a deletion), atomically, as a real jump
    /// moves every deadline at once. Leases set afterwards last their
    /// length, as after a real jump. Why an emulation: the server's clock
    /// cannot be moved here (no privilege to set the system clock; a time
    /// namespace does not move the wall clock Redis expires by; Debian's
    /// libfaketime 0.9.10 makes Debian's redis-server fail at start). What
    /// it does not reproduce: absolute times (`TIME`, `PXAT`) stay right.
    pub async fn emulate_redis_clock_jump(&self, jump_ms: u64) -> Result<()> {
        self.emulate_master_clock_jump(0, jump_ms).await
    }

    /// [`Self::emulate_redis_clock_jump`] on Redis master `master` alone
    /// (0: the current primary): the other masters' keys keep their
    /// lifetimes, as only one server's clock jumped.
    pub async fn emulate_master_clock_jump(&self, master: usize, jump_ms: u64) -> Result<()> {
        let (node, addr) = self.own_master("a Redis clock jump", master).await?;
        let mut jump = redis::cmd("EVAL");
        jump.arg(CLOCK_JUMP_SCRIPT).arg(0).arg(jump_ms);
        admin_command::<i64>(&addr, node, jump).await?;
        Ok(())
    }

    /// Starts the current primary again on the same address — from its
    /// last snapshot, or empty when it took none — and has its recorder
    /// attached again, and told what the server loaded, before returning.
    pub async fn restart_redis(&self) -> Result<()> {
        self.restart_master(0).await
    }

    /// [`Self::restart_redis`] for Redis master `master` (0: the current
    /// primary): from its own last snapshot, or empty; the workers' proxies
    /// to it are held down until its recorder is attached again.
    pub async fn restart_master(&self, master: usize) -> Result<()> {
        let mut state = self.state.lock().await;
        let primary = self.master_node(&state, master)?;
        if !state.stopped[primary.index()] {
            // Running: nothing to start (as the provider does).
            return Ok(());
        }
        let recorder = &self.recorders[primary.index()];
        // No worker may run a command before the recorder is attached
        // again, or the tape would miss it: the workers' proxies to it have
        // been down since its stop (`hold_proxies`) and come up once it
        // records.
        debug_assert_eq!(
            self.down().by_stop[primary.index()].len(),
            self.workers,
            "a stopped master's proxies are held down"
        );
        recorder.mark(Mark::Started);
        let started = state.servers.start_redis(primary).await;
        if started.is_ok() {
            state.stopped[primary.index()] = false;
            let addr = self.node_addr(primary)?;
            if let Err(error) = recorder.attach(primary.name(), addr).await {
                recorder.gap(format!(
                    "{}: not recorded after its restart ({error})",
                    primary.name()
                ));
            }
            // What it loaded from disk (nothing, without a snapshot), read
            // while no worker can reach it: the tape goes on from there.
            let at_us = monitor::unix_us_now();
            match read_snapshot(addr, primary).await {
                Ok(snap) => recorder.mark_at(at_us, Mark::Loaded(snap)),
                Err(error) => recorder.gap(format!(
                    "{}: what it loaded at its restart could not be read ({error})",
                    primary.name()
                )),
            }
        }
        if started.is_ok() {
            self.release_proxies(primary).await?;
        }
        started
    }

    /// Writes stop reaching the replica (its link's proxy goes down).
    /// Writes the primary had made before the cut reach the replica first.
    pub async fn cut_replication(&self) -> Result<()> {
        let replica = self.node_addr(RedisNode::Replica)?.to_owned();
        self.replica_catch_up(CUT_WAIT_MS).await?;
        self.toxiproxy.set_enabled(REPLICATION_PROXY, false).await?;
        // The embedded proxy can lose track of a live connection (a noxious
        // race), and then disabling it leaves the replica's link open: close
        // it from the replica's side too. It reconnects through the disabled
        // proxy, which refuses, so the link stays down until restored.
        let mut kill = redis::cmd("CLIENT");
        kill.arg("KILL").arg("TYPE").arg("master");
        let _ = admin_command::<i64>(&replica, RedisNode::Replica, kill).await;
        // The proxy closes the link asynchronously: until the replica has
        // seen it drop, a write could still slip through (seen in CI), so
        // the cut is only done once the replica says its link is down.
        until_ready("replication cut", CUT_WAIT_MS, || {
            let replica = replica.clone();
            async move {
                let info = replication_info(&replica, RedisNode::Replica).await?;
                match info_field(&info, "master_link_status") {
                    Some("up") => Err(Probe::NotYet("link still up".to_owned())),
                    _ => Ok(()),
                }
            }
        })
        .await
    }

    /// Waits until the replica has what the primary had written when this
    /// was called (its offset then), so that a cut divides the writes at the
    /// moment the harness decided it, as the simulation's does: there a
    /// write is on the replica when its reply reaches the worker (the two
    /// hops take the same time). On real servers the replica applies a
    /// write asynchronously, after the primary has answered; a cut made
    /// right after a worker's acquire was answered could land before the
    /// replica had that acquire, and a promoted replica would then lack a
    /// lock the simulation's keeps (`failover-counter-regression` cuts just
    /// after an acquire for that reason: for a lock with no TTL, that stale
    /// copy decides what happens after the failover). A test holds the
    /// link 400 ms back and shows the write answered before the cut
    /// arrives. A link that is not up has nothing to catch up through, and a
    /// promoted replica follows no one: no wait.
    async fn replica_catch_up(&self, timeout_ms: u64) -> Result<()> {
        if self.state.lock().await.primary == RedisNode::Replica {
            // Already promoted: it follows no one.
            return Ok(());
        }
        let primary = self.node_addr(RedisNode::Primary)?.to_owned();
        let replica = self.node_addr(RedisNode::Replica)?.to_owned();
        let mut cmd = redis::cmd("INFO");
        cmd.arg("replication");
        let info = admin_command::<String>(&primary, RedisNode::Primary, cmd).await?;
        let wrote: u64 = info_field(&info, "master_repl_offset")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        until_ready("replica catch-up before a cut", timeout_ms, || {
            let replica = replica.clone();
            async move {
                let info = replication_info(&replica, RedisNode::Replica).await?;
                let link = info_field(&info, "master_link_status").unwrap_or("none");
                let has: u64 = info_field(&info, "slave_repl_offset")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                if link != "up" || has >= wrote {
                    Ok(())
                } else {
                    Err(Probe::NotYet(format!("replica at {has} of {wrote}")))
                }
            }
        })
        .await
    }

    /// The replication link comes back; the replica reconnects and catches
    /// up (see [`Self::wait_for_replication`]).
    pub async fn restore_replication(&self) -> Result<()> {
        self.node_addr(RedisNode::Replica)?;
        self.toxiproxy.set_enabled(REPLICATION_PROXY, true).await
    }

    /// Waits until the replica's link is up and it has everything the
    /// primary wrote (its offset reached the primary's).
    pub async fn wait_for_replication(&self, timeout_ms: u64) -> Result<()> {
        let primary = self.node_addr(RedisNode::Primary)?.to_owned();
        let replica = self.node_addr(RedisNode::Replica)?.to_owned();
        until_ready("replication", timeout_ms, || {
            let (primary, replica) = (primary.clone(), replica.clone());
            async move {
                let p = replication_info(&primary, RedisNode::Primary).await?;
                let r = replication_info(&replica, RedisNode::Replica).await?;
                let link = info_field(&r, "master_link_status").unwrap_or("none");
                let wrote: u64 = info_field(&p, "master_repl_offset")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                let has: u64 = info_field(&r, "slave_repl_offset")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                if link == "up" && has >= wrote {
                    Ok(())
                } else {
                    Err(Probe::NotYet(format!(
                        "link {link}, replica at {has} of {wrote}"
                    )))
                }
            }
        })
        .await
    }

    /// Fails over for real: stops the primary, promotes the replica
    /// (`REPLICAOF NO ONE`) and re-points every worker's Redis proxy at it
    /// (their live connections are closed; clients reconnect to the new
    /// primary). What the replica had not received is lost, as in
    /// production. With the external provider the old primary cannot be
    /// stopped; it is left running but no worker reaches it any more.
    pub async fn fail_over(&self) -> Result<()> {
        let replica = self.node_addr(RedisNode::Replica)?.to_owned();
        let mut state = self.state.lock().await;
        if state.primary == RedisNode::Replica {
            return Err(ChaosError::Unsupported {
                operation: "a second failover",
                provider: self.provider.name(),
                why: "the replica is already the primary; there is no other replica",
            });
        }
        if let Some(side) = &self.sentinel {
            return self.sentinel_fail_over(&mut state, side, &replica).await;
        }
        if self.provider != ProviderKind::External {
            self.stop_node(&mut state, RedisNode::Primary).await?;
            self.hold_proxies(RedisNode::Primary, 0).await?;
        }
        self.toxiproxy.set_enabled(REPLICATION_PROXY, false).await?;
        let mut promote = redis::cmd("REPLICAOF");
        promote.arg("NO").arg("ONE");
        admin_command::<()>(&replica, RedisNode::Replica, promote).await?;
        // What the promoted replica holds, read before any worker can
        // reach it (their proxies still point at the old primary): its
        // replayed tape must agree (a full resync is invisible to MONITOR).
        let at_us = monitor::unix_us_now();
        let snap = read_snapshot(&replica, RedisNode::Replica).await?;
        self.recorders[RedisNode::Replica.index()].mark_at(at_us, Mark::Checked(snap));
        self.replica_serves.store(true, Ordering::SeqCst);
        for worker in 0..self.workers {
            self.toxiproxy
                .set_upstream(&proxy_name(worker, Path::Redis), &replica)
                .await?;
        }
        // They lead to the new primary now: up, unless partitioned.
        self.release_proxies(RedisNode::Primary).await?;
        state.primary = RedisNode::Replica;
        Ok(())
    }

    /// The failover with Sentinel deciding: the primary is stopped, and
    /// Sentinel marks it down, elects a leader and promotes the replica.
    /// Returns once Sentinel names the replica as master, the replica says
    /// it is one and `+switch-master` has been announced; then the replica's recorder is attached again (the
    /// promotion closed it), its keyspace checked, and the workers' proxies
    /// to it come up.
    async fn sentinel_fail_over(
        &self,
        state: &mut State,
        side: &SentinelSide,
        replica: &str,
    ) -> Result<()> {
        let recorder = &self.recorders[RedisNode::Replica.index()];
        // Sentinel's promotion ends with `CLIENT KILL TYPE normal`, and a
        // monitor is a normal client.
        recorder.expect_close();
        self.stop_node(state, RedisNode::Primary).await?;
        // The old primary's proxies stay down: it is dead, and a client
        // that dials it before Sentinel names the replica is refused.
        self.hold_proxies(RedisNode::Primary, 0).await?;
        let sentinels = side.addrs.clone();
        let replica_addr = replica.to_owned();
        // Which sentinels have had their failover timeout lowered, each
        // once it sees the primary down (see `lower_failover_timeout`).
        let lowered: Arc<Vec<AtomicBool>> =
            Arc::new(sentinels.iter().map(|_| AtomicBool::new(false)).collect());
        until_ready(
            "Sentinel's promotion",
            sentinel::PROMOTION_TIMEOUT_MS,
            || {
                let sentinels = sentinels.clone();
                let replica = replica_addr.clone();
                let announcements = side.announcements.clone();
                let lowered = lowered.clone();
                async move {
                    // Best effort: a sentinel that does not answer now is
                    // asked again at the next probe.
                    for (sentinel, done) in sentinels.iter().zip(lowered.iter()) {
                        if !done.load(Ordering::SeqCst)
                            && matches!(sentinel::lower_failover_timeout(sentinel).await, Ok(true))
                        {
                            done.store(true, Ordering::SeqCst);
                        }
                    }
                    let master = sentinel::master_addr(&sentinels)
                        .await
                        .map_err(|e| Probe::NotYet(e.to_string()))?;
                    if master != replica {
                        return Err(Probe::NotYet(format!("Sentinel still names {master}")));
                    }
                    let role: Vec<redis::Value> =
                        admin_command(&replica, RedisNode::Replica, redis::cmd("ROLE"))
                            .await
                            .map_err(|e| Probe::NotYet(e.to_string()))?;
                    match role.first() {
                        Some(redis::Value::BulkString(b)) if b == b"master" => {}
                        _ => return Err(Probe::NotYet("the replica is not a master yet".into())),
                    }
                    // Sentinel names the promoted replica as soon as it
                    // starts reconfiguring the other replicas, before the
                    // failover ends with `+switch-master`, and that
                    // announcement reaches us on its own connection, later
                    // still. The failover is done, and its story complete,
                    // only once it has arrived.
                    if announcements
                        .seen()
                        .iter()
                        .any(|a| a.event == sentinel::SWITCH_MASTER)
                    {
                        Ok(())
                    } else {
                        Err(Probe::NotYet(format!(
                            "no {} announced yet",
                            sentinel::SWITCH_MASTER
                        )))
                    }
                }
            },
        )
        .await?;
        if recorder.until_closed(MONITOR_CLOSE_WAIT_MS).await {
            recorder.attach(RedisNode::Replica.name(), replica).await?;
        } else {
            recorder.expect_open();
        }
        let mut info = redis::cmd("INFO");
        info.arg("replication");
        let info = admin_command::<String>(replica, RedisNode::Replica, info).await?;
        let offset = info_field(&info, "second_repl_offset")
            .and_then(|v| v.parse::<i64>().ok())
            .filter(|v| *v > 0)
            .map(|v| (v - 1) as u64);
        let at_us = monitor::unix_us_now();
        let snap = read_snapshot(replica, RedisNode::Replica).await?;
        recorder.mark_at(at_us, Mark::Checked(snap));
        self.replica_serves.store(true, Ordering::SeqCst);
        for worker in 0..self.workers {
            if !side.partitioned[worker].load(Ordering::SeqCst) {
                self.toxiproxy
                    .set_enabled(&replica_proxy_name(worker), true)
                    .await?;
            }
        }
        state.primary = RedisNode::Replica;
        *side.story.lock().unwrap_or_else(|e| e.into_inner()) = Some(
            FailoverStory::from_announcements(&side.announcements.seen(), offset),
        );
        Ok(())
    }

    /// Every node's `MONITOR` tape, complete up to this call: the workers'
    /// Redis paths are closed, each running node is synced (everything it
    /// ran before is on its tape), then its keyspace is read for the
    /// end-of-run comparison. Recording stops, and workers reach Redis no
    /// more.
    pub async fn redis_tapes(&self) -> Vec<NodeTape> {
        // Worker traffic ends first. A command a worker sent and gave up on
        // (Redlock's best-effort unlock past its per-master timeout) may
        // still be on its way, and would run after its node's tape was
        // complete: the replay would keep a holding the server dropped. A
        // disabled proxy closes its connections and carries nothing more.
        let closed = self.close_worker_redis_paths().await;
        let stopped = self.state.lock().await.stopped.clone();
        if let Some(side) = &self.sentinel {
            // Sentinel re-pointing the replica past the replication proxy
            // bypasses a replication cut and closes the replica's monitor:
            // say so by name rather than leave only the closed connection.
            for fix in side
                .announcements
                .seen()
                .iter()
                .filter(|a| a.event == sentinel::FIX_SLAVE_CONFIG)
            {
                self.recorders[RedisNode::Replica.index()].gap(format!(
                    "Sentinel re-pointed a replica at the primary's own address ({} {} at {} µs \
                     Unix time): replication no longer went through the harness's proxy, and \
                     the replica's MONITOR connection was closed",
                    fix.event, fix.text, fix.unix_us
                ));
            }
        }
        let mut tapes = Vec::with_capacity(self.redis_addrs.len());
        for (index, addr) in self.redis_addrs.iter().enumerate() {
            let node = RedisNode::at(index);
            let Some(addr) = addr.as_deref() else {
                continue;
            };
            let recorder = &self.recorders[node.index()];
            if let Err(error) = &closed {
                recorder.gap(format!(
                    "{}: the workers' paths could not be closed before the end ({error})",
                    node.name()
                ));
            }
            let mut end = None;
            if !stopped[node.index()] {
                let read = async {
                    // Twice: the turn of Redis's event loop that runs the
                    // first mark may run, after it, a worker's command that
                    // had already arrived; the second mark, sent once the
                    // first was seen, runs in a later turn.
                    recorder.sync(node.name(), addr).await?;
                    recorder.sync(node.name(), addr).await?;
                    let at_us = monitor::unix_us_now();
                    Ok::<_, ChaosError>((at_us, read_snapshot(addr, node).await?))
                };
                match read.await {
                    Ok(read) => end = Some(read),
                    Err(error) => recorder.gap(format!(
                        "{}: its tape could not be completed at the end ({error})",
                        node.name()
                    )),
                }
            }
            tapes.push(NodeTape {
                node,
                tape: recorder.finish(),
                end,
            });
        }
        tapes
    }

    /// Disables every worker's proxies to every Redis node (each master,
    /// and with Sentinel the replica): the end of the workers' traffic.
    async fn close_worker_redis_paths(&self) -> Result<()> {
        for worker in 0..self.workers {
            for master in 0..self.masters {
                for proxy in self.all_proxies(worker, Path::master(master))? {
                    self.toxiproxy.set_enabled(&proxy, false).await?;
                }
            }
        }
        Ok(())
    }

    /// Removes every toxic and brings every proxy up (not the servers).
    pub async fn reset_faults(&self) -> Result<()> {
        self.toxiproxy.reset().await
    }

    /// Stops everything and waits for it: proxies, servers, containers.
    pub async fn shutdown(self) {
        let Self {
            state, embedded, ..
        } = self;
        drop(embedded);
        state.into_inner().servers.shutdown().await;
    }
}
