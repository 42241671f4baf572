//! Removing what a killed run left behind.
//!
//! testcontainers-rs has no reaper (no Ryuk): a run that is killed (SIGKILL,
//! OOM, a CI timeout) before its drops run leaves its containers running.
//! Every container we start carries labels naming its owner and the process
//! that created it (pid plus the process's start time, so a reused pid is
//! not mistaken for the creator); each new start first removes labelled
//! containers whose creator is gone. Containers of live processes — another
//! test binary running now — are left alone.
//!
//! The local provider does the same with files: its run folder
//! (`redfence-chaos-<run>` in the temporary directory) holds an [`OWNER_FILE`]
//! naming the creating process, and one `<server>.pid` file per server with
//! the server's pid and start time. Each local start first reaps folders
//! whose owner is gone: it kills the servers still running under the
//! recorded identity (a pid since reused by another process has another
//! start time and is left alone), then deletes the folder
//! ([`reap_local_leftovers`]). Both reapers print one line saying what they
//! removed.

use std::collections::HashMap;

use testcontainers::bollard::query_parameters::{
    ListContainersOptionsBuilder, RemoveContainerOptionsBuilder,
};
use testcontainers::bollard::Docker;

use crate::error::{ChaosError, Result};

/// Label every container of ours carries (value [`OWNER_VALUE`]).
pub const LABEL_OWNER: &str = "redfence.owner";
/// Value of [`LABEL_OWNER`].
pub const OWNER_VALUE: &str = "redfence";
/// Label naming the run (one cluster): a uuid.
pub const LABEL_RUN: &str = "redfence.run";
/// Label naming the creating process: `<pid>:<start time in clock ticks>`.
pub const LABEL_CREATOR: &str = "redfence.creator";

/// In a local run folder: the creating process's identity.
pub const OWNER_FILE: &str = "owner";
/// Ending of a local server's pid file in its run folder.
pub const PID_FILE_SUFFIX: &str = ".pid";
/// Name prefix of a local run folder in the temporary directory.
pub const LOCAL_FOLDER_PREFIX: &str = "redfence-chaos-";
/// How long the reaper waits for a killed leftover process to vanish.
const LEFTOVER_EXIT_WAIT_MS: u64 = 2_000;
/// Poll interval of that wait.
const LEFTOVER_POLL_MS: u64 = 20;
/// How long a removal someone else started is waited for.
const REMOVAL_WAIT_MS: u64 = 10_000;
/// Poll interval of that wait.
const REMOVAL_POLL_MS: u64 = 50;

/// This process's identity, as [`LABEL_CREATOR`] holds it.
pub fn own_identity() -> String {
    identity_of(std::process::id())
}

/// A process's identity, `<pid>:<start time>` (the start time empty when
/// the process is already gone).
pub fn identity_of(pid: u32) -> String {
    format!("{pid}:{}", start_time(pid).unwrap_or_default())
}

/// A process's start time since boot (field 22 of `/proc/<pid>/stat`).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: fields
    // after it start behind the last ')'.
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(19)?.parse().ok()
}

/// Whether the process an identity names still runs (not a zombie).
pub fn is_alive(identity: &str) -> bool {
    let Some((pid, started)) = identity.split_once(':') else {
        return false;
    };
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let zombie = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next())
        .is_some_and(|state| state == "Z");
    !zombie && start_time(pid).map(|t| t.to_string()).as_deref() == Some(started)
}

/// Our containers (any state) with their labels, optionally of one run.
pub async fn list_ours(
    docker: &Docker,
    run: Option<&str>,
) -> Result<Vec<(String, HashMap<String, String>)>> {
    let mut labels = vec![format!("{LABEL_OWNER}={OWNER_VALUE}")];
    if let Some(run) = run {
        labels.push(format!("{LABEL_RUN}={run}"));
    }
    let filters = HashMap::from([("label".to_owned(), labels)]);
    let options = ListContainersOptionsBuilder::new()
        .all(true)
        .filters(&filters)
        .build();
    let containers = docker
        .list_containers(Some(options))
        .await
        .map_err(|e| ChaosError::Docker(format!("listing containers: {e}")))?;
    Ok(containers
        .into_iter()
        .filter_map(|c| Some((c.id?, c.labels.unwrap_or_default())))
        .collect())
}

/// Ids of our containers (any state) created by the process `identity`.
pub async fn list_created_by(docker: &Docker, identity: &str) -> Result<Vec<String>> {
    Ok(list_ours(docker, None)
        .await?
        .into_iter()
        .filter(|(_, labels)| labels.get(LABEL_CREATOR).map(String::as_str) == Some(identity))
        .map(|(id, _)| id)
        .collect())
}

