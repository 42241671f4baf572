//! The whole-worker level: a team's own worker code runs each job's whole
//! flow, and the harness only watches what reaches the servers.
//!
//! At the step level (`driver`) the harness owns the flow and records each
//! step it takes. Here it owns nothing of it: a [`JobRunner`] acquires with
//! its own retries, renews from its own task, writes and releases however
//! it does. So the history is built from what the handles the world gave
//! the worker carried, and from the servers:
//!
//! - **Writes** are recorded at the store handle, exactly as sent and
//!   answered (fence, owner, job, outcome) — the store's own log says what
//!   it then did.
//! - **Acquires** are the Redis commands that carried one of the worker's
//!   owner tokens while it was acquiring. Whether one acquired is read from
//!   the server, out of band, right after its reply ([`Peek`]): the lock key
//!   holds that token, or it does not. The token's fence is the one its
//!   first write carried (the harness cannot read a fence off a script's
//!   reply it does not know the shape of).
//! - **Commands** that carried the token after that (renewals, the release,
//!   whatever the lock sends) are recorded as they are, unclassified; the
//!   Redis ownership log says what each did to the key. A token the worker
//!   had not used before (drawn from `env.tokens`, or first seen on an
//!   adapter's wire) makes the slot acquiring again: a lock that let its
//!   lease go tries again under a new value.
//! - **Reports** are what the job returned.
//!
//! The phases fault scripts aim at come from the same observations, not
//! from the flow: *holding* when the server shows the worker's token on
//! the lock key, *writing* when the protected write leaves for the store,
//! *releasing* when the write's answer has come back (what follows is the
//! release). That is why owner tokens must come from `env.tokens`: they
//! are how the harness tells holders apart (and, in the simulation, they
//! are seeded).
//!
//! What the wrappers cost the lock: nothing on the wire but one out-of-band
//! read of the lock key after each token-carrying reply while acquiring.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use redfence_core::{
    FenceLogEntry, FencedStore, FencedWrite, JobId, JobOutcome, JobWrite, OwnerToken, ResourceName,
    StoreError, TokenSource, WriteOutcome,
};
use redis::aio::ConnectionLike;
use redis::{Cmd, Pipeline, RedisFuture, Value};
use tokio::sync::Notify;

use crate::conn::RedisConn;
use crate::driver::{Phase, Probe, WorkerPlan, JOBS_AT_ONCE_MAX};
use crate::history::{OkValue, OpKind, Outcome};
use crate::job_slot::SlotFuture;
use crate::protocol::{Job, JobRunner};
use crate::record::JobStat;
use crate::recorder::{OpHandle, Recorder};
use crate::world::{Clock, Peek, RawStore, WireAnswer, WireObserver, WireRequest, WorkerEnv};

/// Most owner tokens remembered per worker: an acquire draws one per
/// attempt at most, and only recent ones can still be on the wire.
pub const TOKENS_REMEMBERED_MAX: usize = 64;

/// Most observed replies waiting to be classified: the worker's own task
/// drains them after every poll, so more means a runaway loop.
pub const EVENTS_PENDING_MAX: usize = 4_096;

/// An acquire attempt the server answered without an error: whether it
/// acquired is read from the server in the sending slot's own flow.
#[derive(Clone, Debug)]
struct Reply {
    owner: String,
    op: OpHandle,
    complete_ms: u64,
}

/// One token-carrying request on its way: recorded when sent, completed
/// with its answer. A request whose answer never comes — the caller's own
/// timeout dropped it, or the worker crashed — stays uncompleted and
/// indeterminate, as at the step level: it may still take effect.
struct Pending {
    shared: Arc<Shared>,
    owner: String,
    op: OpHandle,
    /// The slot whose acquire attempt this is (`None`: not an acquire).
    acquiring: Option<usize>,
}

/// How a token-carrying request ended, whatever carried it.
enum Answer {
    /// The server answered without an error.
    Replied,
    /// A definite no: an error reply, or a connection that never sent it.
    Refused(String),
    /// No answer: the request may have run.
    Unknown(String),
}

