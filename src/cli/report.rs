//! `redfence report`: re-render a report from its JSON (`report.json`, or a
//! bare sweep from `run --json`), or render the merge of a sweep's shards
//! (`--merge`, the pure merge in `redfence_history::merge`), and the report
//! options `run` and `replay` share (`--out`, `--format`, the deployment
//! judged, the report built from a sweep).
//!
//! Rendering lives in `redfence-reports`; this file only reads, chooses and
//! writes, so every command writes reports the same way.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::builder::TypedValueParser;
use clap::Args;
use redfence_reports::{Deployment, FenceSourceKind, Format, Replication, Report, ReportKind};
use redfence_scenarios::catalog::hotspot_load::CurvePoint;
use redfence_scenarios::merge::{self, MergeError, Part};
use redfence_scenarios::sweep::Sweep;

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
    #[arg(long, value_name = "FILE", required_unless_present = "merge")]
    from: Option<PathBuf>,
    /// Merge the `run --shard I/N --json` files of one sweep's shards (each
    /// seed run exactly once) and render the sweep they make together.
    #[arg(long, value_name = "FILE", num_args = 1.., conflicts_with = "from")]
    merge: Vec<PathBuf>,
    /// Also write the lock libraries' results page (docs/results.md) of
    /// the sweep: a real-world sweep of lock adapters.
    #[arg(long, value_name = "FILE")]
    results: Option<PathBuf>,
    /// The command that reproduces the sweep, quoted on the results page.
    #[arg(long, value_name = "COMMAND", requires = "results")]
    reproduce: Option<String>,
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

/// The report of `result` for the deployment `out` describes.
pub fn build_report(
    kind: ReportKind,
    result: Sweep,
    curve: Option<Vec<CurvePoint>>,
    out: &OutArgs,
) -> Report {
    let deployment = deployment(&result, out);
    Report::new(kind, &command_line(), deployment, result, curve)
}

/// The deployment `out` describes for `result` (assumed where it says
/// nothing).
pub fn deployment(result: &Sweep, out: &OutArgs) -> Deployment {
    let assumed = Deployment::assumed_for(result);
    out.deployment(&assumed).unwrap_or(assumed)
}

/// Writes `report` as `out` asks and prints where; the HTML path last, on
/// its own line, so scripts can take it.
pub fn write(report: &Report, out: &OutArgs) -> Result<(), CliError> {
    let Some(dir) = &out.out else {
        return Ok(());
    };
    // A stop (signal, timeout) waits for this write and starts no other.
    let paths = {
        let _writing = super::signals::output_guard();
        redfence_reports::write(report, dir, &out.formats())?
    };
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

/// Writes `bytes` to `path` atomically (a temporary file renamed into
/// place), under the output lock: a stop waits for it and starts no other.
pub fn write_json(path: &str, bytes: &[u8]) -> Result<(), CliError> {
    let _writing = super::signals::output_guard();
    redfence_reports::write_file_atomically(Path::new(path), bytes).map_err(CliError::ReportWrite)
}

/// Largest `report --from` input read: far above any sweep the CLI writes
/// (the default sweep's JSON is about 7 MB), and a bound on memory for
/// anything else.
pub const INPUT_BYTES_MAX: u64 = 256 * 1024 * 1024;

/// Reads a report or sweep from a regular file of at most
/// [`INPUT_BYTES_MAX`] bytes. Devices, FIFOs and other streams are refused
/// before anything is read: they can be endless (`/dev/zero`) or block
/// forever.
fn read(path: &Path) -> Result<Report, CliError> {
    use std::io::Read as _;
    let name = path.display().to_string();
    let refuse = |why: String| CliError::Invalid(format!("cannot read {name}: {why}"));
    let meta = std::fs::metadata(path).map_err(|source| CliError::Read {
        path: name.clone(),
        source,
    })?;
    if !meta.is_file() {
        return Err(refuse(
            "not a regular file (a device, FIFO or folder); give the report.json or sweep \
             JSON a run wrote"
                .to_owned(),
        ));
    }
    if meta.len() > INPUT_BYTES_MAX {
        return Err(refuse(format!(
            "{} bytes, over the {INPUT_BYTES_MAX}-byte limit for report inputs",
            meta.len()
        )));
    }
    let file = std::fs::File::open(path).map_err(|source| CliError::Read {
        path: name.clone(),
        source,
    })?;
    // Bounded even if the file grows while it is read.
    let mut text = String::new();
    file.take(INPUT_BYTES_MAX + 1)
        .read_to_string(&mut text)
        .map_err(|source| CliError::Read {
            path: name.clone(),
            source,
        })?;
    if text.len() as u64 > INPUT_BYTES_MAX {
        return Err(refuse(format!(
            "over the {INPUT_BYTES_MAX}-byte limit for report inputs"
        )));
    }
    Ok(redfence_reports::parse(&text, &name)?)
}

/// Checks, before any work, that `dir` can hold a report, creating
/// nothing: `dir` is a folder (or a link to one) that takes a probe file,
/// or, when it does not exist yet, its nearest existing ancestor — where it
/// would be created — is. A `dir` that exists and is not a folder is refused.
pub fn check_dir_writable(dir: &Path) -> Result<(), CliError> {
    let write_error = |source| CliError::Write {
        path: dir.display().to_string(),
        source,
    };
    if dir.exists() && !dir.is_dir() {
        return Err(write_error(std::io::Error::other(
            "exists and is not a folder",
        )));
    }
    // Bounded by the path's depth.
    let existing = dir
        .ancestors()
        .find(|a| a.as_os_str().is_empty() || a.exists())
        .map(|a| {
            if a.as_os_str().is_empty() {
                Path::new(".")
            } else {
                a
            }
        })
        .unwrap_or(Path::new("."));
    if !existing.is_dir() {
        return Err(write_error(std::io::Error::other(format!(
            "{} is not a folder",
            existing.display()
        ))));
    }
    probe(existing).map_err(write_error)
}

/// Writes and removes an empty file with a name of its own in `folder`.
fn probe(folder: &Path) -> std::io::Result<()> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let path = folder.join(format!(".redfence-probe-{}-{nanos}", std::process::id()));
    // A signal's stop waits for this guard, so it never exits between the
    // probe's creation and its removal (a kill test saw one left behind).
    let _writing = super::signals::output_guard();
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)?;
    std::fs::remove_file(&path)
}

