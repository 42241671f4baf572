//! One worker's adapter as a whole-worker [`JobRunner`]: each job is sent
//! to the adapter process, its protected writes are made on the worker's
//! store path, and its `done` is the job's report.
//!
//! The process starts when the protocol is plugged in (so an interpreter's
//! start-up overlaps the world's), and `init` goes with the first job,
//! when the resource is known. Messages are handled by one task of the
//! worker's own (`env.spawner`), so a pause of the worker stops the
//! harness's side of it too — a `write` the adapter sent just before its
//! `SIGSTOP` is made after the pause, as an in-process worker's would be.
//! The tap in front of the Redis proxy is the network's and is never
//! paused. With Sentinel the worker has a proxy per data node, so it gets a
//! tap per proxy, and `init` maps each node's real address (what Sentinel
//! answers) to that node's tap.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use redfence_core::{
    Fence, FencedWrite, JobId, JobOutcome, JobWrite, LockConfig, OwnerToken, ResourceName,
    StoreError, WriteOutcome,
};
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::task::AbortHandle;

use super::message::{
    FromAdapter, LockSettings, PostgresPath, RedisPath, Route, SentinelInit, ToAdapter,
    PROTOCOL_VERSION,
};
use super::process::{AdapterProcess, LineEvent, EXIT_POLL_MS, KILL_CONFIRM_MS};
use super::tap::{self, TapConfig};
use super::Problems;
use crate::history::JobReport;
use crate::protocol::{Job, JobRunner};
use crate::world::{WorkerEnv, WorkerSignal};

/// How long an adapter has to answer `init` with `ready`.
pub const READY_TIMEOUT_MS: u64 = 10_000;
/// Slack on top of a job's longest honest life before the harness gives
/// up on its `done` (pauses in scenarios last a few seconds).
pub const JOB_SLACK_MS: u64 = 30_000;

/// What `ready` said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ready {
    /// The lock library.
    pub library: String,
    /// Its version.
    pub library_version: Option<String>,
    /// Whether it issues fences.
    pub fences: bool,
}

/// The harness's side of one adapter, shared by its jobs and its message
/// task.
struct Link {
    worker: String,
    process: Arc<AdapterProcess>,
    lines: RefCell<Option<mpsc::Receiver<LineEvent>>>,
    /// The taps' listeners until the first job starts them: the one in
    /// front of the worker's Redis path first, then (Sentinel) one per
    /// other data node, each with the proxy it relays to.
    listeners: RefCell<Vec<(String, std::net::TcpListener)>>,
    taps: RefCell<Vec<AbortHandle>>,
    ready: RefCell<Option<Result<Ready, String>>>,
    ready_seen: Notify,
    /// Jobs sent and not yet done, by id.
    jobs: RefCell<BTreeMap<String, oneshot::Sender<Result<JobReport, String>>>>,
    /// Why the link broke, once it did.
    broken: RefCell<Option<String>>,
    problems: Problems,
}

impl Drop for Link {
    fn drop(&mut self) {
        for tap in self.taps.borrow_mut().drain(..) {
            tap.abort();
        }
        // The protocol's shutdown, waited for off the world's thread (an
        // adapter gets up to the grace period, and the other workers must
        // not stall meanwhile). An adapter the harness neither killed nor
        // left paused must exit with 0 (conformance checks it).
        let harness_stopped = self.process.killed() || self.process.paused();
        let broken = self.broken.borrow().is_some();
        let (process, problems, worker) = (
            self.process.clone(),
            self.problems.clone(),
            self.worker.clone(),
        );
        let stopping = problems.stopping();
        process.ask_to_stop();
        let stop = move || {
            let _stopping = stopping;
            let status = process.stop();
            if !harness_stopped && !broken && status != "exit status 0" {
                problems.push(format!(
                    "{worker}'s adapter did not exit with 0 after shutdown: {status}"
                ));
            }
        };
        // Run by the thread, or here when no thread can start.
        type Stop = Box<dyn FnOnce() + Send>;
        let job: Arc<std::sync::Mutex<Option<Stop>>> =
            Arc::new(std::sync::Mutex::new(Some(Box::new(stop))));
        let theirs = job.clone();
        let take = |job: &std::sync::Mutex<Option<Stop>>| {
            job.lock().unwrap_or_else(|e| e.into_inner()).take()
        };
        let spawned = std::thread::Builder::new()
            .name(format!("{}-adapter-stop", self.worker))
            .spawn(move || {
                if let Some(stop) = take(&theirs) {
                    stop();
                }
            });
        if spawned.is_err() {
            if let Some(stop) = take(&job) {
                stop();
            }
        }
    }
}

