//! The simulated Redis inside turmoil, driven by the real redis-rs client
//! and the unchanged redfence-core scripts and `LockClient`: the EVALSHA →
//! NOSCRIPT → SCRIPT LOAD → EVALSHA path, lease expiry on the simulated
//! clock (with the ownership log's `Expired` at the deadline), replication
//! that lags behind a held link and a failover that loses an INCR, crash →
//! `Lost`, and same seed → identical behaviour. And the commands lock
//! libraries send beyond redfence's own: BLPOP woken by a push and timing
//! out on the simulated clock, PUBLISH reaching a subscriber, MULTI/EXEC
//! with WATCH across two clients, and a hash and a transaction replicating
//! to a replica.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, UNIX_EPOCH};

use redfence_core::scripts::{ACQUIRE_LUA, RELEASE_LUA, RENEW_LUA};
use redfence_core::{AcquireOutcome, LockClient, LockConfig, Renewal, ResourceName};
use redfence_sim::redis::frame::{parse_frame, Frame};
use redfence_sim::redis::{
    serve_turmoil, OwnershipChange, OwnershipLog, RedisConfig, RedisHandle, REDIS_PORT,
};
use redis::aio::MultiplexedConnection;
use redis::Value;

fn sim(seed: u64) -> turmoil::Sim<'static> {
    turmoil::Builder::new()
        .rng_seed(seed)
        .epoch(UNIX_EPOCH)
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(1))
        .simulation_duration(Duration::from_secs(3600))
        .build()
}

/// Registers a server host; returns its handle.
fn add_redis(sim: &mut turmoil::Sim<'_>, config: RedisConfig, log: &OwnershipLog) -> RedisHandle {
    let handle = RedisHandle::default();
    let (h, l) = (handle.clone(), log.clone());
    let name = config.name.clone();
    sim.host(name, move || {
        serve_turmoil(config.clone(), l.clone(), h.clone())
    });
    handle
}

async fn connect(host: &str) -> MultiplexedConnection {
    let stream = turmoil::net::TcpStream::connect((host, REDIS_PORT))
        .await
        .expect("connect");
    let (conn, driver) = MultiplexedConnection::new_with_config(
        &redis::RedisConnectionInfo::default(),
        stream,
        redis::AsyncConnectionConfig::new(),
    )
    .await
    .expect("handshake");
    tokio::spawn(driver);
    conn
}

async fn raw(conn: &mut MultiplexedConnection, args: &[&str]) -> redis::RedisResult<Value> {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query_async(conn).await
}

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