impl Pending {
    fn answer<T>(self, result: &redis::RedisResult<T>) {
        let answer = match result {
            // EVALSHA before EVAL: the client library's own retry.
            Err(error) if is_noscript(result) => Answer::Refused(error.to_string()),
            Err(error) => match redis_error(error) {
                (true, why) => Answer::Refused(why),
                (false, why) => Answer::Unknown(why),
            },
            Ok(_) => Answer::Replied,
        };
        self.settle(answer);
    }

    fn settle(self, answer: Answer) {
        let recorder = &self.shared.recorder;
        match answer {
            Answer::Refused(why) => recorder.complete(self.op, Outcome::Fail(why)),
            Answer::Unknown(why) => recorder.give_up(self.op, why),
            Answer::Replied => match self.acquiring {
                None => recorder.complete(self.op, Outcome::Ok(OkValue::Answered)),
                Some(slot) => self.shared.push(
                    slot,
                    Reply {
                        owner: self.owner,
                        op: self.op,
                        complete_ms: self.shared.clock.now_ms(),
                    },
                ),
            },
        }
    }
}

/// One job slot's state, as its requests and its flow see it.
#[derive(Debug, Default)]
struct SlotState {
    /// The slot's name in the history (`w0`, or `w0.1` when the worker
    /// runs several jobs at once).
    name: String,
    /// Its job has not yet been seen holding: what carries its tokens is
    /// an acquire attempt.
    acquiring: bool,
    /// Acquire attempts sent in the current job.
    attempts: u32,
    /// Acquire replies waiting to be classified by the slot's flow.
    replies: VecDeque<Reply>,
    /// When the current job's acquisition was seen, from its start.
    wait_ms: Option<u64>,
    /// When the current job started.
    started_ms: u64,
}

#[derive(Debug, Default)]
struct Seen {
    /// Tokens the worker drew, newest last, each with the slot that drew
    /// it (`None`: drawn outside any job, e.g. once per process).
    tokens: VecDeque<(String, Option<usize>)>,
    /// One per job slot; empty until the worker is watched.
    slots: Vec<SlotState>,
    /// Replies dropped past [`EVENTS_PENDING_MAX`].
    dropped: u64,
}

/// What the handles of one worker share with the watchers in its slots.
#[derive(Debug)]
struct Shared {
    /// Off at the step level, where the driver records every step itself.
    on: AtomicBool,
    seen: Mutex<Seen>,
    /// One per job slot: a reply for the slot arrived.
    arrived: Vec<Notify>,
    clock: Clock,
    recorder: Recorder,
    worker: String,
}

impl Shared {
    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The newest drawn token among `args`, if any, with its slot.
    fn token_in<'a>(
        &self,
        mut args: impl Iterator<Item = &'a [u8]>,
    ) -> Option<(String, Option<usize>)> {
        let seen = self.seen();
        if seen.tokens.is_empty() {
            return None;
        }
        args.find_map(|arg| {
            seen.tokens
                .iter()
                .rev()
                .find(|(token, _)| token.as_bytes() == arg)
                .cloned()
        })
    }

    /// The slot a request or write with `owner`'s token comes from: the
    /// job whose code (or whose spawned task) is running, else the job
    /// that drew the token; `None` when neither is known.
    fn slot_of(&self, drew: Option<usize>) -> Option<usize> {
        let slots = self.seen().slots.len();
        crate::job_slot::current()
            .or(drew)
            .filter(|&slot| slot < slots)
    }

    /// The history name of `slot` (the worker's own without one).
    fn name_of(&self, slot: Option<usize>) -> String {
        slot.and_then(|slot| self.seen().slots.get(slot).map(|s| s.name.clone()))
            .unwrap_or_else(|| self.worker.clone())
    }

    fn push(&self, slot: usize, reply: Reply) {
        let mut seen = self.seen();
        let queued: usize = seen.slots.iter().map(|s| s.replies.len()).sum();
        if queued >= EVENTS_PENDING_MAX {
            seen.dropped += 1;
            return;
        }
        seen.slots[slot].replies.push_back(reply);
        drop(seen);
        self.arrived[slot].notify_one();
    }

    fn slot<R>(&self, slot: usize, f: impl FnOnce(&mut SlotState) -> R) -> R {
        f(&mut self.seen().slots[slot])
    }
}

/// Watches one worker's handles. Made by the stage for every worker;
/// [`Observer::observe`] wraps the handles, and it records only once
/// switched on ([`Observer::watch`]) for a whole-worker protocol.
#[derive(Clone, Debug)]
pub struct Observer {
    shared: Arc<Shared>,
    recorder: Recorder,
    probe: Probe,
}

