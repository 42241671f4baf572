//! The keyspace: 16 databases of keys → values with optional deadlines,
//! expiry (lazy on access, active in deadline order), the ownership log
//! hooks for lock keys, and the write effects that replication ships.
//!
//! Why one module owns all three: every mutation must (a) keep the deadline
//! index in step with the entries, (b) tell the ownership log whether a lock
//! key's holder changed, and (c) queue exactly one replication effect. Doing
//! all of that in one place (`put` / `remove`) makes it impossible for a
//! command to forget one of them.
//!
//! It also keeps the WATCH registry (which client watches which key): a
//! watched key is "touched" exactly where an entry changes (`put_quiet`,
//! `remove_quiet`, `flush_quiet`), so a command, an expiry, a replicated
//! effect or a FLUSH all dirty a transaction the way Redis 7.0's
//! `touchWatchedKey` / `touchAllWatchedKeysInDb` do, and no handler can
//! forget to.
//!
//! Determinism: keys live in `BTreeMap`s and deadlines in a `BTreeSet`, so
//! every scan (active expiry, crash, snapshot) runs in one fixed order. A key
//! is expired when `now_ms > deadline_ms`, exactly Redis's `keyIsExpired`.
//! Replicas never expire keys themselves (they wait for the primary's
//! effect) but report logically expired keys as missing on reads.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::clock::Skew;
use super::{OwnershipChange, OwnershipLog, OwnershipRecord};

/// Number of logical databases (`SELECT 0..15`).
pub(crate) const DB_COUNT: usize = 16;
/// Most keys over all databases; write commands beyond it get Redis's OOM
/// error (the simulation's stand-in for `maxmemory`).
pub(crate) const KEYS_MAX: usize = 1_000_000;
/// Most elements in one list.
pub(crate) const LIST_LEN_MAX: usize = 1_000_000;
/// Most fields in one hash. Hashes keep insertion order, which is Redis's
/// order only while it stores a hash as a listpack (at most 128 fields by
/// default); bigger hashes are hash tables there, in no order we could
/// reproduce. Lookups are linear, so the bound also bounds their cost.
pub(crate) const HASH_FIELDS_MAX: usize = 65_536;
/// Most keys one active expiry cycle removes; the rest wait for the next
/// cycle (Redis bounds its cycle by time for the same reason).
pub(crate) const ACTIVE_EXPIRE_KEYS_MAX: usize = 10_000;

/// A value: the types lock libraries use — strings (leases, fences),
/// lists (unlock signalling with BLPOP) and hashes (reentrant locks:
/// owner → hold count).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Value {
    Str(Vec<u8>),
    List(VecDeque<Vec<u8>>),
    /// (field, value) pairs in insertion order (see [`HASH_FIELDS_MAX`]).
    Hash(Vec<(Vec<u8>, Vec<u8>)>),
}

impl Value {
    /// The name TYPE answers.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::List(_) => "list",
            Value::Hash(_) => "hash",
        }
    }
}

/// A key's value and deadline (timeline ms).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub value: Value,
    pub expires_at_ms: Option<u64>,
}

impl Entry {
    fn expired(&self, now_ms: u64) -> bool {
        self.expires_at_ms
            .is_some_and(|deadline_ms| now_ms > deadline_ms)
    }

    fn holder(&self) -> Option<&[u8]> {
        match &self.value {
            Value::Str(s) => Some(s),
            Value::List(_) | Value::Hash(_) => None,
        }
    }
}

/// One write, as shipped to replicas (effects replication: the state a
/// command produced, not the command).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Effect {
    /// The key now holds exactly this entry.
    Put {
        db: usize,
        key: Vec<u8>,
        entry: Entry,
    },
    /// The key was deleted by a command.
    Del { db: usize, key: Vec<u8> },
    /// The key's deadline passed on the primary.
    Expired {
        db: usize,
        key: Vec<u8>,
        deadline_ms: u64,
    },
    /// FLUSHDB (`Some(db)`) or FLUSHALL (`None`).
    Flush { db: Option<usize> },
}