#[test]
fn core_scripts_run_through_noscript_and_load() {
    let mut sim = sim(1);
    let log = OwnershipLog::default();
    add_redis(&mut sim, RedisConfig::new("redis"), &log);
    let log2 = log.clone();
    sim.client("worker", async move {
        let mut conn = connect("redis").await;
        let acquire = redis::Script::new(ACQUIRE_LUA);
        // The script cache starts empty: a bare EVALSHA is refused...
        let err = raw(&mut conn, &["EVALSHA", acquire.get_hash(), "0"])
            .await
            .unwrap_err();
        assert_eq!(err.code(), Some("NOSCRIPT"), "{err}");
        // ...and redis::Script recovers with SCRIPT LOAD + EVALSHA.
        let reply: Value = acquire
            .key("lock:{r}")
            .key("fence:{r}")
            .arg("w1")
            .arg(1000)
            .arg("1")
            .invoke_async(&mut conn)
            .await?;
        assert_eq!(reply, Value::Array(vec![Value::Int(1), bulk("1")]));
        let exists = raw(&mut conn, &["SCRIPT", "EXISTS", acquire.get_hash()]).await?;
        assert_eq!(exists, Value::Array(vec![Value::Int(1)]));
        // Same owner again: idempotent, same fence.
        let again: Value = acquire
            .key("lock:{r}")
            .key("fence:{r}")
            .arg("w1")
            .arg(1000)
            .arg("1")
            .invoke_async(&mut conn)
            .await?;
        assert_eq!(again, Value::Array(vec![Value::Int(2), bulk("1")]));
        // Another owner: contended. `{0, false}`: false is a nil element
        // (only a Lua nil would cut the array).
        let other: Value = acquire
            .key("lock:{r}")
            .key("fence:{r}")
            .arg("w2")
            .arg(1000)
            .arg("1")
            .invoke_async(&mut conn)
            .await?;
        assert_eq!(other, Value::Array(vec![Value::Int(0), Value::Nil]));
        let renewed: i64 = redis::Script::new(RENEW_LUA)
            .key("lock:{r}")
            .arg("w1")
            .arg(5000)
            .invoke_async(&mut conn)
            .await?;
        assert_eq!(renewed, 1);
        let pttl: i64 = redis::cmd("PTTL")
            .arg("lock:{r}")
            .query_async(&mut conn)
            .await?;
        assert!((4990..=5000).contains(&pttl), "{pttl}");
        let stolen: i64 = redis::Script::new(RELEASE_LUA)
            .key("lock:{r}")
            .arg("w2")
            .invoke_async(&mut conn)
            .await?;
        assert_eq!(stolen, 0, "another owner's release leaves the lock alone");
        let released: i64 = redis::Script::new(RELEASE_LUA)
            .key("lock:{r}")
            .arg("w1")
            .invoke_async(&mut conn)
            .await?;
        assert_eq!(released, 1);
        // WRONGTYPE inside the acquire script surfaces as Redis words it.
        raw(&mut conn, &["LPUSH", "fence:{x}", "a"]).await?;
        let err = acquire
            .key("lock:{x}")
            .key("fence:{x}")
            .arg("w1")
            .arg(1000)
            .arg("1")
            .invoke_async::<Value>(&mut conn)
            .await
            .unwrap_err();
        assert_eq!(err.code(), Some("WRONGTYPE"), "{err}");
        let held = raw(&mut conn, &["EXISTS", "lock:{x}"]).await?;
        assert_eq!(held, Value::Int(0), "no lease without a fence");
        Ok(())
    });
    sim.run().unwrap();
    let changes: Vec<OwnershipChange> = log2.events().into_iter().map(|e| e.change).collect();
    assert_eq!(
        changes,
        vec![
            OwnershipChange::Set { owner: "w1".into() },
            OwnershipChange::Deleted { owner: "w1".into() },
        ]
    );
}

#[test]
fn lease_expires_on_the_simulated_clock_and_is_logged_at_its_deadline() {
    let mut sim = sim(2);
    let log = OwnershipLog::default();
    let handle = add_redis(&mut sim, RedisConfig::new("redis"), &log);
    let h = handle.clone();
    sim.client("worker", async move {
        let mut conn = connect("redis").await;
        let reply: Value = redis::Script::new(ACQUIRE_LUA)
            .key("lock:{r}")
            .key("fence:{r}")
            .arg("w1")
            .arg(500)
            .arg("1")
            .invoke_async(&mut conn)
            .await?;
        assert_eq!(reply, Value::Array(vec![Value::Int(1), bulk("1")]));
        assert_eq!(h.get("lock:{r}"), Some(b"w1".to_vec()));
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(h.get("lock:{r}"), Some(b"w1".to_vec()));
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(h.get("lock:{r}"), None, "peeking respects logical expiry");
        let get = raw(&mut conn, &["GET", "lock:{r}"]).await?;
        assert_eq!(get, Value::Nil);
        Ok(())
    });
    sim.run().unwrap();
    let events = log.events();
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(
        events[0].change,
        OwnershipChange::Set { owner: "w1".into() }
    );
    assert_eq!(
        events[1].change,
        OwnershipChange::Expired { owner: "w1".into() }
    );
    assert_eq!(
        events[1].at_ms,
        events[0].at_ms + 500,
        "Expired at the deadline"
    );
    assert_eq!(events[1].server, "redis");
}

