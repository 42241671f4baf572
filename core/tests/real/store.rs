//! The Postgres fenced store: single-statement fencing, the guard-row
//! transaction, idempotent completion, the durable fence counter and the
//! append-only log.

use redfence_core::*;

use crate::support::*;

fn write(resource: &ResourceName, fence: i64, value: &str) -> FencedWrite {
    FencedWrite {
        resource: resource.clone(),
        fence: Fence::new(fence).unwrap(),
        owner: OwnerToken::new(format!("owner-{fence}")).unwrap(),
        value: value.to_owned(),
    }
}

#[tokio::test]
async fn single_statement_tells_stale_from_not_found() {
    let store = store().await;
    let resource = fresh_resource("single");
    assert_eq!(
        store.write_fenced(&write(&resource, 1, "x")).await.unwrap(),
        WriteOutcome::NotFound
    );
    store.ensure_resource(&resource).await.unwrap();
    assert_eq!(
        store
            .write_fenced(&write(&resource, 41, "a"))
            .await
            .unwrap(),
        WriteOutcome::Accepted
    );
    assert_eq!(
        store
            .write_fenced(&write(&resource, 42, "b"))
            .await
            .unwrap(),
        WriteOutcome::Accepted
    );
    // The article's example: A holds 41, B wrote with 42, A comes back.
    assert_eq!(
        store
            .write_fenced(&write(&resource, 41, "stale"))
            .await
            .unwrap(),
        WriteOutcome::Stale { last_fence: 42 }
    );
    assert_eq!(
        store
            .write_fenced(&write(&resource, 42, "same"))
            .await
            .unwrap(),
        WriteOutcome::Stale { last_fence: 42 },
        "an equal fence is not newer"
    );
    assert_eq!(store.read(&resource).await.unwrap(), Some(("b".into(), 42)));
    let log = store.fence_log(&resource).await.unwrap();
    let seen: Vec<_> = log.iter().map(|e| (e.fence, e.outcome)).collect();
    assert_eq!(
        seen,
        vec![
            (1, FenceOutcome::NotFound),
            (41, FenceOutcome::Accepted),
            (42, FenceOutcome::Accepted),
            (41, FenceOutcome::Stale),
            (42, FenceOutcome::Stale),
        ]
    );
    assert!(log.windows(2).all(|w| w[0].seq < w[1].seq));
}

#[tokio::test]
async fn guard_transaction_is_atomic() {
    let store = store().await;
    let resource = fresh_resource("guard");
    store.ensure_resource(&resource).await.unwrap();
    let owner = OwnerToken::new("owner-a").unwrap();
    let fence = Fence::new(5).unwrap();

    // A failing mutation rolls back the fence too.
    let GuardCheck::Open(mut tx) = store.begin_guarded(&resource, fence, &owner).await.unwrap()
    else {
        panic!("fence 5 is newer than 0");
    };
    sqlx::query("UPDATE shared_resources SET value = 'half-done' WHERE id = $1")
        .bind(resource.as_str())
        .execute(tx.conn())
        .await
        .unwrap();
    let failed = sqlx::query("INSERT INTO no_such_table VALUES (1)")
        .execute(tx.conn())
        .await;
    assert!(failed.is_err());
    assert!(
        tx.commit().await.is_err(),
        "an aborted transaction cannot commit"
    );
    assert_eq!(
        store.read(&resource).await.unwrap(),
        Some((String::new(), 0))
    );

    // The same fence succeeds when the mutations do.
    let GuardCheck::Open(mut tx) = store.begin_guarded(&resource, fence, &owner).await.unwrap()
    else {
        panic!("the rolled-back attempt must not have raised the guard");
    };
    sqlx::query("UPDATE shared_resources SET value = 'done' WHERE id = $1")
        .bind(resource.as_str())
        .execute(tx.conn())
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(store.read(&resource).await.unwrap().unwrap().0, "done");

    for stale in [5, 4] {
        match store
            .begin_guarded(&resource, Fence::new(stale).unwrap(), &owner)
            .await
            .unwrap()
        {
            GuardCheck::Stale { last_fence } => assert_eq!(last_fence, 5),
            other => panic!("fence {stale} must be refused, got {other:?}"),
        }
    }
    let missing = fresh_resource("guard-missing");
    assert!(matches!(
        store.begin_guarded(&missing, fence, &owner).await.unwrap(),
        GuardCheck::NotFound
    ));
    let outcomes: Vec<_> = store
        .fence_log(&resource)
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.fence, e.outcome))
        .collect();
    assert_eq!(
        outcomes,
        vec![
            (5, FenceOutcome::Accepted),
            (5, FenceOutcome::Stale),
            (4, FenceOutcome::Stale)
        ]
    );
}

