//! `redfence run`: sweep scenarios × protocols over seeds, print the result
//! — in 80 columns by default (`summary.rs`), or with `--wide` the full
//! protocol × scenario matrix, the mutation score and the replay of every
//! failing cell —, write the report with `--out DIR` (measuring the hotspot
//! wait curve for it), and exit non-zero when the reference protocol fails a
//! property.

use redfence_scenarios::names;
use std::process::ExitCode;

use clap::Args;
use redfence_reports::readiness::readiness;
use redfence_reports::ReportKind;
use redfence_scenarios::catalog::hotspot_load::{wait_curve, CurvePoint};
use redfence_scenarios::corpus::DIR_DEFAULT;
use redfence_scenarios::run::WorldFactory;
use redfence_scenarios::sweep::{sweep, CellStatus, Shard, Sweep, SweepPlan};
use redfence_scenarios::world::WorldKind;

use super::progress::Progress;
use super::report::OutArgs;
use super::signals::Watchdog;
use super::summary;
use super::CliError;
use std::path::PathBuf;
use std::time::Duration;

/// Seeds per point of the hotspot wait curve the report plots.
pub const CURVE_SEEDS_DEFAULT: u64 = 2;

/// Seeds per cell when neither `--seeds` nor `--seed` is given.
pub const SEEDS_DEFAULT: u64 = 50;

/// Seeds per cell in the real world when none is asked for.
pub const SEEDS_DEFAULT_REAL: u64 = 1;

/// Longest a real-world run (or the check before the first) may go
/// without finishing before the command is stopped as hung, in seconds.
pub const RUN_TIMEOUT_S_DEFAULT: u64 = 300;

/// Arguments of `redfence run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// World to run in: `sim` (deterministic simulation) or `real`.
    #[arg(long, default_value = "sim")]
    world: String,
    /// Scenario to run (repeatable; default: all).
    #[arg(long = "scenario", value_name = "NAME")]
    scenarios: Vec<String>,
    /// Protocol to run (repeatable; default: the reference and every
    /// mutant, or none when --adapter is given).
    #[arg(long = "protocol", value_name = "NAME")]
    protocols: Vec<String>,
    /// A lock adapter to run as a protocol, NAME=COMMAND (repeatable; real
    /// world only): one process per worker speaking the adapter protocol
    /// (docs/adapter-protocol.md).
    #[arg(long = "adapter", value_name = "NAME=COMMAND")]
    adapters: Vec<String>,
    /// Seeds per scenario × protocol.
    #[arg(long, value_name = "N", conflicts_with = "seed")]
    seeds: Option<u64>,
    /// First seed of the sweep.
    #[arg(
        long,
        value_name = "SEED",
        default_value_t = 0,
        conflicts_with = "seed"
    )]
    seed_first: u64,
    /// Run exactly this one seed.
    #[arg(long, value_name = "SEED")]
    seed: Option<u64>,
    /// Threads (default: every core).
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Run only shard I of N of the seed space (e.g. 2/4), for CI matrices.
    #[arg(long, value_name = "I/N")]
    shard: Option<Shard>,
    /// Write the sweep result as JSON to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<String>,
    #[command(flatten)]
    out: OutArgs,
    /// Print the full protocol × scenario matrix, the mutation score and
    /// one replay line per failing cell instead of the 80-column summary.
    #[arg(long)]
    wide: bool,
    /// Seeds per point of the hotspot wait curve (2–16 workers, jitter
    /// and none) measured for the report; 0 skips it.
    #[arg(long, value_name = "N", default_value_t = CURVE_SEEDS_DEFAULT, requires = "out")]
    curve_seeds: u64,
    /// Real world only: stop the command (exit 124) when a run takes
    /// longer than this many seconds [default: 300].
    #[arg(long, value_name = "SECS")]
    run_timeout: Option<u64>,
    /// Save one regression case per unexpected failure (a protocol that
    /// must pass violating a property, its smallest seed) into DIR.
    #[arg(long, value_name = "DIR")]
    save_failures: Option<PathBuf>,
    /// Re-run the regression cases in DIR before the sweep; exit 1 if one
    /// reproduces for a protocol that must pass [default:
    /// redfence-regressions, when that folder exists].
    #[arg(long, value_name = "DIR", conflicts_with = "no_corpus")]
    corpus: Option<PathBuf>,
    /// Re-run no regression cases.
    #[arg(long)]
    no_corpus: bool,
}