#[test]
fn replication_lags_behind_a_held_link_and_failover_loses_the_increment() {
    let mut sim = sim(3);
    let log = OwnershipLog::default();
    let primary = add_redis(&mut sim, RedisConfig::new("redis"), &log);
    let replica = add_redis(
        &mut sim,
        RedisConfig::new("replica").replica_of("redis", REDIS_PORT),
        &log,
    );
    let (p, r) = (primary.clone(), replica.clone());
    sim.client("worker", async move {
        // Let the replica connect and sync.
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(p.is_primary() && !r.is_primary());
        let mut conn = connect("redis").await;
        let n: i64 = redis::cmd("INCR")
            .arg("fence:{r}")
            .query_async(&mut conn)
            .await?;
        assert_eq!(n, 1);
        let acked: i64 = redis::cmd("WAIT")
            .arg(1)
            .arg(1000)
            .query_async(&mut conn)
            .await?;
        assert_eq!(acked, 1);
        assert_eq!(r.get("fence:{r}"), Some(b"1".to_vec()));
        assert_eq!(r.replication_offset(), p.replication_offset());

        // A replica refuses writes, in Redis's words.
        let mut rconn = connect("replica").await;
        let err = raw(&mut rconn, &["SET", "x", "y"]).await.unwrap_err();
        assert_eq!(err.code(), Some("READONLY"), "{err}");
        let role = raw(&mut rconn, &["ROLE"]).await?;
        assert_eq!(
            role,
            Value::Array(vec![
                bulk("slave"),
                bulk("redis"),
                Value::Int(i64::from(REDIS_PORT)),
                bulk("connected"),
                Value::Int(p.replication_offset() as i64),
            ])
        );

        // Hold the replication link: the next INCR stays on the primary.
        turmoil::hold("redis", "replica");
        let n: i64 = redis::cmd("INCR")
            .arg("fence:{r}")
            .query_async(&mut conn)
            .await?;
        assert_eq!(n, 2);
        let acked: i64 = redis::cmd("WAIT")
            .arg(1)
            .arg(200)
            .query_async(&mut conn)
            .await?;
        assert_eq!(acked, 0, "the replica never acknowledged");
        assert_eq!(r.get("fence:{r}"), Some(b"1".to_vec()));

        // Fail over: the promoted replica's counter is behind.
        r.promote();
        assert!(r.is_primary());
        let n: i64 = redis::cmd("INCR")
            .arg("fence:{r}")
            .query_async(&mut rconn)
            .await?;
        assert_eq!(
            n, 2,
            "fence 2 issued twice: the regression the harness must catch"
        );
        turmoil::release("redis", "replica");
        Ok(())
    });
    sim.run().unwrap();
}

/// A bare RESP connection (redis-rs cannot show a subscriber's pushes or
/// a BLPOP that blocks while another client runs).
struct RawConn {
    stream: turmoil::net::TcpStream,
    buf: Vec<u8>,
}

impl RawConn {
    async fn connect(host: &str) -> RawConn {
        let stream = turmoil::net::TcpStream::connect((host, REDIS_PORT))
            .await
            .expect("connect");
        RawConn {
            stream,
            buf: Vec::new(),
        }
    }

    async fn send(&mut self, args: &[&str]) {
        use tokio::io::AsyncWriteExt;
        self.stream
            .write_all(&Frame::request(args.iter().copied()))
            .await
            .expect("write");
    }

