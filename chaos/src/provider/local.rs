//! The local provider: `redis-server` (primary, replica and, on demand,
//! further independent masters, each with a folder of its own for its
//! snapshot) and `postgres` as child processes on free loopback ports, all
//! data in one temporary folder.
//!
//! For machines without Docker (and for fast iteration: a cluster starts in
//! ~2 s, mostly initdb). PostgreSQL refuses to run as root, so when we are
//! root its processes run as user `postgres` (uid/gid set at spawn, so the
//! child's pid is the postmaster's). Processes are stopped gently (SIGTERM
//! for Redis, SIGINT — fast shutdown — for PostgreSQL), then killed after a
//! bounded wait; on drop too.
//!
//! Nothing outlives the run: every server is started by [`crate::spawn`]
//! (it dies with this process, however this process dies) and registered
//! with [`crate::live`] (a signal's teardown stops it and deletes the
//! folder). The folder names its owner ([`reaper::OWNER_FILE`]) and each
//! server's pid and start time (`<server>.pid`), so the next local start
//! reaps what a `kill -9` left ([`reaper::reap_local_leftovers`]).

use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::config::{LocalBinaries, ENV_PG_BIN_DIR, ENV_REDIS_SERVER_BIN};
use crate::error::{ChaosError, Result};
use crate::ports::pick_port;
use crate::probe;
use crate::provider::RedisNode;
use crate::reaper::{self, LOCAL_FOLDER_PREFIX, OWNER_FILE, PID_FILE_SUFFIX};
use crate::wait::{until_ready, Probe, READY_TIMEOUT_MS};
use crate::{live, sentinel, spawn};

/// Attempts at starting a server on a fresh port when its port was taken
/// between our pick and its bind.
const PORT_ATTEMPTS_MAX: u32 = 5;
/// How long a stopping server may take before it is killed.
const STOP_TIMEOUT_MS: u64 = 5_000;
/// Poll interval while waiting for a process to exit.
const EXIT_POLL_MS: u64 = 20;
/// Lines of a server's log quoted when it fails.
const LOG_TAIL_LINES: usize = 20;

/// Where the programs are.
#[derive(Clone, Debug)]
pub struct LocalPrograms {
    /// `redis-server`.
    pub redis_server: PathBuf,
    /// The folder with `initdb` and `postgres`.
    pub pg_bin_dir: PathBuf,
}

fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// Debian keeps PostgreSQL's server programs off `PATH`, one folder per
/// major version; the newest wins.
fn debian_pg_bin_dir() -> Option<PathBuf> {
    let mut dirs: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version: u32 = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("postgres").is_file().then_some((version, bin))
        })
        .collect();
    dirs.sort();
    dirs.pop().map(|(_, bin)| bin)
}

impl LocalPrograms {
    /// Finds the programs, or says what to install or set.
    pub fn find(config: &LocalBinaries) -> Result<Self> {
        let redis_server = config
            .redis_server
            .clone()
            .or_else(|| on_path("redis-server"))
            .filter(|p| p.is_file())
            .ok_or_else(|| ChaosError::MissingBinary {
                program: "redis-server",
                looked: format!("{ENV_REDIS_SERVER_BIN}, PATH"),
                package: "redis-server",
                var: ENV_REDIS_SERVER_BIN,
            })?;
        let pg_bin_dir = config
            .pg_bin_dir
            .clone()
            .or_else(|| on_path("postgres").and_then(|p| p.parent().map(Path::to_path_buf)))
            .or_else(debian_pg_bin_dir)
            .filter(|dir| dir.join("postgres").is_file() && dir.join("initdb").is_file())
            .ok_or_else(|| ChaosError::MissingBinary {
                program: "postgres",
                looked: format!("{ENV_PG_BIN_DIR}, PATH, /usr/lib/postgresql/*/bin"),
                package: "postgresql",
                var: ENV_PG_BIN_DIR,
            })?;
        Ok(Self {
            redis_server,
            pg_bin_dir,
        })
    }
}