/// The watchdog of a real-world command, armed before its servers start.
pub fn watchdog(world: &str, run_timeout: Option<u64>) -> Result<Option<Watchdog>, CliError> {
    match (world, run_timeout) {
        (_, Some(0)) => Err(CliError::Invalid(
            "--run-timeout must be at least 1 second".into(),
        )),
        ("real", timeout) => Ok(Some(Watchdog::arm(
            "a real-world run",
            Duration::from_secs(timeout.unwrap_or(RUN_TIMEOUT_S_DEFAULT)),
        ))),
        (_, Some(_)) => Err(CliError::Invalid(
            "--run-timeout applies to --world real only".into(),
        )),
        (_, None) => Ok(None),
    }
}

/// What produced `result`: this redfence and, in the real world, the
/// provider and the servers' versions of the last world started.
pub fn record_provenance(result: &mut Sweep) {
    let provenance = result.provenance.get_or_insert_with(Default::default);
    provenance.redfence_version = env!("CARGO_PKG_VERSION").to_owned();
    provenance.commit = Some(env!("REDFENCE_COMMIT").to_owned()).filter(|c| !c.is_empty());
    provenance.os = Some(format!(
        "{} {}",
        std::env::consts::OS,
        std::env::consts::ARCH
    ));
    provenance.cpus = std::thread::available_parallelism()
        .ok()
        .map(|n| n.get() as u32);
    if result.world == WorldKind::Real {
        if let Some(servers) = redfence_chaos::last_started() {
            provenance.provider = Some(servers.provider.name().to_owned());
            provenance.redis_version = servers.redis_version;
            provenance.postgres_version = servers.postgres_version;
        }
    }
}

