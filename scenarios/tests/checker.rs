//! Hand-built histories, one timeline per broken protocol the harness ships
//! (and a correct one), checked property by property: each property must
//! hold on a correct history that gives it something to judge, answer
//! `NotExercised` on one that gives it nothing, catch its violation with the
//! right slice, and answer `Undecided` when the ground truth it needs is
//! missing.

use redfence_scenarios::fault::Fault;
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

fn builder() -> HistoryBuilder {
    HistoryBuilder::new("account-7", limits())
}

/// Judges one property, and checks that `check` gives the same verdict.
fn judge(history: &History, property: Property) -> Verdict {
    let verdict = check_property(history, property);
    let all = check(history);
    let position = Property::ALL.iter().position(|p| *p == property).unwrap();
    assert_eq!(all[position], verdict, "check and check_property agree");
    verdict
}

fn assert_status(verdict: &Verdict, status: Status) {
    assert_eq!(
        verdict.status, status,
        "{}: {}",
        verdict.property, verdict.explanation
    );
}

fn fence_seqs(verdict: &Verdict) -> Vec<i64> {
    verdict.slice.fences.iter().map(|r| r.seq).collect()
}

fn ownership_indexes(verdict: &Verdict) -> Vec<usize> {
    verdict.slice.ownership.iter().map(|o| o.index).collect()
}

/// Two workers take turns correctly: acquire, renew, fenced job write,
/// report, compare-and-delete release; the second was contended first.
fn correct() -> History {
    builder()
        .acquired("w1", "o1", (0, 5), 1) // op 1
        .set(3, "o1") // redis 0
        .contended("w2", "o2", (10, 12)) // op 2
        .renewed("w1", "o1", (300, 305)) // op 3
        .write(
            "w1",
            "o1",
            1,
            Some("j1"),
            (400, 410),
            OkValue::WriteAccepted,
        ) // op 4
        .fence_log(405, "o1", 1, Some("j1"), FenceOutcome::Accepted) // seq 1
        .report("w1", Some("j1"), JobReport::Success, 420) // op 5
        .released("w1", "o1", (500, 505), true) // op 6
        .deleted(503, "o1") // redis 1
        .acquired("w2", "o2", (600, 605), 2) // op 7
        .set(603, "o2") // redis 2
        .write(
            "w2",
            "o2",
            2,
            Some("j2"),
            (700, 710),
            OkValue::WriteAccepted,
        ) // op 8
        .fence_log(705, "o2", 2, Some("j2"), FenceOutcome::Accepted) // seq 2
        .report("w2", Some("j2"), JobReport::Success, 720) // op 9
        .released("w2", "o2", (800, 805), true) // op 10
        .deleted(802, "o2") // redis 3
        .end(1_000)
        .build()
}

/// Properties a correct turn-taking run gives nothing to judge: nobody was
/// stale, and every write carried a fence.
const IDLE_WHEN_CORRECT: [Property; 3] = [
    Property::StaleOwnerRejected,
    Property::UnfencedStaleWrite,
    Property::Contention,
];

#[test]
fn correct_history_holds_everything_it_exercises() {
    let history = correct();
    assert_eq!(history.validate(), Ok(()));
    let verdicts = check(&history);
    assert_eq!(verdicts.len(), Property::ALL.len());
    for (verdict, property) in verdicts.iter().zip(Property::ALL) {
        assert_eq!(verdict.property, property);
        let expected = if IDLE_WHEN_CORRECT.contains(&property) {
            Status::NotExercised
        } else {
            Status::Held
        };
        assert_status(verdict, expected);
        assert!(verdict.slice.is_empty());
    }
}

#[test]
fn missing_truth_is_undecided_never_guessed() {
    let history = builder()
        .acquired("w1", "o1", (0, 5), 1)
        .write(
            "w1",
            "o1",
            1,
            Some("j1"),
            (400, 410),
            OkValue::WriteAccepted,
        )
        .report("w1", Some("j1"), JobReport::Success, 420)
        .released("w1", "o1", (500, 505), true)
        .without_redis_truth()
        .without_store_truth()
        .end(1_000)
        .build();
    for verdict in check(&history) {
        let expected = match verdict.property {
            // Decided from the ops alone (the leases the client was granted).
            Property::FenceUniqueness | Property::NoOverlappingHolders => Status::Held,
            // No write without a fence was even attempted.
            Property::UnfencedStaleWrite | Property::Contention => Status::NotExercised,
            _ => Status::Undecided,
        };
        assert_status(&verdict, expected);
    }
    let reason = judge(&history, Property::UnlockSafety).explanation;
    assert!(reason.contains(NO_REDIS_TRUTH), "{reason}");
    let reason = judge(&history, Property::ExactlyOnce).explanation;
    assert!(reason.contains(NO_STORE_TRUTH), "{reason}");
}

#[test]
fn malformed_history_is_undecided() {
    let mut history = correct();
    history.ops[1].id = history.ops[0].id;
    for verdict in check(&history) {
        assert_status(&verdict, Status::Undecided);
        assert!(
            verdict.explanation.contains("malformed"),
            "{}",
            verdict.explanation
        );
    }
}

// ---------------------------------------------------------------- fence-order

/// no-fence-check: the store accepts every write. A pauses past its lease, B
/// acquires fence 2 and writes; A wakes up and its fence-1 write is accepted.
fn no_fence_check() -> History {
    builder()
        .acquired("w1", "o1", (0, 5), 1) // op 1
        .set(3, "o1")
        .fault(100, Fault::PauseWorker(1))
        .expired(1_003, "o1")
        .acquired("w2", "o2", (1_100, 1_105), 2) // op 2
        .set(1_103, "o2")
        .write("w2", "o2", 2, None, (1_300, 1_310), OkValue::WriteAccepted) // op 3
        .fence_log(1_380, "o2", 2, None, FenceOutcome::Accepted) // seq 1
        .write("w1", "o1", 1, None, (1_500, 1_530), OkValue::WriteAccepted) // op 4
        .fence_log(1_520, "o1", 1, None, FenceOutcome::Accepted) // seq 2
        .released("w2", "o2", (1_600, 1_605), true)
        .deleted(1_602, "o2")
        .end(2_000)
        .build()
}

