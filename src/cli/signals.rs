//! SIGINT and SIGTERM, in one place, and the timeout of a hung real run.
//!
//! [`install`] runs first in `main`, before any other thread exists: it
//! blocks both signals in the main thread, so every thread started later
//! inherits the mask, and one thread takes them with `sigwait`. Nothing
//! else in the process handles them (testcontainers' watchdog is off).
//!
//! - **First signal**: a teardown thread waits (bounded) for a report or
//!   JSON file being written to be complete ([`output_guard`]; writes are
//!   atomic, so a reader sees the old file or the new one, never a piece)
//!   and keeps any other from starting; stops everything the run started —
//!   local server processes, containers, temporary folders —
//!   (`redfence_chaos::live::teardown`; the proxies live in this process and
//!   end with it); prints one line saying what it stopped; and exits with
//!   128 + the signal's number: 130 for SIGINT, 143 for SIGTERM.
//! - **Second signal**: exits at once with 128 + its number. Local servers
//!   die with the process (`PR_SET_PDEATHSIG`, see `redfence_chaos::spawn`);
//!   containers and temporary folders left are reaped by the next run.
//!
//! The [`Watchdog`] gives a real-world command a timeout of its own: when
//! no run finishes for the limit, it stops the command the same way and
//! exits with [`EXIT_HUNG`].

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Exit code of a command stopped by its [`Watchdog`] (as `timeout(1)`).
pub const EXIT_HUNG: u8 = 124;
/// How long a teardown may take: ≤ 10 s from the signal to the exit,
/// with room for waiting on a write in progress.
const TEARDOWN_BUDGET: Duration = Duration::from_secs(8);
/// How long a teardown waits for a report write in progress to finish.
const OUTPUT_WAIT: Duration = Duration::from_secs(1);
/// Longest a command's main thread waits for a stop to exit the process.
const PARK_MAX: Duration = Duration::from_secs(15);
/// Poll interval of the waits here.
const POLL: Duration = Duration::from_millis(10);
/// How often a watchdog looks at the time.
const WATCHDOG_POLL: Duration = Duration::from_millis(200);

/// Held while a report or JSON file is written; a teardown takes it for
/// good, so nothing is written once a stop has begun.
static OUTPUTS: Mutex<()> = Mutex::new(());
/// The first signal received (0: none).
static RECEIVED: AtomicI32 = AtomicI32::new(0);
/// Set when a stop (a signal's or the watchdog's) has begun.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// Blocks SIGINT and SIGTERM in this thread (and so in every thread started
/// after it) and starts the thread that takes them. Call first in `main`.
pub fn install() {
    let set = signal_set();
    // SAFETY: `set` is an initialised signal set; called before any other
    // thread exists, so every later thread inherits the mask.
    let blocked = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if blocked != 0 {
        eprintln!("redfence: cannot block SIGINT/SIGTERM (error {blocked}); Ctrl-C stops at once");
        return;
    }
    let started = std::thread::Builder::new()
        .name("redfence-signals".into())
        .spawn(move || take_signals(set));
    if let Err(e) = started {
        eprintln!("redfence: cannot start the signal thread ({e})");
    }
}

fn signal_set() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set; sigaddset adds valid signals.
    unsafe {
        let mut set = std::mem::zeroed::<libc::sigset_t>();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        set
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}

/// The signal thread: the first signal starts a stop, the second exits.
/// It runs as long as the process.
fn take_signals(set: libc::sigset_t) {
    loop {
        let mut signal = 0;
        // SAFETY: `set` is initialised and blocked in every thread.
        if unsafe { libc::sigwait(&set, &mut signal) } != 0 {
            continue;
        }
        let code = 128 + signal;
        if RECEIVED
            .compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            eprintln!(
                "\nredfence: {} received; stopping and cleaning up (again to exit at once)",
                signal_name(signal)
            );
            let started = std::thread::Builder::new()
                .name("redfence-teardown".into())
                .spawn(move || stop_and_exit(code));
            if started.is_err() {
                stop_and_exit(code);
            }
        } else {
            eprintln!(
                "redfence: {} again; exiting now (local servers die with this process; \
                 the next run reaps containers and folders left)",
                signal_name(signal)
            );
            // SAFETY: _exit ends the process without running anything else.
            unsafe { libc::_exit(code) }
        }
    }
}

