//! A run's history drawn as an SVG timeline.
//!
//! One lane per worker shows what the worker believed: lease-held bars from
//! a successful acquire to its release (or lost renewal, or crash), renewal
//! ticks, contended attempts, fenced writes marked accepted or rejected with
//! their fence numbers, pauses and other faults on that worker shaded, a
//! crash as a cross, and a job's bad ending (failed, ownership lost, retry
//! later) as a word. Below them, one lane per Redis server shows the
//! server's own view of who held the lock (from `redis_truth`), and a lane
//! for the store's fence log — so a reader sees at a glance a worker that
//! still believes it holds a lock Redis gave to someone else. Faults that hit
//! everyone (Redis stopped, replication cut) are shaded across all lanes.
//!
//! Every mark carries a class and `data-*` attributes (lane, owner, fence)
//! and a `<title>` tooltip, so the page explains itself on hover and tests
//! can find the marks by structure. Items in a verdict's slice get the class
//! `in-slice` and a ring.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use redfence_history::fault::Fault;
use redfence_history::history::{
    FenceOutcome, History, JobReport, OkValue, Op, OpKind, Outcome, OwnershipChange,
};
use redfence_history::verdict::{owner_text, HistorySlice};

use crate::escape::{attr, text};
use crate::labels::op_words;

/// Width of the lane labels.
const LABEL_W: f64 = 170.0;
/// Width of the time axis.
const PLOT_W: f64 = 940.0;
/// Right margin, room for the labels of marks at the very end.
const RIGHT_W: f64 = 120.0;
/// Height of one lane.
const LANE_H: f64 = 36.0;
/// Height of the axis strip at the top.
const AXIS_H: f64 = 26.0;
/// Most axis ticks drawn.
const TICKS_MAX: u64 = 12;

/// What the timeline highlights: the items of verdict slices.
#[derive(Clone, Debug, Default)]
pub struct Highlight {
    /// Op ids.
    pub ops: BTreeSet<u64>,
    /// `redis_truth` indices.
    pub ownership: BTreeSet<usize>,
    /// Fence-log seqs.
    pub fences: BTreeSet<i64>,
}

impl Highlight {
    /// Adds a verdict's slice.
    pub fn add(&mut self, slice: &HistorySlice) {
        self.ops.extend(slice.op_ids.iter().copied());
        self.ownership
            .extend(slice.ownership.iter().map(|o| o.index));
        self.fences.extend(slice.fences.iter().map(|f| f.seq));
    }
}

/// Maps time to x.
struct Scale {
    end_ms: u64,
}

impl Scale {
    fn x(&self, at_ms: u64) -> f64 {
        LABEL_W + (at_ms.min(self.end_ms) as f64) * PLOT_W / (self.end_ms.max(1) as f64)
    }
}

/// A fault on a timeline: a window (start..end) or a point.
struct FaultMark {
    start_ms: u64,
    end_ms: Option<u64>,
    /// Worker lane it belongs to; `None` shades every lane.
    worker: Option<String>,
    class: &'static str,
    label: String,
}

/// The timeline's class for a fault (its colour and its legend entry).
fn fault_class(fault: &Fault) -> &'static str {
    match fault {
        Fault::PauseWorker(_) => "pause",
        Fault::PartitionRedis(_) | Fault::PartitionStore(_) => "partition",
        Fault::DropRedisReplies(_) | Fault::DropStoreReplies(_) => "drop",
        Fault::StopRedis => "redis-down",
        Fault::CutReplication => "replication-cut",
        Fault::RedisLatency { .. } => "latency",
        Fault::CrashWorker(_) => "crash",
        Fault::FailOver => "failover",
        _ => "event",
    }
}

