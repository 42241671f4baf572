//! Retry timing: full-jitter exponential backoff, with the randomness and the
//! sleeping injectable.
//!
//! Full jitter (`random(0, min(cap, base * 2^attempt))`) spreads contenders out
//! after a release instead of letting them retry in lockstep. Randomness and
//! sleep are traits so a simulation can seed one and virtualise the other;
//! `tokio::time::sleep` already follows a simulated clock, so the default
//! sleeper is also the simulation's.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Largest exponent applied to the base, so `base * 2^attempt` cannot overflow.
const BACKOFF_EXPONENT_MAX: u32 = 30;

/// Draws a uniformly random number of milliseconds.
pub trait Jitter: Send + Sync + fmt::Debug {
    /// A value in `0..=max_ms`.
    fn draw_ms(&self, max_ms: u64) -> u64;
}

/// Jitter from the thread-local OS-seeded RNG: the production default.
#[derive(Debug, Default, Clone, Copy)]
pub struct ThreadRngJitter;

impl Jitter for ThreadRngJitter {
    fn draw_ms(&self, max_ms: u64) -> u64 {
        rand::rng().random_range(0..=max_ms)
    }
}

/// Jitter from a seeded RNG, for deterministic runs.
#[derive(Debug)]
pub struct SeededJitter {
    rng: Mutex<ChaCha8Rng>,
}

impl SeededJitter {
    /// A jitter source whose sequence is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(seed)),
        }
    }
}

impl Jitter for SeededJitter {
    fn draw_ms(&self, max_ms: u64) -> u64 {
        let mut rng = self.rng.lock().unwrap_or_else(|e| e.into_inner());
        rng.random_range(0..=max_ms)
    }
}

/// No jitter at all: always the full exponential delay. Exists so the hotspot
/// scenario can measure what jitter buys.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoJitter;

impl Jitter for NoJitter {
    fn draw_ms(&self, max_ms: u64) -> u64 {
        max_ms
    }
}

/// Waits for a duration.
pub trait Sleeper: Send + Sync + fmt::Debug {
    /// A future that completes after `duration`.
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

/// `tokio::time::sleep`: real time in production, virtual time under turmoil
/// or a paused tokio clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct TokioSleeper;

impl Sleeper for TokioSleeper {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// The upper bound of the full-jitter window before attempt `attempt`
/// (0-based): `min(cap, base * 2^attempt)`.
pub fn backoff_window_ms(base_ms: u64, cap_ms: u64, attempt: u32) -> u64 {
    let exponent = attempt.min(BACKOFF_EXPONENT_MAX);
    base_ms.saturating_mul(1u64 << exponent).min(cap_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_doubles_then_caps() {
        assert_eq!(backoff_window_ms(10, 1000, 0), 10);
        assert_eq!(backoff_window_ms(10, 1000, 1), 20);
        assert_eq!(backoff_window_ms(10, 1000, 6), 640);
        assert_eq!(backoff_window_ms(10, 1000, 7), 1000);
        assert_eq!(backoff_window_ms(10, 1000, u32::MAX), 1000);
    }

    #[test]
    fn seeded_jitter_is_reproducible_and_in_range() {
        let a = SeededJitter::new(3);
        let b = SeededJitter::new(3);
        for max in [0, 1, 7, 1000] {
            let x = a.draw_ms(max);
            assert_eq!(x, b.draw_ms(max));
            assert!(x <= max);
        }
        assert_eq!(NoJitter.draw_ms(42), 42);
        assert!(ThreadRngJitter.draw_ms(5) <= 5);
    }
}