/// Runs the sweep and prints it.
pub fn run(args: RunArgs) -> Result<ExitCode, CliError> {
    let watchdog = watchdog(&args.world, args.run_timeout)?;
    // Outputs are checked before any work, servers included: a sweep's
    // minutes are not spent to fail at the end on a path that cannot be
    // written.
    if let Some(path) = &args.json {
        super::report::check_file_writable(std::path::Path::new(path))?;
    }
    if let Some(dir) = &args.out.out {
        super::report::check_dir_writable(dir)?;
    }
    if let Some(dir) = &args.save_failures {
        if args.world != "sim" {
            return Err(CliError::Invalid(
                "--save-failures saves simulation seeds; a real-world seed does not reproduce"
                    .into(),
            ));
        }
        super::report::check_dir_writable(dir)?;
    }
    let corpus = match (&args.corpus, args.no_corpus) {
        (_, true) => None,
        (Some(dir), false) => Some(dir.clone()),
        (None, false) => Some(PathBuf::from(DIR_DEFAULT)).filter(|d| d.is_dir()),
    };
    let adapters = super::adapters(&args.adapters, &args.world)?;
    let scenarios = adapter_scenarios(super::scenarios(&args.scenarios)?, &args, &adapters)?;
    let worlds = super::world(&args.world)?;
    let real = worlds.kind() == WorldKind::Real;
    let (seed_first, seeds) = match (args.seed, args.seeds) {
        (Some(seed), _) => (seed, 1),
        (None, Some(0)) => return Err(CliError::Invalid("--seeds must be at least 1".into())),
        (None, Some(n)) => (args.seed_first, n),
        // A real-world run takes seconds of wall time, not milliseconds.
        (None, None) if real => (args.seed_first, SEEDS_DEFAULT_REAL),
        (None, None) => (args.seed_first, SEEDS_DEFAULT),
    };
    if seed_first.checked_add(seeds - 1).is_none() {
        return Err(CliError::Invalid(format!(
            "--seed-first {seed_first} with {seeds} seeds runs past the largest seed, {}; the \
             largest first seed for {seeds} seeds is {}",
            u64::MAX,
            u64::MAX - (seeds - 1)
        )));
    }
    let plan = SweepPlan {
        scenarios,
        protocols: {
            let mut protocols = if adapters.is_empty() || !args.protocols.is_empty() {
                super::protocols(&args.protocols)?
            } else {
                Vec::new()
            };
            protocols.extend(adapters.iter().map(|a| {
                std::sync::Arc::new(a.clone())
                    as std::sync::Arc<dyn redfence_scenarios::protocol::Protocol>
            }));
            protocols
        },
        seed_first,
        seeds,
        // Real worlds each start their own servers and measure real time:
        // one at a time unless asked, so runs do not starve each other.
        jobs: match (real, args.jobs) {
            (true, None) => 1,
            _ => super::jobs(args.jobs)?,
        },
        shard: args.shard,
    };
    if plan.seed_list().is_empty() {
        return Err(CliError::Invalid(format!(
            "shard {} holds none of the {seeds} seeds from {seed_first}",
            args.shard.map_or_else(String::new, |s| s.to_string())
        )));
    }
    // The saved failures first: they are the cheapest news there is.
    let corpus_failed = match &corpus {
        Some(dir) => super::corpus::rerun(dir)?,
        None => false,
    };
    let total = plan.seed_list().len() * plan.scenarios.len() * plan.protocols.len();
    let progress = Progress::new(total);
    let report = |p: redfence_scenarios::sweep::Progress| {
        if let Some(watchdog) = &watchdog {
            watchdog.progress();
        }
        progress.update(p.done, p.total, p.failed);
    };
    let started = std::time::Instant::now();
    let mut result = sweep(worlds.as_ref(), &plan, &report);
    super::signals::park_if_interrupted();
    drop(watchdog);
    progress.finish();
    record_provenance(&mut result);
    for adapter in &adapters {
        let name = redfence_scenarios::protocol::Protocol::name(adapter);
        // An adapter's failure replays from the command line, not from
        // Rust code: say the command.
        let quoted: Vec<String> = adapter.argv().iter().map(|w| shell_word(w)).collect();
        for cell in result.cells.iter_mut().filter(|c| c.protocol == name) {
            for run in [cell.first_run.as_mut(), cell.first_failure.as_mut()]
                .into_iter()
                .flatten()
            {
                run.replay = format!(
                    "redfence run --world real --scenario {} --seed {} --adapter {}",
                    run.scenario,
                    run.seed,
                    shell_word(&format!("{name}={}", quoted.join(" ")))
                );
            }
        }
        if let (Some(ready), Some(provenance)) =
            (adapter.problems().library(), result.provenance.as_mut())
        {
            let fence = if ready.fences { "fences" } else { "no fence" };
            let version = ready
                .library_version
                .unwrap_or_else(|| "(no version)".into());
            provenance.libraries.insert(
                name.to_owned(),
                format!("{} {version}, {fence}", ready.library),
            );
        }
    }
    if let Some(provenance) = &mut result.provenance {
        provenance.wall_ms = Some(started.elapsed().as_millis() as u64);
    }
    let wall_s = started.elapsed().as_secs_f64().max(1e-9);
    // Real-world runs take seconds each: "0 runs/s" said nothing.
    let pace = if total as f64 >= wall_s {
        format!("{:.0} runs/s", total as f64 / wall_s)
    } else {
        format!("{:.1} s a run", wall_s / total.max(1) as f64)
    };
    let timing = format!(
        "{total} runs in {wall_s:.1} s ({pace}, {} {})",
        plan.jobs,
        if plan.jobs == 1 { "thread" } else { "threads" }
    );
    // The readiness marks do not depend on the curve, so the terminal
    // judges without it, for the deployment --fences/--replication say.
    let deployment = super::report::deployment(&result, &args.out);
    let judged = readiness(&result, &deployment, None);
    for line in summary::head(&result, &judged, &timing) {
        println!("{line}");
    }
    if args.wide {
        print_sweep(&result);
        println!();
        let groups = redfence_scenarios::triage::groups(&result);
        for line in summary::tail(&judged, &deployment, &groups) {
            println!("{line}");
        }
    } else {
        for line in summary::body(&result, &judged, &deployment) {
            println!("{line}");
        }
    }
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&result).expect("a sweep serialises");
        super::report::write_json(path, json.as_bytes())?;
        println!("sweep result written to {path}");
    }
    if args.out.out.is_some() {
        let curve = curve(worlds.as_ref(), &result, args.curve_seeds);
        let report =
            super::report::build_report(ReportKind::Sweep, result.clone(), curve, &args.out);
        super::report::write(&report, &args.out)?;
    }
    if let Some(dir) = &args.save_failures {
        let cases: Vec<_> = redfence_scenarios::triage::groups(&result)
            .iter()
            .filter_map(super::corpus::case_of_group)
            .collect();
        super::corpus::save_all(dir, &cases)?;
    }
    if corpus_failed {
        eprintln!("a saved regression case reproduces for a protocol that must pass; see above");
    }
    let failures = result.failed_cells();
    if !failures.is_empty() {
        eprintln!(
            "{} cell(s) failed for protocols that must pass ({}); replay lines above",
            failures.len(),
            failed_per_protocol(&failures)
        );
    }
    Ok(ExitCode::from(exit_code(corpus_failed, failures.len())))
}

