//! `renewal-safety`: a renew never extends another owner's lock, and renewal
//! stops at the maximum hold time or renewal count.
//!
//! Three rules:
//!
//! 1. **No extending another owner's key** (from the Redis ownership log).
//!    When owner `X`'s key expires at `t`, `X` was entitled to it until
//!    `max(set, last own extension) + lease + tolerance`, where an own
//!    extension is any `Acquire` by token `X` (a library may set, confirm
//!    and give back a lease inside one acquire that answers "contended"), or
//!    a `Renew` by `X` that was confirmed or is indeterminate (its command
//!    may have run), or a whole-worker lock's `Command` carrying `X`,
//!    invoked by `t`; an acquire that did not answer
//!    "acquired" may have left commands in flight and counts as unanswered;
//!    each is timed at
//!    its completion, the latest moment its command can have run (or `t` if
//!    it never completed). A key that outlives that was extended by someone
//!    else. Only expiries show a deadline, so a key deleted or overwritten
//!    first is not judged here.
//! 2. **Bounded renewal** (from ops). Each confirmed `Renew` belongs to the
//!    latest successful `Acquire` by the same worker and token completed
//!    before it. Per acquisition at most `renewals_max` confirmed renews, and
//!    none invoked later than the acquire's completion + `hold_ms_max` +
//!    tolerance. (The completion is the latest moment the client can have
//!    started counting its hold time, so the bound has no false alarms.)
//!
//! 3. **A confirmed renew had a lock of its own** (from the Redis ownership
//!    log). A `Renew` by token `X` answered `Renewed` must overlap, on some
//!    server, a holding of the key by `X` — from its `Set` until its end, or
//!    the end of the run. A renew confirmed while `X` held nothing extended
//!    whoever held the key then; rule 1 sees that only if the victim's key
//!    later expires, this rule sees it even when the victim releases first.
//!
//! Without the ownership log, rules 1 and 3 cannot be decided: a violation
//! of rule 2 still gives `Violated`, otherwise the verdict is `Undecided`.
//! The rules range over key expiries (rule 1) and confirmed renews (rules 2
//! and 3); a run with neither — every lock released before its lease ran
//! out, nobody renewed — is `NotExercised`.

use std::collections::BTreeMap;

use super::{more, no_redis_truth, Derived};
use crate::history::{History, OkValue, Op, OpKind, Outcome, OwnershipChange, OwnershipRecord};
use crate::property::Property;
use crate::verdict::{owner_text, HistorySlice, Verdict};

const PROPERTY: Property = Property::RenewalSafety;

/// Judges `renewal-safety`.
pub(super) fn check(history: &History, derived: &Derived) -> Verdict {
    let mut violations: Vec<(String, HistorySlice)> = Vec::new();
    let mut expiries_count = 0_usize;
    if let Some(log) = &history.redis_truth {
        expiries_count = no_foreign_extension(history, log, derived, &mut violations);
        renews_own_lock(history, log, derived, &mut violations);
    }
    let renews_count = bounded_renewal(history, &mut violations);

    let violations_total = violations.len();
    if let Some((explanation, slice)) = violations.into_iter().next() {
        return Verdict::violated(
            PROPERTY,
            format!("{explanation}{}", more(violations_total)),
            slice,
        );
    }
    let limits = format!(
        "{renews_count} confirmed renews stayed within {} per acquisition and {} ms of hold",
        history.limits.renewals_max, history.limits.hold_ms_max
    );
    match &history.redis_truth {
        None => Verdict::undecided(
            PROPERTY,
            format!(
                "{} (whether a renew extended another owner's key is unknown); {limits}",
                no_redis_truth(history)
            ),
        ),
        Some(_) if expiries_count == 0 && renews_count == 0 => Verdict::not_exercised(
            PROPERTY,
            "no lock key expired and no renew was confirmed",
        ),
        Some(_) => Verdict::held(
            PROPERTY,
            format!("{expiries_count} key expiries each came within their owner's entitlement; {limits}"),
        ),
    }
}

