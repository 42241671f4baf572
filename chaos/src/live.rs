//! Everything this process has started and not yet stopped, in one place,
//! and the teardown a signal calls.
//!
//! The providers register what they start — local server processes (by
//! [`crate::spawn`], under the same lock as the fork), the local run's
//! temporary folder, and containers (each carries this process's
//! [`crate::reaper::LABEL_CREATOR`] label, so they are found by label) — and
//! take it back when they stop it themselves. [`teardown`] stops whatever is
//! still registered: it refuses new starts, waits (bounded) for container
//! starts in flight, stops every child (its gentle signal, then `SIGKILL`),
//! removes this process's containers and deletes the folders. A command
//! that catches SIGINT/SIGTERM calls it from its signal thread and then
//! exits, whatever its other threads are doing.
//!
//! A child is identified by pid *and* start time, so a pid reused after its
//! owner reaped the child is never signalled.

use std::path::PathBuf;
use std::process::Child;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::{ChaosError, Result};
use crate::reaper;

/// Poll interval while waiting for children to exit or container starts to
/// finish.
const POLL_MS: u64 = 20;
/// A teardown tries a folder's delete at least this often (a writer of the
/// stopping run may race the first tries), even past its budget…
const FOLDER_DELETE_TRIES: u32 = 5;
/// …and never more often than this, whatever its budget.
const FOLDER_DELETE_TRIES_MAX: u32 = 250;
/// Most rounds of listing and removing this process's containers in a
/// teardown (each a poll apart), within its budget.
const CONTAINER_ROUNDS_MAX: u32 = 250;

/// A registered child.
#[derive(Clone, Debug)]
struct LiveChild {
    pid: u32,
    /// `<pid>:<start time>`, as [`reaper::identity_of`] makes it.
    identity: String,
    server: &'static str,
}

#[derive(Debug, Default)]
struct Registry {
    /// Set by [`teardown`]: nothing new starts.
    closing: bool,
    children: Vec<LiveChild>,
    folders: Vec<PathBuf>,
    containers_starting: usize,
    /// Whether this process ever started a container (else a teardown
    /// does not ask Docker).
    containers_used: bool,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    closing: false,
    children: Vec::new(),
    folders: Vec::new(),
    containers_starting: 0,
    containers_used: false,
});

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

fn closing_error(server: &'static str) -> ChaosError {
    ChaosError::Process {
        server,
        message: "not started: the run is being torn down (interrupted)".into(),
    }
}

/// Forks with `fork` and registers the child, under one lock (so a teardown
/// never misses a child that exists). Refused once a teardown has begun.
pub(crate) fn register_child(
    server: &'static str,
    fork: impl FnOnce() -> std::io::Result<Child>,
) -> std::io::Result<Child> {
    let mut registry = registry();
    if registry.closing {
        return Err(std::io::Error::other(closing_error(server).to_string()));
    }
    let child = fork()?;
    let pid = child.id();
    registry.children.push(LiveChild {
        pid,
        identity: reaper::identity_of(pid),
        server,
    });
    Ok(child)
}

/// Takes a child back: its owner stops it now. Call before signalling or
/// waiting for it.
pub fn unregister_child(pid: u32) {
    registry().children.retain(|c| c.pid != pid);
}

/// The pids of the registered children.
pub fn registered_children() -> Vec<u32> {
    registry().children.iter().map(|c| c.pid).collect()
}

/// Creates a run's temporary folder and registers it (deleted by a
/// teardown), under one lock: a teardown either sees the folder or has
/// begun before it exists, in which case it is not created. Creating and
/// registering in two steps left a window in which a signal's teardown
/// missed a folder that then outlived the run (seen in CI). Refused once a
/// teardown has begun.
pub(crate) fn create_folder(path: &std::path::Path) -> Result<()> {
    let mut registry = registry();
    if registry.closing {
        return Err(closing_error("local provider"));
    }
    std::fs::create_dir(path)
        .map_err(|e| ChaosError::io(format!("creating {}", path.display()), e))?;
    registry.folders.push(path.to_path_buf());
    Ok(())
}

/// Deletes a registered folder, then takes it back. In this order: a
/// signal's teardown exits the process when it is done, and a folder taken
/// back before its delete finished was left half-deleted by that exit (a
/// database's data folder takes a while; seen in CI as a run folder left by a
/// SIGINT). While the delete runs, a teardown may delete it too: both end
/// when it is gone.
pub(crate) fn delete_folder(path: &std::path::Path) {
    let _ = std::fs::remove_dir_all(path);
    registry().folders.retain(|p| p != path);
}

/// A container start in flight; a teardown waits (bounded) for it to end,
/// so the container it creates is found and removed.
#[derive(Debug)]
pub(crate) struct ContainerStart(());

impl ContainerStart {
    /// Refused once a teardown has begun.
    pub(crate) fn begin() -> Result<Self> {
        let mut registry = registry();
        if registry.closing {
            return Err(closing_error("containers"));
        }
        registry.containers_starting += 1;
        registry.containers_used = true;
        Ok(Self(()))
    }
}

impl Drop for ContainerStart {
    fn drop(&mut self) {
        let mut registry = registry();
        registry.containers_starting = registry.containers_starting.saturating_sub(1);
    }
}

/// Whether a teardown has begun (long operations may stop early).
pub fn closing() -> bool {
    registry().closing
}

/// What a teardown stopped and removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Teardown {
    /// Server processes stopped.
    pub processes: usize,
    /// Of those, how many needed `SIGKILL`.
    pub killed: usize,
    /// Containers removed.
    pub containers: usize,
    /// Temporary folders deleted.
    pub folders: usize,
    /// What could not be done (each with its reason).
    pub problems: Vec<String>,
    /// How long it took.
    pub took: Duration,
}

