//! Acquire+release cycles per second against a real redis-server, for three
//! locks measured in one run so the ratios share one machine state:
//!
//! - `redfence`: this crate's `LockClient::acquire` + `release` (lease *and* fence);
//! - `plain`: `SET NX PX` + the compare-and-delete script, the minimal safe pair
//!   (no fence);
//! - `rslock`: the `rslock` crate's `lock` + `unlock` (Redlock on one node, no fence);
//! - `bare acquire.lua`: this crate's acquire and release scripts sent through
//!   redis-rs's own `Script` API with none of the library around them (no
//!   retry loop, timer, metrics or logs) — the floor for any client of this
//!   script, so that `redfence` against it is the library's own overhead.
//!
//! Each is run with 1 and with 16 concurrent tasks sharing one multiplexed
//! connection; every task cycles its own resource so that the numbers measure
//! the protocol's cost, not contention.
//!
//! The machine drifts: loopback round trips here swing between ~26 and ~75 µs
//! for seconds at a time (redis-benchmark shows it on a plain GET), which
//! decided earlier 3-round runs more than the locks did. So rounds are short
//! and many, the three locks take turns within each round (order reversed
//! every other round), and the ratio reported is the median of each round's
//! own ratio — a lock is compared with rslock measured a moment apart, never
//! with rslock from another phase of the drift — printed with the middle
//! half (first to third quartile) of those ratios.
//!
//! Run: `scripts/with-services cargo bench -p redfence-core` (or `just bench`).
//! Under `cargo test` (no `--bench` argument) it runs as a smoke test: one
//! short round per lock, checking each completes cycles, no numbers claimed.
//! `REDFENCE_BENCH_SECONDS` (default 0.5) sets the length of one measurement;
//! `REDFENCE_BENCH_TASKS` (default `1,16`) the task counts and
//! `REDFENCE_BENCH_ONLY` (`redfence`, `plain`, `rslock`, `bare`) one lock, for profiling.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redfence_core::{AcquireOutcome, LockClient, LockConfig, ResourceName};
use redis::aio::MultiplexedConnection;

const ROUNDS: usize = 21;
const TASK_COUNTS: [usize; 2] = [1, 16];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Contender {
    Redfence,
    Plain,
    Rslock,
    Bare,
}

impl Contender {
    fn name(self) -> &'static str {
        match self {
            Contender::Redfence => "redfence",
            Contender::Plain => "plain SET NX PX + CAD",
            Contender::Rslock => "rslock",
            Contender::Bare => "bare acquire.lua",
        }
    }
}