impl Link {
    /// Marks the link broken: every waiting job and `ready` fail with
    /// `why`, the adapter's stderr quoted. A crash the harness caused is
    /// not a problem of the adapter's.
    fn break_with(&self, why: String) {
        if self.broken.borrow().is_some() {
            return;
        }
        let why = if self.process.killed() {
            why
        } else {
            let status = self.process.exit_status();
            let tail = self.process.stderr_tail();
            let tail: String = tail
                .chars()
                .rev()
                .take(2_000)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            let why = match status {
                Some(status) => format!("{why} (the adapter {status})"),
                None => why,
            };
            let why = if tail.is_empty() {
                why
            } else {
                format!("{why}; its stderr ended with:\n{tail}")
            };
            self.problems.push(why.clone());
            why
        };
        *self.broken.borrow_mut() = Some(why.clone());
        if self.ready.borrow().is_none() {
            *self.ready.borrow_mut() = Some(Err(why.clone()));
            self.ready_seen.notify_waiters();
        }
        for (_, job) in std::mem::take(&mut *self.jobs.borrow_mut()) {
            let _ = job.send(Err(why.clone()));
        }
    }
}

/// A worker's adapter as a [`JobRunner`].
pub struct AdapterRunner {
    link: Rc<Link>,
    env: WorkerEnv,
    config: LockConfig,
    started: RefCell<bool>,
    /// The message task, which holds the link: stopped with the runner, so
    /// the adapter is shut down when its worker's jobs end, not when the
    /// world does.
    messages: RefCell<Option<AbortHandle>>,
}

impl Drop for AdapterRunner {
    fn drop(&mut self) {
        if let Some(task) = self.messages.borrow_mut().take() {
            task.abort();
        }
    }
}

impl AdapterRunner {
    /// Starts `argv` for the worker `env` belongs to. A start that fails
    /// makes every job fail with the reason (and records it in
    /// `problems`).
    pub(super) fn start(
        argv: &[String],
        env: WorkerEnv,
        config: &LockConfig,
        problems: Problems,
    ) -> Result<Self, String> {
        let Some(paths) = env.paths.clone() else {
            return Err(format!(
                "{}: a lock adapter runs only on real servers (this world gives a worker no address another process can dial)",
                env.name
            ));
        };
        if env.wire_tap.is_none() {
            return Err(format!("{}: the worker is not observed", env.name));
        }
        let bind = || {
            let listener = std::net::TcpListener::bind("127.0.0.1:0")
                .map_err(|e| format!("{}: binding its tap: {e}", env.name))?;
            let port = listener
                .local_addr()
                .map_err(|e| format!("{}: its tap's address: {e}", env.name))?
                .port();
            Ok::<_, String>((listener, port))
        };
        let (listener, port) = bind()?;
        let mut listeners = vec![(paths.redis_addr.clone(), listener)];
        // With Sentinel: every other node's proxy gets a tap of its own.
        // Bounded: one per data node of the world.
        for (_, proxy) in paths.sentinel.iter().flat_map(|s| &s.routes) {
            if listeners.iter().all(|(upstream, _)| upstream != proxy) {
                listeners.push((proxy.clone(), bind()?.0));
            }
        }
        let vars = vec![
            (
                "REDFENCE_ADAPTER_PROTOCOL".to_owned(),
                PROTOCOL_VERSION.to_string(),
            ),
            ("REDFENCE_WORKER".to_owned(), env.name.clone()),
            ("REDFENCE_REDIS_HOST".to_owned(), "127.0.0.1".to_owned()),
            ("REDFENCE_REDIS_PORT".to_owned(), port.to_string()),
            (
                "REDFENCE_REDIS_URL".to_owned(),
                format!("redis://127.0.0.1:{port}/0"),
            ),
            (
                "REDFENCE_POSTGRES_URL".to_owned(),
                paths.postgres_url.clone(),
            ),
        ];
        let (process, lines) =
            AdapterProcess::start(&env.name, argv, &vars).map_err(|e| e.to_string())?;
        let link = Rc::new(Link {
            worker: env.name.clone(),
            process: Arc::new(process),
            lines: RefCell::new(Some(lines)),
            listeners: RefCell::new(listeners),
            taps: RefCell::new(Vec::new()),
            ready: RefCell::new(None),
            ready_seen: Notify::new(),
            jobs: RefCell::default(),
            broken: RefCell::new(None),
            problems,
        });
        // The worker's pauses and crash reach the process group. Weak: the
        // hook outlives the runner in the world, the process must not.
        let process = Arc::downgrade(&link.process);
        let (watch_problems, worker) = (link.problems.clone(), env.name.clone());
        env.spawner.on_signal(Arc::new(move |signal| {
            if let Some(process) = process.upgrade() {
                process.signal(signal);
                if signal == WorkerSignal::Kill {
                    confirm_kill(process, watch_problems.clone(), worker.clone());
                }
            }
        }));
        Ok(Self {
            link,
            env,
            config: config.clone(),
            started: RefCell::new(false),
            messages: RefCell::new(None),
        })
    }

