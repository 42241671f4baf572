//! Words every format shares: how a cell status, a verdict status, an
//! expectation and an operation are called, so the HTML, Markdown and JUnit
//! outputs (and the timeline's tooltips) never disagree about what they mean.

use redfence_history::history::Op;
use redfence_history::sweep::{Cell, CellStatus, Expectation, Sweep};
use redfence_history::timeline::{kind, outcome};
use redfence_history::verdict::owner_text;
use redfence_history::Property;
use redfence_history::Status;

/// The short mark of a cell in a matrix, naming the seed that replays its
/// first failure (`CAUGHT s3`).
pub fn cell_mark(cell: &Cell) -> String {
    // The seed a replay needs, not the seed's position in the sweep.
    let seed = cell
        .first_failure
        .as_ref()
        .map_or_else(String::new, |r| format!(" s{}", r.seed));
    match cell.status {
        CellStatus::Passed => "pass".to_owned(),
        CellStatus::Caught => format!("CAUGHT{seed}"),
        CellStatus::AlsoCaught => format!("also{seed}"),
        CellStatus::NotCaught => "-".to_owned(),
        CellStatus::Missed => "MISSED".to_owned(),
        CellStatus::Undecidable => "n/d".to_owned(),
        CellStatus::Failed => format!("FAIL{seed}"),
    }
}

/// The CSS class of a cell status.
pub fn cell_class(status: CellStatus) -> &'static str {
    match status {
        CellStatus::Passed => "st-passed",
        CellStatus::Caught => "st-caught",
        CellStatus::AlsoCaught => "st-also",
        CellStatus::NotCaught => "st-not-caught",
        CellStatus::Missed => "st-missed",
        CellStatus::Undecidable => "st-not-caught",
        CellStatus::Failed => "st-failed",
    }
}

/// One sentence saying what a cell status means.
pub fn cell_meaning(status: CellStatus) -> &'static str {
    match status {
        CellStatus::Passed => {
            "no property was violated on any seed, as required (a property the scenario \
             gave nothing to judge is not exercised, not held)"
        }
        CellStatus::Caught => "the promised violation was found: the scenario catches this bug",
        CellStatus::AlsoCaught => "not promised here, but a property was violated anyway",
        CellStatus::NotCaught => "nothing promised here, and nothing was violated",
        CellStatus::Missed => "a promised catch did NOT happen within the seeds run",
        CellStatus::Undecidable => {
            "the promised property could not be decided in this world: it needs the Redis \
             servers' ownership log, and the real servers' recording had a gap (each \
             verdict names it)"
        }
        CellStatus::Failed => "this protocol must pass, and it violated a property",
    }
}

/// Whether a cell's outcome is bad news (a defect, or a check without teeth).
pub fn cell_bad(status: CellStatus) -> bool {
    matches!(status, CellStatus::Failed | CellStatus::Missed)
}

/// A verdict status in words.
pub fn verdict_word(status: Status) -> &'static str {
    match status {
        Status::Held => "held",
        Status::Violated => "VIOLATED",
        Status::Undecided => "undecided",
        Status::NotExercised => "not exercised",
    }
}

/// The CSS class of a verdict status (one token).
pub fn verdict_class(status: Status) -> &'static str {
    match status {
        Status::Held => "held",
        Status::Violated => "VIOLATED",
        Status::Undecided => "undecided",
        Status::NotExercised => "not-exercised",
    }
}

/// The properties no seed of `protocol`'s cells gave anything to judge (see
/// [`Sweep::never_exercised`]): a summary must not count them as held.
pub fn never_exercised(sweep: &Sweep, protocol: &str) -> Vec<Property> {
    sweep.never_exercised(protocol)
}

/// The properties a cell's seeds never gave anything to judge.
pub fn cell_never_exercised(cell: &Cell) -> Vec<Property> {
    cell.tallies
        .iter()
        .filter(|t| !t.exercised() && t.not_exercised > 0)
        .map(|t| t.property)
        .collect()
}

/// `properties` by name, comma-separated.
pub fn property_names(properties: &[Property]) -> String {
    properties
        .iter()
        .map(|p| p.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a cell was expected to show, in words.
pub fn expectation_words(expectation: &Expectation) -> String {
    match expectation {
        Expectation::Pass => "must violate no property".to_owned(),
        Expectation::Catch(properties) => format!(
            "must be caught violating {}",
            properties
                .iter()
                .map(|p| p.name())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Expectation::Any => "nothing promised".to_owned(),
    }
}

/// One op as a line a person reads.
pub fn op_words(op: &Op) -> String {
    let done = match op.complete_ms {
        Some(at) => format!("{} at {at} ms", outcome(&op.outcome)),
        None => format!("no answer ({})", outcome(&op.outcome)),
    };
    let owner = op
        .owner
        .as_deref()
        .map_or_else(String::new, |o| format!(" (owner {})", owner_text(o)));
    format!(
        "#{} {}{owner}: {} at {} ms → {done}",
        op.id,
        op.worker,
        kind(op),
        op.invoke_ms
    )
}

/// `n` and `noun`, with an `s` unless `n` is 1 (`1 seed`, `50 seeds`).
pub fn count(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    if n == 1 {
        format!("{n} {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
