//! Verdicts: what the checker says about one property, and the slice of
//! history that shows it.
//!
//! A verdict is read by people (the explanation is plain words with times and
//! fences) and by reports (the slice names the op ids and truth records a
//! timeline should highlight). The slice is kept to the few items that
//! contradict each other, bounded by [`SLICE_ITEMS_MAX`], so a reader sees the
//! violation rather than the run.

use serde::{Deserialize, Serialize};

use crate::history::{FenceRecord, Op, OwnershipRecord};
use crate::property::Property;

/// Most items (ops + records) one slice holds: a violation is shown by the
/// two or three items that contradict each other, never by a dump.
pub const SLICE_ITEMS_MAX: usize = 6;

/// Whether a property held.
///
/// `Held` means the run gave the property something to judge and it held;
/// a run that gave it nothing (no instance of what its rule ranges over —
/// no deletion for `unlock-safety`, no stale write for
/// `stale-owner-rejected`) is `NotExercised`, so a report never counts a
/// check that never ran as a check that passed. Neither is a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// The history had something to judge, and it shows no violation.
    Held,
    /// The history shows a violation (see the slice).
    Violated,
    /// The history cannot decide it (the explanation says why).
    Undecided,
    /// The history held nothing the property's rule ranges over (the
    /// explanation says what was missing): it was not tested.
    NotExercised,
}

impl Status {
    /// Every status, in declaration order.
    pub const ALL: [Status; 4] = [
        Status::Held,
        Status::Violated,
        Status::Undecided,
        Status::NotExercised,
    ];

    /// The kebab-case name (the JSON spelling).
    pub fn name(self) -> &'static str {
        match self {
            Status::Held => "held",
            Status::Violated => "violated",
            Status::Undecided => "undecided",
            Status::NotExercised => "not-exercised",
        }
    }
}

/// The checker's answer for one property.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// The property judged.
    pub property: Property,
    /// Held, violated, undecided or not exercised.
    pub status: Status,
    /// Plain words: what was checked, what contradicts it, why undecided,
    /// or what the run lacked for it to be exercised.
    pub explanation: String,
    /// The smallest part of the history showing a violation (empty otherwise).
    pub slice: HistorySlice,
}

impl Verdict {
    /// The property held.
    pub fn held(property: Property, explanation: impl Into<String>) -> Self {
        Self::new(property, Status::Held, explanation, HistorySlice::default())
    }

    /// The property was violated, shown by `slice`.
    pub fn violated(
        property: Property,
        explanation: impl Into<String>,
        slice: HistorySlice,
    ) -> Self {
        assert!(!slice.is_empty(), "a violation must point at history");
        Self::new(property, Status::Violated, explanation, slice)
    }

    /// The property cannot be decided, for `reason`.
    pub fn undecided(property: Property, reason: impl Into<String>) -> Self {
        Self::new(property, Status::Undecided, reason, HistorySlice::default())
    }

    /// The run gave the property nothing to judge; `missing` says what
    /// ("no lock key was deleted"). The explanation reads "nothing to
    /// judge: " and then `missing`.
    pub fn not_exercised(property: Property, missing: impl Into<String>) -> Self {
        let missing = missing.into();
        assert!(!missing.is_empty(), "say what the run lacked");
        Self::new(
            property,
            Status::NotExercised,
            format!("nothing to judge: {missing}"),
            HistorySlice::default(),
        )
    }

    fn new(
        property: Property,
        status: Status,
        explanation: impl Into<String>,
        slice: HistorySlice,
    ) -> Self {
        let explanation = explanation.into();
        assert!(!explanation.is_empty(), "a verdict always explains itself");
        Self {
            property,
            status,
            explanation,
            slice,
        }
    }
}

/// An ownership record picked out of `redis_truth`, with its position there
/// (records have no id of their own).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnershipAt {
    /// Index into `History::redis_truth`.
    pub index: usize,
    /// The record.
    pub record: OwnershipRecord,
}

/// The part of a history a verdict points at.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistorySlice {
    /// Ids of the ops involved, in the order they matter.
    pub op_ids: Vec<u64>,
    /// Redis ownership records involved.
    pub ownership: Vec<OwnershipAt>,
    /// Fence-log records involved (each names its `seq`).
    pub fences: Vec<FenceRecord>,
}

impl HistorySlice {
    /// Adds an op (once).
    pub fn with_op(mut self, op: &Op) -> Self {
        if !self.op_ids.contains(&op.id) {
            self.op_ids.push(op.id);
        }
        self.bounded()
    }

    /// Adds an op if there is one.
    pub fn with_op_opt(self, op: Option<&Op>) -> Self {
        match op {
            Some(op) => self.with_op(op),
            None => self,
        }
    }

    /// Adds the ownership record at `index` of `redis_truth`.
    pub fn with_ownership(mut self, index: usize, record: &OwnershipRecord) -> Self {
        self.ownership.push(OwnershipAt {
            index,
            record: record.clone(),
        });
        self.bounded()
    }

    /// Adds a fence-log record.
    pub fn with_fence(mut self, record: &FenceRecord) -> Self {
        self.fences.push(record.clone());
        self.bounded()
    }

    /// How many items the slice holds.
    pub fn len(&self) -> usize {
        self.op_ids.len() + self.ownership.len() + self.fences.len()
    }

    /// Whether the slice holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn bounded(self) -> Self {
        assert!(self.len() <= SLICE_ITEMS_MAX, "slice grew past its bound");
        self
    }
}

/// An owner token as explanations, timelines and reports print it: whole.
/// A cut token (its first eight characters, say) made two owners with a
/// shared prefix read as one — exactly the confusion a lock bug hides in.
pub fn owner_text(owner: &str) -> String {
    owner.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_shown_whole_so_a_shared_prefix_stays_two_owners() {
        let a = "7f3e9a1b-2c3d-4e5f-8a9b-0c1d2e3f4a5b";
        let b = "7f3e9a1b-2c3d-4e5f-8a9b-ffffffffffff";
        assert_eq!(owner_text(a), a);
        assert_ne!(owner_text(a), owner_text(b));
        assert_eq!(owner_text("w1-o1"), "w1-o1");
    }

    #[test]
    fn not_exercised_is_its_own_status_and_says_what_was_missing() {
        let v = Verdict::not_exercised(Property::UnlockSafety, "no lock key was deleted");
        assert_eq!(v.status, Status::NotExercised);
        assert_ne!(v.status, Status::Held);
        assert_eq!(v.explanation, "nothing to judge: no lock key was deleted");
        assert!(v.slice.is_empty());
        for status in Status::ALL {
            let json = serde_json::to_string(&status).unwrap();
            assert_eq!(json, format!("\"{}\"", status.name()));
        }
        assert_eq!(
            serde_json::from_str::<Status>("\"not-exercised\"").unwrap(),
            Status::NotExercised
        );
    }

    #[test]
    #[should_panic(expected = "must point at history")]
    fn violation_needs_a_slice() {
        let _ = Verdict::violated(Property::FenceOrder, "x", HistorySlice::default());
    }
}
