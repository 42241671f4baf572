//! The simulated fenced store under turmoil: the Postgres store's behaviour
//! (as `core/tests/real/store.rs` pins it down), reached over simulated TCP,
//! with lost replies, partitions, held links, a store restart, malformed
//! input, and the same seed giving the same fence log.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, UNIX_EPOCH};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use redfence_core::{
    Fence, FenceOutcome, FencedStore, FencedWrite, JobId, JobOutcome, JobWrite, OwnerToken,
    ResourceName, StoreError, WriteOutcome,
};
use redfence_sim::store::{serve, SimStoreClient, StoreState, STORE_PORT};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const STORE: &str = "store";
const CLIENT: &str = "client";
const OP_TIMEOUT: Duration = Duration::from_millis(100);
/// Bounds the stepped tests' driver loops (1 ms ticks).
const STEPS_MAX: usize = 10_000;

fn builder(seed: u64) -> turmoil::Builder {
    let mut builder = turmoil::Builder::new();
    builder
        .rng_seed(seed)
        .epoch(UNIX_EPOCH)
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(1))
        .simulation_duration(Duration::from_secs(60));
    builder
}

/// A sim with the store host serving `state`.
fn sim_with_store(builder: &turmoil::Builder, state: &StoreState) -> turmoil::Sim<'static> {
    let mut sim = builder.build();
    let served = state.clone();
    sim.host(STORE, move || serve(served.clone()));
    sim
}

fn resource(name: &str) -> ResourceName {
    ResourceName::new(name).unwrap()
}

fn write(resource: &ResourceName, fence: i64, value: &str) -> FencedWrite {
    FencedWrite {
        resource: resource.clone(),
        fence: Fence::new(fence).unwrap(),
        owner: OwnerToken::new(format!("owner-{fence}")).unwrap(),
        value: value.to_owned(),
    }
}

fn job(job_id: &str, resource: &ResourceName, fence: i64, value: &str) -> JobWrite {
    JobWrite {
        job_id: JobId::new(job_id).unwrap(),
        write: write(resource, fence, value),
    }
}

fn outcomes(state: &StoreState, resource: &str) -> Vec<(i64, FenceOutcome)> {
    state
        .fence_log(resource)
        .iter()
        .map(|e| (e.fence, e.outcome))
        .collect()
}

fn client() -> SimStoreClient {
    SimStoreClient::new(STORE, OP_TIMEOUT)
}

#[test]
fn single_statement_tells_stale_from_not_found() {
    let state = StoreState::default();
    let mut sim = sim_with_store(&builder(1), &state);
    let seen = state.clone();
    sim.client(CLIENT, async move {
        let store = client();
        let r = resource("single");
        assert_eq!(
            store.write_fenced(&write(&r, 1, "x")).await?,
            WriteOutcome::NotFound
        );
        assert_eq!(store.read(&r).await?, None);
        store.ensure_resource(&r).await?;
        assert_eq!(store.read(&r).await?, Some((String::new(), 0)));
        assert_eq!(
            store.write_fenced(&write(&r, 41, "a")).await?,
            WriteOutcome::Accepted
        );
        assert_eq!(
            store.write_fenced(&write(&r, 42, "b")).await?,
            WriteOutcome::Accepted
        );
        // The article's example: A holds 41, B wrote with 42, A comes back.
        assert_eq!(
            store.write_fenced(&write(&r, 41, "stale")).await?,
            WriteOutcome::Stale { last_fence: 42 }
        );
        assert_eq!(
            store.write_fenced(&write(&r, 42, "same")).await?,
            WriteOutcome::Stale { last_fence: 42 },
            "an equal fence is not newer"
        );
        // Values with newlines, spaces and the encoding's own colons round-trip.
        let odd = "multi\nline value: 3:abc ✓";
        assert_eq!(
            store.write_fenced(&write(&r, 43, odd)).await?,
            WriteOutcome::Accepted
        );
        assert_eq!(store.read(&r).await?, Some((odd.to_owned(), 43)));

        let log = store.fence_log(&r).await?;
        assert_eq!(
            log,
            seen.fence_log("single"),
            "the client sees the server's log"
        );
        let fences: Vec<_> = log.iter().map(|e| (e.fence, e.outcome)).collect();
        assert_eq!(
            fences,
            [
                (1, FenceOutcome::NotFound),
                (41, FenceOutcome::Accepted),
                (42, FenceOutcome::Accepted),
                (41, FenceOutcome::Stale),
                (42, FenceOutcome::Stale),
                (43, FenceOutcome::Accepted),
            ]
        );
        assert!(log.windows(2).all(|w| w[0].seq < w[1].seq));
        assert!(log.windows(2).all(|w| w[0].at_ms <= w[1].at_ms));
        assert!(log.iter().all(|e| e.job_id.is_none()));
        assert_eq!(log[3].owner, "owner-41");
        Ok(())
    });
    sim.run().unwrap();
    assert_eq!(state.read("single").unwrap().1, 43);
}

