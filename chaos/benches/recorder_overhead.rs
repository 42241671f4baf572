//! What the real world's Redis recorder (`monitor.rs`: one `MONITOR`
//! connection per node) costs the lock under test: the latency of the
//! reference lock's acquire, and of acquire + release, with and without a
//! recorder attached to the same redis-server, measured in one run.
//!
//! The recorder adds nothing to the lock's own connection (its `MONITOR`
//! runs on a connection of its own); what it costs is the server's work of
//! formatting every command for the monitor and writing it out, paid inside
//! the command's latency.
//!
//! The machine drifts (loopback round trips swing between ~26 and ~75 µs for
//! seconds at a time), so rounds are short and alternate — without, with,
//! with, without, … — and each round's ratio compares two measurements a
//! moment apart. Reported: the median over rounds of the p50 and p99 acquire
//! latency ratio (with / without), with the middle half of those ratios.
//!
//! Run: `scripts/with-services cargo bench -p redfence-chaos --bench
//! recorder_overhead`. Under `cargo test` (no `--bench` argument) it is a
//! smoke run: one short round each way, checking that acquisitions complete
//! and that the recorder saw them, no numbers claimed.
//! `REDFENCE_BENCH_SECONDS` (default 0.5) sets one measurement's length.

use std::time::{Duration, Instant};

use redfence_chaos::monitor::{Recorder, TapeEntry};
use redfence_core::{AcquireOutcome, LockClient, LockConfig, ResourceName};

const ROUNDS: usize = 21;
/// Most acquisitions one measurement takes, whatever its length.
const CYCLES_MAX: usize = 200_000;

fn main() {
    let Ok(url) = std::env::var("REDFENCE_REDIS_URL") else {
        eprintln!(
            "REDFENCE_REDIS_URL is not set: run `scripts/with-services cargo bench -p \
             redfence-chaos --bench recorder_overhead`"
        );
        std::process::exit(2);
    };
    let smoke = !std::env::args().any(|a| a == "--bench");
    let seconds: f64 = std::env::var("REDFENCE_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.5);
    let (rounds, window) = if smoke {
        (1, Duration::from_millis(100))
    } else {
        (ROUNDS, Duration::from_secs_f64(seconds))
    };
    let addr = url
        .trim_start_matches("redis://")
        .trim_end_matches('/')
        .to_owned();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let mut p50: Vec<f64> = Vec::new();
        let mut p99: Vec<f64> = Vec::new();
        let mut cycle: Vec<f64> = Vec::new();
        for round in 0..rounds {
            // Alternate which goes first, so drift within a round cancels.
            let order = if round % 2 == 0 {
                [false, true]
            } else {
                [true, false]
            };
            let mut results = [None, None];
            for with in order {
                results[usize::from(with)] = Some(measure(&url, &addr, with, window).await);
            }
            let [Some(without), Some(with)] = results else {
                unreachable!("both measured")
            };
            p50.push(with.acquire_p50_us / without.acquire_p50_us);
            p99.push(with.acquire_p99_us / without.acquire_p99_us);
            cycle.push(with.cycle_p50_us / without.cycle_p50_us);
            if smoke || round == 0 {
                println!(
                    "round {round}: acquire p50 {:.0} µs without, {:.0} µs with; p99 {:.0} / {:.0} \
                     µs; {} / {} cycles; the recorder saw {} lines",
                    without.acquire_p50_us,
                    with.acquire_p50_us,
                    without.acquire_p99_us,
                    with.acquire_p99_us,
                    without.cycles,
                    with.cycles,
                    with.recorded
                );
            }
            assert!(without.cycles > 0 && with.cycles > 0, "acquisitions ran");
            assert!(
                with.recorded >= with.cycles,
                "the recorder saw every acquisition's script lines"
            );
        }
        if smoke {
            println!("smoke run (use `cargo bench` for numbers)");
            return;
        }
        for (name, ratios) in [
            ("acquire p50", &mut p50),
            ("acquire p99", &mut p99),
            ("acquire+release p50", &mut cycle),
        ] {
            let (q1, median, q3) = quartiles(ratios);
            println!(
                "{name} latency with the recorder / without: {median:.3}× (middle half \
                 {q1:.3}–{q3:.3}×, {rounds} rounds of {seconds} s each way)"
            );
        }
    });
}

struct Measured {
    acquire_p50_us: f64,
    acquire_p99_us: f64,
    cycle_p50_us: f64,
    cycles: usize,
    recorded: usize,
}

/// One task acquiring and releasing its own resource for `window`, with or
/// without a recorder attached to the server.
async fn measure(url: &str, addr: &str, with: bool, window: Duration) -> Measured {
    let recorder = Recorder::new();
    if with {
        recorder
            .attach("bench", addr)
            .await
            .expect("attach MONITOR");
    }
    let conn = redis::Client::open(url)
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("connect");
    let config = LockConfig::builder()
        .lease_ms(30_000)
        .build()
        .expect("config");
    let lock = LockClient::new(conn, config).expect("client");
    let resource = ResourceName::new(format!("bench-{}", uuid::Uuid::new_v4())).expect("name");
    // Warm-up: script loading, allocator.
    for _ in 0..50 {
        cycle(&lock, &resource).await;
    }
    let mut acquires: Vec<u64> = Vec::new();
    let mut cycles: Vec<u64> = Vec::new();
    let started = Instant::now();
    // Bounded by the window and by CYCLES_MAX.
    while started.elapsed() < window && cycles.len() < CYCLES_MAX {
        let t0 = Instant::now();
        let lease = match lock.acquire(&resource).await.expect("acquire") {
            AcquireOutcome::Acquired(lease) => lease,
            other => panic!("uncontended resource: {other:?}"),
        };
        acquires.push(t0.elapsed().as_micros() as u64);
        assert!(lock.release(&lease).await.expect("release"));
        cycles.push(t0.elapsed().as_micros() as u64);
    }
    let recorded = if with {
        recorder.sync("bench", addr).await.expect("sync");
        let tape = recorder.finish();
        tape.entries
            .iter()
            .filter(|e| matches!(e, TapeEntry::Command(c) if c.client == "lua"))
            .count()
    } else {
        0
    };
    Measured {
        acquire_p50_us: percentile(&mut acquires, 50),
        acquire_p99_us: percentile(&mut acquires, 99),
        cycle_p50_us: percentile(&mut cycles, 50),
        cycles: cycles.len(),
        recorded,
    }
}

async fn cycle(lock: &LockClient<redis::aio::MultiplexedConnection>, resource: &ResourceName) {
    match lock.acquire(resource).await.expect("acquire") {
        AcquireOutcome::Acquired(lease) => assert!(lock.release(&lease).await.expect("release")),
        other => panic!("uncontended resource: {other:?}"),
    }
}

fn percentile(values: &mut [u64], p: usize) -> f64 {
    assert!(!values.is_empty(), "measured something");
    values.sort_unstable();
    let at = (values.len() * p / 100).min(values.len() - 1);
    values[at].max(1) as f64
}

fn quartiles(values: &mut [f64]) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    let at = |q: usize| values[(values.len() * q / 4).min(values.len() - 1)];
    (at(1), at(2), at(3))
}
