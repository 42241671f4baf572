//! `process-wide-token`: a whole worker that draws one owner token when the
//! process starts and uses it for every job (`TeamFlow` with
//! `token_per_process`).
//!
//! The lock identity many libraries derive from the process or thread —
//! a client id, `UUID:threadId` — breaks once a process runs jobs as tasks
//! that share a thread or a client: the acquire script is re-entrant for
//! its own token (so a retry after a lost reply learns it won), and a
//! second job of the same process is answered "already yours" with the
//! first job's fence. The two jobs then work on the resource at once under
//! one lease and one fence (no fence can tell them apart), and the first
//! job's release deletes the key the second still works under. Harmless
//! while a process runs one job at a time; meant to be caught by
//! `concurrent-jobs`, properties `no-overlapping-holders` and
//! `fence-uniqueness`.

use crate::names;
use redfence_core::LockConfig;

use super::team_flow::{Knobs, TeamFlow};
use crate::protocol::{Plug, Protocol};
use crate::world::WorkerEnv;

/// One owner token per process.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcessWideToken;

impl Protocol for ProcessWideToken {
    fn name(&self) -> &str {
        names::mutant::PROCESS_WIDE_TOKEN
    }

    fn describe(&self) -> &str {
        "a whole worker that uses one owner token for every job of its process: two jobs \
         running at once both hold the lock, one under the other's lease and fence"
    }

    fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug {
        let knobs = Knobs {
            token_per_process: true,
            ..Knobs::correct(config)
        };
        Plug::Worker(Box::new(TeamFlow::new(env, config, knobs)))
    }
}