/// uid and gid of user `postgres`, from /etc/passwd.
fn postgres_user() -> Result<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd")
        .map_err(|e| ChaosError::io("reading /etc/passwd", e))?;
    passwd
        .lines()
        .map(|line| line.split(':').collect::<Vec<_>>())
        .find(|fields| fields.first() == Some(&"postgres") && fields.len() > 3)
        .and_then(|f| Some((f[2].parse().ok()?, f[3].parse().ok()?)))
        .ok_or_else(|| ChaosError::Process {
            server: "postgres",
            message: "running as root, and PostgreSQL refuses root: no user `postgres` \
                      (apt-get install postgresql creates it)"
                .into(),
        })
}

fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
}

fn signal(child: &Child, signal: libc::c_int) {
    // SAFETY: kill on our own child's pid; at worst ESRCH if it just exited
    // (it is not reaped until we wait, so the pid cannot be reused).
    unsafe {
        libc::kill(child.id() as libc::pid_t, signal);
    }
}

/// Signals, waits (bounded), then kills. Blocking: used by drop.
fn stop_blocking(mut child: Child, first: libc::c_int) {
    live::unregister_child(child.id());
    signal(&child, first);
    for _ in 0..STOP_TIMEOUT_MS / EXIT_POLL_MS {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(Duration::from_millis(EXIT_POLL_MS));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Signals, waits (bounded), then kills; without blocking the runtime.
async fn stop_async(mut child: Child, first: libc::c_int) {
    live::unregister_child(child.id());
    signal(&child, first);
    for _ in 0..STOP_TIMEOUT_MS / EXIT_POLL_MS {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(EXIT_POLL_MS)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// `Ok` while a starting server's process lives; a fatal probe error,
/// with the end of its log, once it has exited.
fn still_running(child: &mut Option<Child>, server: &'static str, log: &Path) -> Result<(), Probe> {
    let exited = child
        .as_mut()
        .map(|c| matches!(c.try_wait(), Ok(Some(_))))
        .unwrap_or(true);
    if exited {
        return Err(Probe::Fatal(ChaosError::Process {
            server,
            message: format!("exited during startup; log:\n{}", log_tail(log)),
        }));
    }
    Ok(())
}

struct LocalRedis {
    name: &'static str,
    port: u16,
    dir: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

/// Redis and PostgreSQL as local processes.
pub struct LocalServers {
    root: PathBuf,
    programs: LocalPrograms,
    /// Per node, in `RedisNode::index` order.
    redis: Vec<LocalRedis>,
    pg_port: u16,
    pg_child: Option<Child>,
    /// Sentinels, when the topology asked for them.
    sentinels: Vec<LocalRedis>,
}

impl std::fmt::Debug for LocalServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalServers")
            .field("root", &self.root)
            .field(
                "redis_ports",
                &self.redis.iter().map(|r| r.port).collect::<Vec<_>>(),
            )
            .field("pg_port", &self.pg_port)
            .finish()
    }
}

fn log_file(path: &Path) -> Result<(File, File)> {
    let out = File::options()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| ChaosError::io(format!("opening {}", path.display()), e))?;
    let err = out
        .try_clone()
        .map_err(|e| ChaosError::io("duplicating a log handle", e))?;
    Ok((out, err))
}

/// Creates a folder inside the run folder, never its parents: a run folder
/// that a teardown deleted stays deleted.
fn mkdir(path: &Path) -> Result<()> {
    std::fs::create_dir(path).map_err(|e| ChaosError::io(format!("creating {}", path.display()), e))
}

/// The owner file while it is written (see [`create_run_folder`]); not a
/// pid file, so no reaper reads it.
const OWNER_PARTIAL_FILE: &str = "owner.partial";

fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| ChaosError::io(format!("writing {}", path.display()), e))
}

/// Records a started server's pid and start time in the run folder, for
/// the reaper of a later run.
fn write_pid_file(root: &Path, server: &str, child: &Child) -> Result<()> {
    write_file(
        &root.join(format!("{server}{PID_FILE_SUFFIX}")),
        &reaper::identity_of(child.id()),
    )
}

