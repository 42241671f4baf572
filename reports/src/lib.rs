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
///
/// Atomically, so that a reader (or an interrupted run) never leaves a
/// truncated report or a new JSON beside an old HTML: the files are written
/// into a temporary folder beside `dir`, then swapped in as a whole —
/// `dir` renamed aside, the new folder renamed to `dir`, the old one
/// removed. Between the two renames `dir` is briefly absent, never mixed.
/// When `dir` holds anything besides report files (a folder shared with
/// other output), the folder is left in place and each file is replaced
/// atomically on its own instead.
pub fn write(report: &Report, dir: &Path, formats: &[Format]) -> Result<Vec<PathBuf>, WriteError> {
    let error = |path: &Path| {
        let path = path.display().to_string();
        move |source| WriteError { path, source }
    };
    let files = render(report, formats);
    let report_names: Vec<&str> = Format::ALL.iter().map(|f| f.file_name()).collect();
    let shared = match std::fs::read_dir(dir) {
        Ok(entries) => entries.flatten().any(|e| {
            !e.file_name()
                .to_str()
                .is_some_and(|n| report_names.contains(&n))
        }),
        Err(_) => false,
    };
    let paths: Vec<PathBuf> = files.iter().map(|(name, _)| dir.join(name)).collect();
    if shared {
        for (name, contents) in &files {
            write_file_atomically(&dir.join(name), contents.as_bytes())?;
        }
        return Ok(paths);
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(error(&parent))?;
    let base = dir
        .file_name()
        .map_or_else(|| "report".to_owned(), |n| n.to_string_lossy().into_owned());
    let staging = parent.join(format!(".{base}.new-{}", std::process::id()));
    let aside = parent.join(format!(".{base}.old-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).map_err(error(&staging))?;
    for (name, contents) in &files {
        let path = staging.join(name);
        if let Err(e) = std::fs::write(&path, contents) {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(error(&path)(e));
        }
    }
    let had_old = dir.exists();
    if had_old {
        if let Err(e) = std::fs::rename(dir, &aside) {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(error(dir)(e));
        }
    }
    if let Err(e) = std::fs::rename(&staging, dir) {
        // Put the old report back rather than leave nothing.
        if had_old {
            let _ = std::fs::rename(&aside, dir);
        }
        let _ = std::fs::remove_dir_all(&staging);
        return Err(error(dir)(e));
    }
    if had_old {
        std::fs::remove_dir_all(&aside).map_err(error(&aside))?;
    }
    Ok(paths)
}

/// Writes `contents` to `path` through a temporary file beside it and a
/// rename, so `path` holds the old contents or the new, never a part.
pub fn write_file_atomically(path: &Path, contents: &[u8]) -> Result<(), WriteError> {
    let error = |path: &Path| {
        let path = path.display().to_string();
        move |source| WriteError { path, source }
    };
    let name = path
        .file_name()
        .map_or_else(|| "output".to_owned(), |n| n.to_string_lossy().into_owned());
    let temporary = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    if let Err(e) = std::fs::write(&temporary, contents) {
        let _ = std::fs::remove_file(&temporary);
        return Err(error(&temporary)(e));
    }
    std::fs::rename(&temporary, path).map_err(|e| {
        let _ = std::fs::remove_file(&temporary);
        error(path)(e)
    })
}