#[test]
fn fence_order_catches_no_fence_check() {
    let verdict = judge(&no_fence_check(), Property::FenceOrder);
    assert_status(&verdict, Status::Violated);
    assert_eq!(fence_seqs(&verdict), [1, 2]);
    assert_eq!(verdict.slice.op_ids, [3, 4]);
    assert_eq!(
        verdict.explanation,
        "write by owner o1 with fence 1 was accepted at 1520 ms (seq 2) after fence 2 had been \
         accepted at 1380 ms (seq 1, owner o2) on resource account-7"
    );
}

/// app-side-fence-check: A reads last_fence = 0 and decides its fence 1 is
/// fine; B writes fence 2 in between; A's unconditional second statement lands.
#[test]
fn fence_order_catches_app_side_fence_check() {
    let history = builder()
        .acquired("w1", "o1", (0, 5), 1)
        .set(3, "o1")
        .expired(1_003, "o1")
        .acquired("w2", "o2", (1_100, 1_105), 2)
        .set(1_103, "o2")
        .write(
            "w1",
            "o1",
            1,
            Some("j1"),
            (900, 1_400),
            OkValue::WriteAccepted,
        ) // op 3
        .write(
            "w2",
            "o2",
            2,
            Some("j2"),
            (1_200, 1_210),
            OkValue::WriteAccepted,
        ) // op 4
        .fence_log(1_205, "o2", 2, Some("j2"), FenceOutcome::Accepted)
        .fence_log(1_390, "o1", 1, Some("j1"), FenceOutcome::Accepted)
        .end(2_000)
        .build();
    let verdict = judge(&history, Property::FenceOrder);
    assert_status(&verdict, Status::Violated);
    assert_eq!(fence_seqs(&verdict), [1, 2]);
    assert_eq!(verdict.slice.op_ids, [4, 3]);
}

#[test]
fn fence_order_rejects_an_equal_fence_accepted_twice() {
    let history = builder()
        .acquired("w1", "o1", (0, 5), 1)
        .write("w1", "o1", 1, None, (10, 20), OkValue::WriteAccepted)
        .fence_log(15, "o1", 1, None, FenceOutcome::Accepted)
        .write("w1", "o1", 1, None, (30, 40), OkValue::WriteAccepted)
        .fence_log(35, "o1", 1, None, FenceOutcome::Accepted)
        .end(100)
        .build();
    assert_status(&judge(&history, Property::FenceOrder), Status::Violated);
    // The same owner repeating itself is not a stale owner: nothing stale
    // reached the store.
    assert_status(
        &judge(&history, Property::StaleOwnerRejected),
        Status::NotExercised,
    );
}

#[test]
fn fence_order_holds_per_resource_and_ignores_rejections() {
    let mut history = correct();
    let log = history.store_truth.as_mut().unwrap();
    // A stale rejection and another resource's lower fence change nothing.
    log.push(FenceRecord {
        seq: 3,
        at_ms: 900,
        resource: "account-7".into(),
        fence: 1,
        owner: "o1".into(),
        job_id: None,
        outcome: FenceOutcome::Stale,
    });
    log.push(FenceRecord {
        seq: 4,
        at_ms: 910,
        resource: "account-8".into(),
        fence: 1,
        owner: "o9".into(),
        job_id: None,
        outcome: FenceOutcome::Accepted,
    });
    let verdict = judge(&history, Property::FenceOrder);
    assert_status(&verdict, Status::Held);
    assert!(
        verdict.explanation.contains("2 resources"),
        "{}",
        verdict.explanation
    );
}

// ------------------------------------------------------- stale-owner-rejected

#[test]
fn stale_owner_accepted_by_the_store_is_caught() {
    let verdict = judge(&no_fence_check(), Property::StaleOwnerRejected);
    assert_status(&verdict, Status::Violated);
    assert_eq!(fence_seqs(&verdict), [1, 2]);
    assert_eq!(verdict.slice.op_ids, [3, 4]);
    assert!(verdict
        .explanation
        .starts_with("stale write by owner o1 with fence 1"));
}

/// The reference protocol: A's late write is rejected, A reports ownership
/// lost, and retries the fence at most once.
fn stale_rejected(report: JobReport, retries: usize) -> HistoryBuilder {
    // w1 is paused from 100 ms to 1400 ms: its lease runs out under it.
    let mut b = builder()
        .acquired("w1", "o1", (0, 5), 1) // op 1
        .set(3, "o1")
        .fault(100, Fault::PauseWorker(1))
        .expired(1_003, "o1")
        .acquired("w2", "o2", (1_100, 1_105), 2) // op 2
        .set(1_103, "o2")
        .write(
            "w2",
            "o2",
            2,
            Some("j2"),
            (1_300, 1_310),
            OkValue::WriteAccepted,
        ) // op 3
        .fence_log(1_305, "o2", 2, Some("j2"), FenceOutcome::Accepted)
        .fault(1_400, Fault::ResumeWorker(1))
        .write(
            "w1",
            "o1",
            1,
            Some("j1"),
            (1_500, 1_530),
            OkValue::WriteStale { last_fence: 2 },
        ) // op 4
        .fence_log(1_520, "o1", 1, Some("j1"), FenceOutcome::Stale);
    for retry in 0..retries {
        let at_ms = 1_600 + 100 * retry as u64;
        b = b
            .write(
                "w1",
                "o1",
                1,
                Some("j1"),
                (at_ms, at_ms + 10),
                OkValue::WriteStale { last_fence: 2 },
            )
            .fence_log(at_ms + 5, "o1", 1, Some("j1"), FenceOutcome::Stale);
    }
    b.report("w1", Some("j1"), report, 1_900)
        .released("w2", "o2", (1_950, 1_955), true)
        .deleted(1_952, "o2")
        .end(2_000)
}

