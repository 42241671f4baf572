//! Starting server processes that die with us.
//!
//! A local server (`redis-server`, `initdb`, `postgres`) is started with
//! `PR_SET_PDEATHSIG` = `SIGKILL`, set in the child right before `exec`: when
//! this process dies by any means — a second Ctrl-C, `kill -9`, the OOM
//! killer — the kernel kills the child at once, so no server outlives its
//! run. (PostgreSQL's own backends follow their postmaster: they watch for
//! its death and exit.)
//!
//! The signal fires when the *thread* that forked the child exits, not the
//! process. A run forks from whatever thread drives it — a sweep's worker
//! thread, a runtime's blocking pool thread that retires after 10 s idle —
//! and such a thread may end while its servers should live on. So every
//! child is forked by one spawner thread that lives as long as the process
//! and does nothing else: the children die exactly when the process does.
//!
//! Each child is registered with [`crate::live`] under the same lock as its
//! fork, so a teardown on a signal sees every child that exists; once a
//! teardown has begun, no new child starts.

use std::process::{Child, Command};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use std::os::unix::process::CommandExt;

use crate::error::{ChaosError, Result};
use crate::live;

/// How long a caller waits for the spawner thread to fork one child (a
/// fork and exec take milliseconds; this bounds a wedged spawner).
const SPAWN_TIMEOUT_MS: u64 = 10_000;

/// One request to the spawner: the command, the server's name (for the
/// registry and messages) and where to send the child.
struct Request {
    command: Command,
    server: &'static str,
    reply: Sender<std::io::Result<Child>>,
}

/// The spawner thread's queue; the thread is started on first use.
fn spawner() -> &'static Mutex<Sender<Request>> {
    static SPAWNER: OnceLock<Mutex<Sender<Request>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (send, receive) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("redfence-spawner".into())
            .spawn(move || serve(receive))
            .expect("starting the spawner thread");
        Mutex::new(send)
    })
}

/// The spawner thread's loop. It ends only when every sender is gone,
/// which never happens (the sender lives in a static): the thread lives as
/// long as the process, as `PR_SET_PDEATHSIG` needs.
fn serve(requests: Receiver<Request>) {
    for Request {
        mut command,
        server,
        reply,
    } in requests
    {
        let result = live::register_child(server, || fork_dying_with_parent(&mut command));
        // The caller may have given up waiting; the child is registered, so
        // a teardown still stops it, and its drop-less handle is harmless.
        let _ = reply.send(result);
    }
}

/// Forks and execs `command` with `PR_SET_PDEATHSIG` = `SIGKILL`.
fn fork_dying_with_parent(command: &mut Command) -> std::io::Result<Child> {
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the forked child before exec and calls
    // only async-signal-safe functions (prctl, getppid, sigemptyset,
    // sigprocmask); it allocates nothing. std sets uid/gid before running it, so the setting is not
    // cleared by a credential change afterwards.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl: then the
            // signal will never come, so do not start at all.
            if libc::getppid() != parent {
                return Err(std::io::Error::other("the parent died while forking"));
            }
            // The CLI blocks SIGINT/SIGTERM in every thread (one thread
            // takes them); a server must get them, so unblock all.
            let mut none = std::mem::zeroed::<libc::sigset_t>();
            libc::sigemptyset(&mut none);
            if libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command.spawn()
}

/// Starts `command` (the server named `server`) from the spawner thread, so
/// it dies with this process, and registers it for teardown. Refused once a
/// teardown has begun.
pub fn spawn(server: &'static str, command: Command) -> Result<Child> {
    let program = command.get_program().to_string_lossy().into_owned();
    let (reply, answer) = mpsc::channel();
    spawner()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send(Request {
            command,
            server,
            reply,
        })
        .map_err(|_| ChaosError::Process {
            server,
            message: "the spawner thread is gone".into(),
        })?;
    match answer.recv_timeout(Duration::from_millis(SPAWN_TIMEOUT_MS)) {
        Ok(result) => result.map_err(|e| ChaosError::io(format!("starting {program}"), e)),
        Err(_) => Err(ChaosError::Process {
            server,
            message: format!("starting {program} took over {SPAWN_TIMEOUT_MS} ms"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spawned_children_are_registered_until_taken_back() {
        let mut sleeper = Command::new("sleep");
        sleeper.arg("30");
        let mut child = spawn("sleep", sleeper).expect("spawn sleep");
        let pid = child.id();
        assert!(live::registered_children().contains(&pid));
        live::unregister_child(pid);
        assert!(!live::registered_children().contains(&pid));
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
