//! redfence-scenarios: the scenario catalog, the protocols under test (the
//! reference and its mutants), the runner that drives them through a world
//! (the deterministic simulation or real servers), sweeps and exploration.
//!
//! What a run *is* — the history, the properties, the checker, verdicts and
//! the serialisable results — lives in the pure `redfence-history` crate;
//! its modules are re-exported here under the same names, so
//! `redfence_scenarios::history::History` and
//! `redfence_history::History` are one type.
//!
//! ```
//! use std::sync::Arc;
//! use redfence_scenarios::{catalog, protocols::Reference, run::run_one, sim_world::SimWorlds};
//!
//! let scenario = catalog::by_name("late-unlock").unwrap();
//! let record = run_one(&SimWorlds, scenario.as_ref(), Arc::new(Reference), 0);
//! assert!(!record.failed(), "{:?}", record.violated());
//! ```

pub use redfence_history::{
    agreement, check, check_property, checker, corpus, curve, fault, history, merge, mutation,
    names, property, record, timeline, triage, verdict, FaultRecord, FenceOutcome, FenceRecord,
    History, HistoryBuilder, HistoryError, HistorySlice, JobReport, Limits, OkValue, Op, OpKind,
    Outcome, OwnershipAt, OwnershipChange, OwnershipRecord, Property, Status, Verdict,
    NO_REDIS_TRUTH, NO_STORE_TRUTH,
};

pub mod adapter;
pub mod catalog;
pub mod conn;
pub mod driver;
pub mod explore;
mod job_slot;
pub mod protocol;
pub mod protocols;
pub mod real_world;
pub mod recorder;
pub mod regression;
pub mod replay;
pub mod run;
pub mod scenario;
pub mod sim_world;
pub mod stage;
pub mod sweep;
pub mod whole_worker;
pub mod world;