/// `protocol count` per protocol with failed cells, in the sweep's order:
/// with lock adapters every one of them must pass, not only the reference.
fn failed_per_protocol(failures: &[&redfence_scenarios::sweep::Cell]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for cell in failures {
        match counts.iter_mut().find(|(p, _)| *p == cell.protocol) {
            Some((_, n)) => *n += 1,
            None => counts.push((&cell.protocol, 1)),
        }
    }
    counts
        .iter()
        .map(|(protocol, n)| format!("{protocol} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The scenarios a sweep with lock adapters runs: `concurrent-jobs`
/// (two jobs of one worker at once) is refused when named and left out
/// when not — over a process boundary the wire cannot tell which job sent
/// a command (docs/adapter-protocol.md).
fn adapter_scenarios(
    scenarios: Vec<std::sync::Arc<dyn redfence_scenarios::scenario::Scenario>>,
    args: &RunArgs,
    adapters: &[redfence_scenarios::adapter::AdapterProtocol],
) -> Result<Vec<std::sync::Arc<dyn redfence_scenarios::scenario::Scenario>>, CliError> {
    use redfence_scenarios::names::scenario::CONCURRENT_JOBS;
    if adapters.is_empty() {
        return Ok(scenarios);
    }
    if args.scenarios.iter().any(|s| s == CONCURRENT_JOBS) {
        return Err(CliError::Invalid(format!(
            "--scenario {CONCURRENT_JOBS} runs two jobs of one worker at once, which a lock \
             adapter cannot run: the wire cannot tell which job sent a command"
        )));
    }
    if args.scenarios.is_empty() {
        eprintln!("{CONCURRENT_JOBS} left out: a lock adapter runs one job of a worker at a time");
    }
    Ok(scenarios
        .into_iter()
        .filter(|s| s.name() != CONCURRENT_JOBS)
        .collect())
}

/// `word` as one shell word: as it is when it needs no quoting, else in
/// single quotes.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// `run`'s exit status: 1 when a saved case reproduced for a protocol that
/// must pass or a cell failed, else 0.
pub(super) fn exit_code(corpus_failed: bool, failed_cells: usize) -> u8 {
    u8::from(corpus_failed || failed_cells > 0)
}

/// The hotspot wait curve for the report, when hotspot-load ran in the
/// simulation (real-world runs take too long to repeat 8 × `seeds` times).
fn curve(worlds: &dyn WorldFactory, result: &Sweep, seeds: u64) -> Option<Vec<CurvePoint>> {
    let ran = result
        .scenarios
        .iter()
        .any(|s| s.name == names::scenario::HOTSPOT_LOAD);
    if !ran || seeds == 0 || worlds.kind() != WorldKind::Sim {
        return None;
    }
    let first = result.seed_first;
    // Inclusive, so a sweep that starts at the last seed still has one.
    let seeds: Vec<u64> = (first..=first.saturating_add(seeds.min(64) - 1)).collect();
    Some(wait_curve(worlds, &seeds))
}

fn symbol(status: CellStatus, seeds_to_catch: Option<u64>) -> String {
    match status {
        CellStatus::Passed => "pass".to_owned(),
        CellStatus::Caught => format!("CAUGHT@{}", seeds_to_catch.unwrap_or(0)),
        CellStatus::AlsoCaught => format!("also@{}", seeds_to_catch.unwrap_or(0)),
        CellStatus::NotCaught => "-".to_owned(),
        CellStatus::Missed => "MISSED".to_owned(),
        CellStatus::Undecidable => "n/d".to_owned(),
        CellStatus::Failed => "FAIL".to_owned(),
    }
}

/// Prints the wide output (`--wide`): the full matrix, the mutation score
/// and one replay line per failing cell.
pub fn print_sweep(result: &Sweep) {
    println!("\nprotocols:");
    for (i, p) in result.protocols.iter().enumerate() {
        println!("  P{i:<3} {}", p.name);
    }
    let width = 10;
    print!("\n{:<30}", "scenario");
    for i in 0..result.protocols.len() {
        print!("{:>width$}", format!("P{i}"));
    }
    println!();
    for scenario in &result.scenarios {
        print!("{:<30}", scenario.name);
        for protocol in &result.protocols {
            let cell = result
                .cell(&scenario.name, &protocol.name)
                .expect("every pair has a cell");
            print!("{:>width$}", symbol(cell.status, cell.seeds_to_catch));
        }
        println!();
    }
    println!(
        "\npass: no property violated   CAUGHT@n: the promised violation, first on the n-th seed\n\
         also@n: not promised, failed anyway   -: not promised, not caught\n\
         MISSED: a promised catch did not happen   FAIL: the reference failed\n\
         n/d: the promised property was not decided (the servers' recording had a gap; each verdict names it)"
    );
    // A property no scenario gave anything to judge was not tested: say so,
    // rather than let "pass" read as "held".
    let idle = summary::idle(result);
    if !idle.is_empty() {
        println!();
        for line in idle {
            println!("{line}");
        }
    }
    if !result.mutants.is_empty() {
        println!("\nmutation score");
        println!(
            "  {:<28} {:>8} {:>8} {:>15}  also caught by",
            "mutant", "promised", "caught", "seeds to catch"
        );
        for m in &result.mutants {
            println!(
                "  {:<28} {:>8} {:>8} {:>15}  {}",
                m.mutant,
                m.promised,
                m.caught,
                m.seeds_to_catch.map_or("-".to_owned(), |n| n.to_string()),
                m.also_caught_by.join(", ")
            );
        }
    }
    let failing: Vec<_> = result
        .cells
        .iter()
        .filter_map(|c| c.first_failure.as_ref().map(|r| (c, r)))
        .collect();
    if !failing.is_empty() {
        println!("\nreplay the first failure of each failing cell:");
        for (cell, record) in failing {
            let what = match (&record.error, record.violated().first()) {
                (_, Some(property)) => {
                    let explanation = record
                        .verdicts
                        .iter()
                        .find(|v| v.property == *property)
                        .map_or("", |v| v.explanation.as_str());
                    format!("violates {}: {explanation}", property.name())
                }
                (Some(error), None) => error.clone(),
                (None, None) => "failed".to_owned(),
            };
            println!("  {} × {}: {what}", cell.scenario, cell.protocol);
            println!("    {}", record.replay);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_word_is_quoted_only_when_a_shell_would_split_or_expand_it() {
        assert_eq!(shell_word("redis-py-lock=python3"), "redis-py-lock=python3");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word("$HOME"), "'$HOME'");
        assert_eq!(shell_word(""), "''");
    }
}
