//! `redfence replay`: one seed of one scenario, its timeline and verdicts;
//! with `--out DIR`, the single-seed report with its SVG timeline. The same
//! seed gives the same output byte for byte.

use redfence_scenarios::names;
use std::process::ExitCode;

use clap::Args;
use redfence_reports::ReportKind;
use redfence_scenarios::explore::{RandomFaults, Schedule};
use redfence_scenarios::run::run_one;
use redfence_scenarios::sweep::{sweep, SweepPlan};
use redfence_scenarios::timeline::timeline;

use super::report::OutArgs;
use super::CliError;

/// Arguments of `redfence replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The scenario.
    scenario: String,
    /// The protocol.
    #[arg(long, default_value = names::protocol::REFERENCE)]
    protocol: String,
    /// The seed.
    #[arg(long)]
    seed: u64,
    /// World: `sim` or `real`.
    #[arg(long, default_value = "sim")]
    world: String,
    /// The fault schedule of a `random-faults` replay (as printed by
    /// `redfence explore`).
    #[arg(long)]
    schedule: Option<String>,
    #[command(flatten)]
    out: OutArgs,
}

/// Runs and prints one seed; exits 1 when a property was violated.
pub fn replay(args: ReplayArgs) -> Result<ExitCode, CliError> {
    // The output is checked before the run, like `run`'s.
    if let Some(dir) = &args.out.out {
        super::report::check_dir_writable(dir)?;
    }
    // A real replay that hangs is stopped by its own timeout (exit 124).
    let _watchdog = super::run::watchdog(&args.world, None)?;
    let worlds = super::world(&args.world)?;
    let scenario: std::sync::Arc<dyn redfence_scenarios::scenario::Scenario> =
        match (&args.schedule, args.scenario.as_str()) {
            (Some(text), names::scenario::RANDOM_FAULTS) => {
                let schedule: Schedule =
                    text.parse()
                        .map_err(|e: redfence_scenarios::explore::ScheduleError| {
                            CliError::Invalid(e.to_string())
                        })?;
                std::sync::Arc::new(RandomFaults { schedule })
            }
            (Some(_), other) => {
                return Err(CliError::Invalid(format!(
                    "--schedule belongs to {}, not {other}",
                    names::scenario::RANDOM_FAULTS
                )))
            }
            (None, names::scenario::RANDOM_FAULTS) => {
                return Err(CliError::Invalid(format!(
                    "{} needs --schedule (printed by redfence explore)",
                    names::scenario::RANDOM_FAULTS
                )))
            }
            (None, _) => super::scenarios(std::slice::from_ref(&args.scenario))?.remove(0),
        };
    let protocol = super::protocol(&args.protocol)?;
    // With --out, the seed runs as a one-seed sweep, whose single cell
    // (expectation, status, the record) is what the report renders.
    let (record, result) = if args.out.out.is_some() {
        let plan = SweepPlan {
            scenarios: vec![scenario],
            protocols: vec![protocol],
            seed_first: args.seed,
            seeds: 1,
            jobs: 1,
            shard: None,
        };
        let result = sweep(worlds.as_ref(), &plan, &|_| {});
        let record = result
            .cells
            .first()
            .and_then(|c| c.first_run.clone())
            .expect("a one-seed sweep keeps its run");
        (record, Some(result))
    } else {
        let record = run_one(worlds.as_ref(), scenario.as_ref(), protocol, args.seed);
        (record, None)
    };
    println!(
        "{} × {} in the {} world, seed {}\n",
        record.scenario,
        record.protocol,
        record.world.name(),
        record.seed
    );
    if let Some(history) = &record.history {
        print!("{}", timeline(history));
    }
    if let Some(error) = &record.error {
        println!("\nrun: {error}");
    }
    println!("\nverdicts:");
    for verdict in &record.verdicts {
        let status = redfence_reports::labels::verdict_word(verdict.status);
        println!(
            "  {:<22} {:<13} {}",
            verdict.property.name(),
            status,
            verdict.explanation
        );
    }
    println!("\nreplay: {}", record.replay);
    if let Some(result) = result {
        let report = super::report::build_report(ReportKind::Replay, result, None, &args.out);
        println!();
        super::report::write(&report, &args.out)?;
    }
    Ok(if record.failed() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
