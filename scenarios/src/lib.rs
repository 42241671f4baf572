//! redfence-scenarios: the history model and the checker that decides the
//! safety and liveness properties of a lock protocol from a recorded run.
//!
//! A world (the deterministic simulation, or real Redis and Postgres) records
//! a [`History`]; [`check`] turns it into one [`Verdict`] per [`Property`],
//! each with the smallest [`HistorySlice`] that shows a violation. Everything
//! here is pure and world-independent: this crate does not know how a world
//! is built, and every type serialises with serde so reports can render runs
//! from JSON.
//!
//! ```
//! use redfence_scenarios::{check, FenceOutcome, HistoryBuilder, Limits, OkValue, Property, Status};
//!
//! let limits = Limits { lease_ms: 1_000, hold_ms_max: 5_000, renewals_max: 3, tolerance_ms: 10 };
//! // A stale owner's write lands after its successor's: a store without a fence check.
//! let history = HistoryBuilder::new("account-7", limits)
//!     .acquired("w1", "o1", (0, 5), 1)
//!     .acquired("w2", "o2", (1_100, 1_105), 2)
//!     .write("w2", "o2", 2, None, (1_300, 1_310), OkValue::WriteAccepted)
//!     .fence_log(1_305, "o2", 2, None, FenceOutcome::Accepted)
//!     .write("w1", "o1", 1, None, (1_500, 1_530), OkValue::WriteAccepted)
//!     .fence_log(1_520, "o1", 1, None, FenceOutcome::Accepted)
//!     .build();
//! let verdicts = check(&history);
//! assert_eq!(verdicts[0].property, Property::FenceOrder);
//! assert_eq!(verdicts[0].status, Status::Violated);
//! assert_eq!(verdicts[0].slice.op_ids, [3, 4]);
//! ```

#![deny(missing_docs)]

pub mod agreement;
pub mod catalog;
pub mod checker;
pub mod conn;
pub mod driver;
pub mod explore;
pub mod history;
pub mod mutation;
pub mod property;
pub mod protocol;
pub mod protocols;
pub mod real_world;
pub mod recorder;
pub mod run;
pub mod scenario;
pub mod sim_world;
pub mod stage;
pub mod sweep;
pub mod timeline;
pub mod verdict;
pub mod world;

pub use checker::{check, check_property, NO_REDIS_TRUTH, NO_STORE_TRUTH};
pub use history::{
    FaultRecord, FenceOutcome, FenceRecord, History, HistoryBuilder, HistoryError, Limits, OkValue,
    Op, OpKind, Outcome, OwnershipChange, OwnershipRecord,
};
pub use property::Property;
pub use verdict::{HistorySlice, OwnershipAt, Status, Verdict};