#[test]
fn job_completion_is_idempotent_on_redelivery() {
    let state = StoreState::default();
    let mut sim = sim_with_store(&builder(2), &state);
    sim.client(CLIENT, async move {
        let store = client();
        let r = resource("job");
        let job_id = JobId::new("job-1").unwrap();
        assert_eq!(
            store.apply_job(&job("job-1", &r, 1, "x")).await?,
            JobOutcome::NotFound
        );
        store.ensure_resource(&r).await?;
        assert!(!store.is_completed(&job_id).await?);
        assert_eq!(
            store.apply_job(&job("job-1", &r, 1, "first")).await?,
            JobOutcome::Applied
        );
        assert!(store.is_completed(&job_id).await?);
        // Redelivered after a crash before the ack, under a newer lease.
        assert_eq!(
            store.apply_job(&job("job-1", &r, 2, "second")).await?,
            JobOutcome::AlreadyDone
        );
        assert_eq!(store.read(&r).await?, Some(("first".into(), 1)));
        // The duplicate did not raise the guard either: fence 2 is still usable.
        assert_eq!(
            store.apply_job(&job("other", &r, 2, "other")).await?,
            JobOutcome::Applied
        );
        assert_eq!(
            store.apply_job(&job("third", &r, 2, "late")).await?,
            JobOutcome::Stale { last_fence: 2 }
        );
        let log = store.fence_log(&r).await?;
        let seen: Vec<_> = log
            .iter()
            .map(|e| (e.fence, e.outcome, e.job_id.as_deref().unwrap()))
            .collect();
        assert_eq!(
            seen,
            [
                (1, FenceOutcome::NotFound, "job-1"),
                (1, FenceOutcome::Accepted, "job-1"),
                (2, FenceOutcome::Duplicate, "job-1"),
                (2, FenceOutcome::Accepted, "other"),
                (2, FenceOutcome::Stale, "third"),
            ]
        );
        Ok(())
    });
    sim.run().unwrap();
    assert_eq!(state.completed_jobs(), ["job-1", "other"]);
}

#[test]
fn fence_log_times_are_simulated_milliseconds() {
    let state = StoreState::default();
    let mut sim = sim_with_store(&builder(3), &state);
    sim.client(CLIENT, async move {
        let store = client();
        let r = resource("clock");
        store.ensure_resource(&r).await?;
        store.write_fenced(&write(&r, 1, "a")).await?;
        tokio::time::sleep(Duration::from_secs(5)).await;
        store.write_fenced(&write(&r, 2, "b")).await?;
        Ok(())
    });
    sim.run().unwrap();
    let log = state.fence_log("clock");
    assert_eq!(log.len(), 2);
    assert!(log[0].at_ms < 100, "first write early in the run: {log:?}");
    let gap_ms = log[1].at_ms - log[0].at_ms;
    assert!((5_000..5_100).contains(&gap_ms), "gap {gap_ms} ms");
}

#[test]
fn lost_reply_one_way_partition_applies_but_times_out() {
    let state = StoreState::default();
    let mut sim = sim_with_store(&builder(4), &state);
    let seen = state.clone();
    sim.client(CLIENT, async move {
        let store = client();
        let r = resource("lost");
        store.ensure_resource(&r).await?;
        // Replies from the store are dropped; requests still arrive.
        turmoil::partition_oneway(STORE, CLIENT);
        let err = store
            .apply_job(&job("job-1", &r, 1, "done"))
            .await
            .unwrap_err();
        assert!(
            matches!(err, StoreError::Timeout(t) if t == OP_TIMEOUT),
            "{err:?}"
        );
        // ...yet the job ran.
        assert_eq!(seen.read("lost"), Some(("done".into(), 1)));
        assert_eq!(seen.completed_jobs(), ["job-1"]);
        turmoil::repair_oneway(STORE, CLIENT);

        // The next call reconnects. Retrying under the same fence is stale:
        // as in Postgres, the guard check comes before the completion check.
        assert_eq!(
            store.apply_job(&job("job-1", &r, 1, "done")).await?,
            JobOutcome::Stale { last_fence: 1 }
        );
        // Redelivered under a newer lease: recognised as done, nothing changes.
        assert_eq!(
            store.apply_job(&job("job-1", &r, 2, "again")).await?,
            JobOutcome::AlreadyDone
        );
        assert!(store.is_completed(&JobId::new("job-1").unwrap()).await?);
        assert_eq!(store.read(&r).await?, Some(("done".into(), 1)));
        Ok(())
    });
    sim.run().unwrap();
    assert_eq!(
        outcomes(&state, "lost"),
        [
            (1, FenceOutcome::Accepted),
            (1, FenceOutcome::Stale),
            (2, FenceOutcome::Duplicate),
        ]
    );
}

