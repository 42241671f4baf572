//! Rendering tests on golden JSON inputs: the structure of what each format
//! shows (sections, matrix links, timeline lanes and marks, verdict details,
//! the readiness checklist, plots), not its bytes.

mod common;

use common::{by_id, find, golden, has_class, text_of, xml};
use redfence_history::sweep::CellStatus;
use redfence_reports::readiness::{ExposureKind, Mark};
use redfence_reports::{
    html, junit, markdown, render, Deployment, FenceSourceKind, Format, Replication, Report,
    ReportKind,
};

/// The article (cell detail) of `scenario` × `protocol`.
fn cell<'a, 'i>(
    doc: &'a roxmltree::Document<'i>,
    scenario: &str,
    protocol: &str,
) -> roxmltree::Node<'a, 'i> {
    by_id(doc, &redfence_reports::escape::cell_id(scenario, protocol))
}

#[test]
fn page_has_every_section_and_every_link_resolves() {
    let report = golden("sweep_report.json");
    let page = html::render(&report);
    let doc = xml(&page);
    for id in common::SECTIONS {
        let node = by_id(&doc, id);
        assert_eq!(node.tag_name().name(), "section", "#{id} is a section");
    }
    for s in &report.sweep.scenarios {
        let section = by_id(&doc, &redfence_reports::escape::scenario_id(&s.name));
        assert!(
            text_of(section).contains(&s.description),
            "{} explains itself",
            s.name
        );
        let params = find(section, "table", &["params"]);
        assert_eq!(
            find(params[0], "tr", &[]).len(),
            s.params.len() + 1,
            "{} lists its params",
            s.name
        );
    }
    let ids: std::collections::BTreeSet<&str> = doc
        .descendants()
        .filter_map(|n| n.attribute("id"))
        .collect();
    let links: Vec<&str> = doc
        .descendants()
        .filter_map(|n| n.attribute("href"))
        .collect();
    assert!(
        links.len() > 30,
        "the page links its parts ({} links)",
        links.len()
    );
    for href in links {
        let target = href
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("external link {href}"));
        assert!(ids.contains(target), "link {href} has no target");
    }
}

#[test]
fn matrix_has_a_linked_cell_per_scenario_protocol_world() {
    let report = golden("sweep_report.json");
    let page = html::render(&report);
    let doc = xml(&page);
    let matrix = find(by_id(&doc, "matrix"), "table", &["matrix"])[0];
    let cells: Vec<_> = find(matrix, "td", &[])
        .into_iter()
        .filter(|td| td.attribute("data-scenario").is_some())
        .collect();
    assert_eq!(cells.len(), report.sweep.cells.len());
    for td in cells {
        let (s, p) = (
            td.attribute("data-scenario").unwrap(),
            td.attribute("data-protocol").unwrap(),
        );
        assert_eq!(td.attribute("data-world"), Some("sim"));
        let link = find(td, "a", &[])[0];
        assert_eq!(
            link.attribute("href").unwrap(),
            format!("#{}", redfence_reports::escape::cell_id(s, p))
        );
        let expected = report.sweep.cell(s, p).unwrap();
        assert!(has_class(
            td,
            redfence_reports::labels::cell_class(expected.status)
        ));
    }
    let caught = by_id(&doc, "cell-stale-worker-pause--no-fence-check");
    assert_eq!(caught.attribute("data-status"), Some("Caught"));
}