/// Creates the run folder, owned by this process: registered for a
/// signal's teardown, and naming its owner for a later run's reaper.
///
/// The owner file is written under another name and renamed into place.
/// Another run's start reads it to decide whether the folder is a dead
/// run's, and a file caught between its creation and its write reads
/// empty, which names no live process: with two suites on one machine a
/// reaper deleted a folder being set up, and the run failed with "creating
/// …/redis-primary: No such file or directory". A rename is atomic, so a
/// reaper finds no owner file (a folder being created: left alone) or the
/// whole one.
fn create_run_folder(root: &Path) -> Result<()> {
    live::create_folder(root)?;
    let partial = root.join(OWNER_PARTIAL_FILE);
    write_file(&partial, &reaper::own_identity())?;
    let owner = root.join(OWNER_FILE);
    std::fs::rename(&partial, &owner)
        .map_err(|e| ChaosError::io(format!("writing {}", owner.display()), e))
}

impl LocalServers {
    /// Starts primary, replica and PostgreSQL (with database `database`).
    /// First reaps what killed local runs left in the temporary directory.
    pub async fn start(programs: LocalPrograms, run_id: &str, database: &str) -> Result<Self> {
        let temp = std::env::temp_dir();
        reaper::reap_local_leftovers(&temp);
        let root = temp.join(format!("{LOCAL_FOLDER_PREFIX}{run_id}"));
        create_run_folder(&root)?;
        let redis = match (
            LocalRedis::new("redis-primary", &root),
            LocalRedis::new("redis-replica", &root),
        ) {
            (Ok(primary), Ok(replica)) => vec![primary, replica],
            (Err(e), _) | (_, Err(e)) => {
                live::delete_folder(&root);
                return Err(e);
            }
        };
        let mut servers = Self {
            root,
            programs,
            redis,
            pg_port: 0,
            pg_child: None,
            sentinels: Vec::new(),
        };
        for node in [RedisNode::Primary, RedisNode::Replica] {
            servers.start_redis_on_free_port(node).await?;
        }
        servers.start_postgres(database).await?;
        Ok(servers)
    }

    /// Starts independent master `master` (the next one: masters start in
    /// order), a `redis-server` of its own with its own folder.
    pub async fn start_master(&mut self, master: usize) -> Result<()> {
        let node = RedisNode::Master(master);
        assert_eq!(self.redis.len(), node.index(), "masters start in order");
        self.redis.push(LocalRedis::new(node.name(), &self.root)?);
        self.start_redis_on_free_port(node).await
    }

    /// `127.0.0.1:port` of a Redis node.
    pub fn redis_addr(&self, node: RedisNode) -> String {
        format!("127.0.0.1:{}", self.redis[node.index()].port)
    }

    /// `127.0.0.1:port` of PostgreSQL.
    pub fn postgres_addr(&self) -> String {
        format!("127.0.0.1:{}", self.pg_port)
    }

    async fn start_redis_on_free_port(&mut self, node: RedisNode) -> Result<()> {
        let mut last = None;
        for _ in 0..PORT_ATTEMPTS_MAX {
            self.redis[node.index()].port = pick_port()?;
            match self.start_redis(node).await {
                Ok(()) => return Ok(()),
                Err(err)
                    if log_tail(&self.redis[node.index()].log)
                        .contains("Address already in use") =>
                {
                    last = Some(err);
                }
                Err(err) => return Err(err),
            }
        }
        Err(last.unwrap_or_else(|| ChaosError::Process {
            server: self.redis[node.index()].name,
            message: "no attempt".into(),
        }))
    }

