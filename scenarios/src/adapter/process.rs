//! One lock adapter's operating-system process: started so it dies with
//! us, spoken to one line at a time, stopped, resumed and killed as a
//! whole process group, and reaped.
//!
//! Why threads and not the world's runtime for the pipes: the real world
//! drives a current-thread runtime only while a script runs, and a write to
//! a stopped adapter's full pipe must never block it. A reader thread
//! turns stdout into bounded lines on a channel, a writer thread feeds
//! stdin, a third keeps the last [`STDERR_TAIL_BYTES_MAX`] of stderr for
//! error messages. Every one of them ends when the process does.
//!
//! The process is started by `redfence_chaos::spawn` (it dies with this
//! process by `PR_SET_PDEATHSIG` and a signal's teardown stops it), in a
//! process group of its own, so `SIGSTOP`, `SIGCONT` and `SIGKILL` reach
//! every process the adapter started.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use super::message::LINE_BYTES_MAX;
use crate::world::WorkerSignal;

/// Most of an adapter's stderr kept for error messages (the end of it).
pub const STDERR_TAIL_BYTES_MAX: usize = 64 * 1024;
/// Most lines from an adapter waiting to be handled: the reader thread
/// waits past this, so a chatty adapter is slowed, never buffered without
/// bound.
pub const LINES_QUEUED_MAX: usize = 256;
/// Most lines to an adapter waiting for its stdin.
const LINES_OUT_QUEUED_MAX: usize = 256;
/// How long an adapter has to exit after `shutdown` and the end of its
/// stdin before its group is killed.
pub const SHUTDOWN_GRACE_MS: u64 = 2_000;
/// How often a shutdown looks whether the adapter exited.
pub const EXIT_POLL_MS: u64 = 10;
/// How long a crash's `SIGKILL` may take to end the process before the
/// run says it did not (a kill that did not take would leave a "crashed"
/// worker running).
pub const KILL_CONFIRM_MS: u64 = 2_000;

/// What the reader thread saw on the adapter's stdout.
#[derive(Debug)]
pub enum LineEvent {
    /// One line, newline removed.
    Line(String),
    /// A line longer than the protocol allows (reading stopped there).
    TooLong,
    /// Not UTF-8 (reading stopped there).
    NotText,
    /// stdout ended: the adapter exited or closed it.
    End,
}

/// A running adapter process.
pub struct AdapterProcess {
    worker: String,
    pid: u32,
    child: Mutex<Option<Child>>,
    to_adapter: Mutex<Option<mpsc::SyncSender<String>>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    paused: AtomicBool,
    killed: AtomicBool,
}

impl std::fmt::Debug for AdapterProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdapterProcess")
            .field("worker", &self.worker)
            .field("pid", &self.pid)
            .finish()
    }
}

/// Why an adapter could not be started.
#[derive(Debug, thiserror::Error)]
#[error("{worker}'s adapter `{program}` could not start: {why}")]
pub struct StartError {
    /// The worker it was for.
    pub worker: String,
    /// The program named.
    pub program: String,
    /// Why not.
    pub why: String,
}

