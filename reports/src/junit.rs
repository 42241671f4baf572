//! JUnit XML for CI test tabs: one testsuite per scenario, one testcase per
//! cell (scenario × protocol × world).
//!
//! A testcase fails when the cell is an unexpected result: a protocol that
//! must pass violated a property (`FAIL`), or a promised mutant catch did
//! not happen (`MISSED`). A mutant caught as promised, or caught where
//! nothing was promised, is a passing test — the harness did its job. A
//! failure's type names the property; its message is the line that replays
//! the run (a CI test tab shows the message first, and the replay is what a
//! reader acts on); its body holds every violated property with the
//! checker's explanation, the seed, and the replay line again. A property no
//! seed of the cell gave anything to judge is listed in the testcase's
//! output as not exercised: neither a failure nor a pass.

use std::fmt::Write as _;

use redfence_history::sweep::{Cell, CellStatus};
use redfence_history::Status;

use crate::document::Report;
use crate::escape::{attr, text};
use crate::labels::{
    cell_mark, cell_meaning, cell_never_exercised, expectation_words, property_names,
};

/// The failure of a testcase whose cell is unexpected: its type, its
/// message — the line that replays it, what a CI test tab shows first — and
/// its body.
fn failure(cell: &Cell) -> Option<(String, String, String)> {
    match cell.status {
        CellStatus::Failed => {
            let record = cell.first_failure.as_ref();
            let violated: Vec<_> = record
                .map(|r| {
                    r.verdicts
                        .iter()
                        .filter(|v| v.status == Status::Violated)
                        .collect()
                })
                .unwrap_or_default();
            let kind = violated
                .first()
                .map_or("run-error".to_owned(), |v| v.property.name().to_owned());
            let mut body = String::new();
            for v in &violated {
                let _ = writeln!(body, "violates {}: {}", v.property.name(), v.explanation);
            }
            if let Some(error) = record.and_then(|r| r.error.as_deref()) {
                let _ = writeln!(body, "run: {error}");
            }
            if let Some(r) = record {
                let _ = writeln!(
                    body,
                    "first failing seed: {} ({} of {} seeds failed)\nreplay: {}",
                    r.seed, cell.failed_runs, cell.runs, r.replay
                );
            }
            let message = record.map_or("failed".to_owned(), |r| r.replay.clone());
            Some((kind, message, body))
        }
        CellStatus::Missed => {
            let first = cell.first_run.as_ref().map(|r| r.replay.as_str());
            Some((
                "missed-catch".to_owned(),
                first.unwrap_or("no run kept").to_owned(),
                format!(
                    "{}; not caught in {} seeds\n{}\nreplay the first run: {}\n",
                    expectation_words(&cell.expectation),
                    cell.runs,
                    cell_meaning(cell.status),
                    first.unwrap_or("-")
                ),
            ))
        }
        _ => None,
    }
}

/// The JUnit XML of `report`.
pub fn render(report: &Report) -> String {
    let sweep = &report.sweep;
    let bad = |c: &Cell| failure(c).is_some();
    let total = sweep.cells.len();
    let failures = sweep.cells.iter().filter(|c| bad(c)).count();
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="redfence" tests="{total}" failures="{failures}" errors="0">"#
    );
    for s in &sweep.scenarios {
        let cells: Vec<&Cell> = sweep
            .cells
            .iter()
            .filter(|c| c.scenario == s.name)
            .collect();
        let _ = writeln!(
            out,
            r#"  <testsuite name="{}" tests="{}" failures="{}" errors="0" skipped="0">"#,
            attr(&s.name),
            cells.len(),
            cells.iter().filter(|c| bad(c)).count()
        );
        for cell in cells {
            let _ = write!(
                out,
                r#"    <testcase classname="redfence.{}.{}" name="{}" time="0">"#,
                cell.world.name(),
                attr(&cell.scenario),
                attr(&cell.protocol),
            );
            if let Some((kind, message, body)) = failure(cell) {
                let _ = write!(
                    out,
                    r#"<failure type="{}" message="{}">{}</failure>"#,
                    attr(&kind),
                    attr(&message),
                    text(&body)
                );
            }
            // The mark (CAUGHT@n …) goes here, not in the name, so a test's
            // name stays the same from run to run for CI history.
            let idle = cell_never_exercised(cell);
            let out_text = format!(
                "{} × {} in the {} world: {} — {} ({} runs, {} failing)\n{}{}",
                cell.scenario,
                cell.protocol,
                cell.world.name(),
                cell_mark(cell),
                cell_meaning(cell.status),
                cell.runs,
                cell.failed_runs,
                if idle.is_empty() {
                    String::new()
                } else {
                    format!(
                        "not exercised (nothing to judge, not held): {}\n",
                        property_names(&idle)
                    )
                },
                cell.first_failure
                    .as_ref()
                    .map_or_else(String::new, |r| format!("replay: {}\n", r.replay))
            );
            let _ = writeln!(
                out,
                "<system-out>{}</system-out></testcase>",
                text(&out_text)
            );
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}