#[test]
fn lost_reply_held_after_delivery_applies_but_times_out() {
    let state = StoreState::default();
    let mut sim = sim_with_store(&builder(5), &state);
    let timed_out = Rc::new(Cell::new(false));
    let flag = timed_out.clone();
    sim.client(CLIENT, async move {
        let store = client();
        let r = resource("held");
        store.ensure_resource(&r).await?;
        let err = store
            .apply_job(&job("job-1", &r, 1, "done"))
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::Timeout(_)), "{err:?}");
        flag.set(true);
        // The driver releases the link while this sleeps.
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(
            store.apply_job(&job("job-1", &r, 2, "again")).await?,
            JobOutcome::AlreadyDone
        );
        Ok(())
    });
    // Step until the request has executed, then hold the link: the reply
    // (in flight for 1 ms) is caught on the wire.
    let mut steps = 0;
    while !state.is_completed("job-1") {
        assert!(!sim.step().unwrap(), "client finished early");
        steps += 1;
        assert!(steps < STEPS_MAX, "the request never executed");
    }
    sim.hold(CLIENT, STORE);
    while !timed_out.get() {
        sim.step().unwrap();
        steps += 1;
        assert!(steps < STEPS_MAX, "the client never timed out");
    }
    sim.release(CLIENT, STORE);
    sim.run().unwrap();
    assert_eq!(state.read("held"), Some(("done".into(), 1)));
    assert_eq!(
        outcomes(&state, "held"),
        [(1, FenceOutcome::Accepted), (2, FenceOutcome::Duplicate)]
    );
}

#[test]
fn partition_times_out_applies_nothing_and_recovers_after_repair() {
    let state = StoreState::default();
    let mut sim = sim_with_store(&builder(6), &state);
    let seen = state.clone();
    sim.client(CLIENT, async move {
        let store = client();
        let r = resource("part");
        store.ensure_resource(&r).await?;
        turmoil::partition(CLIENT, STORE);
        // On the open connection: sent, lost, outcome unknown.
        let err = store.write_fenced(&write(&r, 1, "lost")).await.unwrap_err();
        assert!(matches!(err, StoreError::Timeout(_)), "{err:?}");
        // The connection was dropped; reconnecting cannot get through.
        let err = store.write_fenced(&write(&r, 2, "lost")).await.unwrap_err();
        assert!(matches!(&err, StoreError::NotSent(_)), "{err:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(
            seen.fence_log("part").is_empty(),
            "nothing reached the store"
        );
        turmoil::repair(CLIENT, STORE);
        assert_eq!(
            store.write_fenced(&write(&r, 3, "ok")).await?,
            WriteOutcome::Accepted
        );
        assert_eq!(store.read(&r).await?, Some(("ok".into(), 3)));
        Ok(())
    });
    sim.run().unwrap();
    assert_eq!(outcomes(&state, "part"), [(3, FenceOutcome::Accepted)]);
}

