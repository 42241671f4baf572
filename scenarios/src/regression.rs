//! Re-running the regression corpus: every saved [`Case`] in a folder run
//! again in the simulation, each said to reproduce (the saved property is
//! violated again) or to no longer reproduce.
//!
//! Why here: a case names its scenario and protocol, which only this crate
//! can rebuild (the catalog, the built-in protocols, `random-faults` with its
//! schedule through [`crate::replay`]). "No longer reproduces" is never
//! called "fixed": the seed and schedule may simply no longer reach the bug.
//! Reading is bounded: at most [`CASES_MAX`] files of at most
//! [`CASE_BYTES_MAX`] bytes each.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::corpus::{Case, CaseError, CASES_MAX, CASE_BYTES_MAX, EXTENSION};
use crate::mutation::is_mutant;
use crate::protocol::Protocol;
use crate::replay::{replay_in, ReplayError};
use crate::run::{RunRecord, WorldFactory};

/// Why a case could not be read or re-run.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    /// Reading the folder or a file failed.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The folder or file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The folder holds more than [`CASES_MAX`] cases.
    #[error("{path} holds more than {CASES_MAX} cases")]
    TooMany {
        /// The folder.
        path: String,
    },
    /// A file that is not a case.
    #[error("{path}: {source}")]
    Case {
        /// The file.
        path: String,
        /// Why.
        source: CaseError,
    },
    /// A protocol the simulation cannot rebuild by name.
    #[error("{path}: unknown protocol {name:?} (a team's own lock re-runs through redfence_scenarios::regression::rerun with its value)")]
    UnknownProtocol {
        /// The file.
        path: String,
        /// The name.
        name: String,
    },
    /// The scenario or schedule does not run.
    #[error("{path}: {source}")]
    Replay {
        /// The file.
        path: String,
        /// Why.
        source: ReplayError,
    },
}

/// What re-running a case showed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The saved property is violated again: the bug is back, or still there.
    Reproduces,
    /// The saved property held on the saved seed (and schedule).
    NoLongerReproduces,
}

/// One case re-run.
#[derive(Clone, Debug)]
pub struct Rerun {
    /// Its file.
    pub path: PathBuf,
    /// The case.
    pub case: Case,
    /// What it showed.
    pub outcome: Outcome,
    /// The run.
    pub record: RunRecord,
}

impl Rerun {
    /// Whether the protocol must pass (anything but a shipped mutant).
    pub fn must_pass(&self) -> bool {
        !is_mutant(&self.case.protocol)
    }

    /// Whether this rerun is a problem: a must-pass protocol violating its
    /// property again (the command fails on it).
    pub fn fails(&self) -> bool {
        self.must_pass() && self.outcome == Outcome::Reproduces
    }

    /// One line for a terminal.
    pub fn line(&self) -> String {
        let case = &self.case;
        let what = format!(
            "{} × {} seed {} ({})",
            case.scenario,
            case.protocol,
            case.seed,
            case.property.name()
        );
        let file = self.path.display();
        match (self.outcome, self.must_pass()) {
            (Outcome::Reproduces, true) => format!(
                "REPRODUCES  {what}: violated again (found by {}); {file}\n    {}",
                case.found_by,
                crate::record::replay_command(&self.record.replay)
            ),
            (Outcome::Reproduces, false) => {
                format!("reproduces  {what}: a shipped mutant, expected to fail; {file}")
            }
            (Outcome::NoLongerReproduces, must_pass) => format!(
                "{}  {what}: no longer reproduces (found by {}, last reproduced by {}){}; {file}",
                if must_pass { "no longer" } else { "NO LONGER" },
                case.found_by,
                case.last_reproduced_by(),
                if must_pass {
                    ""
                } else {
                    " — a mutant that stopped failing here: the scenario lost its catch"
                }
            ),
        }
    }
}