    async fn next(&mut self) -> Frame {
        use tokio::io::AsyncReadExt;
        loop {
            if let Some((frame, used)) = parse_frame(&self.buf).expect("well-formed") {
                self.buf.drain(..used);
                return frame;
            }
            let mut chunk = [0u8; 4096];
            let n = self.stream.read(&mut chunk).await.expect("read");
            assert!(n > 0, "server closed the connection");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    async fn call(&mut self, args: &[&str]) -> Frame {
        self.send(args).await;
        self.next().await
    }
}

fn arr(items: &[&str]) -> Frame {
    Frame::Array(items.iter().map(|i| Frame::bulk(*i)).collect())
}

#[test]
fn blpop_is_woken_by_a_push_and_times_out_on_the_simulated_clock() {
    let mut sim = sim(4);
    let log = OwnershipLog::default();
    add_redis(&mut sim, RedisConfig::new("redis"), &log);
    let woken_at_ms = Rc::new(RefCell::new(Vec::new()));
    let w = woken_at_ms.clone();
    sim.client("waiter", async move {
        let mut conn = RawConn::connect("redis").await;
        let start = tokio::time::Instant::now();
        // Blocks on two keys; the push to the second one wakes it.
        let reply = conn.call(&["BLPOP", "unlock:{a}", "unlock:{b}", "5"]).await;
        assert_eq!(reply, arr(&["unlock:{b}", "token"]));
        w.borrow_mut().push(start.elapsed().as_millis());
        // Nothing left: a 0.5 s BLPOP answers a nil array after 500 ms.
        let start = tokio::time::Instant::now();
        let reply = conn.call(&["BLPOP", "unlock:{b}", "0.5"]).await;
        assert_eq!(reply, Frame::NullArray);
        w.borrow_mut().push(start.elapsed().as_millis());
        // The connection serves requests again afterwards.
        assert_eq!(conn.call(&["PING"]).await, Frame::simple("PONG"));
        Ok(())
    });
    sim.client("releaser", async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut conn = RawConn::connect("redis").await;
        assert_eq!(
            conn.call(&["RPUSH", "unlock:{b}", "token"]).await,
            Frame::Integer(1)
        );
        // The waiter popped it before this client's next command ran.
        assert_eq!(
            conn.call(&["EXISTS", "unlock:{b}"]).await,
            Frame::Integer(0)
        );
        Ok(())
    });
    sim.run().unwrap();
    let woken = woken_at_ms.borrow();
    // Woken by the push at ~100 ms (plus link latency), not at 5 s.
    assert!((100..110).contains(&woken[0]), "{woken:?}");
    assert!((500..510).contains(&woken[1]), "{woken:?}");
}

#[test]
fn a_subscriber_receives_what_is_published_in_order() {
    let mut sim = sim(5);
    let log = OwnershipLog::default();
    add_redis(&mut sim, RedisConfig::new("redis"), &log);
    sim.client("subscriber", async move {
        let mut conn = RawConn::connect("redis").await;
        conn.send(&["SUBSCRIBE", "unlocked:{r}", "other"]).await;
        let subscribed = Frame::Array(vec![
            Frame::bulk("subscribe"),
            Frame::bulk("unlocked:{r}"),
            Frame::Integer(1),
        ]);
        assert_eq!(conn.next().await, subscribed);
        assert_eq!(
            conn.next().await,
            Frame::Array(vec![
                Frame::bulk("subscribe"),
                Frame::bulk("other"),
                Frame::Integer(2)
            ])
        );
        // Pushed while idle, in publishing order.
        assert_eq!(conn.next().await, arr(&["message", "unlocked:{r}", "w1"]));
        assert_eq!(conn.next().await, arr(&["message", "unlocked:{r}", "w2"]));
        // Subscribed mode refuses ordinary commands, PING answers a push.
        assert_eq!(
            conn.call(&["GET", "k"]).await,
            Frame::error("ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
        );
        assert_eq!(conn.call(&["PING"]).await, arr(&["pong", ""]));
        conn.send(&["UNSUBSCRIBE"]).await;
        assert_eq!(
            conn.next().await,
            Frame::Array(vec![
                Frame::bulk("unsubscribe"),
                Frame::bulk("other"),
                Frame::Integer(1)
            ])
        );
        assert_eq!(
            conn.next().await,
            Frame::Array(vec![
                Frame::bulk("unsubscribe"),
                Frame::bulk("unlocked:{r}"),
                Frame::Integer(0)
            ])
        );
        assert_eq!(conn.call(&["GET", "k"]).await, Frame::Null);
        Ok(())
    });
    sim.client("publisher", async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut conn = RawConn::connect("redis").await;
        assert_eq!(
            conn.call(&["PUBLISH", "unlocked:{r}", "w1"]).await,
            Frame::Integer(1)
        );
        assert_eq!(
            conn.call(&[
                "EVAL",
                "return redis.call('publish', KEYS[1], 'w2')",
                "1",
                "unlocked:{r}"
            ])
            .await,
            Frame::Integer(1),
            "scripts may publish"
        );
        assert_eq!(
            conn.call(&["PUBLISH", "nobody", "x"]).await,
            Frame::Integer(0)
        );
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn watch_aborts_exec_after_another_clients_write_and_a_transaction_replicates_whole() {
    let mut sim = sim(6);
    let log = OwnershipLog::default();
    let primary = add_redis(&mut sim, RedisConfig::new("redis"), &log);
    let replica = add_redis(
        &mut sim,
        RedisConfig::new("replica").replica_of("redis", REDIS_PORT),
        &log,
    );
    let (p, r) = (primary.clone(), replica.clone());
    sim.client("worker", async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut a = RawConn::connect("redis").await;
        let mut b = RawConn::connect("redis").await;
        // Optimistic lock: WATCH, read, MULTI; b writes; EXEC fails.
        assert_eq!(a.call(&["WATCH", "lock:{r}"]).await, Frame::ok());
        assert_eq!(a.call(&["GET", "lock:{r}"]).await, Frame::Null);
        assert_eq!(a.call(&["MULTI"]).await, Frame::ok());
        assert_eq!(
            a.call(&["SET", "lock:{r}", "w1"]).await,
            Frame::simple("QUEUED")
        );
        assert_eq!(
            b.call(&["SET", "lock:{r}", "w2", "PX", "60000"]).await,
            Frame::ok()
        );
        assert_eq!(a.call(&["EXEC"]).await, Frame::NullArray);
        assert_eq!(a.call(&["GET", "lock:{r}"]).await, Frame::bulk("w2"));
        // Unwatched now: a reentrant hash lock and a fence, in one EXEC.
        assert_eq!(a.call(&["MULTI"]).await, Frame::ok());
        for cmd in [
            &["HSET", "rlock:{r}", "w1", "1"][..],
            &["HINCRBY", "rlock:{r}", "w1", "1"],
            &["PEXPIREAT", "rlock:{r}", "99999999999999"],
            &["INCRBY", "fence:{r}", "5"],
            &["GETDEL", "lock:{r}"],
        ] {
            assert_eq!(a.call(cmd).await, Frame::simple("QUEUED"));
        }
        assert_eq!(
            a.call(&["EXEC"]).await,
            Frame::Array(vec![
                Frame::Integer(1),
                Frame::Integer(2),
                Frame::Integer(1),
                Frame::Integer(5),
                Frame::bulk("w2"),
            ])
        );
        let acked = a.call(&["WAIT", "1", "1000"]).await;
        assert_eq!(acked, Frame::Integer(1));
        assert_eq!(r.replication_offset(), p.replication_offset());
        let mut rc = RawConn::connect("replica").await;
        assert_eq!(rc.call(&["HGETALL", "rlock:{r}"]).await, arr(&["w1", "2"]));
        assert_eq!(rc.call(&["TYPE", "rlock:{r}"]).await, Frame::simple("hash"));
        assert_eq!(rc.call(&["GET", "fence:{r}"]).await, Frame::bulk("5"));
        assert_eq!(rc.call(&["EXISTS", "lock:{r}"]).await, Frame::Integer(0));
        Ok(())
    });
    sim.run().unwrap();
    // The ownership log saw w2 take the lock and GETDEL delete it, on both
    // servers; the queued SET of w1 never ran.
    let changes: Vec<(String, OwnershipChange)> = log
        .events()
        .into_iter()
        .map(|e| (e.server, e.change))
        .collect();
    let set = OwnershipChange::Set { owner: "w2".into() };
    let deleted = OwnershipChange::Deleted { owner: "w2".into() };
    assert_eq!(
        changes,
        vec![
            ("redis".to_string(), set.clone()),
            ("replica".to_string(), set),
            ("redis".to_string(), deleted.clone()),
            ("replica".to_string(), deleted),
        ]
    );
}

#[test]
fn lock_client_acquires_renews_and_releases_in_the_sim() {
    let mut sim = sim(4);
    let log = OwnershipLog::default();
    add_redis(&mut sim, RedisConfig::new("redis"), &log);
    sim.client("worker", async move {
        let conn = connect("redis").await;
        let config = LockConfig::builder()
            .lease_ms(2_000)
            .build()
            .expect("config");
        let lock = LockClient::new(conn, config).expect("client");
        let resource = ResourceName::new("invoice-42").expect("name");
        let AcquireOutcome::Acquired(lease) = lock.acquire(&resource).await.expect("acquire")
        else {
            panic!("uncontended acquire must succeed");
        };
        assert_eq!(lease.fence().get(), 1);
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        let renewal = lock.renew(&lease, 2_000).await.expect("renew");
        assert!(matches!(renewal, Renewal::Renewed { .. }), "{renewal:?}");
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        assert!(lock.release(&lease).await.expect("release"));
        let AcquireOutcome::Acquired(second) = lock.acquire(&resource).await.expect("acquire")
        else {
            panic!("free again");
        };
        assert_eq!(second.fence().get(), 2, "fences increase");
        Ok(())
    });
    sim.run().unwrap();
    let changes: Vec<OwnershipChange> = log.events().into_iter().map(|e| e.change).collect();
    assert_eq!(changes.len(), 3, "{changes:?}");
    assert!(matches!(changes[0], OwnershipChange::Set { .. }));
    assert!(
        matches!(changes[1], OwnershipChange::Deleted { .. }),
        "renewal is no holder change"
    );
    assert!(matches!(changes[2], OwnershipChange::Set { .. }));
}

#[test]
fn a_crash_loses_held_locks_and_a_restart_starts_empty() {
    let mut sim = sim(5);
    let log = OwnershipLog::default();
    let handle = add_redis(&mut sim, RedisConfig::new("redis"), &log);
    let h = handle.clone();
    sim.client("setup", async move {
        let mut conn = connect("redis").await;
        raw(&mut conn, &["SET", "lock:{a}", "w1", "PX", "100000"]).await?;
        raw(&mut conn, &["SET", "lock:{b}", "w2", "PX", "10"]).await?;
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(h.is_up());
        Ok(())
    });
    while !sim.step().unwrap() {}
    let crash_ms = sim.elapsed().as_millis() as u64;
    // What the world does before a crash: tell the server the time, since a
    // crash gives it no clock to read.
    handle.observe_time(crash_ms);
    sim.crash("redis");
    assert!(!handle.is_up());
    assert_eq!(handle.get("lock:{a}"), None);
    let events = log.events();
    let tail: Vec<(u64, OwnershipChange)> = events[2..]
        .iter()
        .map(|e| (e.at_ms, e.change.clone()))
        .collect();
    // lock:{b} expired (found by active expiry or at the crash), lock:{a} was lost.
    assert!(
        tail.contains(&(
            events[1].at_ms + 10,
            OwnershipChange::Expired { owner: "w2".into() }
        )),
        "{tail:?}"
    );
    // `Lost` carries the crash instant the world reported.
    let lost = tail
        .iter()
        .find(|(_, c)| *c == OwnershipChange::Lost { owner: "w1".into() })
        .unwrap_or_else(|| panic!("{tail:?}"));
    assert!(lost.0 == crash_ms, "{tail:?} crash at {crash_ms}");
    sim.bounce("redis");
    let h = handle.clone();
    sim.client("after", async move {
        let mut conn = connect("redis").await;
        assert_eq!(
            raw(&mut conn, &["EXISTS", "lock:{a}"]).await?,
            Value::Int(0)
        );
        let hash = redis::Script::new(RELEASE_LUA).get_hash().to_string();
        let err = raw(&mut conn, &["EVALSHA", &hash, "0"]).await.unwrap_err();
        assert_eq!(err.code(), Some("NOSCRIPT"));
        assert!(h.is_up());
        Ok(())
    });
    sim.run().unwrap();
}

/// One scenario with expiry, scripts, replication and a held link; returns
/// every reply and the ownership log, rendered as text.
fn scenario(seed: u64) -> String {
    let mut sim = sim(seed);
    let log = OwnershipLog::default();
    let _primary = add_redis(&mut sim, RedisConfig::new("redis"), &log);
    let replica = add_redis(
        &mut sim,
        RedisConfig::new("replica").replica_of("redis", REDIS_PORT),
        &log,
    );
    let trace = Rc::new(RefCell::new(Vec::<String>::new()));
    for worker in 0..3u64 {
        let trace = trace.clone();
        let r = replica.clone();
        sim.client(format!("w{worker}"), async move {
            let mut conn = connect("redis").await;
            for round in 0..5u64 {
                let reply = redis::Script::new(ACQUIRE_LUA)
                    .key("lock:{r}")
                    .key("fence:{r}")
                    .arg(format!("w{worker}-{round}"))
                    .arg(30 + 10 * worker)
                    .arg("1")
                    .invoke_async::<Value>(&mut conn)
                    .await;
                let at = turmoil::sim_elapsed().unwrap_or_default().as_millis();
                trace
                    .borrow_mut()
                    .push(format!("{at} w{worker} r{round} {reply:?}"));
                if worker == 1 && round == 2 {
                    turmoil::hold("redis", "replica");
                }
                if worker == 1 && round == 4 {
                    turmoil::release("redis", "replica");
                }
                tokio::time::sleep(Duration::from_millis(7 * (worker + 1))).await;
                let _ = r.get("fence:{r}");
            }
            Ok(())
        });
    }
    sim.run().unwrap();
    let mut out = trace.borrow().join("\n");
    for e in log.events() {
        out.push_str(&format!("\n{e:?}"));
    }
    out
}

#[test]
fn same_seed_gives_identical_replies_and_ownership_log() {
    let a = scenario(42);
    let b = scenario(42);
    assert!(a.contains("Expired"), "the scenario exercises expiry:\n{a}");
    assert!(
        a.contains("replica"),
        "the scenario exercises replication:\n{a}"
    );
    assert_eq!(a, b);
}
