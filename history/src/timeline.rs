//! The event timeline of a run as text: what `redfence replay` prints.
//!
//! Every op's invoke and completion, every fault, every Redis ownership
//! change and every fence-log record, merged by time into one listing a
//! person reads top to bottom. Ties keep a fixed order (faults, Redis,
//! store, ops by id), so the same history always renders byte for byte the
//! same — replaying a seed and diffing the timelines is how determinism is
//! checked by hand.

use std::fmt::Write as _;

use crate::history::{FenceOutcome, History, OkValue, Op, OpKind, Outcome, OwnershipChange};
use crate::verdict::owner_text;

/// One line of the timeline, before sorting.
struct Line {
    at_ms: u64,
    /// Tie-break between lines at the same time.
    rank: (u8, u64),
    text: String,
}

/// What `op` asked, in the timeline's words (`write fence=3 job=w1-job-0`);
/// reports use the same words.
pub fn kind(op: &Op) -> String {
    match &op.kind {
        OpKind::Acquire => "acquire".to_owned(),
        OpKind::Renew => "renew".to_owned(),
        OpKind::Release => "release".to_owned(),
        OpKind::Command => "command".to_owned(),
        OpKind::Write { fence, job_id } => match job_id {
            Some(job) => format!("write fence={fence} job={job}"),
            None => format!("write fence={fence}"),
        },
        OpKind::Report { outcome, job_id } => {
            format!("report {outcome} job={}", job_id.as_deref().unwrap_or("-"))
        }
    }
}

/// How an op ended, in the timeline's words (`rejected stale (store at 9)`).
pub fn outcome(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Ok(value) => match value {
            OkValue::Acquired { fence: Some(f) } => format!("acquired fence={f}"),
            OkValue::Acquired { fence: None } => "acquired (no fence)".to_owned(),
            OkValue::Contended => "contended".to_owned(),
            OkValue::Renewed => "renewed".to_owned(),
            OkValue::RenewLost => "lease lost".to_owned(),
            OkValue::Released(true) => "released".to_owned(),
            OkValue::Released(false) => "released nothing".to_owned(),
            OkValue::WriteAccepted => "accepted".to_owned(),
            OkValue::WriteStale { last_fence } => format!("rejected stale (store at {last_fence})"),
            OkValue::WriteNotFound => "not found".to_owned(),
            OkValue::AlreadyDone => "already done".to_owned(),
            OkValue::Reported => "reported".to_owned(),
            OkValue::Answered => "answered".to_owned(),
        },
        Outcome::Fail(why) => format!("FAILED: {why}"),
        Outcome::Indeterminate(why) => format!("UNKNOWN: {why}"),
    }
}

/// The timeline of `history`, one event per line.
pub fn timeline(history: &History) -> String {
    let mut lines: Vec<Line> = Vec::new();
    for (i, fault) in history.faults.iter().enumerate() {
        lines.push(Line {
            at_ms: fault.at_ms,
            rank: (0, i as u64),
            text: format!("FAULT   {}", fault.what),
        });
    }
    for (i, event) in history.server_events.iter().enumerate() {
        lines.push(Line {
            at_ms: event.at_ms,
            rank: (0, (history.faults.len() + i) as u64),
            text: format!("SERVER  {}", event.what),
        });
    }
    for (i, record) in history.redis_truth.iter().flatten().enumerate() {
        let change = match &record.change {
            OwnershipChange::Set { owner } => format!("set by {}", owner_text(owner)),
            OwnershipChange::Overwritten { from, to } => {
                format!("overwritten {} -> {}", owner_text(from), owner_text(to))
            }
            OwnershipChange::Expired { owner } => format!("expired ({})", owner_text(owner)),
            OwnershipChange::Deleted { owner } => format!("deleted ({})", owner_text(owner)),
            OwnershipChange::Lost { owner } => format!("lost with server ({})", owner_text(owner)),
        };
        lines.push(Line {
            at_ms: record.at_ms,
            rank: (1, i as u64),
            text: format!("REDIS   {} {}: {change}", record.server, record.key),
        });
    }
    for record in history.store_truth.iter().flatten() {
        let outcome = match record.outcome {
            FenceOutcome::Accepted => "accepted",
            FenceOutcome::Stale => "rejected stale",
            FenceOutcome::NotFound => "not found",
            FenceOutcome::Duplicate => "duplicate",
        };
        let job = record.job_id.as_deref().unwrap_or("-");
        lines.push(Line {
            at_ms: record.at_ms,
            rank: (2, record.seq as u64),
            text: format!(
                "STORE   seq {} fence {} by {} job {job}: {outcome}",
                record.seq,
                record.fence,
                owner_text(&record.owner)
            ),
        });
    }
    for op in &history.ops {
        let owner = op.owner.as_deref().map(owner_text).unwrap_or_default();
        let who = if owner.is_empty() {
            op.worker.clone()
        } else {
            format!("{} ({owner})", op.worker)
        };
        lines.push(Line {
            at_ms: op.invoke_ms,
            rank: (3, op.id * 2),
            text: format!("{who:<14} #{} {} ...", op.id, kind(op)),
        });
        let end = match op.complete_ms {
            Some(at_ms) => (at_ms, outcome(&op.outcome)),
            None => (
                history.end_ms,
                format!("no answer by the end: {}", outcome(&op.outcome)),
            ),
        };
        if matches!(op.kind, OpKind::Report { .. }) {
            continue;
        }
        lines.push(Line {
            at_ms: end.0,
            rank: (3, op.id * 2 + 1),
            text: format!("{who:<14} #{} {} -> {}", op.id, kind(op), end.1),
        });
    }
    lines.sort_by_key(|line| (line.at_ms, line.rank));
    let mut out = String::new();
    for line in lines {
        let _ = writeln!(out, "{:>8} ms  {}", line.at_ms, line.text);
    }
    let _ = writeln!(out, "{:>8} ms  END", history.end_ms);
    out
}