    /// The first job's set-up: the tap, the message task, `init`, `ready`.
    async fn ensure_started(&self, resource: &str) -> Result<(), String> {
        if !*self.started.borrow() {
            *self.started.borrow_mut() = true;
            if let Err(why) = self.begin(resource) {
                self.link.break_with(why.clone());
                return Err(why);
            }
        }
        let waited = tokio::time::timeout(Duration::from_millis(READY_TIMEOUT_MS), async {
            // Bounded by the timeout around it.
            loop {
                let notified = self.link.ready_seen.notified();
                if let Some(ready) = self.link.ready.borrow().clone() {
                    return ready.map(|_| ());
                }
                notified.await;
            }
        })
        .await;
        match waited {
            Ok(result) => result,
            Err(_) => {
                let why = format!(
                    "{}'s adapter did not answer init within {READY_TIMEOUT_MS} ms",
                    self.link.worker
                );
                self.link.break_with(why.clone());
                Err(self.link.broken.borrow().clone().unwrap_or(why))
            }
        }
    }

    fn begin(&self, resource: &str) -> Result<(), String> {
        let env = &self.env;
        let paths = env.paths.clone().expect("checked at start");
        let tap = env.wire_tap.clone().expect("checked at start");
        let name = crate::protocols::resource_name(resource).map_err(|e| e.to_string())?;
        let keys = self.config.keys();
        let lock_key = keys.lock_key(&name);
        let listeners = std::mem::take(&mut *self.link.listeners.borrow_mut());
        assert!(!listeners.is_empty(), "begun once");
        // Each proxy's tap address, as the adapter dials it.
        let mut tap_of = Vec::with_capacity(listeners.len());
        for (upstream, listener) in listeners {
            let port = listener.local_addr().map_err(|e| e.to_string())?.port();
            let handle = tap::start(
                listener,
                TapConfig {
                    upstream: upstream.clone(),
                    lock_key: lock_key.clone().into_bytes(),
                    tap: tap.clone(),
                },
            )
            .map_err(|e| format!("{}: starting its tap: {e}", env.name))?;
            self.link.taps.borrow_mut().push(handle);
            tap_of.push((upstream, port));
        }
        let port = tap_of[0].1;
        let sentinel = match &paths.sentinel {
            None => None,
            Some(sentinel) => {
                let mut routes = Vec::with_capacity(sentinel.routes.len());
                for (real, proxy) in &sentinel.routes {
                    let (_, port) = tap_of
                        .iter()
                        .find(|(upstream, _)| upstream == proxy)
                        .expect("a tap for every route's proxy");
                    routes.push(Route {
                        from: real.clone(),
                        to: format!("127.0.0.1:{port}"),
                    });
                }
                Some(SentinelInit {
                    master_name: sentinel.master_name.clone(),
                    sentinels: sentinel.sentinels.clone(),
                    routes,
                })
            }
        };
        let lines = self.link.lines.borrow_mut().take().expect("begun once");
        let link = self.link.clone();
        let task_env = env.clone();
        let task_resource = name.clone();
        let task = env.spawner.spawn(async move {
            handle_messages(link, task_env, task_resource, lines).await;
        });
        *self.messages.borrow_mut() = Some(task.abort_handle());
        let init = ToAdapter::Init {
            protocol: PROTOCOL_VERSION,
            worker: env.name.clone(),
            redis: RedisPath {
                host: "127.0.0.1".into(),
                port,
                url: format!("redis://127.0.0.1:{port}/0"),
            },
            postgres: PostgresPath {
                url: paths.postgres_url,
            },
            lock: Box::new(LockSettings {
                key: lock_key,
                fence_key: keys.fence_key(&name),
                resource: resource.to_owned(),
                lease_ms: self.config.lease_ms(),
                renew_interval_ms: self.config.renew_interval_ms(),
                hold_ms_max: self.config.hold_ms_max(),
                acquire_deadline_ms: self.config.acquire_deadline_ms(),
                op_timeout_ms: self.config.op_timeout_ms(),
                renewals_max: self.config.renewals_max(),
                backoff_base_ms: self.config.backoff_base_ms(),
                backoff_cap_ms: self.config.backoff_cap_ms(),
                attempts_max: self.config.attempts_max(),
                fence_source: self.config.fence_source().name().to_owned(),
            }),
            sentinel,
        };
        if !self.link.process.send(init.line()) {
            self.link
                .break_with(format!("{}'s adapter closed its stdin", env.name));
        }
        Ok(())
    }
}

