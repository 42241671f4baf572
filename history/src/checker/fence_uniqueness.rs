//! `fence-uniqueness`: no fence value is issued to two acquisitions.
//!
//! Decided from the ops alone: every completed `Acquire` answered
//! `Acquired { fence: Some(f) }` issues `f`. An acquisition is identified by
//! worker *and* owner token: one worker re-asking with its own token may be
//! answered the same fence again (the acquire is idempotent per token), but
//! two workers must never share one — even when a static owner token makes
//! them look like one owner. A regressing Redis counter across a failover is
//! the classic way to break this. A run in which no acquire issued a fence
//! (nobody acquired, or the lock issues none) is `NotExercised`.

use std::collections::BTreeMap;

use super::more;
use crate::history::{History, Op};
use crate::property::Property;
use crate::verdict::{owner_text, HistorySlice, Verdict};

const PROPERTY: Property = Property::FenceUniqueness;

/// Judges `fence-uniqueness`.
pub(super) fn check(history: &History) -> Verdict {
    let mut issued: BTreeMap<i64, Vec<&Op>> = BTreeMap::new();
    for op in &history.ops {
        if let Some(Some(fence)) = op.acquired_fence() {
            issued.entry(fence).or_default().push(op);
        }
    }
    let mut violations: Vec<(i64, &Op, &Op)> = Vec::new();
    for (&fence, ops) in &mut issued {
        ops.sort_by_key(|op| (op.complete_ms, op.id));
        let first = ops[0];
        let same = |op: &&Op| op.worker == first.worker && op.owner == first.owner;
        if let Some(second) = ops.iter().find(|op| !same(op)) {
            violations.push((fence, first, second));
        }
    }
    violations.sort_by_key(|(_, _, second)| (second.complete_ms, second.id));
    let Some(&(fence, first, second)) = violations.first() else {
        if issued.is_empty() {
            return Verdict::not_exercised(PROPERTY, "no acquire issued a fence");
        }
        return Verdict::held(
            PROPERTY,
            format!(
                "{} fences were issued, each to one acquisition",
                issued.len()
            ),
        );
    };
    let who = |op: &Op| {
        format!(
            "owner {} (worker {})",
            owner_text(op.owner.as_deref().unwrap_or("?")),
            op.worker
        )
    };
    let explanation = format!(
        "fence {fence} was issued to {} at {} ms and again to {} at {} ms{}",
        who(first),
        first.complete_ms.unwrap_or(first.invoke_ms),
        who(second),
        second.complete_ms.unwrap_or(second.invoke_ms),
        more(violations.len()),
    );
    let slice = HistorySlice::default().with_op(first).with_op(second);
    Verdict::violated(PROPERTY, explanation, slice)
}