/// Whether a stop has begun: a signal's, or the watchdog's.
pub fn interrupted() -> bool {
    STOPPING.load(Ordering::SeqCst) || RECEIVED.load(Ordering::SeqCst) != 0
}

/// Waits (bounded) for a stop in progress to end the process: a command
/// whose work returned because a stop tore its servers down prints and
/// writes nothing of that interrupted work, and its exit code is the
/// stop's. Returns at once when no signal
/// came.
pub fn park_if_interrupted() {
    if !interrupted() {
        return;
    }
    let parked = Instant::now();
    while parked.elapsed() < PARK_MAX {
        std::thread::sleep(POLL);
    }
}

/// The output lock: hold it while writing a report or JSON file.
pub fn output_guard() -> MutexGuard<'static, ()> {
    OUTPUTS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Stops writes, tears down what the command started, says what it did,
/// and exits with `code`.
fn stop_and_exit(code: i32) -> ! {
    // First: the command's own threads, seeing their servers vanish, must
    // wait for this exit rather than report and exit on their own.
    STOPPING.store(true, Ordering::SeqCst);
    let waited = Instant::now();
    let mut held = None;
    while held.is_none() {
        held = match OUTPUTS.try_lock() {
            Ok(guard) => Some(guard),
            Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) if waited.elapsed() < OUTPUT_WAIT => {
                std::thread::sleep(POLL);
                None
            }
            // A write that takes longer is left behind: its temporary
            // file, not the target, is what an exit interrupts.
            Err(std::sync::TryLockError::WouldBlock) => break,
        };
    }
    let teardown = redfence_chaos::live::teardown(TEARDOWN_BUDGET);
    eprintln!("redfence: {teardown}; exit {code}");
    // Keep the lock until the process ends: no write starts after this.
    std::mem::forget(held);
    std::process::exit(code)
}

/// A timeout of its own for a real-world command: [`Watchdog::progress`]
/// after each finished run; when none comes for the limit, the command is
/// stopped as on a signal and exits with [`EXIT_HUNG`].
#[derive(Debug)]
pub struct Watchdog {
    state: Arc<WatchState>,
}

#[derive(Debug)]
struct WatchState {
    started: Instant,
    /// Milliseconds since `started` of the last progress.
    last_ms: AtomicU64,
    done: AtomicBool,
}

impl Watchdog {
    /// Arms a watchdog: `what` must make progress at least every `limit`.
    pub fn arm(what: &'static str, limit: Duration) -> Self {
        let state = Arc::new(WatchState {
            started: Instant::now(),
            last_ms: AtomicU64::new(0),
            done: AtomicBool::new(false),
        });
        let watched = state.clone();
        let watching = std::thread::Builder::new()
            .name("redfence-watchdog".into())
            .spawn(move || watch(&watched, what, limit));
        if let Err(e) = watching {
            eprintln!("redfence: cannot start the watchdog ({e}); no run timeout");
        }
        Self { state }
    }

    /// A run finished: the next one has the whole limit.
    pub fn progress(&self) {
        let now = self.state.started.elapsed().as_millis() as u64;
        self.state.last_ms.store(now, Ordering::SeqCst);
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.state.done.store(true, Ordering::SeqCst);
    }
}

/// The watchdog thread: ends when its [`Watchdog`] drops; or stops the
/// command once no progress came for `limit`.
fn watch(state: &WatchState, what: &str, limit: Duration) {
    while !state.done.load(Ordering::SeqCst) {
        std::thread::sleep(WATCHDOG_POLL);
        let last = Duration::from_millis(state.last_ms.load(Ordering::SeqCst));
        let quiet = state.started.elapsed().saturating_sub(last);
        if quiet >= limit && !interrupted() && !state.done.load(Ordering::SeqCst) {
            eprintln!(
                "error: {what} made no progress for {} s (--run-timeout); stopping",
                limit.as_secs()
            );
            stop_and_exit(i32::from(EXIT_HUNG));
        }
    }
}
