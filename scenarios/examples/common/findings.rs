//! What both examples do with their sweep: print one line per scenario —
//! failures with the violated property, why, and the replay line — and
//! compare the failures with the findings the example documents.
//!
//! Shared by `own_protocol` and `whole_worker` (each includes it with
//! `#[path]`), so a team copying either sees the same output.

use std::process::ExitCode;

use redfence_scenarios::sweep::{CellStatus, Sweep};
use redfence_scenarios::{Property, Status};

/// One documented finding: the scenario, the property it violates there,
/// and the fix.
pub type Finding = (&'static str, Property, &'static str);

/// Prints `result` and exits non-zero unless the failures are exactly
/// `findings` (`lock` names the lock, `bugs` says how many in words).
pub fn judge(result: &Sweep, findings: &[Finding], lock: &str, bugs: &str) -> ExitCode {
    let mut as_expected = true;
    for cell in &result.cells {
        let finding = findings.iter().find(|(s, _, _)| *s == cell.scenario);
        let violated = cell
            .first_failure
            .as_ref()
            .map(|f| f.violated())
            .unwrap_or_default();
        let status = if cell.status == CellStatus::Passed {
            "pass"
        } else {
            "FAIL"
        };
        println!("{status}  {:<30} {} seeds", cell.scenario, cell.runs);
        if let Some(failure) = &cell.first_failure {
            for verdict in failure
                .verdicts
                .iter()
                .filter(|v| v.status == Status::Violated)
            {
                println!(
                    "      violates {}: {}",
                    verdict.property.name(),
                    verdict.explanation
                );
            }
            println!("      replay: {}", failure.replay);
        }
        match finding {
            Some((_, property, fix)) if violated.contains(property) => {
                println!("      fix: {fix}");
            }
            Some((_, property, _)) => {
                println!("      expected a {} violation here", property.name());
                as_expected = false;
            }
            None if cell.status != CellStatus::Passed => as_expected = false,
            None => {}
        }
    }
    if as_expected {
        println!("\n{lock}: the harness found the {bugs} bugs it has, and nothing else");
        ExitCode::SUCCESS
    } else {
        println!("\n{lock}: the findings differ from what this example documents");
        ExitCode::FAILURE
    }
}