fn fault_marks(history: &History) -> Vec<FaultMark> {
    let mut marks: Vec<FaultMark> = Vec::new();
    for (i, record) in history.faults.iter().enumerate() {
        let fault = &record.fault;
        if fault.ends_window() {
            // An end (or a latency removal): drawn by the window it closes.
            continue;
        }
        let end_ms = fault.opens_window().then(|| {
            // The window closes at the first fault after it that ends it,
            // or stays open to the end of the run.
            history.faults[i + 1..]
                .iter()
                .find(|later| fault.closed_by(&later.fault))
                .map_or(history.end_ms, |later| later.at_ms)
        });
        marks.push(FaultMark {
            start_ms: record.at_ms,
            end_ms,
            worker: record.worker.clone(),
            class: fault_class(fault),
            label: record.what.clone(),
        });
    }
    // What the servers did on their own (a Sentinel's steps): a line over
    // every lane, as a fault that hits everyone.
    for event in &history.server_events {
        marks.push(FaultMark {
            start_ms: event.at_ms,
            end_ms: None,
            worker: None,
            class: "server-event",
            label: event.what.clone(),
        });
    }
    marks
}

/// Worker names in numeric order (`w2` before `w10`).
fn workers(history: &History) -> Vec<String> {
    let mut names: BTreeSet<String> = history.ops.iter().map(|op| op.worker.clone()).collect();
    names.extend(history.faults.iter().filter_map(|f| f.worker.clone()));
    let mut names: Vec<String> = names.into_iter().collect();
    names.sort_by_key(|n| {
        let digits: String = n.chars().filter(char::is_ascii_digit).collect();
        (digits.parse::<u64>().unwrap_or(u64::MAX), n.clone())
    });
    names
}

/// A held lease as the worker saw it.
struct HoldBar {
    op_id: u64,
    owner: String,
    fence: Option<i64>,
    start_ms: u64,
    end_ms: u64,
    ended_by: &'static str,
}

fn hold_bars(history: &History, worker: &str, crash_ms: Option<u64>) -> Vec<HoldBar> {
    let mut bars = Vec::new();
    // The worker's own ops only: a holding ends by what its holder does,
    // and owner tokens are not unique across workers under every protocol
    // (the static-owner mutant shares one).
    let mine: Vec<&Op> = history
        .ops
        .iter()
        .filter(|op| op.worker == worker)
        .collect();
    for op in &mine {
        let (Some(fence), Some(start_ms), Some(owner)) =
            (op.acquired_fence(), op.complete_ms, op.owner.as_deref())
        else {
            continue;
        };
        let mut end_ms = history.end_ms;
        let mut ended_by = "end of run";
        for other in mine
            .iter()
            .filter(|o| o.is_owner(owner) && o.invoke_ms >= start_ms && o.id != op.id)
        {
            let done = other.end_or(history.end_ms);
            let ends = match (&other.kind, &other.outcome) {
                (OpKind::Release, _) => Some("release"),
                (OpKind::Renew, Outcome::Ok(OkValue::RenewLost)) => Some("lease lost"),
                (OpKind::Write { .. }, Outcome::Ok(OkValue::WriteStale { .. })) => {
                    Some("write rejected")
                }
                _ => None,
            };
            if let Some(why) = ends {
                if done < end_ms {
                    end_ms = done;
                    ended_by = why;
                }
            }
        }
        if let Some(crash) = crash_ms.filter(|&c| c >= start_ms && c < end_ms) {
            end_ms = crash;
            ended_by = "crash";
        }
        bars.push(HoldBar {
            op_id: op.id,
            owner: owner.to_owned(),
            fence,
            start_ms,
            end_ms,
            ended_by,
        });
    }
    bars
}