#[test]
fn stale_owner_rejected_holds_for_the_reference_protocol() {
    let history = stale_rejected(JobReport::OwnershipLost, 1).build();
    for verdict in check(&history) {
        // Every write carried a fence.
        let expected = if matches!(
            verdict.property,
            Property::UnfencedStaleWrite | Property::Contention
        ) {
            Status::NotExercised
        } else {
            Status::Held
        };
        assert_status(&verdict, expected);
    }
    let verdict = judge(&history, Property::StaleOwnerRejected);
    assert!(
        verdict
            .explanation
            .starts_with("2 fenced writes from stale owners"),
        "{}",
        verdict.explanation
    );
}

#[test]
fn stale_owner_that_reports_success_is_caught() {
    let history = stale_rejected(JobReport::Success, 0).build();
    let verdict = judge(&history, Property::StaleOwnerRejected);
    assert_status(&verdict, Status::Violated);
    assert_eq!(verdict.slice.op_ids, [4, 5]);
    assert!(
        verdict.explanation.contains("reported \"success\""),
        "{}",
        verdict.explanation
    );
}

#[test]
fn stale_owner_retrying_the_fence_is_caught() {
    let history = stale_rejected(JobReport::OwnershipLost, 3).build();
    let verdict = judge(&history, Property::StaleOwnerRejected);
    assert_status(&verdict, Status::Violated);
    assert_eq!(verdict.slice.op_ids, [4, 5, 6]);
    assert!(
        verdict.explanation.contains("3 more times"),
        "{}",
        verdict.explanation
    );
}

#[test]
fn stale_owner_without_store_log_is_undecided_unless_the_worker_misbehaves() {
    let history = stale_rejected(JobReport::OwnershipLost, 0)
        .without_store_truth()
        .build();
    let verdict = judge(&history, Property::StaleOwnerRejected);
    assert_status(&verdict, Status::Undecided);
    assert!(verdict.explanation.contains(NO_STORE_TRUTH));
    let history = stale_rejected(JobReport::Failed, 0)
        .without_store_truth()
        .build();
    assert_status(
        &judge(&history, Property::StaleOwnerRejected),
        Status::Violated,
    );
}

// -------------------------------------------------------------- unlock-safety

/// del-unlock: A's lease ends while it is paused, B acquires, and A's plain
/// DEL removes B's lock.
fn del_unlock() -> History {
    builder()
        .acquired("w1", "o1", (0, 5), 1) // op 1
        .set(3, "o1") // redis 0
        .fault(100, Fault::PauseWorker(1))
        .expired(1_003, "o1") // redis 1
        .acquired("w2", "o2", (1_100, 1_105), 2) // op 2
        .set(1_103, "o2") // redis 2
        .released("w1", "o1", (1_700, 1_710), true) // op 3
        .deleted(1_705, "o2") // redis 3
        .end(2_000)
        .build()
}

#[test]
fn unlock_safety_catches_del_unlock() {
    let verdict = judge(&del_unlock(), Property::UnlockSafety);
    assert_status(&verdict, Status::Violated);
    assert_eq!(ownership_indexes(&verdict), [2, 3]);
    assert_eq!(verdict.slice.op_ids, [3]);
    assert_eq!(
        verdict.explanation,
        "the lock lock:account-7 of owner o2 (set at 1103 ms) was deleted at 1705 ms on redis-0 \
         during a release by owner o1 (worker w1, op 3), not by o2"
    );
}

/// get-then-del: A's GET still sees its own token, its lease runs out before
/// the DEL, B acquires in between, and the DEL removes B's lock.
#[test]
fn unlock_safety_catches_get_then_del() {
    let history = builder()
        .acquired("w1", "o1", (0, 5), 1)
        .set(3, "o1")
        .released("w1", "o1", (950, 1_300), true) // op 2: GET at 960, DEL at 1250
        .expired(1_003, "o1")
        .acquired("w2", "o2", (1_100, 1_105), 2)
        .set(1_103, "o2") // redis 2
        .deleted(1_250, "o2") // redis 3
        .end(2_000)
        .build();
    let verdict = judge(&history, Property::UnlockSafety);
    assert_status(&verdict, Status::Violated);
    assert_eq!(ownership_indexes(&verdict), [2, 3]);
    assert_eq!(verdict.slice.op_ids, [2]);
}

/// The reference with the store's fence counter: the lease is taken, the
/// fence source times out, and the library gives the lease back before the
/// acquire answers "failed" — its own key, inside its own acquire. Found by
/// `redfence explore` before this rule knew about it.
#[test]
fn unlock_safety_allows_a_failed_acquire_to_give_back_its_own_lease() {
    let failed_acquire = |b: HistoryBuilder, deleted: &str| {
        b.op(
            "w1",
            Some("o1"),
            OpKind::Acquire,
            736,
            Some(920),
            Outcome::Fail("fence source failed: store operation timed out".into()),
        ) // op 1
        .set(740, "o1")
        .deleted(910, deleted)
        .end(2_000)
        .build()
    };
    let history = failed_acquire(builder(), "o1");
    assert_status(&judge(&history, Property::UnlockSafety), Status::Held);
    // The give-back timed out inside the library and landed after the
    // acquire answered (seen with 151 ms of latency): still its own key.
    let mut late = history.clone();
    late.ops[0].complete_ms = Some(900);
    assert_status(&judge(&late, Property::UnlockSafety), Status::Held);
    // A successful acquire is no cleanup window: the deletion of its own
    // key outside a release is still unexplained.
    let mut history = history;
    history.ops[0].outcome = Outcome::Ok(OkValue::Acquired { fence: Some(1) });
    assert_status(&judge(&history, Property::UnlockSafety), Status::Violated);
}

