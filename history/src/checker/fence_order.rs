//! `fence-order`: per resource, accepted writes carry strictly increasing
//! fences in commit order.
//!
//! Decided from the store's fence log alone, because only the store knows the
//! commit order: walking each resource's accepted records in `seq` order, an
//! accepted fence not above the highest fence accepted before it is a
//! violation (equal counts: two writes under one fence are not ordered by it).
//! Without the log the verdict is `Undecided`: overlapping client writes have
//! no known commit order.
//!
//! Only fenced writes are judged: a write without a fence (fence 0) has no
//! order to keep, and whether it was stale is `unfenced-stale-write`'s
//! question. A log with no accepted fenced write leaves the property
//! `NotExercised`.

use std::collections::BTreeMap;

use super::{lookup, more, NO_STORE_TRUTH};
use crate::history::{FenceOutcome, FenceRecord, History};
use crate::property::Property;
use crate::verdict::{owner_text, HistorySlice, Verdict};

const PROPERTY: Property = Property::FenceOrder;

/// Judges `fence-order`.
pub(super) fn check(history: &History) -> Verdict {
    let Some(log) = &history.store_truth else {
        return Verdict::undecided(PROPERTY, NO_STORE_TRUTH);
    };
    // Highest accepted record so far, per resource.
    let mut highest: BTreeMap<&str, &FenceRecord> = BTreeMap::new();
    let mut violations: Vec<(&FenceRecord, &FenceRecord)> = Vec::new();
    let mut accepted_count = 0_usize;
    let fenced_accepted = log
        .iter()
        .filter(|r| r.outcome == FenceOutcome::Accepted && !lookup::unfenced(r.fence));
    for record in fenced_accepted {
        accepted_count += 1;
        match highest.get(record.resource.as_str()) {
            Some(&before) if record.fence <= before.fence => violations.push((before, record)),
            _ => {
                highest.insert(&record.resource, record);
            }
        }
    }
    let Some(&(before, after)) = violations.first() else {
        if accepted_count == 0 {
            return Verdict::not_exercised(PROPERTY, "the store accepted no fenced write");
        }
        return Verdict::held(
            PROPERTY,
            format!(
                "{accepted_count} accepted fenced writes on {} resources carried strictly \
                 increasing fences in commit order",
                highest.len()
            ),
        );
    };
    assert!(before.seq < after.seq && after.fence <= before.fence);
    let explanation = format!(
        "write by owner {} with fence {} was accepted at {} ms (seq {}) after fence {} \
         had been accepted at {} ms (seq {}, owner {}) on resource {}{}",
        owner_text(&after.owner),
        after.fence,
        after.at_ms,
        after.seq,
        before.fence,
        before.at_ms,
        before.seq,
        owner_text(&before.owner),
        after.resource,
        more(violations.len()),
    );
    let slice = HistorySlice::default()
        .with_fence(before)
        .with_fence(after)
        .with_op_opt(lookup::write_for(history, before))
        .with_op_opt(lookup::write_for(history, after));
    Verdict::violated(PROPERTY, explanation, slice)
}