impl Observer {
    /// An observer of worker `worker` running up to `slots` jobs at once,
    /// recording into `recorder`.
    pub fn new(worker: &str, slots: usize, recorder: Recorder, probe: Probe) -> Self {
        assert!(
            (1..=JOBS_AT_ONCE_MAX).contains(&slots),
            "1 to {JOBS_AT_ONCE_MAX} job slots"
        );
        let shared = Shared {
            on: AtomicBool::new(false),
            seen: Mutex::default(),
            arrived: (0..slots).map(|_| Notify::new()).collect(),
            clock: recorder.clock().clone(),
            recorder: recorder.clone(),
            worker: worker.to_owned(),
        };
        Self {
            shared: Arc::new(shared),
            recorder,
            probe,
        }
    }

    /// `env` with its Redis connection, stores and token source wrapped.
    pub fn observe(&self, env: WorkerEnv) -> WorkerEnv {
        let redis = RedisConn::new(ObservedRedis {
            inner: env.redis.clone(),
            shared: self.shared.clone(),
        });
        // Master 0 is `redis`: observed whichever handle the lock uses.
        // Masters 1.. are observed alike: a lock over several masters
        // (Redlock) sends each attempt to every one, and the acquire is
        // classified by the majority (the world's `Peek`).
        let masters = env
            .masters
            .iter()
            .enumerate()
            .map(|(m, conn)| {
                if m == 0 {
                    redis.clone()
                } else {
                    RedisConn::new(ObservedRedis {
                        inner: conn.clone(),
                        shared: self.shared.clone(),
                    })
                }
            })
            .collect();
        WorkerEnv {
            redis,
            masters,
            store: Arc::new(ObservedStore {
                inner: env.store.clone(),
                observer: self.clone(),
            }),
            raw_store: Arc::new(ObservedRawStore {
                inner: env.raw_store.clone(),
                observer: self.clone(),
            }),
            tokens: Arc::new(ObservedTokens {
                inner: env.tokens.clone(),
                shared: self.shared.clone(),
            }),
            wire_tap: Some(Arc::new(WireTap {
                shared: self.shared.clone(),
            })),
            ..env
        }
    }

    /// Starts recording: the protocol plugged in as a whole worker, running
    /// `plan`'s job slots.
    fn watch(&self, plan: &WorkerPlan) {
        assert_eq!(plan.jobs_at_once, self.shared.arrived.len());
        self.shared.seen().slots = (0..plan.jobs_at_once)
            .map(|slot| SlotState {
                name: plan.slot_name(&self.shared.worker, slot),
                ..SlotState::default()
            })
            .collect();
        self.shared.on.store(true, Ordering::SeqCst);
    }

    fn on(&self) -> bool {
        self.shared.on.load(Ordering::SeqCst)
    }

    fn now_ms(&self) -> u64 {
        self.shared.clock.now_ms()
    }

    /// The slot a write under `owner` comes from (see [`Shared::slot_of`]).
    fn write_slot(&self, owner: &str) -> Option<usize> {
        let drew = self
            .shared
            .seen()
            .tokens
            .iter()
            .rev()
            .find(|(token, _)| token == owner)
            .and_then(|(_, slot)| *slot);
        self.shared.slot_of(drew)
    }

    /// Records a protected write as it leaves for the store (phase
    /// *writing*); [`Observer::write_answered`] completes it. The first
    /// write of an owner names the fence its acquisition issued.
    fn write_sent(&self, owner: &str, fence: Option<i64>, job_id: Option<&str>) -> OpHandle {
        let name = self.shared.name_of(self.write_slot(owner));
        if let Some(fence) = fence {
            self.recorder.amend_acquire(&name, owner, fence);
        }
        let kind = OpKind::Write {
            fence: fence.unwrap_or(0),
            job_id: job_id.map(str::to_owned),
        };
        let op = self.recorder.invoke(&name, Some(owner), kind);
        // Fired before the request leaves: an armed crash stops the worker
        // when this poll yields, with the request on its way.
        self.probe.set(Phase::Writing);
        op
    }

