//! Random histories: every well-formed *correct* history (owners take turns,
//! fences increase, releases are the owner's own) violates no property —
//! each holds where the history gives it something to judge and is not
//! exercised where it gives it nothing — and
//! no history at all — well-formed or not — makes the checker panic or point
//! outside the history.

use proptest::prelude::*;
use redfence_scenarios::fault::Fault;
use redfence_scenarios::history::JobReport;
use redfence_scenarios::*;

const LEASE_MS: u64 = 1_000;

fn limits() -> Limits {
    Limits {
        lease_ms: LEASE_MS,
        hold_ms_max: 5_000,
        renewals_max: 3,
        tolerance_ms: 10,
        acquire_deadline_ms: 10_000,
    }
}

/// One owner's turn with the lock.
#[derive(Clone, Debug)]
struct Turn {
    worker: usize,
    fence_gap: i64,
    renew_gaps_ms: Vec<u64>,
    write: bool,
    release: bool,
    contender: Option<usize>,
    idle_ms: u64,
}

fn turn() -> impl Strategy<Value = Turn> {
    (
        0..4_usize,
        1..4_i64,
        prop::collection::vec(1..=LEASE_MS / 2, 0..=3),
        any::<bool>(),
        any::<bool>(),
        prop::option::of(0..4_usize),
        0..3_000_u64,
    )
        .prop_map(
            |(worker, fence_gap, renew_gaps_ms, write, release, contender, idle_ms)| Turn {
                worker,
                fence_gap,
                renew_gaps_ms,
                write,
                release,
                contender,
                idle_ms,
            },
        )
}

/// Builds the correct history the turns describe. Every server-side event
/// falls inside the op that caused it, and every deadline is the last own
/// extension's completion + lease.
fn correct_history(turns: &[Turn]) -> History {
    let mut b = HistoryBuilder::new("account-7", limits());
    let mut at_ms = 0_u64;
    let mut fence = 0_i64;
    for (i, turn) in turns.iter().enumerate() {
        let worker = format!("w{}", turn.worker);
        let owner = format!("o{i}");
        fence += turn.fence_gap;
        b = b
            .acquired(&worker, &owner, (at_ms, at_ms + 2), fence)
            .set(at_ms + 1, &owner);
        let mut deadline_ms = at_ms + 1 + LEASE_MS;
        let mut cursor_ms = at_ms + 2;
        if let Some(contender) = turn.contender.filter(|c| *c != turn.worker) {
            let contender = format!("w{contender}");
            b = b
                .contended(&contender, &format!("c{i}"), (cursor_ms + 1, cursor_ms + 2))
                .report(&contender, None, JobReport::RetryLater, cursor_ms + 3);
            cursor_ms += 3;
        }
        for gap_ms in &turn.renew_gaps_ms {
            let invoke_ms = cursor_ms + gap_ms;
            b = b.renewed(&worker, &owner, (invoke_ms, invoke_ms + 1));
            cursor_ms = invoke_ms + 1;
            deadline_ms = cursor_ms + LEASE_MS;
        }
        if turn.write {
            let job = format!("j{i}");
            b = b
                .write(
                    &worker,
                    &owner,
                    fence,
                    Some(&job),
                    (cursor_ms + 1, cursor_ms + 3),
                    OkValue::WriteAccepted,
                )
                .fence_log(
                    cursor_ms + 2,
                    &owner,
                    fence,
                    Some(&job),
                    FenceOutcome::Accepted,
                )
                .report(&worker, Some(&job), JobReport::Success, cursor_ms + 4);
            cursor_ms += 4;
        }
        assert!(
            cursor_ms < deadline_ms,
            "the generator keeps ops inside the lease"
        );
        at_ms = if turn.release {
            b = b
                .released(&worker, &owner, (cursor_ms + 1, cursor_ms + 3), true)
                .deleted(cursor_ms + 2, &owner);
            cursor_ms + 4 + turn.idle_ms
        } else {
            b = b.expired(deadline_ms, &owner);
            deadline_ms + 1 + turn.idle_ms
        };
    }
    b.end(at_ms + 10).build()
}

fn small_name(prefix: &'static str) -> impl Strategy<Value = String> + Clone {
    (0..4_u8).prop_map(move |n| format!("{prefix}{n}"))
}

