//! `redfence adapter check`: the adapter protocol's conformance check, as an
//! adapter author runs it on their own (docs/adapter-protocol.md).
//!
//! It starts real servers (the same providers as `--world real`), runs the
//! adapter through two scenarios and prints each check in words, then the
//! runs' property verdicts for information. Exit 0 when every check held,
//! 1 when one did not, 2 when the adapter or the world could not be used.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use redfence_scenarios::adapter::conformance::check_adapter;
use redfence_scenarios::protocol::Protocol;

use super::CliError;

/// Arguments of `redfence adapter`.
#[derive(Debug, Args)]
pub struct AdapterArgs {
    #[command(subcommand)]
    command: AdapterCommand,
}

#[derive(Debug, Subcommand)]
enum AdapterCommand {
    /// Check that an adapter speaks the protocol: ready, its key, its
    /// token on the wire, writes tied to its holdings, reports that match
    /// the store, fail-closed, a clean exit.
    Check {
        /// The adapter, NAME=COMMAND.
        #[arg(long = "adapter", value_name = "NAME=COMMAND")]
        adapter: String,
    },
}

/// Runs `redfence adapter …`.
pub fn adapter(args: AdapterArgs) -> Result<ExitCode, CliError> {
    let AdapterCommand::Check { adapter } = args.command;
    let adapter = super::adapters(std::slice::from_ref(&adapter), "real")?
        .pop()
        .expect("one spec, one adapter");
    let worlds = super::world("real")?;
    eprintln!(
        "checking adapter {} ({}) on real servers: two scenario runs, about half a minute",
        adapter.name(),
        adapter.argv().join(" ")
    );
    let conformance = check_adapter(worlds.as_ref(), &adapter);
    super::signals::park_if_interrupted();
    if let Some(ready) = adapter.problems().library() {
        println!(
            "library: {} {} (fences: {})",
            ready.library,
            ready
                .library_version
                .as_deref()
                .unwrap_or("(version not given)"),
            if ready.fences { "yes" } else { "no" }
        );
    }
    for check in &conformance.checks {
        let mark = if check.passed { "ok  " } else { "FAIL" };
        println!("{mark} {}: {}", check.name, check.detail);
    }
    println!("\nfor information (conformance is not safety):");
    for run in &conformance.runs {
        let violated: Vec<&str> = run.violated().iter().map(|p| p.name()).collect();
        println!(
            "  {}: {}",
            run.scenario,
            if violated.is_empty() {
                "no property violated".to_owned()
            } else {
                format!("violated {}", violated.join(", "))
            }
        );
    }
    if conformance.passed() {
        println!(
            "\nadapter {} conforms to protocol version 1",
            adapter.name()
        );
        Ok(ExitCode::SUCCESS)
    } else {
        println!(
            "\nadapter {} does not conform; see FAIL above",
            adapter.name()
        );
        Ok(ExitCode::from(1))
    }
}