impl std::fmt::Display for Teardown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "stopped {} server process(es){}, removed {} container(s) and {} temporary \
             folder(s) in {:.1} s",
            self.processes,
            if self.killed > 0 {
                format!(" ({} with SIGKILL)", self.killed)
            } else {
                String::new()
            },
            self.containers,
            self.folders,
            self.took.as_secs_f64()
        )?;
        for problem in &self.problems {
            write!(f, "; {problem}")?;
        }
        Ok(())
    }
}

/// The gentle stop for a server: SIGINT is PostgreSQL's fast shutdown,
/// SIGTERM everyone else's.
fn stop_signal(server: &str) -> libc::c_int {
    if server == "postgres" {
        libc::SIGINT
    } else {
        libc::SIGTERM
    }
}

fn send(child: &LiveChild, signal: libc::c_int) {
    if reaper::is_alive(&child.identity) {
        // SAFETY: kill on a pid whose start time we just checked: it is
        // our child (unreaped, so the pid is not reused).
        unsafe {
            libc::kill(child.pid as libc::pid_t, signal);
        }
    }
}

/// Stops everything registered, within `budget`: children get their gentle
/// signal and, after `budget / 2`, SIGKILL; then this process's containers
/// are removed and the folders deleted. Nothing new starts afterwards.
pub fn teardown(budget: Duration) -> Teardown {
    let started = Instant::now();
    let deadline = started + budget;
    let mut report = Teardown::default();
    let (children, folders) = {
        let mut registry = registry();
        registry.closing = true;
        (
            std::mem::take(&mut registry.children),
            std::mem::take(&mut registry.folders),
        )
    };
    // Processes: all signalled at once, then waited for together.
    for child in &children {
        send(child, stop_signal(child.server));
    }
    let kill_at = started + budget / 2;
    let polls = (budget.as_millis() as u64 / 2) / POLL_MS + 1;
    for _ in 0..polls {
        if children.iter().all(|c| !reaper::is_alive(&c.identity)) || Instant::now() >= kill_at {
            break;
        }
        std::thread::sleep(Duration::from_millis(POLL_MS));
    }
    for child in &children {
        if reaper::is_alive(&child.identity) {
            send(child, libc::SIGKILL);
            report.killed += 1;
        }
    }
    report.processes = children.len();
    // Containers: wait for starts in flight (their container must exist to
    // be found), then remove every container this process created.
    for _ in 0..budget.as_millis() as u64 / POLL_MS + 1 {
        if registry().containers_starting == 0 || Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(POLL_MS));
    }
    if registry().containers_used {
        match remove_own_containers(deadline.saturating_duration_since(Instant::now())) {
            Ok(removed) => report.containers = removed,
            Err(e) => report.problems.push(e.to_string()),
        }
    }
    // Folders last: a stopping server may still write into its own.
    for folder in folders {
        match remove_folder(&folder, deadline) {
            Ok(true) => report.folders += 1,
            Ok(false) => {}
            Err(e) => report
                .problems
                .push(format!("deleting {}: {e}", folder.display())),
        }
    }
    report.took = started.elapsed();
    report
}

/// Deletes a run folder; `Ok(false)` if it was already gone. A thread of
/// the run being stopped may still be writing into it (a server's files, a
/// pid file), which makes a delete fail with "directory not empty": it is
/// retried until `deadline` (and at least [`FOLDER_DELETE_TRIES`] times).
/// Nothing recreates a deleted run folder: what the run creates inside it
/// is created without its parents.
fn remove_folder(folder: &std::path::Path, deadline: Instant) -> std::io::Result<bool> {
    let mut last = None;
    for attempt in 0..FOLDER_DELETE_TRIES_MAX {
        match std::fs::remove_dir_all(folder) {
            Ok(()) => return Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(attempt > 0),
            Err(e) => last = Some(e),
        }
        if attempt + 1 >= FOLDER_DELETE_TRIES && Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(POLL_MS));
    }
    Err(last.expect("at least one try failed"))
}

/// Removes the containers labelled as created by this process, within
/// `budget`. A client of its own: the shared one's connections belong to
/// the runtime of the run being stopped, which may be busy or blocked.
fn remove_own_containers(budget: Duration) -> Result<usize> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ChaosError::io("a runtime for the teardown", e))?;
    runtime.block_on(async {
        let work = async {
            let docker = testcontainers::bollard::Docker::connect_with_defaults()
                .map_err(|e| ChaosError::DockerUnavailable(e.to_string()))?;
            // Until none is listed: a container whose removal is already
            // in progress (its own drop, racing this teardown: HTTP 409)
            // is still listed, and a process that exits meanwhile leaves
            // it behind for a moment (seen in CI). Bounded by the rounds and
            // by the budget around this future.
            let mut removed = std::collections::BTreeSet::new();
            for _ in 0..CONTAINER_ROUNDS_MAX {
                let ours = reaper::list_created_by(&docker, &reaper::own_identity()).await?;
                if ours.is_empty() {
                    break;
                }
                let mut removals = tokio::task::JoinSet::new();
                for id in ours {
                    let docker = docker.clone();
                    removals.spawn(async move {
                        let result = reaper::remove(&docker, &id).await;
                        (id, result)
                    });
                }
                while let Some(done) = removals.join_next().await {
                    if let Ok((id, Ok(()))) = done {
                        removed.insert(id);
                    }
                }
                tokio::time::sleep(Duration::from_millis(POLL_MS)).await;
            }
            Ok(removed.len())
        };
        tokio::time::timeout(budget, work)
            .await
            .map_err(|_| ChaosError::Docker(format!("removing containers took over {budget:?}")))?
    })
}