#[tokio::test]
async fn job_completion_is_idempotent_on_redelivery() {
    let store = store().await;
    let resource = fresh_resource("job");
    store.ensure_resource(&resource).await.unwrap();
    let job_id = JobId::new(format!("job-{}", uuid::Uuid::new_v4())).unwrap();
    let job = |fence, value: &str| JobWrite {
        job_id: job_id.clone(),
        write: write(&resource, fence, value),
    };
    assert!(!store.is_completed(&job_id).await.unwrap());
    assert_eq!(
        store.apply_job(&job(1, "first")).await.unwrap(),
        JobOutcome::Applied
    );
    assert!(store.is_completed(&job_id).await.unwrap());
    // Redelivered after a crash before the ack, under a newer lease.
    assert_eq!(
        store.apply_job(&job(2, "second")).await.unwrap(),
        JobOutcome::AlreadyDone
    );
    assert_eq!(
        store.read(&resource).await.unwrap(),
        Some(("first".into(), 1))
    );
    // The duplicate did not raise the guard either: fence 2 is still usable.
    let other = JobWrite {
        job_id: JobId::new(format!("other-{}", uuid::Uuid::new_v4())).unwrap(),
        write: write(&resource, 2, "other"),
    };
    assert_eq!(store.apply_job(&other).await.unwrap(), JobOutcome::Applied);
    let outcomes: Vec<_> = store
        .fence_log(&resource)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.outcome)
        .collect();
    assert_eq!(
        outcomes,
        vec![
            FenceOutcome::Accepted,
            FenceOutcome::Duplicate,
            FenceOutcome::Accepted
        ]
    );
}

#[tokio::test]
async fn both_write_paths_share_one_fence() {
    let store = store().await;
    let resource = fresh_resource("one-fence");
    store.ensure_resource(&resource).await.unwrap();
    assert_eq!(
        store
            .write_fenced(&write(&resource, 5, "single"))
            .await
            .unwrap(),
        WriteOutcome::Accepted
    );
    // A paused owner with a lower fence comes back through the job path.
    let stale = JobWrite {
        job_id: JobId::new(format!("job-{}", uuid::Uuid::new_v4())).unwrap(),
        write: write(&resource, 3, "stale job"),
    };
    assert_eq!(
        store.apply_job(&stale).await.unwrap(),
        JobOutcome::Stale { last_fence: 5 }
    );
    let newer = JobWrite {
        job_id: JobId::new(format!("job-{}", uuid::Uuid::new_v4())).unwrap(),
        write: write(&resource, 6, "job"),
    };
    assert_eq!(store.apply_job(&newer).await.unwrap(), JobOutcome::Applied);
    assert_eq!(
        store
            .write_fenced(&write(&resource, 6, "late"))
            .await
            .unwrap(),
        WriteOutcome::Stale { last_fence: 6 }
    );
    assert_eq!(
        store.read(&resource).await.unwrap(),
        Some(("job".into(), 6))
    );
    assert!(!store.is_completed(&stale.job_id).await.unwrap());
}