#[test]
fn unlock_safety_allows_a_replica_catching_up_after_the_release() {
    let record = |at_ms, server: &str, change| OwnershipRecord {
        at_ms,
        server: server.to_owned(),
        key: "lock:account-7".to_owned(),
        change,
    };
    let o1 = || "o1".to_owned();
    let history = builder()
        .acquired("w1", "o1", (0, 5), 1)
        .ownership(record(3, "primary", OwnershipChange::Set { owner: o1() }))
        .ownership(record(40, "replica", OwnershipChange::Set { owner: o1() }))
        .released("w1", "o1", (500, 505), true)
        .ownership(record(
            503,
            "primary",
            OwnershipChange::Deleted { owner: o1() },
        ))
        // Replication was held: the replica learns of the release later.
        .ownership(record(
            900,
            "replica",
            OwnershipChange::Deleted { owner: o1() },
        ))
        .end(1_000)
        .build();
    let verdict = judge(&history, Property::UnlockSafety);
    assert_status(&verdict, Status::Held);
    assert!(
        verdict.explanation.contains("each of 2 deletions"),
        "{}",
        verdict.explanation
    );
}

/// get-then-del on real servers: the successor's lock is deleted on the
/// primary and, replicated within the same millisecond, on its replica. The
/// replica's deletion catches up with the primary's; the primary's catches
/// up with nothing and is the violation (by milliseconds alone, the two
/// excused each other and the run passed).
#[test]
fn unlock_safety_catches_a_deletion_replicated_within_the_same_millisecond() {
    let record = |at_ms, server: &str, change| OwnershipRecord {
        at_ms,
        server: server.to_owned(),
        key: "lock:account-7".to_owned(),
        change,
    };
    let o2 = || "o2".to_owned();
    let history = builder()
        .acquired("w1", "o1", (0, 5), 1)
        .set(3, "o1")
        .released("w1", "o1", (950, 3_688), true) // op 2: paused between GET and DEL
        .expired(1_003, "o1")
        .acquired("w2", "o2", (3_685, 3_686), 2)
        .ownership(record(
            3_686,
            "primary",
            OwnershipChange::Set { owner: o2() },
        ))
        .ownership(record(
            3_686,
            "replica",
            OwnershipChange::Set { owner: o2() },
        ))
        .ownership(record(
            3_687,
            "primary",
            OwnershipChange::Deleted { owner: o2() },
        ))
        .ownership(record(
            3_687,
            "replica",
            OwnershipChange::Deleted { owner: o2() },
        ))
        .end(5_000)
        .build();
    let verdict = judge(&history, Property::UnlockSafety);
    assert_status(&verdict, Status::Violated);
    assert!(
        verdict
            .explanation
            .contains("was deleted at 3687 ms on primary during a release by owner o1"),
        "{}",
        verdict.explanation
    );
}

#[test]
fn unlock_safety_is_undecided_without_ownership_log() {
    let mut history = del_unlock();
    history.redis_truth = None;
    let verdict = judge(&history, Property::UnlockSafety);
    assert_status(&verdict, Status::Undecided);
    assert!(verdict.slice.is_empty());
}

// ------------------------------------------------------------- renewal-safety

/// renew-without-owner-check: A's lease ends while paused, B acquires, A's
/// keeper wakes and its PEXPIRE extends B's key.
fn renew_without_owner_check() -> History {
    builder()
        .acquired("w1", "o1", (0, 5), 1) // op 1
        .set(3, "o1") // redis 0
        .fault(100, Fault::PauseWorker(1))
        .expired(1_003, "o1") // redis 1
        .acquired("w2", "o2", (1_100, 1_105), 2) // op 2
        .set(1_103, "o2") // redis 2
        .renewed("w1", "o1", (1_500, 1_505)) // op 3
        .expired(2_503, "o2") // redis 3
        .end(3_000)
        .build()
}

#[test]
fn renewal_safety_catches_renew_without_owner_check() {
    let verdict = judge(&renew_without_owner_check(), Property::RenewalSafety);
    assert_status(&verdict, Status::Violated);
    assert_eq!(ownership_indexes(&verdict), [2, 3]);
    assert_eq!(verdict.slice.op_ids, [3]);
    assert_eq!(
        verdict.explanation,
        "owner o2's key lock:account-7 on redis-0 expired at 2503 ms, but it was entitled only \
         until 2115 ms (set at 1103 ms, last own extension at 1105 ms, lease 1000 ms, tolerance \
         10 ms): a renew by owner o1 (worker w1, op 3) at 1500 ms extended it (and 1 more \
         violation)"
    );
}

/// The same stale renew, but the victim releases before its key could
/// expire: no expiry shows the extension, yet the renew was confirmed while
/// its owner held nothing.
#[test]
fn renewal_safety_catches_a_stale_renew_when_the_victim_releases_first() {
    let history = builder()
        .acquired("w1", "o1", (0, 5), 1) // op 1
        .set(3, "o1") // redis 0
        .expired(1_003, "o1") // redis 1
        .acquired("w2", "o2", (1_100, 1_105), 2) // op 2
        .set(1_103, "o2") // redis 2
        .renewed("w1", "o1", (1_500, 1_505)) // op 3
        .released("w2", "o2", (1_700, 1_710), true) // op 4
        .deleted(1_705, "o2") // redis 3
        .end(3_000)
        .build();
    let verdict = judge(&history, Property::RenewalSafety);
    assert_status(&verdict, Status::Violated);
    assert_eq!(verdict.slice.op_ids, [3]);
    assert_eq!(ownership_indexes(&verdict), [2]);
    assert_eq!(
        verdict.explanation,
        "owner o1 (worker w1) was told its renew (op 3) succeeded at 1505 ms, but it held no \
         lock between 1500 and 1505 ms; the key was held by owner o2 (set at 1103 ms on redis-0)"
    );
    // The reference's answer to that renew: refused.
    let mut refused = history.clone();
    refused.ops[2].outcome = Outcome::Ok(OkValue::RenewLost);
    assert_status(&judge(&refused, Property::RenewalSafety), Status::Held);
}

