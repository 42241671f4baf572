//! redfence-history: what a run of a lock protocol *is*, and the pure checker
//! that judges it.
//!
//! A world (the deterministic simulation, or real Redis and Postgres) records
//! a [`History`]; [`check`] turns it into one [`Verdict`] per [`Property`],
//! each with the smallest [`HistorySlice`] that shows a violation. A runner
//! wraps it into a [`RunRecord`]; a sweep folds many into a [`Sweep`]; triage
//! groups a sweep's failures by signature; reports render those. Everything here is pure data and pure functions: no async
//! runtime, network, Lua or database, and every result type serialises with
//! serde, so a report can be rendered (or re-judged) from JSON alone. This
//! crate depends on nothing else of redfence's; the others depend on it.
//!
//! ```
//! use redfence_history::{check, FenceOutcome, HistoryBuilder, Limits, OkValue, Property, Status};
//!
//! let limits = Limits { lease_ms: 1_000, hold_ms_max: 5_000, renewals_max: 3, tolerance_ms: 10,
//!     acquire_deadline_ms: 10_000 };
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

pub mod agreement;
pub mod checker;
pub mod corpus;
pub mod curve;
pub mod fault;
pub mod fence_source;
pub mod history;
pub mod majority;
pub mod merge;
pub mod mutation;
pub mod names;
pub mod property;
pub mod provenance;
pub mod record;
pub mod sweep;
pub mod timeline;
pub mod triage;
pub mod verdict;

pub use checker::{check, check_property, NO_REDIS_TRUTH, NO_STORE_TRUTH};
pub use fault::Fault;
pub use fence_source::FenceSourceKind;
pub use history::{
    ContentionBounds, FaultRecord, FenceOutcome, FenceRecord, History, HistoryBuilder,
    HistoryError, JobReport, Limits, OkValue, Op, OpKind, Outcome, OwnershipChange,
    OwnershipRecord, ServerEvent,
};
pub use property::Property;
pub use record::{JobStat, Metrics, Param, RunRecord, WorldKind};
pub use sweep::{Cell, CellStatus, Sweep};
pub use verdict::{HistorySlice, OwnershipAt, Status, Verdict};
