//! Removing what a killed run left behind.
//!
//! testcontainers-rs has no reaper (no Ryuk): a run that is killed (SIGKILL,
//! OOM, a CI timeout) before its drops run leaves its containers running.
//! Every container we start carries labels naming its owner and the process
//! that created it (pid plus the process's start time, so a reused pid is
//! not mistaken for the creator); each new start first removes labelled
//! containers whose creator is gone. Containers of live processes — another
//! test binary running now — are left alone.

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

/// This process's identity, as [`LABEL_CREATOR`] holds it.
pub fn own_identity() -> String {
    let pid = std::process::id();
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
        Err(e) => Err(ChaosError::Docker(format!("removing {id}: {e}"))),
    }
}

/// Removes our containers whose creating process is gone; returns how many.
pub async fn reap_orphans(docker: &Docker) -> Result<usize> {
    let mut reaped = 0;
    for (id, labels) in list_ours(docker, None).await? {
        let creator = labels.get(LABEL_CREATOR).map(String::as_str).unwrap_or("");
        if !is_alive(creator) {
            tracing::info!(container = %id, creator, "removing a container left by a dead run");
            remove(docker, &id).await?;
            reaped += 1;
        }
    }
    Ok(reaped)
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
}