/// Whether `op` may have extended its owner's key: any acquire (whatever
/// it answered: a library that took the lease and then could not use it —
/// its fence source failed, its confirming renew timed out — answers
/// "contended" or "failed" after commands that set or extended its own
/// key), a renew the server confirmed or whose answer never arrived, and a
/// whole-worker lock's command carrying `X`'s token (it may have been a
/// renewal: the harness does not guess).
fn may_extend(op: &Op) -> bool {
    matches!(
        (&op.kind, &op.outcome),
        (OpKind::Acquire, _)
            | (OpKind::Command, _)
            | (OpKind::Renew, Outcome::Ok(OkValue::Renewed))
            | (OpKind::Renew, Outcome::Indeterminate(_))
    )
}

/// Rule 1; returns how many expiries were judged.
fn no_foreign_extension(
    history: &History,
    log: &[OwnershipRecord],
    derived: &Derived,
    violations: &mut Vec<(String, HistorySlice)>,
) -> usize {
    let mut extensions: BTreeMap<&str, Vec<&Op>> = BTreeMap::new();
    for op in history.ops.iter().filter(|op| may_extend(op)) {
        if let Some(owner) = op.owner.as_deref() {
            extensions.entry(owner).or_default().push(op);
        }
    }
    let limits = history.limits;
    let mut expiries_count = 0_usize;
    for holding in derived.holdings() {
        let Some((expired_ms, end_index)) = holding.end else {
            continue;
        };
        if !matches!(log[end_index].change, OwnershipChange::Expired { .. }) {
            continue;
        }
        expiries_count += 1;
        let own_last_ms = extensions
            .get(holding.owner.as_str())
            .into_iter()
            .flatten()
            .filter(|op| op.invoke_ms <= expired_ms)
            .map(|op| {
                // An acquire that gave up inside the library (answered
                // anything but "acquired") may have left commands in flight
                // — a confirming renew held up by a partition runs when it
                // heals — so, like an unanswered op, it may have extended
                // the key at any time up to the expiry.
                let gave_up = op.kind == OpKind::Acquire && op.acquired_fence().is_none();
                let at_ms = if gave_up { None } else { op.complete_ms };
                at_ms.unwrap_or(expired_ms).min(expired_ms)
            })
            .max();
        let base_ms = own_last_ms.unwrap_or(0).max(holding.start_ms);
        let entitled_ms = base_ms
            .saturating_add(limits.lease_ms)
            .saturating_add(limits.tolerance_ms);
        if expired_ms <= entitled_ms {
            continue;
        }
        // The foreign renew that most plausibly did it: the latest one the
        // server confirmed before the expiry, after the owner's own.
        let culprit = history
            .ops
            .iter()
            .filter(|op| op.is_successful_renew() && !op.is_owner(&holding.owner))
            .filter(|op| base_ms <= op.invoke_ms && op.invoke_ms <= expired_ms)
            .max_by_key(|op| (op.invoke_ms, op.id));
        let by = match culprit {
            Some(op) => format!(
                ": a renew by owner {} (worker {}, op {}) at {} ms extended it",
                owner_text(op.owner.as_deref().unwrap_or("?")),
                op.worker,
                op.id,
                op.invoke_ms
            ),
            None => String::new(),
        };
        let explanation = format!(
            "owner {}'s key {} on {} expired at {expired_ms} ms, but it was entitled only until \
             {entitled_ms} ms (set at {} ms, last own extension at {} ms, lease {} ms, \
             tolerance {} ms){by}",
            owner_text(&holding.owner),
            holding.key,
            holding.server,
            holding.start_ms,
            base_ms,
            limits.lease_ms,
            limits.tolerance_ms,
        );
        let slice = HistorySlice::default()
            .with_ownership(holding.start_index, &log[holding.start_index])
            .with_ownership(end_index, &log[end_index])
            .with_op_opt(culprit);
        violations.push((explanation, slice));
    }
    expiries_count
}