/// Re-runs `case` with `protocol` (the caller's value: a team's own lock,
/// or an injected one) in a world from `worlds`.
pub fn rerun(
    worlds: &dyn WorldFactory,
    case: &Case,
    protocol: Arc<dyn Protocol>,
) -> Result<(Outcome, RunRecord), ReplayError> {
    let record = replay_in(
        worlds,
        &case.scenario,
        case.schedule.as_deref(),
        protocol,
        case.seed,
    )?;
    let outcome = if record.violated().contains(&case.property) {
        Outcome::Reproduces
    } else {
        Outcome::NoLongerReproduces
    };
    Ok((outcome, record))
}

/// Re-runs every case in `cases` (from [`load`]) with the built-in protocol
/// it names, in the simulation. Names are resolved first, so a bad case
/// stops the whole before any run.
pub fn rerun_all(cases: &[(PathBuf, Case)]) -> Result<Vec<Rerun>, CorpusError> {
    rerun_all_with(cases, &crate::protocols::by_name)
}

/// [`rerun_all`] with the protocols `resolve` names: a team's own locks
/// beside the built-in ones (or, in tests, a lock that must pass and fails).
pub fn rerun_all_with(
    cases: &[(PathBuf, Case)],
    resolve: &dyn Fn(&str) -> Option<Arc<dyn Protocol>>,
) -> Result<Vec<Rerun>, CorpusError> {
    let resolved: Vec<(&PathBuf, &Case, Arc<dyn Protocol>)> = cases
        .iter()
        .map(|(path, case)| {
            resolve(&case.protocol)
                .map(|p| (path, case, p))
                .ok_or_else(|| CorpusError::UnknownProtocol {
                    path: path.display().to_string(),
                    name: case.protocol.clone(),
                })
        })
        .collect::<Result<_, _>>()?;
    resolved
        .into_iter()
        .map(|(path, case, protocol)| {
            let (outcome, record) =
                rerun(&crate::sim_world::SimWorlds, case, protocol).map_err(|source| {
                    CorpusError::Replay {
                        path: path.display().to_string(),
                        source,
                    }
                })?;
            Ok(Rerun {
                path: path.clone(),
                case: case.clone(),
                outcome,
                record,
            })
        })
        .collect()
}

/// The cases in `dir` (files ending `.txt`, in name order); other files
/// (a README) are skipped.
pub fn load(dir: &Path) -> Result<Vec<(PathBuf, Case)>, CorpusError> {
    let read_error = |path: &Path| {
        let path = path.display().to_string();
        move |source| CorpusError::Read { path, source }
    };
    let mut paths = Vec::new();
    // Bounded: at most CASES_MAX + 1 case files are collected.
    for entry in std::fs::read_dir(dir).map_err(read_error(dir))? {
        let path = entry.map_err(read_error(dir))?.path();
        if path.extension().and_then(|e| e.to_str()) != Some(EXTENSION) {
            continue;
        }
        paths.push(path);
        if paths.len() > CASES_MAX {
            return Err(CorpusError::TooMany {
                path: dir.display().to_string(),
            });
        }
    }
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let case = read_case(&path)?;
            Ok((path, case))
        })
        .collect()
}

/// Reads one case file, refusing more than [`CASE_BYTES_MAX`] bytes.
pub fn read_case(path: &Path) -> Result<Case, CorpusError> {
    let read_error = |source| CorpusError::Read {
        path: path.display().to_string(),
        source,
    };
    // A FIFO or device named like a case would block on open or never end.
    if !std::fs::metadata(path).map_err(read_error)?.is_file() {
        return Err(read_error(std::io::Error::other("not a regular file")));
    }
    let file = std::fs::File::open(path).map_err(read_error)?;
    let mut text = String::new();
    file.take(CASE_BYTES_MAX as u64 + 1)
        .read_to_string(&mut text)
        .map_err(read_error)?;
    Case::parse(&text).map_err(|source| CorpusError::Case {
        path: path.display().to_string(),
        source,
    })
}