/// The reference with the store's fence counter, partitioned from Redis
/// mid-acquire: the lease is set, the confirming renew is held up by the
/// partition, the library gives up ("contended"), and when the partition
/// heals the held renew runs and extends its own key. Found by `redfence
/// explore`; the owner's own acquire explains the extension.
#[test]
fn renewal_safety_allows_a_given_up_acquire_whose_renew_lands_late() {
    let history = builder()
        .contended("w2", "o1", (717, 1_050)) // op 1
        .set(720, "o1")
        .expired(2_220, "o1")
        .end(3_000)
        .build();
    assert_status(&judge(&history, Property::RenewalSafety), Status::Held);
}

/// unbounded-renewal: the keeper never stops renewing.
fn unbounded_renewal(renews: u64, interval_ms: u64) -> HistoryBuilder {
    let mut b = builder().acquired("w1", "o1", (0, 5), 1).set(3, "o1");
    for n in 1..=renews {
        let at_ms = n * interval_ms;
        b = b.renewed("w1", "o1", (at_ms, at_ms + 5));
    }
    let last_ms = renews * interval_ms + 5;
    b.released("w1", "o1", (last_ms + 10, last_ms + 20), true)
        .deleted(last_ms + 15, "o1")
}

#[test]
fn renewal_safety_catches_too_many_renewals() {
    let history = unbounded_renewal(4, 300).build();
    let verdict = judge(&history, Property::RenewalSafety);
    assert_status(&verdict, Status::Violated);
    assert_eq!(verdict.slice.op_ids, [1, 5]);
    assert!(
        verdict.explanation.contains("4th time"),
        "{}",
        verdict.explanation
    );
}

#[test]
fn renewal_safety_catches_renewal_past_max_hold() {
    let history = builder()
        .acquired("w1", "o1", (0, 5), 1)
        .set(3, "o1")
        .renewed("w1", "o1", (5_100, 5_110)) // op 2: after 5 + 5000 + 10
        .end(6_000)
        .build();
    let verdict = judge(&history, Property::RenewalSafety);
    assert_status(&verdict, Status::Violated);
    assert_eq!(verdict.slice.op_ids, [1, 2]);
    assert!(
        verdict.explanation.contains("at most 5000 ms"),
        "{}",
        verdict.explanation
    );
}

#[test]
fn renewal_safety_holds_for_bounded_own_renewals() {
    let history = builder()
        .acquired("w1", "o1", (0, 5), 1)
        .set(3, "o1")
        .renewed("w1", "o1", (300, 305))
        .renewed("w1", "o1", (600, 605))
        // The reply was lost, but the renew ran: still the owner's own.
        .op(
            "w1",
            Some("o1"),
            OpKind::Renew,
            900,
            Some(1_400),
            Outcome::Indeterminate("timeout".into()),
        )
        // The job ended before its lease did.
        .report("w1", Some("j1"), JobReport::Success, 2_100)
        .expired(2_200, "o1")
        .end(3_000)
        .build();
    assert_status(&judge(&history, Property::RenewalSafety), Status::Held);
    // No write at all: the write properties had nothing to judge.
    for verdict in check(&history) {
        let idle = matches!(
            verdict.property,
            Property::FenceOrder
                | Property::StaleOwnerRejected
                | Property::UnfencedStaleWrite
                | Property::ExactlyOnce
                | Property::UnlockSafety
                | Property::FailClosed
                | Property::NoOverlappingHolders
                | Property::Contention
        );
        let expected = if idle {
            Status::NotExercised
        } else {
            Status::Held
        };
        assert_status(&verdict, expected);
    }
}

#[test]
fn renewal_safety_with_no_expiry_and_no_renew_is_not_exercised() {
    // mutual-exclusion × static-owner used to read "held" here, with "0 key
    // expiries … 0 confirmed renews".
    let history = builder()
        .acquired("w1", "o1", (0, 5), 1)
        .set(3, "o1")
        .released("w1", "o1", (300, 305), true)
        .deleted(303, "o1")
        .end(1_000)
        .build();
    let verdict = judge(&history, Property::RenewalSafety);
    assert_status(&verdict, Status::NotExercised);
    assert_eq!(
        verdict.explanation,
        "nothing to judge: no lock key expired and no renew was confirmed"
    );
}

#[test]
fn renewal_safety_without_ownership_log_still_judges_limits() {
    let mut history = renew_without_owner_check();
    history.redis_truth = None;
    assert_status(&judge(&history, Property::RenewalSafety), Status::Undecided);
    let history = unbounded_renewal(4, 300).without_redis_truth().build();
    assert_status(&judge(&history, Property::RenewalSafety), Status::Violated);
}

// ----------------------------------------------------------- fence-uniqueness

/// Redis counter across failover: the INCR that issued fence 5 was not
/// replicated; the promoted replica issues 5 again.
#[test]
fn fence_uniqueness_catches_counter_regression_across_failover() {
    let history = builder()
        .acquired("w1", "o1", (0, 5), 5) // op 1
        .fault(50, Fault::CutReplication)
        .fault(100, Fault::FailOver)
        .acquired("w2", "o2", (1_100, 1_105), 5) // op 2
        .without_redis_truth()
        .end(2_000)
        .build();
    let verdict = judge(&history, Property::FenceUniqueness);
    assert_status(&verdict, Status::Violated);
    assert_eq!(verdict.slice.op_ids, [1, 2]);
    assert_eq!(
        verdict.explanation,
        "fence 5 was issued to owner o1 (worker w1) at 5 ms and again to owner o2 (worker w2) \
         at 1105 ms"
    );
}