/// Rule 3.
fn renews_own_lock(
    history: &History,
    log: &[OwnershipRecord],
    derived: &Derived,
    violations: &mut Vec<(String, HistorySlice)>,
) {
    let all = derived.holdings();
    let mut renews: Vec<&Op> = history
        .ops
        .iter()
        .filter(|op| op.is_successful_renew())
        .collect();
    renews.sort_by_key(|op| (op.invoke_ms, op.id));
    for renew in renews {
        let Some(owner) = renew.owner.as_deref() else {
            continue;
        };
        let complete_ms = renew.end_or(history.end_ms);
        let overlaps = |h: &&super::holdings::Holding| {
            h.start_ms <= complete_ms && h.end.is_none_or(|(end_ms, _)| end_ms >= renew.invoke_ms)
        };
        if all
            .iter()
            .filter(|h| h.owner == owner)
            .any(|h| overlaps(&h))
        {
            continue;
        }
        // Whose lock it extended: a holding by someone else at the time.
        let victim = all
            .iter()
            .filter(|h| h.owner != owner)
            .find(|h| overlaps(h));
        let whose = match victim {
            Some(h) => format!(
                "; the key was held by owner {} (set at {} ms on {})",
                owner_text(&h.owner),
                h.start_ms,
                h.server
            ),
            None => "; the key was held by no one".to_owned(),
        };
        let explanation = format!(
            "owner {} (worker {}) was told its renew (op {}) succeeded at {complete_ms} ms, \
             but it held no lock between {} and {complete_ms} ms{whose}",
            owner_text(owner),
            renew.worker,
            renew.id,
            renew.invoke_ms,
        );
        let mut slice = HistorySlice::default().with_op(renew);
        if let Some(h) = victim {
            slice = slice.with_ownership(h.start_index, &log[h.start_index]);
        }
        violations.push((explanation, slice));
    }
}

/// Rule 2; returns how many confirmed renews were judged.
fn bounded_renewal(history: &History, violations: &mut Vec<(String, HistorySlice)>) -> usize {
    // Successful acquisitions per (worker, owner), by completion.
    let mut acquisitions: BTreeMap<(&str, &str), Vec<&Op>> = BTreeMap::new();
    for op in &history.ops {
        if let (Some(_), Some(owner)) = (op.acquired_fence(), op.owner.as_deref()) {
            acquisitions
                .entry((&op.worker, owner))
                .or_default()
                .push(op);
        }
    }
    for ops in acquisitions.values_mut() {
        ops.sort_by_key(|op| (op.complete_ms, op.id));
    }
    let mut renews: Vec<&Op> = history
        .ops
        .iter()
        .filter(|op| op.is_successful_renew())
        .collect();
    renews.sort_by_key(|op| (op.invoke_ms, op.id));

    let limits = history.limits;
    let mut counts: BTreeMap<u64, u32> = BTreeMap::new();
    for &renew in &renews {
        let Some(owner) = renew.owner.as_deref() else {
            continue;
        };
        let anchor = acquisitions
            .get(&(renew.worker.as_str(), owner))
            .into_iter()
            .flatten()
            .filter(|op| op.complete_ms.is_some_and(|c| c <= renew.invoke_ms))
            .max_by_key(|op| (op.complete_ms, op.id));
        let Some(&acquire) = anchor else {
            continue;
        };
        let acquired_ms = acquire.complete_ms.expect("anchors completed");
        let count = counts.entry(acquire.id).or_insert(0);
        *count += 1;
        let count = *count;
        let hold_end_ms = acquired_ms
            .saturating_add(limits.hold_ms_max)
            .saturating_add(limits.tolerance_ms);
        let who = format!("owner {} (worker {})", owner_text(owner), renew.worker);
        let explanation = if count > limits.renewals_max {
            format!(
                "{who} renewed for the {} time at {} ms after acquiring at {acquired_ms} ms; \
                 at most {} renewals are allowed",
                ordinal(count),
                renew.invoke_ms,
                limits.renewals_max
            )
        } else if renew.invoke_ms > hold_end_ms {
            format!(
                "{who} renewed at {} ms, {} ms after acquiring at {acquired_ms} ms; the hold may \
                 last at most {} ms (+ {} ms tolerance)",
                renew.invoke_ms,
                renew.invoke_ms - acquired_ms,
                limits.hold_ms_max,
                limits.tolerance_ms
            )
        } else {
            continue;
        };
        let slice = HistorySlice::default().with_op(acquire).with_op(renew);
        violations.push((explanation, slice));
    }
    renews.len()
}

/// "1st", "2nd", "3rd", "4th", … for explanations.
fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}