/// Why a key disappears (decides the ownership event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Removal {
    Deleted,
    Expired { deadline_ms: u64 },
}

#[derive(Default)]
struct Db {
    entries: BTreeMap<Vec<u8>, Entry>,
    /// (deadline, key) for every entry with a deadline: the active expiry
    /// scan order.
    by_deadline: BTreeSet<(u64, Vec<u8>)>,
}

/// Who records ownership changes, for which keys.
struct Recorder {
    log: OwnershipLog,
    server: String,
    prefix: Vec<u8>,
    /// The server's clock error: its times go into the log on the world's
    /// timeline.
    skew: Option<Skew>,
}

impl Recorder {
    fn record(&self, key: &[u8], at_ms: u64, change: OwnershipChange) {
        if key.starts_with(&self.prefix) {
            let at_ms = self.skew.as_ref().map_or(at_ms, |s| s.to_world_ms(at_ms));
            self.log.push(OwnershipRecord {
                at_ms,
                server: self.server.clone(),
                key: String::from_utf8_lossy(key).into_owned(),
                change,
            });
        }
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Most keys one client may WATCH at once (Redis has no such bound; a
/// runaway client gets an error instead of growing the registry).
pub(crate) const WATCHED_KEYS_MAX: usize = 10_000;

/// All databases of one server instance.
pub(crate) struct Keyspace {
    dbs: Vec<Db>,
    recorder: Recorder,
    /// (db, key) → client id → whether the key was already (logically)
    /// expired, but not yet deleted, when the client watched it (Redis 7.0's
    /// `watchedKey.expired`: deleting such a key is no logical change).
    watched: BTreeMap<(usize, Vec<u8>), BTreeMap<u64, bool>>,
    /// Clients whose watched keys were touched since they watched them
    /// (`CLIENT_DIRTY_CAS`).
    dirty: BTreeSet<u64>,
    /// Effects not yet handed to replication.
    pending: Vec<Effect>,
    /// Primaries delete expired keys when they notice them; replicas wait
    /// for the primary's `Expired` effect.
    expire_keys: bool,
    keys_total: usize,
}

impl Keyspace {
    pub(crate) fn new(log: OwnershipLog, server: &str, lock_key_prefix: &str) -> Self {
        Self {
            dbs: (0..DB_COUNT).map(|_| Db::default()).collect(),
            recorder: Recorder {
                log,
                server: server.to_string(),
                prefix: lock_key_prefix.as_bytes().to_vec(),
                skew: None,
            },
            watched: BTreeMap::new(),
            dirty: BTreeSet::new(),
            pending: Vec::new(),
            expire_keys: true,
            keys_total: 0,
        }
    }

    /// Logs this server's times on the world's timeline through `skew`.
    pub(crate) fn set_skew(&mut self, skew: Skew) {
        self.recorder.skew = Some(skew);
    }

    /// Primaries expire keys; replicas do not (see module doc).
    pub(crate) fn set_expire_keys(&mut self, expire_keys: bool) {
        self.expire_keys = expire_keys;
    }

    pub(crate) fn keys_total(&self) -> usize {
        self.keys_total
    }

    pub(crate) fn db_len(&self, db: usize) -> usize {
        self.dbs[db].entries.len()
    }

    /// The entry, respecting logical expiry, without changing anything.
    pub(crate) fn peek(&self, db: usize, key: &[u8], now_ms: u64) -> Option<&Entry> {
        self.dbs[db].entries.get(key).filter(|e| !e.expired(now_ms))
    }

    /// The entry as a command sees it: an expired key is deleted first (on
    /// a primary; a replica just reports it missing).
    pub(crate) fn lookup(&mut self, db: usize, key: &[u8], now_ms: u64) -> Option<&Entry> {
        self.expire_if_due(db, key, now_ms);
        self.peek(db, key, now_ms)
    }

    /// Deletes `key` if its deadline passed (primary only). Returns whether
    /// it did.
    pub(crate) fn expire_if_due(&mut self, db: usize, key: &[u8], now_ms: u64) -> bool {
        if !self.expire_keys {
            return false;
        }
        let deadline_ms = match self.dbs[db].entries.get(key) {
            Some(entry) if entry.expired(now_ms) => entry.expires_at_ms,
            _ => return false,
        };
        let Some(deadline_ms) = deadline_ms else {
            return false;
        };
        self.remove(db, key, now_ms, Removal::Expired { deadline_ms });
        true
    }

    /// Stores `entry` under `key` (creating or replacing), logging a holder
    /// change for lock keys and queueing a `Put` effect.
    pub(crate) fn put(&mut self, db: usize, key: &[u8], entry: Entry, now_ms: u64) {
        self.expire_if_due(db, key, now_ms);
        self.put_quiet(db, key, entry.clone(), now_ms);
        self.pending.push(Effect::Put {
            db,
            key: key.to_vec(),
            entry,
        });
    }

    /// `put` without an effect (applying a replicated effect).
    fn put_quiet(&mut self, db: usize, key: &[u8], entry: Entry, now_ms: u64) {
        let new_holder = entry.holder().map(<[u8]>::to_vec);
        let deadline = entry.expires_at_ms;
        let d = &mut self.dbs[db];
        let old = d.entries.insert(key.to_vec(), entry);
        if let Some(old_deadline) = old.as_ref().and_then(|o| o.expires_at_ms) {
            let removed = d.by_deadline.remove(&(old_deadline, key.to_vec()));
            debug_assert!(removed, "deadline index out of step");
        }
        if let Some(deadline) = deadline {
            d.by_deadline.insert((deadline, key.to_vec()));
        }
        if old.is_none() {
            self.keys_total += 1;
            debug_assert!(self.keys_total <= KEYS_MAX + 1, "OOM check bypassed");
        }
        let old_holder = old.as_ref().and_then(|o| o.holder());
        let change = match (old_holder, new_holder) {
            (None, Some(owner)) => Some(OwnershipChange::Set {
                owner: text(&owner),
            }),
            (Some(from), Some(to)) if from != to.as_slice() => Some(OwnershipChange::Overwritten {
                from: text(from),
                to: text(&to),
            }),
            (Some(from), None) => Some(OwnershipChange::Deleted { owner: text(from) }),
            _ => None,
        };
        if let Some(change) = change {
            self.recorder.record(key, now_ms, change);
        }
        self.touch(db, key);
    }

    /// Deletes `key` because a command said so. Returns whether it existed
    /// (an expired key counts as missing).
    pub(crate) fn delete(&mut self, db: usize, key: &[u8], now_ms: u64) -> bool {
        if self.lookup(db, key, now_ms).is_none() {
            return false;
        }
        self.remove(db, key, now_ms, Removal::Deleted);
        true
    }

    fn remove(&mut self, db: usize, key: &[u8], now_ms: u64, why: Removal) {
        self.remove_quiet(db, key, now_ms, why);
        self.pending.push(match why {
            Removal::Deleted => Effect::Del {
                db,
                key: key.to_vec(),
            },
            Removal::Expired { deadline_ms } => Effect::Expired {
                db,
                key: key.to_vec(),
                deadline_ms,
            },
        });
    }

    fn remove_quiet(&mut self, db: usize, key: &[u8], now_ms: u64, why: Removal) {
        let d = &mut self.dbs[db];
        let Some(old) = d.entries.remove(key) else {
            return;
        };
        self.touch(db, key);
        let d = &mut self.dbs[db];
        if let Some(deadline) = old.expires_at_ms {
            let removed = d.by_deadline.remove(&(deadline, key.to_vec()));
            debug_assert!(removed, "deadline index out of step");
        }
        self.keys_total -= 1;
        if let Some(owner) = old.holder() {
            let (at_ms, change) = match why {
                Removal::Deleted => (now_ms, OwnershipChange::Deleted { owner: text(owner) }),
                Removal::Expired { deadline_ms } => {
                    (deadline_ms, OwnershipChange::Expired { owner: text(owner) })
                }
            };
            self.recorder.record(key, at_ms, change);
        }
    }

    /// Removes every key whose deadline passed, earliest first, at most
    /// `ACTIVE_EXPIRE_KEYS_MAX` per call (primary only). Returns how many.
    pub(crate) fn expire_due(&mut self, now_ms: u64) -> usize {
        if !self.expire_keys {
            return 0;
        }
        let mut removed = 0;
        for db in 0..DB_COUNT {
            while removed < ACTIVE_EXPIRE_KEYS_MAX {
                let Some((deadline_ms, key)) = self.dbs[db].by_deadline.first().cloned() else {
                    break;
                };
                if now_ms <= deadline_ms {
                    break;
                }
                self.remove(db, &key, now_ms, Removal::Expired { deadline_ms });
                removed += 1;
            }
        }
        removed
    }

    /// FLUSHDB / FLUSHALL: every lock key still held is logged `Deleted`.
    pub(crate) fn flush(&mut self, db: Option<usize>, now_ms: u64) {
        self.flush_quiet(db, now_ms);
        self.pending.push(Effect::Flush { db });
    }

    fn flush_quiet(&mut self, db: Option<usize>, now_ms: u64) {
        let range = match db {
            Some(db) => db..db + 1,
            None => 0..DB_COUNT,
        };
        for db in range {
            // Watchers are touched once for the whole database, not per key
            // (a key watched already expired is no change when flushed).
            self.touch_db(db);
            let watched = std::mem::take(&mut self.watched);
            let keys: Vec<Vec<u8>> = self.dbs[db].entries.keys().cloned().collect();
            for key in keys {
                let why = match self.dbs[db].entries.get(&key) {
                    Some(e) if e.expired(now_ms) => Removal::Expired {
                        deadline_ms: e.expires_at_ms.unwrap_or(now_ms),
                    },
                    _ => Removal::Deleted,
                };
                self.remove_quiet(db, &key, now_ms, why);
            }
            self.watched = watched;
            debug_assert!(self.dbs[db].by_deadline.is_empty());
        }
    }

    /// The instance died without persistence: keys whose deadline had
    /// already passed are logged `Expired` (at their deadline), every other
    /// lock key `Lost` at `now_ms`. The keyspace is left empty.
    pub(crate) fn crash(&mut self, now_ms: u64) {
        for db in 0..DB_COUNT {
            let keys: Vec<Vec<u8>> = self.dbs[db].entries.keys().cloned().collect();
            for key in keys {
                let Some(entry) = self.dbs[db].entries.get(&key) else {
                    continue;
                };
                if let (true, Some(deadline_ms)) = (entry.expired(now_ms), entry.expires_at_ms) {
                    self.remove_quiet(db, &key, now_ms, Removal::Expired { deadline_ms });
                    continue;
                }
                if let Some(owner) = entry.holder() {
                    let change = OwnershipChange::Lost { owner: text(owner) };
                    self.recorder.record(&key, now_ms, change);
                }
            }
            self.dbs[db] = Db::default();
        }
        self.keys_total = 0;
        self.pending.clear();
    }

    /// WATCH: `client` watches `key` (no-op if it already does). Returns
    /// false when the key was not watched before by this client (the caller
    /// keeps its own list, bounded by [`WATCHED_KEYS_MAX`]).
    pub(crate) fn watch(&mut self, client: u64, db: usize, key: &[u8], now_ms: u64) -> bool {
        let expired = self.dbs[db]
            .entries
            .get(key)
            .is_some_and(|e| e.expired(now_ms));
        let watchers = self.watched.entry((db, key.to_vec())).or_default();
        if watchers.contains_key(&client) {
            return false;
        }
        watchers.insert(client, expired);
        true
    }

    /// UNWATCH (and EXEC, DISCARD, disconnect): forgets `client`'s keys and
    /// its dirty mark.
    pub(crate) fn unwatch_all(&mut self, client: u64, keys: &[(usize, Vec<u8>)]) {
        for (db, key) in keys {
            let slot = (*db, key.clone());
            if let Some(watchers) = self.watched.get_mut(&slot) {
                watchers.remove(&client);
                if watchers.is_empty() {
                    self.watched.remove(&slot);
                }
            }
        }
        self.dirty.remove(&client);
    }

    /// Whether EXEC must fail for `client`: a watched key was touched, or
    /// one that was alive at WATCH is logically expired now (Redis 7.0's
    /// `isWatchedKeyExpired`, which sees expiry not yet noticed).
    pub(crate) fn watch_failed(&self, client: u64, keys: &[(usize, Vec<u8>)], now_ms: u64) -> bool {
        if self.dirty.contains(&client) {
            return true;
        }
        keys.iter().any(|(db, key)| {
            let expired_at_watch = self
                .watched
                .get(&(*db, key.clone()))
                .and_then(|w| w.get(&client))
                .copied()
                .unwrap_or(false);
            !expired_at_watch
                && self.dbs[*db]
                    .entries
                    .get(key)
                    .is_some_and(|e| e.expired(now_ms))
        })
    }

    /// An entry changed: every client watching it is dirty, except one that
    /// watched it already expired and now sees it deleted (no logical
    /// change; it watches a missing key from here on).
    fn touch(&mut self, db: usize, key: &[u8]) {
        if self.watched.is_empty() {
            return;
        }
        let exists = self.dbs[db].entries.contains_key(key);
        let Some(watchers) = self.watched.get_mut(&(db, key.to_vec())) else {
            return;
        };
        for (client, expired_at_watch) in watchers.iter_mut() {
            if *expired_at_watch && !exists {
                *expired_at_watch = false;
                continue;
            }
            self.dirty.insert(*client);
        }
    }

    /// A database is about to be emptied: every watched key that exists in
    /// it is touched (Redis's `touchAllWatchedKeysInDb`).
    fn touch_db(&mut self, db: usize) {
        let entries = &self.dbs[db].entries;
        for ((watched_db, key), watchers) in self.watched.iter_mut() {
            if *watched_db != db || !entries.contains_key(key) {
                continue;
            }
            for (client, expired_at_watch) in watchers.iter_mut() {
                if *expired_at_watch {
                    *expired_at_watch = false;
                    continue;
                }
                self.dirty.insert(*client);
            }
        }
    }

    /// Effects queued since the last call.
    pub(crate) fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.pending)
    }

    /// Every live entry, in (db, key) order: the full-sync snapshot.
    pub(crate) fn snapshot(&self) -> Vec<(usize, Vec<u8>, Entry)> {
        let mut out = Vec::with_capacity(self.keys_total);
        for (db, d) in self.dbs.iter().enumerate() {
            for (key, entry) in &d.entries {
                out.push((db, key.clone(), entry.clone()));
            }
        }
        out
    }

    /// Replaces everything with a primary's snapshot (replica full sync),
    /// logging the difference for lock keys.
    pub(crate) fn load_snapshot(&mut self, entries: Vec<(usize, Vec<u8>, Entry)>, now_ms: u64) {
        let mut incoming: BTreeSet<(usize, Vec<u8>)> = BTreeSet::new();
        for (db, key, _) in &entries {
            incoming.insert((*db, key.clone()));
        }
        for db in 0..DB_COUNT {
            let gone: Vec<Vec<u8>> = self.dbs[db]
                .entries
                .keys()
                .filter(|k| !incoming.contains(&(db, (*k).clone())))
                .cloned()
                .collect();
            for key in gone {
                self.remove_quiet(db, &key, now_ms, Removal::Deleted);
            }
        }
        for (db, key, entry) in entries {
            self.put_quiet(db, &key, entry, now_ms);
        }
        self.pending.clear();
    }

    /// Applies one effect from the primary (replica side).
    pub(crate) fn apply(&mut self, effect: Effect, now_ms: u64) {
        match effect {
            Effect::Put { db, key, entry } => self.put_quiet(db, &key, entry, now_ms),
            Effect::Del { db, key } => self.remove_quiet(db, &key, now_ms, Removal::Deleted),
            Effect::Expired {
                db,
                key,
                deadline_ms,
            } => self.remove_quiet(db, &key, now_ms, Removal::Expired { deadline_ms }),
            Effect::Flush { db } => self.flush_quiet(db, now_ms),
        }
        self.pending.clear();
    }

    /// Checks the internal invariants (tests and debug builds).
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        let mut total = 0;
        for d in &self.dbs {
            total += d.entries.len();
            let with_deadline = d
                .entries
                .iter()
                .filter(|(_, e)| e.expires_at_ms.is_some())
                .count();
            assert_eq!(with_deadline, d.by_deadline.len());
            for (deadline, key) in &d.by_deadline {
                assert_eq!(d.entries[key].expires_at_ms, Some(*deadline));
            }
        }
        assert_eq!(total, self.keys_total);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Entry {
        Entry {
            value: Value::Str(v.as_bytes().to_vec()),
            expires_at_ms: None,
        }
    }

    fn ttl(v: &str, deadline_ms: u64) -> Entry {
        Entry {
            expires_at_ms: Some(deadline_ms),
            ..s(v)
        }
    }

    fn changes(log: &OwnershipLog) -> Vec<(u64, String, OwnershipChange)> {
        log.events()
            .into_iter()
            .map(|e| (e.at_ms, e.key, e.change))
            .collect()
    }

    #[test]
    fn lazy_expiry_is_strictly_after_the_deadline() {
        let log = OwnershipLog::default();
        let mut ks = Keyspace::new(log.clone(), "redis", "lock:");
        ks.put(0, b"lock:a", ttl("w1", 100), 0);
        assert!(
            ks.lookup(0, b"lock:a", 100).is_some(),
            "alive at the deadline"
        );
        assert!(ks.lookup(0, b"lock:a", 101).is_none());
        ks.check_invariants();
        assert_eq!(
            changes(&log),
            vec![
                (
                    0,
                    "lock:a".into(),
                    OwnershipChange::Set { owner: "w1".into() }
                ),
                (
                    100,
                    "lock:a".into(),
                    OwnershipChange::Expired { owner: "w1".into() }
                ),
            ]
        );
    }

    #[test]
    fn active_expiry_runs_in_deadline_order_and_logs_deadlines() {
        let log = OwnershipLog::default();
        let mut ks = Keyspace::new(log.clone(), "redis", "lock:");
        ks.put(0, b"lock:b", ttl("w2", 300), 0);
        ks.put(0, b"lock:a", ttl("w1", 200), 0);
        ks.put(3, b"other", ttl("x", 100), 0);
        ks.take_effects();
        assert_eq!(ks.expire_due(250), 2);
        assert_eq!(ks.keys_total(), 1);
        let effects = ks.take_effects();
        assert_eq!(
            effects,
            vec![
                Effect::Expired {
                    db: 0,
                    key: b"lock:a".to_vec(),
                    deadline_ms: 200
                },
                Effect::Expired {
                    db: 3,
                    key: b"other".to_vec(),
                    deadline_ms: 100
                },
            ]
        );
        assert_eq!(
            changes(&log)[2],
            (
                200,
                "lock:a".into(),
                OwnershipChange::Expired { owner: "w1".into() }
            )
        );
        ks.check_invariants();
    }

    #[test]
    fn same_value_renewal_logs_nothing_and_overwrite_logs_both_holders() {
        let log = OwnershipLog::default();
        let mut ks = Keyspace::new(log.clone(), "redis", "lock:");
        ks.put(0, b"lock:a", ttl("w1", 100), 0);
        ks.put(0, b"lock:a", ttl("w1", 500), 50);
        ks.put(0, b"lock:a", s("w2"), 60);
        assert!(ks.delete(0, b"lock:a", 70));
        assert!(!ks.delete(0, b"lock:a", 71));
        ks.put(0, b"fence:a", s("1"), 80);
        assert_eq!(
            changes(&log),
            vec![
                (
                    0,
                    "lock:a".into(),
                    OwnershipChange::Set { owner: "w1".into() }
                ),
                (
                    60,
                    "lock:a".into(),
                    OwnershipChange::Overwritten {
                        from: "w1".into(),
                        to: "w2".into()
                    }
                ),
                (
                    70,
                    "lock:a".into(),
                    OwnershipChange::Deleted { owner: "w2".into() }
                ),
            ]
        );
        ks.check_invariants();
    }

    #[test]
    fn crash_loses_held_keys_and_expires_overdue_ones() {
        let log = OwnershipLog::default();
        let mut ks = Keyspace::new(log.clone(), "redis", "lock:");
        ks.put(0, b"lock:a", ttl("w1", 100), 0);
        ks.put(0, b"lock:b", s("w2"), 0);
        ks.crash(150);
        assert_eq!(
            changes(&log)[2..],
            [
                (
                    100,
                    "lock:a".into(),
                    OwnershipChange::Expired { owner: "w1".into() }
                ),
                (
                    150,
                    "lock:b".into(),
                    OwnershipChange::Lost { owner: "w2".into() }
                ),
            ]
        );
        assert_eq!(ks.keys_total(), 0);
        ks.check_invariants();
    }

    #[test]
    fn replicas_hide_but_keep_expired_keys_until_told() {
        let log = OwnershipLog::default();
        let mut replica = Keyspace::new(log.clone(), "replica", "lock:");
        replica.set_expire_keys(false);
        replica.apply(
            Effect::Put {
                db: 0,
                key: b"lock:a".to_vec(),
                entry: ttl("w1", 100),
            },
            0,
        );
        assert!(replica.lookup(0, b"lock:a", 200).is_none());
        assert_eq!(replica.expire_due(200), 0);
        assert_eq!(replica.keys_total(), 1);
        replica.apply(
            Effect::Expired {
                db: 0,
                key: b"lock:a".to_vec(),
                deadline_ms: 100,
            },
            210,
        );
        assert_eq!(replica.keys_total(), 0);
        let events = log.events();
        assert_eq!(events[1].at_ms, 100);
        assert_eq!(events[1].server, "replica");
        replica.check_invariants();
    }

    #[test]
    fn snapshot_load_logs_only_differences() {
        let log = OwnershipLog::default();
        let mut replica = Keyspace::new(log.clone(), "replica", "lock:");
        replica.apply(
            Effect::Put {
                db: 0,
                key: b"lock:a".to_vec(),
                entry: s("w1"),
            },
            0,
        );
        replica.apply(
            Effect::Put {
                db: 0,
                key: b"lock:b".to_vec(),
                entry: s("w2"),
            },
            0,
        );
        replica.load_snapshot(
            vec![
                (0, b"lock:b".to_vec(), s("w2")),
                (0, b"lock:c".to_vec(), s("w3")),
            ],
            10,
        );
        let tail: Vec<_> = changes(&log)[2..].to_vec();
        assert_eq!(
            tail,
            vec![
                (
                    10,
                    "lock:a".into(),
                    OwnershipChange::Deleted { owner: "w1".into() }
                ),
                (
                    10,
                    "lock:c".into(),
                    OwnershipChange::Set { owner: "w3".into() }
                ),
            ]
        );
        replica.check_invariants();
    }
}