/// Owner token → (worker, fence), for labelling the Redis lane. A token
/// several workers used (the static-owner mutant) is labelled with all of
/// them and no fence: the server cannot tell those holders apart.
fn owners(history: &History) -> BTreeMap<String, (String, Option<i64>)> {
    let mut seen: BTreeMap<&str, (BTreeSet<&str>, BTreeSet<i64>)> = BTreeMap::new();
    for op in &history.ops {
        if let (Some(owner), OpKind::Acquire) = (op.owner.as_deref(), &op.kind) {
            let entry = seen.entry(owner).or_default();
            entry.0.insert(&op.worker);
            if let Outcome::Ok(OkValue::Acquired { fence: Some(f) }) = &op.outcome {
                entry.1.insert(*f);
            }
        }
    }
    seen.into_iter()
        .map(|(owner, (workers, fences))| {
            let fence = match fences.len() {
                1 => fences.first().copied(),
                _ => None,
            };
            let workers: Vec<&str> = workers.into_iter().collect();
            (owner.to_owned(), (workers.join("/"), fence))
        })
        .collect()
}

fn slice_class(hit: bool) -> &'static str {
    if hit {
        " in-slice"
    } else {
        ""
    }
}

/// Draws one worker lane's marks.
fn worker_lane(
    out: &mut String,
    history: &History,
    scale: &Scale,
    worker: &str,
    top: f64,
    highlight: &Highlight,
    faults: &[FaultMark],
) {
    let mid = top + LANE_H / 2.0;
    let crash_ms = faults
        .iter()
        .find(|f| f.class == "crash" && f.worker.as_deref() == Some(worker))
        .map(|f| f.start_ms);
    let _ = writeln!(
        out,
        r#"<g class="lane worker" data-lane="{w}"><rect class="lane-bg" x="0" y="{top}" width="{width}" height="{LANE_H}"/><text class="lane-label" x="8" y="{ty}">worker {w}</text>"#,
        w = attr(worker),
        width = LABEL_W + PLOT_W + RIGHT_W,
        ty = mid + 4.0,
    );
    for fault in faults
        .iter()
        .filter(|f| f.worker.as_deref() == Some(worker) && f.end_ms.is_some())
    {
        let x0 = scale.x(fault.start_ms);
        let x1 = scale
            .x(fault.end_ms.unwrap_or(fault.start_ms))
            .max(x0 + 2.0);
        let _ = writeln!(
            out,
            r#"<rect class="fault {class}" data-lane="{w}" x="{x0:.1}" y="{y:.1}" width="{wd:.1}" height="{h:.1}"><title>{t} ({s}–{e} ms)</title></rect><text class="fault-label" x="{tx:.1}" y="{ty:.1}">{c}</text>"#,
            class = fault.class,
            w = attr(worker),
            y = top + 2.0,
            wd = x1 - x0,
            h = LANE_H - 4.0,
            t = text(&fault.label),
            s = fault.start_ms,
            e = fault.end_ms.unwrap_or(fault.start_ms),
            tx = x0 + 2.0,
            ty = top + 10.0,
            c = fault.class,
        );
    }
    for bar in hold_bars(history, worker, crash_ms) {
        let x0 = scale.x(bar.start_ms);
        let x1 = scale.x(bar.end_ms).max(x0 + 2.0);
        let fence = bar
            .fence
            .map_or_else(|| "none".to_owned(), |f| f.to_string());
        let _ = writeln!(
            out,
            r#"<rect class="hold{hit}" data-lane="{w}" data-owner="{o}" data-fence="{fence}" x="{x0:.1}" y="{y:.1}" width="{wd:.1}" height="12"><title>{w} holds the lease (owner {o}, fence {fence}) from {s} ms until {ended} at {e} ms</title></rect>"#,
            hit = slice_class(highlight.ops.contains(&bar.op_id)),
            w = attr(worker),
            o = attr(&owner_text(&bar.owner)),
            y = mid - 6.0,
            wd = x1 - x0,
            s = bar.start_ms,
            e = bar.end_ms,
            ended = bar.ended_by,
        );
        if x1 - x0 > 24.0 {
            let _ = writeln!(
                out,
                r#"<text class="hold-label" x="{:.1}" y="{:.1}">f{fence}</text>"#,
                x0 + 3.0,
                mid + 4.0
            );
        }
    }
    for op in history.ops.iter().filter(|op| op.worker == worker) {
        let at = op.complete_ms.unwrap_or(op.invoke_ms);
        let x = scale.x(at);
        let hit = slice_class(highlight.ops.contains(&op.id));
        let title = text(&op_words(op));
        match (&op.kind, &op.outcome) {
            (OpKind::Acquire, Outcome::Ok(OkValue::Acquired { .. })) => {}
            (OpKind::Acquire, outcome) => {
                let class = match outcome {
                    Outcome::Ok(_) => "contended",
                    Outcome::Fail(_) => "failed",
                    Outcome::Indeterminate(_) => "unknown",
                };
                let _ = writeln!(
                    out,
                    r#"<rect class="attempt {class}{hit}" data-lane="{w}" data-op="{id}" x="{x:.1}" y="{y:.1}" width="2" height="8"><title>{title}</title></rect>"#,
                    w = attr(worker),
                    id = op.id,
                    x = x - 1.0,
                    y = mid + 8.0,
                );
            }
            (OpKind::Renew, outcome) => {
                let class = match outcome {
                    Outcome::Ok(OkValue::Renewed) => "ok",
                    Outcome::Ok(OkValue::RenewLost) => "lost",
                    _ => "unknown",
                };
                let _ = writeln!(
                    out,
                    r#"<line class="renew {class}{hit}" data-lane="{w}" data-op="{id}" x1="{x:.1}" x2="{x:.1}" y1="{y0:.1}" y2="{y1:.1}"><title>{title}</title></line>"#,
                    w = attr(worker),
                    id = op.id,
                    y0 = mid - 10.0,
                    y1 = mid + 10.0,
                );
            }
            // A whole-worker lock's own command (renewal, release, read):
            // a short tick; what it did shows in the holding bars.
            (OpKind::Command, _) => {
                let _ = writeln!(
                    out,
                    r#"<line class="command{hit}" data-lane="{w}" data-op="{id}" x1="{x:.1}" x2="{x:.1}" y1="{y0:.1}" y2="{y1:.1}"><title>{title}</title></line>"#,
                    w = attr(worker),
                    id = op.id,
                    y0 = mid - 5.0,
                    y1 = mid + 5.0,
                );
            }
            (OpKind::Release, _) => {
                let _ = writeln!(
                    out,
                    r#"<path class="release{hit}" data-lane="{w}" data-op="{id}" d="M{x0:.1},{y0:.1} L{x:.1},{mid:.1} L{x0:.1},{y1:.1}"><title>{title}</title></path>"#,
                    w = attr(worker),
                    id = op.id,
                    x0 = x - 5.0,
                    y0 = mid - 6.0,
                    y1 = mid + 6.0,
                );
            }
            (OpKind::Write { fence, .. }, outcome) => {
                let (class, sign) = match outcome {
                    Outcome::Ok(OkValue::WriteAccepted) => ("accepted", "✓".to_owned()),
                    Outcome::Ok(OkValue::WriteStale { last_fence }) => {
                        ("rejected", format!("✗ (store at {last_fence})"))
                    }
                    Outcome::Ok(OkValue::AlreadyDone) => ("done", "already done".to_owned()),
                    Outcome::Ok(_) => ("other", "not found".to_owned()),
                    Outcome::Fail(_) => ("failed", "failed".to_owned()),
                    Outcome::Indeterminate(_) => ("unknown", "?".to_owned()),
                };
                let _ = writeln!(
                    out,
                    r#"<g class="write {class}{hit}" data-lane="{w}" data-op="{id}" data-fence="{fence}"><circle cx="{x:.1}" cy="{cy:.1}" r="5"/><text class="write-label" x="{tx:.1}" y="{ty:.1}">f{fence} {sign}</text><title>{title}</title></g>"#,
                    w = attr(worker),
                    id = op.id,
                    cy = mid - 10.0,
                    tx = x + 6.0,
                    ty = mid - 7.0,
                    sign = text(&sign),
                );
            }
            // A job's bad ending is part of the story (gave up, failed
            // closed, ownership lost); a success is already shown by its
            // accepted write.
            (OpKind::Report { outcome, .. }, _) if *outcome != JobReport::Success => {
                let _ = writeln!(
                    out,
                    r#"<text class="report{hit}" data-lane="{w}" data-op="{id}" x="{x:.1}" y="{y:.1}">{o}<title>{title}</title></text>"#,
                    w = attr(worker),
                    id = op.id,
                    y = top + LANE_H - 3.0,
                    o = text(outcome.name()),
                );
            }
            (OpKind::Report { .. }, _) => {}
        }
    }
    for fault in faults
        .iter()
        .filter(|f| f.worker.as_deref() == Some(worker) && f.end_ms.is_none())
    {
        let x = scale.x(fault.start_ms);
        if fault.class == "crash" {
            let _ = writeln!(
                out,
                r#"<rect class="dead" x="{x:.1}" y="{y:.1}" width="{wd:.1}" height="{h:.1}"/><path class="crash" data-lane="{w}" d="M{a:.1},{b:.1} L{c:.1},{d:.1} M{a:.1},{d:.1} L{c:.1},{b:.1}"><title>{t} at {s} ms</title></path>"#,
                y = top + 1.0,
                wd = (LABEL_W + PLOT_W - x).max(0.0),
                h = LANE_H - 2.0,
                w = attr(worker),
                a = x - 7.0,
                b = mid - 7.0,
                c = x + 7.0,
                d = mid + 7.0,
                t = text(&fault.label),
                s = fault.start_ms,
            );
        } else {
            let _ = writeln!(
                out,
                r#"<line class="fault {class}" data-lane="{w}" x1="{x:.1}" x2="{x:.1}" y1="{top:.1}" y2="{bottom:.1}"><title>{t} at {s} ms</title></line>"#,
                class = fault.class,
                w = attr(worker),
                bottom = top + LANE_H,
                t = text(&fault.label),
                s = fault.start_ms,
            );
        }
    }
    out.push_str("</g>\n");
}