/// static-owner: every worker uses the same token, so the idempotent acquire
/// answers "already yours" to a second worker with the holder's fence.
#[test]
fn fence_uniqueness_catches_static_owner() {
    let history = builder()
        .acquired("w1", "static", (0, 5), 1)
        .acquired("w2", "static", (100, 105), 1)
        .end(200)
        .build();
    let verdict = judge(&history, Property::FenceUniqueness);
    assert_status(&verdict, Status::Violated);
    assert_eq!(verdict.slice.op_ids, [1, 2]);
}

#[test]
fn fence_uniqueness_allows_a_reask_by_the_same_acquisition() {
    let history = builder()
        .op(
            "w1",
            Some("o1"),
            OpKind::Acquire,
            0,
            Some(500),
            Outcome::Indeterminate("reply lost".into()),
        )
        .acquired("w1", "o1", (500, 505), 1)
        .acquired("w1", "o1", (510, 515), 1)
        .acquired("w2", "o2", (2_000, 2_005), 2)
        .end(3_000)
        .build();
    assert_status(&judge(&history, Property::FenceUniqueness), Status::Held);
}

// --------------------------------------------------------------- exactly-once

/// The job is applied under fence 1, the worker crashes before the ack, the
/// queue redelivers, and a store without the completion check applies it again.
fn redelivered_twice(store_job_ids: bool) -> History {
    let logged = |job| if store_job_ids { Some(job) } else { None };
    builder()
        .acquired("w1", "o1", (0, 5), 1) // op 1
        .write(
            "w1",
            "o1",
            1,
            Some("j1"),
            (100, 110),
            OkValue::WriteAccepted,
        ) // op 2
        .fence_log(105, "o1", 1, logged("j1"), FenceOutcome::Accepted) // seq 1
        .crash(120, 1)
        .acquired("w2", "o2", (1_100, 1_105), 2) // op 3
        .write(
            "w2",
            "o2",
            2,
            Some("j1"),
            (1_200, 1_210),
            OkValue::WriteAccepted,
        ) // op 4
        .fence_log(1_205, "o2", 2, logged("j1"), FenceOutcome::Accepted) // seq 2
        .report("w2", Some("j1"), JobReport::Success, 1_300)
        .without_redis_truth()
        .end(2_000)
        .build()
}

#[test]
fn exactly_once_catches_a_redelivered_job_applied_twice() {
    for store_job_ids in [true, false] {
        let verdict = judge(&redelivered_twice(store_job_ids), Property::ExactlyOnce);
        assert_status(&verdict, Status::Violated);
        assert_eq!(fence_seqs(&verdict), [1, 2]);
        assert_eq!(verdict.slice.op_ids, [2, 4]);
        assert!(verdict.explanation.starts_with("job j1 was applied twice"));
    }
}

#[test]
fn exactly_once_holds_when_the_redelivery_is_a_duplicate() {
    let history = builder()
        .acquired("w1", "o1", (0, 5), 1)
        .write(
            "w1",
            "o1",
            1,
            Some("j1"),
            (100, 110),
            OkValue::WriteAccepted,
        )
        .fence_log(105, "o1", 1, Some("j1"), FenceOutcome::Accepted)
        .acquired("w2", "o2", (1_100, 1_105), 2)
        .write(
            "w2",
            "o2",
            2,
            Some("j1"),
            (1_200, 1_210),
            OkValue::AlreadyDone,
        )
        .fence_log(1_205, "o2", 2, Some("j1"), FenceOutcome::Duplicate)
        .report("w2", Some("j1"), JobReport::AlreadyDone, 1_300)
        .end(2_000)
        .build();
    assert_status(&judge(&history, Property::ExactlyOnce), Status::Held);
    let mut history = history;
    history.store_truth = None;
    assert_status(&judge(&history, Property::ExactlyOnce), Status::Undecided);
}

// ---------------------------------------------------------------- fail-closed

#[test]
fn fail_closed_catches_a_write_without_acquire() {
    let history = builder()
        .write("w1", "o1", 7, None, (100, 110), OkValue::WriteAccepted) // op 1
        .fence_log(105, "o1", 7, None, FenceOutcome::Accepted)
        .end(200)
        .build();
    let verdict = judge(&history, Property::FailClosed);
    assert_status(&verdict, Status::Violated);
    assert_eq!(fence_seqs(&verdict), [1]);
    assert_eq!(verdict.slice.op_ids, [1]);
    assert_eq!(
        verdict.explanation,
        "write by owner o1 with fence 7 was accepted at 105 ms (seq 1), but o1 never invoked an \
         acquire"
    );
}

/// lock-before-fence: the lock is set, the INCR fails, and the client goes
/// ahead without a fence of its own — though the lock issues fences (w2
/// got one before).
#[test]
fn fail_closed_catches_lock_before_fence() {
    let fenceless = |b: HistoryBuilder| {
        b.op(
            "w1",
            Some("o1"),
            OpKind::Acquire,
            0,
            Some(5),
            Outcome::Ok(OkValue::Acquired { fence: None }),
        )
        .set(3, "o1")
        .write("w1", "o1", 0, None, (100, 110), OkValue::WriteAccepted)
        .fence_log(105, "o1", 0, None, FenceOutcome::Accepted)
        .end(2_000)
    };
    let fenced_before = builder()
        .acquired("w2", "o2", (0, 1), 1) // op 1
        .released("w2", "o2", (1, 2), true); // op 2
    let history = fenceless(fenced_before).build(); // ops 3 (acquire), 4 (write)
    let verdict = judge(&history, Property::FailClosed);
    assert_status(&verdict, Status::Violated);
    assert_eq!(verdict.slice.op_ids, [4, 3]);
    assert!(
        verdict.explanation.ends_with(
            "its acquire (op 3) issued no fence, though this lock issues fences: it wrote \
             without one instead of failing closed"
        ),
        "{}",
        verdict.explanation
    );

    // A lock that issues no fences at all (plain SET NX PX) cannot fail
    // closed on one: its write followed a successful acquire, and whether it
    // was stale is unfenced-stale-write's question (here: inside the lease).
    let plain = fenceless(builder()).build();
    assert_status(&judge(&plain, Property::FailClosed), Status::Held);
    assert_status(&judge(&plain, Property::UnfencedStaleWrite), Status::Held);
    assert_status(&judge(&plain, Property::FenceOrder), Status::NotExercised);
}

