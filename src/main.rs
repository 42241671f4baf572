//! `redfence`: the command line of the harness.
//!
//! `list` shows what can run; `run` sweeps scenarios × protocols over seeds
//! and prints the verdict matrix; `replay` runs one seed and prints its
//! timeline; `explore` throws random fault schedules at a protocol for a
//! while and shrinks what breaks it; `report` re-renders a report from its
//! JSON (`run` and `replay` write reports with `--out DIR`). One module per command, as in
//! mini-redis; argument parsing (clap) lives here.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cli;

/// Verify Redis lock protocols with fencing tokens against scripted failures.
#[derive(Debug, Parser)]
#[command(name = "redfence", version, about, long_about = None)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List scenarios, protocols and properties with one-line descriptions.
    List,
    /// Run scenarios against protocols over many seeds; print the matrix.
    Run(cli::run::RunArgs),
    /// Run one seed of one scenario and print its event timeline.
    Replay(cli::replay::ReplayArgs),
    /// Throw random fault schedules at a protocol; shrink what breaks it.
    Explore(cli::explore::ExploreArgs),
    /// Re-render a report (HTML, Markdown, JSON, JUnit) from its JSON.
    Report(cli::report::ReportArgs),
    /// Run the same cells in the simulation and the real world; table where
    /// their verdicts agree.
    Agree(cli::agree::AgreeArgs),
    /// Check a lock adapter (a program speaking the adapter protocol).
    Adapter(cli::adapter::AdapterArgs),
}

fn main() -> ExitCode {
    // First, before any thread starts: every later thread inherits the
    // blocked signals, and only the signal thread takes them.
    cli::signals::install();
    let args = Args::parse();
    let result = match args.command {
        Command::List => cli::list::list(),
        Command::Run(run) => cli::run::run(run),
        Command::Replay(replay) => cli::replay::replay(replay),
        Command::Explore(explore) => cli::explore::explore(explore),
        Command::Agree(agree) => cli::agree::agree(agree),
        Command::Report(report) => cli::report::report(report),
        Command::Adapter(adapter) => cli::adapter::adapter(adapter),
    };
    // A signal's stop ends the process itself (exit 130/143), after its
    // teardown: what the interrupted work returned is not reported.
    cli::signals::park_if_interrupted();
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(2)
        }
    }
}