/// The fence log is the database's own: a change to the protected row
/// that did not go through a guarded write (a worker updating the table
/// directly, or deleting it) is logged anyway, at commit, as accepted with
/// no fence under an owner that names it unguarded; a guarded write is
/// logged once, and a transaction of several unguarded changes once.
#[tokio::test]
async fn a_write_around_the_guard_is_still_in_the_fence_log() {
    let store = store().await;
    let resource = fresh_resource("around");
    store.ensure_resource(&resource).await.unwrap();
    assert!(store.fence_log(&resource).await.unwrap().is_empty());
    store.write_fenced(&write(&resource, 3, "a")).await.unwrap();
    assert_eq!(store.fence_log(&resource).await.unwrap().len(), 1);
    sqlx::query("UPDATE shared_resources SET value = 'sneaky', last_fence = 7 WHERE id = $1")
        .bind(resource.as_str())
        .execute(store.pool())
        .await
        .unwrap();
    let mut tx = store.pool().begin().await.unwrap();
    for value in ["one", "two"] {
        sqlx::query("UPDATE shared_resources SET value = $2 WHERE id = $1")
            .bind(resource.as_str())
            .bind(value)
            .execute(&mut *tx)
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
    let log = store.fence_log(&resource).await.unwrap();
    assert_eq!(log.len(), 3, "{log:?}");
    for entry in &log[1..] {
        // Fence 0: it passed no fence check (and is no second write of 7).
        assert_eq!(entry.outcome, FenceOutcome::Accepted);
        assert_eq!(entry.fence, 0);
        assert!(entry.owner.starts_with("unguarded: "), "{entry:?}");
    }
    // A guarded write after them is logged once, under its owner.
    store.write_fenced(&write(&resource, 8, "b")).await.unwrap();
    let log = store.fence_log(&resource).await.unwrap();
    assert_eq!(log.len(), 4, "{log:?}");
    assert_eq!(log[3].owner, "owner-8");
    // Deleting the row (and making it anew, empty) is a write too.
    let mut tx = store.pool().begin().await.unwrap();
    sqlx::query("DELETE FROM shared_resources WHERE id = $1")
        .bind(resource.as_str())
        .execute(&mut *tx)
        .await
        .unwrap();
    sqlx::query("INSERT INTO shared_resources (id) VALUES ($1)")
        .bind(resource.as_str())
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let log = store.fence_log(&resource).await.unwrap();
    assert_eq!(log.len(), 5, "{log:?}");
    assert!(log[4].owner.contains("deleted the row"), "{:?}", log[4]);
}

#[tokio::test]
async fn fence_log_is_append_only() {
    let store = store().await;
    let resource = fresh_resource("append-only");
    store.ensure_resource(&resource).await.unwrap();
    store.write_fenced(&write(&resource, 1, "a")).await.unwrap();
    let update = sqlx::query("UPDATE fence_log SET fence = 99 WHERE resource_id = $1")
        .bind(resource.as_str())
        .execute(store.pool())
        .await;
    assert!(update.unwrap_err().to_string().contains("append-only"));
    let delete = sqlx::query("DELETE FROM fence_log WHERE resource_id = $1")
        .bind(resource.as_str())
        .execute(store.pool())
        .await;
    assert!(delete.is_err());
    assert_eq!(store.fence_log(&resource).await.unwrap().len(), 1);
}

#[tokio::test]
async fn postgres_fence_counter_increases_across_owners() {
    let store = store().await;
    let config = LockConfig::builder()
        .fence_source(FenceSourceKind::Store)
        .lease_ms(2_000)
        .build()
        .unwrap();
    let resource = fresh_resource("pg-fence");
    let mut fences = Vec::new();
    for _ in 0..6 {
        // A new client each time: different owners, as different processes would be.
        let lock = LockClient::builder(redis().await, config.clone())
            .postgres_fences(store.clone())
            .build()
            .unwrap();
        let AcquireOutcome::Acquired(lease) = lock.acquire(&resource).await.unwrap() else {
            panic!("free resource");
        };
        fences.push(lease.fence().get());
        lock.release(&lease).await.unwrap();
    }
    assert!(fences.windows(2).all(|w| w[0] < w[1]), "fences {fences:?}");
    assert_eq!(fences[0], 1);
    // The Redis counter was not used.
    let mut conn = redis().await;
    assert_eq!(get(&mut conn, &format!("fence:{{{resource}}}")).await, None);
}

#[tokio::test]
async fn invalid_store_inputs_are_typed_errors() {
    assert_eq!(JobId::new(""), Err(InvalidInput::JobId));
    assert_eq!(JobId::new("a\tb"), Err(InvalidInput::JobId));
    assert_eq!(Fence::new(0), Err(InvalidInput::Fence { value: 0 }));
    assert_eq!(Fence::new(-3), Err(InvalidInput::Fence { value: -3 }));
    let err = PgFencedStore::connect("postgres://postgres@127.0.0.1:1/redfence")
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Database(_)), "got {err:?}");
}
