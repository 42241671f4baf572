//! `redfence agree`: the same scenarios and protocols in the simulation and
//! in the real world, and a table of where their verdicts agree. Any
//! disagreement is a defect in one of the worlds: the command exits 1 and
//! names the cells to investigate.

use std::process::ExitCode;

use clap::Args;
use redfence_scenarios::agreement::{compare, Compared, Row};
use redfence_scenarios::sim_world::SimWorlds;
use redfence_scenarios::sweep::{sweep, SweepPlan};
use redfence_scenarios::Property;

use super::progress::Progress;
use super::CliError;

/// Arguments of `redfence agree`.
#[derive(Debug, Args)]
pub struct AgreeArgs {
    /// Scenario to compare (repeatable; default: all).
    #[arg(long = "scenario", value_name = "NAME")]
    scenarios: Vec<String>,
    /// Protocol to compare (repeatable; default: all).
    #[arg(long = "protocol", value_name = "NAME")]
    protocols: Vec<String>,
    /// Seeds per cell, in each world (a real run takes seconds). The same
    /// count in both, so "violated on some seed" means the same thing.
    #[arg(long, value_name = "N", default_value_t = 1)]
    seeds: u64,
    /// Write the comparison as JSON to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<String>,
    /// Keep both worlds' sweeps in this folder (created if missing), as
    /// `sim.json` and `real.json`: each cell's first failing run with its
    /// whole history, to investigate a disagreement with `redfence report
    /// --from DIR/real.json --out R` (a real run cannot be replayed).
    #[arg(long, value_name = "DIR")]
    sweeps: Option<std::path::PathBuf>,
}

fn symbol(compared: Compared) -> &'static str {
    match compared {
        Compared::BothHeld => "ok",
        Compared::NotExercised => "ne",
        Compared::BothViolated => "VV",
        Compared::OnlySim => "S!",
        Compared::OnlyReal => "R!",
        Compared::RealUndecided => "n/d",
        Compared::SimUndecided => "s?",
        Compared::Missing => "--",
        Compared::RealOnly => "RO",
    }
}

/// Runs both sweeps and prints the table.
pub fn agree(args: AgreeArgs) -> Result<ExitCode, CliError> {
    if args.seeds == 0 {
        return Err(CliError::Invalid("--seeds must be at least 1".into()));
    }
    if let Some(path) = &args.json {
        super::report::check_file_writable(std::path::Path::new(path))?;
    }
    if let Some(dir) = &args.sweeps {
        super::report::check_dir_writable(dir)?;
    }
    let watchdog = super::run::watchdog("real", None)?;
    let real_worlds = super::world("real")?;
    let real_failover = redfence_chaos::ChaosConfig::from_env()
        .map(|c| c.failover)
        .map_err(|e| CliError::Invalid(e.to_string()))?;
    let scenarios = super::scenarios(&args.scenarios)?;
    let protocols = super::protocols(&args.protocols)?;
    let plan = |seeds, jobs| SweepPlan {
        scenarios: scenarios.clone(),
        protocols: protocols.clone(),
        seed_first: 0,
        seeds,
        jobs,
        shard: None,
    };
    eprintln!("simulation: {} seed(s) per cell…", args.seeds);
    let sim = sweep(&SimWorlds, &plan(args.seeds, super::jobs(None)?), &|_| {});
    eprintln!(
        "real world: {} seed(s) per cell, one run at a time…",
        args.seeds
    );
    let real_plan = plan(args.seeds, 1);
    // A bar on a terminal; whole lines in a log, which keeps a carriage
    // return's redraws as one line.
    let progress = Progress::new(
        real_plan.seed_list().len() * real_plan.scenarios.len() * real_plan.protocols.len(),
    );
    let real = sweep(real_worlds.as_ref(), &real_plan, &|p| {
        if let Some(watchdog) = &watchdog {
            watchdog.progress();
        }
        progress.update(p.done, p.total, p.failed);
    });
    super::signals::park_if_interrupted();
    drop(watchdog);
    progress.finish();
    let mut rows = compare(&sim, &real);
    if real_failover == redfence_chaos::FailoverKind::Sentinel {
        // Sentinel runs only where the scenario has a replica to fail over
        // to (the real world's rule); the simulation has none.
        let with_replica: Vec<&str> = scenarios
            .iter()
            .filter(|s| s.setup().replica)
            .map(|s| s.name())
            .collect();
        redfence_scenarios::agreement::mark_real_only(
            &mut rows,
            &with_replica,
            "Sentinel decided the real failover (REDFENCE_FAILOVER=sentinel); the simulation \
             has no Sentinel",
        );
    }
    print_rows(&rows);
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&rows).expect("rows serialise");
        super::report::write_json(path, json.as_bytes())?;
    }
    if let Some(dir) = &args.sweeps {
        std::fs::create_dir_all(dir).map_err(|source| CliError::Write {
            path: dir.display().to_string(),
            source,
        })?;
        for (name, result) in [("sim.json", &sim), ("real.json", &real)] {
            let path = dir.join(name);
            let json = serde_json::to_string_pretty(result).expect("a sweep serialises");
            super::report::write_json(&path.to_string_lossy(), json.as_bytes())?;
            println!("sweep written to {}", path.display());
        }
    }
    let disagreements: Vec<&Row> = rows.iter().filter(|r| r.disagrees()).collect();
    if disagreements.is_empty() {
        println!("\nno disagreement between the worlds");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("\n{} cell(s) disagree; investigate:", disagreements.len());
        for row in disagreements {
            println!("  {} × {}", row.scenario, row.protocol);
        }
        Ok(ExitCode::from(1))
    }
}

fn print_rows(rows: &[Row]) {
    print!("{:<30} {:<27}", "scenario", "protocol");
    for (i, _) in Property::ALL.iter().enumerate() {
        print!("{:>5}", format!("p{i}"));
    }
    println!();
    for row in rows {
        print!("{:<30} {:<27}", row.scenario, row.protocol);
        for (_, compared) in &row.properties {
            print!("{:>5}", symbol(*compared));
        }
        println!();
        if let Some(note) = &row.note {
            println!("{:>58}{note}", "");
        }
    }
    println!();
    for (i, property) in Property::ALL.iter().enumerate() {
        println!("  p{i} {}", property.name());
    }
    println!(
        "  ok both held   VV both violated   S! only the simulation violated   R! only the \
         real world violated   ne not violated, and not exercised in at least one world \
         (nothing to judge)   n/d the real world did not decide it (the row's note says why)   \
         s? the simulation did not decide it (its run stopped early)   -- a world did not run \
         the cell   RO real only, not compared (the row's note says why)"
    );
}
