//! What the report tests share: the golden inputs and an XML view of the
//! rendered HTML.
//!
//! The golden inputs in `tests/golden/` are real outputs of the CLI
//! (regenerate them after a schema change with):
//!
//! ```sh
//! redfence run --scenario stale-worker-pause --scenario failover-counter-regression \
//!   --scenario crash-after-acquire --scenario redis-unavailable --protocol reference \
//!   --protocol reference-steps --protocol no-fence-check --protocol redis-counter-fences \
//!   --protocol unfenced-set-nx --seeds 1 --out report/ --format json
//! redfence run --scenario hotspot-load --protocol reference --seeds 1 --curve-seeds 1 \
//!   --out report/ --format json
//! redfence run --scenario crash-after-acquire --protocol reference --seeds 1 --json bare.json
//! redfence run --scenario redlock-pause --scenario redlock-master-restart \
//!   --protocol redlock-fenced --protocol redlock --seeds 1 --curve-seeds 0 --out report/ \
//!   --format json
//! ```
//!
//! (each in a folder of its own; `sweep_report.json` = the first one's
//! report/report.json, `hotspot_report.json` = the second one's,
//! `bare_sweep.json` = bare.json, `redlock_report.json` = the last one's
//! report/report.json; compacted to one line.)

#![allow(dead_code)]

use redfence_reports::{parse, Report};

/// The ids of the page's top-level sections.
pub const SECTIONS: [&str; 7] = [
    "summary",
    "matrix",
    "readiness",
    "unprotected",
    "mutants",
    "metrics",
    "scenarios",
];

/// A golden input by file name.
pub fn golden(name: &str) -> Report {
    let path = format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    parse(&text, &path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Whether `node` has `class` among its classes.
pub fn has_class(node: roxmltree::Node<'_, '_>, class: &str) -> bool {
    node.attribute("class")
        .is_some_and(|c| c.split_whitespace().any(|c| c == class))
}

/// Descendants of `node` named `tag` with every class in `classes`.
pub fn find<'a, 'i>(
    node: roxmltree::Node<'a, 'i>,
    tag: &str,
    classes: &[&str],
) -> Vec<roxmltree::Node<'a, 'i>> {
    node.descendants()
        .filter(|n| n.is_element() && n.tag_name().name() == tag)
        .filter(|n| classes.iter().all(|c| has_class(*n, c)))
        .collect()
}

/// The element with `id`.
pub fn by_id<'a, 'i>(doc: &'a roxmltree::Document<'i>, id: &str) -> roxmltree::Node<'a, 'i> {
    doc.descendants()
        .find(|n| n.attribute("id") == Some(id))
        .unwrap_or_else(|| panic!("no element with id {id:?}"))
}

/// All text under `node`.
pub fn text_of(node: roxmltree::Node<'_, '_>) -> String {
    node.descendants()
        .filter(|n| n.is_text())
        .filter_map(|n| n.text())
        .collect()
}

/// Parses HTML the report wrote (it is well-formed XML by design).
pub fn xml(html: &str) -> roxmltree::Document<'_> {
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    roxmltree::Document::parse_with_options(html, options)
        .unwrap_or_else(|e| panic!("the HTML is not well-formed: {e}"))
}