fn main() {
    let url = std::env::var("REDFENCE_REDIS_URL").unwrap_or_else(|_| {
        eprintln!("REDFENCE_REDIS_URL is not set: run `scripts/with-services cargo bench -p redfence-core`");
        std::process::exit(2);
    });
    let seconds: f64 = std::env::var("REDFENCE_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.5);
    let smoke = !std::env::args().any(|a| a == "--bench");
    let (rounds, seconds) = if smoke { (1, 0.2) } else { (ROUNDS, seconds) };
    let window = Duration::from_secs_f64(seconds);
    let flavours: Vec<Flavour> = match std::env::var("REDFENCE_BENCH_RUNTIME").as_deref() {
        Ok("current-thread") => vec![Flavour::CurrentThread],
        Ok("multi-thread") => vec![Flavour::MultiThread],
        Ok(other) => {
            eprintln!(
                "REDFENCE_BENCH_RUNTIME: expected current-thread or multi-thread, got {other:?}"
            );
            std::process::exit(2);
        }
        Err(_) => vec![Flavour::CurrentThread, Flavour::MultiThread],
    };
    if smoke {
        println!("smoke run (use `cargo bench` for numbers)");
    }
    for flavour in flavours {
        table(flavour, &url, rounds, seconds, window);
    }
}

/// The tokio runtime the tasks and the connection's driver run on.
///
/// Why both: on the 2-worker runtime, whether the task and the
/// connection's driver land on one worker or on two (a cross-thread wake
/// per reply) decides a one-task run more than any lock does — the same
/// binary measured rslock at 7.8k and at 18k cycles/s, and plain `SET NX`
/// between 7.5k and 18k, from one run to the next. On the current-thread
/// runtime there is no placement to win or lose, so its ratios compare the
/// locks' own costs; the multi-thread table shows what an application on
/// the default runtime sees, noise included.
#[derive(Clone, Copy, Debug)]
enum Flavour {
    CurrentThread,
    MultiThread,
}

fn table(flavour: Flavour, url: &str, rounds: usize, seconds: f64, window: Duration) {
    let runtime = match flavour {
        Flavour::CurrentThread => tokio::runtime::Builder::new_current_thread(),
        Flavour::MultiThread => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(2);
            b
        }
    }
    .enable_all()
    .build()
    .unwrap();
    let url = url.to_owned();
    runtime.block_on(async move {
        let url = url.as_str();
        let name = match flavour {
            Flavour::CurrentThread => "current-thread runtime",
            Flavour::MultiThread => "multi-thread runtime, 2 workers",
        };
        println!();
        println!(
            "acquire+release cycles/s, {name}: median of {rounds} rounds of {seconds} s; \
             ratio: median of the rounds' own ratios"
        );
        println!(
            "{:<8} {:<24} {:>12} {:>12} {:>14}",
            "tasks", "lock", "cycles/s", "vs rslock", "middle half"
        );
        let task_counts: Vec<usize> = match std::env::var("REDFENCE_BENCH_TASKS") {
            Ok(list) => list
                .split(',')
                .map(|t| {
                    t.trim()
                        .parse()
                        .expect("REDFENCE_BENCH_TASKS: comma-separated task counts")
                })
                .collect(),
            Err(_) => TASK_COUNTS.to_vec(),
        };
        for tasks in task_counts {
            let mut contenders = vec![
                Contender::Rslock,
                Contender::Plain,
                Contender::Bare,
                Contender::Redfence,
            ];
            if let Ok(only) = std::env::var("REDFENCE_BENCH_ONLY") {
                contenders.retain(|c| c.name().starts_with(only.as_str()));
            }
            let mut results: Vec<Vec<f64>> = vec![Vec::new(); contenders.len()];
            for round in 0..rounds {
                let mut order: Vec<usize> = (0..contenders.len()).collect();
                if round % 2 == 1 {
                    order.reverse();
                }
                for i in order {
                    let c = contenders[i];
                    let rate = measure(c, url, tasks, window).await;
                    assert!(rate > 0.0, "{} completed no cycle", c.name());
                    results[i].push(rate);
                }
            }
            // Index 0 is rslock unless REDFENCE_BENCH_ONLY removed it.
            let baseline = results[0].clone();
            for (c, r) in contenders.iter().zip(&results) {
                let ratios: Vec<f64> = r.iter().zip(&baseline).map(|(x, b)| x / b).collect();
                let (low, mid, high) = quartiles(ratios);
                println!(
                    "{:<8} {:<24} {:>12.0} {:>11.2}x {:>7.2}–{:.2}",
                    tasks,
                    c.name(),
                    quartiles(r.clone()).1,
                    mid,
                    low,
                    high
                );
            }
        }
    });
}

/// First quartile, median and third quartile. The middle half of the
/// rounds' ratios is printed beside the median so that a reader sees how far
/// the machine's drift moved one round's ratio (a ratio whose middle half
/// spans 1.0 is not a difference this machine can resolve).
fn quartiles(mut values: Vec<f64>) -> (f64, f64, f64) {
    assert!(!values.is_empty(), "at least one round");
    values.sort_by(|a, b| a.partial_cmp(b).expect("rates are finite"));
    let at = |q: usize| values[(values.len() - 1) * q / 4];
    (at(1), at(2), at(3))
}

