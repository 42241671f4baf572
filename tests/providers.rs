//! What a user sees when the real world's servers cannot be had: an
//! external server that does not answer, an image that was never built.
//! Each is one `error: …` line that names what to change, exit code 2,
//! before any run and within seconds (nothing is pulled from a registry).
//!
//! Needs a Docker engine (as `scripts/test` provides) for the image case.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Longest a refusal may take: a few bounded probes, no run.
const REFUSAL_LIMIT: Duration = Duration::from_secs(15);

fn redfence(args: &[&str], env: &[(&str, &str)]) -> (Output, Duration) {
    let started = Instant::now();
    let mut command = Command::new(env!("CARGO_BIN_EXE_redfence"));
    command.args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().expect("the binary runs");
    (output, started.elapsed())
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A loopback port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    port
}

const REAL_RUN: &[&str] = &[
    "run",
    "--world",
    "real",
    "--scenario",
    "mutual-exclusion",
    "--protocol",
    "reference",
];

#[test]
fn an_external_server_that_does_not_answer_is_named_with_its_variable() {
    let port = closed_port();
    let primary = format!("redis://127.0.0.1:{port}/");
    let (out, took) = redfence(
        REAL_RUN,
        &[
            ("REDFENCE_PROVIDER", "external"),
            ("REDFENCE_CHAOS_REDIS_PRIMARY_URL", &primary),
            (
                "REDFENCE_CHAOS_DATABASE_URL",
                "postgres://postgres@127.0.0.1:1/redfence",
            ),
        ],
    );
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(took < REFUSAL_LIMIT, "{took:?}");
    for needle in [
        "Redis primary",
        &format!("127.0.0.1:{port}"),
        "REDFENCE_CHAOS_REDIS_PRIMARY_URL",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from: {text}");
    }
}

#[test]
fn a_missing_image_names_the_script_that_builds_it_and_pulls_nothing() {
    let (out, took) = redfence(
        REAL_RUN,
        &[
            ("REDFENCE_PROVIDER", "containers"),
            ("REDFENCE_REDIS_IMAGE", "redfence/never-built:nothing"),
        ],
    );
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(took < REFUSAL_LIMIT, "{took:?}");
    for needle in [
        "redfence/never-built:nothing",
        "scripts/images",
        "REDFENCE_REDIS_IMAGE",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from: {text}");
    }
}

#[test]
fn the_run_timeout_is_refused_where_it_has_no_effect() {
    let (out, _) = redfence(&["run", "--run-timeout", "5"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--world real only"),
        "{}",
        stderr(&out)
    );
    let (zero, _) = redfence(&["run", "--world", "real", "--run-timeout", "0"], &[]);
    assert_eq!(zero.status.code(), Some(2));
    assert!(
        stderr(&zero).contains("at least 1 second"),
        "{}",
        stderr(&zero)
    );
}