    fn write_answered(&self, op: OpHandle, answer: Result<OkValue, &StoreError>) {
        match answer {
            Ok(value) => self.recorder.complete(op, Outcome::Ok(value)),
            Err(error) if error.definitely_not_applied() => {
                self.recorder.complete(op, Outcome::Fail(error.to_string()))
            }
            Err(error) => self.recorder.give_up(op, error.to_string()),
        }
        // The write is done; what a flow does next is give the lock back.
        self.probe.set(Phase::Releasing);
    }
}

/// Runs `plan` for a whole-worker protocol's `runner`: each job through
/// the team's code — up to `plan.jobs_at_once` at once, sharing the one
/// runner as a process's job tasks share its lock client — each acquire
/// reply classified by its slot's flow as it arrives (see the module doc),
/// each report recorded.
pub(crate) async fn run_whole_worker(
    env: WorkerEnv,
    runner: Box<dyn JobRunner>,
    observer: Observer,
    peek: Peek,
    lock_key: String,
    plan: WorkerPlan,
) {
    plan.check();
    observer.watch(&plan);
    if let Ok(name) = ResourceName::new(plan.resource.as_str()) {
        // Not part of the protocol under test (see `driver::run_worker`).
        let _ = env.store.ensure_resource(&name).await;
    }
    let runner: &dyn JobRunner = runner.as_ref();
    let flows = (0..plan.jobs_at_once).map(|slot| {
        let watcher = Watcher {
            observer: observer.clone(),
            peek: peek.clone(),
            lock_key: lock_key.clone(),
            slot,
        };
        let plan = &plan;
        let flow: SlotFuture<'_, ()> = Box::pin(crate::job_slot::scope(
            Some(slot),
            run_slot(watcher, runner, plan),
        ));
        flow
    });
    crate::job_slot::join_all(flows.collect()).await;
    observer.probe.set(Phase::Done);
}

/// One job slot's jobs, one after another.
async fn run_slot(mut watcher: Watcher, runner: &dyn JobRunner, plan: &WorkerPlan) {
    let slot = watcher.slot;
    // As `driver::run_slot`: the gate after the setup, opened as a job starts.
    plan.waits_for.wait().await;
    for (nth, spec) in plan.slot_jobs(slot).enumerate() {
        if plan.start_delay_ms > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(plan.start_delay_ms)).await;
        }
        plan.hold.before(slot + nth * plan.jobs_at_once).await;
        plan.opens.open();
        let job = Job {
            resource: plan.resource.clone(),
            job_id: spec.job_id.clone(),
            work_ms: spec.work_ms,
        };
        let stat = run_job(&mut watcher, runner, &job).await;
        let observer = &watcher.observer;
        let name = observer.shared.name_of(Some(slot));
        observer
            .recorder
            .report(&name, Some(&job.job_id), stat.report);
        observer.probe.stat(stat);
        observer.probe.set(Phase::Idle);
    }
}

/// One job through the team's code, with its slot's replies watched.
async fn run_job(watcher: &mut Watcher, runner: &dyn JobRunner, job: &Job) -> JobStat {
    let (shared, slot) = (watcher.observer.shared.clone(), watcher.slot);
    let started_ms = watcher.observer.now_ms();
    shared.slot(slot, |state| {
        state.acquiring = true;
        state.attempts = 0;
        state.wait_ms = None;
        state.started_ms = started_ms;
    });
    watcher.observer.probe.set(Phase::Acquiring);
    let run = runner.run(job);
    tokio::pin!(run);
    // Bounded by the job: each turn either ends it or handles replies the
    // job's own progress produced.
    let report = loop {
        tokio::select! {
            // The job first: replies it produced in this poll are then
            // classified before it is polled again.
            biased;
            report = &mut run => {
                watcher.drain().await;
                break report;
            }
            () = shared.arrived[slot].notified() => {
                watcher.drain().await;
            }
        }
    };
    shared.slot(slot, |state| {
        state.acquiring = false;
        JobStat {
            job_id: job.job_id.clone(),
            attempts: state.attempts,
            wait_ms: state.wait_ms,
            report,
        }
    })
}

/// Classifies one slot's acquire replies inside the slot's own flow.
struct Watcher {
    observer: Observer,
    peek: Peek,
    lock_key: String,
    slot: usize,
}

