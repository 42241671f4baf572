//! `exactly-once`: a job's effect is applied at most once per job id.
//!
//! Decided from the store's fence log: per job id, at most one accepted
//! record. A record without a job id (a plain fenced write) takes the job id
//! its write ops carried, when they all agree — that is how a job applied
//! once through the job path and again through a plain write is still seen.
//! Without the log the verdict is `Undecided`: an indeterminate write may
//! have been applied. A log in which no job was applied is `NotExercised`.

use std::collections::BTreeMap;

use super::{lookup, more, NO_STORE_TRUTH};
use crate::history::{FenceOutcome, FenceRecord, History};
use crate::property::Property;
use crate::verdict::{owner_text, HistorySlice, Verdict};

const PROPERTY: Property = Property::ExactlyOnce;

/// Judges `exactly-once`.
pub(super) fn check(history: &History) -> Verdict {
    let Some(log) = &history.store_truth else {
        return Verdict::undecided(PROPERTY, NO_STORE_TRUTH);
    };
    let mut applied: BTreeMap<String, Vec<&FenceRecord>> = BTreeMap::new();
    for record in log.iter().filter(|r| r.outcome == FenceOutcome::Accepted) {
        if let Some(job_id) = lookup::job_of(history, record) {
            applied.entry(job_id).or_default().push(record);
        }
    }
    // Ordered by the second application's commit, so the earliest shows.
    let mut violations: Vec<(&str, &FenceRecord, &FenceRecord)> = applied
        .iter()
        .filter(|(_, records)| records.len() > 1)
        .map(|(job_id, records)| (job_id.as_str(), records[0], records[1]))
        .collect();
    violations.sort_by_key(|(_, _, second)| second.seq);
    let Some(&(job_id, first, second)) = violations.first() else {
        if applied.is_empty() {
            return Verdict::not_exercised(PROPERTY, "the store applied no job");
        }
        return Verdict::held(
            PROPERTY,
            format!("{} jobs were each applied at most once", applied.len()),
        );
    };
    assert!(first.seq < second.seq);
    let explanation = format!(
        "job {job_id} was applied twice: by owner {} with fence {} at {} ms (seq {}) and \
         by owner {} with fence {} at {} ms (seq {}){}",
        owner_text(&first.owner),
        first.fence,
        first.at_ms,
        first.seq,
        owner_text(&second.owner),
        second.fence,
        second.at_ms,
        second.seq,
        more(violations.len()),
    );
    let slice = HistorySlice::default()
        .with_fence(first)
        .with_fence(second)
        .with_op_opt(lookup::write_for(history, first))
        .with_op_opt(lookup::write_for(history, second));
    Verdict::violated(PROPERTY, explanation, slice)
}