#[test]
fn timeline_draws_worker_lanes_redis_view_and_fenced_writes() {
    // The step-level reference, deployed: under the harness's flow the
    // paused worker wakes and writes, and the store rejects it. (The
    // whole-worker reference, core's own Worker, sees its lease lost on
    // waking and writes nothing: no rejection to draw.)
    let mut report = golden("sweep_report.json");
    report.deployment.protocol = "reference-steps".to_owned();
    // Drawn as a replay's page draws: passing runs' timelines too.
    report.kind = ReportKind::Replay;
    let page = html::render(&report);
    let doc = xml(&page);
    let article = cell(&doc, "stale-worker-pause", "reference-steps");
    let svg = find(article, "svg", &["timeline"])[0];
    let workers: usize = svg.attribute("data-workers").unwrap().parse().unwrap();
    let lanes = find(svg, "g", &["lane", "worker"]);
    assert_eq!(lanes.len(), workers);
    assert!(workers >= 2);
    let lane_names: Vec<&str> = lanes
        .iter()
        .map(|l| l.attribute("data-lane").unwrap())
        .collect();
    assert_eq!(lane_names[..2], ["w0", "w1"]);
    assert_eq!(
        find(svg, "g", &["lane", "redis"]).len(),
        1,
        "one Redis server, one lane"
    );
    assert_eq!(find(svg, "g", &["lane", "store"]).len(), 1);
    // Lease bars on worker lanes and the server's own view of the holder.
    assert!(find(svg, "rect", &["hold"]).len() >= 3);
    let redis_holds = find(svg, "rect", &["redis-hold"]);
    assert!(redis_holds.len() >= 3);
    assert!(redis_holds.iter().all(|r| r
        .attribute("data-worker")
        .is_some_and(|w| w.starts_with('w'))));
    // The stale worker's write is rejected by the store, with its fence.
    let rejected = find(svg, "g", &["write", "rejected"]);
    assert_eq!(rejected.len(), 1);
    let fence = rejected[0].attribute("data-fence").unwrap();
    assert!(text_of(rejected[0]).contains(&format!("f{fence} ✗")));
    let reports = find(svg, "text", &["report"]);
    assert!(
        reports
            .iter()
            .any(|r| text_of(*r).starts_with("ownership-lost")),
        "the stale worker's job ends in ownership lost, and the lane says so"
    );
    let accepted = find(svg, "g", &["write", "accepted"]);
    assert!(!accepted.is_empty());
    assert!(accepted.iter().all(|w| text_of(*w).contains('✓')));
    // The pauses are shaded on the paused workers' lanes.
    let pauses = find(svg, "rect", &["fault", "pause"]);
    assert_eq!(pauses.len(), 2);
    assert_eq!(pauses[0].attribute("data-lane"), Some("w0"));
    assert!(
        !find(svg, "line", &["renew"]).is_empty() || !find(svg, "rect", &["attempt"]).is_empty()
    );
}

#[test]
fn timeline_marks_crashes_failover_and_redis_wide_faults() {
    let mut report = golden("sweep_report.json");
    // Drawn as a replay's page draws: passing runs' timelines too.
    report.kind = ReportKind::Replay;
    let page = html::render(&report);
    let doc = xml(&page);
    let crash = find(
        cell(&doc, "crash-after-acquire", "reference"),
        "svg",
        &["timeline"],
    )[0];
    let marks = find(crash, "path", &["crash"]);
    assert_eq!(marks.len(), 1);
    assert_eq!(marks[0].attribute("data-lane"), Some("w0"));
    assert_eq!(find(crash, "rect", &["dead"]).len(), 1);
    let latency = find(crash, "rect", &["fault", "latency"]);
    assert_eq!(latency.len(), 1, "added latency is a window on its worker");
    assert_eq!(latency[0].attribute("data-lane"), Some("w0"));

    let as_deployed = html::render(&golden_as_deployed("redis-counter-fences"));
    let counter_doc = xml(&as_deployed);
    let failover = find(
        cell(
            &counter_doc,
            "failover-counter-regression",
            "redis-counter-fences",
        ),
        "svg",
        &["timeline"],
    )[0];
    let servers: Vec<&str> = find(failover, "g", &["lane", "redis"])
        .iter()
        .map(|l| l.attribute("data-lane").unwrap())
        .collect();
    assert_eq!(
        servers,
        ["redis:redis", "redis:replica"],
        "primary and replica each show their view"
    );
    assert_eq!(
        find(failover, "rect", &["fault", "global", "replication-cut"]).len(),
        1
    );
    assert_eq!(
        find(failover, "line", &["fault", "global", "failover"]).len(),
        1
    );
    assert!(
        !find(failover, "rect", &["in-slice"]).is_empty(),
        "the violation's slice is ringed"
    );

    let down = find(
        cell(&doc, "redis-unavailable", "reference"),
        "svg",
        &["timeline"],
    )[0];
    assert_eq!(
        find(down, "rect", &["fault", "global", "redis-down"]).len(),
        1
    );
}