    /// Starts a Redis node on its port (the same one after a stop), empty.
    pub async fn start_redis(&mut self, node: RedisNode) -> Result<()> {
        let redis = &mut self.redis[node.index()];
        if redis.child.is_some() {
            return Ok(());
        }
        let (out, err) = log_file(&redis.log)?;
        let mut command = Command::new(&self.programs.redis_server);
        command
            .args(redis_args(redis.port, &redis.dir))
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        let child = spawn::spawn(redis.name, command)?;
        let recorded = write_pid_file(&self.root, redis.name, &child);
        redis.child = Some(child);
        if let Err(e) = recorded {
            if let Some(child) = redis.child.take() {
                stop_async(child, libc::SIGKILL).await;
            }
            return Err(e);
        }
        let addr = format!("127.0.0.1:{}", redis.port);
        let (name, log) = (redis.name, redis.log.clone());
        let ready = until_ready(name, READY_TIMEOUT_MS, || {
            let alive = still_running(&mut self.redis[node.index()].child, name, &log);
            let addr = addr.clone();
            async move {
                alive?;
                probe::redis_ping(&addr).await.map_err(Probe::NotYet)
            }
        })
        .await;
        if ready.is_err() {
            if let Some(child) = self.redis[node.index()].child.take() {
                stop_async(child, libc::SIGKILL).await;
            }
        }
        ready
    }

    /// Starts [`sentinel::SENTINELS`] sentinels (`redis-server <conf>
    /// --sentinel`, the data nodes' binary) monitoring the primary at
    /// `primary`; their addresses.
    pub async fn start_sentinels(&mut self, primary: &str) -> Result<Vec<String>> {
        const NAMES: [&str; sentinel::SENTINELS] =
            ["redis-sentinel-0", "redis-sentinel-1", "redis-sentinel-2"];
        let mut addrs = Vec::with_capacity(NAMES.len());
        for name in NAMES {
            let mut last = None;
            let mut started = None;
            for _ in 0..PORT_ATTEMPTS_MAX {
                let before = self.sentinels.len();
                match self.start_sentinel(name, primary).await {
                    Ok(addr) => {
                        started = Some(addr);
                        break;
                    }
                    Err(err) => {
                        let spawned = self.sentinels.len() > before;
                        let busy = spawned
                            && self.sentinels.last().is_some_and(|s| {
                                log_tail(&s.log).contains("Address already in use")
                            });
                        if let Some(mut gone) = spawned.then(|| self.sentinels.pop()).flatten() {
                            if let Some(child) = gone.child.take() {
                                stop_async(child, libc::SIGKILL).await;
                            }
                        }
                        if !busy {
                            return Err(err);
                        }
                        last = Some(err);
                    }
                }
            }
            match started {
                Some(addr) => addrs.push(addr),
                None => {
                    return Err(last.unwrap_or_else(|| ChaosError::Process {
                        server: name,
                        message: "no attempt".into(),
                    }))
                }
            }
        }
        Ok(addrs)
    }

    async fn start_sentinel(&mut self, name: &'static str, primary: &str) -> Result<String> {
        let dir = self.root.join(format!("{name}-{}", self.sentinels.len()));
        if !dir.exists() {
            mkdir(&dir)?;
        }
        let port = pick_port()?;
        let conf = dir.join("sentinel.conf");
        write_file(
            &conf,
            &sentinel::config_text(port, primary, &dir.display().to_string())?,
        )?;
        let log = self.root.join(format!("{name}.log"));
        let (out, err) = log_file(&log)?;
        let mut command = Command::new(&self.programs.redis_server);
        command
            .arg(&conf)
            .arg("--sentinel")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        let child = spawn::spawn(name, command)?;
        let recorded = write_pid_file(&self.root, name, &child);
        self.sentinels.push(LocalRedis {
            name,
            port,
            dir,
            log: log.clone(),
            child: Some(child),
        });
        recorded?;
        let addr = format!("127.0.0.1:{port}");
        let index = self.sentinels.len() - 1;
        let probe_addr = addr.clone();
        until_ready(name, READY_TIMEOUT_MS, || {
            let alive = still_running(&mut self.sentinels[index].child, name, &log);
            let addr = probe_addr.clone();
            async move {
                alive?;
                probe::redis_ping(&addr).await.map_err(Probe::NotYet)
            }
        })
        .await?;
        Ok(addr)
    }

    /// Kills a Redis node (`kill -9`, as a crash): its data is gone,
    /// except a snapshot a `BGSAVE` wrote into its folder, which its next
    /// start loads.
    pub async fn stop_redis(&mut self, node: RedisNode) -> Result<()> {
        if let Some(child) = self.redis[node.index()].child.take() {
            stop_async(child, libc::SIGKILL).await;
        }
        Ok(())
    }