impl Watcher {
    async fn drain(&mut self) {
        // Bounded by EVENTS_PENDING_MAX per call.
        for _ in 0..EVENTS_PENDING_MAX {
            let next = self
                .observer
                .shared
                .slot(self.slot, |state| state.replies.pop_front());
            let Some(reply) = next else {
                return;
            };
            self.classify(reply).await;
        }
    }

    async fn classify(&mut self, reply: Reply) {
        let observer = &self.observer;
        let holder = self.peek.get(&self.lock_key).await;
        let acquired = holder.as_deref() == Some(reply.owner.as_str());
        let outcome = if acquired {
            OkValue::Acquired { fence: None }
        } else {
            OkValue::Contended
        };
        observer
            .recorder
            .complete_at(reply.op, reply.complete_ms, Outcome::Ok(outcome));
        if acquired {
            observer.shared.slot(self.slot, |state| {
                state.acquiring = false;
                state.wait_ms = Some(reply.complete_ms.saturating_sub(state.started_ms));
            });
            observer.probe.set(Phase::Holding);
        }
    }
}

/// The worker's Redis connection, noting replies to commands that carry
/// one of its tokens.
#[derive(Clone)]
struct ObservedRedis {
    inner: RedisConn,
    shared: Arc<Shared>,
}

fn redis_error(error: &redis::RedisError) -> (bool, String) {
    // A refused connection never sent the command; a server error reply
    // is a definite no. A timeout or a dropped connection may have run it.
    let definite = error.is_connection_refusal()
        || !(error.is_timeout() || error.is_io_error() || error.is_connection_dropped());
    (definite, error.to_string())
}

impl ObservedRedis {
    /// Records the request carrying `owner` (drawn by slot `drew`) as it
    /// leaves: an acquire attempt while its slot's job is acquiring, a
    /// command after (or when no slot is known).
    fn pending(&self, owner: (String, Option<usize>)) -> Pending {
        Self::pending_in(&self.shared, owner, true)
    }

    /// `may_acquire`: false for a request that carries no token of its
    /// own (a wire request recorded under the worker's newest token),
    /// which is never an acquire attempt.
    fn pending_in(
        shared: &Arc<Shared>,
        (owner, drew): (String, Option<usize>),
        may_acquire: bool,
    ) -> Pending {
        let slot = shared.slot_of(drew);
        let acquiring = slot.filter(|&slot| {
            if !may_acquire {
                return false;
            }
            shared.slot(slot, |state| {
                if state.acquiring {
                    state.attempts += 1;
                }
                state.acquiring
            })
        });
        let kind = if acquiring.is_some() {
            OpKind::Acquire
        } else {
            OpKind::Command
        };
        let op = shared
            .recorder
            .invoke(&shared.name_of(slot), Some(&owner), kind);
        Pending {
            shared: shared.clone(),
            owner,
            op,
            acquiring,
        }
    }
}

fn is_noscript<T>(result: &redis::RedisResult<T>) -> bool {
    matches!(result, Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript))
}

