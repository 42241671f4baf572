//! Progress of a sweep on stderr: an indicatif bar when stderr is a
//! terminal, and plain lines (`progress: 1200/7800 runs, 0 failing, 14 s`)
//! at most every [`PLAIN_INTERVAL_S`] seconds when it is not.
//!
//! Why two ways: a bar redraws itself with carriage returns and escape
//! codes, which a CI log or a file keeps as one unreadable line (or, with
//! indicatif hiding itself off a terminal, as nothing at all for the
//! minutes a sweep takes). A log wants a few whole lines it can timestamp.

use std::io::IsTerminal as _;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// Fewest seconds between two plain progress lines.
pub const PLAIN_INTERVAL_S: u64 = 10;

/// Where one sweep's progress goes.
pub struct Progress {
    bar: Option<ProgressBar>,
    started: Instant,
    /// Off a terminal: when the last plain line was printed, and the last
    /// counts seen (for the closing line).
    plain: Mutex<Plain>,
}

#[derive(Default)]
struct Plain {
    last_line: Option<Duration>,
    done: usize,
    total: usize,
    failed: usize,
}

impl Plain {
    /// Whether a line is due `elapsed` after the start: the first once a
    /// whole interval has passed, then one per interval at most.
    fn due(&self, elapsed: Duration) -> bool {
        let since = elapsed.saturating_sub(self.last_line.unwrap_or_default());
        since >= Duration::from_secs(PLAIN_INTERVAL_S)
    }
}

/// One plain progress line.
fn plain_line(done: usize, total: usize, failed: usize, elapsed: Duration) -> String {
    format!(
        "progress: {done}/{total} runs, {failed} failing, {} s",
        elapsed.as_secs()
    )
}

impl Progress {
    /// Progress of `total` runs: a bar on a terminal, else plain lines.
    pub fn new(total: usize) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total as u64);
            bar.set_style(
                ProgressStyle::with_template(
                    "{bar:40} {pos}/{len} runs, {msg} [{elapsed_precise}, eta {eta}]",
                )
                .expect("a valid template"),
            );
            bar
        });
        Self {
            bar,
            started: Instant::now(),
            plain: Mutex::new(Plain {
                total,
                ..Plain::default()
            }),
        }
    }

    /// `done` of `total` runs finished, `failed` of them failing.
    pub fn update(&self, done: usize, total: usize, failed: usize) {
        if let Some(bar) = &self.bar {
            bar.set_position(done as u64);
            bar.set_message(format!("{failed} failing"));
            return;
        }
        let elapsed = self.started.elapsed();
        let mut plain = self.plain.lock().unwrap_or_else(|e| e.into_inner());
        (plain.done, plain.total, plain.failed) = (done, total, failed);
        if plain.due(elapsed) {
            plain.last_line = Some(elapsed);
            eprintln!("{}", plain_line(done, total, failed, elapsed));
        }
    }

    /// Clears the bar, or prints the closing plain line.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
            return;
        }
        let plain = self.plain.lock().unwrap_or_else(|e| e.into_inner());
        eprintln!(
            "{}",
            plain_line(
                plain.done,
                plain.total,
                plain.failed,
                self.started.elapsed()
            )
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines_come_at_most_once_per_interval() {
        let s = |secs: u64| Duration::from_secs(secs);
        let mut plain = Plain::default();
        assert!(!plain.due(s(0)));
        assert!(!plain.due(s(PLAIN_INTERVAL_S - 1)));
        assert!(plain.due(s(PLAIN_INTERVAL_S)));
        plain.last_line = Some(s(PLAIN_INTERVAL_S + 3));
        assert!(!plain.due(s(2 * PLAIN_INTERVAL_S)));
        assert!(plain.due(s(2 * PLAIN_INTERVAL_S + 3)));
        assert_eq!(
            plain_line(1200, 7800, 0, s(14)),
            "progress: 1200/7800 runs, 0 failing, 14 s"
        );
    }
}