/// Checks, before any work, that `file` can be written: an existing file,
/// device or FIFO opens for writing (nothing is truncated), and a new one's
/// folder takes a probe file. A folder is refused.
pub fn check_file_writable(file: &Path) -> Result<(), CliError> {
    let write_error = |source| CliError::Write {
        path: file.display().to_string(),
        source,
    };
    if file.is_dir() {
        return Err(write_error(std::io::Error::other("is a folder")));
    }
    if file.exists() {
        return std::fs::OpenOptions::new()
            .append(true)
            .open(file)
            .map(drop)
            .map_err(write_error);
    }
    let parent = match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    probe(&parent).map_err(write_error)
}

/// Re-renders a report from JSON, or renders the merge of shards.
pub fn report(args: ReportArgs) -> Result<ExitCode, CliError> {
    if args.out.out.is_none() && args.results.is_none() {
        return Err(CliError::Invalid(
            "redfence report needs --out DIR or --results FILE".to_owned(),
        ));
    }
    if let Some(dir) = &args.out.out {
        check_dir_writable(dir)?;
    }
    if let Some(file) = &args.results {
        check_file_writable(file)?;
    }
    let report = match &args.from {
        Some(from) => {
            let report = read(from)?;
            match args.out.deployment(&report.deployment) {
                Some(deployment) => report.with_deployment(deployment),
                None => report,
            }
        }
        None => build_report(ReportKind::Sweep, merge(&args.merge)?, None, &args.out),
    };
    if let Some(file) = &args.results {
        let reproduce = args
            .reproduce
            .clone()
            .unwrap_or_else(|| report.command.clone());
        let page = redfence_reports::results::render(&report.sweep, &reproduce);
        write_json(&file.display().to_string(), page.as_bytes())?;
        println!("wrote {}", file.display());
    }
    write(&report, &args.out)?;
    Ok(ExitCode::SUCCESS)
}

/// The sweep the shards in `files` make together, every file read and
/// every check made before anything is written. No hotspot wait curve: a
/// merge renders what ran and runs nothing.
fn merge(files: &[PathBuf]) -> Result<Sweep, CliError> {
    if files.len() > merge::PARTS_MAX {
        return Err(MergeError::TooMany { count: files.len() }.into());
    }
    // Bounded by PARTS_MAX files of at most INPUT_BYTES_MAX bytes each.
    let parts = files
        .iter()
        .map(|file| {
            Ok(Part {
                file: file.display().to_string(),
                sweep: read(file)?.sweep,
            })
        })
        .collect::<Result<Vec<_>, CliError>>()?;
    let merged = merge::merge(parts)?;
    println!("merged {} files: {}", files.len(), merged.verdict_line());
    Ok(merged)
}