/// lock-before-fence, as the mutant really behaves: the lock is set, the
/// INCR fails, the client reports the failure and walks away — leaving a
/// lock nobody holds until it expires.
#[test]
fn fail_closed_catches_a_lock_left_by_a_failed_acquire() {
    let failed = |b: HistoryBuilder| {
        b.op(
            "w1",
            Some("o1"),
            OpKind::Acquire,
            0,
            Some(5),
            Outcome::Fail("ERR value is not an integer or out of range".into()),
        ) // op 1
        .set(3, "o1")
    };
    let history = failed(builder()).expired(1_003, "o1").end(2_000).build();
    let verdict = judge(&history, Property::FailClosed);
    assert_status(&verdict, Status::Violated);
    assert_eq!(verdict.slice.op_ids, [1]);
    assert_eq!(verdict.slice.ownership.len(), 2);
    assert!(verdict
        .explanation
        .contains("stayed until it expired at 1003 ms"));

    // Cleaned up by the client: fine.
    let history = failed(builder()).deleted(40, "o1").end(2_000).build();
    assert_status(&judge(&history, Property::FailClosed), Status::Held);

    // Expired before the failure was answered (the client was paused past
    // its lease, then its fence source failed): nothing was left behind.
    // Found by `redfence explore` against the reference.
    let mut history = failed(builder()).expired(1_003, "o1").end(2_000).build();
    history.ops[0].complete_ms = Some(1_020);
    assert_status(&judge(&history, Property::FailClosed), Status::Held);

    // After an injected fault the give-back may not have got through: not
    // judged.
    let history = failed(builder().fault(1, Fault::PartitionRedis(1)))
        .expired(1_003, "o1")
        .end(2_000)
        .build();
    assert_status(&judge(&history, Property::FailClosed), Status::Held);

    // Without the ownership log the rule cannot see the lock.
    let mut history = failed(builder()).expired(1_003, "o1").end(2_000).build();
    history.redis_truth = None;
    let verdict = judge(&history, Property::FailClosed);
    assert_status(&verdict, Status::Undecided);
    assert!(verdict.explanation.contains("is unknown"));
}

#[test]
fn fail_closed_catches_a_write_after_an_indeterminate_acquire() {
    let history = builder()
        .op(
            "w1",
            Some("o1"),
            OpKind::Acquire,
            0,
            Some(500),
            Outcome::Indeterminate("reply lost".into()),
        ) // op 1
        .write("w1", "o1", 3, None, (600, 610), OkValue::WriteAccepted) // op 2
        .fence_log(605, "o1", 3, None, FenceOutcome::Accepted)
        .end(1_000)
        .build();
    let verdict = judge(&history, Property::FailClosed);
    assert_status(&verdict, Status::Violated);
    assert_eq!(verdict.slice.op_ids, [2, 1]);
    assert!(verdict
        .explanation
        .contains("ended indeterminate (reply lost)"));
}

#[test]
fn fail_closed_ignores_rejected_writes_without_an_acquire() {
    // Only accepted writes matter: the store refusing a rogue write is fine,
    // and with no acquire failing either, there is nothing to judge.
    let history = builder()
        .write(
            "w9",
            "o9",
            7,
            None,
            (100, 110),
            OkValue::WriteStale { last_fence: 9 },
        )
        .fence_log(105, "o9", 7, None, FenceOutcome::Stale)
        .end(200)
        .build();
    assert_status(&judge(&history, Property::FailClosed), Status::NotExercised);
    let mut history = history;
    history.store_truth = None;
    assert_status(&judge(&history, Property::FailClosed), Status::Undecided);
}

// ----------------------------------------------------------- bounded-liveness

/// no-ttl (or setnx-then-expire with a crash between the two): the lock is
/// set without a deadline, its holder crashes, and nobody gets it again.
fn lock_without_ttl() -> History {
    let mut b = builder()
        .acquired("w1", "o1", (0, 5), 1) // op 1
        .set(3, "o1") // redis 0
        .crash(10, 1);
    for n in 0..5 {
        let at_ms = 1_000 + 1_000 * n;
        b = b.contended("w2", "o2", (at_ms, at_ms + 5));
    }
    b.report("w2", Some("j2"), JobReport::RetryLater, 6_000)
        .end(20_000)
        .build()
}

#[test]
fn bounded_liveness_catches_a_lock_without_ttl() {
    let verdict = judge(&lock_without_ttl(), Property::BoundedLiveness);
    assert_status(&verdict, Status::Violated);
    assert_eq!(ownership_indexes(&verdict), [0]);
    assert!(verdict.slice.op_ids.is_empty());
    assert_eq!(
        verdict.explanation,
        "owner o1 held the lock lock:account-7 on redis-0 for 19997 ms (from 3 ms and still held \
         it at the end of the run at 20000 ms), longer than max hold 5000 ms + lease 1000 ms + \
         tolerance 10 ms"
    );
}

