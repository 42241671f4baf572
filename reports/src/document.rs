//! The report document: the versioned JSON every other format renders from.
//!
//! A [`Sweep`] says what ran and how it came out, but a report a team reads
//! before a rollout needs three more things the sweep does not carry: the
//! deployment it judges (which fence source, which replication), the hotspot
//! wait curve (computed by the CLI, because this crate runs nothing), and the
//! rollout-readiness verdicts derived from both. [`Report`] wraps the sweep
//! with those, and is what `report.json` holds.
//!
//! Schema (version [`REPORT_SCHEMA_VERSION`]), top-level keys:
//!
//! | key | type | meaning |
//! |---|---|---|
//! | `schema_version` | integer | this document's version; readers refuse newer ones |
//! | `kind` | `"sweep"` \| `"replay"` | a sweep over seeds, or one replayed seed |
//! | `title` | string | the page title |
//! | `command` | string | the command line that produced the run |
//! | `deployment` | object | `protocol`, `fence_source` (`redis-counter` \| `store`), `replication` (`async` \| `none`), `assumed` (true when the CLI used defaults) |
//! | `sweep` | object | `redfence_history::sweep::Sweep`, with its own `schema_version` |
//! | `hotspot_curve` | array \| null | `CurvePoint`s: workers, jitter, wait percentiles, attempts per acquisition |
//! | `readiness` | object | `items` (the checklist: `id`, `title`, `article`, `mark`, `summary`, `evidence`) and `unprotected` (`kind`, `failure`, `why`, `mitigation`, `evidence`) |
//!
//! Reading is strict about versions and lenient about the wrapper: a bare
//! sweep (what `redfence run --json` writes) is accepted and wrapped with
//! the default deployment. A sweep of another schema version — newer, or
//! older than the one this redfence reads (version 1, before fault records
//! carried their typed fault; version 2, before a property could be
//! reported not exercised and tallies counted it) — is refused with a
//! message that says which and what to do.

use redfence_history::curve::CurvePoint;
use redfence_history::sweep::{Expectation, Sweep, SCHEMA_VERSION};
use serde::{Deserialize, Serialize};

use crate::deployment::Deployment;
use crate::readiness::{readiness, Readiness};

/// Version of the [`Report`] JSON schema; readers refuse newer versions.
pub const REPORT_SCHEMA_VERSION: u32 = 1;

/// Whether the report covers a sweep or one replayed seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReportKind {
    /// Scenarios × protocols over many seeds.
    Sweep,
    /// One scenario, one protocol, one seed.
    Replay,
}

/// The report document. See the module doc for the schema.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// [`REPORT_SCHEMA_VERSION`] at the time of writing.
    pub schema_version: u32,
    /// Sweep or replay.
    pub kind: ReportKind,
    /// Page title.
    pub title: String,
    /// The command line that produced the run.
    pub command: String,
    /// The deployment judged.
    pub deployment: Deployment,
    /// The run results.
    pub sweep: Sweep,
    /// The hotspot wait curve, when it was measured.
    #[serde(default)]
    pub hotspot_curve: Option<Vec<CurvePoint>>,
    /// Checklist and unprotected failure scenarios, derived from the above.
    pub readiness: Readiness,
}

impl Report {
    /// A report of `sweep` for `deployment`, deriving the readiness verdicts.
    pub fn new(
        kind: ReportKind,
        command: &str,
        deployment: Deployment,
        sweep: Sweep,
        hotspot_curve: Option<Vec<CurvePoint>>,
    ) -> Self {
        let readiness = readiness(&sweep, &deployment, hotspot_curve.as_deref());
        let title = match kind {
            ReportKind::Sweep => format!(
                "redfence report: {} scenarios × {} protocols, {} world",
                sweep.scenarios.len(),
                sweep.protocols.len(),
                sweep.world.name()
            ),
            ReportKind::Replay => match sweep.cells.first() {
                Some(cell) => format!(
                    "redfence replay: {} × {}, seed {}",
                    cell.scenario, cell.protocol, sweep.seed_first
                ),
                None => "redfence replay".to_owned(),
            },
        };
        let mut sweep = sweep;
        if kind == ReportKind::Sweep {
            keep_shown_histories(&mut sweep, &deployment);
        }
        Self {
            schema_version: REPORT_SCHEMA_VERSION,
            kind,
            title,
            command: command.to_owned(),
            deployment,
            sweep,
            hotspot_curve,
            readiness,
        }
    }

    /// The same report judged for another deployment.
    pub fn with_deployment(self, deployment: Deployment) -> Self {
        let readiness = readiness(&self.sweep, &deployment, self.hotspot_curve.as_deref());
        Self {
            deployment,
            readiness,
            ..self
        }
    }

    /// The report as JSON, compact: half the bytes of pretty JSON, and
    /// `jq .` prints it pretty for a reader.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a report serialises")
    }
}

