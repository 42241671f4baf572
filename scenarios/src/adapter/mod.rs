//! Lock adapters: a team's lock in any language, over a process boundary.
//!
//! A protocol of this kind names a command. Each worker of a real-world
//! run starts that command as a process of its own and speaks the adapter
//! protocol with it (`docs/adapter-protocol.md`, [`message`]): the harness
//! sends jobs, the adapter runs the team's real lock library and job flow
//! and answers with what it reported; the protected write goes back
//! through the harness onto the worker's store path. It plugs in at the
//! whole-worker level, so everything the observer knows how to judge from
//! the servers applies:
//!
//! - its Redis traffic passes a tap ([`tap`]) in front of the worker's own
//!   fault-injecting proxy, which reports each request naming the lock key
//!   to the observer (`whole_worker::WireTap`);
//! - pauses and crashes are `SIGSTOP`, `SIGCONT` and `SIGKILL` to its
//!   process group ([`process`]), driven by the worker's own switches;
//! - ownership is the real Redis's recorded command stream, write outcomes
//!   PostgreSQL's `fence_log` — never the adapter's word.
//!
//! Adapters run in the real world only: the simulation's network and
//! clock are not reachable from another process.

pub mod conformance;
pub mod message;
pub mod process;
mod runner;
pub mod tap;

use std::sync::{Arc, Condvar, Mutex};

use async_trait::async_trait;
use redfence_core::LockConfig;

use crate::history::JobReport;
use crate::protocol::{Job, JobRunner, Plug, Protocol};
use crate::world::WorkerEnv;

pub use runner::{Ready, READY_TIMEOUT_MS};

/// Most problems one adapter protocol keeps (the first ones).
pub const PROBLEMS_MAX: usize = 100;

/// What went wrong between the harness and an adapter during a run (a
/// broken protocol, an adapter that died on its own or did not exit
/// cleanly), in words: a job that ended because of it is reported
/// `failed`, and the run's error says why (`Protocol::take_problems`). It
/// also keeps what the adapters' `ready` said about their library.
///
/// Adapters are stopped on threads of their own (their exit is waited for
/// off the world's thread); reading the problems first waits, bounded,
/// for those stops, so an unclean exit is never missed.
#[derive(Clone, Debug, Default)]
pub struct Problems {
    inner: Arc<ProblemsInner>,
}

#[derive(Debug, Default)]
struct ProblemsInner {
    list: Mutex<Vec<String>>,
    library: Mutex<Option<Ready>>,
    /// Adapters being stopped right now.
    stopping: Mutex<usize>,
    stopped: Condvar,
}

/// Longest a read of the problems waits for adapters being stopped.
const STOPS_WAIT_MS: u64 = process::SHUTDOWN_GRACE_MS + 1_000;

/// Counts one adapter as being stopped until dropped.
pub(crate) struct Stopping(Arc<ProblemsInner>);

impl Drop for Stopping {
    fn drop(&mut self) {
        let mut stopping = self.0.stopping.lock().unwrap_or_else(|e| e.into_inner());
        *stopping = stopping.saturating_sub(1);
        self.0.stopped.notify_all();
    }
}

