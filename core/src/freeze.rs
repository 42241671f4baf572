//! Stop-the-world pauses for a whole worker.
//!
//! A garbage-collection pause or a stopped VM freezes everything a process
//! does, its lease renewal included. [`Freezable`] reproduces that for a future:
//! while frozen it is not polled at all, so neither the job nor the renewal
//! keeper (which share the task) makes progress, while timers keep running
//! and bytes already sent keep travelling. One switch may wrap several
//! futures — a worker's job and every task it spawned — and thawing wakes
//! them all. Harnesses — the integration tests,
//! the simulation, the real-server world — use it to pause a worker.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

/// Most futures one switch may hold frozen at once: a worker's job plus the
/// tasks it spawned (a harness bounds those well below this).
pub const FROZEN_FUTURES_MAX: usize = 256;

/// Most listeners one switch may tell about a freeze or a thaw: a worker
/// has one process at most to stop besides its futures.
pub const LISTENERS_MAX: usize = 8;

/// Told `true` when a switch freezes and `false` when it thaws.
pub type FreezeListener = Arc<dyn Fn(bool) + Send + Sync>;

#[derive(Default)]
struct State {
    frozen: bool,
    /// Every frozen future's waker: one switch freezes a worker's job *and*
    /// the tasks it spawned, and thawing must wake them all.
    wakers: Vec<Waker>,
    /// What else stops with the worker: a worker that is an operating
    /// system process (a lock adapter) is stopped with `SIGSTOP`, which
    /// only a listener can send, since its code is not a future here.
    listeners: Vec<FreezeListener>,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("frozen", &self.frozen)
            .field("wakers", &self.wakers.len())
            .field("listeners", &self.listeners.len())
            .finish()
    }
}

/// The switch that freezes and thaws one or more [`Freezable`] futures.
#[derive(Clone, Debug, Default)]
pub struct FreezeSwitch {
    state: Arc<Mutex<State>>,
}

impl FreezeSwitch {
    /// A switch, initially thawed.
    pub fn new() -> Self {
        Self::default()
    }

    /// From the next poll on, the wrapped future is not polled; listeners
    /// hear `true` when this changes the state.
    pub fn freeze(&self) {
        let listeners = {
            let mut state = self.lock();
            let changed = !state.frozen;
            state.frozen = true;
            if changed {
                state.listeners.clone()
            } else {
                Vec::new()
            }
        };
        // Outside the lock: a listener may ask the switch its state.
        for listener in listeners {
            listener(true);
        }
    }

    /// Resumes polling; the wrapped future runs at its next poll; listeners
    /// hear `false` when this changes the state.
    pub fn thaw(&self) {
        let (wakers, listeners) = {
            let mut state = self.lock();
            let changed = state.frozen;
            state.frozen = false;
            let listeners = if changed {
                state.listeners.clone()
            } else {
                Vec::new()
            };
            (std::mem::take(&mut state.wakers), listeners)
        };
        for listener in listeners {
            listener(false);
        }
        for waker in wakers {
            waker.wake();
        }
    }

    /// Calls `listener` with `true` at every freeze and `false` at every
    /// thaw from now on (a state that does not change calls nothing).
    ///
    /// Panics past [`LISTENERS_MAX`] listeners.
    pub fn on_change(&self, listener: FreezeListener) {
        let mut state = self.lock();
        assert!(
            state.listeners.len() < LISTENERS_MAX,
            "at most {LISTENERS_MAX} listeners on one switch"
        );
        state.listeners.push(listener);
    }

    /// Whether frozen now.
    pub fn is_frozen(&self) -> bool {
        self.lock().frozen
    }

    /// Wraps `future` so this switch controls it.
    pub fn wrap<F: Future>(&self, future: F) -> Freezable<F> {
        Freezable {
            inner: Box::pin(future),
            switch: self.clone(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A future that is not polled while its switch is frozen.
pub struct Freezable<F> {
    inner: Pin<Box<F>>,
    switch: FreezeSwitch,
}

impl<F: Future> Future for Freezable<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        {
            let mut state = self.switch.lock();
            if state.frozen {
                let waker = cx.waker();
                if !state.wakers.iter().any(|w| w.will_wake(waker)) {
                    assert!(
                        state.wakers.len() < FROZEN_FUTURES_MAX,
                        "more than {FROZEN_FUTURES_MAX} futures frozen by one switch"
                    );
                    state.wakers.push(waker.clone());
                }
                return Poll::Pending;
            }
        }
        self.inner.as_mut().poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test(start_paused = true)]
    async fn frozen_future_makes_no_progress_until_thawed() {
        let ticks = Arc::new(AtomicU32::new(0));
        let switch = FreezeSwitch::new();
        let counted = ticks.clone();
        let task = tokio::spawn(switch.wrap(async move {
            for _ in 0..10 {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                counted.fetch_add(1, Ordering::SeqCst);
            }
        }));
        tokio::time::sleep(std::time::Duration::from_millis(35)).await;
        let before = ticks.load(Ordering::SeqCst);
        assert_eq!(before, 3);
        switch.freeze();
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        assert_eq!(
            ticks.load(Ordering::SeqCst),
            before,
            "no progress while frozen"
        );
        switch.thaw();
        task.await.unwrap();
        assert_eq!(ticks.load(Ordering::SeqCst), 10);
    }

    #[test]
    fn listeners_hear_each_change_once() {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let switch = FreezeSwitch::new();
        let log = heard.clone();
        switch.on_change(Arc::new(move |frozen| log.lock().unwrap().push(frozen)));
        switch.thaw();
        switch.freeze();
        switch.freeze();
        switch.thaw();
        switch.thaw();
        assert_eq!(*heard.lock().unwrap(), vec![true, false]);
    }

    #[tokio::test(start_paused = true)]
    async fn one_switch_freezes_and_thaws_every_task_it_wraps() {
        let ticks = Arc::new(AtomicU32::new(0));
        let switch = FreezeSwitch::new();
        let tasks: Vec<_> = (0..3)
            .map(|_| {
                let counted = ticks.clone();
                tokio::spawn(switch.wrap(async move {
                    for _ in 0..5 {
                        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                        counted.fetch_add(1, Ordering::SeqCst);
                    }
                }))
            })
            .collect();
        tokio::time::sleep(std::time::Duration::from_millis(15)).await;
        switch.freeze();
        let before = ticks.load(Ordering::SeqCst);
        assert_eq!(before, 3, "each task ticked once before the freeze");
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        assert_eq!(
            ticks.load(Ordering::SeqCst),
            before,
            "none ran while frozen"
        );
        switch.thaw();
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(ticks.load(Ordering::SeqCst), 15, "every task was woken");
    }
}