#[async_trait(?Send)]
impl JobRunner for AdapterRunner {
    async fn run(&self, job: &Job) -> JobReport {
        if let Err(why) = self.ensure_started(&job.resource).await {
            tracing::warn!(worker = %self.link.worker, "{why}");
            return JobReport::Failed;
        }
        if let Some(why) = self.link.broken.borrow().clone() {
            tracing::warn!(worker = %self.link.worker, "{why}");
            return JobReport::Failed;
        }
        let (done, answer) = oneshot::channel();
        {
            let mut jobs = self.link.jobs.borrow_mut();
            if jobs.contains_key(&job.job_id) {
                return JobReport::Failed;
            }
            jobs.insert(job.job_id.clone(), done);
        }
        let sent = self.link.process.send(
            ToAdapter::Job {
                job: job.job_id.clone(),
                resource: job.resource.clone(),
                work_ms: job.work_ms,
            }
            .line(),
        );
        if !sent {
            self.link.break_with(format!(
                "{}'s adapter is not reading its stdin (closed, or {} lines behind)",
                self.link.worker,
                super::process::LINES_QUEUED_MAX
            ));
        }
        // A job's longest honest life: the acquire deadline, the work, the
        // longest hold, a lease, and slack for pauses and slow machines.
        let limit_ms = self.config.acquire_deadline_ms()
            + job.work_ms
            + self.config.hold_ms_max()
            + self.config.lease_ms()
            + JOB_SLACK_MS;
        match tokio::time::timeout(Duration::from_millis(limit_ms), answer).await {
            Ok(Ok(Ok(report))) => report,
            Ok(Ok(Err(why))) => {
                tracing::warn!(worker = %self.link.worker, "{why}");
                JobReport::Failed
            }
            Ok(Err(_)) => JobReport::Failed,
            Err(_) => {
                self.link.break_with(format!(
                    "{}'s adapter did not answer job {} within {limit_ms} ms",
                    self.link.worker, job.job_id
                ));
                JobReport::Failed
            }
        }
    }
}

/// Checks, off the world's thread, that a crash's `SIGKILL` ended the
/// process within [`KILL_CONFIRM_MS`]; if not, the run has a problem (its
/// error): a "crashed" worker still running is not the crash the scenario
/// asked for.
fn confirm_kill(process: Arc<AdapterProcess>, problems: Problems, worker: String) {
    let stopping = problems.stopping();
    let watch = move || {
        let _stopping = stopping;
        let deadline = std::time::Instant::now() + Duration::from_millis(KILL_CONFIRM_MS);
        // Bounded by the deadline.
        while !process.has_exited() {
            if std::time::Instant::now() >= deadline {
                problems.push(format!(
                    "{worker}'s adapter was still running {KILL_CONFIRM_MS} ms after the \
                     crash's SIGKILL"
                ));
                return;
            }
            std::thread::sleep(Duration::from_millis(EXIT_POLL_MS));
        }
    };
    if let Err(e) = std::thread::Builder::new()
        .name("adapter-kill-watch".to_owned())
        .spawn(watch)
    {
        tracing::warn!("cannot watch a crashed adapter exit: {e}");
    }
}