impl ConnectionLike for ObservedRedis {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        let owner = if self.shared.on.load(Ordering::SeqCst) {
            self.shared.token_in(cmd.args_iter().filter_map(arg_bytes))
        } else {
            None
        };
        let Some(owner) = owner else {
            return self.inner.req_packed_command(cmd);
        };
        let pending = self.pending(owner);
        let sent = self.inner.req_packed_command(cmd);
        Box::pin(async move {
            let result = sent.await;
            pending.answer(&result);
            result
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        let owner = if self.shared.on.load(Ordering::SeqCst) {
            self.shared.token_in(
                pipeline
                    .cmd_iter()
                    .flat_map(|cmd| cmd.args_iter())
                    .filter_map(arg_bytes),
            )
        } else {
            None
        };
        let Some(owner) = owner else {
            return self.inner.req_packed_commands(pipeline, offset, count);
        };
        let pending = self.pending(owner);
        let sent = self.inner.req_packed_commands(pipeline, offset, count);
        Box::pin(async move {
            let result = sent.await;
            pending.answer(&result);
            result
        })
    }

    fn get_db(&self) -> i64 {
        self.inner.get_db()
    }
}

/// A worker's raw Redis traffic, reported by something that carries it
/// byte for byte (the tap in front of a lock adapter's proxy, see
/// `adapter::tap`) instead of by [`WorkerEnv::redis`].
///
/// Such a worker's owner tokens are its library's own, not drawn from
/// `env.tokens`, so they are learned from the wire: a request that names
/// the lock key carries the worker's token as its first argument after
/// the key's position (after the other keys of a script call) that is not
/// a number or one of `SET`'s options — where every lock library puts it
/// (`SET key token NX PX ms`, `EVALSHA sha 1 key token …`). A request that
/// names the key with no such argument (`DEL key`, `GET key`) is recorded
/// under the worker's newest token as an unclassified command, never as
/// an acquire attempt. Not followed: a lock whose token is a bare number,
/// and one that sets its key inside `MULTI`/`EXEC` (the queued reply is
/// not the effect). From there the observer records as
/// for an in-process lock: an acquire attempt while the job acquires,
/// classified by an out-of-band read of the key after its reply, and an
/// unclassified command after; the Redis ownership log says what each did.
/// A token the wire shows for the first time starts a new acquisition, as
/// a freshly drawn one does in process: inside a job already seen holding,
/// that is a lock that let its lease go and tries again under a new value.
/// Not followed either: a lock that sends another owner's token (read back
/// from the key) would have that request taken for an acquire — recorded
/// as acquired if the key holds that token — and its own later commands
/// too, until one of its requests is seen holding.
/// A request that does not name the lock key (a signal list, a script
/// load) is not recorded.
#[derive(Clone, Debug)]
pub struct WireTap {
    shared: Arc<Shared>,
}

/// A recorded request on its way.
struct WirePending(Pending);

/// Arguments that are never an owner token: the options of `SET`,
/// `PEXPIRE`/`EXPIRE` and `GETEX`, the commands a lock sends with its key.
const SET_OPTIONS: [&[u8]; 11] = [
    b"NX", b"XX", b"PX", b"EX", b"PXAT", b"EXAT", b"GET", b"KEEPTTL", b"GT", b"LT", b"PERSIST",
];

/// Longest argument taken for an owner token: tokens are UUIDs or
/// random strings, never a payload.
const WIRE_TOKEN_LEN_MAX: usize = 256;

fn tokenish(arg: &[u8]) -> bool {
    let digits = arg.strip_prefix(b"-").unwrap_or(arg);
    let number = !digits.is_empty() && digits.iter().all(u8::is_ascii_digit);
    !arg.is_empty()
        && arg.len() <= WIRE_TOKEN_LEN_MAX
        && !number
        && !SET_OPTIONS.iter().any(|o| o.eq_ignore_ascii_case(arg))
        && std::str::from_utf8(arg).is_ok_and(|t| !t.chars().any(char::is_control))
}

/// The owner token a request naming `lock_key` carries (see [`WireTap`]).
fn wire_token<'a>(args: &[&'a [u8]], lock_key: &[u8]) -> Option<&'a [u8]> {
    let name = args.first()?;
    let script = [
        &b"EVAL"[..],
        b"EVALSHA",
        b"EVAL_RO",
        b"EVALSHA_RO",
        b"FCALL",
        b"FCALL_RO",
    ]
    .iter()
    .any(|c| c.eq_ignore_ascii_case(name));
    if script {
        let keys: usize = std::str::from_utf8(args.get(2)?).ok()?.parse().ok()?;
        let keys_end = 3usize.checked_add(keys)?;
        if !args.get(3..keys_end)?.contains(&lock_key) {
            return None;
        }
        return args[keys_end..].iter().copied().find(|a| tokenish(a));
    }
    let at = args.iter().skip(1).position(|a| *a == lock_key)? + 1;
    args[at + 1..].iter().copied().find(|a| tokenish(a))
}