#[test]
fn a_held_request_times_out_then_executes_late_on_release() {
    // `hold` models an outage TCP rides out: what was sent arrives afterwards,
    // even though the client gave up. The fence is what makes that safe.
    let state = StoreState::default();
    let mut sim = sim_with_store(&builder(7), &state);
    let seen = state.clone();
    sim.client(CLIENT, async move {
        let store = client();
        let r = resource("late");
        store.ensure_resource(&r).await?;
        turmoil::hold(CLIENT, STORE);
        let err = store.write_fenced(&write(&r, 1, "late")).await.unwrap_err();
        assert!(matches!(err, StoreError::Timeout(_)), "{err:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(seen.fence_log("late").is_empty(), "held, not delivered");
        turmoil::release(CLIENT, STORE);
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(
            seen.read("late"),
            Some(("late".into(), 1)),
            "delivered late"
        );
        assert_eq!(
            store.write_fenced(&write(&r, 2, "next")).await?,
            WriteOutcome::Accepted
        );
        Ok(())
    });
    sim.run().unwrap();
    assert_eq!(
        outcomes(&state, "late"),
        [(1, FenceOutcome::Accepted), (2, FenceOutcome::Accepted)]
    );
}

#[test]
fn store_restart_keeps_committed_state_and_clients_reconnect() {
    let state = StoreState::default();
    let mut sim = sim_with_store(&builder(8), &state);
    let wrote = Rc::new(Cell::new(false));
    let flag = wrote.clone();
    sim.client(CLIENT, async move {
        let store = client();
        let r = resource("restart");
        store.ensure_resource(&r).await?;
        assert_eq!(
            store.write_fenced(&write(&r, 1, "before")).await?,
            WriteOutcome::Accepted
        );
        flag.set(true);
        // The driver restarts the store host while this sleeps.
        tokio::time::sleep(Duration::from_millis(100)).await;
        // The old connection died with the host; one failed call at most, then
        // a fresh connection. Bounded retries, as a worker's would be.
        let mut failures = 0;
        let outcome = loop {
            match store.write_fenced(&write(&r, 2, "after")).await {
                Ok(outcome) => break outcome,
                Err(e) => {
                    assert!(
                        matches!(e, StoreError::OutcomeUnknown(_) | StoreError::NotSent(_)),
                        "{e:?}"
                    );
                    failures += 1;
                    assert!(failures <= 1, "reconnect failed: {e:?}");
                }
            }
        };
        assert_eq!(outcome, WriteOutcome::Accepted);
        assert_eq!(store.read(&r).await?, Some(("after".into(), 2)));
        Ok(())
    });
    let mut steps = 0;
    while !wrote.get() {
        sim.step().unwrap();
        steps += 1;
        assert!(steps < STEPS_MAX);
    }
    sim.bounce(STORE);
    sim.run().unwrap();
    assert_eq!(
        outcomes(&state, "restart"),
        [(1, FenceOutcome::Accepted), (2, FenceOutcome::Accepted)]
    );
}

#[test]
fn malformed_input_gets_an_error_and_a_close_and_the_store_keeps_serving() {
    let state = StoreState::default();
    let mut sim = sim_with_store(&builder(9), &state);
    sim.client(CLIENT, async move {
        // A well-framed body that is not a request: an error reply, then EOF.
        let mut raw = turmoil::net::TcpStream::connect((STORE, STORE_PORT)).await?;
        let body = b"2:174:drop1:r";
        let mut frame = (body.len() as u32).to_be_bytes().to_vec();
        frame.extend_from_slice(body);
        raw.write_all(&frame).await?;
        let mut reply = Vec::new();
        raw.read_to_end(&mut reply).await?;
        let text = String::from_utf8_lossy(&reply);
        assert!(text.contains("error"), "{text}");
        assert!(text.contains("unknown operation"), "{text}");
        assert!(
            text.contains("2:17"),
            "the reply echoes the request id: {text}"
        );

        // An oversized length: closed without reading a body that never ends.
        let mut raw = turmoil::net::TcpStream::connect((STORE, STORE_PORT)).await?;
        raw.write_all(&u32::MAX.to_be_bytes()).await?;
        let mut reply = Vec::new();
        raw.read_to_end(&mut reply).await?;
        assert!(reply.is_empty());

        // Everyone else is unaffected.
        let store = client();
        let r = resource("fine");
        store.ensure_resource(&r).await?;
        assert_eq!(
            store.write_fenced(&write(&r, 1, "ok")).await?,
            WriteOutcome::Accepted
        );
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn oversized_requests_are_refused_before_sending() {
    let state = StoreState::default();
    let mut sim = sim_with_store(&builder(10), &state);
    sim.client(CLIENT, async move {
        let store = client();
        let r = resource("big");
        store.ensure_resource(&r).await?;
        let huge = "x".repeat(redfence_sim::store::frame::FRAME_BODY_LEN_MAX);
        let err = store.write_fenced(&write(&r, 1, &huge)).await.unwrap_err();
        assert!(matches!(&err, StoreError::NotSent(_)), "{err:?}");
        assert_eq!(
            store.write_fenced(&write(&r, 1, "small")).await?,
            WriteOutcome::Accepted
        );
        Ok(())
    });
    sim.run().unwrap();
    assert_eq!(outcomes(&state, "big"), [(1, FenceOutcome::Accepted)]);
}

#[test]
fn idle_connections_are_replaced_and_abandoned_ones_closed() {
    let state = StoreState::default();
    let mut b = builder(11);
    // Coarse ticks: minutes of idle time, simulated quickly.
    b.simulation_duration(Duration::from_secs(600))
        .tick_duration(Duration::from_millis(10));
    let mut sim = sim_with_store(&b, &state);
    sim.client(CLIENT, async move {
        let store = client();
        let r = resource("idle");
        store.ensure_resource(&r).await?;
        // A peer that connects and never speaks is closed by the server.
        let mut silent = turmoil::net::TcpStream::connect((STORE, STORE_PORT)).await?;
        // Idle past both the client's reuse bound and the server's idle close:
        // the client opens a fresh connection instead of failing on a closed one.
        tokio::time::sleep(Duration::from_secs(150)).await;
        assert_eq!(
            store.write_fenced(&write(&r, 1, "a")).await?,
            WriteOutcome::Accepted
        );
        let mut rest = Vec::new();
        silent.read_to_end(&mut rest).await?;
        assert!(rest.is_empty(), "closed without a reply");
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn clones_share_one_connection_one_request_at_a_time() {
    let state = StoreState::default();
    let mut sim = sim_with_store(&builder(12), &state);
    sim.client(CLIENT, async move {
        let store = client();
        let r = resource("shared");
        store.ensure_resource(&r).await?;
        let run = |store: SimStoreClient, first: i64| {
            let r = r.clone();
            async move {
                for fence in (first..first + 20).step_by(2) {
                    store.write_fenced(&write(&r, fence, "v")).await?;
                }
                Ok::<_, StoreError>(())
            }
        };
        let (a, b) = tokio::join!(run(store.clone(), 1), run(store.clone(), 2));
        a?;
        b?;
        Ok(())
    });
    sim.run().unwrap();
    let log = state.fence_log("shared");
    assert_eq!(log.len(), 20, "every call answered: {log:?}");
    assert!(log.iter().any(|e| e.outcome == FenceOutcome::Accepted));
}

/// Three clients race random fenced writes and jobs over jittery links while
/// the driver holds and releases one of them; returns the whole fence log.
fn racing_clients(seed: u64) -> String {
    let state = StoreState::default();
    let mut b = builder(seed);
    b.min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(7));
    let mut sim = sim_with_store(&b, &state);
    for index in 0..3u64 {
        sim.client(format!("client-{index}"), async move {
            let mut rng = SmallRng::seed_from_u64(seed.wrapping_mul(31).wrapping_add(index));
            let store = SimStoreClient::new(STORE, Duration::from_millis(40));
            let resources = [resource("hot"), resource("cold")];
            for r in &resources {
                // Bounded: the store is reachable at the start.
                store.ensure_resource(r).await?;
            }
            for step in 0..40 {
                let r = &resources[rng.random_range(0..resources.len())];
                // Mostly rising, sometimes behind: accepted and stale both occur.
                let fence = step + rng.random_range(1..4);
                let value = format!("c{index}-s{step}");
                // Timeouts and transport errors are expected under the holds.
                if rng.random_bool(0.5) {
                    let _ = store.write_fenced(&write(r, fence, &value)).await;
                } else {
                    let job_id = format!("job-{}", rng.random_range(0..15));
                    let _ = store.apply_job(&job(&job_id, r, fence, &value)).await;
                }
                tokio::time::sleep(Duration::from_millis(rng.random_range(0..5))).await;
            }
            Ok(())
        });
    }
    for step in 0..STEPS_MAX {
        if step % 97 == 13 {
            sim.hold("client-1", STORE);
        }
        if step % 97 == 60 {
            sim.release("client-1", STORE);
        }
        if sim.step().unwrap() {
            break;
        }
    }
    let log = state.all_fence_log();
    assert!(log.len() > 60, "the race did happen: {} rows", log.len());
    format!("{log:?}")
}

#[test]
fn the_same_seed_gives_the_same_fence_log() {
    let first = racing_clients(42);
    let second = racing_clients(42);
    assert_eq!(first, second);
    // Sanity: the log depends on the seed at all (not a constant).
    assert_ne!(first, racing_clients(43));
}