/// The worker's message task: every line from the adapter, in order.
async fn handle_messages(
    link: Rc<Link>,
    env: WorkerEnv,
    resource: ResourceName,
    mut lines: mpsc::Receiver<LineEvent>,
) {
    // Bounded by the adapter's output: ends at its end or a bad line.
    while let Some(event) = lines.recv().await {
        let line = match event {
            LineEvent::Line(line) => line,
            LineEvent::TooLong => {
                link.break_with(format!(
                    "{}'s adapter sent a line over {} bytes",
                    link.worker,
                    super::message::LINE_BYTES_MAX
                ));
                return;
            }
            LineEvent::NotText => {
                link.break_with(format!(
                    "{}'s adapter sent a line that is not UTF-8",
                    link.worker
                ));
                return;
            }
            LineEvent::End => {
                link.break_with(format!("{}'s adapter closed its stdout", link.worker));
                return;
            }
        };
        let message = match FromAdapter::parse(&link.worker, &line) {
            Ok(message) => message,
            Err(bad) => {
                link.break_with(bad.to_string());
                return;
            }
        };
        match message {
            FromAdapter::Ready {
                protocol,
                library,
                library_version,
                fences,
            } => {
                if protocol != PROTOCOL_VERSION {
                    link.break_with(format!(
                        "{}'s adapter speaks protocol {protocol}, this harness {PROTOCOL_VERSION}",
                        link.worker
                    ));
                    return;
                }
                let ready = Ready {
                    library,
                    library_version,
                    fences,
                };
                link.problems.set_library(ready.clone());
                *link.ready.borrow_mut() = Some(Ok(ready));
                link.ready_seen.notify_waiters();
            }
            FromAdapter::Done { job, report, .. } => {
                let waiting = link.jobs.borrow_mut().remove(&job);
                match waiting {
                    Some(done) => {
                        let _ = done.send(Ok(report.into()));
                    }
                    None => {
                        link.break_with(format!(
                            "{}'s adapter sent done for job {job:?}, which is not running",
                            link.worker
                        ));
                        return;
                    }
                }
            }
            FromAdapter::Write {
                id,
                job,
                owner,
                fence,
            } => {
                if !link.jobs.borrow().contains_key(&job) {
                    // Only a job the harness gave this worker may write:
                    // a write for another worker's job is refused, unmade.
                    link.break_with(format!(
                        "{}'s adapter asked to write for job {job:?}, which is not running on it",
                        link.worker
                    ));
                    return;
                }
                let reply = write(&env, &resource, &job, &owner, fence).await;
                let reply = match reply {
                    Ok(outcome) => outcome_message(id, outcome),
                    Err((definite, detail)) => ToAdapter::Written {
                        id,
                        outcome: "error".into(),
                        last_fence: None,
                        definite: Some(definite),
                        detail: Some(detail),
                    },
                };
                if !link.process.send(reply.line()) {
                    link.break_with(format!(
                        "{}'s adapter is not reading its stdin",
                        link.worker
                    ));
                    return;
                }
            }
            FromAdapter::NextFence { id } => {
                let reply = match next_fence(&env, &resource).await {
                    Ok(fence) => ToAdapter::Fence {
                        id,
                        fence: Some(fence),
                        error: None,
                    },
                    Err(why) => ToAdapter::Fence {
                        id,
                        fence: None,
                        error: Some(why),
                    },
                };
                if !link.process.send(reply.line()) {
                    link.break_with(format!(
                        "{}'s adapter is not reading its stdin",
                        link.worker
                    ));
                    return;
                }
            }
            FromAdapter::Error { message } => {
                link.break_with(format!("{}'s adapter gave up: {message}", link.worker));
                return;
            }
        }
    }
}

/// What a write did, in the protocol's words.
enum Written {
    Applied,
    AlreadyDone,
    Stale(i64),
    NotFound,
}

