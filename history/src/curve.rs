//! The hotspot wait curve: how acquire wait grows with contending workers,
//! with full jitter against none (the runner is `hotspot-load`'s
//! `wait_curve`; reports plot it and cite it as jitter evidence).

use serde::{Deserialize, Serialize};

/// One point of the wait curve: a worker count and a jitter setting,
/// averaged over seeds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// Workers contending.
    pub workers: usize,
    /// Full jitter or none.
    pub jitter: bool,
    /// Seeds averaged.
    pub seeds: u64,
    /// Mean of the runs' median wait.
    pub wait_ms_p50: f64,
    /// Mean of the runs' 99th-percentile wait.
    pub wait_ms_p99: f64,
    /// Mean attempts per acquisition.
    pub attempts_per_acquisition: f64,
    /// Mean acquisitions per second.
    pub acquisitions_per_sec: f64,
    /// Jobs that gave up (`retry-later`), summed.
    pub retry_later: u64,
}