impl AdapterProcess {
    /// Starts `argv` for `worker` with `env` added to its environment, and
    /// returns it with the channel its stdout lines arrive on.
    pub fn start(
        worker: &str,
        argv: &[String],
        env: &[(String, String)],
    ) -> Result<(Self, tokio::sync::mpsc::Receiver<LineEvent>), StartError> {
        let program = argv.first().cloned().unwrap_or_default();
        let fail = |why: String| StartError {
            worker: worker.to_owned(),
            program: program.clone(),
            why,
        };
        if program.is_empty() {
            return Err(fail("the command is empty".into()));
        }
        let mut command = Command::new(&program);
        command
            .args(&argv[1..])
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group: a pause or a crash reaches every process it
            // started, and a Ctrl-C at the terminal reaches only us (our
            // teardown then stops it).
            .process_group(0);
        let mut child = redfence_chaos::spawn::spawn("lock adapter", command)
            .map_err(|e| fail(e.to_string()))?;
        let pid = child.id();
        let (stdin, stdout, stderr) =
            match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
                (Some(i), Some(o), Some(e)) => (i, o, e),
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    redfence_chaos::live::unregister_child(pid);
                    return Err(fail("its standard streams were not piped".into()));
                }
            };
        let (lines_in, lines) = tokio::sync::mpsc::channel(LINES_QUEUED_MAX);
        let thread = |name: &str| std::thread::Builder::new().name(format!("{worker}-{name}"));
        let spawned = thread("adapter-out")
            .spawn(move || read_lines(stdout, lines_in))
            .and_then(|_| {
                let (to_adapter, outgoing) = mpsc::sync_channel::<String>(LINES_OUT_QUEUED_MAX);
                thread("adapter-in")
                    .spawn(move || write_lines(stdin, outgoing))
                    .map(|_| to_adapter)
            })
            .and_then(|to_adapter| {
                let tail = Arc::new(Mutex::new(Vec::new()));
                let kept = tail.clone();
                thread("adapter-err")
                    .spawn(move || keep_tail(stderr, kept))
                    .map(|_| (to_adapter, tail))
            });
        let (to_adapter, stderr) = match spawned {
            Ok(parts) => parts,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                redfence_chaos::live::unregister_child(pid);
                return Err(fail(format!("a thread for its pipes: {e}")));
            }
        };
        Ok((
            Self {
                worker: worker.to_owned(),
                pid,
                child: Mutex::new(Some(child)),
                to_adapter: Mutex::new(Some(to_adapter)),
                stderr,
                paused: AtomicBool::new(false),
                killed: AtomicBool::new(false),
            },
            lines,
        ))
    }

    /// The adapter's process id (and process group).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Sends one line (newline included). False when stdin is closed.
    pub fn send(&self, line: String) -> bool {
        let sender = self.to_adapter.lock().unwrap_or_else(|e| e.into_inner());
        match sender.as_ref() {
            Some(sender) => sender.try_send(line).is_ok(),
            None => false,
        }
    }

    /// Applies a worker signal to the process group: `SIGSTOP`, `SIGCONT`
    /// or `SIGKILL`.
    pub fn signal(&self, signal: WorkerSignal) {
        let number = match signal {
            WorkerSignal::Pause => {
                self.paused.store(true, Ordering::SeqCst);
                libc::SIGSTOP
            }
            WorkerSignal::Resume => {
                self.paused.store(false, Ordering::SeqCst);
                libc::SIGCONT
            }
            WorkerSignal::Kill => {
                self.killed.store(true, Ordering::SeqCst);
                libc::SIGKILL
            }
        };
        self.signal_group(number);
    }

    /// Whether it has exited (reaped or not).
    pub fn has_exited(&self) -> bool {
        let child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        child.is_none() || exited_unreaped(self.pid)
    }

    /// Whether the harness killed it (a crash fault or the shutdown).
    pub fn killed(&self) -> bool {
        self.killed.load(Ordering::SeqCst)
    }

    fn signal_group(&self, number: i32) {
        // Only while we have not reaped it: a reaped pid may be reused.
        let child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        if child.is_some() {
            // SAFETY: kill has no memory preconditions; a negative pid names
            // the group the adapter leads (process_group(0) above).
            unsafe {
                libc::kill(-(self.pid as i32), number);
            }
        }
    }

    /// Whether the harness has it stopped (`SIGSTOP`) now.
    pub fn paused(&self) -> bool {
        self.paused.load(Ordering::SeqCst)
    }

    /// How it exited, if it has. Before it is reaped, every other process
    /// of its group is killed — while the exited leader is unreaped its
    /// group id cannot be reused — so nothing it started outlives it.
    pub fn exit_status(&self) -> Option<String> {
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        let running = child.as_mut()?;
        if !exited_unreaped(self.pid) {
            return None;
        }
        // SAFETY: kill has no memory preconditions; the group is the
        // adapter's own and still pinned by its unreaped leader.
        unsafe {
            libc::kill(-(self.pid as i32), libc::SIGKILL);
        }
        let status = running.wait().ok()?;
        *child = None;
        redfence_chaos::live::unregister_child(self.pid);
        Some(describe_status(status))
    }

    /// The last of what it wrote to stderr, as text.
    pub fn stderr_tail(&self) -> String {
        let tail = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&tail).trim_end().to_owned()
    }

    /// Asks it to stop without waiting: `shutdown` (unless it is paused or
    /// killed, when it cannot read) and the end of its stdin.
    pub fn ask_to_stop(&self) {
        if !self.paused() && !self.killed() {
            self.send(super::message::ToAdapter::Shutdown.line());
        }
        // The end of stdin, once the writer thread drains what is queued.
        drop(
            self.to_adapter
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        );
    }

    /// Stops it: [`AdapterProcess::ask_to_stop`], then `SIGKILL` to the
    /// group after [`SHUTDOWN_GRACE_MS`] (at once when paused or killed),
    /// and reaps it. Returns how it exited; at once when it was reaped
    /// before. Blocks for up to the grace period: call it off the world's
    /// thread.
    pub fn stop(&self) -> String {
        if self
            .child
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
        {
            return "exited".into();
        }
        let grace_ms = if self.paused() || self.killed() {
            0
        } else {
            SHUTDOWN_GRACE_MS
        };
        self.ask_to_stop();
        let deadline = Instant::now() + Duration::from_millis(grace_ms);
        // Bounded by the grace period.
        while Instant::now() < deadline {
            if let Some(status) = self.exit_status() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(EXIT_POLL_MS));
        }
        self.killed.store(true, Ordering::SeqCst);
        self.signal_group(libc::SIGKILL);
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        match child.take() {
            Some(mut running) => {
                let status = running.wait();
                redfence_chaos::live::unregister_child(self.pid);
                match status {
                    Ok(status) => {
                        format!("killed after {grace_ms} ms ({})", describe_status(status))
                    }
                    Err(e) => format!("killed; waiting for it failed: {e}"),
                }
            }
            None => "exited".into(),
        }
    }
}

