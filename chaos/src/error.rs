//! The chaos crate's one error type.
//!
//! Every failure to provision or fault the real world ends up here, typed, and
//! the message says what to install or set: a run that cannot get its servers
//! must tell the person at the terminal how to fix that, not just that it
//! failed.

use std::time::Duration;

use thiserror::Error;

/// Which server a message is about.
pub type ServerName = &'static str;

/// Errors of provisioning and fault injection.
#[derive(Debug, Error)]
pub enum ChaosError {
    /// A configuration variable holds something this crate cannot use.
    #[error("{var}={value:?} is not valid: {expected}")]
    BadConfig {
        /// The environment variable.
        var: &'static str,
        /// What it held.
        value: String,
        /// What it may hold.
        expected: &'static str,
    },

    /// No provider can run here: no Docker engine answers and the server
    /// binaries are not installed.
    #[error(
        "no way to run Redis and PostgreSQL here: no Docker engine answered ({docker}) and \
         local binaries are missing ({local}). Either start Docker and build the images \
         (scripts/images), or install the servers (apt-get install redis-server postgresql) \
         and set REDFENCE_PROVIDER=local, or point REDFENCE_PROVIDER=external at running \
         servers (REDFENCE_CHAOS_REDIS_PRIMARY_URL, REDFENCE_CHAOS_REDIS_REPLICA_URL, \
         REDFENCE_CHAOS_DATABASE_URL)"
    )]
    NoProvider {
        /// Why Docker was not usable.
        docker: String,
        /// Why local processes were not usable.
        local: String,
    },

    /// The Docker engine is not reachable.
    #[error(
        "the Docker engine does not answer ({0}); start dockerd (or set DOCKER_HOST), or use \
         REDFENCE_PROVIDER=local"
    )]
    DockerUnavailable(String),

    /// A container image is not on this machine (nothing is pulled).
    #[error(
        "container image {image} is not on this machine ({cause}); build it with \
         `scripts/images` (as root: redfence/redis-pg:local from Debian packages, no \
         registry), or set {var} to an image you have, or use REDFENCE_PROVIDER=local"
    )]
    ImageUnavailable {
        /// The image reference.
        image: String,
        /// The environment variable that chooses it.
        var: &'static str,
        /// What Docker said.
        cause: String,
    },

    /// Docker (through testcontainers or bollard) failed.
    #[error("docker: {0}")]
    Docker(String),

    /// A server binary the local provider needs is missing.
    #[error("{program} not found ({looked}); install it (apt-get install {package}) or set {var}")]
    MissingBinary {
        /// The program.
        program: &'static str,
        /// Where it was looked for.
        looked: String,
        /// The Debian package that has it.
        package: &'static str,
        /// The variable that points at it.
        var: &'static str,
    },

    /// An external server does not answer.
    #[error(
        "cannot reach the {server} at {addr} ({cause}); is it running there? If it runs \
         elsewhere, change {var}"
    )]
    ExternalUnreachable {
        /// Which server (`Redis primary`, `Redis replica`, `PostgreSQL`).
        server: ServerName,
        /// `host:port` tried.
        addr: String,
        /// The variable that set the address.
        var: &'static str,
        /// What the connection attempt said.
        cause: String,
    },

    /// A variable the external provider needs is not set.
    #[error("REDFENCE_PROVIDER=external needs {0} (the URL of a running server)")]
    MissingExternal(&'static str),

    /// A local server process could not be started or died.
    #[error("{server}: {message}")]
    Process {
        /// Which server.
        server: ServerName,
        /// What happened, with the end of its log where there is one.
        message: String,
    },

    /// A server did not become ready in time.
    #[error("{server} not ready after {waited:?}: {last_error}")]
    NotReady {
        /// Which server.
        server: ServerName,
        /// How long we waited.
        waited: Duration,
        /// The last error seen while polling.
        last_error: String,
    },

    /// The operation needs a capability this provider lacks.
    #[error("{operation} is not possible with the {provider} provider: {why}")]
    Unsupported {
        /// The operation.
        operation: &'static str,
        /// The provider.
        provider: &'static str,
        /// Why.
        why: &'static str,
    },

    /// A worker index outside the topology.
    #[error("worker {worker} does not exist (the topology has {workers})")]
    NoSuchWorker {
        /// The index asked for.
        worker: usize,
        /// How many workers there are.
        workers: usize,
    },

    /// A Redis master index outside the topology.
    #[error("master {master} does not exist (the topology has {masters})")]
    NoSuchMaster {
        /// The index asked for.
        master: usize,
        /// How many masters there are.
        masters: usize,
    },

    /// The Toxiproxy API refused or failed a request.
    #[error("toxiproxy {operation}: {message}")]
    Toxiproxy {
        /// What we asked.
        operation: String,
        /// What went wrong.
        message: String,
    },

    /// A Redis command of the orchestration (not of a worker) failed.
    #[error("redis {node}: {source}")]
    Redis {
        /// Which node.
        node: ServerName,
        /// The client's error.
        #[source]
        source: redis::RedisError,
    },

    /// The `MONITOR` recorder of a Redis node failed (see `monitor.rs`).
    #[error("recording redis {node}: {message}")]
    Monitor {
        /// Which node.
        node: String,
        /// What went wrong.
        message: String,
    },

    /// Setting up the database (creating it, migrations) failed.
    #[error("postgres: {0}")]
    Postgres(String),

    /// Local I/O (temp dirs, sockets, processes).
    #[error("{context}: {source}")]
    Io {
        /// What we were doing.
        context: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

impl ChaosError {
    /// Wraps an I/O error with what we were doing.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }

    /// A Toxiproxy API failure.
    pub fn toxiproxy(operation: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Toxiproxy {
            operation: operation.into(),
            message: message.into(),
        }
    }
}

/// The crate's result type.
pub type Result<T, E = ChaosError> = std::result::Result<T, E>;
