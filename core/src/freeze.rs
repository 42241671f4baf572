//! Stop-the-world pauses for a whole worker.
//!
//! A garbage-collection pause or a stopped VM freezes everything a process
//! does, its lease renewal included. [`Freezable`] reproduces that for a future:
//! while frozen it is not polled at all, so neither the job nor the renewal
//! keeper (which share the task) makes progress, while timers keep running
//! and bytes already sent keep travelling. Harnesses — the integration tests,
//! the simulation, the real-server world — use it to pause a worker.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

#[derive(Debug, Default)]
struct State {
    frozen: bool,
    waker: Option<Waker>,
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

    /// From the next poll on, the wrapped future is not polled.
    pub fn freeze(&self) {
        self.lock().frozen = true;
    }

    /// Resumes polling; the wrapped future runs at its next poll.
    pub fn thaw(&self) {
        let waker = {
            let mut state = self.lock();
            state.frozen = false;
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
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
                state.waker = Some(cx.waker().clone());
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
}
