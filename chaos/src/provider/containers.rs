//! The container provider: Redis primary, replica (and, on demand, further
//! independent masters) and PostgreSQL as Docker containers through
//! testcontainers (plain `GenericImage`).
//!
//! Containers share the host's network namespace (`--network host`) and
//! bind 127.0.0.1 only: every byte of test traffic — workers to proxies,
//! proxies to servers, the replica to the primary through the replication
//! proxy — stays on loopback, and the embedded Toxiproxy (on the host) is
//! reachable from the replica without exposing anything. The image is by
//! default the one `scripts/images` builds from Debian packages
//! ([`crate::config::LOCAL_IMAGE`]), which has no entrypoint: each container
//! gets a full command, which works with the upstream images too. An image
//! that is not on this machine is an error naming `scripts/images` before
//! any container starts: nothing is ever pulled from a registry.
//!
//! Cleanup: every container is labelled (see [`crate::reaper`]); shutdown
//! removes them; drop removes them too, also while a panic unwinds; a killed
//! run's containers are reaped by the next start; on SIGINT/SIGTERM the
//! command's signal thread removes this process's containers
//! ([`crate::live::teardown`], by the creator label; every start in flight
//! is waited for first).

use std::time::Duration;

use testcontainers::core::ImageExt;
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, ContainerRequest, GenericImage};

use crate::config::{Images, ENV_POSTGRES_IMAGE, ENV_REDIS_IMAGE};
use crate::error::{ChaosError, Result};
use crate::live;
use crate::ports::pick_port;
use crate::probe;
use crate::provider::RedisNode;
use crate::reaper::{self, LABEL_CREATOR, LABEL_OWNER, LABEL_RUN, OWNER_VALUE};
use crate::sentinel;
use crate::wait::{until_ready, Probe, READY_TIMEOUT_MS};

/// Attempts at starting a container on a fresh port when its port was
/// taken between our pick and its bind.
const PORT_ATTEMPTS_MAX: u32 = 3;
/// Longest a killed Redis container may take to show as stopped.
const KILL_WAIT_MS: u64 = 5_000;
/// Between two looks at whether it has.
const KILL_POLL_MS: u64 = 10;
/// How long a Docker API call may take before we call the engine absent.
pub const DOCKER_PING_TIMEOUT_MS: u64 = 3_000;

/// The Docker engine, if it answers.
pub async fn docker() -> Result<testcontainers::bollard::Docker> {
    let connect = async {
        let docker = testcontainers::core::client::docker_client_instance()
            .await
            .map_err(|e| e.to_string())?;
        docker.ping().await.map_err(|e| e.to_string())?;
        Ok::<_, String>(docker)
    };
    tokio::time::timeout(Duration::from_millis(DOCKER_PING_TIMEOUT_MS), connect)
        .await
        .map_err(|_| ChaosError::DockerUnavailable("no answer in time".into()))?
        .map_err(ChaosError::DockerUnavailable)
}

/// Checks that `image` is on this machine (never asking a registry):
/// [`ChaosError::ImageUnavailable`], naming `scripts/images` and `var`,
/// otherwise.
pub async fn image_present(
    docker: &testcontainers::bollard::Docker,
    image: &str,
    var: &'static str,
) -> Result<()> {
    let inspect = tokio::time::timeout(
        Duration::from_millis(DOCKER_PING_TIMEOUT_MS),
        docker.inspect_image(image),
    )
    .await
    .map_err(|_| {
        ChaosError::DockerUnavailable(format!(
            "inspecting {image} took over {DOCKER_PING_TIMEOUT_MS} ms"
        ))
    })?;
    inspect.map(drop).map_err(|e| ChaosError::ImageUnavailable {
        image: image.to_owned(),
        var,
        cause: e.to_string(),
    })
}

/// Checks that the Redis and PostgreSQL images are on this machine.
pub async fn images_present(
    docker: &testcontainers::bollard::Docker,
    images: &Images,
) -> Result<()> {
    image_present(docker, &images.redis, ENV_REDIS_IMAGE).await?;
    image_present(docker, &images.postgres, ENV_POSTGRES_IMAGE).await
}

/// `name:tag` split for `GenericImage` (`redis` → `redis:latest`; a
/// registry port's colon is not a tag).
fn split_image(image: &str) -> (&str, &str) {
    match image.rsplit_once(':') {
        Some((name, tag)) if !tag.contains('/') => (name, tag),
        _ => (image, "latest"),
    }
}

