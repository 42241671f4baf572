//! Small SVG charts for the metrics section: a histogram (acquire waits),
//! a bar chart (acquisitions per worker, for fairness) and the hotspot wait
//! curve (waits against workers, full jitter against none).
//!
//! Hand-drawn rather than a charting library because the page must be one
//! self-contained file and the charts are simple; every bar and point has a
//! class, `data-*` values and a `<title>` so a reader can hover for numbers.

use std::fmt::Write as _;

use redfence_history::curve::CurvePoint;
use redfence_history::history::{History, OkValue, OpKind, Outcome};

use crate::escape::{attr, text};

const CHART_W: f64 = 560.0;
const CHART_H: f64 = 220.0;
/// Left margin for the y axis labels.
const LEFT_W: f64 = 50.0;
/// Bottom margin for the x axis labels.
const BOTTOM_H: f64 = 36.0;
const TOP_H: f64 = 24.0;
/// Buckets of the wait histogram.
const BUCKETS: u64 = 12;

/// Acquire waits (first attempt of a job to the acquire that held) read
/// from a history: per worker, a wait starts at an acquire with no wait
/// open and ends when an acquire succeeds; a report closes it (gave up).
pub fn waits_ms(history: &History) -> Vec<u64> {
    let mut ops: Vec<_> = history.ops.iter().collect();
    ops.sort_by_key(|op| (op.worker.clone(), op.invoke_ms, op.id));
    let mut waits = Vec::new();
    let mut open: Option<(String, u64)> = None;
    for op in ops {
        if open.as_ref().is_some_and(|(w, _)| *w != op.worker) {
            open = None;
        }
        match (&op.kind, &op.outcome) {
            (OpKind::Acquire, outcome) => {
                let since = match &open {
                    Some((_, since)) => *since,
                    None => op.invoke_ms,
                };
                if let (Outcome::Ok(OkValue::Acquired { .. }), Some(done)) =
                    (outcome, op.complete_ms)
                {
                    waits.push(done.saturating_sub(since));
                    open = None;
                } else {
                    open = Some((op.worker.clone(), since));
                }
            }
            (OpKind::Report { .. }, _) => open = None,
            _ => {}
        }
    }
    waits
}

fn frame(out: &mut String, class: &str, label: &str, (y_max, ticks): (f64, u32), y_unit: &str) {
    let _ = writeln!(
        out,
        r#"<svg class="chart {class}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {CHART_W} {CHART_H}" width="{CHART_W}" height="{CHART_H}" role="img" aria-label="{l}"><text class="chart-title" x="{LEFT_W}" y="14">{t}</text>"#,
        l = attr(label),
        t = text(label),
    );
    let plot_h = CHART_H - TOP_H - BOTTOM_H;
    for i in 0..=ticks {
        let value = y_max * f64::from(i) / f64::from(ticks);
        let y = TOP_H + plot_h - plot_h * f64::from(i) / f64::from(ticks);
        // 2.5-steps give halves; everything else is whole.
        let value = if value.fract() == 0.0 {
            format!("{value:.0}")
        } else {
            format!("{value:.1}")
        };
        let _ = writeln!(
            out,
            r#"<g class="grid"><line x1="{LEFT_W}" x2="{x2}" y1="{y:.1}" y2="{y:.1}"/><text x="{tx}" y="{ty:.1}" text-anchor="end">{value}{y_unit}</text></g>"#,
            x2 = CHART_W - 10.0,
            tx = LEFT_W - 4.0,
            ty = y + 4.0,
        );
    }
}

/// An axis for values up to `max`: (top, tick count), the top a multiple
/// of a 1-2-2.5-5 step so every tick label is a round number; of 4 to 6
/// ticks, the count giving the tightest top wins.
fn axis(max: f64) -> (f64, u32) {
    if max <= 0.0 {
        return (1.0, 4);
    }
    let mut best = (f64::MAX, 4);
    for ticks in 4..=6u32 {
        let raw = max / f64::from(ticks);
        let magnitude = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 2.5, 5.0, 10.0]
            .iter()
            .map(|m| m * magnitude)
            .find(|&v| v >= raw)
            .unwrap_or(raw);
        let top = step * f64::from(ticks);
        if top < best.0 {
            best = (top, ticks);
        }
    }
    best
}

/// A histogram of `values_ms`.
pub fn histogram_svg(values_ms: &[u64], label: &str) -> String {
    let mut out = String::new();
    let max = values_ms.iter().copied().max().unwrap_or(0);
    let width_ms = (max / BUCKETS + 1).max(1);
    let mut counts = vec![0u64; BUCKETS as usize + 1];
    for &v in values_ms {
        counts[((v / width_ms) as usize).min(BUCKETS as usize)] += 1;
    }
    let y_axis = axis(counts.iter().copied().max().unwrap_or(0) as f64);
    let y_max = y_axis.0;
    frame(&mut out, "histogram", label, y_axis, "");
    let plot_w = CHART_W - LEFT_W - 10.0;
    let plot_h = CHART_H - TOP_H - BOTTOM_H;
    let bar_w = plot_w / counts.len() as f64;
    for (i, &count) in counts.iter().enumerate() {
        let from = i as u64 * width_ms;
        let h = plot_h * count as f64 / y_max;
        let x = LEFT_W + bar_w * i as f64;
        let _ = writeln!(
            out,
            r#"<rect class="bar" data-from-ms="{from}" data-count="{count}" x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}"><title>{count} waits of {from}–{to} ms</title></rect>"#,
            y = TOP_H + plot_h - h,
            w = (bar_w - 2.0).max(1.0),
            to = from + width_ms - 1,
        );
        if i % 2 == 0 {
            let _ = writeln!(
                out,
                r#"<text class="x-label" x="{x:.1}" y="{y:.1}">{from}</text>"#,
                y = TOP_H + plot_h + 14.0,
            );
        }
    }
    let _ = writeln!(
        out,
        r#"<text class="axis-title" x="{x:.1}" y="{y:.1}">wait (ms)</text></svg>"#,
        x = LEFT_W + plot_w / 2.0,
        y = CHART_H - 6.0,
    );
    out
}

