//! The regression corpus from the command line: saving a failure a command
//! found as a case file (`explore`, on by default; `run --save-failures`),
//! and re-running a folder of cases before a sweep (`run --corpus`).
//!
//! Why its own module: `run` and `explore` save the same way, and both the
//! never-overwrite rule and the atomic write live in one place. The format
//! is `redfence_scenarios::corpus`; re-running is
//! `redfence_scenarios::regression`.

use std::path::{Path, PathBuf};

use redfence_scenarios::corpus::Case;
use redfence_scenarios::regression::{load, read_case, rerun_all_with};
use redfence_scenarios::run::RunRecord;
use redfence_scenarios::triage::{Concern, Finding, Group};
use redfence_scenarios::Property;

use super::CliError;

/// This redfence's version, written into the cases it saves.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What saving one case did.
#[derive(Debug, PartialEq, Eq)]
pub enum Saved {
    /// A new file.
    New(PathBuf),
    /// The same failure was saved already; its file now says this version
    /// reproduced it.
    Refreshed(PathBuf),
    /// The same failure was saved already, by this version: left untouched.
    Kept(PathBuf),
}

impl Saved {
    /// One line for a terminal.
    pub fn line(&self) -> String {
        match self {
            Saved::New(path) => format!("saved regression case {}", path.display()),
            Saved::Refreshed(path) => format!(
                "regression case {} was saved already; marked reproduced by {VERSION}",
                path.display()
            ),
            Saved::Kept(path) => format!("regression case {} was saved already", path.display()),
        }
    }
}

/// The case for `record`'s violation of `property`, found by this version.
pub fn case_of(record: &RunRecord, property: Property) -> Case {
    Case {
        scenario: record.scenario.clone(),
        protocol: record.protocol.clone(),
        seed: record.seed,
        schedule: record
            .params
            .iter()
            .find(|p| p.name == redfence_scenarios::record::SCHEDULE_PARAM)
            .map(|p| p.value.clone()),
        property,
        found_by: VERSION.to_owned(),
        reproduced_by: None,
    }
}

/// The case for an unexpected triage group that a violation shows (a
/// protocol that must pass violating a property), from its smallest seed.
pub fn case_of_group(group: &Group) -> Option<Case> {
    let (Concern::Unexpected, Finding::Violated(property), Some(sample)) =
        (group.concern, group.finding, &group.sample)
    else {
        return None;
    };
    if !sample.shows_finding {
        return None;
    }
    Some(Case {
        scenario: sample.scenario.clone(),
        protocol: group.protocol.clone(),
        seed: sample.seed,
        schedule: sample.schedule.clone(),
        property,
        found_by: VERSION.to_owned(),
        reproduced_by: None,
    })
}

/// Saves `case` into `dir` (created if need be), never overwriting a file
/// that holds another failure, and writing through a temporary name.
pub fn save(dir: &Path, case: &Case) -> Result<Saved, CliError> {
    let path = dir.join(case.file_name());
    let write_error = |path: &Path| {
        let path = path.display().to_string();
        move |source| CliError::Write { path, source }
    };
    let text = if path.exists() {
        let existing = read_case(&path)?;
        if !existing.same_failure(case) {
            return Err(CliError::Invalid(format!(
                "{} holds another case; not overwritten",
                path.display()
            )));
        }
        if existing.last_reproduced_by() == VERSION {
            return Ok(Saved::Kept(path));
        }
        Case {
            reproduced_by: Some(VERSION.to_owned()),
            ..existing
        }
        .render()
    } else {
        std::fs::create_dir_all(dir).map_err(write_error(dir))?;
        case.render()
    };
    let existed = path.exists();
    let _writing = super::signals::output_guard();
    redfence_reports::write_file_atomically(&path, text.as_bytes())?;
    Ok(if existed {
        Saved::Refreshed(path)
    } else {
        Saved::New(path)
    })
}

/// Saves each case and prints where.
pub fn save_all(dir: &Path, cases: &[Case]) -> Result<(), CliError> {
    for case in cases {
        println!("{}", save(dir, case)?.line());
    }
    Ok(())
}

/// Re-runs every case in `dir`, printing one line each; true when one
/// reproduces for a protocol that must pass.
pub fn rerun(dir: &Path) -> Result<bool, CliError> {
    rerun_with(dir, &redfence_scenarios::protocols::by_name)
}