/// Draws one Redis server's lane: who held the lock, by the server's log.
fn redis_lane(
    out: &mut String,
    history: &History,
    scale: &Scale,
    server: &str,
    top: f64,
    highlight: &Highlight,
) {
    let mid = top + LANE_H / 2.0;
    let names = owners(history);
    let _ = writeln!(
        out,
        r#"<g class="lane redis" data-lane="redis:{s}"><rect class="lane-bg redis-bg" x="0" y="{top}" width="{width}" height="{LANE_H}"/><text class="lane-label" x="8" y="{ty}">Redis {s} (server view)</text>"#,
        s = attr(server),
        width = LABEL_W + PLOT_W + RIGHT_W,
        ty = mid + 4.0,
    );
    // (owner, start, index of the record that started it)
    let mut open: Option<(String, u64, usize)> = None;
    let records = history.redis_truth.as_deref().unwrap_or_default();
    let segment = |out: &mut String, owner: &str, start: u64, end: u64, hit: bool, how: &str| {
        let (worker, fence) = names
            .get(owner)
            .map(|(w, f)| (w.clone(), *f))
            .unwrap_or_else(|| ("?".to_owned(), None));
        let fence = fence.map_or_else(|| "?".to_owned(), |f| f.to_string());
        let x0 = scale.x(start);
        let x1 = scale.x(end).max(x0 + 2.0);
        let _ = writeln!(
            out,
            r#"<rect class="redis-hold{hit}" data-lane="redis:{s}" data-worker="{w}" data-owner="{o}" x="{x0:.1}" y="{y:.1}" width="{wd:.1}" height="14"><title>Redis {s}: {w} (owner {o}, fence {fence}) holds the lock from {start} ms until {how} at {end} ms</title></rect>"#,
            hit = slice_class(hit),
            s = attr(server),
            w = attr(&worker),
            o = attr(&owner_text(owner)),
            y = mid - 7.0,
            wd = x1 - x0,
        );
        if x1 - x0 > 22.0 {
            let _ = writeln!(
                out,
                r#"<text class="redis-label" x="{:.1}" y="{:.1}">{} f{fence}</text>"#,
                x0 + 3.0,
                mid + 4.0,
                text(&worker)
            );
        }
    };
    for (index, record) in records.iter().enumerate() {
        if record.server != server {
            continue;
        }
        let hit = highlight.ownership.contains(&index);
        if let Some(ended) = record.change.ended_owner() {
            if let Some((owner, start, started_at)) = open.take() {
                let how = match &record.change {
                    OwnershipChange::Expired { .. } => "it expired",
                    OwnershipChange::Deleted { .. } => "a delete",
                    OwnershipChange::Lost { .. } => "the server lost it",
                    _ => "an overwrite",
                };
                let hit = hit || highlight.ownership.contains(&started_at);
                segment(out, &owner, start, record.at_ms, hit, how);
                let _ = ended;
            }
            let class = match &record.change {
                OwnershipChange::Expired { .. } => "expired",
                OwnershipChange::Deleted { .. } => "deleted",
                OwnershipChange::Lost { .. } => "lost",
                _ => "overwritten",
            };
            let x = scale.x(record.at_ms);
            let _ = writeln!(
                out,
                r#"<line class="redis-end {class}{h}" x1="{x:.1}" x2="{x:.1}" y1="{y0:.1}" y2="{y1:.1}"><title>{t} at {at} ms ({o})</title></line>"#,
                h = slice_class(hit),
                y0 = mid - 10.0,
                y1 = mid + 10.0,
                t = class,
                at = record.at_ms,
                o = attr(&owner_text(ended)),
            );
        }
        if let Some(started) = record.change.started_owner() {
            open = Some((started.to_owned(), record.at_ms, index));
        }
    }
    if let Some((owner, start, started_at)) = open {
        let hit = highlight.ownership.contains(&started_at);
        segment(
            out,
            &owner,
            start,
            history.end_ms,
            hit,
            "the end of the run",
        );
    }
    out.push_str("</g>\n");
}