/// setnx-then-expire: SETNX succeeds, the client crashes before its EXPIRE,
/// and the key has no deadline. The crashed worker is excused from
/// contending; the key that outlives its bound is not.
#[test]
fn bounded_liveness_catches_setnx_then_expire() {
    let history = builder()
        .op(
            "w1",
            Some("o1"),
            OpKind::Acquire,
            0,
            None,
            Outcome::Indeterminate("crashed".into()),
        )
        .set(2, "o1") // redis 0: SETNX, no TTL
        .crash(3, 1)
        .contended("w2", "o2", (1_000, 1_005))
        .contended("w2", "o2", (4_000, 4_005))
        .report("w2", Some("j2"), JobReport::RetryLater, 5_000)
        .end(9_000)
        .build();
    let verdict = judge(&history, Property::BoundedLiveness);
    assert_status(&verdict, Status::Violated);
    assert_eq!(ownership_indexes(&verdict), [0]);
    assert!(
        verdict.explanation.contains("for 8998 ms"),
        "{}",
        verdict.explanation
    );
}

#[test]
fn bounded_liveness_catches_unbounded_renewal() {
    let history = unbounded_renewal(30, 300).end(10_000).build();
    let verdict = judge(&history, Property::BoundedLiveness);
    assert_status(&verdict, Status::Violated);
    assert_eq!(ownership_indexes(&verdict), [0, 1]);
    assert!(
        verdict.explanation.contains("ended by deletion"),
        "{}",
        verdict.explanation
    );
}

#[test]
fn bounded_liveness_catches_a_starved_contender() {
    let history = builder()
        .acquired("w1", "o1", (0, 5), 1)
        .set(3, "o1")
        .contended("w2", "o2", (100, 105)) // op 2
        .contended("w2", "o2", (300, 305)) // op 3
        .contended("w2", "o2", (700, 705)) // op 4
        .report("w2", Some("j2"), JobReport::Failed, 800) // op 5
        .released("w1", "o1", (900, 905), true)
        .deleted(903, "o1")
        .end(1_000)
        .build();
    let verdict = judge(&history, Property::BoundedLiveness);
    assert_status(&verdict, Status::Violated);
    assert_eq!(verdict.slice.op_ids, [2, 4, 5]);
    assert_eq!(
        verdict.explanation,
        "worker w2 invoked acquire 3 times from 100 ms to 700 ms and never acquired; its last \
         report was \"failed\" at 800 ms"
    );
    // The same starvation is decided without the ownership log.
    let mut history = history;
    history.redis_truth = None;
    assert_status(
        &judge(&history, Property::BoundedLiveness),
        Status::Violated,
    );
}

/// A worker that failed a job, kept contending and then crashed between
/// attempts (every op answered) is not starved: it is dead. Found by
/// `redfence explore` against the reference.
#[test]
fn bounded_liveness_excuses_a_worker_crashed_between_attempts() {
    let starved = || {
        builder()
            .acquired("w1", "o1", (0, 5), 1)
            .set(3, "o1")
            .contended("w2", "o2", (100, 105))
            .report("w2", Some("j2"), JobReport::Failed, 200)
            .contended("w2", "o3", (300, 305))
            .released("w1", "o1", (900, 905), true)
            .deleted(903, "o1")
    };
    let crashed = starved().crash(400, 2).end(1_000).build();
    assert_status(&judge(&crashed, Property::BoundedLiveness), Status::Held);
    // Some other fault on w2 excuses nothing.
    let paused = starved()
        .fault(400, Fault::PauseWorker(2))
        .end(1_000)
        .build();
    assert_status(&judge(&paused, Property::BoundedLiveness), Status::Violated);
}

#[test]
fn bounded_liveness_excuses_a_worker_cut_off_while_waiting() {
    let history = builder()
        .acquired("w1", "o1", (0, 5), 1)
        .set(3, "o1")
        .contended("w2", "o2", (100, 105))
        .op(
            "w2",
            Some("o2"),
            OpKind::Acquire,
            300,
            None,
            Outcome::Indeterminate("crashed".into()),
        )
        .released("w1", "o1", (900, 905), true)
        .deleted(903, "o1")
        .end(1_000)
        .build();
    assert_status(&judge(&history, Property::BoundedLiveness), Status::Held);
    let mut history = history;
    history.redis_truth = None;
    assert_status(
        &judge(&history, Property::BoundedLiveness),
        Status::Undecided,
    );
}

// ---------------------------------------------------------------------- serde

#[test]
fn history_and_verdicts_round_trip_through_json() {
    let mut history = no_fence_check();
    history.ops.push(Op {
        id: 99,
        worker: "w3".into(),
        owner: None,
        kind: OpKind::Report {
            outcome: JobReport::Failed,
            job_id: Some("j3".into()),
        },
        invoke_ms: 1_900,
        complete_ms: None,
        outcome: Outcome::Indeterminate("crashed".into()),
    });
    let log = history.redis_truth.as_mut().unwrap();
    log.push(OwnershipRecord {
        at_ms: 1_950,
        server: "redis-1".into(),
        key: "lock:account-7".into(),
        change: OwnershipChange::Overwritten {
            from: "o2".into(),
            to: "o3".into(),
        },
    });
    log.push(OwnershipRecord {
        at_ms: 1_960,
        server: "redis-1".into(),
        key: "lock:account-7".into(),
        change: OwnershipChange::Lost { owner: "o3".into() },
    });
    let json = serde_json::to_string_pretty(&history).unwrap();
    let back: History = serde_json::from_str(&json).unwrap();
    assert_eq!(back, history);
    assert!(json.contains("\"write-accepted\""), "{json}");

    let verdicts = check(&history);
    let json = serde_json::to_string(&verdicts).unwrap();
    let back: Vec<Verdict> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, verdicts);
    assert!(json.contains("\"property\":\"fence-order\""), "{json}");
    assert!(json.contains("\"status\":\"violated\""), "{json}");
}

#[test]
fn check_is_deterministic() {
    for history in [
        correct(),
        no_fence_check(),
        del_unlock(),
        lock_without_ttl(),
    ] {
        let first = serde_json::to_string(&check(&history)).unwrap();
        let second = serde_json::to_string(&check(&history.clone())).unwrap();
        assert_eq!(first, second);
    }
}