/// Force-removes one container (stopping it if it runs).
pub async fn remove(docker: &Docker, id: &str) -> Result<()> {
    let options = RemoveContainerOptionsBuilder::new()
        .force(true)
        .v(true)
        .build();
    match docker.remove_container(id, Some(options)).await {
        Ok(()) => Ok(()),
        // Already gone (removed by its own drop meanwhile): fine.
        Err(testcontainers::bollard::errors::Error::DockerResponseServerError {
            status_code: 404,
            ..
        }) => Ok(()),
        // Being removed by someone else: the run it belongs to, still
        // tearing down after a SIGTERM, or another start reaping it too
        // (seen when a test run started while the one before it was being
        // stopped). It goes either way, so it is not this start's failure.
        //
        // Waited for, bounded: until it is gone, it is still listed (its
        // state "removing"), and a caller that counts what is left after a
        // reap (seen in a test, while another suite's start reaped the same
        // orphan) would count it.
        Err(testcontainers::bollard::errors::Error::DockerResponseServerError {
            status_code: 409,
            message,
        }) if message.contains("already in progress") => {
            until_gone(docker, id).await;
            Ok(())
        }
        Err(e) => Err(ChaosError::Docker(format!("removing {id}: {e}"))),
    }
}

/// Waits until the container `id` no longer exists, at most
/// [`REMOVAL_WAIT_MS`]; its remover is someone else, so a removal that
/// outlasts the wait is theirs to report.
async fn until_gone(docker: &Docker, id: &str) {
    // Bounded: REMOVAL_WAIT_MS / REMOVAL_POLL_MS looks.
    for _ in 0..REMOVAL_WAIT_MS / REMOVAL_POLL_MS {
        match docker.inspect_container(id, None).await {
            Err(testcontainers::bollard::errors::Error::DockerResponseServerError {
                status_code: 404,
                ..
            }) => return,
            _ => tokio::time::sleep(std::time::Duration::from_millis(REMOVAL_POLL_MS)).await,
        }
    }
    tracing::warn!(container = %id, "still being removed after {REMOVAL_WAIT_MS} ms");
}

/// Removes our containers whose creating process is gone; returns how many
/// and prints one line when there were any.
pub async fn reap_orphans(docker: &Docker) -> Result<usize> {
    let mut reaped = 0;
    let mut runs = Vec::new();
    for (id, labels) in list_ours(docker, None).await? {
        let creator = labels.get(LABEL_CREATOR).map(String::as_str).unwrap_or("");
        if !is_alive(creator) {
            tracing::info!(container = %id, creator, "removing a container left by a dead run");
            remove(docker, &id).await?;
            reaped += 1;
            if let Some(run) = labels.get(LABEL_RUN) {
                if !runs.contains(run) {
                    runs.push(run.clone());
                }
            }
        }
    }
    if reaped > 0 {
        eprintln!(
            "redfence: reaped {reaped} container(s) left by killed run(s) {}",
            runs.join(", ")
        );
    }
    Ok(reaped)
}

/// What [`reap_local_leftovers`] removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LocalReaped {
    /// Server processes killed (their recorded identity still ran).
    pub processes: usize,
    /// Run folders deleted.
    pub folders: Vec<std::path::PathBuf>,
}

/// The pids whose parent is `pid` (from `/proc/*/stat`).
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&candidate| {
            std::fs::read_to_string(format!("/proc/{candidate}/stat"))
                .ok()
                .and_then(|stat| {
                    // Fields after the name: state, ppid, ...
                    let after = &stat[stat.rfind(')')? + 1..];
                    after.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(pid)
        })
        .collect()
}

/// Kills the process `identity` names, and its children (PostgreSQL's
/// backends), if it still runs as that identity; waits (bounded) for it to
/// vanish. Whether it was running.
fn kill_leftover(identity: &str) -> bool {
    if !is_alive(identity) {
        return false;
    }
    let Some(pid) = identity
        .split_once(':')
        .and_then(|(p, _)| p.parse::<u32>().ok())
    else {
        return false;
    };
    for child in children_of(pid) {
        let child_identity = identity_of(child);
        if is_alive(&child_identity) {
            // SAFETY: kill on a pid whose parent and start time were read
            // just now.
            unsafe {
                libc::kill(child as libc::pid_t, libc::SIGKILL);
            }
        }
    }
    // SAFETY: kill on the pid whose start time `is_alive` just matched.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGKILL);
    }
    for _ in 0..LEFTOVER_EXIT_WAIT_MS / LEFTOVER_POLL_MS {
        if !is_alive(identity) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(LEFTOVER_POLL_MS));
    }
    true
}