/// Draws the store's fence log.
fn store_lane(out: &mut String, history: &History, scale: &Scale, top: f64, highlight: &Highlight) {
    let mid = top + LANE_H / 2.0;
    let _ = writeln!(
        out,
        r#"<g class="lane store" data-lane="store"><rect class="lane-bg store-bg" x="0" y="{top}" width="{width}" height="{LANE_H}"/><text class="lane-label" x="8" y="{ty}">store (fence log)</text>"#,
        width = LABEL_W + PLOT_W + RIGHT_W,
        ty = mid + 4.0,
    );
    for record in history.store_truth.iter().flatten() {
        let class = match record.outcome {
            FenceOutcome::Accepted => "accepted",
            FenceOutcome::Stale => "rejected",
            FenceOutcome::NotFound => "other",
            FenceOutcome::Duplicate => "done",
        };
        let x = scale.x(record.at_ms);
        let _ = writeln!(
            out,
            r#"<g class="store-write {class}{hit}" data-fence="{f}" data-seq="{seq}"><rect x="{x0:.1}" y="{y:.1}" width="8" height="8"/><text class="write-label" x="{tx:.1}" y="{ty:.1}">f{f}</text><title>store seq {seq} at {at} ms: fence {f} by {o}: {class}</title></g>"#,
            hit = slice_class(highlight.fences.contains(&record.seq)),
            f = record.fence,
            seq = record.seq,
            x0 = x - 4.0,
            y = mid - 4.0,
            tx = x + 5.0,
            ty = mid - 6.0,
            at = record.at_ms,
            o = attr(&owner_text(&record.owner)),
        );
    }
    out.push_str("</g>\n");
}