impl Drop for AdapterProcess {
    fn drop(&mut self) {
        // Normally stopped already (the runner's drop); this is the last
        // guard against a process outliving its handle.
        self.stop();
    }
}

/// Whether `pid` (our child) has exited, without reaping it.
fn exited_unreaped(pid: u32) -> bool {
    // SAFETY: siginfo_t is plain data, zero is a valid value for it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid writes only into `info`; WNOWAIT leaves the child
    // unreaped and WNOHANG makes it return at once.
    let done = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    // SAFETY: si_pid reads the field waitid filled (0 when nothing exited).
    done == 0 && unsafe { info.si_pid() } != 0
}

fn describe_status(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        _ => status.to_string(),
    }
}

/// The reader thread: stdout to bounded lines.
fn read_lines(stdout: impl Read, lines: tokio::sync::mpsc::Sender<LineEvent>) {
    let mut reader = BufReader::new(stdout);
    let mut buf = Vec::new();
    // Bounded by the adapter's output: ends at its end or a bad line.
    loop {
        buf.clear();
        let limit = (LINE_BYTES_MAX + 2) as u64;
        let event = match reader.by_ref().take(limit).read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => LineEvent::End,
            Ok(_) => {
                if buf.last() == Some(&b'\n') {
                    buf.pop();
                    if buf.last() == Some(&b'\r') {
                        buf.pop();
                    }
                } else if buf.len() > LINE_BYTES_MAX {
                    let _ = lines.blocking_send(LineEvent::TooLong);
                    return;
                }
                match String::from_utf8(std::mem::take(&mut buf)) {
                    Ok(line) if line.trim().is_empty() => continue,
                    Ok(line) => LineEvent::Line(line),
                    Err(_) => {
                        let _ = lines.blocking_send(LineEvent::NotText);
                        return;
                    }
                }
            }
        };
        let end = matches!(event, LineEvent::End);
        if lines.blocking_send(event).is_err() || end {
            return;
        }
    }
}

/// The writer thread: queued lines to stdin; ends (closing stdin) when
/// the sender is dropped or the adapter stops reading.
fn write_lines(mut stdin: impl Write, outgoing: mpsc::Receiver<String>) {
    for line in outgoing {
        if stdin.write_all(line.as_bytes()).is_err() || stdin.flush().is_err() {
            return;
        }
    }
}

/// The stderr thread: keeps the last [`STDERR_TAIL_BYTES_MAX`] bytes.
fn keep_tail(mut stderr: impl Read, tail: Arc<Mutex<Vec<u8>>>) {
    let mut chunk = [0u8; 4096];
    // Bounded by the adapter's output.
    loop {
        match stderr.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let mut kept = tail.lock().unwrap_or_else(|e| e.into_inner());
                kept.extend_from_slice(&chunk[..n]);
                if kept.len() > STDERR_TAIL_BYTES_MAX {
                    let cut = kept.len() - STDERR_TAIL_BYTES_MAX;
                    kept.drain(..cut);
                }
            }
        }
    }
}