    async fn start_postgres(&mut self, database: &str) -> Result<()> {
        let pg_dir = self.root.join("pg");
        mkdir(&pg_dir)?;
        let log = self.root.join("postgres.log");
        let user = if running_as_root() {
            let (uid, gid) = postgres_user()?;
            // The postgres user must reach its folder through ours.
            std::fs::set_permissions(&self.root, std::fs::Permissions::from_mode(0o711))
                .map_err(|e| ChaosError::io("chmod the run folder", e))?;
            std::os::unix::fs::chown(&pg_dir, Some(uid), Some(gid))
                .map_err(|e| ChaosError::io("chown the postgres folder", e))?;
            Some((uid, gid))
        } else {
            None
        };
        let as_user = |command: &mut Command| {
            if let Some((uid, gid)) = user {
                command.uid(uid).gid(gid);
            }
        };
        let data = pg_dir.join("data");
        let (out, err) = log_file(&log)?;
        let mut initdb = Command::new(self.programs.pg_bin_dir.join("initdb"));
        initdb
            .arg("-D")
            .arg(&data)
            .args(["-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"])
            // A fixed locale keeps initdb independent of the caller's.
            .arg("--locale=C.UTF-8")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        as_user(&mut initdb);
        let mut initdb = spawn::spawn("initdb", initdb)?;
        let status = tokio::task::spawn_blocking(move || {
            let status = initdb.wait();
            live::unregister_child(initdb.id());
            status
        })
        .await
        .map_err(|e| ChaosError::Process {
            server: "postgres",
            message: format!("initdb task: {e}"),
        })?
        .map_err(|e| ChaosError::io("running initdb", e))?;
        if !status.success() {
            return Err(ChaosError::Process {
                server: "postgres",
                message: format!("initdb failed ({status}); log:\n{}", log_tail(&log)),
            });
        }
        let mut last = None;
        for _ in 0..PORT_ATTEMPTS_MAX {
            self.pg_port = pick_port()?;
            let (out, err) = log_file(&log)?;
            let mut postgres = Command::new(self.programs.pg_bin_dir.join("postgres"));
            postgres
                .arg("-D")
                .arg(&data)
                .arg("-p")
                .arg(self.pg_port.to_string())
                .arg("-k")
                .arg(&pg_dir)
                .args(PG_SETTINGS.iter().flat_map(|s| ["-c", s]))
                .stdin(Stdio::null())
                .stdout(out)
                .stderr(err);
            as_user(&mut postgres);
            let child = spawn::spawn("postgres", postgres)?;
            let recorded = write_pid_file(&self.root, "postgres", &child);
            self.pg_child = Some(child);
            if let Err(e) = recorded {
                if let Some(child) = self.pg_child.take() {
                    stop_async(child, libc::SIGKILL).await;
                }
                return Err(e);
            }
            let url = format!("postgres://postgres@127.0.0.1:{}/postgres", self.pg_port);
            let log = log.clone();
            let result = until_ready("postgres", READY_TIMEOUT_MS, || {
                let alive = still_running(&mut self.pg_child, "postgres", &log);
                let url = url.clone();
                async move {
                    alive?;
                    probe::postgres_connect(&url).await.map_err(Probe::NotYet)
                }
            })
            .await;
            match result {
                Ok(()) => {
                    return crate::provider::create_database(&url, database).await;
                }
                Err(err) => {
                    if let Some(child) = self.pg_child.take() {
                        stop_async(child, libc::SIGKILL).await;
                    }
                    if !log_tail(&log).contains("already in use") {
                        return Err(err);
                    }
                    last = Some(err);
                }
            }
        }
        Err(last.unwrap_or_else(|| ChaosError::Process {
            server: "postgres",
            message: "no attempt".into(),
        }))
    }

