//! The Markdown summary, sized for a pull-request comment.
//!
//! What a reviewer needs without opening the page: whether the protocol
//! that ships passed, the matrix, the replay line of every failure that
//! matters, the mutation score, the readiness checklist and the
//! unprotected failure scenarios. Bounded by [`MARKDOWN_BYTES_MAX`] (GitHub
//! refuses comments past 65,536 characters); past it the replay list is
//! cut with a note pointing at the HTML report.

use std::fmt::Write as _;

use redfence_history::sweep::CellStatus;

use crate::document::Report;
use crate::labels::{cell_mark, count, never_exercised, verdict_word};
use crate::readiness::{ExposureKind, Mark};

/// Most bytes of the summary.
pub const MARKDOWN_BYTES_MAX: usize = 60_000;

fn cell_md(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn mark_icon(mark: Mark) -> &'static str {
    match mark {
        Mark::Met => "✅",
        Mark::Partial => "⚠️",
        Mark::NotMet => "❌",
        Mark::NoEvidence => "❔",
    }
}

/// The summary of `report`.
pub fn render(report: &Report) -> String {
    let sweep = &report.sweep;
    let deployed = &report.deployment.protocol;
    let mut out = String::new();
    let _ = writeln!(out, "## {}\n", cell_md(&report.title));
    let failed: Vec<_> = sweep
        .cells
        .iter()
        .filter(|c| &c.protocol == deployed && c.failed_runs > 0)
        .collect();
    let ran = sweep
        .cells
        .iter()
        .filter(|c| &c.protocol == deployed)
        .count();
    if failed.is_empty() {
        let _ = writeln!(
            out,
            "✅ **{deployed}** passed all {} ({} world, {} per cell).",
            count(ran as u64, "scenario"),
            sweep.world.name(),
            count(sweep.seeds, "seed")
        );
    } else {
        let _ = writeln!(
            out,
            "❌ **{deployed}** FAILED {} of {ran} scenarios: {}.",
            failed.len(),
            failed
                .iter()
                .map(|c| format!("`{}`", c.scenario))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let idle = never_exercised(sweep, deployed);
    if !idle.is_empty() {
        let _ = writeln!(
            out,
            "➖ Not exercised for **{deployed}** by any scenario it ran (nothing to judge, not \
             counted as held): {}.",
            idle.iter()
                .map(|p| format!("`{}`", p.name()))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if !sweep.mutants.is_empty() {
        let promised: u64 = sweep.mutants.iter().map(|m| m.promised).sum();
        let caught: u64 = sweep.mutants.iter().map(|m| m.caught).sum();
        let _ = writeln!(
            out,
            "{} Mutation score: {caught} of {promised} promised catches.",
            if caught == promised { "✅" } else { "⚠️" }
        );
    }
    let exposed = report.readiness.exposed();
    let _ = writeln!(
        out,
        "{} {} failure scenario(s) unprotected for the deployment.\n",
        if exposed.is_empty() { "✅" } else { "❌" },
        exposed.len()
    );
    // The matrix.
    let _ = write!(out, "| scenario |");
    for p in &sweep.protocols {
        let _ = write!(out, " {} |", cell_md(&p.name));
    }
    let _ = write!(out, "\n|---|");
    for _ in &sweep.protocols {
        let _ = write!(out, "---|");
    }
    out.push('\n');
    for s in &sweep.scenarios {
        let _ = write!(out, "| {} |", cell_md(&s.name));
        for p in &sweep.protocols {
            let mark = sweep.cell(&s.name, &p.name).map_or("n/a".to_owned(), |c| {
                let m = cell_mark(c);
                if matches!(c.status, CellStatus::Failed | CellStatus::Missed) {
                    format!("**{m}**")
                } else {
                    m
                }
            });
            let _ = write!(out, " {mark} |");
        }
        out.push('\n');
    }
    out.push_str(
        "\n`pass` no property violated · `CAUGHT sN` promised bug found, seed N replays it · \
         `also sN` failed, not promised · `-` not promised, not caught · `MISSED` promised \
         catch did not happen · `FAIL sN` must pass, failed on seed N\n",
    );
    out.push_str("\n### Rollout readiness\n\n| item | mark | why |\n|---|---|---|\n");
    for item in &report.readiness.items {
        let _ = writeln!(
            out,
            "| {} | {} {} | {} |",
            cell_md(&item.title),
            mark_icon(item.mark),
            item.mark.label(),
            cell_md(&item.summary)
        );
    }
    out.push_str("\n### Unprotected failure scenarios\n\n");
    for e in &report.readiness.unprotected {
        let word = match e.kind {
            ExposureKind::Exposed => "**EXPOSED**",
            ExposureKind::Untested => "untested",
            ExposureKind::OutOfScope => "out of scope",
        };
        let shown: Vec<String> = e
            .evidence
            .iter()
            .filter(|ev| ev.status.is_some())
            .map(|ev| format!("`{} × {}`: {}", ev.scenario, ev.protocol, ev.text))
            .collect();
        let _ = writeln!(
            out,
            "- {word}: {} — closes it: {}{}",
            e.failure,
            e.mitigation,
            if shown.is_empty() {
                String::new()
            } else {
                format!(" (evidence: {})", shown.join("; "))
            }
        );
    }
    let replays: Vec<String> = sweep
        .cells
        .iter()
        .filter_map(|c| c.first_failure.as_ref().map(|r| (c, r)))
        .map(|(c, r)| {
            let why = r
                .verdicts
                .iter()
                .find(|v| v.status == redfence_history::Status::Violated)
                .map(|v| {
                    format!(
                        "{} {}: {}",
                        v.property.name(),
                        verdict_word(v.status),
                        cell_md(&v.explanation)
                    )
                })
                .or_else(|| r.error.clone())
                .unwrap_or_default();
            format!(
                "- `{} × {}` ({}): {why}\n  `{}`\n",
                c.scenario,
                c.protocol,
                cell_mark(c),
                r.replay
            )
        })
        .collect();
    if !replays.is_empty() {
        out.push_str("\n### Replay the first failure of each failing cell\n\n");
        for (i, line) in replays.iter().enumerate() {
            if out.len() + line.len() > MARKDOWN_BYTES_MAX - 200 {
                let _ = writeln!(out, "\n… {} more in the HTML report.", replays.len() - i);
                break;
            }
            out.push_str(line);
        }
    }
    out.push_str(
        "\nThe HTML report next to this file has the timelines, explanations and slices.\n",
    );
    out
}