/// A command that starts PostgreSQL as the container's user (`postgres`)
/// on `port`: initdb into /tmp, then exec postgres. Works in the upstream
/// image (its entrypoint execs any non-postgres command as given) and in
/// the imported one (no entrypoint).
fn postgres_command(port: u16) -> Vec<String> {
    let script = format!(
        "set -e; bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1); \
         mkdir -p /tmp/pg; \
         \"$bin/initdb\" -D /tmp/pg/data -A trust -U postgres --no-sync -E UTF8 \
           --locale=C.UTF-8 >/tmp/pg/initdb.log 2>&1 || {{ cat /tmp/pg/initdb.log; exit 1; }}; \
         exec \"$bin/postgres\" -D /tmp/pg/data -p {port} -k /tmp/pg \
           -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off \
           -c full_page_writes=off -c max_connections=200"
    );
    vec!["sh".into(), "-c".into(), script]
}

struct Slot {
    name: &'static str,
    port: u16,
    container: Option<ContainerAsync<GenericImage>>,
}

/// Redis and PostgreSQL as containers.
pub struct ContainerServers {
    docker: testcontainers::bollard::Docker,
    run_id: String,
    /// Per node, in `RedisNode::index` order.
    redis: Vec<Slot>,
    postgres: Slot,
    /// Sentinels, when the topology asked for them.
    sentinels: Vec<Slot>,
}

impl std::fmt::Debug for ContainerServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContainerServers")
            .field("run_id", &self.run_id)
            .field(
                "redis_ports",
                &self.redis.iter().map(|r| r.port).collect::<Vec<_>>(),
            )
            .field("pg_port", &self.postgres.port)
            .finish()
    }
}

fn labelled(
    request: ContainerRequest<GenericImage>,
    run_id: &str,
    role: &str,
) -> ContainerRequest<GenericImage> {
    request
        .with_network("host")
        .with_label(LABEL_OWNER, OWNER_VALUE)
        .with_label(LABEL_RUN, run_id)
        .with_label(LABEL_CREATOR, reaper::own_identity())
        .with_label("redfence.role", role)
}

impl ContainerServers {
    /// Reaps dead runs' containers, then starts primary, replica and
    /// PostgreSQL (with database `database`).
    pub async fn start(images: &Images, run_id: &str, database: &str) -> Result<Self> {
        let docker = docker().await?;
        images_present(&docker, images).await?;
        let reaped = reaper::reap_orphans(&docker).await?;
        if reaped > 0 {
            tracing::info!(reaped, "removed containers of killed runs");
        }
        let mut servers = Self {
            docker,
            run_id: run_id.to_owned(),
            redis: vec![
                Slot {
                    name: "redis-primary",
                    port: 0,
                    container: None,
                },
                Slot {
                    name: "redis-replica",
                    port: 0,
                    container: None,
                },
            ],
            postgres: Slot {
                name: "postgres",
                port: 0,
                container: None,
            },
            sentinels: Vec::new(),
        };
        for node in [RedisNode::Primary, RedisNode::Replica] {
            servers.start_new_redis(images, node).await?;
        }
        servers.start_new_postgres(images, database).await?;
        Ok(servers)
    }

    /// The run's label value.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// `127.0.0.1:port` of a Redis node.
    pub fn redis_addr(&self, node: RedisNode) -> String {
        format!("127.0.0.1:{}", self.redis[node.index()].port)
    }

    /// `127.0.0.1:port` of PostgreSQL.
    pub fn postgres_addr(&self) -> String {
        format!("127.0.0.1:{}", self.postgres.port)
    }

    async fn run(
        &self,
        image: &str,
        var: &'static str,
        role: &str,
        command: Vec<String>,
        user: Option<&str>,
    ) -> Result<ContainerAsync<GenericImage>> {
        let (name, tag) = split_image(image);
        let mut request = labelled(
            GenericImage::new(name, tag).with_cmd(command),
            &self.run_id,
            role,
        );
        if let Some(user) = user {
            request = request.with_user(user);
        }
        // Never pull: a missing image is an error naming scripts/images.
        image_present(&self.docker, image, var).await?;
        // A teardown waits for this start, then removes its container.
        let _starting = live::ContainerStart::begin()?;
        match request.start().await {
            Ok(container) => Ok(container),
            Err(err) => {
                let present = self.docker.inspect_image(image).await.is_ok();
                Err(if present {
                    ChaosError::Docker(format!("starting {image}: {err}"))
                } else {
                    ChaosError::ImageUnavailable {
                        image: image.to_owned(),
                        var,
                        cause: err.to_string(),
                    }
                })
            }
        }
    }

