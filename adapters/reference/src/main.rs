//! `redfence-reference-adapter`: redfence-core's own lock, as a service
//! deploys it, behind the lock-adapter protocol (docs/adapter-protocol.md).
//!
//! Why it exists: it is the adapter every other adapter can be compared
//! with. Each job runs `redfence_core::Worker::process` unchanged — the
//! acquire script with its full-jitter retries under the acquire deadline,
//! the renewal keeper in the job's own task, the fenced write, the
//! compare-and-delete release — and only storage and store fences go over
//! the protocol (`remote.rs`). Fences come from the Redis counter in the
//! acquire script, or with `fence_source: store` from `next-fence`.
//!
//! Wire: `init` on stdin is answered with `ready`; every `job` runs in a task
//! of its own (jobs may overlap) and ends with `done`; `shutdown` or a closed
//! stdin ends the process with 0; a line it cannot understand gets an `error`
//! message and exit status 2. Logs go to stderr (`RUST_LOG`, default `warn`).
//! With `init.sentinel` each job first asks Sentinel where the master is
//! (`sentinel.rs`).

mod protocol;
mod remote;
mod sentinel;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use redfence_core::{
    FenceSourceKind, JobId, KeyScheme, LockClient, LockConfig, OwnershipLost, ProcessOutcome,
    ResourceName, Worker,
};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use serde_json::json;
use tokio::io::BufReader;
use tokio::sync::OnceCell;
use tokio::task::JoinSet;

use protocol::{Channel, Incoming, Init, JobMessage, Malformed};
use remote::{RemoteFences, RemoteStore};
use sentinel::MasterFollower;

/// Most jobs running at once; a job past it is answered `failed` at once.
const JOBS_MAX: usize = 256;

/// How long running jobs get to end (and release) after `shutdown`; the
/// protocol kills the process group 2 s after it.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(1000);

/// Everything a job needs, made once from `init`.
struct Adapter {
    channel: Arc<Channel>,
    init: Init,
    config: LockConfig,
    resource: ResourceName,
    /// Made on the first job, not at `init`: Redis may be unreachable then,
    /// and a later job tries again. The manager reconnects by itself after
    /// a fault closes its connection.
    redis: OnceCell<ConnectionManager>,
    /// With Sentinel (`init.sentinel`): where the master is now, asked
    /// before each job, instead of `redis`.
    follower: Option<MasterFollower>,
}

impl Adapter {
    /// Checks `init` against redfence-core: the settings must make a valid
    /// [`LockConfig`], and core's key for the resource must be `lock.key`.
    fn new(channel: Arc<Channel>, init: Init) -> Result<Self, String> {
        let lock = &init.lock;
        let fence_source = FenceSourceKind::from_name(&lock.fence_source)
            .ok_or_else(|| format!("unknown fence_source {:?}", lock.fence_source))?;
        let mut builder = LockConfig::builder()
            .lease_ms(lock.lease_ms)
            .renew_interval_ms(lock.renew_interval_ms)
            .hold_ms_max(lock.hold_ms_max)
            .acquire_deadline_ms(lock.acquire_deadline_ms)
            .op_timeout_ms(lock.op_timeout_ms)
            .fence_source(fence_source)
            .keys(KeyScheme::default());
        // The scenario's retry and renewal limits, where init gives them.
        if let Some(n) = lock.renewals_max {
            builder = builder.renewals_max(n);
        }
        if let Some(ms) = lock.backoff_base_ms {
            builder = builder.backoff_base_ms(ms);
        }
        if let Some(ms) = lock.backoff_cap_ms {
            builder = builder.backoff_cap_ms(ms);
        }
        if let Some(n) = lock.attempts_max {
            builder = builder.attempts_max(n);
        }
        let config = builder
            .build()
            .map_err(|e| format!("lock settings refused by redfence-core: {e}"))?;
        let resource = ResourceName::new(lock.resource.as_str())
            .map_err(|e| format!("resource {:?}: {e}", lock.resource))?;
        let (key, fence_key) = (
            config.keys().lock_key(&resource),
            config.keys().fence_key(&resource),
        );
        if key != lock.key || fence_key != lock.fence_key {
            return Err(format!(
                "redfence-core keeps resource {:?} at {key:?} and {fence_key:?}, \
                 but init says {:?} and {:?}",
                lock.resource, lock.key, lock.fence_key
            ));
        }
        let follower = init
            .sentinel
            .clone()
            .map(|s| MasterFollower::new(s, config.op_timeout()));
        Ok(Self {
            channel,
            init,
            config,
            resource,
            redis: OnceCell::new(),
            follower,
        })
    }