/// Bars of (name, value), e.g. acquisitions per worker.
pub fn bars_svg(items: &[(String, f64)], label: &str) -> String {
    let mut out = String::new();
    let y_axis = axis(items.iter().map(|(_, v)| *v).fold(0.0, f64::max));
    let y_max = y_axis.0;
    frame(&mut out, "bars", label, y_axis, "");
    let plot_w = CHART_W - LEFT_W - 10.0;
    let plot_h = CHART_H - TOP_H - BOTTOM_H;
    let bar_w = plot_w / items.len().max(1) as f64;
    for (i, (name, value)) in items.iter().enumerate() {
        let h = plot_h * value / y_max;
        let x = LEFT_W + bar_w * i as f64;
        let _ = writeln!(
            out,
            r#"<rect class="bar" data-name="{n}" data-value="{value}" x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}"><title>{t}: {value}</title></rect><text class="x-label" x="{tx:.1}" y="{ty:.1}">{t}</text>"#,
            n = attr(name),
            t = text(name),
            y = TOP_H + plot_h - h,
            w = (bar_w - 4.0).max(1.0),
            tx = x + 2.0,
            ty = TOP_H + plot_h + 14.0,
        );
    }
    out.push_str("</svg>\n");
    out
}

/// The hotspot wait curve: p50 and p99 wait against workers, one series
/// with full jitter and one without.
pub fn curve_svg(curve: &[CurvePoint]) -> String {
    let mut out = String::new();
    let mut workers: Vec<usize> = curve.iter().map(|p| p.workers).collect();
    workers.sort_unstable();
    workers.dedup();
    let y_axis = axis(curve.iter().map(|p| p.wait_ms_p99).fold(0.0, f64::max));
    let y_max = y_axis.0;
    frame(
        &mut out,
        "curve",
        "acquire wait vs workers: full jitter against none (p99 solid, p50 dashed)",
        y_axis,
        "",
    );
    let plot_w = CHART_W - LEFT_W - 130.0;
    let plot_h = CHART_H - TOP_H - BOTTOM_H;
    let x_of = |w: usize| {
        let i = workers.iter().position(|&v| v == w).unwrap_or(0);
        LEFT_W + 20.0 + plot_w * i as f64 / (workers.len().max(2) - 1) as f64
    };
    let y_of = |v: f64| TOP_H + plot_h - plot_h * v / y_max;
    for w in &workers {
        let _ = writeln!(
            out,
            r#"<text class="x-label" x="{x:.1}" y="{y:.1}">{w}</text>"#,
            x = x_of(*w) - 4.0,
            y = TOP_H + plot_h + 14.0,
        );
    }
    for (jitter, series, name) in [
        (true, "jitter", "full jitter"),
        (false, "no-jitter", "no jitter"),
    ] {
        let mut points: Vec<&CurvePoint> = curve.iter().filter(|p| p.jitter == jitter).collect();
        points.sort_by_key(|p| p.workers);
        for (pct, dash) in [("p99", ""), ("p50", " dashed")] {
            let value = |p: &CurvePoint| {
                if pct == "p99" {
                    p.wait_ms_p99
                } else {
                    p.wait_ms_p50
                }
            };
            let path: Vec<String> = points
                .iter()
                .map(|p| format!("{:.1},{:.1}", x_of(p.workers), y_of(value(p))))
                .collect();
            let _ = writeln!(
                out,
                r#"<polyline class="series {series}{dash}" data-series="{series}-{pct}" points="{}"/>"#,
                path.join(" ")
            );
            for p in &points {
                let _ = writeln!(
                    out,
                    r#"<circle class="point {series}" data-workers="{w}" data-jitter="{jitter}" data-{pct}-ms="{v:.1}" cx="{x:.1}" cy="{y:.1}" r="3"><title>{name}, {w} workers: {pct} wait {v:.1} ms, {a:.2} attempts per acquisition, {r} gave up ({s} seeds)</title></circle>"#,
                    w = p.workers,
                    v = value(p),
                    x = x_of(p.workers),
                    y = y_of(value(p)),
                    a = p.attempts_per_acquisition,
                    r = p.retry_later,
                    s = p.seeds,
                );
            }
        }
    }
    let legend_x = CHART_W - 120.0;
    let _ = writeln!(
        out,
        r#"<g class="legend"><line class="series jitter" x1="{legend_x}" x2="{lx2}" y1="40" y2="40"/><text x="{tx}" y="44">full jitter</text><line class="series no-jitter" x1="{legend_x}" x2="{lx2}" y1="58" y2="58"/><text x="{tx}" y="62">no jitter</text></g><text class="axis-title" x="{ax:.1}" y="{ay:.1}">workers (wait in ms)</text></svg>"#,
        lx2 = legend_x + 20.0,
        tx = legend_x + 24.0,
        ax = LEFT_W + plot_w / 2.0,
        ay = CHART_H - 6.0,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_are_tight_and_round() {
        assert_eq!(axis(0.0), (1.0, 4));
        assert_eq!(axis(4.0), (4.0, 4));
        assert_eq!(axis(19.0), (20.0, 4));
        assert_eq!(axis(4_460.0), (5_000.0, 5));
    }
}