    /// Stops everything and deletes the data folder.
    pub async fn shutdown(mut self) {
        for sentinel in &mut self.sentinels {
            if let Some(child) = sentinel.child.take() {
                stop_async(child, libc::SIGTERM).await;
            }
        }
        // Every node: primary, replica and the independent masters.
        for index in 0..self.redis.len() {
            let _ = self.stop_redis(RedisNode::at(index)).await;
        }
        if let Some(child) = self.pg_child.take() {
            stop_async(child, libc::SIGINT).await;
        }
        // Drop removes the folder.
    }
}

/// PostgreSQL settings for throwaway test servers: durability off (the
/// data dies with the run), room for every worker's pool.
const PG_SETTINGS: &[&str] = &[
    "listen_addresses=127.0.0.1",
    "fsync=off",
    "synchronous_commit=off",
    "full_page_writes=off",
    "max_connections=200",
];

/// redis-server's arguments: loopback, no automatic persistence (no save
/// points, no AOF: a restart is empty, as in the simulation, unless a
/// `BGSAVE` asked for wrote `dump.rdb` into `dir`, which a start loads),
/// and diskless replication without the default 5 s delay, so a replica
/// syncs at once.
pub fn redis_args(port: u16, dir: &Path) -> Vec<String> {
    let mut args: Vec<String> = [
        "--bind",
        "127.0.0.1",
        "--port",
        &port.to_string(),
        "--protected-mode",
        "no",
        "--dir",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(dir.display().to_string());
    args.extend(
        [
            "--save",
            "",
            "--appendonly",
            "no",
            "--repl-diskless-sync",
            "yes",
            "--repl-diskless-sync-delay",
            "0",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    args
}

impl LocalRedis {
    fn new(name: &'static str, root: &Path) -> Result<Self> {
        let dir = root.join(name);
        mkdir(&dir)?;
        Ok(Self {
            name,
            port: 0,
            log: root.join(format!("{name}.log")),
            dir,
            child: None,
        })
    }
}

impl Drop for LocalServers {
    fn drop(&mut self) {
        for redis in self.redis.iter_mut().chain(self.sentinels.iter_mut()) {
            if let Some(child) = redis.child.take() {
                stop_blocking(child, libc::SIGTERM);
            }
        }
        if let Some(child) = self.pg_child.take() {
            stop_blocking(child, libc::SIGINT);
        }
        live::delete_folder(&self.root);
        // The servers are gone: their ports are no longer ours to keep.
        for redis in self.redis.iter().chain(self.sentinels.iter()) {
            crate::ports::release_port(redis.port);
        }
        crate::ports::release_port(self.pg_port);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// Another suite's start reaps beside this one's folder creation (two
    /// real-suite loops and a CI run on one machine): it must never take a
    /// folder being set up for a dead run's. Each folder is deleted once
    /// checked, so the reaper's pass is short and falls on the creation
    /// often.
    #[test]
    fn a_reaper_beside_a_run_folder_being_created_leaves_it_alone() {
        const FOLDERS: usize = 500;
        const REAPER_PASSES_MAX: usize = 10_000_000;
        let temp =
            std::env::temp_dir().join(format!("redfence-reaper-race-{}", std::process::id()));
        std::fs::create_dir_all(&temp).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let reaper_thread = {
            let (temp, stop) = (temp.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut reaped = 0;
                for _ in 0..REAPER_PASSES_MAX {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    reaped += reaper::reap_local_leftovers(&temp).folders.len();
                }
                reaped
            })
        };
        let mut lost = 0;
        for i in 0..FOLDERS {
            let root = temp.join(format!("{LOCAL_FOLDER_PREFIX}{i}"));
            create_run_folder(&root).unwrap();
            if std::fs::read_to_string(root.join(OWNER_FILE))
                .ok()
                .as_deref()
                != Some(reaper::own_identity().as_str())
            {
                lost += 1;
            }
            live::delete_folder(&root);
        }
        stop.store(true, Ordering::Relaxed);
        let reaped = reaper_thread.join().unwrap();
        std::fs::remove_dir_all(&temp).unwrap();
        assert_eq!(
            (lost, reaped),
            (0, 0),
            "folders deleted by a reaper while they were being created"
        );
    }
}