    /// Polls `probe` until ready, failing fast if the container exits.
    async fn wait_ready<F, Fut>(
        &self,
        server: &'static str,
        container: &ContainerAsync<GenericImage>,
        probe: F,
    ) -> Result<()>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<(), String>>,
    {
        until_ready(server, READY_TIMEOUT_MS, || async {
            match container.is_running().await {
                Ok(true) => probe().await.map_err(Probe::NotYet),
                Ok(false) => Err(Probe::Fatal(ChaosError::Process {
                    server,
                    message: format!("container {} exited during startup", container.id()),
                })),
                Err(e) => Err(Probe::NotYet(e.to_string())),
            }
        })
        .await
    }

    /// Starts independent master `master` (the next one: masters start in
    /// order) in a container of its own.
    pub async fn start_master(&mut self, images: &Images, master: usize) -> Result<()> {
        let node = RedisNode::Master(master);
        assert_eq!(self.redis.len(), node.index(), "masters start in order");
        self.redis.push(Slot {
            name: node.name(),
            port: 0,
            container: None,
        });
        self.start_new_redis(images, node).await
    }

    async fn start_new_redis(&mut self, images: &Images, node: RedisNode) -> Result<()> {
        let name = self.redis[node.index()].name;
        let mut last = None;
        for _ in 0..PORT_ATTEMPTS_MAX {
            let port = pick_port()?;
            let command = redis_command(port);
            let container = self
                .run(&images.redis, ENV_REDIS_IMAGE, name, command, None)
                .await?;
            let addr = format!("127.0.0.1:{port}");
            match self
                .wait_ready(name, &container, || probe::redis_ping(&addr))
                .await
            {
                Ok(()) => {
                    self.redis[node.index()].port = port;
                    self.redis[node.index()].container = Some(container);
                    return Ok(());
                }
                // Most likely the port was taken meanwhile: try another.
                Err(err) => {
                    let _ = container.rm().await;
                    last = Some(err);
                }
            }
        }
        Err(last.unwrap_or_else(|| ChaosError::Docker(format!("{name}: no attempt"))))
    }

    async fn start_new_postgres(&mut self, images: &Images, database: &str) -> Result<()> {
        let mut last = None;
        for _ in 0..PORT_ATTEMPTS_MAX {
            let port = pick_port()?;
            let container = self
                .run(
                    &images.postgres,
                    ENV_POSTGRES_IMAGE,
                    "postgres",
                    postgres_command(port),
                    Some("postgres"),
                )
                .await?;
            let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
            match self
                .wait_ready("postgres", &container, || probe::postgres_connect(&url))
                .await
            {
                Ok(()) => {
                    self.postgres.port = port;
                    self.postgres.container = Some(container);
                    return crate::provider::create_database(&url, database).await;
                }
                Err(err) => {
                    let _ = container.rm().await;
                    last = Some(err);
                }
            }
        }
        Err(last.unwrap_or_else(|| ChaosError::Docker("postgres: no attempt".into())))
    }

    fn container(&self, node: RedisNode) -> Result<&ContainerAsync<GenericImage>> {
        self.redis[node.index()]
            .container
            .as_ref()
            .ok_or_else(|| ChaosError::Docker(format!("{} has no container", node.name())))
    }

    /// Starts [`sentinel::SENTINELS`] sentinel containers (the Redis image's
    /// `redis-server --sentinel`, its config written at start: Sentinel
    /// rewrites it) monitoring the primary at `primary`; their addresses.
    pub async fn start_sentinels(&mut self, images: &Images, primary: &str) -> Result<Vec<String>> {
        const NAMES: [&str; sentinel::SENTINELS] =
            ["redis-sentinel-0", "redis-sentinel-1", "redis-sentinel-2"];
        let mut addrs = Vec::with_capacity(NAMES.len());
        for name in NAMES {
            let mut last = None;
            let mut started = false;
            for _ in 0..PORT_ATTEMPTS_MAX {
                let port = pick_port()?;
                let config = sentinel::config_text(port, primary, "/tmp/sentinel")?;
                let script = format!(
                    "set -e; mkdir -p /tmp/sentinel; printf '%s' '{config}' \
                     > /tmp/sentinel/sentinel.conf; \
                     exec redis-server /tmp/sentinel/sentinel.conf --sentinel"
                );
                let command = vec!["sh".to_owned(), "-c".to_owned(), script];
                let container = self
                    .run(&images.redis, ENV_REDIS_IMAGE, name, command, None)
                    .await?;
                let addr = format!("127.0.0.1:{port}");
                match self
                    .wait_ready(name, &container, || probe::redis_ping(&addr))
                    .await
                {
                    Ok(()) => {
                        self.sentinels.push(Slot {
                            name,
                            port,
                            container: Some(container),
                        });
                        addrs.push(addr);
                        started = true;
                        break;
                    }
                    Err(err) => {
                        let _ = container.rm().await;
                        last = Some(err);
                    }
                }
            }
            if !started {
                return Err(
                    last.unwrap_or_else(|| ChaosError::Docker(format!("{name}: no attempt")))
                );
            }
        }
        Ok(addrs)
    }

