//! Job slots: which of a worker's concurrent jobs the running code works
//! for.
//!
//! A worker whose plan runs several jobs at once (`WorkerPlan::jobs_at_once`)
//! runs each in a slot, and each slot is a holder of its own in the history
//! (`w0.0`, `w0.1`, …; see `redfence_history::names::task_name`): two jobs of
//! one process that both believe they hold the lock are two holders. The
//! whole-worker observer must then say which slot sent each request. It
//! cannot ask the team's code, so it asks the task: every job runs inside
//! [`scope`], and the worker's [`crate::world::Spawner`] carries the slot
//! into the tasks a job spawns (its renewal task), so a renewal is the
//! renewing job's. A worker running one job at a time has one slot and
//! records under its own name, as before.

use std::future::Future;

/// Most jobs a worker runs at once (re-exported as
/// `driver::JOBS_AT_ONCE_MAX`; defined here so this module depends on
/// nothing of the crate).
pub const JOBS_AT_ONCE_MAX: usize = 16;

tokio::task_local! {
    static SLOT: Option<usize>;
}

/// The job slot the running code works for, if it runs inside one.
pub(crate) fn current() -> Option<usize> {
    SLOT.try_with(|slot| *slot).ok().flatten()
}

/// Runs `future` as slot `slot`'s (or, with `None`, outside any slot).
pub(crate) async fn scope<F: Future>(slot: Option<usize>, future: F) -> F::Output {
    SLOT.scope(slot, future).await
}

/// A job slot's flow, as the worker's task polls it.
pub(crate) type SlotFuture<'a, T> = std::pin::Pin<Box<dyn Future<Output = T> + 'a>>;

/// Runs every slot's flow to its end inside the calling task (so a
/// stop-the-world pause of the worker's task freezes them all), polling
/// them in slot order; their outputs in slot order. At most
/// [`JOBS_AT_ONCE_MAX`] flows: each wake-up polls every
/// unfinished one.
pub(crate) async fn join_all<T>(mut flows: Vec<SlotFuture<'_, T>>) -> Vec<T> {
    assert!(flows.len() <= JOBS_AT_ONCE_MAX);
    let mut outputs: Vec<Option<T>> = flows.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (flow, output) in flows.iter_mut().zip(outputs.iter_mut()) {
            if output.is_some() {
                continue;
            }
            match flow.as_mut().poll(cx) {
                std::task::Poll::Ready(value) => *output = Some(value),
                std::task::Poll::Pending => pending = true,
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    outputs
        .into_iter()
        .map(|output| output.expect("every flow ended"))
        .collect()
}