fn tick_step_ms(end_ms: u64) -> u64 {
    let raw = end_ms.max(1).div_ceil(TICKS_MAX);
    // A 1-2-5 step at or above the raw step.
    let mut step = 1;
    for _ in 0..20 {
        for m in [1, 2, 5] {
            if step * m >= raw {
                return step * m;
            }
        }
        step *= 10;
    }
    raw
}

/// The SVG timeline of `history`, highlighting `highlight`.
pub fn timeline_svg(history: &History, highlight: &Highlight) -> String {
    let scale = Scale {
        end_ms: history.end_ms,
    };
    let workers = workers(history);
    let servers: Vec<String> = match &history.redis_truth {
        Some(records) => {
            let mut seen: Vec<String> = Vec::new();
            for r in records {
                if !seen.contains(&r.server) {
                    seen.push(r.server.clone());
                }
            }
            if seen.is_empty() {
                seen.push("redis".to_owned());
            }
            seen
        }
        None => Vec::new(),
    };
    let lanes = workers.len() + servers.len().max(1) + 1;
    let height = AXIS_H + lanes as f64 * LANE_H + 4.0;
    let width = LABEL_W + PLOT_W + RIGHT_W;
    let faults = fault_marks(history);
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg class="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" aria-label="timeline of {n} workers over {end} ms" data-workers="{n}" data-end-ms="{end}">"#,
        n = workers.len(),
        end = history.end_ms,
    );
    let step = tick_step_ms(history.end_ms);
    let mut t = 0;
    for _ in 0..=TICKS_MAX + 1 {
        if t > history.end_ms {
            break;
        }
        let x = scale.x(t);
        let _ = writeln!(
            out,
            r#"<g class="axis"><line x1="{x:.1}" x2="{x:.1}" y1="{y0}" y2="{height}"/><text x="{x:.1}" y="14">{t} ms</text></g>"#,
            y0 = AXIS_H - 6.0,
        );
        t += step;
    }
    let mut top = AXIS_H;
    for worker in &workers {
        worker_lane(&mut out, history, &scale, worker, top, highlight, &faults);
        top += LANE_H;
    }
    if servers.is_empty() {
        let _ = writeln!(
            out,
            r#"<g class="lane redis" data-lane="redis:none"><text class="lane-label" x="8" y="{:.1}">Redis: this world keeps no server-side ownership log</text></g>"#,
            top + LANE_H / 2.0 + 4.0
        );
        top += LANE_H;
    }
    for server in &servers {
        redis_lane(&mut out, history, &scale, server, top, highlight);
        top += LANE_H;
    }
    store_lane(&mut out, history, &scale, top, highlight);
    // Faults that hit everyone, over every lane.
    for fault in faults.iter().filter(|f| f.worker.is_none()) {
        let x0 = scale.x(fault.start_ms);
        match fault.end_ms {
            Some(end) => {
                let x1 = scale.x(end).max(x0 + 2.0);
                let _ = writeln!(
                    out,
                    r#"<rect class="fault global {class}" x="{x0:.1}" y="{AXIS_H}" width="{wd:.1}" height="{h:.1}"><title>{t} ({s}–{end} ms)</title></rect><text class="fault-label" x="{tx:.1}" y="{ty:.1}">{t}</text>"#,
                    class = fault.class,
                    wd = x1 - x0,
                    h = height - AXIS_H - 4.0,
                    t = text(&fault.label),
                    s = fault.start_ms,
                    tx = x0 + 2.0,
                    ty = height - 8.0,
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    r#"<line class="fault global {class}" x1="{x0:.1}" x2="{x0:.1}" y1="{AXIS_H}" y2="{y:.1}"><title>{t} at {s} ms</title></line><text class="fault-label" x="{tx:.1}" y="{ty:.1}">{t}</text>"#,
                    class = fault.class,
                    y = height - 4.0,
                    t = text(&fault.label),
                    s = fault.start_ms,
                    tx = x0 + 2.0,
                    ty = height - 8.0,
                );
            }
        }
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(tick_step_ms(1_000), 100);
        assert_eq!(tick_step_ms(7_300), 1_000);
        assert_eq!(tick_step_ms(0), 1);
    }
}
