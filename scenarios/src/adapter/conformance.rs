//! The conformance check an adapter author runs on their own: does the
//! adapter speak the protocol, use the key it is given and tie its writes
//! to its holdings? (`redfence adapter check`, `docs/adapter-protocol.md`.)
//!
//! It runs two scenarios through the adapter on real servers and reads the
//! answers off the runs' histories — what the servers saw, not what the
//! adapter said. Conformance is not safety: a lock without fences passes
//! it and still fails scenarios; the property verdicts are printed for
//! information only.

use std::sync::Arc;

use super::AdapterProtocol;
use crate::catalog;
use crate::history::{FenceOutcome, JobReport, OkValue, OpKind, Outcome, OwnershipChange};
use crate::names::scenario;
use crate::protocol::Protocol;
use crate::run::{run_one, RunRecord, WorldFactory};
use crate::Status;

/// One conformance check and how it went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// What is checked, in words.
    pub name: &'static str,
    /// Whether it held.
    pub passed: bool,
    /// What was seen.
    pub detail: String,
}

/// The runs a check made, with its verdicts.
#[derive(Debug)]
pub struct Conformance {
    /// Every check, in order.
    pub checks: Vec<Check>,
    /// The runs, for their verdicts.
    pub runs: Vec<RunRecord>,
}

impl Conformance {
    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.passed)
    }
}

fn no_history(name: &'static str) -> Check {
    check(name, vec!["the run kept no history".into()], String::new())
}

fn check(name: &'static str, failures: Vec<String>, ok: String) -> Check {
    Check {
        name,
        passed: failures.is_empty(),
        detail: if failures.is_empty() {
            ok
        } else {
            failures.join("; ")
        },
    }
}

/// Runs `adapter` through `mutual-exclusion` and `redis-unavailable` in
/// `worlds` (real ones) and checks what the protocol promises.
pub fn check_adapter(worlds: &dyn WorldFactory, adapter: &AdapterProtocol) -> Conformance {
    let protocol: Arc<dyn Protocol> = Arc::new(adapter.clone());
    let plain = catalog::by_name(scenario::MUTUAL_EXCLUSION).expect("in the catalog");
    let first = run_one(worlds, plain.as_ref(), protocol.clone(), 0);
    // The adapter's problems are the run's error (`run_one`), as is a
    // run that stopped because a job never ended.
    let problems: Vec<String> = first.error.iter().cloned().collect();
    let mut checks = vec![check(
        "speaks the protocol: ready, done for every job, a clean exit on shutdown",
        problems,
        format!("{} job report(s), no protocol error", reports(&first).len()),
    )];
    checks.push(acquires_on_the_key(&first));
    checks.push(writes_under_its_holding(&first));
    checks.push(reports_what_the_store_did(&first));
    let down = catalog::by_name(scenario::REDIS_UNAVAILABLE).expect("in the catalog");
    let second = run_one(worlds, down.as_ref(), protocol, 0);
    let mut failures: Vec<String> = Vec::new();
    for verdict in &second.verdicts {
        if verdict.property == crate::Property::FailClosed && verdict.status == Status::Violated {
            failures.push(verdict.explanation.clone());
        }
    }
    if let Some(error) = &second.error {
        failures.push(format!("the run stopped: {error}"));
    }
    checks.push(check(
        "fails closed while Redis is unreachable",
        failures,
        "no write accepted without a lock while Redis was down".into(),
    ));
    Conformance {
        checks,
        runs: vec![first, second],
    }
}

fn reports(record: &RunRecord) -> Vec<(String, Option<String>, JobReport)> {
    let Some(history) = &record.history else {
        return Vec::new();
    };
    history
        .ops
        .iter()
        .filter_map(|op| match &op.kind {
            OpKind::Report { outcome, job_id } => {
                Some((op.worker.clone(), job_id.clone(), *outcome))
            }
            _ => None,
        })
        .collect()
}