/// The golden sweep judged as if `protocol` were the one deployed: its
/// cells, caught mutants included, then get their full detail.
fn golden_as_deployed(protocol: &str) -> redfence_reports::Report {
    let report = golden("sweep_report.json");
    let deployment = redfence_reports::Deployment {
        protocol: protocol.to_owned(),
        ..report.deployment.clone()
    };
    report.with_deployment(deployment)
}

/// A mutant caught as promised, when it is not the protocol deployed, is
/// one line: the property it violated with the checker's words, on which
/// seed, and the replay line — no timeline, no tallies.
#[test]
fn an_expected_catch_is_one_line_with_its_replay() {
    let report = golden("sweep_report.json");
    let page = html::render(&report);
    let doc = xml(&page);
    let article = cell(&doc, "stale-worker-pause", "no-fence-check");
    assert!(has_class(article, "brief"));
    assert!(find(article, "svg", &[]).is_empty());
    assert!(find(article, "table", &[]).is_empty());
    let words = text_of(article);
    assert!(words.contains("fence-order violated on seed 0"), "{words}");
    assert!(words.contains("was accepted"), "{words}");
    assert!(
        words.contains("redfence replay stale-worker-pause --protocol no-fence-check --seed 0"),
        "{words}"
    );
}

#[test]
fn a_violation_shows_explanation_slice_and_replay_line() {
    let report = golden_as_deployed("no-fence-check");
    let page = html::render(&report);
    let doc = xml(&page);
    let article = cell(&doc, "stale-worker-pause", "no-fence-check");
    let row = find(article, "tr", &[])
        .into_iter()
        .find(|r| r.attribute("data-property") == Some("fence-order"))
        .expect("a fence-order verdict row");
    let violation = find(row, "div", &["violation"])[0];
    assert!(text_of(row).contains("VIOLATED"));
    assert!(
        text_of(row).contains("was accepted"),
        "the checker's explanation"
    );
    assert!(find(violation, "li", &[]).len() >= 2, "the slice");
    let replay = text_of(find(violation, "pre", &["replay"])[0]);
    assert!(
        replay.starts_with("redfence replay stale-worker-pause --protocol no-fence-check --seed 0")
    );
    // Passing cells of the protocol that ships still get their timeline;
    // passing mutant cells point there instead.
    assert_eq!(
        find(
            cell(&doc, "redis-unavailable", "unfenced-set-nx"),
            "svg",
            &[]
        )
        .len(),
        0
    );
}

#[test]
fn readiness_marks_redis_counter_with_async_replication_unprotected() {
    let report = golden("sweep_report.json");
    assert!(report.deployment.assumed);
    let page = html::render(&report);
    let doc = xml(&page);
    let rows = find(by_id(&doc, "readiness"), "tr", &[])
        .into_iter()
        .filter(|r| r.attribute("data-mark").is_some())
        .count();
    assert_eq!(rows, 9, "the article's nine pre-production items");
    let durable = by_id(&doc, "check-durable-monotonic-fencing");
    assert_eq!(durable.attribute("data-mark"), Some("NOT MET"));
    let exposed = find(by_id(&doc, "unprotected"), "div", &["exposure", "exposed"]);
    assert_eq!(exposed.len(), 1);
    let text = text_of(exposed[0]);
    assert!(text.contains("Redis counter as fence source with asynchronous replication"));
    let evidence = find(exposed[0], "a", &[])[0];
    assert_eq!(
        evidence.attribute("href"),
        Some("#cell-failover-counter-regression--redis-counter-fences")
    );
    assert!(text_of(evidence.parent().unwrap()).contains("caught as promised"));

    // With fences from the store, the exposure is gone and the item is met.
    let durable = Deployment {
        fence_source: FenceSourceKind::Store,
        replication: Replication::Async,
        assumed: false,
        ..report.deployment.clone()
    };
    let report = report.with_deployment(durable);
    let item = report
        .readiness
        .items
        .iter()
        .find(|i| i.id == "durable-monotonic-fencing")
        .unwrap();
    assert_eq!(item.mark, Mark::Met);
    assert!(report
        .readiness
        .unprotected
        .iter()
        .all(|e| e.kind != ExposureKind::Exposed));
    // Sim only: crash-and-failover is partial; what was not run is untested.
    let crash = report
        .readiness
        .items
        .iter()
        .find(|i| i.id == "crash-and-failover-tested")
        .unwrap();
    assert_eq!(crash.mark, Mark::Partial);
    assert!(report
        .readiness
        .unprotected
        .iter()
        .any(|e| e.kind == ExposureKind::Untested && e.failure.contains("mutual-exclusion")));
}