fn ok_value() -> impl Strategy<Value = OkValue> {
    prop_oneof![
        4 => prop::option::of(0..6_i64).prop_map(|fence| OkValue::Acquired { fence }),
        1 => Just(OkValue::Contended),
        1 => Just(OkValue::Renewed),
        1 => Just(OkValue::RenewLost),
        1 => any::<bool>().prop_map(OkValue::Released),
        1 => Just(OkValue::WriteAccepted),
        1 => (0..6_i64).prop_map(|last_fence| OkValue::WriteStale { last_fence }),
        1 => Just(OkValue::WriteNotFound),
        1 => Just(OkValue::AlreadyDone),
        1 => Just(OkValue::Reported),
    ]
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        6 => ok_value().prop_map(Outcome::Ok),
        1 => Just(Outcome::Fail("refused".into())),
        2 => Just(Outcome::Indeterminate("timeout".into())),
    ]
}

fn op_kind() -> impl Strategy<Value = OpKind> {
    let job = prop::option::of(small_name("j"));
    let report = prop::sample::select(JobReport::ALL.to_vec());
    prop_oneof![
        3 => Just(OpKind::Acquire),
        1 => Just(OpKind::Renew),
        1 => Just(OpKind::Release),
        2 => (0..6_i64, job.clone()).prop_map(|(fence, job_id)| OpKind::Write { fence, job_id }),
        1 => (report, job).prop_map(|(outcome, job_id)| OpKind::Report { outcome, job_id }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    (
        0..20_u64,
        small_name("w"),
        prop::option::of(small_name("o")),
        op_kind(),
        0..10_000_u64,
        prop::option::of(0..3_000_u64),
        outcome(),
    )
        .prop_map(
            |(id, worker, owner, kind, invoke_ms, took_ms, outcome)| Op {
                id,
                worker,
                owner,
                kind,
                invoke_ms,
                complete_ms: took_ms.map(|t| invoke_ms + t),
                outcome,
            },
        )
}

fn ownership_record() -> impl Strategy<Value = OwnershipRecord> {
    let change = prop_oneof![
        small_name("o").prop_map(|owner| OwnershipChange::Set { owner }),
        (small_name("o"), small_name("o"))
            .prop_map(|(from, to)| OwnershipChange::Overwritten { from, to }),
        small_name("o").prop_map(|owner| OwnershipChange::Expired { owner }),
        small_name("o").prop_map(|owner| OwnershipChange::Deleted { owner }),
        small_name("o").prop_map(|owner| OwnershipChange::Lost { owner }),
    ];
    (0..12_000_u64, small_name("redis-"), change).prop_map(|(at_ms, server, change)| {
        OwnershipRecord {
            at_ms,
            server,
            key: "lock:account-7".into(),
            change,
        }
    })
}

fn fence_record() -> impl Strategy<Value = FenceRecord> {
    let outcome = prop::sample::select(vec![
        FenceOutcome::Accepted,
        FenceOutcome::Stale,
        FenceOutcome::NotFound,
        FenceOutcome::Duplicate,
    ]);
    (
        0..30_i64,
        0..12_000_u64,
        small_name("r"),
        0..6_i64,
        small_name("o"),
        prop::option::of(small_name("j")),
        outcome,
    )
        .prop_map(
            |(seq, at_ms, resource, fence, owner, job_id, outcome)| FenceRecord {
                seq,
                at_ms,
                resource,
                fence,
                owner,
                job_id,
                outcome,
            },
        )
}

fn limits_any() -> impl Strategy<Value = Limits> {
    (0..3_000_u64, 0..8_000_u64, 0..5_u32, 0..50_u64).prop_map(
        |(lease_ms, hold_ms_max, renewals_max, tolerance_ms)| Limits {
            lease_ms,
            hold_ms_max,
            renewals_max,
            tolerance_ms,
            acquire_deadline_ms: lease_ms * 10,
        },
    )
}

/// Any history at all: duplicate ids, times past the end, broken seqs.
fn arbitrary_history() -> impl Strategy<Value = History> {
    (
        limits_any(),
        prop::collection::vec(op(), 0..40),
        prop::option::of(prop::collection::vec(ownership_record(), 0..30)),
        prop::option::of(prop::collection::vec(fence_record(), 0..30)),
        0..15_000_u64,
    )
        .prop_map(|(limits, ops, redis_truth, store_truth, end_ms)| History {
            resource: "account-7".into(),
            limits,
            ops,
            redis_truth_gap: redis_truth
                .is_none()
                .then(|| "a recording gap, in words".to_owned()),
            redis_truth,
            store_truth,
            faults: vec![FaultRecord::new(5, Fault::PauseWorker(1))],
            server_events: Vec::new(),
            end_ms,
            contention: Some(redfence_scenarios::history::ContentionBounds {
                attempts_per_acquisition_max: 3,
                wait_ms_p99_max: 1_000,
            }),
        })
}

/// Makes an arbitrary history pass `validate`, so the rules themselves run.
fn well_formed(mut history: History) -> History {
    history.limits.lease_ms = history.limits.lease_ms.max(1);
    for (i, op) in history.ops.iter_mut().enumerate() {
        op.id = i as u64 + 1;
        if op.complete_ms.is_none() {
            op.outcome = Outcome::Indeterminate("never answered".into());
        }
    }
    let latest_ms = history
        .ops
        .iter()
        .map(|op| op.complete_ms.unwrap_or(op.invoke_ms))
        .max();
    history.end_ms = history.end_ms.max(latest_ms.unwrap_or(0));
    if let Some(log) = &mut history.store_truth {
        for (i, record) in log.iter_mut().enumerate() {
            record.seq = i as i64 + 1;
        }
    }
    assert_eq!(history.validate(), Ok(()));
    history
}

/// Every verdict is for its property, in order, and its slice points inside
/// the history.
fn assert_verdicts_sane(history: &History, verdicts: &[Verdict]) {
    assert_eq!(verdicts.len(), Property::ALL.len());
    for (verdict, property) in verdicts.iter().zip(Property::ALL) {
        assert_eq!(verdict.property, property);
        assert!(!verdict.explanation.is_empty());
        assert!(verdict.slice.len() <= verdict::SLICE_ITEMS_MAX);
        if verdict.status != Status::Violated {
            assert!(verdict.slice.is_empty());
            continue;
        }
        assert!(!verdict.slice.is_empty());
        for id in &verdict.slice.op_ids {
            assert!(history.op(*id).is_some(), "slice op {id} exists");
        }
        for at in &verdict.slice.ownership {
            let log = history
                .redis_truth
                .as_ref()
                .expect("ownership slice needs the log");
            assert_eq!(&log[at.index], &at.record);
        }
        for record in &verdict.slice.fences {
            let log = history
                .store_truth
                .as_ref()
                .expect("fence slice needs the log");
            assert!(log.contains(record));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn correct_histories_hold_every_property(turns in prop::collection::vec(turn(), 1..10)) {
        let history = correct_history(&turns);
        prop_assert_eq!(history.validate(), Ok(()));
        let verdicts = check(&history);
        assert_verdicts_sane(&history, &verdicts);
        for verdict in &verdicts {
            let expected: &[Status] = match verdict.property {
                // Nobody is ever stale, and every write carries a fence.
                Property::StaleOwnerRejected | Property::UnfencedStaleWrite => {
                    &[Status::NotExercised]
                }
                // Every turn acquires (with a fence) and holds a key.
                Property::FenceUniqueness | Property::BoundedLiveness => &[Status::Held],
                // Held where the turns wrote, renewed, released or let a
                // lease expire; otherwise there was nothing to judge.
                _ => &[Status::Held, Status::NotExercised],
            };
            prop_assert!(
                expected.contains(&verdict.status),
                "{}: {:?}: {}", verdict.property, verdict.status, verdict.explanation
            );
        }
    }

    #[test]
    fn checker_never_panics_on_arbitrary_histories(history in arbitrary_history()) {
        let verdicts = check(&history);
        assert_verdicts_sane(&history, &verdicts);
        if history.validate().is_err() {
            prop_assert!(verdicts.iter().all(|v| v.status == Status::Undecided));
        }
    }

    #[test]
    fn checker_never_panics_on_well_formed_random_histories(history in arbitrary_history()) {
        let history = well_formed(history);
        let verdicts = check(&history);
        assert_verdicts_sane(&history, &verdicts);
        let again = serde_json::to_string(&check(&history)).unwrap();
        prop_assert_eq!(serde_json::to_string(&verdicts).unwrap(), again);
    }
}
