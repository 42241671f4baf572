//! The HTML report: one self-contained page (inline CSS and SVG, no script,
//! no external asset) a team reads before a rollout.
//!
//! Top to bottom: a summary in three sentences; the verdict matrix (scenario
//! × protocol × world, each cell linking to its detail); the
//! rollout-readiness checklist and the failure scenarios left unprotected
//! for the deployment; the mutation score; metrics with the hotspot plots;
//! then one section per scenario — what it tests, its parameters, and per
//! protocol the tallies, the SVG timeline of its first failure (or first
//! run), each property's verdict with the explanation, the smallest slice of
//! history and the one-line replay command.
//!
//! The markup is well-formed XML (every element closed, only XML entities),
//! so tests can parse it with an XML parser; browsers read it as HTML5.

use redfence_history::names;
use std::fmt::Write as _;

use redfence_history::history::{FenceOutcome, History, OwnershipChange};
use redfence_history::record::RunRecord;
use redfence_history::sweep::{Cell, ScenarioInfo};
use redfence_history::verdict::owner_text;
use redfence_history::Status;

use crate::deployment::Replication;
use crate::document::{Report, ReportKind};
use crate::escape::{attr, cell_id, scenario_id, text};
use crate::labels::{
    cell_bad, cell_class, cell_mark, cell_meaning, count, expectation_words, never_exercised,
    op_words, property_names, verdict_class, verdict_word,
};
use crate::plots::{bars_svg, curve_svg, histogram_svg, waits_ms};
use crate::readiness::{Evidence, ExposureKind, Mark};
use crate::timeline_svg::{timeline_svg, Highlight};
use redfence_history::FenceSourceKind;

/// The scenario whose metrics get plots.
const HOTSPOT: &str = names::scenario::HOTSPOT_LOAD;

