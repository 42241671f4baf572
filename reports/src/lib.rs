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
pub mod results;
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
/// Atomically, so that a reader (or an interrupted run) never finds a
/// truncated report: when `dir` is missing or a real folder that holds
/// nothing but report files, the files are written into a staging folder
/// beside it, which then replaces `dir` whole (`dir` renamed aside, the new
/// folder renamed in, the old one removed; between the two renames `dir` is
/// briefly absent, never mixed). Otherwise — `dir` is a symbolic link, holds
/// other files, or the folder cannot be renamed (a mount point, a parent
/// that cannot be written) — `dir` stays where it is and each file is
/// replaced atomically on its own. A `dir` that exists but is not a folder
/// is refused, and nothing is touched.
pub fn write(report: &Report, dir: &Path, formats: &[Format]) -> Result<Vec<PathBuf>, WriteError> {
    let error = |path: &Path| {
        let path = path.display().to_string();
        move |source| WriteError { path, source }
    };
    let files = render(report, formats);
    let paths: Vec<PathBuf> = files.iter().map(|(name, _)| dir.join(name)).collect();
    let report_names: Vec<&str> = Format::ALL.iter().map(|f| f.file_name()).collect();
    let swap = match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(e) => return Err(error(dir)(e)),
        Ok(meta) if meta.file_type().is_symlink() => false,
        Ok(meta) if !meta.is_dir() => {
            return Err(error(dir)(std::io::Error::other(
                "exists and is not a folder; nothing was written",
            )))
        }
        Ok(_) => std::fs::read_dir(dir)
            .map_err(error(dir))?
            .flatten()
            .all(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| report_names.contains(&n))
            }),
    };
    if swap && swap_in(&files, dir).is_ok() {
        return Ok(paths);
    }
    // In place, file by file (also when the swap could not be done).
    std::fs::create_dir_all(dir).map_err(error(dir))?;
    for (name, contents) in &files {
        write_file_atomically(&dir.join(name), contents.as_bytes())?;
    }
    Ok(paths)
}

/// A name for a temporary sibling of `base`, unique to this process, this
/// moment and this call (processes in separate containers can share a pid).
fn temporary_name(base: &str, what: &str) -> String {
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!(".{base}.{what}-{}-{nanos}-{call}", std::process::id())
}

/// Writes `files` into a fresh staging folder beside `dir` and swaps it in.
/// On any failure the staging folder is removed and `dir` is as it was.
fn swap_in(files: &[(&'static str, String)], dir: &Path) -> std::io::Result<()> {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let base = dir
        .file_name()
        .map_or_else(|| "report".to_owned(), |n| n.to_string_lossy().into_owned());
    std::fs::create_dir_all(&parent)?;
    let staging = parent.join(temporary_name(&base, "new"));
    let aside = parent.join(temporary_name(&base, "old"));
    // create_dir, not create_dir_all: fails rather than share a folder.
    std::fs::create_dir(&staging)?;
    let staged = files
        .iter()
        .try_for_each(|(name, contents)| std::fs::write(staging.join(name), contents));
    if let Err(e) = staged {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }
    let had_old = dir.exists();
    if had_old {
        if let Err(e) = std::fs::rename(dir, &aside) {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(e);
        }
    }
    if let Err(e) = std::fs::rename(&staging, dir) {
        if had_old {
            let _ = std::fs::rename(&aside, dir);
        }
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }
    if had_old {
        // Best effort: the new report is in place; an old copy that cannot
        // be removed is hidden beside it, not an error.
        let _ = std::fs::remove_dir_all(&aside);
    }
    Ok(())
}

/// Writes `contents` to `path` through a temporary file beside it and a
/// rename, so `path` holds the old contents or the new, never a part. A
/// `path` that exists and is not a regular file (a device such as
/// `/dev/null`, a FIFO, a symbolic link) is written in place instead: it is
/// the user's, and must not be replaced by a file.
pub fn write_file_atomically(path: &Path, contents: &[u8]) -> Result<(), WriteError> {
    let error = |path: &Path| {
        let path = path.display().to_string();
        move |source| WriteError { path, source }
    };
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.is_file() {
            return std::fs::write(path, contents).map_err(error(path));
        }
    }
    let name = path
        .file_name()
        .map_or_else(|| "output".to_owned(), |n| n.to_string_lossy().into_owned());
    let temporary = path.with_file_name(temporary_name(&name, "tmp"));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temporary)
        .and_then(|mut file| std::io::Write::write_all(&mut file, contents));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(error(&temporary)(e));
    }
    std::fs::rename(&temporary, path).map_err(|e| {
        let _ = std::fs::remove_file(&temporary);
        error(path)(e)
    })
}