    async fn redis(&self) -> Result<ConnectionManager, String> {
        if let Some(follower) = &self.follower {
            return follower.master().await;
        }
        let op_timeout = self.config.op_timeout();
        self.redis
            .get_or_try_init(|| async {
                let client = redis::Client::open(self.init.redis.url.as_str())
                    .map_err(|e| format!("redis url: {e}"))?;
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(op_timeout))
                    .set_response_timeout(Some(op_timeout))
                    .set_number_of_retries(1);
                client
                    .get_connection_manager_with_config(config)
                    .await
                    .map_err(|e| format!("connecting to redis: {e}"))
            })
            .await
            .cloned()
    }

    /// One job through `Worker::process`, as a (report, detail) pair.
    async fn run(&self, job: &JobMessage) -> (&'static str, String) {
        if job.resource != self.init.lock.resource {
            return (
                "failed",
                format!(
                    "job resource {:?} is not init's {:?}: its lock would not be on {}",
                    job.resource, self.init.lock.resource, self.init.lock.key
                ),
            );
        }
        let job_id = match JobId::new(job.job.as_str()) {
            Ok(id) => id,
            Err(e) => return ("failed", format!("job id: {e}")),
        };
        let redis = match self.redis().await {
            Ok(redis) => redis,
            Err(e) => return ("failed", e),
        };
        let mut builder = LockClient::builder(redis, self.config.clone());
        if self.config.fence_source() == FenceSourceKind::Store {
            builder = builder.fence_source(Arc::new(RemoteFences::new(self.channel.clone())));
        }
        let lock = match builder.build() {
            Ok(lock) => lock,
            Err(e) => return ("failed", format!("lock client: {e}")),
        };
        let worker = Worker::new(lock, Arc::new(RemoteStore::new(self.channel.clone())));
        let work = Duration::from_millis(job.work_ms);
        let outcome = worker
            .process(&self.resource, &job_id, |fence| async move {
                tokio::time::sleep(work).await;
                // The harness decides what is written; the value stays here.
                Ok(format!("{} under fence {fence}", self.init.worker))
            })
            .await;
        report(outcome)
    }
}

/// Core's job outcome in the protocol's words.
fn report(outcome: ProcessOutcome) -> (&'static str, String) {
    let name = outcome.name();
    let detail = match outcome {
        ProcessOutcome::Success { fence } => format!("written under fence {fence}"),
        ProcessOutcome::AlreadyDone => "the job was applied before".to_owned(),
        ProcessOutcome::RetryLater => "lock contended past the acquire deadline".to_owned(),
        ProcessOutcome::OwnershipLost(OwnershipLost::FenceRejected { fence, last_fence }) => {
            format!("fence {fence} refused as stale (store at {last_fence})")
        }
        ProcessOutcome::OwnershipLost(OwnershipLost::Lease(lost)) => {
            format!("lease lost before the write: {lost:?}")
        }
        ProcessOutcome::Failed(e) => e.to_string(),
    };
    (name, detail)
}

async fn done(channel: &Channel, job: &str, report: &str, detail: String) {
    let message = json!({"type": "done", "job": job, "report": report, "detail": detail});
    if let Err(e) = channel.send(&message).await {
        tracing::error!(job, error = %e, "could not send done");
    }
}

async fn refuse(channel: &Channel, Malformed(message): Malformed) -> ExitCode {
    tracing::error!("{message}");
    let _ = channel
        .send(&json!({"type": "error", "message": message}))
        .await;
    ExitCode::from(2)
}

async fn stop(channel: &Channel, mut jobs: JoinSet<()>, code: ExitCode) -> ExitCode {
    channel.stop();
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while jobs.join_next().await.is_some() {}
    })
    .await;
    // Jobs still running are dropped with the runtime; their leases expire.
    code
}

async fn serve() -> ExitCode {
    let channel = Channel::stdout();
    let mut input = BufReader::new(tokio::io::stdin());
    let init = match protocol::read_line(&mut input, 1).await {
        Ok(None) => return ExitCode::SUCCESS,
        Ok(Some(line)) => match protocol::parse_init(&line) {
            Ok(init) => init,
            Err(e) => return refuse(&channel, e).await,
        },
        Err(e) => return refuse(&channel, e).await,
    };
    let adapter = match Adapter::new(channel.clone(), init) {
        Ok(adapter) => Arc::new(adapter),
        Err(e) => return refuse(&channel, Malformed(e)).await,
    };
    let ready = json!({
        "type": "ready",
        "protocol": protocol::PROTOCOL,
        "library": "redfence-core",
        // Built from this workspace, at the adapter's own version.
        "library_version": env!("CARGO_PKG_VERSION"),
        "fences": true,
    });
    if channel.send(&ready).await.is_err() {
        return ExitCode::from(2);
    }
    let mut jobs = JoinSet::new();
    let mut lineno = 1;
    loop {
        lineno += 1;
        let message = match protocol::read_line(&mut input, lineno).await {
            Ok(None) => return stop(&channel, jobs, ExitCode::SUCCESS).await,
            Ok(Some(line)) => protocol::parse_incoming(&line, lineno),
            Err(e) => Err(e),
        };
        match message {
            Ok(Incoming::Job(job)) => {
                while jobs.try_join_next().is_some() {}
                if jobs.len() >= JOBS_MAX {
                    let busy = format!("{JOBS_MAX} jobs already running");
                    done(&channel, &job.job, "failed", busy).await;
                    continue;
                }
                let (adapter, channel) = (adapter.clone(), channel.clone());
                jobs.spawn(async move {
                    let (report, detail) = adapter.run(&job).await;
                    done(&channel, &job.job, report, detail).await;
                });
            }
            Ok(Incoming::Reply(id, reply)) => {
                if let Err(e) = channel.dispatch(id, reply) {
                    let code = refuse(&channel, e).await;
                    return stop(&channel, jobs, code).await;
                }
            }
            Ok(Incoming::Shutdown) => return stop(&channel, jobs, ExitCode::SUCCESS).await,
            Ok(Incoming::Error(message)) => {
                tracing::error!("the harness says: {message}");
                return stop(&channel, jobs, ExitCode::from(2)).await;
            }
            Err(e) => {
                let code = refuse(&channel, e).await;
                return stop(&channel, jobs, code).await;
            }
        }
    }
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("redfence-reference-adapter: no tokio runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let code = runtime.block_on(serve());
    // Do not wait for jobs still running or for stdin's blocking reader.
    runtime.shutdown_timeout(Duration::from_millis(100));
    code
}