/// Drops the recorded histories a sweep report never draws. It draws a
/// timeline only where something failed in a cell shown in full (the
/// deployed protocol, a protocol that must pass, an unexpected result),
/// plus the hotspot plots of the deployed protocol; everything else shows
/// its verdicts, tallies, metrics and replay line, and the replay line
/// re-creates the history exactly (`redfence replay … --out DIR` draws it).
/// Histories are most of a sweep's bytes (5.0 of 6.7 MB on the default
/// sweep), so this keeps `report.json` small enough to keep as a CI
/// artifact. `run --json` keeps everything.
fn keep_shown_histories(sweep: &mut Sweep, deployment: &Deployment) {
    for cell in &mut sweep.cells {
        let detailed = cell.protocol == deployment.protocol
            || cell.expectation == Expectation::Pass
            || crate::labels::cell_bad(cell.status);
        let plotted = cell.protocol == deployment.protocol
            && cell.scenario == redfence_history::names::scenario::HOTSPOT_LOAD;
        if !plotted {
            if let Some(record) = &mut cell.first_run {
                record.history = None;
            }
        }
        if !detailed {
            if let Some(record) = &mut cell.first_failure {
                record.history = None;
            }
        }
    }
}

/// Why a JSON input cannot be rendered.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Not JSON at all.
    #[error("{what} is not valid JSON (line {line}, column {column}): {source}")]
    Malformed {
        /// The input's name (a path).
        what: String,
        /// Line of the error.
        line: usize,
        /// Column of the error.
        column: usize,
        /// The parser's message.
        source: serde_json::Error,
    },
    /// Written by a newer redfence than this one.
    #[error(
        "{what} has {document} schema_version {found}, newer than the {supported} this \
         redfence reads; re-render it with a newer redfence, or re-run the sweep"
    )]
    NewerSchema {
        /// The input's name.
        what: String,
        /// `report` or `sweep`.
        document: &'static str,
        /// The version found.
        found: u64,
        /// The newest version understood.
        supported: u32,
    },
    /// A sweep written by an older redfence, in a schema this one no longer
    /// reads (version 1 fault records had no typed `fault`; version 2 had
    /// no `not-exercised` status, so its `held` counted checks that never
    /// ran).
    #[error(
        "{what} has {document} schema_version {found}, older than the {supported} this \
         redfence reads; re-run the sweep (redfence run --json FILE, or --out DIR) to \
         regenerate it"
    )]
    OlderSchema {
        /// The input's name.
        what: String,
        /// `sweep`.
        document: &'static str,
        /// The version found.
        found: u64,
        /// The version understood.
        supported: u32,
    },
    /// JSON, but neither a report nor a sweep.
    #[error(
        "{what} is neither a redfence report (keys schema_version, sweep, …) nor a sweep \
         (keys schema_version, cells, …)"
    )]
    NotAReport {
        /// The input's name.
        what: String,
    },
    /// A report or sweep whose fields do not match the schema.
    #[error("{what} does not match the {document} schema (version {version}): {source}")]
    Schema {
        /// The input's name.
        what: String,
        /// `report` or `sweep`.
        document: &'static str,
        /// The version it claims.
        version: u64,
        /// What did not match.
        source: serde_json::Error,
    },
}

/// Reads a report — or a bare sweep, wrapped for its assumed deployment —
/// from JSON `text`; `what` names the input in errors.
pub fn parse(text: &str, what: &str) -> Result<Report, ReportError> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|source| ReportError::Malformed {
            what: what.to_owned(),
            line: source.line(),
            column: source.column(),
            source,
        })?;
    let object = value.as_object().ok_or_else(|| ReportError::NotAReport {
        what: what.to_owned(),
    })?;
    let version_of = |v: &serde_json::Value| v.get("schema_version").and_then(|v| v.as_u64());
    let newer = |document, found: u64, supported: u32| {
        (found > u64::from(supported)).then(|| ReportError::NewerSchema {
            what: what.to_owned(),
            document,
            found,
            supported,
        })
    };
    let older = |document, found: u64, supported: u32| {
        (found < u64::from(supported)).then(|| ReportError::OlderSchema {
            what: what.to_owned(),
            document,
            found,
            supported,
        })
    };
    let schema = |document, version, source| ReportError::Schema {
        what: what.to_owned(),
        document,
        version,
        source,
    };
    match (object.get("sweep"), object.get("cells"), version_of(&value)) {
        (Some(sweep), _, Some(version)) => {
            if let Some(error) = newer("report", version, REPORT_SCHEMA_VERSION) {
                return Err(error);
            }
            if let Some(error) = version_of(sweep).and_then(|v| {
                newer("sweep", v, SCHEMA_VERSION).or_else(|| older("sweep", v, SCHEMA_VERSION))
            }) {
                return Err(error);
            }
            serde_json::from_value(value.clone()).map_err(|e| schema("report", version, e))
        }
        (None, Some(_), Some(version)) => {
            if let Some(error) = newer("sweep", version, SCHEMA_VERSION)
                .or_else(|| older("sweep", version, SCHEMA_VERSION))
            {
                return Err(error);
            }
            let sweep: Sweep =
                serde_json::from_value(value.clone()).map_err(|e| schema("sweep", version, e))?;
            let deployment = Deployment::assumed_for(&sweep);
            Ok(Report::new(
                ReportKind::Sweep,
                "redfence run --json",
                deployment,
                sweep,
                None,
            ))
        }
        _ => Err(ReportError::NotAReport {
            what: what.to_owned(),
        }),
    }
}
