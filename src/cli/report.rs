//! `redfence report`: re-render a report from its JSON (`report.json`, or a
//! bare sweep from `run --json`), and the report options `run` and `replay`
//! share (`--out`, `--format`, the deployment judged).
//!
//! Rendering lives in `redfence-reports`; this file only reads, chooses and
//! writes, so every command writes reports the same way.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::builder::TypedValueParser;
use clap::Args;
use redfence_reports::{Deployment, FenceSourceKind, Format, Replication, Report};

use super::CliError;

/// Where and how a command writes its report.
#[derive(Debug, Args)]
pub struct OutArgs {
    /// Write the report into this folder (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Which files: html, md, json, junit (comma-separated; default all).
    #[arg(long, value_name = "LIST", value_delimiter = ',', requires = "out")]
    pub format: Vec<Format>,
    /// The deployment's fence source, for the readiness checklist:
    /// redis-counter (the library default) or store (durable counter).
    #[arg(long, value_name = "SOURCE", value_parser = fence_source())]
    pub fences: Option<FenceSourceKind>,
    /// The deployment's Redis replication, for the readiness checklist:
    /// async (a replica can be promoted; assumed) or none.
    #[arg(long, value_name = "KIND", value_parser = ["async", "none"])]
    pub replication: Option<String>,
}

impl OutArgs {
    /// The formats chosen (all when none is).
    pub fn formats(&self) -> Vec<Format> {
        if self.format.is_empty() {
            Format::ALL.to_vec()
        } else {
            self.format.clone()
        }
    }

    /// `base` with what the user said about the deployment; `None` when
    /// they said nothing.
    pub fn deployment(&self, base: &Deployment) -> Option<Deployment> {
        if self.fences.is_none() && self.replication.is_none() {
            return None;
        }
        Some(Deployment {
            protocol: base.protocol.clone(),
            fence_source: self.fences.unwrap_or(base.fence_source),
            replication: match self.replication.as_deref() {
                Some("none") => Replication::None,
                Some(_) => Replication::Async,
                None => base.replication,
            },
            assumed: false,
        })
    }
}

/// Parses `--fences`: one of [`FenceSourceKind`]'s names, listed in
/// `--help` and in the error for anything else.
fn fence_source() -> impl TypedValueParser<Value = FenceSourceKind> {
    clap::builder::PossibleValuesParser::new(FenceSourceKind::ALL.map(FenceSourceKind::name))
        .map(|name| FenceSourceKind::from_name(&name).expect("clap accepted one of the names"))
}

/// Arguments of `redfence report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The JSON to render: a report.json, or a sweep from `run --json`.
    #[arg(long, value_name = "FILE")]
    from: PathBuf,
    #[command(flatten)]
    out: OutArgs,
}

/// The command line as typed, for the report's header.
pub fn command_line() -> String {
    let mut words: Vec<String> = std::env::args().collect();
    if let Some(first) = words.first_mut() {
        *first = "redfence".to_owned();
    }
    words.join(" ")
}

/// Writes `report` as `out` asks and prints where; the HTML path last, on
/// its own line, so scripts can take it.
pub fn write(report: &Report, out: &OutArgs) -> Result<(), CliError> {
    let Some(dir) = &out.out else {
        return Ok(());
    };
    let paths = redfence_reports::write(report, dir, &out.formats())?;
    let html = paths
        .iter()
        .find(|p| p.file_name().is_some_and(|n| n == Format::Html.file_name()));
    for path in paths.iter().filter(|p| Some(*p) != html) {
        println!("wrote {}", path.display());
    }
    if let Some(html) = html {
        println!("report: {}", html.display());
    }
    Ok(())
}

fn read(path: &Path) -> Result<Report, CliError> {
    let text = std::fs::read_to_string(path).map_err(|source| CliError::Read {
        path: path.display().to_string(),
        source,
    })?;
    Ok(redfence_reports::parse(&text, &path.display().to_string())?)
}

/// Re-renders a report from JSON.
pub fn report(args: ReportArgs) -> Result<ExitCode, CliError> {
    if args.out.out.is_none() {
        return Err(CliError::Invalid(
            "redfence report needs --out DIR".to_owned(),
        ));
    }
    let mut report = read(&args.from)?;
    if let Some(deployment) = args.out.deployment(&report.deployment) {
        report = report.with_deployment(deployment);
    }
    write(&report, &args.out)?;
    Ok(ExitCode::SUCCESS)
}