impl WireObserver for WireTap {
    fn request(&self, args: &[&[u8]], lock_key: &[u8]) -> Option<Box<dyn WireRequest>> {
        let shared = &self.shared;
        if !shared.on.load(Ordering::SeqCst) || !args.iter().skip(1).any(|a| *a == lock_key) {
            return None;
        }
        // One job slot: everything the process sends is that slot's. With
        // several, the wire cannot tell which job sent it.
        let slot = (shared.seen().slots.len() == 1).then_some(0);
        let carried = wire_token(args, lock_key).map(String::from_utf8_lossy);
        let may_acquire = carried.is_some();
        let owner = match carried {
            Some(token) => {
                let token = token.into_owned();
                let mut seen = shared.seen();
                if !seen.tokens.iter().any(|(t, _)| *t == token) {
                    if seen.tokens.len() >= TOKENS_REMEMBERED_MAX {
                        seen.tokens.pop_front();
                    }
                    seen.tokens.push_back((token.clone(), slot));
                    // A token first seen here is what `ObservedTokens`
                    // sees drawn in-process: inside a job already seen
                    // holding it starts a new acquisition. A lock that
                    // got the key but judged the lease spent (Redlock's
                    // validity check: pottery after a stall between the
                    // SET and its reply's handling) releases it and
                    // acquires again under a fresh value; that SET is an
                    // acquire, not a command of the lease it let go.
                    if let Some(state) = slot.and_then(|slot| seen.slots.get_mut(slot)) {
                        state.acquiring = true;
                    }
                }
                (token, slot)
            }
            None => shared.seen().tokens.back().cloned()?,
        };
        Some(Box::new(WirePending(ObservedRedis::pending_in(
            shared,
            owner,
            may_acquire,
        ))))
    }
}

impl WireRequest for WirePending {
    fn answered(self: Box<Self>, answer: WireAnswer) {
        self.0.settle(match answer {
            WireAnswer::Replied => Answer::Replied,
            WireAnswer::Error(why) => Answer::Refused(why),
            WireAnswer::Lost(why) => Answer::Unknown(why),
        });
    }
}

fn arg_bytes(arg: redis::Arg<&[u8]>) -> Option<&[u8]> {
    match arg {
        redis::Arg::Simple(bytes) => Some(bytes),
        // A SCAN cursor (or anything redis-rs adds later) is never a token.
        _ => None,
    }
}

/// The worker's token source, remembering what it handed out.
#[derive(Debug)]
struct ObservedTokens {
    inner: Arc<dyn TokenSource>,
    shared: Arc<Shared>,
}

impl TokenSource for ObservedTokens {
    fn next_token(&self) -> OwnerToken {
        let token = self.inner.next_token();
        let slot = crate::job_slot::current();
        let mut seen = self.shared.seen();
        if seen.tokens.len() >= TOKENS_REMEMBERED_MAX {
            seen.tokens.pop_front();
        }
        seen.tokens.push_back((token.as_str().to_owned(), slot));
        // A fresh token inside a job that was seen holding starts a new
        // acquisition: a lock that saw a majority set and still gave up
        // (a reply lost, the validity spent: Redlock) unlocks and tries
        // again under a new value, and those tries are acquires, not
        // commands of the lease it let go.
        if let Some(state) = slot.and_then(|slot| seen.slots.get_mut(slot)) {
            state.acquiring = true;
        }
        token
    }
}

/// The worker's fenced store, recording the protected writes.
struct ObservedStore {
    inner: Arc<dyn FencedStore>,
    observer: Observer,
}

fn job_value(outcome: &JobOutcome) -> OkValue {
    match *outcome {
        JobOutcome::Applied => OkValue::WriteAccepted,
        JobOutcome::AlreadyDone => OkValue::AlreadyDone,
        JobOutcome::Stale { last_fence } => OkValue::WriteStale { last_fence },
        JobOutcome::NotFound => OkValue::WriteNotFound,
    }
}

fn write_value(outcome: &WriteOutcome) -> OkValue {
    match *outcome {
        WriteOutcome::Accepted => OkValue::WriteAccepted,
        WriteOutcome::Stale { last_fence } => OkValue::WriteStale { last_fence },
        WriteOutcome::NotFound => OkValue::WriteNotFound,
    }
}

#[async_trait]
impl FencedStore for ObservedStore {
    async fn ensure_resource(&self, resource: &ResourceName) -> Result<(), StoreError> {
        self.inner.ensure_resource(resource).await
    }

    async fn write_fenced(&self, write: &FencedWrite) -> Result<WriteOutcome, StoreError> {
        if !self.observer.on() {
            return self.inner.write_fenced(write).await;
        }
        let (owner, fence) = (write.owner.as_str(), write.fence.get());
        let op = self.observer.write_sent(owner, Some(fence), None);
        let answer = self.inner.write_fenced(write).await;
        self.observer
            .write_answered(op, answer.as_ref().map(write_value));
        answer
    }

