//! redfence-reports: renders run results into what a team reads before a
//! production rollout, and what CI shows.
//!
//! The input is a [`Report`] — a `redfence_history::sweep::Sweep` plus the
//! deployment it judges, the hotspot wait curve and the readiness verdicts —
//! which is also the versioned JSON output (`report.json`, see
//! [`document`] for the schema). Every other format renders from that value:
//! self-contained HTML with SVG timelines ([`html`]), a Markdown summary for a
//! pull-request comment ([`markdown`]) and JUnit XML for CI test tabs
//! ([`junit`]). This crate runs nothing — reports only render, on `redfence-history`
//! alone; the
//! CLI runs the sweep and builds the report.
//!
//! ```
//! use redfence_reports::{render, Format};
//! # fn demo(report: &redfence_reports::Report) {
//! for (file, contents) in render(report, &Format::ALL) {
//!     println!("{file}: {} bytes", contents.len());
//! }
//! # }
//! ```

pub mod deployment;
pub mod document;
pub mod escape;
pub mod html;
pub mod junit;
pub mod labels;
pub mod markdown;
pub mod plots;
pub mod readiness;
pub mod timeline_svg;

use std::path::{Path, PathBuf};
use std::str::FromStr;

pub use deployment::{deployed_protocol, Deployment, Replication};
pub use document::{parse, Report, ReportError, ReportKind, REPORT_SCHEMA_VERSION};
pub use redfence_history::FenceSourceKind;

/// One output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Format {
    /// `report.html`.
    Html,
    /// `summary.md`.
    Markdown,
    /// `report.json`.
    Json,
    /// `junit.xml`.
    Junit,
}

impl Format {
    /// Every format, in the order files are written.
    pub const ALL: [Format; 4] = [Format::Html, Format::Markdown, Format::Json, Format::Junit];

    /// The file the format is written to.
    pub fn file_name(self) -> &'static str {
        match self {
            Format::Html => "report.html",
            Format::Markdown => "summary.md",
            Format::Json => "report.json",
            Format::Junit => "junit.xml",
        }
    }

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Html => "html",
            Format::Markdown => "md",
            Format::Json => "json",
            Format::Junit => "junit",
        }
    }
}

/// A format name that is not one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown report format {0:?}; known: html, md, json, junit")]
pub struct FormatError(pub String);

impl FromStr for Format {
    type Err = FormatError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|f| {
                f.name() == name.trim() || (name.trim() == "markdown" && *f == Format::Markdown)
            })
            .ok_or_else(|| FormatError(name.to_owned()))
    }
}

/// The files of `formats`, as (file name, contents), in [`Format::ALL`] order.
pub fn render(report: &Report, formats: &[Format]) -> Vec<(&'static str, String)> {
    let mut chosen = formats.to_vec();
    chosen.sort_unstable();
    chosen.dedup();
    chosen
        .into_iter()
        .map(|format| {
            let contents = match format {
                Format::Html => html::render(report),
                Format::Markdown => markdown::render(report),
                Format::Json => report.to_json(),
                Format::Junit => junit::render(report),
            };
            (format.file_name(), contents)
        })
        .collect()
}

/// Why the files could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {path}: {source}")]
pub struct WriteError {
    /// The file or folder.
    pub path: String,
    /// Why.
    pub source: std::io::Error,
}

/// Writes the files of `formats` into `dir` (created if missing) and
/// returns their paths in [`Format::ALL`] order.
pub fn write(report: &Report, dir: &Path, formats: &[Format]) -> Result<Vec<PathBuf>, WriteError> {
    std::fs::create_dir_all(dir).map_err(|source| WriteError {
        path: dir.display().to_string(),
        source,
    })?;
    let mut paths = Vec::new();
    for (name, contents) in render(report, formats) {
        let path = dir.join(name);
        std::fs::write(&path, contents).map_err(|source| WriteError {
            path: path.display().to_string(),
            source,
        })?;
        paths.push(path);
    }
    Ok(paths)
}
