//! The commands, one file each, and what they share: choosing scenarios,
//! protocols and worlds by name with errors that list the known names.

pub mod agree;
pub mod corpus;
pub mod explore;
pub mod list;
pub mod progress;
pub mod replay;
pub mod report;
pub mod run;
pub mod signals;
pub mod summary;

use std::sync::Arc;

use redfence_scenarios::catalog;
use redfence_scenarios::protocol::Protocol;
use redfence_scenarios::protocols;
use redfence_scenarios::run::WorldFactory;
use redfence_scenarios::scenario::Scenario;
use redfence_scenarios::sim_world::SimWorlds;

/// What a command could not do; printed as `error: …`, exit code 2.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A name that is not in the catalog.
    #[error("unknown {kind} {name:?}; known: {known}")]
    Unknown {
        /// scenario / protocol / world.
        kind: &'static str,
        /// What was given.
        name: String,
        /// The names that exist.
        known: String,
    },
    /// A world that cannot be used here.
    #[error("{0}")]
    World(String),
    /// An argument that parses but makes no sense.
    #[error("{0}")]
    Invalid(String),
    /// Reading a file failed.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A report input that cannot be rendered (malformed, newer schema).
    #[error(transparent)]
    Report(#[from] redfence_reports::ReportError),
    /// A regression case that cannot be read or re-run.
    #[error(transparent)]
    Corpus(#[from] redfence_scenarios::regression::CorpusError),
    /// Shards that cannot be merged into one sweep.
    #[error(transparent)]
    Merge(#[from] redfence_scenarios::merge::MergeError),
    /// Writing the report's files failed.
    #[error(transparent)]
    ReportWrite(#[from] redfence_reports::WriteError),
    /// Writing a file failed.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

/// The world kinds the CLI knows.
pub const WORLDS: [&str; 2] = ["sim", "real"];

/// Refuses a list that names something twice (running it twice would only
/// double its weight in the tallies).
pub fn no_duplicates(flag: &str, names: &[String]) -> Result<(), CliError> {
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            return Err(CliError::Invalid(format!(
                "{flag} {name} is given twice; name each once"
            )));
        }
    }
    Ok(())
}

/// The scenarios named (all of them when none is).
pub fn scenarios(names: &[String]) -> Result<Vec<Arc<dyn Scenario>>, CliError> {
    no_duplicates("--scenario", names)?;
    if names.is_empty() {
        return Ok(catalog::all());
    }
    names
        .iter()
        .map(|name| {
            catalog::by_name(name).ok_or_else(|| CliError::Unknown {
                kind: "scenario",
                name: name.clone(),
                known: catalog::all()
                    .iter()
                    .map(|s| s.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
        })
        .collect()
}

/// The protocols named (all of them when none is).
pub fn protocols(names: &[String]) -> Result<Vec<Arc<dyn Protocol>>, CliError> {
    no_duplicates("--protocol", names)?;
    if names.is_empty() {
        return Ok(protocols::all());
    }
    names.iter().map(|name| protocol(name)).collect()
}

/// The protocol called `name`.
pub fn protocol(name: &str) -> Result<Arc<dyn Protocol>, CliError> {
    protocols::by_name(name).ok_or_else(|| CliError::Unknown {
        kind: "protocol",
        name: name.to_owned(),
        known: protocols::all()
            .iter()
            .map(|p| p.name().to_owned())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// The world called `name`.
pub fn world(name: &str) -> Result<Box<dyn WorldFactory>, CliError> {
    match name {
        "sim" => Ok(Box::new(SimWorlds)),
        "real" => {
            let worlds = redfence_scenarios::real_world::RealWorlds::from_env()
                .map_err(|e| CliError::World(e.to_string()))?;
            // Starting servers can fail for reasons no run can fix (no
            // image, no binaries): say so once, before any run.
            worlds
                .preflight()
                .map_err(|e| CliError::World(e.to_string()))?;
            Ok(Box::new(worlds))
        }
        other => Err(CliError::Unknown {
            kind: "world",
            name: other.to_owned(),
            known: WORLDS.join(", "),
        }),
    }
}

/// Threads to use: `jobs`, or every core.
pub fn jobs(jobs: Option<usize>) -> Result<usize, CliError> {
    match jobs {
        Some(0) => Err(CliError::Invalid("--jobs must be at least 1".to_owned())),
        Some(n) => Ok(n),
        None => Ok(std::thread::available_parallelism().map_or(1, |n| n.get())),
    }
}