/// Reaps the local run folders in `temp_dir` whose owning process is gone:
/// kills their servers that still run (matched by pid and start time),
/// deletes the folder, and prints one line when anything was removed.
/// Folders of live owners, and folders without an owner file (one being
/// created right now), are left alone.
pub fn reap_local_leftovers(temp_dir: &std::path::Path) -> LocalReaped {
    let mut reaped = LocalReaped::default();
    let Ok(entries) = std::fs::read_dir(temp_dir) else {
        return reaped;
    };
    for entry in entries.flatten() {
        let is_run_folder = entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(LOCAL_FOLDER_PREFIX));
        if !is_run_folder || !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let folder = entry.path();
        let Ok(owner) = std::fs::read_to_string(folder.join(OWNER_FILE)) else {
            continue;
        };
        if is_alive(owner.trim()) {
            continue;
        }
        if let Ok(files) = std::fs::read_dir(&folder) {
            for file in files.flatten() {
                let is_pid_file = file
                    .file_name()
                    .to_str()
                    .is_some_and(|n| n.ends_with(PID_FILE_SUFFIX));
                if !is_pid_file {
                    continue;
                }
                if let Ok(identity) = std::fs::read_to_string(file.path()) {
                    if kill_leftover(identity.trim()) {
                        reaped.processes += 1;
                    }
                }
            }
        }
        match std::fs::remove_dir_all(&folder) {
            Ok(()) => reaped.folders.push(folder),
            // Another run reaped it meanwhile.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!(folder = %folder.display(), "cannot delete: {e}"),
        }
    }
    if reaped.processes > 0 || !reaped.folders.is_empty() {
        eprintln!(
            "redfence: reaped {} server process(es) and {} temporary folder(s) left by killed \
             local run(s): {}",
            reaped.processes,
            reaped.folders.len(),
            reaped
                .folders
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    reaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_is_alive_and_a_finished_one_is_not() {
        assert!(is_alive(&own_identity()));
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("spawn true");
        let pid = child.id();
        let identity = format!("{pid}:{}", start_time(pid).unwrap_or_default());
        child.wait().expect("wait");
        assert!(!is_alive(&identity), "a reaped child is gone");
        assert!(!is_alive(""), "no creator label: orphan");
        let reused = format!("{}:1", std::process::id());
        assert!(!is_alive(&reused), "a reused pid with another start time");
    }

    #[test]
    fn local_leftovers_of_dead_owners_are_reaped_and_live_ones_left_alone() {
        let temp = std::env::temp_dir().join(format!("redfence-reaper-test-{}", own_identity()));
        let _ = std::fs::remove_dir_all(&temp);
        std::fs::create_dir_all(&temp).unwrap();
        // A dead owner: a child that has exited and been waited for.
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        let dead_owner = identity_of(gone.id());
        gone.wait().unwrap();
        // A server that outlived its owner, and one whose pid was reused
        // (the same pid with another start time: ours, which must survive).
        let mut server = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let dead = temp.join(format!("{LOCAL_FOLDER_PREFIX}dead"));
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join(OWNER_FILE), &dead_owner).unwrap();
        std::fs::write(
            dead.join(format!("redis-primary{PID_FILE_SUFFIX}")),
            identity_of(server.id()),
        )
        .unwrap();
        std::fs::write(
            dead.join(format!("postgres{PID_FILE_SUFFIX}")),
            format!("{}:1", std::process::id()),
        )
        .unwrap();
        // A live owner's folder, and one still being created (no owner yet).
        let live = temp.join(format!("{LOCAL_FOLDER_PREFIX}live"));
        std::fs::create_dir(&live).unwrap();
        std::fs::write(live.join(OWNER_FILE), own_identity()).unwrap();
        let fresh = temp.join(format!("{LOCAL_FOLDER_PREFIX}fresh"));
        std::fs::create_dir(&fresh).unwrap();

        let reaped = reap_local_leftovers(&temp);

        assert_eq!(reaped.processes, 1, "only the leftover server: {reaped:?}");
        assert_eq!(reaped.folders, vec![dead.clone()]);
        assert!(!dead.exists());
        assert!(live.exists() && fresh.exists(), "a live run's folders stay");
        let status = server.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(libc::SIGKILL)
        );
        std::fs::remove_dir_all(&temp).unwrap();
    }
}