#[test]
fn hotspot_metrics_are_plotted() {
    let report = golden("hotspot_report.json");
    // Judged again, so the checklist is this code's, not the golden's.
    let deployment = report.deployment.clone();
    let report = report.with_deployment(deployment);
    let curve = report
        .hotspot_curve
        .as_ref()
        .expect("the golden run measured the curve");
    let page = html::render(&report);
    let doc = xml(&page);
    let metrics = by_id(&doc, "metrics");
    let histogram = find(metrics, "svg", &["chart", "histogram"])[0];
    let counted: u64 = find(histogram, "rect", &["bar"])
        .iter()
        .map(|b| b.attribute("data-count").unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(counted > 0, "the wait histogram counts acquisitions");
    let fairness = find(metrics, "svg", &["chart", "bars"])[0];
    assert_eq!(
        find(fairness, "rect", &["bar"]).len(),
        8,
        "one bar per worker"
    );
    let chart = find(metrics, "svg", &["chart", "curve"])[0];
    let series: Vec<&str> = find(chart, "polyline", &["series"])
        .iter()
        .map(|p| p.attribute("data-series").unwrap())
        .collect();
    assert_eq!(
        series,
        ["jitter-p99", "jitter-p50", "no-jitter-p99", "no-jitter-p50"]
    );
    assert_eq!(find(chart, "circle", &["point"]).len(), curve.len() * 2);
    let jitter = report
        .readiness
        .items
        .iter()
        .find(|i| i.id == "jittered-retries")
        .unwrap();
    assert!(jitter
        .evidence
        .iter()
        .any(|e| e.text.contains("with full jitter")));
    let contention = report
        .readiness
        .items
        .iter()
        .find(|i| i.id == "contention-metrics")
        .unwrap();
    assert_eq!(contention.mark, Mark::Met);
    assert!(contention
        .evidence
        .iter()
        .any(|e| e.text.contains("attempts per acquisition")
            && e.text.contains("acquisitions per worker")));
    assert!(text_of(metrics).contains("wait p50 / p90 / p99 / max"));
}

#[test]
fn html_is_self_contained_and_escapes_run_text() {
    let mut report = golden("sweep_report.json");
    report.sweep.scenarios[0].description = "<script>alert(1)</script> & \"quotes\"".to_owned();
    let page = html::render(&report);
    let doc = xml(&page);
    assert!(
        !page.contains("<script"),
        "no script, and run text cannot inject one"
    );
    for tag in ["link", "img", "iframe", "object", "embed"] {
        assert!(find(doc.root(), tag, &[]).is_empty(), "no <{tag}>");
    }
    for node in doc.descendants() {
        for a in ["src", "href"] {
            if let Some(v) = node.attribute(a) {
                assert!(v.starts_with('#'), "{a}={v} leaves the page");
            }
        }
    }
    let without_namespaces = page
        .replace("http://www.w3.org/2000/svg", "")
        .replace("http://www.w3.org/1999/xhtml", "");
    assert!(!without_namespaces.contains("http://") && !without_namespaces.contains("https://"));
    assert!(
        text_of(doc.root()).contains("<script>alert(1)</script>"),
        "shown as text"
    );
}

#[test]
fn markdown_summarises_for_a_pull_request() {
    let report = golden("sweep_report.json");
    let md = markdown::render(&report);
    assert!(md.starts_with("## redfence report"));
    assert!(md.contains("✅ **reference** passed all 4 scenarios"));
    assert!(md.contains(
        "| scenario | reference | reference-steps | no-fence-check | redis-counter-fences | \
         unfenced-set-nx |"
    ));
    assert!(md.contains("| stale-worker-pause | pass | pass | CAUGHT s0 | - | CAUGHT s0 |"));
    assert!(md.contains("### Rollout readiness"));
    assert!(md.contains("| Durable, monotonic fencing tokens | ❌ NOT MET |"));
    assert!(
        md.contains("- **EXPOSED**: Redis counter as fence source with asynchronous replication")
    );
    assert!(md.contains(
        "`redfence replay failover-counter-regression --protocol redis-counter-fences --seed 0"
    ));
    assert!(md.len() < redfence_reports::markdown::MARKDOWN_BYTES_MAX);
}

/// The golden sweep with the reference failing stale-worker-pause (the
/// mutant's failing run put in its place), for the failure paths.
fn with_failing_reference() -> Report {
    let mut report = golden("sweep_report.json");
    let failure = report
        .sweep
        .cell("stale-worker-pause", "no-fence-check")
        .unwrap()
        .first_failure
        .clone();
    let cell = report
        .sweep
        .cells
        .iter_mut()
        .find(|c| c.scenario == "stale-worker-pause" && c.protocol == "reference")
        .unwrap();
    cell.status = CellStatus::Failed;
    cell.failed_runs = 1;
    cell.first_failure = failure;
    let deployment = report.deployment.clone();
    report.with_deployment(deployment)
}

#[test]
fn junit_has_one_testcase_per_cell_and_fails_with_explanation_and_replay() {
    let report = golden("sweep_report.json");
    let xml_text = junit::render(&report);
    let doc = roxmltree::Document::parse(&xml_text).unwrap();
    let suites = doc.root_element();
    assert_eq!(suites.tag_name().name(), "testsuites");
    assert_eq!(suites.attribute("tests"), Some("20"));
    assert_eq!(
        suites.attribute("failures"),
        Some("0"),
        "caught mutants are passing tests"
    );
    assert_eq!(
        find(suites, "testcase", &[]).len(),
        report.sweep.cells.len()
    );
    assert_eq!(
        find(suites, "testsuite", &[]).len(),
        report.sweep.scenarios.len()
    );

    let failing = with_failing_reference();
    let xml_text = junit::render(&failing);
    let doc = roxmltree::Document::parse(&xml_text).unwrap();
    assert_eq!(doc.root_element().attribute("failures"), Some("1"));
    let failure = find(doc.root(), "failure", &[]);
    assert_eq!(failure.len(), 1);
    assert_eq!(failure[0].attribute("type"), Some("fence-order"));
    let case = failure[0].parent().unwrap();
    assert_eq!(
        case.attribute("classname"),
        Some("redfence.sim.stale-worker-pause")
    );
    assert!(case.attribute("name").unwrap().starts_with("reference"));
    let replay = &failing
        .sweep
        .cell("stale-worker-pause", "reference")
        .unwrap()
        .first_failure
        .as_ref()
        .unwrap()
        .replay;
    assert_eq!(
        failure[0].attribute("message"),
        Some(replay.as_str()),
        "the message is the replay line"
    );
    let body = failure[0].text().unwrap();
    assert!(body.contains("violates fence-order: "), "{body}");
    assert!(body.contains("was accepted"), "the explanation");
    assert!(body.contains("replay: redfence replay stale-worker-pause"));
}

#[test]
fn junit_fails_a_missed_catch_with_its_replay_line_and_passes_caught_mutants() {
    let mut report = golden("sweep_report.json");
    let (scenario, mutant) = ("stale-worker-pause", "no-fence-check");
    let cell = report
        .sweep
        .cells
        .iter_mut()
        .find(|c| c.scenario == scenario && c.protocol == mutant)
        .unwrap();
    cell.status = CellStatus::Missed;
    cell.seeds_to_catch = None;
    let first_run = cell.first_run.as_ref().unwrap().replay.clone();
    let deployment = report.deployment.clone();
    let report = report.with_deployment(deployment);
    let xml_text = junit::render(&report);
    let doc = roxmltree::Document::parse(&xml_text).unwrap();
    assert_eq!(doc.root_element().attribute("failures"), Some("1"));
    let failure = find(doc.root(), "failure", &[]);
    assert_eq!(failure.len(), 1, "only the miss fails");
    assert_eq!(failure[0].attribute("type"), Some("missed-catch"));
    assert_eq!(failure[0].attribute("message"), Some(first_run.as_str()));
    let case = failure[0].parent().unwrap();
    assert_eq!(case.attribute("name"), Some(mutant));
    let caught: Vec<_> = find(doc.root(), "testcase", &[])
        .into_iter()
        .filter(|c| {
            report
                .sweep
                .cell(
                    c.attribute("classname")
                        .unwrap()
                        .rsplit('.')
                        .next()
                        .unwrap(),
                    c.attribute("name").unwrap(),
                )
                .is_some_and(|cell| cell.status == CellStatus::Caught)
        })
        .collect();
    assert!(!caught.is_empty(), "the golden sweep has caught mutants");
    assert!(
        caught.iter().all(|c| find(*c, "failure", &[]).is_empty()),
        "expected catches stay passing testcases"
    );
}

/// What the reference's every run gives `unfenced-stale-write`: nothing to
/// judge (its writes carry fences). Each format must say so in its own way,
/// never as "held".
#[test]
fn not_exercised_is_shown_apart_from_held_in_every_format() {
    let report = golden("sweep_report.json");
    let property = "unfenced-stale-write";
    // JSON: the status and its own tally.
    let cell_data = report
        .sweep
        .cell("stale-worker-pause", "reference")
        .unwrap();
    let tally = cell_data
        .tallies
        .iter()
        .find(|t| t.property.name() == property)
        .unwrap();
    assert_eq!((tally.held, tally.not_exercised), (0, cell_data.runs));
    let json = serde_json::to_string(&report).unwrap();
    assert!(json.contains(r#""status":"not-exercised""#));
    assert!(json.contains(r#""not_exercised":1"#));

    // HTML: the verdict row, the tallies column and the summary.
    let page = html::render(&report);
    let doc = xml(&page);
    let article = cell(&doc, "stale-worker-pause", "reference");
    let row = find(article, "tr", &[])
        .into_iter()
        .find(|r| r.attribute("data-property") == Some(property))
        .expect("a verdict row per property");
    let word = find(row, "td", &["not-exercised"]);
    assert_eq!(word.len(), 1, "its own class, not held's");
    assert_eq!(text_of(word[0]), "not exercised");
    assert!(text_of(row).contains("nothing to judge"));
    let tallies = find(article, "table", &["tallies"])[0];
    assert!(text_of(tallies).contains("not exercised"));
    let summary = by_id(&doc, "summary");
    let idle = find(summary, "li", &["not-exercised"]);
    assert_eq!(idle.len(), 1);
    assert!(text_of(idle[0]).contains(property), "{}", text_of(idle[0]));
    assert!(text_of(summary).contains("no property was violated"));
    assert!(!text_of(summary).contains("every property held"));

    // Markdown and JUnit.
    let md = markdown::render(&report);
    assert!(md.contains("Not exercised for **reference**"), "{md}");
    assert!(md.contains(&format!("`{property}`")));
    assert!(!md.contains("every property held"));
    let xml_text = junit::render(&report);
    let doc = roxmltree::Document::parse(&xml_text).unwrap();
    let case = find(doc.root(), "testcase", &[])
        .into_iter()
        .find(|c| {
            c.attribute("classname") == Some("redfence.sim.stale-worker-pause")
                && c.attribute("name") == Some("reference")
        })
        .unwrap();
    let out = text_of(case);
    assert!(
        out.contains("not exercised (nothing to judge, not held): "),
        "{out}"
    );
    assert!(out.contains(property), "{out}");
}

/// The plain SET NX PX lock without fences: the report says its stale
/// write was accepted and the data corrupted, where it happened.
#[test]
fn an_unfenced_lock_is_reported_as_a_stale_write_accepted() {
    let report = golden_as_deployed("unfenced-set-nx");
    let page = html::render(&report);
    let doc = xml(&page);
    let article = cell(&doc, "stale-worker-pause", "unfenced-set-nx");
    let row = find(article, "tr", &[])
        .into_iter()
        .find(|r| r.attribute("data-property") == Some("unfenced-stale-write"))
        .unwrap();
    assert_eq!(text_of(find(row, "td", &["VIOLATED"])[0]), "VIOLATED");
    let words = text_of(row);
    assert!(words.contains("stale write accepted at "), "{words}");
    assert!(words.contains("no fence to stop it"), "{words}");
    assert!(words.contains("the data is corrupted"), "{words}");
    // Not blamed on a fence it never promised.
    let fail_closed = find(article, "tr", &[])
        .into_iter()
        .find(|r| r.attribute("data-property") == Some("fail-closed"))
        .unwrap();
    assert!(!text_of(fail_closed).contains("issued no fence"));
    let md = markdown::render(&report);
    assert!(
        md.contains("(CAUGHT s0): unfenced-stale-write VIOLATED: stale write accepted at "),
        "{md}"
    );
}

#[test]
fn a_failing_reference_is_called_out_everywhere() {
    let report = with_failing_reference();
    let page = html::render(&report);
    let doc = xml(&page);
    let summary = by_id(&doc, "summary");
    assert!(!find(summary, "li", &["st-failed"]).is_empty());
    assert!(text_of(summary).contains("FAILED 1 of 4"));
    assert!(report
        .readiness
        .unprotected
        .iter()
        .any(|e| e.failure == "stale-worker-pause: fence-order violated"));
    let item = report
        .readiness
        .items
        .iter()
        .find(|i| i.id == "fence-validated-by-storage")
        .unwrap();
    assert_eq!(item.mark, Mark::NotMet);
    assert!(markdown::render(&report)
        .contains("❌ **reference** FAILED 1 of 4 scenarios: `stale-worker-pause`"));
}

#[test]
fn json_round_trips_and_every_format_renders_from_it() {
    let report = golden("sweep_report.json");
    let files = render(&report, &Format::ALL);
    let names: Vec<&str> = files.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        ["report.html", "summary.md", "report.json", "junit.xml"]
    );
    let json = &files[2].1;
    let back = redfence_reports::parse(json, "report.json").unwrap();
    assert_eq!(back, report);
    assert_eq!(
        render(&back, &[Format::Html])[0].1,
        files[0].1,
        "HTML is a function of the JSON"
    );
    let value: serde_json::Value = serde_json::from_str(json).unwrap();
    for key in [
        "schema_version",
        "kind",
        "title",
        "command",
        "deployment",
        "sweep",
        "hotspot_curve",
        "readiness",
    ] {
        assert!(value.get(key).is_some(), "report.json has {key}");
    }
    assert_eq!(
        value["schema_version"],
        redfence_reports::REPORT_SCHEMA_VERSION
    );
}

#[test]
fn a_bare_sweep_renders_with_the_assumed_deployment() {
    let report = golden("bare_sweep.json");
    assert!(report.deployment.assumed);
    assert_eq!(report.deployment.protocol, "reference");
    let doc_text = html::render(&report);
    let doc = xml(&doc_text);
    assert_eq!(find(by_id(&doc, "matrix"), "td", &["st-passed"]).len(), 1);
    assert!(report
        .readiness
        .items
        .iter()
        .any(|i| i.mark == Mark::NoEvidence));
}

#[test]
fn a_world_without_a_server_log_says_so_in_the_redis_lane() {
    let mut report = golden("sweep_report.json");
    let target = report
        .sweep
        .cells
        .iter_mut()
        .find(|c| c.scenario == "stale-worker-pause" && c.protocol == "reference")
        .unwrap();
    let history = target
        .first_run
        .as_mut()
        .and_then(|r| r.history.as_mut())
        .unwrap();
    history.redis_truth = None;
    history.store_truth = None;
    // Drawn as a replay's page draws: passing runs' timelines too.
    report.kind = ReportKind::Replay;
    let page = html::render(&report);
    let doc = xml(&page);
    let svg = find(
        cell(&doc, "stale-worker-pause", "reference"),
        "svg",
        &["timeline"],
    )[0];
    let redis = find(svg, "g", &["lane", "redis"]);
    assert_eq!(redis.len(), 1);
    assert_eq!(redis[0].attribute("data-lane"), Some("redis:none"));
    assert!(text_of(redis[0]).contains("keeps no server-side ownership log"));
    assert!(find(svg, "rect", &["redis-hold"]).is_empty());
    assert!(
        !find(svg, "rect", &["hold"]).is_empty(),
        "the workers' view is still drawn"
    );
}

/// Nothing the user did not state turns a verdict red: judged for the
/// assumed deployment, fence durability is not marked NOT MET and no fence
/// exposure is claimed — the page says what to describe instead; described
/// as Redis-counter fences with a promotable replica, both are.
#[test]
fn no_red_verdict_comes_from_an_assumed_deployment() {
    let golden = golden("sweep_report.json");
    let sweep = golden.sweep.clone();
    let assumed = redfence_reports::Deployment::assumed_for(&sweep);
    assert!(assumed.assumed);
    let report = redfence_reports::Report::new(
        redfence_reports::ReportKind::Sweep,
        "redfence run",
        assumed.clone(),
        sweep.clone(),
        None,
    );
    let durable = |r: &redfence_reports::Report| {
        r.readiness
            .items
            .iter()
            .find(|i| i.id == "durable-monotonic-fencing")
            .expect("the item")
            .mark
    };
    assert_ne!(durable(&report), Mark::NotMet);
    assert!(report.readiness.exposed().is_empty());
    let page = html::render(&report);
    assert!(page.contains("Nothing: you did not describe your deployment"));
    let described = redfence_reports::Report::new(
        redfence_reports::ReportKind::Sweep,
        "redfence run --fences redis-counter --replication async",
        redfence_reports::Deployment {
            assumed: false,
            ..assumed
        },
        sweep,
        None,
    );
    assert_eq!(durable(&described), Mark::NotMet);
    assert_eq!(described.readiness.exposed().len(), 1);
    assert!(html::render(&described).contains("As you described it"));
}

/// What the servers did on their own (a Sentinel failover) is listed under
/// the run, passing or not, and marked on its timeline.
#[test]
fn server_events_are_listed_and_drawn() {
    let mut report = golden("sweep_report.json");
    report.kind = ReportKind::Replay;
    let cell_of = report
        .sweep
        .cells
        .iter_mut()
        .find(|c| c.scenario == "failover-counter-regression" && c.protocol == "reference")
        .expect("the golden cell");
    let history = cell_of
        .first_run
        .as_mut()
        .and_then(|r| r.history.as_mut())
        .expect("a first run with a history");
    history.server_events.push(redfence_history::ServerEvent {
        at_ms: 1_234,
        what: "Sentinel: promoted redis-replica (127.0.0.1:7001) at replication offset 42".into(),
    });
    let page = html::render(&report);
    let doc = xml(&page);
    let article = cell(&doc, "failover-counter-regression", "reference");
    let listed = find(article, "ul", &["server-events"]);
    assert_eq!(listed.len(), 1);
    assert!(
        text_of(listed[0]).contains("1234 ms: Sentinel: promoted redis-replica"),
        "{}",
        text_of(listed[0])
    );
    let svg = find(article, "svg", &["timeline"])[0];
    assert_eq!(
        find(svg, "line", &["fault", "global", "server-event"]).len(),
        1
    );
}

/// For Redlock, the unprotected list says which debated faults a fence
/// makes harmless and which only delayed restart prevents, citing the
/// fenced Redlock passing and the unfenced one caught.
#[test]
fn readiness_says_what_fences_and_delayed_restart_close_for_redlock() {
    let report = golden("redlock_report.json");
    assert_eq!(report.deployment.protocol, "redlock-fenced");
    let redlock: Vec<_> = report
        .readiness
        .unprotected
        .iter()
        .filter(|e| e.failure.starts_with("Redlock: "))
        .collect();
    assert_eq!(redlock.len(), 2, "{redlock:?}");
    let (fenced, restart) = (redlock[0], redlock[1]);
    assert!(fenced.mitigation.contains("fence checked by the store"));
    assert!(restart.mitigation.contains("delayed"));
    assert!(restart.mitigation.contains("at least the longest lease"));
    for exposure in [fenced, restart] {
        assert_eq!(exposure.kind, ExposureKind::OutOfScope);
        for e in &exposure.evidence {
            let expected = if e.protocol == "redlock" {
                CellStatus::Caught
            } else {
                CellStatus::Passed
            };
            assert_eq!(e.status, Some(expected), "{e:?}");
        }
    }
    assert_eq!(fenced.evidence.len(), 4);
    let page = html::render(&report);
    let doc = xml(&page);
    let text = text_of(by_id(&doc, "unprotected"));
    assert!(
        text.contains("a master that restarts and forgets"),
        "{text}"
    );
}