impl Problems {
    /// What the adapters said of their library, the last one that did.
    pub fn library(&self) -> Option<Ready> {
        self.inner
            .library
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set_library(&self, ready: Ready) {
        *self.inner.library.lock().unwrap_or_else(|e| e.into_inner()) = Some(ready);
    }

    fn push(&self, problem: String) {
        let mut problems = self.inner.list.lock().unwrap_or_else(|e| e.into_inner());
        if problems.len() < PROBLEMS_MAX && !problems.contains(&problem) {
            problems.push(problem);
        }
    }

    fn stopping(&self) -> Stopping {
        *self
            .inner
            .stopping
            .lock()
            .unwrap_or_else(|e| e.into_inner()) += 1;
        Stopping(self.inner.clone())
    }

    /// Waits (bounded) until no adapter is being stopped.
    fn settle(&self) {
        let stopping = self
            .inner
            .stopping
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let _ = self.inner.stopped.wait_timeout_while(
            stopping,
            std::time::Duration::from_millis(STOPS_WAIT_MS),
            |n| *n > 0,
        );
    }

    /// Every problem so far, oldest first.
    pub fn all(&self) -> Vec<String> {
        self.settle();
        self.inner
            .list
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Takes every problem so far.
    pub fn take(&self) -> Vec<String> {
        self.settle();
        std::mem::take(&mut *self.inner.list.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// A lock under test that is an adapter program (see the module doc).
#[derive(Clone, Debug)]
pub struct AdapterProtocol {
    name: String,
    describe: String,
    argv: Vec<String>,
    problems: Problems,
}

/// Why `NAME=COMMAND` does not name an adapter.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AdapterSpecError {
    /// No `=`.
    #[error("an adapter is NAME=COMMAND, e.g. redis-py-lock=\"python3 adapters/python/redis_py_lock.py\"; got {0:?}")]
    NoName(String),
    /// The name is not kebab-case.
    #[error("adapter name {0:?} must be kebab-case (a-z, 0-9 and -, starting with a letter)")]
    BadName(String),
    /// The command is empty or its quotes do not close.
    #[error("adapter {name}'s command {command:?}: {why}")]
    BadCommand {
        /// The adapter's name.
        name: String,
        /// The command as given.
        command: String,
        /// What is wrong.
        why: String,
    },
}

impl AdapterProtocol {
    /// An adapter protocol from `NAME=COMMAND` (the command split like a
    /// shell's words: spaces separate, quotes group, no expansion).
    pub fn parse(spec: &str) -> Result<Self, AdapterSpecError> {
        let (name, command) = spec
            .split_once('=')
            .ok_or_else(|| AdapterSpecError::NoName(spec.to_owned()))?;
        let name = name.trim();
        let kebab = name.starts_with(|c: char| c.is_ascii_lowercase())
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !name.ends_with('-')
            && !name.contains("--");
        if !kebab {
            return Err(AdapterSpecError::BadName(name.to_owned()));
        }
        let argv = split_words(command).map_err(|why| AdapterSpecError::BadCommand {
            name: name.to_owned(),
            command: command.to_owned(),
            why,
        })?;
        Ok(Self::new(name, argv))
    }

    /// An adapter protocol named `name` running `argv`.
    pub fn new(name: &str, argv: Vec<String>) -> Self {
        Self {
            name: name.to_owned(),
            describe: format!("lock adapter: {}", argv.join(" ")),
            argv,
            problems: Problems::default(),
        }
    }

    /// The command each worker runs.
    pub fn argv(&self) -> &[String] {
        &self.argv
    }

    /// What went wrong with its adapters so far.
    pub fn problems(&self) -> &Problems {
        &self.problems
    }
}

/// Splits `command` into words: whitespace separates, `'…'` and `"…"`
/// group, a backslash outside single quotes takes the next character as it
/// is. No variables, globs or pipes: the command is run, not interpreted.
pub fn split_words(command: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = command.chars();
    let mut quote: Option<char> = None;
    // Bounded by the command's length.
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some('\''), '\'') | (Some('"'), '"') => quote = None,
            (Some('\''), c) => word.push(c),
            (_, '\\') => match chars.next() {
                Some(next) => {
                    word.push(next);
                    in_word = true;
                }
                None => return Err("it ends with a lone backslash".into()),
            },
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if let Some(q) = quote {
        return Err(format!("its {q} quote does not close"));
    }
    if in_word {
        words.push(word);
    }
    if words.is_empty() {
        return Err("it is empty".into());
    }
    Ok(words)
}

impl Protocol for AdapterProtocol {
    fn name(&self) -> &str {
        &self.name
    }

    fn describe(&self) -> &str {
        &self.describe
    }

    fn take_problems(&self) -> Vec<String> {
        self.problems.take()
    }

    fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug {
        match runner::AdapterRunner::start(&self.argv, env.clone(), config, self.problems.clone()) {
            Ok(runner) => Plug::Worker(Box::new(runner)),
            Err(why) => {
                self.problems.push(why.clone());
                Plug::Worker(Box::new(NotStarted(why)))
            }
        }
    }
}

/// A worker whose adapter could not start: every job fails, and the
/// protocol's problems say why.
struct NotStarted(String);

#[async_trait(?Send)]
impl JobRunner for NotStarted {
    async fn run(&self, _job: &Job) -> JobReport {
        tracing::warn!("{}", self.0);
        JobReport::Failed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_is_a_kebab_name_and_a_command_split_into_words() {
        let adapter =
            AdapterProtocol::parse("redis-py-lock=python3 'adapters/my dir/a.py' --x \"y z\"")
                .unwrap();
        assert_eq!(adapter.name(), "redis-py-lock");
        assert_eq!(
            adapter.argv(),
            ["python3", "adapters/my dir/a.py", "--x", "y z"]
        );
        assert_eq!(
            AdapterProtocol::parse("python3 x.py").unwrap_err(),
            AdapterSpecError::NoName("python3 x.py".into())
        );
        assert!(matches!(
            AdapterProtocol::parse("My_Lock=x"),
            Err(AdapterSpecError::BadName(_))
        ));
        assert!(matches!(
            AdapterProtocol::parse("a=  "),
            Err(AdapterSpecError::BadCommand { .. })
        ));
        assert!(matches!(
            AdapterProtocol::parse("a=python3 'x.py"),
            Err(AdapterSpecError::BadCommand { .. })
        ));
        assert_eq!(split_words(r"a\ b c").unwrap(), ["a b", "c"]);
        assert_eq!(split_words("''").unwrap(), [""]);
    }
}