    /// Kills a Redis container (`SIGKILL`, as a crash): its data is gone,
    /// except a snapshot a `BGSAVE` wrote into the container's `/tmp`,
    /// which survives in its writable layer and its next start loads.
    pub async fn stop_redis(&mut self, node: RedisNode) -> Result<()> {
        let id = self.container(node)?.id().to_owned();
        let options = testcontainers::bollard::query_parameters::KillContainerOptionsBuilder::new()
            .signal("SIGKILL")
            .build();
        self.docker
            .kill_container(&id, Some(options))
            .await
            .map_err(|e| ChaosError::Docker(format!("killing {}: {e}", node.name())))?;
        // Bounded: the kill is immediate; the daemon reports the exit soon.
        for _ in 0..KILL_WAIT_MS / KILL_POLL_MS {
            if !self.container(node)?.is_running().await.unwrap_or(false) {
                return Ok(());
            }
            tokio::time::sleep(std::time::Duration::from_millis(KILL_POLL_MS)).await;
        }
        Err(ChaosError::Docker(format!(
            "{} still runs {KILL_WAIT_MS} ms after SIGKILL",
            node.name()
        )))
    }

    /// Starts a stopped Redis container again (same command, same port).
    pub async fn start_redis(&mut self, node: RedisNode) -> Result<()> {
        let container = self.container(node)?;
        if container.is_running().await.unwrap_or(false) {
            return Ok(());
        }
        container
            .start()
            .await
            .map_err(|e| ChaosError::Docker(format!("starting {}: {e}", node.name())))?;
        let addr = self.redis_addr(node);
        self.wait_ready(node.name(), container, || probe::redis_ping(&addr))
            .await
    }

    /// Removes every container of the run.
    pub async fn shutdown(mut self) {
        let containers: Vec<_> = self
            .redis
            .iter_mut()
            .chain(std::iter::once(&mut self.postgres))
            .chain(self.sentinels.iter_mut())
            .filter_map(|b| b.container.take())
            .collect();
        for container in containers {
            let id = container.id().to_owned();
            if let Err(e) = container.rm().await {
                tracing::warn!(container = %id, "removing: {e}");
                let _ = reaper::remove(&self.docker, &id).await;
            }
        }
    }
}

/// redis-server's command line (see `local::redis_args`), in /tmp.
fn redis_command(port: u16) -> Vec<String> {
    let mut command = vec!["redis-server".to_owned()];
    command.extend(crate::provider::local::redis_args(
        port,
        std::path::Path::new("/tmp"),
    ));
    command
}

impl Drop for ContainerServers {
    fn drop(&mut self) {
        // The servers go: their ports are no longer ours to keep.
        for backend in self
            .redis
            .iter()
            .chain(std::iter::once(&self.postgres))
            .chain(self.sentinels.iter())
        {
            crate::ports::release_port(backend.port);
        }
        let containers: Vec<ContainerAsync<GenericImage>> = self
            .redis
            .iter_mut()
            .chain(std::iter::once(&mut self.postgres))
            .chain(self.sentinels.iter_mut())
            .filter_map(|b| b.container.take())
            .collect();
        if containers.is_empty() {
            return;
        }
        if tokio::runtime::Handle::try_current().is_ok() {
            // testcontainers removes each container in its own drop.
            drop(containers);
            return;
        }
        // No runtime here (e.g. the runtime is being torn down by a panic):
        // testcontainers' drop would panic, so remove them ourselves on a
        // thread with its own runtime, and forget the handles.
        let ids: Vec<String> = containers.iter().map(|c| c.id().to_owned()).collect();
        containers.into_iter().for_each(std::mem::forget);
        let remover = std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            runtime.block_on(async {
                if let Ok(docker) = docker().await {
                    for id in ids {
                        let _ = reaper::remove(&docker, &id).await;
                    }
                }
            });
        });
        let _ = remover.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_image_references() {
        assert_eq!(split_image("redis:7"), ("redis", "7"));
        assert_eq!(split_image("redis"), ("redis", "latest"));
        assert_eq!(
            split_image("redfence/redis-pg:local"),
            ("redfence/redis-pg", "local")
        );
        assert_eq!(
            split_image("ghcr.io/shopify/toxiproxy:2.12.0"),
            ("ghcr.io/shopify/toxiproxy", "2.12.0")
        );
        assert_eq!(
            split_image("localhost:5000/redis"),
            ("localhost:5000/redis", "latest")
        );
    }
}
