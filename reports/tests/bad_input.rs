//! Bad input gives a clear, typed error: malformed JSON names the line and
//! column, a newer schema says which document is newer and what to do, JSON
//! that is neither a report nor a sweep says what was expected.

use redfence_reports::{parse, ReportError, REPORT_SCHEMA_VERSION};

fn golden_text(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/golden/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

#[test]
fn malformed_json_names_the_place() {
    let error = parse("{\n  \"schema_version\": 1,\n  oops\n}", "run.json").unwrap_err();
    let ReportError::Malformed { line, column, .. } = &error else {
        panic!("expected Malformed, got {error:?}");
    };
    assert_eq!((*line, *column), (3, 3));
    let message = error.to_string();
    assert!(
        message.starts_with("run.json is not valid JSON (line 3, column 3)"),
        "{message}"
    );
    // A truncated file (a run killed while writing) is malformed too.
    let text = golden_text("bare_sweep.json");
    let error = parse(&text[..text.len() / 2], "cut.json").unwrap_err();
    assert!(matches!(error, ReportError::Malformed { .. }), "{error:?}");
}

#[test]
fn a_newer_report_schema_is_refused() {
    let mut value: serde_json::Value =
        serde_json::from_str(&golden_text("sweep_report.json")).unwrap();
    value["schema_version"] = serde_json::json!(REPORT_SCHEMA_VERSION + 1);
    let error = parse(&value.to_string(), "new.json").unwrap_err();
    let ReportError::NewerSchema {
        document,
        found,
        supported,
        ..
    } = &error
    else {
        panic!("expected NewerSchema, got {error:?}");
    };
    assert_eq!(
        (*document, *found, *supported),
        ("report", 2, REPORT_SCHEMA_VERSION)
    );
    let message = error.to_string();
    assert!(
        message.contains("newer than the 1 this redfence reads"),
        "{message}"
    );
}

#[test]
fn a_newer_sweep_schema_is_refused_inside_a_report_and_bare() {
    let mut value: serde_json::Value =
        serde_json::from_str(&golden_text("sweep_report.json")).unwrap();
    value["sweep"]["schema_version"] = serde_json::json!(7);
    let error = parse(&value.to_string(), "r.json").unwrap_err();
    assert!(
        matches!(
            error,
            ReportError::NewerSchema {
                document: "sweep",
                found: 7,
                ..
            }
        ),
        "{error:?}"
    );
    let mut bare: serde_json::Value =
        serde_json::from_str(&golden_text("bare_sweep.json")).unwrap();
    bare["schema_version"] = serde_json::json!(9);
    let error = parse(&bare.to_string(), "s.json").unwrap_err();
    assert!(
        matches!(
            error,
            ReportError::NewerSchema {
                document: "sweep",
                found: 9,
                ..
            }
        ),
        "{error:?}"
    );
}

#[test]
fn an_older_sweep_schema_is_refused_with_what_to_do() {
    // Version 2 counted a property nothing exercised as held; reading it
    // as version 3 would keep that lie, so it is refused too.
    for old in [1, 2] {
        let mut bare: serde_json::Value =
            serde_json::from_str(&golden_text("bare_sweep.json")).unwrap();
        bare["schema_version"] = serde_json::json!(old);
        let error = parse(&bare.to_string(), "old.json").unwrap_err();
        assert!(
            matches!(
                error,
                ReportError::OlderSchema {
                    document: "sweep",
                    found,
                    supported: 3,
                    ..
                } if found == old
            ),
            "{error:?}"
        );
        assert!(error.to_string().contains("re-run the sweep"), "{error}");
    }
    let mut report: serde_json::Value =
        serde_json::from_str(&golden_text("sweep_report.json")).unwrap();
    report["sweep"]["schema_version"] = serde_json::json!(1);
    let error = parse(&report.to_string(), "old-report.json").unwrap_err();
    assert!(
        matches!(error, ReportError::OlderSchema { found: 1, .. }),
        "{error:?}"
    );
}

#[test]
fn json_that_is_not_a_report_says_what_was_expected() {
    for text in ["[1, 2]", "{\"a\": 1}", "\"report\"", "{\"sweep\": {}}"] {
        let error = parse(text, "x.json").unwrap_err();
        assert!(
            matches!(error, ReportError::NotAReport { .. }),
            "{text}: {error:?}"
        );
        assert!(error.to_string().contains("neither a redfence report"));
    }
}

#[test]
fn a_report_that_does_not_match_the_schema_is_a_schema_error() {
    let text = r#"{"schema_version": 1, "sweep": {"schema_version": 3, "cells": "no"}}"#;
    let error = parse(text, "odd.json").unwrap_err();
    assert!(
        matches!(
            error,
            ReportError::Schema {
                document: "report",
                version: 1,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error
        .to_string()
        .starts_with("odd.json does not match the report schema (version 1)"));
}