const STYLE: &str = r#"
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1280px; padding: 0 20px 60px; color: #1d2430; }
h1 { font-size: 24px; margin: 18px 0 4px; }
h2 { border-bottom: 2px solid #d7dde6; padding-bottom: 4px; margin-top: 36px; }
h3 { margin-top: 30px; }
code, pre { font: 12.5px/1.4 ui-monospace, monospace; }
pre { background: #f4f6f9; padding: 8px 10px; overflow-x: auto; white-space: pre-wrap; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid #d7dde6; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #eef1f5; }
.meta { color: #5a6578; }
.environment { display: flex; flex-wrap: wrap; gap: 2px 16px; font-size: 12px; color: #5a6578; margin: 4px 0 10px; }
.environment dt { font-weight: 600; }
.environment dt::after { content: ":"; }
.environment dd { margin: 0 0 0 4px; }
.assumed { border-left: 4px solid #d4a017; background: #fffaeb; padding: 2px 12px; }
nav a { margin-right: 12px; }
.matrix-wrap { overflow-x: auto; max-width: 100%; border: 1px solid #d7dde6; }
.matrix { margin: 0; }
.matrix td, .matrix th { text-align: center; white-space: nowrap; font-size: 12px; padding: 2px 5px; }
.matrix thead th { position: sticky; top: 0; z-index: 1; }
.matrix tbody th, .matrix th.corner { position: sticky; left: 0; text-align: left; background: #eef1f5; z-index: 2; }
.protocols { columns: 2; font-size: 12px; padding-left: 0; list-style: none; }
.protocols li { break-inside: avoid; margin-bottom: 2px; }
.cell.brief { padding: 2px 14px; margin: 4px 0; }
.cell.brief p { margin: 2px 0; }
details.run-detail > summary { cursor: pointer; color: #3867d6; }
.st-passed { background: #dff3e3; }
.st-caught { background: #e3ecfb; }
.st-also { background: #eef0ff; }
.st-not-caught { background: #fafafa; color: #888; }
.st-missed { background: #fff0c2; font-weight: bold; }
.st-failed { background: #f9d6d5; font-weight: bold; }
.mark-met { background: #dff3e3; }
.mark-partial { background: #fff0c2; }
.mark-not-met { background: #f9d6d5; font-weight: bold; }
.mark-no-evidence { background: #eeeeee; }
.exposure { border-left: 4px solid #c0392b; padding: 4px 12px; margin: 10px 0; background: #fdf3f2; }
.exposure.untested { border-color: #d4a017; background: #fffaeb; }
.exposure.out-of-scope { border-color: #7f8c8d; background: #f6f7f8; }
.cell { border: 1px solid #d7dde6; border-radius: 6px; padding: 4px 14px 10px; margin: 14px 0; }
.cell:target { outline: 3px solid #3867d6; }
.status { padding: 1px 6px; border-radius: 4px; font-size: 12px; }
.violation { border-left: 4px solid #c0392b; padding: 2px 10px; margin: 6px 0; background: #fdf3f2; }
.verdicts td.VIOLATED { color: #c0392b; font-weight: bold; }
.not-exercised { color: #6c7a89; font-style: italic; }
.legend span { display: inline-block; margin-right: 14px; font-size: 12px; }
.legend i { display: inline-block; width: 14px; height: 10px; margin-right: 4px; vertical-align: middle; }
svg text { font: 11px system-ui, sans-serif; fill: #1d2430; }
svg.timeline, svg.chart { max-width: 100%; height: auto; }
svg .lane-bg { fill: #ffffff; stroke: #e3e7ee; }
svg .redis-bg { fill: #f7f3fc; }
svg .store-bg { fill: #f3f8f4; }
svg .lane-label { font-weight: 600; }
svg .axis line { stroke: #e9ecf1; }
svg .axis text { fill: #8792a2; font-size: 10px; }
svg .hold { fill: #5b8def; }
svg .hold-label, svg .redis-label { fill: #ffffff; font-size: 10px; font-weight: 600; }
svg .redis-hold { fill: #8e5bd6; }
svg .redis-end { stroke: #6d3fb0; stroke-width: 2; }
svg .redis-end.expired { stroke-dasharray: 3 2; }
svg .attempt { fill: #a0a8b5; }
svg .attempt.unknown, svg .attempt.failed { fill: #e67e22; }
svg .renew { stroke: #1e8449; stroke-width: 2; }
svg .renew.lost { stroke: #c0392b; stroke-width: 3; }
svg .release { fill: none; stroke: #1d2430; stroke-width: 1.5; }
svg .write circle { stroke: #1d2430; stroke-width: 1; }
svg .command { stroke: #566573; stroke-width: 1; }
svg .write.accepted circle, svg .store-write.accepted rect { fill: #27ae60; }
svg .write.rejected circle, svg .store-write.rejected rect { fill: #e74c3c; }
svg .write.done circle, svg .write.other circle, svg .store-write.done rect, svg .store-write.other rect { fill: #bdc3c7; }
svg .write.unknown circle, svg .write.failed circle { fill: #f39c12; }
svg .write-label { font-size: 10px; }
svg text.report { font-size: 9px; fill: #b9770e; font-style: italic; }
svg .write.rejected .write-label { fill: #c0392b; font-weight: 600; }
svg .fault { fill: #f5b041; opacity: 0.35; }
svg .fault.partition, svg .fault.drop { fill: #95a5a6; }
svg .fault.latency { fill: #d6eaf8; opacity: 0.6; }
svg .fault.global { fill: #e74c3c; opacity: 0.12; }
svg line.fault { stroke: #c0392b; stroke-width: 2; stroke-dasharray: 5 3; opacity: 0.9; }
svg .fault-label { font-size: 9px; fill: #7e5109; }
svg .crash { stroke: #c0392b; stroke-width: 3; }
svg .dead { fill: #2c3e50; opacity: 0.08; }
svg rect.in-slice, svg line.in-slice, svg path.in-slice { stroke: #c0392b; stroke-width: 3; }
svg g.in-slice circle, svg g.in-slice rect { stroke: #c0392b; stroke-width: 3; }
svg g.in-slice text { font-weight: 700; }
svg .grid line { stroke: #e9ecf1; }
svg .bar { fill: #5b8def; }
svg .series { fill: none; stroke-width: 2; }
svg .series.jitter { stroke: #27ae60; }
svg .series.no-jitter { stroke: #e74c3c; }
svg .series.dashed { stroke-dasharray: 5 3; }
svg .point.jitter { fill: #27ae60; }
svg .point.no-jitter { fill: #e74c3c; }
svg .chart-title { font-weight: 600; }
"#;

fn h(out: &mut String, s: &str) {
    out.push_str(s);
}

/// The page for `report`.
pub fn render(report: &Report) -> String {
    let mut out = String::with_capacity(1 << 20);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\" xmlns=\"http://www.w3.org/1999/xhtml\"><head><meta charset=\"utf-8\"/><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/><title>{}</title><style>{STYLE}</style></head>\n<body>\n",
        text(&report.title)
    );
    header(&mut out, report);
    summary(&mut out, report);
    matrix(&mut out, report);
    readiness(&mut out, report);
    mutants(&mut out, report);
    metrics(&mut out, report);
    scenarios(&mut out, report);
    let _ = write!(
        out,
        "<footer><p class=\"meta\">report schema version {} (sweep schema {}); the JSON next to this page holds everything shown here — re-render it with <code>redfence report --from report.json --out DIR</code>.</p></footer>\n</body></html>\n",
        report.schema_version, report.sweep.schema_version
    );
    out
}

fn header(out: &mut String, report: &Report) {
    let sweep = &report.sweep;
    let seeds = match report.kind {
        ReportKind::Sweep => format!(
            "{} per cell from seed {}{}",
            count(sweep.seeds, "seed"),
            sweep.seed_first,
            sweep
                .shard
                .map_or_else(String::new, |s| format!(", shard {s}"))
        ),
        ReportKind::Replay => format!("seed {}", sweep.seed_first),
    };
    let _ = writeln!(
        out,
        "<header><h1>{}</h1><p class=\"meta\">{} world · {seeds} · produced by <code>{}</code></p></header>",
        text(&report.title),
        sweep.world.name(),
        text(&report.command)
    );
    if let Some(provenance) = &sweep.provenance {
        h(out, "<dl class=\"environment\">");
        for (label, value) in provenance.facts() {
            let _ = write!(out, "<dt>{label}</dt><dd>{}</dd>", text(&value));
        }
        h(out, "</dl>");
    }
    h(out, "<nav id=\"toc\"><a href=\"#summary\">Before rollout</a><a href=\"#matrix\">Verdict matrix</a><a href=\"#readiness\">Rollout readiness</a><a href=\"#unprotected\">Unprotected</a><a href=\"#mutants\">Mutation score</a><a href=\"#metrics\">Metrics</a><a href=\"#scenarios\">Scenarios</a></nav>\n");
}

fn deployment_words(report: &Report) -> String {
    let d = &report.deployment;
    format!(
        "{} with fences from {} and {}{}",
        d.protocol,
        match d.fence_source {
            FenceSourceKind::RedisCounter => "the Redis counter",
            FenceSourceKind::Store => "the store's durable counter",
        },
        match d.replication {
            Replication::Async => "an asynchronously replicated Redis (a replica can be promoted)",
            Replication::None => "a single Redis server",
        },
        if d.assumed {
            " (assumed: say otherwise with --fences and --replication)"
        } else {
            ""
        }
    )
}

fn summary(out: &mut String, report: &Report) {
    let sweep = &report.sweep;
    let deployed = &report.deployment.protocol;
    let mine: Vec<&Cell> = sweep
        .cells
        .iter()
        .filter(|c| &c.protocol == deployed)
        .collect();
    let failed: Vec<&&Cell> = mine.iter().filter(|c| c.failed_runs > 0).collect();
    h(out, "<section id=\"summary\"><h2>Before rollout</h2><h3>Observed in this run</h3><ul class=\"observed\">");
    let idle = never_exercised(sweep, deployed);
    if failed.is_empty() {
        let _ = write!(
            out,
            "<li class=\"st-passed\"><strong>{}</strong> passed all {} it ran: no property was violated on any seed.</li>",
            text(deployed),
            count(mine.len() as u64, "scenario")
        );
    } else {
        let _ = write!(
            out,
            "<li class=\"st-failed\"><strong>{}</strong> FAILED {} of {} scenarios: ",
            text(deployed),
            failed.len(),
            mine.len()
        );
        let links: Vec<String> = failed
            .iter()
            .map(|c| {
                format!(
                    "<a href=\"#{}\">{}</a>",
                    cell_id(&c.scenario, &c.protocol),
                    text(&c.scenario)
                )
            })
            .collect();
        let _ = write!(
            out,
            "{} — each link shows the violation and its replay line.</li>",
            links.join(", ")
        );
    }
    if !idle.is_empty() {
        let _ = write!(
            out,
            "<li class=\"not-exercised\">Not exercised for <strong>{}</strong> by any scenario it ran (nothing to judge, so not counted as held): {}.</li>",
            text(deployed),
            text(&property_names(&idle))
        );
    }
    if !sweep.mutants.is_empty() {
        let promised: u64 = sweep.mutants.iter().map(|m| m.promised).sum();
        let caught: u64 = sweep.mutants.iter().map(|m| m.caught).sum();
        let class = if caught == promised {
            "st-caught"
        } else {
            "st-missed"
        };
        let _ = write!(
            out,
            "<li class=\"{class}\">The scenarios caught <strong>{caught} of {promised}</strong> promised mutant bugs (deliberately broken locks): the checks have teeth. See <a href=\"#mutants\">mutation score</a>.</li>"
        );
    }
    let items = &report.readiness.items;
    let met = items.iter().filter(|i| i.mark == Mark::Met).count();
    let exposed = report.readiness.exposed().len();
    let _ = write!(
        out,
        "<li class=\"{}\">Rollout readiness: <strong>{met} of {}</strong> checklist items met; <a href=\"#unprotected\"><strong>{exposed}</strong> failure scenario(s) left unprotected</a>, plus what this run could not test.</li></ul>",
        if exposed == 0 { "mark-met" } else { "mark-not-met" },
        items.len()
    );
    // What the run showed above, what it takes on the user's word here:
    // a verdict that rests on an undescribed deployment is never red.
    h(
        out,
        "<h3>Assumed about your deployment</h3><div class=\"assumed\">",
    );
    if report.deployment.assumed {
        h(out, "<p>Nothing: you did not describe your deployment, so no verdict on this page depends on it. Say where your fences come from and how your Redis is replicated (<code>--fences redis-counter|store</code>, <code>--replication async|none</code>) to have the fence-related items judged for it.</p>");
    } else {
        let _ = write!(
            out,
            "<p>As you described it: {}.</p>",
            text(&deployment_words(report))
        );
    }
    h(out, "</div>");
    let missing: Vec<_> = items.iter().filter(|i| i.mark != Mark::Met).collect();
    if !missing.is_empty() {
        h(out, "<h3>Evidence still missing</h3><ul class=\"missing\">");
        for item in missing {
            let _ = write!(
                out,
                "<li class=\"{}\"><strong>{}</strong> ({}): {}</li>",
                mark_class(item.mark),
                text(&item.title),
                item.mark.label(),
                text(&item.summary)
            );
        }
        h(out, "</ul>");
    }
    h(out, "<p><strong>How to read this page.</strong> A <em>scenario</em> is a scripted failure (a paused worker, a lost reply, a failover) run on many seeds; a <em>protocol</em> is a lock implementation — the one you ship must pass everywhere, the <em>mutants</em> are the same lock with one classic bug each, and a scenario built for a bug must catch it. The checker reads each run's recorded history and decides twelve safety and liveness properties; every failure names the seed and the one command that replays it exactly.</p></section>\n");
}

/// The short column head of protocol number `index` (`P0`, `P1`, …), resolved
/// by the legend under the matrix: full names would make it wider than a
/// laptop screen.
fn protocol_abbreviation(index: usize) -> String {
    format!("P{index}")
}

fn matrix(out: &mut String, report: &Report) {
    let sweep = &report.sweep;
    let _ = write!(
        out,
        "<section id=\"matrix\"><h2>Verdict matrix</h2><p>Rows are scenarios, columns protocols (named in the legend below); the world is <strong>{}</strong>. Click a cell for its detail.</p><div class=\"matrix-wrap\"><table class=\"matrix\"><thead><tr><th class=\"corner\">scenario</th>",
        sweep.world.name()
    );
    for (index, p) in sweep.protocols.iter().enumerate() {
        let _ = write!(
            out,
            "<th class=\"protocol\" title=\"{}: {}\">{}</th>",
            attr(&p.name),
            attr(&p.description),
            protocol_abbreviation(index)
        );
    }
    h(out, "</tr></thead><tbody>");
    for s in &sweep.scenarios {
        let _ = write!(
            out,
            "<tr><th><a href=\"#{}\">{}</a></th>",
            scenario_id(&s.name),
            text(&s.name)
        );
        for p in &sweep.protocols {
            match sweep.cell(&s.name, &p.name) {
                Some(cell) => {
                    let _ = write!(
                        out,
                        "<td class=\"{}\" data-scenario=\"{}\" data-protocol=\"{}\" data-world=\"{}\"><a href=\"#{}\">{}</a></td>",
                        cell_class(cell.status),
                        attr(&cell.scenario),
                        attr(&cell.protocol),
                        cell.world.name(),
                        cell_id(&cell.scenario, &cell.protocol),
                        text(&cell_mark(cell))
                    );
                }
                None => h(out, "<td>n/a</td>"),
            }
        }
        h(out, "</tr>");
    }
    h(
        out,
        "</tbody></table></div><ol class=\"protocols\" start=\"0\">",
    );
    for (index, p) in sweep.protocols.iter().enumerate() {
        let _ = write!(
            out,
            "<li><strong>{}</strong> <code>{}</code> — {}</li>",
            protocol_abbreviation(index),
            text(&p.name),
            text(&p.description)
        );
    }
    h(out, "</ol><p class=\"legend\"><span class=\"st-passed\">pass: no property violated</span> <span class=\"st-caught\">CAUGHT sN: the promised bug was found; seed N replays it</span> <span class=\"st-also\">also sN: not promised, failed anyway</span> <span class=\"st-not-caught\">-: not promised, not caught</span> <span class=\"st-missed\">MISSED: a promised catch did not happen</span> <span class=\"st-failed\">FAIL sN: a protocol that must pass failed on seed N</span></p></section>\n");
}

fn evidence_html(e: &Evidence) -> String {
    let status = e
        .status
        .map(|s| format!(" <span class=\"status {}\">{s:?}</span>", cell_class(s)))
        .unwrap_or_default();
    if e.status.is_some() {
        format!(
            "<li><a href=\"#{}\">{} × {}</a>{status}: {}</li>",
            cell_id(&e.scenario, &e.protocol),
            text(&e.scenario),
            text(&e.protocol),
            text(&e.text)
        )
    } else {
        format!(
            "<li>{} × {}: {}</li>",
            text(&e.scenario),
            text(&e.protocol),
            text(&e.text)
        )
    }
}

fn mark_class(mark: Mark) -> &'static str {
    match mark {
        Mark::Met => "mark-met",
        Mark::Partial => "mark-partial",
        Mark::NotMet => "mark-not-met",
        Mark::NoEvidence => "mark-no-evidence",
    }
}

fn readiness(out: &mut String, report: &Report) {
    let _ = write!(
        out,
        "<section id=\"readiness\"><h2>Rollout readiness</h2><p>The design article's pre-production list (“Before production, make sure the implementation has …”; in the article's original Indonesian: <em lang=\"id\">“Sebelum produksi, pastikan implementasi memiliki …”</em>), each item marked by evidence from this run for <strong>{}</strong>. An item is met only when every scenario that shows it ran and passed; the mutant catches listed show the check would notice the bug.</p><table class=\"checklist\"><thead><tr><th>item</th><th>the article's words (Indonesian)</th><th>mark</th><th>evidence</th></tr></thead><tbody>",
        text(&deployment_words(report))
    );
    if report.kind == ReportKind::Replay {
        h(out, "<tr><td colspan=\"4\" class=\"mark-no-evidence\">This is the report of one replayed seed, so most items have no evidence here: the checklist is meant for the full sweep (<code>redfence run --out DIR</code>).</td></tr>");
    }
    for item in &report.readiness.items {
        let evidence: String = item.evidence.iter().map(evidence_html).collect();
        let _ = write!(
            out,
            "<tr id=\"check-{}\" data-mark=\"{}\"><td><strong>{}</strong><br/>{}</td><td><em>{}</em></td><td class=\"{}\">{}</td><td><ul>{evidence}</ul></td></tr>",
            attr(&item.id),
            item.mark.label(),
            text(&item.title),
            text(&item.summary),
            text(&item.article),
            mark_class(item.mark),
            item.mark.label()
        );
    }
    h(out, "</tbody></table>");
    h(out, "<section id=\"unprotected\"><h3>Failure scenarios that remain unprotected</h3><p>As the article demands (“state explicitly the failure scenarios that are not yet protected”; in the original Indonesian: <em lang=\"id\">“nyatakan secara eksplisit skenario kegagalan yang belum terlindungi”</em>): what this deployment leaves open, what this run could not test, and what fencing cannot protect at all.</p>");
    for exposure in &report.readiness.unprotected {
        let (class, word) = match exposure.kind {
            ExposureKind::Exposed => ("exposed", "EXPOSED"),
            ExposureKind::Untested => ("untested", "untested"),
            ExposureKind::OutOfScope => ("out-of-scope", "out of scope"),
        };
        let evidence: String = exposure.evidence.iter().map(evidence_html).collect();
        let _ = write!(
            out,
            "<div class=\"exposure {class}\" data-kind=\"{class}\"><p><strong>{word}: {}</strong></p><p>{}</p><p>Closes it: {}</p>{}</div>",
            text(&exposure.failure),
            text(&exposure.why),
            text(&exposure.mitigation),
            if evidence.is_empty() {
                String::new()
            } else {
                format!("<p>Evidence:</p><ul>{evidence}</ul>")
            }
        );
    }
    h(out, "</section></section>\n");
}

fn mutants(out: &mut String, report: &Report) {
    let sweep = &report.sweep;
    h(out, "<section id=\"mutants\"><h2>Mutation score</h2>");
    if sweep.mutants.is_empty() {
        h(out, "<p>No mutant ran.</p></section>\n");
        return;
    }
    h(out, "<p>Each mutant is the reference lock with one classic bug. <em>promised</em>: scenarios built to catch it; <em>seeds to catch</em>: fewest seeds a promised scenario needed.</p><table class=\"mutants\"><thead><tr><th>mutant</th><th>what is broken</th><th>promised</th><th>caught</th><th>seeds to catch</th><th>also caught by</th></tr></thead><tbody>");
    for m in &sweep.mutants {
        let describe = sweep
            .protocols
            .iter()
            .find(|p| p.name == m.mutant)
            .map(|p| p.description.clone())
            .unwrap_or_default();
        let class = if m.caught == m.promised {
            "st-caught"
        } else {
            "st-missed"
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"{class}\">{}</td><td>{}</td><td>{}</td></tr>",
            text(&m.mutant),
            text(&describe),
            m.promised,
            m.caught,
            m.seeds_to_catch.map_or("-".to_owned(), |n| n.to_string()),
            text(&m.also_caught_by.join(", "))
        );
    }
    h(out, "</tbody></table></section>\n");
}

/// The record a cell shows: its first failure, else its first run.
fn shown(cell: &Cell) -> Option<(&RunRecord, &'static str)> {
    cell.first_failure
        .as_ref()
        .map(|r| (r, "first failure"))
        .or_else(|| cell.first_run.as_ref().map(|r| (r, "first run")))
}

fn metrics(out: &mut String, report: &Report) {
    let sweep = &report.sweep;
    let deployed = &report.deployment.protocol;
    let _ = write!(
        out,
        "<section id=\"metrics\"><h2>Metrics</h2><p>Figures of the first run of <strong>{}</strong> in each scenario (acquire outcomes, waits from first attempt to held, attempts per acquisition, hold durations, renewals, lease losses, fence rejections).</p><table class=\"metrics-all\"><thead><tr><th>scenario</th><th>acquired</th><th>contended</th><th>failed / unknown</th><th>gave up</th><th>attempts per acq.</th><th>wait p50 / p90 / p99 / max</th><th>hold p50 / max</th><th>renewals</th><th>lease losses</th><th>fence rejections</th><th>writes accepted</th></tr></thead><tbody>",
        text(deployed)
    );
    for s in &sweep.scenarios {
        let Some(record) = sweep
            .cell(&s.name, deployed)
            .and_then(|c| c.first_run.as_ref())
        else {
            continue;
        };
        let m = &record.metrics;
        let _ = write!(
            out,
            "<tr><td><a href=\"#{}\">{}</a></td><td>{}</td><td>{}</td><td>{} / {}</td><td>{}</td><td>{:.2}</td><td>{} / {} / {} / {} ms</td><td>{} / {} ms</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            cell_id(&s.name, deployed),
            text(&s.name),
            m.acquired,
            m.contended,
            m.acquire_failed,
            m.acquire_indeterminate,
            m.retry_later,
            m.attempts_per_acquisition,
            m.wait_ms_p50,
            m.wait_ms_p90,
            m.wait_ms_p99,
            m.wait_ms_max,
            m.hold_ms_p50,
            m.hold_ms_max,
            m.renewals,
            m.lease_losses,
            m.fence_rejections,
            m.writes_accepted
        );
    }
    h(out, "</tbody></table>");
    let hotspot = sweep
        .cell(HOTSPOT, deployed)
        .and_then(|c| c.first_run.as_ref());
    if hotspot.is_some() || report.hotspot_curve.is_some() {
        h(
            out,
            "<h3 id=\"hotspot\">Hotspot load</h3><div class=\"plots\">",
        );
        if let Some(record) = hotspot {
            hotspot_plots(out, record);
        }
        match &report.hotspot_curve {
            Some(curve) if !curve.is_empty() => {
                out.push_str(&curve_svg(curve));
                h(out, "<table class=\"curve\"><thead><tr><th>workers</th><th>jitter</th><th>seeds</th><th>wait p50</th><th>wait p99</th><th>attempts per acq.</th><th>acq./s</th><th>gave up</th></tr></thead><tbody>");
                for p in curve {
                    let _ = write!(
                        out,
                        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1} ms</td><td>{:.1} ms</td><td>{:.2}</td><td>{:.1}</td><td>{}</td></tr>",
                        p.workers,
                        if p.jitter { "full" } else { "none" },
                        p.seeds,
                        p.wait_ms_p50,
                        p.wait_ms_p99,
                        p.attempts_per_acquisition,
                        p.acquisitions_per_sec,
                        p.retry_later
                    );
                }
                h(out, "</tbody></table>");
            }
            _ => h(out, &format!("<p>The jitter curve was not measured in this run (<code>redfence run</code> measures it when {} runs in the simulation).</p>", names::scenario::HOTSPOT_LOAD)),
        }
        h(out, "</div>");
    }
    h(out, "</section>\n");
}

fn hotspot_plots(out: &mut String, record: &RunRecord) {
    if let Some(history) = &record.history {
        out.push_str(&histogram_svg(
            &waits_ms(history),
            &format!(
                "acquire wait distribution (seed {}, {} acquisitions)",
                record.seed, record.metrics.acquired
            ),
        ));
    }
    let per_worker: Vec<(String, f64)> = record
        .metrics
        .acquisitions_per_worker
        .iter()
        .map(|(w, n)| (w.clone(), *n as f64))
        .collect();
    out.push_str(&bars_svg(&per_worker, "acquisitions per worker (fairness)"));
}

fn scenarios(out: &mut String, report: &Report) {
    h(out, "<section id=\"scenarios\"><h2>Scenarios</h2>");
    for s in &report.sweep.scenarios {
        scenario(out, report, s);
    }
    h(out, "</section>\n");
}

fn scenario(out: &mut String, report: &Report, s: &ScenarioInfo) {
    let sweep = &report.sweep;
    let targets: Vec<&str> = s.targets.iter().map(|p| p.name()).collect();
    let _ = write!(
        out,
        "<section class=\"scenario\" id=\"{}\" data-scenario=\"{}\"><h3>{}</h3><p class=\"describe\">{}</p><p>Targets: {}.</p><table class=\"params\"><thead><tr><th>parameter</th><th>value</th><th>meaning</th></tr></thead><tbody>",
        scenario_id(&s.name),
        attr(&s.name),
        text(&s.name),
        text(&s.description),
        text(&targets.join(", "))
    );
    for p in &s.params {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            text(&p.name),
            text(&p.value),
            text(&p.doc)
        );
    }
    h(out, "</tbody></table>");
    for p in &sweep.protocols {
        if let Some(cell) = sweep.cell(&s.name, &p.name) {
            cell_detail(out, report, cell, &p.description);
        }
    }
    h(out, "</section>\n");
}

/// Whether a cell gets its full detail (tallies, timeline, verdicts): the
/// protocol the team ships, and every result that must not happen — a
/// must-pass protocol failing, a promised catch missed. Everything else is
/// one line (a mutant caught as promised names its finding and its replay
/// line), which keeps the page readable and small; its timeline is one
/// `redfence replay` away.
fn detailed(report: &Report, cell: &Cell) -> bool {
    cell.protocol == report.deployment.protocol || cell_bad(cell.status)
}

fn cell_detail(out: &mut String, report: &Report, cell: &Cell, describe: &str) {
    let _ = write!(
        out,
        "<article class=\"cell {}{}\" id=\"{}\" data-status=\"{:?}\"><h4>{} × {} <span class=\"status {}\">{}</span></h4>",
        cell_class(cell.status),
        if detailed(report, cell) { "" } else { " brief" },
        cell_id(&cell.scenario, &cell.protocol),
        cell.status,
        text(&cell.scenario),
        text(&cell.protocol),
        cell_class(cell.status),
        text(&cell_mark(cell)),
    );
    if !detailed(report, cell) {
        brief(out, cell);
        h(out, "</article>\n");
        return;
    }
    let _ = write!(
        out,
        "<p class=\"meta\">{} — {}</p><p>Expected: {}. Came out: <strong>{}</strong> ({} runs in the {} world, {} failing, {} errors{}).</p>",
        text(&cell.protocol),
        text(describe),
        text(&expectation_words(&cell.expectation)),
        cell_meaning(cell.status),
        cell.runs,
        cell.world.name(),
        cell.failed_runs,
        cell.errors,
        cell.first_failure
            .as_ref()
            .map_or_else(String::new, |r| format!("; first failing seed {}", r.seed))
    );
    h(out, "<table class=\"tallies\"><thead><tr><th>property</th><th>held</th><th>violated</th><th>undecided</th><th>not exercised</th></tr></thead><tbody>");
    for t in &cell.tallies {
        let _ = write!(
            out,
            "<tr><td title=\"{}\">{}</td><td>{}</td><td{}>{}</td><td>{}</td><td{}>{}</td></tr>",
            attr(t.property.description()),
            t.property.name(),
            t.held,
            if t.violated > 0 {
                " class=\"st-failed\""
            } else {
                ""
            },
            t.violated,
            t.undecided,
            if t.exercised() {
                ""
            } else {
                " class=\"not-exercised\""
            },
            t.not_exercised
        );
    }
    h(out, "</tbody></table>");
    // A replay's page is about its one run: its timeline is drawn even when
    // it passed.
    let replay = report.kind == ReportKind::Replay;
    match shown(cell) {
        // A failure is shown open; a passing run behind one click.
        Some((record, which)) if cell.first_failure.is_some() => {
            run_detail(out, record, which, true)
        }
        Some((record, which)) => {
            let _ = write!(
                out,
                "<details class=\"run-detail\"{}><summary>Verdicts of seed {} ({which}){}</summary>",
                if replay { " open=\"open\"" } else { "" },
                record.seed,
                if replay {
                    ""
                } else {
                    "; <code>redfence replay … --out DIR</code> draws its timeline"
                }
            );
            run_detail(out, record, which, replay);
            h(out, "</details>");
        }
        None => h(out, "<p class=\"meta\">No run was recorded.</p>"),
    }
    h(out, "</article>\n");
}

/// One line for a cell without full detail: what it found and how to
/// replay it, or that it passed.
fn brief(out: &mut String, cell: &Cell) {
    let Some(record) = &cell.first_failure else {
        let _ = write!(
            out,
            "<p>{}: {} runs, none failing.</p>",
            cell_meaning(cell.status),
            cell.runs
        );
        return;
    };
    let violated: Vec<_> = record
        .verdicts
        .iter()
        .filter(|v| v.status == Status::Violated)
        .collect();
    if let Some((first, rest)) = violated.split_first() {
        let others: Vec<&str> = rest.iter().map(|v| v.property.name()).collect();
        let _ = write!(
            out,
            "<p><strong>{}</strong> violated on seed {}: {}{}</p>",
            first.property.name(),
            record.seed,
            text(&first.explanation),
            if others.is_empty() {
                String::new()
            } else {
                format!(" Also violated: {}.", others.join(", "))
            }
        );
    }
    if let Some(error) = &record.error {
        let _ = write!(out, "<p class=\"violation\">Run: {}</p>", text(error));
    }
    let _ = write!(
        out,
        "<p class=\"meta\">{} of {} runs failing. Replay (timeline, slice, full event listing): <code class=\"replay\">{}</code></p>",
        cell.failed_runs,
        cell.runs,
        text(&record.replay)
    );
}

fn legend(out: &mut String) {
    h(out, "<p class=\"legend\"><span><i style=\"background:#5b8def\"></i>lease held (worker's view)</span><span><i style=\"background:#8e5bd6\"></i>lock holder (Redis server's view)</span><span><i style=\"background:#27ae60\"></i>write accepted (fN = fence)</span><span><i style=\"background:#e74c3c\"></i>write rejected as stale</span><span><i style=\"background:#1e8449;height:14px;width:3px\"></i>renewal</span><span><i style=\"background:#a0a8b5;width:3px\"></i>contended attempt</span><span><i style=\"background:#f5b041;opacity:0.5\"></i>pause</span><span><i style=\"background:#95a5a6;opacity:0.5\"></i>partition / lost replies</span><span><i style=\"background:#d6eaf8\"></i>added latency</span><span><i style=\"background:#e74c3c;opacity:0.3\"></i>Redis-wide fault</span><span><i style=\"background:#c0392b\"></i>crash (✕) · slice of a violation (red ring)</span></p>");
}

/// One run's detail; `timeline` draws its SVG timeline (a failure's; a
/// passing run's is one replay away).
fn run_detail(out: &mut String, record: &RunRecord, which: &str, timeline: bool) {
    let _ = write!(
        out,
        "<div class=\"run\" data-seed=\"{}\"><h5>Seed {} ({which})</h5>",
        record.seed, record.seed
    );
    if let Some(error) = &record.error {
        let _ = write!(out, "<p class=\"violation\">Run: {}</p>", text(error));
    }
    let mut highlight = Highlight::default();
    for v in &record.verdicts {
        highlight.add(&v.slice);
    }
    if let (true, Some(history)) = (timeline, &record.history) {
        out.push_str(&timeline_svg(history, &highlight));
        legend(out);
    }
    // What the servers did on their own (Sentinel's failover), passing run
    // or not: a team reads when the primary was marked down and what was
    // promoted at which offset without replaying.
    if let Some(history) = record
        .history
        .as_ref()
        .filter(|h| !h.server_events.is_empty())
    {
        h(out, "<ul class=\"server-events\">");
        for event in &history.server_events {
            let _ = write!(out, "<li>{} ms: {}</li>", event.at_ms, text(&event.what));
        }
        h(out, "</ul>");
    }
    h(out, "<table class=\"verdicts\"><thead><tr><th>property</th><th>verdict</th><th>explanation</th></tr></thead><tbody>");
    for v in &record.verdicts {
        let word = verdict_word(v.status);
        let class = verdict_class(v.status);
        let _ = write!(
            out,
            "<tr data-property=\"{}\"><td>{}</td><td class=\"{class}\">{word}</td><td>{}",
            v.property.name(),
            v.property.name(),
            text(&v.explanation)
        );
        if v.status == Status::Violated {
            h(out, "<div class=\"violation\"><p>Smallest slice of history that shows it:</p><ul class=\"slice\">");
            if let Some(history) = &record.history {
                for line in slice_lines(history, v) {
                    let _ = write!(out, "<li>{}</li>", text(&line));
                }
            }
            let _ = write!(
                out,
                "</ul><p>Replay this run exactly:</p><pre class=\"replay\"><code>{}</code></pre></div>",
                text(&record.replay)
            );
        }
        h(out, "</td></tr>");
    }
    h(out, "</tbody></table>");
    if record.verdicts.iter().all(|v| v.status != Status::Violated) {
        let _ = write!(
            out,
            "<p>Replay: <code class=\"replay\">{}</code></p>",
            text(&record.replay)
        );
    }
    run_metrics(out, record);
    if let Some(history) = &record.history {
        // The listing is the page's largest text by far; the replay line
        // above prints it.
        let _ = write!(
            out,
            "<p class=\"meta\">{} ops recorded; the replay line prints every one of them in time order.</p>",
            history.ops.len()
        );
    }
    h(out, "</div>");
}

fn run_metrics(out: &mut String, record: &RunRecord) {
    let m = &record.metrics;
    let rows: [(&str, String); 10] = [
        (
            "acquire outcomes",
            format!(
                "{} acquired, {} contended, {} failed, {} unknown",
                m.acquired, m.contended, m.acquire_failed, m.acquire_indeterminate
            ),
        ),
        (
            "jobs",
            format!("{} ({} gave up: retry later)", m.jobs, m.retry_later),
        ),
        (
            "attempts per acquisition",
            format!("{:.2}", m.attempts_per_acquisition),
        ),
        (
            "acquire wait",
            format!(
                "p50 {} ms, p90 {} ms, p99 {} ms, max {} ms",
                m.wait_ms_p50, m.wait_ms_p90, m.wait_ms_p99, m.wait_ms_max
            ),
        ),
        (
            "hold",
            format!("p50 {} ms, max {} ms", m.hold_ms_p50, m.hold_ms_max),
        ),
        ("renewals", m.renewals.to_string()),
        ("lease losses", m.lease_losses.to_string()),
        (
            "fence rejections",
            format!(
                "{} ({} writes accepted)",
                m.fence_rejections, m.writes_accepted
            ),
        ),
        (
            "acquisitions per second",
            format!("{:.1}", m.acquisitions_per_sec),
        ),
        (
            "acquisitions per worker",
            m.acquisitions_per_worker
                .iter()
                .map(|(w, n)| format!("{w}: {n}"))
                .collect::<Vec<_>>()
                .join(", "),
        ),
    ];
    h(out, "<table class=\"metrics\"><tbody>");
    for (name, value) in rows {
        let _ = write!(out, "<tr><th>{name}</th><td>{}</td></tr>", text(&value));
    }
    h(out, "</tbody></table>");
}

/// The slice of a verdict as lines a person reads.
pub fn slice_lines(history: &History, verdict: &redfence_history::Verdict) -> Vec<String> {
    let mut lines = Vec::new();
    for id in &verdict.slice.op_ids {
        if let Some(op) = history.op(*id) {
            lines.push(format!("op {}", op_words(op)));
        }
    }
    for o in &verdict.slice.ownership {
        let change = match &o.record.change {
            OwnershipChange::Set { owner } => format!("set by {}", owner_text(owner)),
            OwnershipChange::Overwritten { from, to } => {
                format!("overwritten {} → {}", owner_text(from), owner_text(to))
            }
            OwnershipChange::Expired { owner } => format!("expired ({})", owner_text(owner)),
            OwnershipChange::Deleted { owner } => format!("deleted ({})", owner_text(owner)),
            OwnershipChange::Lost { owner } => format!("lost ({})", owner_text(owner)),
        };
        lines.push(format!(
            "Redis {} at {} ms: {} {change}",
            o.record.server, o.record.at_ms, o.record.key
        ));
    }
    for f in &verdict.slice.fences {
        let outcome = match f.outcome {
            FenceOutcome::Accepted => "accepted",
            FenceOutcome::Stale => "rejected stale",
            FenceOutcome::NotFound => "not found",
            FenceOutcome::Duplicate => "duplicate",
        };
        lines.push(format!(
            "store seq {} at {} ms: fence {} by {}{}: {outcome}",
            f.seq,
            f.at_ms,
            f.fence,
            owner_text(&f.owner),
            f.job_id
                .as_deref()
                .map_or_else(String::new, |j| format!(" job {j}"))
        ));
    }
    lines
}