fn outcome_message(id: u64, outcome: Written) -> ToAdapter {
    let (outcome, last_fence) = match outcome {
        Written::Applied => ("accepted", None),
        Written::AlreadyDone => ("already-done", None),
        Written::Stale(last) => ("stale", Some(last)),
        Written::NotFound => ("not-found", None),
    };
    ToAdapter::Written {
        id,
        outcome: outcome.into(),
        last_fence,
        definite: None,
        detail: None,
    }
}

fn store_failure(error: StoreError) -> (bool, String) {
    (error.definitely_not_applied(), error.to_string())
}

/// The protected write on the worker's (observed) store path, completing
/// its job idempotently either way: fenced when the lock gave a fence,
/// else the unchecked path with no fence (fence 0), which
/// `unfenced-stale-write` judges.
async fn write(
    env: &WorkerEnv,
    resource: &ResourceName,
    job_id: &str,
    owner: &str,
    fence: Option<i64>,
) -> Result<Written, (bool, String)> {
    let bad = |why: String| (true, why);
    let resource = resource.clone();
    let job = Job {
        resource: resource.as_str().to_owned(),
        job_id: job_id.to_owned(),
        work_ms: 0,
    };
    let value = job.value(&env.name, fence);
    match fence {
        Some(fence) => {
            let write = JobWrite {
                job_id: JobId::new(job_id).map_err(|e| bad(format!("job id: {e}")))?,
                write: FencedWrite {
                    resource,
                    fence: Fence::new(fence).map_err(|e| bad(format!("fence: {e}")))?,
                    owner: OwnerToken::new(owner).map_err(|e| bad(format!("owner: {e}")))?,
                    value,
                },
            };
            match env.store.apply_job(&write).await {
                Ok(JobOutcome::Applied) => Ok(Written::Applied),
                Ok(JobOutcome::AlreadyDone) => Ok(Written::AlreadyDone),
                Ok(JobOutcome::Stale { last_fence }) => Ok(Written::Stale(last_fence)),
                Ok(JobOutcome::NotFound) => Ok(Written::NotFound),
                Err(error) => Err(store_failure(error)),
            }
        }
        None => {
            OwnerToken::new(owner).map_err(|e| bad(format!("owner: {e}")))?;
            // Idempotent like the fenced write: a job completed before is
            // not applied again. Not having a fence is the library's; not
            // checking the job is not, and exactly-once must judge the
            // former only. (A check, then the write: two copies of one job
            // at the very same moment can still both apply.)
            let id = JobId::new(job_id).map_err(|e| bad(format!("job id: {e}")))?;
            match env.store.is_completed(&id).await {
                Ok(true) => return Ok(Written::AlreadyDone),
                Ok(false) => {}
                Err(error) => return Err(store_failure(error)),
            }
            match env
                .raw_store
                .write_unchecked(resource.as_str(), 0, owner, Some(job_id), &value)
                .await
            {
                Ok(WriteOutcome::Accepted) => Ok(Written::Applied),
                Ok(WriteOutcome::Stale { last_fence }) => Ok(Written::Stale(last_fence)),
                Ok(WriteOutcome::NotFound) => Ok(Written::NotFound),
                Err(error) => Err(store_failure(error)),
            }
        }
    }
}

async fn next_fence(env: &WorkerEnv, resource: &ResourceName) -> Result<i64, String> {
    env.store_fences
        .fence_for(resource, None)
        .await
        .map(|fence| fence.get())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sleeper() -> Arc<AdapterProcess> {
        let argv = ["sleep".to_owned(), "30".to_owned()];
        let (process, _lines) = AdapterProcess::start("w0", &argv, &[]).expect("sleep starts");
        Arc::new(process)
    }

    /// A crash whose `SIGKILL` did not end the process is the run's
    /// problem, named; one that did is not.
    #[test]
    fn a_crashed_adapter_still_running_is_a_problem() {
        let alive = sleeper();
        let problems = Problems::default();
        confirm_kill(alive.clone(), problems.clone(), "w0".into());
        // `all` waits (bounded) for the watcher.
        let said = problems.all();
        assert!(
            said.iter()
                .any(|p| p.contains("w0's adapter was still running")),
            "{said:?}"
        );
        alive.stop();

        let killed = sleeper();
        let problems = Problems::default();
        killed.signal(WorkerSignal::Kill);
        confirm_kill(killed.clone(), problems.clone(), "w0".into());
        assert!(problems.all().is_empty());
        assert!(killed.has_exited());
        killed.stop();
    }
}