/// Every worker was seen holding the lock key under a token it sent.
fn acquires_on_the_key(record: &RunRecord) -> Check {
    let Some(history) = &record.history else {
        return no_history("acquires on the key init names, with its token on the wire");
    };
    let workers: std::collections::BTreeSet<&str> =
        history.ops.iter().map(|op| op.worker.as_str()).collect();
    let mut failures = Vec::new();
    for worker in &workers {
        let held = history.ops.iter().any(|op| {
            op.worker == *worker
                && op.kind == OpKind::Acquire
                && matches!(op.outcome, Outcome::Ok(OkValue::Acquired { .. }))
        });
        if !held {
            failures.push(format!(
                "{worker} was never seen holding the lock key: it used another key, or its token was not on the wire"
            ));
        }
    }
    if workers.is_empty() {
        failures.push("no worker did anything".into());
    }
    check(
        "acquires on the key init names, with its token on the wire",
        failures,
        format!("{} worker(s) each seen holding the key", workers.len()),
    )
}

/// Every write the store accepted carries a token that held the key.
fn writes_under_its_holding(record: &RunRecord) -> Check {
    let Some(history) = &record.history else {
        return no_history("writes under the token it holds");
    };
    let Some(store) = &history.store_truth else {
        return check(
            "writes under the token it holds",
            vec!["the store's log was not read".into()],
            String::new(),
        );
    };
    let held: std::collections::BTreeSet<&str> = history
        .redis_truth
        .iter()
        .flatten()
        .filter_map(|r| match &r.change {
            OwnershipChange::Set { owner } => Some(owner.as_str()),
            OwnershipChange::Overwritten { to, .. } => Some(to.as_str()),
            _ => None,
        })
        .collect();
    let mut failures = Vec::new();
    let accepted: Vec<_> = store
        .iter()
        .filter(|r| r.outcome == FenceOutcome::Accepted)
        .collect();
    if history.redis_truth.is_none() {
        failures.push(format!(
            "Redis's own record is missing: {}",
            history
                .redis_truth_gap
                .clone()
                .unwrap_or_else(|| "no reason given".into())
        ));
    }
    for write in &accepted {
        if !held.contains(write.owner.as_str()) {
            failures.push(format!(
                "a write under owner {:?} was accepted, but no holder of the key had that token",
                write.owner
            ));
            continue;
        }
        // The worker that sent it must have been seen acquiring under
        // that token itself: a write under another worker's token is a
        // borrowed holding.
        let owned = |op: &&crate::history::Op| op.owner.as_deref() == Some(write.owner.as_str());
        let writer = history
            .ops
            .iter()
            .filter(owned)
            .find(|op| matches!(op.kind, OpKind::Write { .. }))
            .map(|op| op.worker.as_str());
        let acquired_by_writer = history.ops.iter().filter(owned).any(|op| {
            Some(op.worker.as_str()) == writer
                && op.kind == OpKind::Acquire
                && matches!(op.outcome, Outcome::Ok(OkValue::Acquired { .. }))
        });
        if !acquired_by_writer {
            failures.push(format!(
                "{} wrote under owner {:?}, a token it was never seen acquiring with",
                writer.unwrap_or("a worker"),
                write.owner
            ));
        }
    }
    if accepted.is_empty() {
        failures.push("the store accepted no write".into());
    }
    check(
        "writes under the token it holds",
        failures,
        format!(
            "{} accepted write(s), each under a token that held the key",
            accepted.len()
        ),
    )
}

/// A `success` is backed by an accepted write of that job, and an
/// accepted write is not reported as a failure to take the lock.
fn reports_what_the_store_did(record: &RunRecord) -> Check {
    let store = record
        .history
        .as_ref()
        .and_then(|h| h.store_truth.clone())
        .unwrap_or_default();
    let mut failures = Vec::new();
    let all = reports(record);
    for (worker, job, report) in &all {
        let applied = store
            .iter()
            .any(|r| r.outcome == FenceOutcome::Accepted && r.job_id.as_deref() == job.as_deref());
        let job = job.clone().unwrap_or_default();
        match report {
            JobReport::Success if !applied => failures.push(format!(
                "{worker} reported success for {job}, but the store accepted no write of it"
            )),
            JobReport::RetryLater if applied => failures.push(format!(
                "{worker} reported retry-later for {job}, but the store accepted its write"
            )),
            _ => {}
        }
    }
    if all.is_empty() {
        failures.push("no job was reported".into());
    }
    check(
        "reports what the store did",
        failures,
        format!(
            "{} report(s), each consistent with the store's log",
            all.len()
        ),
    )
}
