//! `redfence explore`: random fault schedules against one protocol until the
//! time is up, one exploration seed per core; the first failure is shrunk to
//! a 1-minimal schedule in time order and printed with its replay line.
//! Progress goes to stderr every few seconds (a line each, so CI logs show
//! it too).

use redfence_scenarios::names;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use redfence_scenarios::corpus::DIR_DEFAULT;
use redfence_scenarios::explore::{explore_parallel, Budget, EXPLORE_JOBS_MAX, SHRINKING};
use redfence_scenarios::timeline::timeline;

use super::CliError;

/// How often progress is printed while exploring.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// Longest `--time` accepted (a day): a bound on a mistyped unit.
const TIME_MAX: Duration = Duration::from_secs(86_400);

/// Arguments of `redfence explore`.
#[derive(Debug, Args)]
pub struct ExploreArgs {
    /// How long to explore, e.g. `30s`, `5m`, `1h`, `1500ms`.
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    time: Duration,
    /// The protocol to explore.
    #[arg(long, default_value = names::protocol::REFERENCE)]
    protocol: String,
    /// Exploration seed: the same seed tries the same schedules in order;
    /// thread `i` explores seed `SEED + i`.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Threads, each with its own exploration seed (default: every core).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=EXPLORE_JOBS_MAX as i64))]
    jobs: Option<u32>,
    /// World: `sim` or `real`.
    #[arg(long, default_value = "sim")]
    world: String,
    /// Save the (shrunk) failure found as a regression case into DIR.
    #[arg(long, value_name = "DIR", default_value = DIR_DEFAULT, conflicts_with = "no_save_failures")]
    save_failures: PathBuf,
    /// Do not save the failure found.
    #[arg(long)]
    no_save_failures: bool,
}

/// Parses `30s`, `5m`, `1h`, `1500ms`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("{text:?} has no unit; use ms, s, m or h (e.g. 30s)"))?;
    let (number, unit) = text.split_at(split);
    let value: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} does not start with a whole number"))?;
    let duration = match unit {
        "ms" => Duration::from_millis(value),
        "s" => Duration::from_secs(value),
        "m" => Duration::from_secs(value.saturating_mul(60)),
        "h" => Duration::from_secs(value.saturating_mul(3_600)),
        other => return Err(format!("unknown unit {other:?}; use ms, s, m or h")),
    };
    if duration.is_zero() || duration > TIME_MAX {
        return Err(format!("{text:?} must be more than 0 and at most 24h"));
    }
    Ok(duration)
}

/// Explores and prints what was found; exits 1 on a finding.
pub fn explore(args: ExploreArgs) -> Result<ExitCode, CliError> {
    // Only a simulation seed reproduces, so only the simulation saves.
    let save_to =
        Some(&args.save_failures).filter(|_| !args.no_save_failures && args.world == "sim");
    if let Some(dir) = save_to {
        super::report::check_dir_writable(dir)?;
    }
    let worlds = super::world(&args.world)?;
    let protocol = super::protocol(&args.protocol)?;
    let name = protocol.name().to_owned();
    // Real worlds run one at a time unless told otherwise (as `run` does):
    // they share the machine's servers and wall time.
    let jobs = match (args.world.as_str(), args.jobs) {
        (_, Some(n)) => n as usize,
        ("real", None) => 1,
        _ => std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
    .clamp(1, EXPLORE_JOBS_MAX);
    eprintln!(
        "exploring {name} for {:?} with random fault schedules on {jobs} thread{} (seeds {}..={})…",
        args.time,
        if jobs == 1 { "" } else { "s" },
        args.seed,
        args.seed.wrapping_add(jobs as u64 - 1)
    );
    // A real-world run that hangs stops the command (exit 124), as in
    // `run`: every finished run — explored or shrinking — is progress.
    let watchdog = super::run::watchdog(&args.world, None)?;
    let started = std::time::Instant::now();
    let last_report = std::sync::Mutex::new(started);
    let progress = |tried: u64| {
        if let Some(watchdog) = &watchdog {
            watchdog.progress();
        }
        if tried == SHRINKING {
            return;
        }
        let mut last = last_report.lock().unwrap_or_else(|e| e.into_inner());
        if last.elapsed() >= PROGRESS_EVERY {
            *last = std::time::Instant::now();
            let secs = started.elapsed().as_secs_f64();
            eprintln!(
                "  {tried} schedules in {secs:.0} s ({:.0}/s), nothing found yet",
                tried as f64 / secs.max(1e-9)
            );
        }
    };
    let result = explore_parallel(
        worlds.as_ref(),
        protocol,
        args.seed,
        jobs,
        Budget::Time(args.time),
        &progress,
    );
    drop(watchdog);
    let elapsed = started.elapsed().as_secs_f64();
    match result.found {
        None => {
            println!(
                "{} schedules in {elapsed:.1} s ({:.0}/s): no property violated by {name}",
                result.cases,
                result.cases as f64 / elapsed.max(1e-9)
            );
            Ok(ExitCode::SUCCESS)
        }
        Some(found) => {
            let record = &found.record;
            let shape = if found.minimal {
                "a 1-minimal schedule of"
            } else {
                "(not proven 1-minimal: the shrink budget ran out, or time order lost the \
                 failure)"
            };
            println!(
                "{name} broke after {} schedules; shrunk from {} faults to {shape} {}:\n  {}\n",
                result.cases,
                found.faults_before_shrinking,
                found.schedule.faults.len(),
                found.schedule
            );
            if let Some(history) = &record.history {
                print!("{}", timeline(history));
            }
            for verdict in record
                .verdicts
                .iter()
                .filter(|v| v.status == redfence_scenarios::Status::Violated)
            {
                println!(
                    "\nVIOLATED {}: {}",
                    verdict.property.name(),
                    verdict.explanation
                );
            }
            if let Some(error) = &record.error {
                println!("\nrun: {error}");
            }
            println!("\nreplay: {}", record.replay);
            // The property shrinking kept to, so the case is the one shown.
            let property = record
                .violated()
                .into_iter()
                .find(|p| found.target.contains(p))
                .or_else(|| record.violated().first().copied());
            match (save_to, property) {
                (Some(dir), Some(property)) => {
                    let case = super::corpus::case_of(record, property);
                    super::corpus::save_all(dir, &[case])?;
                }
                (Some(_), None) => {
                    println!("not saved: the run broke without violating a property")
                }
                (None, _) => {}
            }
            Ok(ExitCode::from(1))
        }
    }
}