/// [`rerun`] with the protocols `resolve` names (the tests inject a lock
/// that must pass and fails: no built-in one does).
pub fn rerun_with(
    dir: &Path,
    resolve: &dyn Fn(&str) -> Option<std::sync::Arc<dyn redfence_scenarios::protocol::Protocol>>,
) -> Result<bool, CliError> {
    let cases = load(dir)?;
    if cases.is_empty() {
        return Ok(false);
    }
    println!(
        "re-running {} regression case{} from {}",
        cases.len(),
        if cases.len() == 1 { "" } else { "s" },
        dir.display()
    );
    let reruns = rerun_all_with(&cases, resolve)?;
    for rerun in &reruns {
        println!("  {}", rerun.line());
    }
    println!();
    Ok(reruns.iter().any(|r| r.fails()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case() -> Case {
        Case {
            scenario: "stale-worker-pause".to_owned(),
            protocol: "no-fence-check".to_owned(),
            seed: 3,
            schedule: None,
            property: Property::FenceOrder,
            found_by: VERSION.to_owned(),
            reproduced_by: None,
        }
    }

    /// The path `run --corpus` takes, with a team's own lock (which must
    /// pass) played by a mutant's code: a reproducing case makes the
    /// command fail, and the same case for the mutant itself does not.
    #[test]
    fn a_case_reproducing_for_a_lock_that_must_pass_fails_the_run() {
        let dir = std::env::temp_dir().join(format!("redfence-cli-rerun-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mutant = redfence_scenarios::names::mutant::NO_FENCE_CHECK;
        let stale = redfence_scenarios::catalog::by_name(
            redfence_scenarios::names::scenario::STALE_WORKER_PAUSE,
        )
        .unwrap();
        let code = redfence_scenarios::protocols::by_name(mutant).unwrap();
        let seed = (0..20)
            .find(|&seed| {
                redfence_scenarios::run::run_one(
                    &redfence_scenarios::sim_world::SimWorlds,
                    stale.as_ref(),
                    code.clone(),
                    seed,
                )
                .violated()
                .contains(&Property::FenceOrder)
            })
            .expect("the mutant is caught within 20 seeds");
        let own = Case {
            protocol: "my-lock".to_owned(),
            seed,
            ..case()
        };
        std::fs::write(dir.join(own.file_name()), own.render()).unwrap();
        let resolve = |name: &str| match name {
            "my-lock" => Some(code.clone()),
            other => redfence_scenarios::protocols::by_name(other),
        };
        assert!(
            rerun_with(&dir, &resolve).unwrap(),
            "my-lock must fail the run"
        );
        assert_eq!(super::super::run::exit_code(true, 0), 1);
        // The shipped mutant's own case is expected to reproduce: no failure.
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        let shipped = Case { seed, ..case() };
        std::fs::write(dir.join(shipped.file_name()), shipped.render()).unwrap();
        assert!(!rerun_with(&dir, &resolve).unwrap());
        assert_eq!(super::super::run::exit_code(false, 0), 0);
        assert_eq!(super::super::run::exit_code(false, 2), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn saving_never_rewrites_the_same_failure_and_never_overwrites_another() {
        let dir = std::env::temp_dir().join(format!("redfence-cli-corpus-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join(case().file_name());
        assert_eq!(save(&dir, &case()).unwrap(), Saved::New(path.clone()));
        assert_eq!(save(&dir, &case()).unwrap(), Saved::Kept(path.clone()));
        // Found by an older version: now marked reproduced by this one.
        let older = Case {
            found_by: "0.0.1".to_owned(),
            ..case()
        };
        std::fs::write(&path, older.render()).unwrap();
        assert_eq!(save(&dir, &case()).unwrap(), Saved::Refreshed(path.clone()));
        let saved = read_case(&path).unwrap();
        assert_eq!(saved.found_by, "0.0.1");
        assert_eq!(saved.reproduced_by.as_deref(), Some(VERSION));
        // Another failure under the same name is refused, the file kept.
        let other = Case { seed: 4, ..case() };
        std::fs::write(&path, other.render()).unwrap();
        assert!(save(&dir, &case()).is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), other.render());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