    async fn apply_job(&self, job: &JobWrite) -> Result<JobOutcome, StoreError> {
        if !self.observer.on() {
            return self.inner.apply_job(job).await;
        }
        let (owner, fence) = (job.write.owner.as_str(), job.write.fence.get());
        let op = self
            .observer
            .write_sent(owner, Some(fence), Some(job.job_id.as_str()));
        let answer = self.inner.apply_job(job).await;
        self.observer
            .write_answered(op, answer.as_ref().map(job_value));
        answer
    }

    async fn is_completed(&self, job_id: &JobId) -> Result<bool, StoreError> {
        self.inner.is_completed(job_id).await
    }

    async fn read(&self, resource: &ResourceName) -> Result<Option<(String, i64)>, StoreError> {
        self.inner.read(resource).await
    }

    async fn fence_log(&self, resource: &ResourceName) -> Result<Vec<FenceLogEntry>, StoreError> {
        self.inner.fence_log(resource).await
    }
}

/// The worker's unchecked store path, recording its writes.
struct ObservedRawStore {
    inner: Arc<dyn RawStore>,
    observer: Observer,
}

#[async_trait]
impl RawStore for ObservedRawStore {
    async fn read_fence(&self, resource: &str) -> Result<i64, StoreError> {
        self.inner.read_fence(resource).await
    }

    async fn write_unchecked(
        &self,
        resource: &str,
        fence: i64,
        owner: &str,
        job_id: Option<&str>,
        value: &str,
    ) -> Result<WriteOutcome, StoreError> {
        if !self.observer.on() {
            return self
                .inner
                .write_unchecked(resource, fence, owner, job_id, value)
                .await;
        }
        // A fence of 0 is "no fence" on the unchecked path.
        let op = self
            .observer
            .write_sent(owner, (fence > 0).then_some(fence), job_id);
        let answer = self
            .inner
            .write_unchecked(resource, fence, owner, job_id, value)
            .await;
        self.observer
            .write_answered(op, answer.as_ref().map(write_value));
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(line: &str) -> Option<String> {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        wire_token(&args, b"lock:{r}").map(|t| String::from_utf8_lossy(t).into_owned())
    }

    #[test]
    fn the_token_is_the_first_plain_argument_after_the_lock_key() {
        // redis-py, python-redis-lock, pottery and the reference library.
        assert_eq!(
            token("SET lock:{r} 5c0e NX PX 1000").as_deref(),
            Some("5c0e")
        );
        assert_eq!(token("set lock:{r} nx px 1000 abc").as_deref(), Some("abc"));
        assert_eq!(
            token("EVALSHA 9f3 1 lock:{r} 5c0e 1000").as_deref(),
            Some("5c0e")
        );
        // A script's other keys are skipped (python-redis-lock's signal list).
        assert_eq!(
            token("EVALSHA 9f3 2 lock:{r} lock-signal:{r} id-1 1000").as_deref(),
            Some("id-1")
        );
        assert_eq!(
            token("EVAL x 2 fence:{r} lock:{r} tok 1000").as_deref(),
            Some("tok")
        );
        // No token: a bare delete or read, numbers only, the key as an ARGV.
        assert_eq!(token("DEL lock:{r}"), None);
        assert_eq!(token("PEXPIRE lock:{r} 1000"), None);
        assert_eq!(token("PEXPIRE lock:{r} 1000 GT"), None);
        assert_eq!(token("GETEX lock:{r} PERSIST"), None);
        assert_eq!(token("EVALSHA 9f3 1 other lock:{r}"), None);
        assert_eq!(token("EVALSHA 9f3 x lock:{r} tok"), None);
    }

    #[test]
    fn numbers_and_set_options_are_never_tokens() {
        for arg in ["1000", "-1", "NX", "px", "KEEPTTL", "", "a\nb"] {
            assert!(!tokenish(arg.as_bytes()), "{arg:?}");
        }
        for arg in ["5c0e", "-x", "1e3", "uuid-1"] {
            assert!(tokenish(arg.as_bytes()), "{arg:?}");
        }
        assert!(!tokenish(&[b'a'; WIRE_TOKEN_LEN_MAX + 1]));
    }
}
