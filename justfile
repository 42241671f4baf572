# Shortcuts only: the scripts are the source of truth, so CI (.ci/run) and
# `just` always run the same thing.

# Whole test suite, throwaway Redis/PostgreSQL servers included
test *ARGS:
    scripts/test {{ARGS}}

# The local container image the chaos crate's container provider runs
images:
    scripts/images

# Benchmarks against the same throwaway servers
bench:
    scripts/with-services cargo bench -p redfence-core
    cargo bench -p redfence-sim
    cargo bench -p redfence-scenarios

# The simulation's determinism and fault tests only
sim *ARGS:
    cargo test -p redfence-sim {{ARGS}}

# Interactive shell with the servers up and REDFENCE_* exported
services:
    scripts/with-services bash

# Format all crates
fmt:
    cargo fmt --all

# Lints, warnings as errors (scripts/test, and so CI, runs the same)
clippy:
    cargo clippy --workspace --all-targets -- -D warnings

# Every scenario against the reference and every mutant, in the simulation
run *ARGS:
    cargo run --release -- run {{ARGS}}

# One seed's timeline and verdicts, e.g. `just replay late-unlock --protocol del-unlock --seed 3`
replay *ARGS:
    cargo run --release -- replay {{ARGS}}

# Random fault schedules against a protocol, e.g. `just explore --time 5m`
explore *ARGS:
    cargo run --release -- explore {{ARGS}}