async fn measure(contender: Contender, url: &str, tasks: usize, window: Duration) -> f64 {
    let client = redis::Client::open(url).unwrap();
    let conn = client.get_multiplexed_async_connection().await.unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let cycles = Arc::new(AtomicU64::new(0));
    let rslock = Arc::new(rslock::LockManager::new(vec![url.to_owned()]));
    let config = LockConfig::builder().lease_ms(30_000).build().unwrap();
    let lock = LockClient::new(conn.clone(), config).unwrap();
    let run = uuid::Uuid::new_v4();
    let mut handles = Vec::new();
    for task in 0..tasks {
        let (stop, cycles, rslock, lock) =
            (stop.clone(), cycles.clone(), rslock.clone(), lock.clone());
        let mut conn = conn.clone();
        let resource = ResourceName::new(format!("bench-{run}-{task}")).unwrap();
        handles.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                match contender {
                    Contender::Redfence => redfence_cycle(&lock, &resource).await,
                    Contender::Plain => plain_cycle(&mut conn, &resource).await,
                    Contender::Rslock => rslock_cycle(&rslock, &resource).await,
                    Contender::Bare => bare_cycle(&mut conn, &resource).await,
                }
                cycles.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    // Warm-up: connections, script loading, allocator.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let start_cycles = cycles.load(Ordering::Relaxed);
    let started = Instant::now();
    tokio::time::sleep(window).await;
    let done = cycles.load(Ordering::Relaxed) - start_cycles;
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.await.unwrap();
    }
    done as f64 / elapsed.as_secs_f64()
}

async fn redfence_cycle(lock: &LockClient<MultiplexedConnection>, resource: &ResourceName) {
    match lock.acquire(resource).await.unwrap() {
        AcquireOutcome::Acquired(lease) => assert!(lock.release(&lease).await.unwrap()),
        other => panic!("uncontended resource: {other:?}"),
    }
}

async fn plain_cycle(conn: &mut MultiplexedConnection, resource: &ResourceName) {
    let key = format!("lock:{{{resource}}}");
    let token = uuid::Uuid::new_v4().to_string();
    let set: Option<String> = redis::cmd("SET")
        .arg(&key)
        .arg(&token)
        .arg("NX")
        .arg("PX")
        .arg(30_000)
        .query_async(conn)
        .await
        .unwrap();
    assert!(set.is_some());
    release_by_script(conn, &key, &token).await;
}

/// The compare-and-delete script through redis-rs's `Script` API: the release
/// half of both the plain pair and the bare scripts.
async fn release_by_script(conn: &mut MultiplexedConnection, key: &str, token: &str) {
    let released: i64 = plain_release()
        .key(key)
        .arg(token)
        .invoke_async(conn)
        .await
        .unwrap();
    assert_eq!(released, 1);
}

fn plain_release() -> &'static redis::Script {
    static SCRIPT: std::sync::OnceLock<redis::Script> = std::sync::OnceLock::new();
    SCRIPT.get_or_init(|| redis::Script::new(redfence_core::scripts::RELEASE_LUA))
}

fn bare_acquire() -> &'static redis::Script {
    static SCRIPT: std::sync::OnceLock<redis::Script> = std::sync::OnceLock::new();
    SCRIPT.get_or_init(|| redis::Script::new(redfence_core::scripts::ACQUIRE_LUA))
}

async fn bare_cycle(conn: &mut MultiplexedConnection, resource: &ResourceName) {
    let keys = redfence_core::KeyScheme::default();
    let lock_key = keys.lock_key(resource);
    // The library's token: 16 bytes from the thread RNG, no system call.
    let token = uuid::Builder::from_random_bytes(rand::random())
        .into_uuid()
        .to_string();
    let reply: redis::Value = bare_acquire()
        .key(&lock_key)
        .key(keys.fence_key(resource))
        .arg(&token)
        .arg(30_000)
        .arg("1")
        .invoke_async(conn)
        .await
        .unwrap();
    assert!(
        matches!(&reply, redis::Value::Array(items) if items.first() == Some(&redis::Value::Int(1))),
        "uncontended resource: {reply:?}"
    );
    release_by_script(conn, &lock_key, &token).await;
}

async fn rslock_cycle(manager: &rslock::LockManager, resource: &ResourceName) {
    let lock = manager
        .lock(resource.as_str().as_bytes(), Duration::from_secs(30))
        .await
        .unwrap();
    manager.unlock(&lock).await;
}
