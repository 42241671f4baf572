//! The commands, one file each, and what they share: choosing scenarios,
//! protocols and worlds by name with errors that list the known names.

pub mod adapter;
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

/// The lock adapters `--adapter NAME=COMMAND` names, checked before any
/// work: each spec parses, no name is given twice or shadows a built-in
/// protocol, the world is real, and each program can be found (a path that
/// exists, or a name on `PATH`).
pub fn adapters(
    specs: &[String],
    world: &str,
) -> Result<Vec<redfence_scenarios::adapter::AdapterProtocol>, CliError> {
    if specs.is_empty() {
        return Ok(Vec::new());
    }
    if world != "real" {
        return Err(CliError::Invalid(
            "--adapter runs a lock adapter process per worker, on real servers only: add --world real"
                .into(),
        ));
    }
    let mut adapters: Vec<redfence_scenarios::adapter::AdapterProtocol> = Vec::new();
    for spec in specs {
        let adapter = redfence_scenarios::adapter::AdapterProtocol::parse(spec)
            .map_err(|e| CliError::Invalid(e.to_string()))?;
        let name = adapter.name().to_owned();
        if protocols::by_name(&name).is_some() {
            return Err(CliError::Invalid(format!(
                "--adapter {name}: a built-in protocol has that name; call the adapter something else"
            )));
        }
        if adapters.iter().any(|a| a.name() == name) {
            return Err(CliError::Invalid(format!(
                "--adapter {name} is given twice; name each once"
            )));
        }
        let program = &adapter.argv()[0];
        if !program_exists(program) {
            return Err(CliError::Invalid(format!(
                "--adapter {name}: cannot find the program {program:?} (not a file, and not on PATH)"
            )));
        }
        adapters.push(adapter);
    }
    Ok(adapters)
}

/// Whether `program` names an executable file, as a path or on `PATH`.
fn program_exists(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |path: &std::path::Path| {
        path.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        return executable(std::path::Path::new(program));
    }
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| executable(&dir.join(program)))
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
